"""What one check run remembers across the scripts it checks (issue 31, speed): a program's startup checks are
evaluated once per distinct set of launch values, and the transformers-program functions look for a name in a
program's files once per run. The findings must be the same as checking each script in a run of its own, and
the next run must see a tree that changed."""

from __future__ import annotations

import gc
import os
import shutil
import sys
from pathlib import Path

import pytest

from packlint import caches
from packlint.checking import CheckOptions, check_paths
from packlint.cli import main
from packlint.codebase import startup_checks
from packlint.codebase.resolve import clear_run_memos
from packlint.conditions.functions import hf_code, startup

UPSTREAM = Path(__file__).parent / "fixtures" / "startup" / "upstream"

# three launches with the same values as train.sh (30 layers over 4 stages: PK330), two of train_ok.sh's
BAD = (UPSTREAM / "train.sh").read_text()
OK = (UPSTREAM / "train_ok.sh").read_text()


def _findings(paths: list[str]) -> list[tuple]:
    result = check_paths(paths, CheckOptions())
    assert not result.file_errors
    return sorted((f.location.path, f.location.line, f.code, f.message) for f in result.findings)


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(UPSTREAM, root, ignore=shutil.ignore_patterns("*.sh", "*.expected"))
    (root / ".git").mkdir()
    for i in range(3):
        (root / f"bad_{i}.sh").write_text(BAD)
    for i in range(2):
        (root / f"ok_{i}.sh").write_text(OK)
    (root / "world.sh").write_text((UPSTREAM / "train_world.sh").read_text())
    return root


def test_startup_checks_evaluated_once_per_distinct_values(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PACKLINT_JOBS", "1")
    root = _tree(tmp_path)
    monkeypatch.chdir(root)
    runs = []
    real = startup_checks.Evaluator.run

    def counted(self):
        runs.append(1)
        return real(self)

    monkeypatch.setattr(startup_checks.Evaluator, "run", counted)
    together = _findings(["."])
    assert len(runs) == 3  # bad_*, ok_*, world.sh: three sets of values for six launches
    assert [c for _, _, c, _ in together].count("PK330") == 4  # bad_0..2 and world.sh
    alone = [f for name in sorted(p.name for p in root.glob("*.sh")) for f in _findings([name])]
    assert together == sorted(alone)


def test_a_changed_program_is_read_again_by_the_next_run(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PACKLINT_JOBS", "1")
    root = _tree(tmp_path)
    monkeypatch.chdir(root)
    assert any(c == "PK330" for _, _, c, _ in _findings(["bad_0.sh"]))
    args = root / "megatron" / "training" / "arguments.py"
    args.write_text(args.read_text().replace("Number of layers should be divisible", "Layers must divide"))
    again = _findings(["bad_0.sh"])
    assert any("Layers must divide" in m for _, _, c, m in again if c == "PK330")


def test_value_keys_tell_apart_what_equality_does_not():
    key = startup._value_key
    assert key(True) != key(1) and key(0.0) != key(-0.0) and key((1,)) != key((True,))
    assert key(startup_checks.unknown("a")) != key(startup_checks.unknown("b"))
    assert key(startup_checks.unknown("a")) == key(startup_checks.unknown("a"))


def test_hf_program_files_scanned_once_per_run(tmp_path, monkeypatch):
    """Two scripts launch the same transformers program: its files are looked at once in a run, and the
    next run reads a file that changed (the collator removed: PK530's finding goes away)."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PACKLINT_JOBS", "1")
    root = tmp_path / "repo"
    root.mkdir()
    (root / ".git").mkdir()
    train = (
        "from transformers import AutoModelForCausalLM, DataCollatorWithFlattening, HfArgumentParser, Trainer\n"
        "from transformers import TrainingArguments\n"
        "args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
        "model = AutoModelForCausalLM.from_pretrained('Qwen/Qwen2.5-0.5B', attn_implementation='sdpa')\n"
        "Trainer(model=model, args=args, data_collator=DataCollatorWithFlattening()).train()\n"
    )
    (root / "train.py").write_text(train)
    (root / "transformers").mkdir()
    (root / "transformers" / "__init__.py").write_text('__version__ = "4.53.0"\n')
    (root / "transformers" / "masking_utils.py").write_text("def create_causal_mask(*a, **k):\n    pass\n")
    for name in ("a.sh", "b.sh"):
        (root / name).write_text("#!/bin/bash\npython train.py --output_dir out\n")
    monkeypatch.chdir(root)
    looked = []
    real = hf_code._mentions
    monkeypatch.setattr(hf_code, "_mentions", lambda path, needle: looked.append((path, needle)) or real(path, needle))
    first = _findings(["a.sh", "b.sh"])
    assert [c for _, _, c, _ in first].count("PK530") == 2
    assert len(looked) == len(set(looked))  # each (file, name) once for the two scripts
    (root / "train.py").write_text(train.replace(", data_collator=DataCollatorWithFlattening()", ""))
    assert not [c for _, _, c, _ in _findings(["a.sh", "b.sh"]) if c == "PK530"]


def test_run_memos_are_used_only_in_a_run_and_cleared_by_the_next():
    memo = caches.run_memo()
    memo["k"] = 1
    clear_run_memos()
    assert memo == {}
    assert not caches.IN_RUN[0]  # (outside check_paths: the functions read the tree afresh)


def test_main_runs_check_without_the_cycle_collector_and_restores_it(tmp_path, monkeypatch, capsys):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\ntorchrun train.py\n")
    seen = []
    import packlint.cli.check as check_cli

    real = check_cli.run
    monkeypatch.setattr(check_cli, "run", lambda args: seen.append(gc.isenabled()) or real(args))
    assert gc.isenabled()
    main(["check", "--isolated", "--no-cache", str(script)])
    assert seen == [False] and gc.isenabled()


def test_the_console_script_exits_a_check_with_the_collector_still_off(tmp_path, monkeypatch):
    """`entry` ends a short-lived command with `os._exit`: turning the collector back on first would make one pass over
    every object the run made (7% of a repository's cold check) just before exiting."""
    import packlint.cli as cli

    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\ntorchrun train.py\n")
    ended = []

    def fake_exit(code):
        ended.append((code, gc.isenabled()))
        raise SystemExit(code)

    monkeypatch.setattr(cli, "exit_now", fake_exit)
    monkeypatch.setattr(sys, "argv", ["packlint", "check", "--isolated", "--no-cache", "-q", str(script)])
    try:
        with pytest.raises(SystemExit):
            cli.entry()
    finally:
        gc.enable()
    assert ended == [(0, False)]
    monkeypatch.setattr(sys, "argv", ["packlint", "--version"])  # (not a short-lived command: the usual exit)
    with pytest.raises(SystemExit):
        cli.entry()
    assert gc.isenabled()


def _two_programs(tmp_path: Path) -> Path:
    """Two programs of one tree importing the same module, one script launching each (no cache: read cold)."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "common.py").write_text("import os\nSEED = os.environ.get('SEED_FROM_COMMON')\n")
    for name in ("a", "b"):
        (root / f"prog_{name}.py").write_text(
            "import argparse\nfrom pkg import common\n"
            "p = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\nargs = p.parse_args()\n"
        )
        (root / f"run_{name}.sh").write_text(f"#!/bin/bash\npython prog_{name}.py --lr 1e-4 --nope 1\n")
    return root


def test_a_file_two_programs_import_is_parsed_once_per_run(tmp_path, monkeypatch):
    import ast

    from packlint.codebase import filefacts

    monkeypatch.setenv("PACKLINT_NO_CACHE", "1")
    monkeypatch.setenv("PACKLINT_JOBS", "1")
    root = _two_programs(tmp_path)
    monkeypatch.chdir(root)
    parsed: list[str] = []
    real = ast.parse

    def counted(source, filename="<unknown>", *a, **k):
        parsed.append(str(filename))
        return real(source, filename, *a, **k)

    monkeypatch.setattr(ast, "parse", counted)
    together = _findings(["run_a.sh", "run_b.sh"])
    assert sum(1 for f in parsed if f.endswith("common.py")) == 1
    assert [c for _, _, c, _ in together].count("PK201") == 2  # --nope: not a flag of either program
    monkeypatch.setattr(filefacts, "MAX_RUN_TREE_BYTES", 0)  # over the bound: parsed per program again
    parsed.clear()
    assert _findings(["run_a.sh", "run_b.sh"]) == together
    assert sum(1 for f in parsed if f.endswith("common.py")) == 2


def test_a_memo_entry_carries_the_reads_it_was_computed_from(tmp_path):
    """While the result cache records (packlint.result_cache), a Memo entry keeps what was read from the lookup
    that missed to the store, and a hit adds it to the current script's input set; an entry stored without a
    lookup before it keeps everything the script read so far (more than it needs, never less)."""
    from packlint import result_cache

    mine, shared, before = tmp_path / "mine.sh", tmp_path / "shared.py", tmp_path / "before.txt"
    for p in (mine, shared, before):
        p.write_text("x")
    memo = caches.Memo(keep=False)
    result_cache.start(str(tmp_path / "cache"))
    try:
        result_cache.begin_job()
        mine.read_text()  # (the first script's own read)
        if "facts" not in memo:
            memo["facts"] = shared.read_text()
        before.read_text()
        memo["unasked"] = 1  # (no lookup before it)
        first = result_cache.end_job()
        result_cache.begin_job()
        assert memo.get("facts") == "x"  # (a hit: the second script reads nothing itself)
        second = result_cache.end_job()
        result_cache.begin_job()
        assert "unasked" in memo
        third = result_cache.end_job()
    finally:
        result_cache.stop()

    def paths(rows) -> set[str]:  # (an input set: its own rows and its memo entries' groups, result_reads.Reads)
        return {result_cache._ROWS[i][1] for i in rows.flat()}

    assert {str(mine), str(shared), str(before)} <= paths(first)
    assert str(shared) in paths(second) and not {str(mine), str(before)} & paths(second)
    assert {str(mine), str(shared), str(before)} <= paths(third)


def test_the_foreign_flag_search_answers_as_difflib_does():
    """A fork's flags are looked up once per name, with difflib's own two filters applied in bulk first
    (snapshots._close_to_upstream): the answer is difflib.get_close_matches' for real, misspelt and made-up
    names, and for a name with a character repeated past the bitmask's count (difflib decides alone)."""
    import difflib
    import random

    from packlint.codebase import snapshots

    known = snapshots.load_data()["flags"]
    rng = random.Random(7)
    names = []
    for flag in rng.sample(sorted(known), 60):
        word = list(flag)
        for _ in range(rng.randint(0, 5)):
            i = rng.randrange(len(word))
            word[i] = rng.choice("abcdefghijklmnopqrstuvwxyz-_")
        names.append("".join(word))
    names += ["--hf-tokenizer-path", "--training-phase", "--deepspeed", "--zero-stage", "--" + "-" * 40, "--num-layerz"]
    snapshots._CLOSE_MEMO.clear()
    for name in names:
        expected = bool(difflib.get_close_matches(name, list(known), 1, snapshots._CLOSE_CUTOFF))
        assert snapshots._close_to_upstream(name, known) is expected, name


def test_a_file_two_programs_import_is_read_and_looked_up_once_per_run(tmp_path, monkeypatch):
    from packlint.codebase import filefacts, reader

    monkeypatch.setenv("PACKLINT_NO_CACHE", "1")
    monkeypatch.setenv("PACKLINT_JOBS", "1")
    root = _two_programs(tmp_path)
    monkeypatch.chdir(root)
    read: list[str] = []
    real = filefacts.read_source

    def counted(path):
        read.append(path)
        return real(path)

    monkeypatch.setattr(reader, "read_source", counted)
    together = _findings(["run_a.sh", "run_b.sh"])
    assert sum(1 for f in read if f.endswith("common.py")) == 1
    assert len(read) == len(set(read))
    assert not any(src is not None and src._tree is not None for src in reader._RUN_SOURCES.values())
    assert [c for _, _, c, _ in together].count("PK201") == 2
    # outside a run, and over the bound, every program reads its files again; the findings are the same
    read.clear()
    monkeypatch.setattr(reader, "MAX_RUN_SOURCE_BYTES", 0)
    assert _findings(["run_a.sh", "run_b.sh"]) == together
    assert sum(1 for f in read if f.endswith("common.py")) == 2
    # the next run reads an edited file again (the memos are the run's)
    monkeypatch.setattr(reader, "MAX_RUN_SOURCE_BYTES", 64 * 1024 * 1024)
    common = next(root.rglob("common.py"))
    common.write_text(common.read_text() + "\n# edited\n")
    read.clear()
    assert _findings(["run_a.sh", "run_b.sh"]) == together
    assert sum(1 for f in read if f.endswith("common.py")) == 1


def test_the_install_scan_is_kept_for_one_run(tmp_path):
    """Which unread import a launch's scripts `pip install` (PK203/PK205's "may read it") is found once per run for the
    same scripts and names, and found again in the next run (an edited script: the editor server's second check)."""
    from packlint.conditions.functions import codebase_env as ce

    script = tmp_path / "run.sh"
    script.write_text("pip install flash-attn\n# pip install apex\ntorchrun train.py\n")
    key = (str(script),)
    was = caches.IN_RUN[0]
    caches.IN_RUN[0] = True
    try:
        caches.clear_run_memos()
        caches.clear_memos()
        assert ce._installed_import(key, ("apex", "flash_attn")) == "flash_attn"  # (a comment installs nothing)
        script.write_text("pip install apex\ntorchrun train.py\n")
        assert ce._installed_import(key, ("apex", "flash_attn")) == "flash_attn"  # (the same run: its answer)
        caches.clear_run_memos()
        caches.clear_memos()  # (the scripts' texts are memos of the process: a new recording run empties them)
        assert ce._installed_import(key, ("apex", "flash_attn")) == "apex"
        assert ce._installed_import(key, ("torch",)) is None
    finally:
        caches.IN_RUN[0] = was
        caches.clear_run_memos()


def test_a_programs_sub_projects_and_a_folders_pins_are_read_once_per_run(tmp_path, monkeypatch):
    """Every launch of a program asks which sub-projects its checkout installs, and every script of a folder which
    release its parents pin: once per run for the same folder (a run does not change the tree); the next run reads
    the tree again."""
    from packlint.codebase.subprojects import package_dirs, subproject_paths
    from packlint.configs.versions import pinned_in_tree

    root = tmp_path / "repo"
    (root / "sub" / "subpkg").mkdir(parents=True)
    (root / "sub" / "setup.py").write_text("from setuptools import setup\nsetup(name='sub')\n")
    (root / "requirements.txt").write_text("-e ./sub\ntrl==0.9.6\n")
    (root / "jobs").mkdir()
    program = root / "jobs" / "train.py"
    program.write_text("import subpkg\n")
    reads: list[str] = []
    real_open, real_os_open = open, os.open

    def counting_open(file, *args, **kwargs):
        if str(file).endswith("requirements.txt"):
            reads.append(str(file))
        return real_open(file, *args, **kwargs)

    def counting_os_open(path, *args, **kwargs):
        if str(path).endswith("requirements.txt"):
            reads.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr("builtins.open", counting_open)
    monkeypatch.setattr(os, "open", counting_os_open)
    caches.IN_RUN[0] = True
    try:
        clear_run_memos()
        first = (subproject_paths(str(program), [str(root)]), pinned_in_tree("trl", str(root / "jobs")))
        assert package_dirs(str(root / "sub")) == [str(root / "sub")]
        (root / "sub" / "src").mkdir()
        (root / "sub" / "setup.py").write_text("from setuptools import setup\nsetup(package_dir={'': 'src'})\n")
        assert package_dirs(str(root / "sub")) == [str(root / "sub")]
        n = len(reads)
        assert n >= 2  # (the sub-projects' look-up and the pins' each read it)
        (root / "requirements.txt").write_text("trl==0.12.0\n")
        again = (subproject_paths(str(program), [str(root)]), pinned_in_tree("trl", str(root / "jobs")))
        assert again == first == ([str(root / "sub")], ("0.9.6", str(root / "requirements.txt")))
        assert len(reads) == n  # (no file read again in the run)
        clear_run_memos()
        assert package_dirs(str(root / "sub")) == [str(root / "sub" / "src")]
        assert subproject_paths(str(program), [str(root)]) == []
        assert pinned_in_tree("trl", str(root / "jobs")) == ("0.12.0", str(root / "requirements.txt"))
    finally:
        caches.IN_RUN[0] = False
        clear_run_memos()


def test_the_walk_for_a_vendored_parser_is_made_once_per_run(tmp_path):
    """Each program of a tree that imports an unresolved `megatron` looks for the copy the tree vendors (a walk of up
    to 3,000 folders): once per run and tree."""
    from packlint.codebase.reader import _find_vendored

    marker = tmp_path / "third_party" / "Megatron-LM" / "megatron" / "training" / "arguments.py"
    marker.parent.mkdir(parents=True)
    marker.write_text("def parse_args():\n    pass\n")
    caches.IN_RUN[0] = True
    try:
        clear_run_memos()
        first = _find_vendored("megatron", [str(tmp_path)])
        assert first == str(tmp_path / "third_party" / "Megatron-LM")
        marker.unlink()
        assert _find_vendored("megatron", [str(tmp_path)]) == first
        clear_run_memos()
        assert _find_vendored("megatron", [str(tmp_path)]) is None
    finally:
        caches.IN_RUN[0] = False
        clear_run_memos()


def test_a_nodes_source_text_is_made_once(monkeypatch):
    """The schema reader names the condition of every `if` it runs, each time the function holding it runs:
    filefacts.unparse makes a node's text once (ast.unparse is pure Python) and cuts it to each caller's limit."""
    import ast

    from packlint.codebase.filefacts import unparse

    test = ast.parse("if args.sequence_parallel and args.tensor_model_parallel_size > 1:\n    pass\n").body[0].test
    made = []
    real = ast.unparse
    monkeypatch.setattr(ast, "unparse", lambda node: made.append(node) or real(node))
    full = "args.sequence_parallel and args.tensor_model_parallel_size > 1"
    assert unparse(test) == full and unparse(test, 60) == full[:57] + "..." and unparse(test, 200) == full
    assert made == [test] and unparse(None) is None
    assert ast.dump(test) == ast.dump(ast.parse("if " + full + ":\n    pass\n").body[0].test)  # (not a field)


def test_config_interpolations_read_here_agree_with_grep(tmp_path, monkeypatch):
    """Whether a config file under a launch's named folders interpolates a variable (`${NAME}`, `${NAME:default}`,
    `${oc.env:NAME}`, `env:NAME,`) is read once per run from the files grep would search, and agrees with grep: a
    symbolic link met while recursing, another suffix, a name that only starts the same are not counted; an unreadable
    file leaves the answer to grep."""
    import os
    import shutil

    import pytest

    from packlint import caches
    from packlint.conditions.functions import codebase_env

    if shutil.which("grep") is None:
        pytest.skip("needs grep")
    root = tmp_path / "configs"
    (root / "sub").mkdir(parents=True)
    (root / "a.yaml").write_text("lr: ${LR}\nwarmup: ${WARMUP:10}\n")
    (root / "sub" / "b.json").write_text('{"x": "${oc.env:DATA_DIR}", "y": "${env:TOKENS,1}"}')
    (root / "notes.txt").write_text("${IN_TXT}\n")
    (root / "c.yml").write_bytes(b"\xff\xfe binary ${BIN_VAR}\n")
    (tmp_path / "elsewhere.yaml").write_text("${LINKED}\n")
    os.symlink(tmp_path / "elsewhere.yaml", root / "linked.yaml")
    names = ["LR", "WARMUP", "DATA_DIR", "TOKENS", "IN_TXT", "BIN_VAR", "LINKED", "L", "WARM", "DATA"]

    def answers() -> list[bool]:
        codebase_env._INTERP_MEMO.clear()
        return [codebase_env._interpolated_anywhere([str(root)], n) for n in names]

    caches.IN_RUN[0] = True
    try:
        caches.clear_run_memos()
        here = answers()
        assert codebase_env._CONFIG_TEXTS[(str(root),)] is not None  # (read here, not by grep)
        monkeypatch.setattr(codebase_env, "_config_texts", lambda roots: None)
        assert here == answers() == [True, True, True, True, False, True, False, False, False, False]
        monkeypatch.undo()
        (root / "sub" / "b.json").chmod(0)
        caches.clear_run_memos()
        if os.access(root / "sub" / "b.json", os.R_OK):  # (root reads it anyway)
            return
        assert codebase_env._config_texts((str(root),)) is None  # (grep's to answer)
    finally:
        (root / "sub" / "b.json").chmod(0o600)
        caches.IN_RUN[0] = False
        caches.clear_run_memos()


def test_an_import_resolved_once_per_run_keeps_each_closure_whole(tmp_path, monkeypatch):
    """The files an import statement runs are found once per run (the programs of a tree import the same modules):
    a second program's closure still holds every file and every unresolved package its imports name."""
    from packlint.codebase import reader
    from packlint.codebase.options import CodeOptions

    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from . import util\nimport missing_lib\n")
    (tmp_path / "pkg" / "util.py").write_text("import os\n")
    # (train.py leaves missing_lib unresolved before pkg does; infer.py meets it only through pkg)
    (tmp_path / "train.py").write_text("import missing_lib.sub\nimport pkg\nfrom pkg import util\n")
    (tmp_path / "infer.py").write_text("import pkg\n")

    def closure(prog: str) -> tuple[list[str], set[str]]:
        c = reader.Closure(reader.ModuleIndex([str(tmp_path)]), CodeOptions(use_cache=False))
        c.walk(str(tmp_path / prog))
        return [os.path.basename(p) for p in c.order], c.unresolved

    alone = [closure(p) for p in ("train.py", "infer.py")]  # (outside a run: nothing kept)
    caches.IN_RUN[0] = True
    try:
        caches.clear_run_memos()
        calls: list[tuple] = []
        real = reader.Closure._find_targets
        monkeypatch.setattr(reader.Closure, "_find_targets", lambda self, *a: calls.append(a) or real(self, *a))
        in_run = [closure(p) for p in ("train.py", "infer.py")]
    finally:
        caches.IN_RUN[0] = False
        caches.clear_run_memos()
    assert in_run == alone
    assert alone[1] == (["infer.py", "__init__.py", "util.py"], {"missing_lib", "os"})
    assert len(calls) == 6  # (train.py's three imports, pkg's two, util's one; infer.py's one is train.py's second)


@pytest.mark.parametrize(
    "script",
    [
        b"#!/bin/bash\nif true; then\n  echo ok\nfi\n",
        b"#!/bin/bash\nif true; then\n  echo broken\n",
        b"#!/bin/bash\nx=1\nfi\n",
        b"if true; then\r\n  echo crlf\r\nfi\r\n",
        b"shopt -s extglob\nrm -rf ./d/!(rank_*)\n",
        b"echo \xff\xfe not utf-8 $(\n",
        b"",
    ],
)
def test_bash_reads_the_script_from_memory_as_from_a_pipe(script, monkeypatch):
    """`bash -n` reads the script from an in-memory file (in blocks, where a pipe makes it read byte by byte): its
    verdict, line and message are the ones it gives reading the same bytes from a pipe."""
    from packlint import parse

    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    fd = parse._seekable(script)
    if fd is None:
        pytest.skip("no memfd here")
    os.close(fd)
    from_memory = parse._run_bash_n(script)
    monkeypatch.setattr(parse, "_seekable", lambda data: None)
    assert from_memory == parse._run_bash_n(script)


def test_a_cache_folder_removed_meanwhile_is_made_again(tmp_path):
    """The code-base cache makes each entry folder once per process; where it was removed meanwhile (`packlint clean`
    from another shell), one entry is not written and the next ones are, in a folder made again."""
    from packlint.codebase import cache

    base = str(tmp_path / "codebase")
    facts = {"imports": [], "env": [], "calls": [], "wrappers": [], "syspath": []}
    cache.store(base, "files", "a" * 40, facts)
    assert cache.load(base, "files", "a" * 40) == facts
    shutil.rmtree(base)
    cache.store(base, "files", "b" * 40, facts)  # (its folder is gone: not written)
    cache.store(base, "files", "c" * 40, facts)
    assert cache.load(base, "files", "c" * 40) == facts
    assert sorted(os.listdir(os.path.dirname(cache._path(base, "files", "c" * 40)))) == ["c" * 40 + ".json"]


def test_the_calls_of_a_function_in_a_file_are_found_once_per_run(monkeypatch):
    """The startup checks look in each file of a program's closure for the calls of its initialising function
    (`initialize_megatron(...)`, what they pass): once per file, function and run, in the tree's walk order."""
    import ast

    tree = ast.parse("def f():\n    m.initialize_megatron(a=1)\n    other(2)\n\ninitialize_megatron(b=2)\nx.y.z(3)\n")
    walks: list[int] = []
    real = startup_checks._walk
    monkeypatch.setattr(startup_checks, "_walk", lambda t: walks.append(1) or real(t))
    outside = startup_checks._calls_of("/m.py", "d1", tree, "initialize_megatron")
    assert [ast.unparse(c) for c in outside] == ["initialize_megatron(b=2)", "m.initialize_megatron(a=1)"]  # (breadth first)
    caches.IN_RUN[0] = True
    try:
        caches.clear_run_memos()
        first = startup_checks._calls_of("/m.py", "d1", tree, "initialize_megatron")
        assert startup_checks._calls_of("/m.py", "d1", tree, "initialize_megatron") is first
        assert startup_checks._calls_of("/m.py", "d1", tree, "z") != first
    finally:
        caches.IN_RUN[0] = False
        caches.clear_run_memos()
    assert first == outside and len(walks) == 3  # (outside a run, the first in it, and the other name)


def test_config_folders_held_for_a_run_are_bounded(tmp_path, monkeypatch):
    """The config files read for their interpolations are bounded per folder set (files, bytes) and for the whole run
    (bytes held): past a bound grep answers, as before."""
    from packlint.conditions.functions import codebase_env

    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for i in range(3):
            (tmp_path / name / f"{i}.yaml").write_text("x: ${V}\n" * 10)
    caches.IN_RUN[0] = True
    try:
        caches.clear_run_memos()
        monkeypatch.setattr(codebase_env, "MAX_CONFIG_SCAN_FILES", 2)
        assert codebase_env._config_texts((str(tmp_path / "a"),)) is None  # (3 files)
        monkeypatch.setattr(codebase_env, "MAX_CONFIG_SCAN_FILES", 5000)
        monkeypatch.setattr(codebase_env, "MAX_CONFIG_HELD_BYTES", 300)
        caches.clear_run_memos()
        assert len(codebase_env._config_texts((str(tmp_path / "a"),)) or ()) == 3  # (240 bytes held)
        assert codebase_env._config_texts((str(tmp_path / "b"),)) is None  # (240 more: past 300 for the run)
        caches.clear_run_memos()
        assert codebase_env._config_texts((str(tmp_path / "b"),)) is not None  # (a new run holds nothing yet)
    finally:
        caches.IN_RUN[0] = False
        caches.clear_run_memos()
