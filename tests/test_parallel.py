"""A large directory is checked by several processes; the report is exactly the one-process report."""

from __future__ import annotations

import contextlib
import shutil
import time
from pathlib import Path

import pytest

from packlint import cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _check(monkeypatch, capsys, jobs: str, target: Path) -> tuple[int, str]:
    monkeypatch.setenv("PACKLINT_JOBS", jobs)
    code = cli.main(["check", "--format", "json", str(target)])
    return code, capsys.readouterr().out


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_parallel_report_equals_sequential(tmp_path, monkeypatch, capsys):
    for i in range(3):  # 30 scripts: above the threshold for using workers
        d = tmp_path / f"team{i}"
        shutil.copytree(EXAMPLES, d)
    monkeypatch.chdir(tmp_path)
    sequential = _check(monkeypatch, capsys, "1", Path("."))
    parallel = _check(monkeypatch, capsys, "2", Path("."))
    assert parallel == sequential
    assert sequential[0] == 1 and '"files": 30' in sequential[1]


def _counting(monkeypatch, log: Path, module, name: str, label: str) -> None:
    """Wrap module.name so each call (in any forked worker) appends `label` and its first argument to `log`, slowly
    enough that two workers starting on the same program would both be inside it."""
    import os
    import time

    real = getattr(module, name)

    def wrapped(*args, **kwargs):
        arg = getattr(args[0], "path", args[0])
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.write(fd, f"{label} {arg}\n".encode())
        os.close(fd)
        time.sleep(0.3 if label == "program" else 0.02)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_workers_read_a_program_once(tmp_path, monkeypatch, capsys):
    """Two workers that start on scripts launching the same program: one reads it (and each file of its closure), the
    other waits and takes the entry it stored; the report is the one-process report."""
    from packlint.codebase import filefacts, reader

    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("")
    (repo / "pkg" / "opts.py").write_text(
        "import os\nLEVEL = os.environ.get('PKG_LEVEL', '1')\n\ndef add(p):\n    p.add_argument('--lr', type=float)\n"
    )
    (repo / "train.py").write_text(
        "import argparse\nfrom pkg import opts\n\np = argparse.ArgumentParser()\nopts.add(p)\n"
        "p.add_argument('--steps', type=int)\nargs = p.parse_args()\n"
    )
    for i in range(20):
        (repo / f"run{i:02d}.sh").write_text(
            f"#!/bin/bash\nexport PKG_LEVEL={i}\ntorchrun --nproc_per_node 8 train.py --lr 1e-4 --stpes {i}\n"
        )
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache-1"))
    sequential = _check(monkeypatch, capsys, "1", Path("."))
    log = tmp_path / "reads.log"
    _counting(monkeypatch, log, reader, "build_facts", "program")
    _counting(monkeypatch, log, reader, "extract_file_facts", "file")
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache-2"))
    parallel = _check(monkeypatch, capsys, "2", Path("."))
    assert parallel == sequential
    assert "PK201" in parallel[1]  # (--stpes: the code was read)
    reads = log.read_text().splitlines()
    assert sorted(r.split()[0] for r in reads if r.startswith("program")) == ["program"]
    files = [r for r in reads if r.startswith("file")]
    assert len(files) == len(set(files)) == 3
    assert filefacts  # (the module the facts come from)


def test_a_lock_never_released_costs_one_bounded_wait(monkeypatch):
    """A lock held for good (a worker killed while it read a program): the wait ends after BUILD_WAIT_S, the process
    reads the entry itself and takes no lock again. Without a cache directory nothing is shared: no lock is taken."""
    import multiprocessing
    import time

    from packlint.codebase import cache

    monkeypatch.setattr(cache, "BUILD_WAIT_S", 0.2)
    cache.share_builds(multiprocessing.get_context("fork").Lock, n=1)
    try:
        cache.BUILD_LOCKS["programs"][0].acquire()  # (held by nobody who will release it)
        start = time.monotonic()
        with cache.building("programs", "k1", None) as waited:  # (--no-cache: nothing is shared, nobody waits)
            assert not waited
        assert time.monotonic() - start < 0.1
        with cache.building("programs", "k1", "/cache") as waited:
            assert waited
        with cache.building("programs", "k2", "/cache") as waited:
            assert not waited
        assert time.monotonic() - start < 2
        assert cache.BUILD_LOCKS == {"programs": [], "files": []}
    finally:
        cache.unshare_builds()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
@pytest.mark.parametrize("count", [0, 1, 2, 3])
def test_workers_asked_for_with_almost_nothing_to_do(count, tmp_path, monkeypatch, capsys):
    """PACKLINT_JOBS=2 with no job left (every script replayed), one, two or three: the main process analyses the
    largest itself before it forks (check_workers._run_jobs_now), an empty list is no error, and the report is the
    one-process report."""
    from packlint import check_workers

    monkeypatch.setenv("PACKLINT_JOBS", "2")
    assert check_workers._run_jobs([], keep_models=False) == []
    for i in range(count):
        (tmp_path / f"run{i}.sh").write_text(f"#!/bin/bash\nexport OFFLINE_PACKING_BMR={i}\ntorchrun train.py\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    parallel = _check(monkeypatch, capsys, "2", Path("."))
    assert parallel == _check(monkeypatch, capsys, "1", Path("."))
    assert f'"files": {count}' in parallel[1]


def test_a_worker_puts_a_script_aside_while_another_reads_its_program(monkeypatch):
    """In the workers' first pass (DEFER), a program another worker is reading raises Busy (with the program's file name)
    instead of waiting, a few times per program; then the worker waits as before. `busy` tells whether it is read now;
    outside the first pass, and for a file's facts, nobody is put aside."""
    import multiprocessing

    from packlint.codebase import cache

    monkeypatch.setattr(cache, "BUILD_WAIT_S", 0.05)
    cache.share_builds(multiprocessing.get_context("fork").Lock, n=1)
    try:
        lock = cache.BUILD_LOCKS["programs"][0]
        assert not cache.busy("k")
        lock.acquire()
        assert cache.busy("k")
        with cache.building("programs", "k", "/cache", "train.py") as waited:  # (not deferring: waits, then reads)
            assert waited
        cache.share_builds(multiprocessing.get_context("fork").Lock, n=1)
        lock = cache.BUILD_LOCKS["programs"][0]
        lock.acquire()
        cache.DEFER[0] = True
        for _ in range(cache.MAX_DEFERRALS_PER_KEY):
            with pytest.raises(cache.Busy) as busy:
                with cache.building("programs", "k", "/cache", "train.py"):
                    pass
            assert (busy.value.key, busy.value.hint) == ("k", "train.py")
        with cache.building("programs", "k", "/cache", "train.py") as waited:  # (put aside enough: it waits)
            assert waited
    finally:
        cache.DEFER[0] = False
        cache.unshare_builds()
    assert cache._DEFERRED == {}


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_scripts_put_aside_are_analysed_in_the_second_pass(tmp_path, monkeypatch, capsys):
    """Two workers whose scripts launch a program the other one is reading: each script put aside (before its analysis,
    by the program's name, or when its analysis asks for the program) is analysed once the programs are read, and the
    report, cold and then replayed, is the one-process report."""
    from packlint.codebase import cache

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    for prog in ("train_a.py", "train_b.py"):
        (repo / prog).write_text(
            "import argparse\nimport time\n\np = argparse.ArgumentParser()\np.add_argument('--steps', type=int)\n"
            "args = p.parse_args()\n"
        )
    for i in range(24):
        prog = "train_a.py" if i % 3 else "train_b.py"
        (repo / f"run{i:02d}.sh").write_text(f"#!/bin/bash\ntorchrun --nproc_per_node 8 {prog} --stpes {i}\n")
    monkeypatch.chdir(repo)
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache-1"))
    sequential = _check(monkeypatch, capsys, "1", Path("."))
    real_building = cache.building
    log = tmp_path / "aside.log"

    @contextlib.contextmanager
    def slow_building(kind, key, base, hint=None):  # (a program read takes long: the other worker meets it busy)
        try:
            with real_building(kind, key, base, hint) as waited:
                if kind == "programs" and not waited:
                    time.sleep(0.3)
                yield waited
        except cache.Busy:
            with open(log, "a") as fh:
                fh.write(f"{hint}\n")
            raise

    monkeypatch.setattr(cache, "building", slow_building)
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache-2"))
    parallel = _check(monkeypatch, capsys, "2", Path("."))
    assert parallel == sequential and "PK201" in parallel[1]
    assert log.exists() and log.read_text().strip()  # (some scripts were put aside, and reported all the same)
    assert _check(monkeypatch, capsys, "2", Path(".")) == sequential  # (replayed: the second pass stored them)


def test_a_walk_makes_the_next_files_while_another_worker_makes_its_own(tmp_path, monkeypatch):
    """While another worker makes the facts of the file a program's import walk reads next, the walk makes those of the
    files after it (instead of waiting idle), then takes that one: the closure, its order and its facts are the ones a
    walk finds alone."""
    from packlint.codebase import cache, filefacts, reader
    from packlint.codebase.options import CodeOptions

    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (tmp_path / "train.py").write_text("import pkg.a\nimport pkg.b\nimport pkg.c\nimport os\nos.environ.get('TRAIN')\n")
    (pkg / "__init__.py").write_text("")
    for name, body in (("a", "import pkg.d\n"), ("b", "import os\nX = os.getenv('B_VAR')\n"), ("c", ""), ("d", "")):
        (pkg / f"{name}.py").write_text(body + f"# {name}\n")

    def walk(busy_file: str | None) -> tuple[list[str], list[str], dict]:
        reader.FILE_MEMO.clear()
        made: list[str] = []
        real = filefacts.extract_file_facts
        monkeypatch.setattr(reader, "extract_file_facts", lambda src: made.append(Path(src.path).name) or real(src))
        busy_keys: set[str] = set()
        if busy_file is not None:
            src = filefacts.SourceFile(str(busy_file), Path(busy_file).read_bytes())
            busy_keys.add(filefacts.cache_key_digest([reader.reader_digest(), src.digest]))
        asked: list[str] = []

        def busy(key: str, kind: str = "programs") -> bool:
            asked.append(kind)
            hit = key in busy_keys
            busy_keys.discard(key)  # (the other worker is done after one look)
            return hit

        monkeypatch.setattr(cache, "busy", busy)
        options = CodeOptions(cache_dir=str(tmp_path / f"cache-{busy_file is not None}"))  # (each walk: a cold cache)
        closure = reader.Closure(reader.ModuleIndex([str(tmp_path)]), options)
        closure.walk(str(tmp_path / "train.py"))
        return [Path(p).name for p in closure.order], made, {Path(p).name: f for p, f in closure.facts.items()}

    alone = walk(None)
    assert alone[0] == alone[1] == ["train.py", "__init__.py", "a.py", "b.py", "c.py", "d.py"]
    order, made, facts = walk(str(pkg / "a.py"))
    assert (order, facts) == (alone[0], alone[2])
    assert made == ["train.py", "__init__.py", "b.py", "c.py", "a.py", "d.py"]  # (b and c made while a was busy)


def _square(x: int) -> int:
    return x * x


def test_the_pool_does_not_spin_on_results():
    """check_workers' pool minds its workers when one exits or the pool changes state, not at every result
    waiting in the pipe (CPython's Pool re-polls every worker until the result thread drains it)."""
    import multiprocessing
    from multiprocessing.pool import Pool

    from packlint.check_workers import _pool_class

    turns = [0]
    real = Pool.__dict__["_maintain_pool"]  # (a staticmethod, called once a turn)

    def counted(*a, **k):
        turns[0] += 1
        return real.__func__(*a, **k)

    Pool._maintain_pool = staticmethod(counted)  # type: ignore[method-assign, assignment]
    try:
        with _pool_class()(2, context=multiprocessing.get_context("fork")) as pool:
            assert list(pool.imap_unordered(_square, range(400), chunksize=1)) != []
            assert sorted(pool.map(_square, range(50))) == [x * x for x in range(50)]
    finally:
        Pool._maintain_pool = real  # type: ignore[method-assign]
    assert turns[0] < 40, turns[0]
