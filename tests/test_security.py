"""Hostile input and shared state (issue 19, docs/security.md): bounded reads, atomic writes, caches that
hold data and never code, `--fix` that never cuts a script, `run` that runs what it checked, escaped
output, an editor server that never wedges. Each test is named after the reproduction of
the reliability audit it replays (C13, F1, R11, ...).

Nothing here asserts a duration: what must not hang runs in a subprocess under a hang guard, and what
must stay small runs under RLIMIT_AS set inside the child.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from packlint import safe_io
from packlint.errors import PacklintError

ROOT = Path(__file__).resolve().parent.parent
HANG_GUARD_S = 120


# ------------------------------------------------------------------------------------------- safe_io


def test_read_bounded_reads_a_regular_file(tmp_path):
    p = tmp_path / "r.toml"
    p.write_bytes(b"x = 1\n")
    assert safe_io.read_bounded(p, 100, "rule file") == b"x = 1\n"


def test_read_bounded_refuses_a_file_over_the_limit_from_its_size(tmp_path):
    p = tmp_path / "big"
    p.write_bytes(b"a" * 101)
    with pytest.raises(PacklintError, match=r"file too large \(101 bytes > 100 bytes limit\)") as exc:
        safe_io.read_bounded(p, 100, "rule file")
    assert exc.value.path == str(p)
    assert "\n" not in exc.value.one_line()


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null"])
def test_read_bounded_refuses_devices(special):
    if not os.path.exists(special):
        pytest.skip("no such device")
    with pytest.raises(PacklintError, match="a device"):
        safe_io.read_bounded(special, 100, "config file")


def test_read_bounded_refuses_a_directory(tmp_path):
    with pytest.raises(PacklintError, match="is a directory"):
        safe_io.read_bounded(tmp_path, 100, "baseline")


def test_read_bounded_never_blocks_on_a_fifo(tmp_path):
    """A FIFO without a writer would block a plain open() forever: O_NONBLOCK + fstat refuse it."""
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    code = (
        "import sys\nfrom packlint import safe_io\nfrom packlint.errors import PacklintError\n"
        "try:\n    safe_io.read_bounded(sys.argv[1], 100, 'rule file')\n"
        "except PacklintError as e:\n    print(e.one_line())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.strip() == f"{fifo}: cannot read rule file: not a regular file (a FIFO): refused"


def test_read_cache_file_refuses_symlinks_fifos_and_big_files(tmp_path):
    real = tmp_path / "real.json"
    real.write_bytes(b"{}")
    assert safe_io.read_cache_file(real) == b"{}"
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert safe_io.read_cache_file(link) is None  # O_NOFOLLOW
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    assert safe_io.read_cache_file(fifo) is None
    assert safe_io.read_cache_file(real, limit=1) is None
    assert safe_io.read_cache_file(tmp_path / "missing") is None


def test_read_stdin_bounded_stops_after_the_limit():
    class Endless(io.RawIOBase):
        reads = 0

        def readable(self):
            return True

        def read(self, n=-1):
            Endless.reads += 1
            return b"\0" * (n if n > 0 else 1 << 20)

    with pytest.raises(PacklintError, match="more than 1 MiB on stdin"):
        safe_io.read_stdin_bounded(1 << 20, Endless())  # type: ignore[arg-type]
    assert Endless.reads <= 2  # limit + 1 bytes, not the whole stream
    assert safe_io.read_stdin_bounded(10, io.BytesIO(b"echo hi\n")) == b"echo hi\n"


def test_atomic_write_replaces_and_keeps_the_mode(tmp_path):
    p = tmp_path / "s.sh"
    p.write_bytes(b"old\n")
    os.chmod(p, 0o751)
    safe_io.atomic_write(p, b"new\n")
    assert p.read_bytes() == b"new\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    assert [x.name for x in tmp_path.iterdir()] == ["s.sh"]  # no temp file left


def test_atomic_write_new_file_gets_umask_mode(tmp_path):
    p = tmp_path / "new.json"
    old = os.umask(0o022)
    try:
        safe_io.atomic_write(p, b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_atomic_write_refuses_a_symlink_and_a_device(tmp_path):
    real = tmp_path / "real.json"
    real.write_bytes(b"{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(PacklintError, match="symbolic link"):
        safe_io.atomic_write(link, b"[]", what="baseline")
    assert link.is_symlink() and real.read_bytes() == b"{}"
    with pytest.raises(PacklintError, match="a device"):
        safe_io.atomic_write("/dev/null", b"x", what="baseline")


def test_atomic_write_follow_writes_the_regular_target(tmp_path):
    real = tmp_path / "real.sh"
    real.write_bytes(b"a\n")
    link = tmp_path / "link.sh"
    link.symlink_to(real)
    safe_io.atomic_write(link, b"b\n", follow=True)
    assert link.is_symlink() and real.read_bytes() == b"b\n"


def test_atomic_write_keeps_the_original_when_the_write_fails(tmp_path):
    """F1: a write that fails midway (RLIMIT_FSIZE) leaves the original intact, and no temp file."""
    p = tmp_path / "f.sh"
    p.write_bytes(b"# original\n" * 400)
    code = (
        "import resource, signal, sys\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))\n"
        "from packlint import safe_io\nfrom packlint.errors import PacklintError\n"
        "try:\n    safe_io.atomic_write(sys.argv[1], b'x' * 5000, what='script')\n"
        "except PacklintError as e:\n    print(e.one_line())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.strip() == f"{p}: cannot write script: File too large"
    assert p.read_bytes() == b"# original\n" * 400
    assert [x.name for x in tmp_path.iterdir()] == ["f.sh"]


def test_atomic_write_expect_refuses_a_changed_file(tmp_path):
    p = tmp_path / "s.sh"
    p.write_bytes(b"checked\n")
    p.write_bytes(b"checked\nedited meanwhile\n")
    with pytest.raises(PacklintError, match="changed since it was checked"):
        safe_io.atomic_write(p, b"fixed\n", expect=b"checked\n", what="script")
    assert p.read_bytes() == b"checked\nedited meanwhile\n"
    assert [x.name for x in tmp_path.iterdir()] == ["s.sh"]


# ------------------------------------------------------------------------- the rule-table cache (C13, C14, C12)


def _check_in_subprocess(args: list[str], cwd: Path, cache: Path | None, extra_env: dict | None = None,
                         stdin: bytes = b""):
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT))
    env.pop("PACKLINT_NO_CACHE", None)
    if cache is not None:
        env["PACKLINT_CACHE_DIR"] = str(cache)
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, "-m", "packlint", *args], cwd=cwd, capture_output=True,
                          timeout=HANG_GUARD_S, env=env, input=stdin)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in out + err and "internal error" not in out + err, err[-3000:]
    return proc.returncode, out, err


def _walk_equal(a, b, path="table"):
    from packlint.rule_cache import _fields

    assert type(a) is type(b), (path, type(a), type(b))
    if isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _walk_equal(x, y, f"{path}[{i}]")
    elif isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            _walk_equal(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, (str, int, float, bool, type(None), frozenset)):
        assert a == b, (path, a, b)
    else:
        for f in _fields(type(a)):
            if not f.startswith("_"):
                _walk_equal(getattr(a, f, None), getattr(b, f, None), f"{path}.{f}")


def test_rule_cache_round_trip_is_the_compiled_table_and_keeps_sharing():
    from packlint import rule_cache
    from packlint.rule_table import load_table

    table = load_table(use_cache=False)
    data = rule_cache.dumps(table).encode()
    back = rule_cache.loads(data)
    _walk_equal(table, back)
    # a predicate body shared by its calls stays one object
    from packlint.conditions.tree import Expr, PredicateCall
    from packlint.rule_cache import _fields

    bodies: dict[str, set[int]] = {}

    def calls(e):
        if isinstance(e, PredicateCall):
            bodies.setdefault(e.name, set()).add(id(e.body))
            return
        for f in _fields(type(e)):
            v = getattr(e, f, None)
            for x in v if isinstance(v, list) else [v]:
                if isinstance(x, Expr):
                    calls(x)

    for r in back.rules:
        calls(r.when)
    assert bodies and all(len(ids) == 1 for ids in bodies.values())


def test_rule_cache_keeps_a_rules_messages_and_docs_as_text_until_first_use():
    """A rule's lazy fields (messages, locations, fix, documentation) stay JSON text after loading and
    decode on first access to exactly the compiled value; its condition is decoded at load."""
    from packlint import rule_cache
    from packlint.rule_table import Rule, load_table

    table = load_table(use_cache=False)
    back = rule_cache.loads(rule_cache.dumps(table).encode())
    assert "summary" in Rule._cache_lazy and "when" not in Rule._cache_lazy
    for compiled, loaded in zip(table.rules, back.rules):
        assert "when" in loaded.__dict__ and "code" in loaded.__dict__
        # (a plain value such as the explanation string is stored as it is: nothing to decode)
        assert "message" not in loaded.__dict__ and "examples" not in loaded.__dict__
        _walk_equal(compiled.examples, loaded.examples, f"{compiled.code}.examples")
        assert "examples" in loaded.__dict__  # decoded once, then a plain attribute
        _walk_equal(compiled.message, loaded.message, f"{compiled.code}.message")
        assert loaded.summary == compiled.summary and loaded.explanation == compiled.explanation
    with pytest.raises(AttributeError):
        back.rules[0].no_such_field  # noqa: B018


def _damaged_lazy_field_cache() -> bytes:
    import json

    from packlint import rule_cache
    from packlint.rule_table import load_table

    doc = json.loads(rule_cache.dumps(load_table(use_cache=False)))
    rules = doc["root"][2]  # RuleTable(rules, ...): ["l", rule...]
    rule_class = [c[1] for c in doc["classes"]].index("Rule")
    first = rules[1]
    assert first[:2] == ["o", rule_class]
    at = 2 + doc["classes"][rule_class][2].index("examples")
    assert first[at][0] == "z"
    first[at] = ["z", '["o", 999]']  # a class index that does not exist
    return json.dumps(doc).encode()


def test_rule_cache_a_damaged_lazy_field_raises_without_a_fallback_and_is_recompiled_with_one(tmp_path):
    from packlint import rule_cache, rule_table

    data = _damaged_lazy_field_cache()
    back = rule_cache.loads(data)  # the damage is inside a field's text: seen on first use
    with pytest.raises(rule_cache.CacheFormatError):
        back.rules[0].examples  # noqa: B018
    path = tmp_path / "rules-x.json"
    path.write_bytes(data)
    blobs = [(str(p), p.read_bytes(), True) for p in rule_table.builtin_rule_files()]
    table = rule_table._read_cache(path, blobs)
    compiled = rule_table.load_table(use_cache=False)
    _walk_equal(compiled.rules[0].examples, table.rules[0].examples)


def test_rule_cache_refuses_a_lazy_field_where_the_class_has_none():
    from packlint import rule_cache

    doc = (b'{"format": "packlint-rule-table", "version": 2, "classes": [["packlint.rule_table", "LocationSpec",'
           b' ["kind", "name", "part", "text"]]], "shared": [], "root": ["o", 0, "launch", ["z", "null"], "", ""]}')
    with pytest.raises(rule_cache.CacheFormatError):
        rule_cache.loads(doc)


@pytest.mark.parametrize("doc", [
    b"\x80\x05\x95 not json",  # a planted pickle
    b"[]",
    b'{"format": "packlint-rule-table", "version": 2, "classes": [["posix", "system", []]], "shared": [], "root": 1}',
    b'{"format": "packlint-rule-table", "version": 2, "classes": [["builtins", "eval", []]], "shared": [], "root": 1}',
    b'{"format": "packlint-rule-table", "version": 2, "classes": [["packlint.rule_table", "os", []]],'
    b' "shared": [], "root": 1}',
    b'{"format": "packlint-rule-table", "version": 2, "classes": [["packlint.rule_table", "RuleTable", ["x"]]],'
    b' "shared": [], "root": ["o", 0, 1]}',
    b'{"format": "packlint-rule-table", "version": 2, "classes": [], "shared": [], "root": ["o", 7]}',
    b'{"format": "packlint-rule-table", "version": 2, "classes": [], "shared": [], "root": ["r", 3]}',
    b'{"format": "packlint-rule-table", "version": 2, "classes": [], "shared": [], "root": ["zz"]}',
    b'{"format": "packlint-rule-table", "version": 2, "classes": [], "shared": [], "root": ' + b"[\"l\"," * 50000
    + b"1" + b"]" * 50000 + b"}",
])
def test_rule_cache_refuses_foreign_classes_and_wrong_shapes(doc):
    from packlint import rule_cache

    with pytest.raises(rule_cache.CacheFormatError):
        rule_cache.loads(doc)


def test_c13_a_planted_pickle_never_runs_and_is_rewritten_as_data(tmp_path):
    """C13: a planted `rules-<key>.pickle` (the 0.2 name) and a pickle at the new name run nothing; the
    run gives the same result as without a cache, and the entry is rewritten as JSON data."""
    import pickle

    from packlint import rule_table

    cache = tmp_path / "cache"
    (tmp_path / "s.sh").write_text("echo hi\n")
    rc, out, _ = _check_in_subprocess(["check", "s.sh"], tmp_path, cache)
    assert rc == 0
    (entry,) = cache.glob("rules-*.json")
    marker = tmp_path / "PWNED"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    payload = pickle.dumps(Evil())
    entry.write_bytes(payload)
    (cache / (entry.stem + ".pickle")).write_bytes(payload)
    for args in (["check", "s.sh"], ["check", "--no-cache", "s.sh"], ["rules"]):
        rc2, out2, _ = _check_in_subprocess(args, tmp_path, cache)
        assert rc2 == 0
    assert not marker.exists()
    assert entry.read_bytes().startswith(b'{"format":"packlint-rule-table"')  # rebuilt, as data
    assert rule_table.CACHE_FORMAT >= 4


def test_c12_a_fifo_or_device_as_the_rule_cache_never_blocks(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "s.sh").write_text("export OFFLINE_PACKING_BMR=1\npython train.py\n")
    rc, out, _ = _check_in_subprocess(["check", "-q", "s.sh"], tmp_path, cache)
    (entry,) = cache.glob("rules-*.json")
    entry.unlink()
    os.mkfifo(entry)
    for args in (["check", "-q", "s.sh"], ["check", "-q", "--no-cache", "s.sh"]):
        assert _check_in_subprocess(args, tmp_path, cache)[:2] == (rc, out)
    entry.unlink()
    entry.symlink_to("/dev/zero")
    assert _check_in_subprocess(["check", "-q", "s.sh"], tmp_path, cache)[:2] == (rc, out)
    assert entry.is_file() and not entry.is_symlink()  # replaced by the rename, never written through


def test_c14_cache_writes_never_follow_a_planted_temp_name(tmp_path):
    """C14: 0.2 wrote `<cache>/rules-<key>.<pid>.tmp` through whatever was there. The temp file now
    comes from mkstemp (O_EXCL, random name): links planted for every likely name are never written."""
    from packlint import rule_table

    cache = tmp_path / "cache"
    cache.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    key = rule_table._cache_key([(str(p), p.read_bytes(), True) for p in rule_table.builtin_rule_files()])
    for pid in range(os.getpid(), os.getpid() + 300):
        (cache / f"rules-{key}.{pid}.tmp").symlink_to(victim)
    (tmp_path / "s.sh").write_text("echo hi\n")
    _check_in_subprocess(["check", "s.sh"], tmp_path, cache)
    assert victim.read_bytes() == b"precious\n"


def test_no_cache_means_no_rule_table_cache(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "s.sh").write_text("echo hi\n")
    _check_in_subprocess(["check", "--no-cache", "s.sh"], tmp_path, cache)
    assert not cache.exists() or not list(cache.rglob("*"))


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_a_cache_entry_owned_by_another_user_is_not_read(tmp_path):
    from packlint import rule_table
    from packlint.rule_cache import dumps

    table = rule_table.load_table(use_cache=False)
    table.rules[0].summary = "PLANTED"
    path = tmp_path / "rules-x.json"
    path.write_text(dumps(table))
    assert rule_table._read_cache(path).rules[0].summary == "PLANTED"
    os.chown(path, 65534, 65534)
    assert rule_table._read_cache(path) is None


def test_no_pickle_marshal_or_shelve_in_the_lint_path():
    """Caches hold data, never code: no module of packlint imports a deserializer that can run code."""
    import re

    bad = re.compile(r"^\s*(import|from)\s+(c?pickle|marshal|shelve|dill|cloudpickle|joblib)\b|"
                     r"\b(pickle|marshal|shelve)\.(loads?|open|Unpickler)\b|yaml\.load\(|yaml\.unsafe_load", re.M)
    hits = []
    for py in (ROOT / "packlint").rglob("*.py"):
        for m in bad.finditer(py.read_text()):
            hits.append(f"{py.relative_to(ROOT)}: {m.group(0).strip()}")
    assert hits == []


# ------------------------------------------------------------------------- the code-base facts cache (C8, C11, C12)

TRAIN_PY = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--lr")\np.parse_args()\n'


@pytest.fixture()
def c8_repo(tmp_path):
    repo = tmp_path / "r1"
    repo.mkdir()
    (repo / "train.py").write_text(TRAIN_PY)
    (repo / "l.sh").write_text("python train.py --bogus 1\n")
    return repo


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.rglob("*.json") if not p.name.startswith("rules-"))


def _poison(entries: list[Path], poison: str) -> None:
    import json

    for p in entries:
        if poison == "json_types":  # every value of another type, the keys kept
            doc = json.loads(p.read_bytes())
            p.write_text(json.dumps({k: (5 if isinstance(v, (list, dict, str)) else "x") for k, v in doc.items()}))
        elif poison == "devzero":
            p.unlink()
            p.symlink_to("/dev/zero")
        elif poison == "fifo":
            p.unlink()
            os.mkfifo(p)
        elif poison == "other_owner":
            os.chown(p, 65534, 65534)
        else:
            p.write_text(poison)


@pytest.mark.parametrize("poison", ["[]", "12", "{}", '{"imports": 5}', "json_types", "other_owner"])
def test_c8_a_facts_cache_entry_of_another_shape_is_a_miss_and_is_rewritten(c8_repo, tmp_path, monkeypatch,
                                                                              capsys, poison):
    """C8: valid JSON of the wrong shape silently disabled PK201 (rc 1 became rc 0, on every later run).
    Now it is a miss: the same findings as --no-cache, and a valid entry is written in its place. An
    entry owned by another user is not read either."""
    from packlint.cli import main

    if poison == "other_owner" and os.geteuid() != 0:
        pytest.skip("needs root to chown")
    cache = tmp_path / "cache"
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(cache))
    monkeypatch.chdir(c8_repo)
    assert main(["check", "-q", "l.sh"]) == 1
    expected = capsys.readouterr().out
    assert "PK201" in expected
    # the facts entries (the stacks table is read once per process: its poisoned copy is the
    # subprocess test's, test_c11_c12_...)
    entries = [p for p in _entries(cache) if not p.name.startswith("stacks-")]
    good = {p: p.read_bytes() for p in entries}
    _poison(entries, poison)
    for _ in range(2):
        assert main(["check", "-q", "l.sh"]) == 1
        assert capsys.readouterr().out == expected
    for p in entries:
        assert p.read_bytes() == good[p] and p.stat().st_uid == os.geteuid()


@pytest.mark.parametrize("poison", ["devzero", "fifo"])
def test_c11_c12_a_facts_cache_entry_that_is_a_device_or_fifo_is_never_read(c8_repo, tmp_path, poison):
    """C11/C12: an entry that is a link to /dev/zero read until memory ran out; a FIFO hung the check.
    Now it is a miss (same findings) and the entry is replaced by a regular file (never written through)."""
    cache = tmp_path / "cache"
    expected = _check_in_subprocess(["check", "-q", "l.sh"], c8_repo, cache)[:2]
    assert expected[0] == 1 and "PK201" in expected[1]
    entries = _entries(cache)
    good = {p: p.read_bytes() for p in entries}
    _poison(entries, poison)
    assert _check_in_subprocess(["check", "-q", "l.sh"], c8_repo, cache)[:2] == expected
    for p in entries:
        assert p.is_file() and not p.is_symlink() and p.read_bytes() == good[p]


def test_valid_facts_cache_entries_are_hits(c8_repo, tmp_path, monkeypatch):
    """The shape checks accept what packlint writes: a warm run reads no Python file with ast."""
    from packlint.cli import main
    from packlint.codebase import filefacts, reader

    cache = tmp_path / "cache"
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(cache))
    monkeypatch.chdir(c8_repo)
    assert main(["check", "-q", "l.sh"]) == 1
    assert _entries(cache)

    def boom(*a, **k):
        raise AssertionError("read again although cached")

    monkeypatch.setattr(reader, "build_facts", boom)
    monkeypatch.setattr(filefacts, "extract_file_facts", boom)
    assert main(["check", "-q", "l.sh"]) == 1


# ------------------------------------------------------------------------------------ stdin (H22)


def test_h22_stdin_from_dev_zero_is_refused_after_the_limit(tmp_path):
    """`check - < /dev/zero` read until memory ran out; now it stops at 8 MiB + 1 byte, under a 1 GiB
    address-space limit set in the child."""
    code = ("import resource, sys\nresource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
            "from packlint.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    for args in (["check", "-"], ["check", "--fix", "-"], ["inspect", "-"]):
        with open("/dev/zero", "rb") as zero:
            proc = subprocess.run([sys.executable, "-c", code, *args], stdin=zero, capture_output=True, text=True,
                                  cwd=tmp_path, timeout=HANG_GUARD_S,
                                  env=dict(os.environ, PYTHONPATH=str(ROOT), PACKLINT_NO_CACHE="1"))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip() == "packlint: error: -: input too large to be a launch script (more than 8 MiB on stdin)"


# ------------------------------------------------------------------------------------ --fix (F1, F5, F7, F8)

PK105_SCRIPT = ("#!/bin/bash\nexport PYTORCH_CUDA_ALLOC_CONF=a\nexport PYTORCH_CUDA_ALLOC_CONF=b\n"
                + "# filler line\n" * 300 + "python train.py\n")


def test_f1_a_fix_whose_write_fails_keeps_the_script(tmp_path):
    """F1: `(ulimit -f 2; check --fix f.sh)` cut the script to 2,048 bytes and ended in an internal error."""
    f = tmp_path / "f.sh"
    f.write_text(PK105_SCRIPT)
    code = ("import resource, signal, sys\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))\n"
            "from packlint.cli import main\nsys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.run([sys.executable, "-c", code, "check", "--fix", "-q", "f.sh"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=HANG_GUARD_S,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), PACKLINT_NO_CACHE="1"))
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert "packlint: f.sh: not fixed: cannot write script: File too large" in proc.stderr
    assert f.read_text() == PK105_SCRIPT
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.sh"]


def test_f2_f3_a_fix_replaces_the_file_atomically_keeping_mode(tmp_path, capsys):
    """F2: the fix wrote in place (a kill left 0 bytes); now a new inode is renamed over the old one
    (a reader sees the old or the new file), with the old mode."""
    from packlint.cli import main

    f = tmp_path / "f.sh"
    f.write_text(PK105_SCRIPT)
    os.chmod(f, 0o751)
    inode = f.stat().st_ino
    assert main(["check", "--fix", "-q", str(f)]) == 0
    assert "export PYTORCH_CUDA_ALLOC_CONF=a" not in f.read_text()
    assert f.stat().st_ino != inode and stat.S_IMODE(f.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.sh"]


def test_f7_a_file_edited_during_the_fix_loop_is_not_overwritten(tmp_path, monkeypatch, capsys):
    """F7: an edit made while the fixes were computed was silently lost."""
    from packlint import fixes
    from packlint.cli import main

    f = tmp_path / "slow.sh"
    f.write_text(PK105_SCRIPT)
    real = fixes.fix_text

    def edit_meanwhile(*a, **k):
        out = real(*a, **k)
        with open(f, "a") as fh:
            fh.write("echo USER_EDIT\n")
        return out

    monkeypatch.setattr(fixes, "fix_text", edit_meanwhile)
    main(["check", "--fix", "-q", str(f)])
    assert f.read_text() == PK105_SCRIPT + "echo USER_EDIT\n"
    assert f"{f}: not fixed: the file changed since it was checked" in capsys.readouterr().err


def test_f5_a_symlink_out_of_the_checked_tree_is_not_rewritten(tmp_path, capsys):
    from packlint.cli import main

    (tmp_path / "repo2").mkdir()
    (tmp_path / "outside").mkdir()
    target = tmp_path / "outside" / "target2.sh"
    target.write_text(PK105_SCRIPT)
    (tmp_path / "repo2" / "innocent.sh").symlink_to(target)
    inside = tmp_path / "repo2" / "real.sh"
    inside.write_text(PK105_SCRIPT)
    (tmp_path / "repo2" / "link_in.sh").symlink_to(inside)
    main(["check", "--fix", "-q", str(tmp_path / "repo2")])
    assert target.read_text() == PK105_SCRIPT
    assert "innocent.sh: not fixed: a symbolic link to a file outside the checked tree" in capsys.readouterr().err
    assert "export PYTORCH_CUDA_ALLOC_CONF=a" not in inside.read_text()  # (inside the tree: fixed)
    # F4: a link named on the command line is fixed where it points, and stays a link
    main(["check", "--fix", "-q", str(tmp_path / "repo2" / "innocent.sh")])
    assert (tmp_path / "repo2" / "innocent.sh").is_symlink()
    assert "export PYTORCH_CUDA_ALLOC_CONF=a" not in target.read_text()


F8_SCRIPT = ("#!/bin/bash\nexport PYTORCH_CUDA_ALLOC_CONF=${MY_CONF:=expandable_segments:True}\n"
             "export PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128\npython train.py --conf \"$MY_CONF\"\n")


def _bash_launch(script: Path) -> str:
    """What bash itself launches: `python` replaced by a function that prints its arguments."""
    proc = subprocess.run(["bash", "-c", 'python(){ echo "python $*"; }; source "$1"', "x", str(script)],
                          capture_output=True, text=True, timeout=HANG_GUARD_S, env={"PATH": os.environ["PATH"]})
    return proc.stdout


@pytest.mark.parametrize("value", ["${MY_CONF:=expandable_segments:True}", "${MY_CONF=x}", "$(echo hi >&2)",
                                   "`true`", "$((N+=1))", "${MY_CONF:?need MY_CONF}"])
def test_f8_a_fix_never_deletes_a_side_effect(tmp_path, value):
    """F8: the safe PK105 fix deleted `export X=${MY_CONF:=...}`, and bash then launched `--conf` empty.
    Now --fix leaves it; --unsafe-fixes keeps the effect (`: ${MY_CONF:=...}`), and bash launches the same."""
    from packlint.cli import main

    text = F8_SCRIPT.replace("${MY_CONF:=expandable_segments:True}", value)
    f = tmp_path / "p.sh"
    f.write_text(text)
    main(["check", "--fix", "-q", str(f)])
    assert f.read_text() == text
    main(["check", "--fix", "--unsafe-fixes", "-q", str(f)])
    fixed = f.read_text()
    if fixed != text:
        assert f": {value}\n" in fixed and "PYTORCH_CUDA_ALLOC_CONF=" + value not in fixed
    ref = tmp_path / "ref.sh"
    ref.write_text(text)
    assert _bash_launch(f) == _bash_launch(ref)


# ------------------------------------------------------------------------------------ output (H27, H28, H33)

GATE_LEAK = "export OFFLINE_PACKING_BMR=1\npython t.py\n"


def test_h27_a_file_name_cannot_forge_a_finding_or_drive_the_terminal(tmp_path, capsys, monkeypatch):
    from packlint.cli import main

    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "x\nfake.sh:1:1: error: injected [PK999]\n.sh").write_text(GATE_LEAK)
    (tmp_path / "g" / "esc\x1b[31mRED.sh").write_text(GATE_LEAK)
    monkeypatch.chdir(tmp_path)
    for fmt in ("gcc", "text"):
        main(["check", "--format", fmt, "g"])
        out = capsys.readouterr().out
        assert "\x1b" not in out
        assert not any(line.startswith("fake.sh") for line in out.splitlines())
    main(["check", "--format", "gcc", "g"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and all(" [PK001]" in ln for ln in lines)
    assert "g/x\\nfake.sh:1:1: error: injected [PK999]\\n.sh:1:8: error:" in "\n".join(lines)
    assert any(ln.startswith("g/esc\\x1b[31mRED.sh:1:8: error:") for ln in lines)


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit", "gitlab", "github", "text", "gcc"])
def test_h28_a_non_utf8_file_name_gives_a_valid_utf8_document(tmp_path, fmt):
    import json
    import xml.etree.ElementTree as ET

    (tmp_path / "n").mkdir()
    (tmp_path / os.fsdecode(b"n/bad\xff\xfename.sh")).write_text(GATE_LEAK)
    proc = subprocess.run([sys.executable, "-m", "packlint", "check", "--format", fmt, "n"], cwd=tmp_path,
                          capture_output=True, timeout=HANG_GUARD_S,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), PACKLINT_NO_CACHE="1"))
    assert proc.returncode == 1
    text = proc.stdout.decode("utf-8")  # strict: raises on a raw 0xff
    assert "\\udc" not in text and "\udcff" not in text
    if fmt in ("json", "gitlab"):
        json.loads(text)
        assert "bad\\\\xff\\\\xfename.sh" in text  # the JSON text of the string `bad\xff\xfename.sh`
    elif fmt == "sarif":
        doc = json.loads(text)
        loc = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        assert loc["uri"] == "n/bad%FF%FEname.sh"
    elif fmt == "junit":
        ET.fromstring(text)
    else:
        assert "bad\\xff\\xfename.sh" in text


def test_h33_a_full_stdout_is_a_one_line_error(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    (tmp_path / "x.sh").write_text(GATE_LEAK)
    for fmt in ("text", "json"):
        with open("/dev/full", "wb") as full:
            proc = subprocess.run([sys.executable, "-m", "packlint", "check", "--format", fmt, "x.sh"],
                                  cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True,
                                  timeout=HANG_GUARD_S, env=dict(os.environ, PYTHONPATH=str(ROOT),
                                                                 PACKLINT_NO_CACHE="1"))
        assert proc.returncode == 2
        assert proc.stderr == "packlint: error: <stdout>: cannot write the report: No space left on device\n"


def test_h33_a_closed_pipe_is_a_one_line_error(tmp_path):
    (tmp_path / "x.sh").write_text(GATE_LEAK * 2000)  # (a report larger than a pipe's buffer)
    r, w = os.pipe()
    os.close(r)
    proc = subprocess.run([sys.executable, "-m", "packlint", "check", "x.sh"], cwd=tmp_path, stdout=w,
                          stderr=subprocess.PIPE, text=True, timeout=HANG_GUARD_S,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), PACKLINT_NO_CACHE="1"))
    os.close(w)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["packlint: error: <stdout>: cannot write the report: Broken pipe"]


# ---------------------------------------------------------------------------- files named on the command line (Q9, Q11, Q13)


@pytest.mark.parametrize("template", ["{code:>300000000}", "{code.__class__}", "{code!r}", "{code[0]}",
                                      "{0}", "x" * 3000])
def test_q9_q10_doc_url_takes_plain_placeholders_only(tmp_path, template, capsys, monkeypatch):
    from packlint.cli import main

    (tmp_path / "s.sh").write_text(GATE_LEAK)
    (tmp_path / ".packlint.toml").write_text(f'doc-url = "{template}"\n')
    monkeypatch.chdir(tmp_path)
    assert main(["check", "--format", "json", "-o", os.devnull, "s.sh"]) == 2
    err = capsys.readouterr().err
    assert "doc-url" in err and "bad template" in err and len(err) < 400


@pytest.mark.parametrize("option", ["--rule-file", "--config", "--baseline"])
@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "dir"])
def test_q11_command_line_files_must_be_regular(tmp_path, option, special):
    (tmp_path / "s.sh").write_text("echo hi\n")
    if special == "fifo":
        special = str(tmp_path / "rf.fifo")
        os.mkfifo(special)
    elif special == "dir":
        special = str(tmp_path)
    rc, out, err = _check_in_subprocess(["check", option, special, "s.sh"], tmp_path, None,
                                        {"PACKLINT_NO_CACHE": "1"})
    assert rc == 2
    assert err.startswith(f"packlint: error: {special}") and len(err.strip().splitlines()) == 1
    assert "not a regular file" in err or "is a directory" in err


def test_q11_a_huge_rule_file_is_refused_from_its_size(tmp_path):
    (tmp_path / "s.sh").write_text("echo hi\n")
    big = tmp_path / "big.toml"
    with open(big, "wb") as fh:
        fh.truncate(64 * 1024 * 1024)
    rc, _out, err = _check_in_subprocess(["check", "--rule-file", str(big), "s.sh"], tmp_path, None,
                                         {"PACKLINT_NO_CACHE": "1"})
    assert rc == 2 and "file too large (67108864 bytes > 4 MiB limit)" in err


def test_q13_write_baseline_never_replaces_a_link_or_a_device(tmp_path):
    (tmp_path / "s.sh").write_text(GATE_LEAK)
    real = tmp_path / "real.json"
    real.write_text("{}")
    (tmp_path / "link.json").symlink_to(real)
    rc, _out, err = _check_in_subprocess(["check", "--write-baseline", "link.json", "s.sh"], tmp_path, None,
                                         {"PACKLINT_NO_CACHE": "1"})
    assert rc == 2 and "link.json: cannot write baseline: a symbolic link: refused" in err
    assert (tmp_path / "link.json").is_symlink() and real.read_text() == "{}"
    rc, _out, err = _check_in_subprocess(["check", "--write-baseline", "/dev/null", "s.sh"], tmp_path, None,
                                         {"PACKLINT_NO_CACHE": "1"})
    assert rc == 2 and "cannot write baseline: not a regular file (a device): refused" in err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    rc, _out, err = _check_in_subprocess(["check", "--write-baseline", "b.json", "s.sh"], tmp_path, None,
                                         {"PACKLINT_NO_CACHE": "1"})
    assert rc == 0 and (tmp_path / "b.json").is_file()


# ------------------------------------------------------------------------------------ packlint run (R11, R12)


def test_r11_run_passes_the_checked_file_to_bash_after_double_dash(tmp_path):
    """R11: `packlint run -- -c 'CMD'` checked the file `-c`, then `bash -c CMD` ran CMD unchecked."""
    (tmp_path / "-c").write_text("#!/bin/bash\necho harmless \"$@\"\n")
    proc = subprocess.run([sys.executable, "-m", "packlint", "run", "--", "-c", "touch BYPASS; echo UNCHECKED"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=HANG_GUARD_S,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), PACKLINT_NO_CACHE="1"))
    assert proc.stdout == "harmless touch BYPASS; echo UNCHECKED\n"
    assert not (tmp_path / "BYPASS").exists() and proc.returncode == 0
    (tmp_path / "-x.sh").write_text("echo hi\n")
    proc = subprocess.run([sys.executable, "-m", "packlint", "run", "--", "-x.sh"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_GUARD_S,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), PACKLINT_NO_CACHE="1"))
    assert (proc.returncode, proc.stdout) == (0, "hi\n")


@pytest.mark.parametrize("kind", ["dir", "fifo", "device"])
def test_r12_run_refuses_what_is_not_a_regular_file(tmp_path, kind, capsys):
    from packlint.cli import main

    if kind == "dir":
        target = tmp_path / "d2"
        target.mkdir()
        (target / "a.sh").write_text(GATE_LEAK)
        want = "is a directory"
    elif kind == "fifo":
        target = tmp_path / "f.fifo"
        os.mkfifo(target)
        want = "not a regular file (a FIFO): refused"
    else:
        target = Path("/dev/null")
        want = "not a regular file (a device): refused"
    assert main(["run", str(target)]) == 2
    err = capsys.readouterr().err
    assert err == f"packlint: error: {target}: {want}\npacklint: not launching {target}: it could not be checked\n"


def test_run_does_not_launch_a_script_changed_while_it_was_checked(tmp_path, monkeypatch, capsys):
    from packlint import checking
    from packlint.cli import main
    from packlint.cli import run as cmd_run

    s = tmp_path / "s.sh"
    s.write_text("#!/bin/bash\necho ok\n")
    real = checking.check_paths

    def swap(*a, **k):
        out = real(*a, **k)
        s.write_text("#!/bin/bash\necho SWAPPED\n")
        return out

    monkeypatch.setattr(checking, "check_paths", swap)
    monkeypatch.setattr(cmd_run.os, "execv", lambda *a: pytest.fail("launched"))
    assert main(["run", str(s)]) == 2
    assert f"not launching {s}: it changed while it was checked" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ editor server (L2..L19)


class RawLsp:
    """Raw bytes to `packlint server`, framed replies back (tests/test_server.py's client, able to send
    broken frames)."""

    def __init__(self, cwd: Path) -> None:
        import queue
        import threading

        env = {**os.environ, "PYTHONPATH": str(ROOT), "PACKLINT_CACHE_DIR": str(cwd / ".cache")}
        self.proc = subprocess.Popen([sys.executable, "-m", "packlint", "server"], cwd=cwd, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.replies: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        import json

        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            self.replies.put(json.loads(out.read(length)))

    def raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    @staticmethod
    def frame(payload: dict) -> bytes:
        import json

        body = json.dumps(payload).encode()
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def answer(self, rid):
        import queue

        while True:
            try:
                msg = self.replies.get(timeout=HANG_GUARD_S)
            except queue.Empty:
                raise AssertionError(f"no answer for id {rid!r}; alive: {self.proc.poll() is None}") from None
            if "method" not in msg and msg.get("id") == rid:
                return msg

    def close(self) -> None:
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture
def lsp_server(tmp_path):
    pytest.importorskip("pygls")
    s = RawLsp(tmp_path)
    s.raw(s.frame({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}))
    assert "result" in s.answer(0)
    s.raw(s.frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    yield s
    s.close()


def _probe(s: RawLsp, rid: int) -> dict:
    """A request every server must answer (an unknown method: -32601)."""
    s.raw(s.frame({"jsonrpc": "2.0", "id": rid, "method": "packlint/noSuchMethod", "params": {}}))
    return s.answer(rid)


def test_l2_l5_l6_l7_bad_frames_are_answered_and_the_server_goes_on(lsp_server):
    s = lsp_server
    probe = {"jsonrpc": "2.0", "id": 41, "method": "packlint/noSuchMethod", "params": {}}
    body = RawLsp.frame(probe).split(b"\r\n\r\n", 1)[1]
    # L2: a Content-Length that is not a number
    s.raw(b"Content-Length: abc\r\n\r\n" + body)
    assert s.answer(None)["error"]["code"] == -32700
    assert _probe(s, 1)["error"]["code"] == -32601
    # L5: shorter than the body
    s.raw(b"Content-Length: 10\r\n\r\n" + body)
    assert s.answer(None)["error"]["code"] == -32700
    assert _probe(s, 2)["error"]["code"] == -32601
    # L6: longer than the body (the next frame follows at once): the bad one is answered for its id
    s.raw(b"Content-Length: %d\r\n\r\n" % (len(body) + 500) + body)
    s.raw(s.frame({"jsonrpc": "2.0", "id": 3, "method": "packlint/noSuchMethod", "params": {}}))
    assert s.answer(41)["error"]["code"] == -32700
    assert s.answer(3)["error"]["code"] == -32601
    # L7: a huge Content-Length: refused without reading (no MemoryError, the process stays)
    s.raw(b"Content-Length: 99999999999\r\n\r\n" + body)
    assert s.answer(None)["error"]["code"] == -32700
    assert _probe(s, 4)["error"]["code"] == -32601
    # a body that is not JSON, and JSON that is not an object
    s.raw(b"Content-Length: 5\r\n\r\n{{{{{")
    assert s.answer(None)["error"]["code"] == -32700
    s.raw(b"Content-Length: 2\r\n\r\n[]")
    assert s.answer(None)["error"]["code"] == -32600
    assert _probe(s, 5)["error"]["code"] == -32601
    assert s.proc.poll() is None


def test_l12_invalid_params_get_an_error_response(lsp_server):
    s = lsp_server
    s.raw(s.frame({"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover",
                   "params": {"textDocument": 5, "position": {"line": 0, "character": 0}}}))
    assert s.answer(7)["error"]["code"] == -32602
    assert _probe(s, 8)["error"]["code"] == -32601


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "big"])
def test_l18_l19_hover_on_an_unopened_special_or_huge_file_is_refused(lsp_server, tmp_path, target):
    s = lsp_server
    if target == "fifo":
        path = tmp_path / "p.fifo"
        os.mkfifo(path)
    elif target == "big":
        path = tmp_path / "big.sh"
        with open(path, "wb") as fh:
            fh.truncate(64 * 1024 * 1024)
    else:
        path = Path(target)
    s.raw(s.frame({"jsonrpc": "2.0", "id": 9, "method": "textDocument/hover",
                   "params": {"textDocument": {"uri": path.as_uri()}, "position": {"line": 0, "character": 0}}}))
    assert s.answer(9) == {"jsonrpc": "2.0", "id": 9, "result": None}
    assert _probe(s, 10)["error"]["code"] == -32601


def test_frame_reader_resynchronises_on_every_split():
    """The framing alone: the same broken stream, fed in every 2-way split, gives the same events."""
    from packlint.server import FrameReader

    good = RawLsp.frame({"jsonrpc": "2.0", "id": 1, "method": "x"})
    body = good.split(b"\r\n\r\n", 1)[1]
    stream = (b"Content-Length: abc\r\n\r\n" + body + good + b"Content-Length: 3\r\n\r\n" + body + good
              + b"garbage\r\n\r\n" + good + b"Content-Length: 999999999999\r\n\r\n" + good)
    want = None
    for cut in range(len(stream) + 1):
        r = FrameReader(max_frame=1 << 20)
        events = []
        for part in (stream[:cut], stream[cut:]):
            r.feed(part)
            for e in r.events():  # (bounded: a reader that makes no progress fails here, not by hanging)
                events.append(e[:2])
                assert len(events) < 40, (cut, events[:8])
        got = [e for e in events if e[0] == "message"]
        assert got == [("message", body)] * 4, (cut, events)
        want = want or events
    assert sum(1 for e in want if e[0] == "error") >= 4


@pytest.mark.parametrize("args", [["inspect", "x.sh"], ["rules"], ["check", "--fix", "-"], ["check", "--diff", "x.sh"]])
def test_h33_every_command_reports_a_full_stdout_in_one_line(tmp_path, args):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    script = "export PYTORCH_CUDA_ALLOC_CONF=a\nexport PYTORCH_CUDA_ALLOC_CONF=b\npython t.py\n"
    (tmp_path / "x.sh").write_text(script)
    with open("/dev/full", "wb") as full:
        with open(tmp_path / "x.sh", "rb") as stdin:
            proc = subprocess.run([sys.executable, "-m", "packlint", *args], cwd=tmp_path, stdout=full,
                                  stderr=subprocess.PIPE, stdin=stdin, timeout=HANG_GUARD_S,
                                  env=dict(os.environ, PYTHONPATH=str(ROOT), PACKLINT_NO_CACHE="1"))
    err = proc.stderr.decode()
    assert proc.returncode == 2 and "internal error" not in err and "Traceback" not in err
    assert err.strip().splitlines()[-1].endswith("No space left on device")


def test_l17_l22_unopened_missing_document_and_exit_without_shutdown(lsp_server, tmp_path):
    """L17: a hover on a missing file answered with a server traceback; now null. L22: `exit` without
    `shutdown` ends with status 1, as the LSP specification asks."""
    s = lsp_server
    s.raw(s.frame({"jsonrpc": "2.0", "id": 11, "method": "textDocument/hover",
                   "params": {"textDocument": {"uri": (tmp_path / "missing.sh").as_uri()},
                              "position": {"line": 0, "character": 0}}}))
    assert s.answer(11) == {"jsonrpc": "2.0", "id": 11, "result": None}
    s.raw(s.frame({"jsonrpc": "2.0", "method": "exit"}))
    assert s.proc.wait(timeout=HANG_GUARD_S) == 1
