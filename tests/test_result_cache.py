"""The per-script result cache of `packlint check` (issue 31, packlint.result_cache): an unchanged tree's
findings are replayed, byte for byte; any change to anything a check read (the script, a sourced file, a
config file, the launched code, a file that was absent) makes the next run analyse again and find what a
run without the cache finds; a corrupt or foreign entry is a miss; the cache stays bounded and `clean`
removes it. Each check is its own process, as `packlint check` is (the cache is used only in a process's
first run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packlint.result_cache import FORMAT

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures"
UPSTREAM = FIXTURES / "startup" / "upstream"
LLAMAFACTORY = FIXTURES / "stacks" / "llamafactory" / "row01_packing_without_neat_bad"
N = 5  # files checked: train.sh, run.sh, pack.sh, env/gates.sh, the LLaMA-Factory YAML
REPORT = re.compile(r"result cache: (\d+) hit, (\d+) analysed, (\d+) stored")

# a launch whose gates come from a sourced file (PK101: the offline gate is set there, never exported)
PACK = """#!/bin/bash
set -euo pipefail
source ./env/gates.sh
if [ -f ./env/extra.env ]; then
    source ./env/extra.env
fi
torchrun --nproc_per_node 8 aiak_training_llm/train/sft/sft_llava_onevision2.py \\
    --packing-sft-data --micro-batch-size 1 --global-batch-size 128 --seq-length 8192
"""
GATES = "export OFFLINE_PACKING_BMR=1\nOFFLINE_PACKED_DATA=1\n"


def _age(root: Path) -> None:
    """Every file and directory of the tree modified a minute ago (a file changed within the last
    seconds is never trusted by its signature: result_cache.RACY_NS)."""
    past = time.time() - 60
    for dirpath, dirs, files in os.walk(root):
        for name in files + dirs:
            os.utime(os.path.join(dirpath, name), (past, past), follow_symlinks=False)
    os.utime(root, (past, past))


def _aged(*paths: Path) -> None:
    """Only what an edit touched, dated 30 s ago: every other file keeps its signature, so what the next
    run sees as changed is the edit (and not, as a whole-tree touch would make it, everything)."""
    past = time.time() - 30
    for p in paths:
        os.utime(p, (past, past))


def _tree(tmp_path: Path) -> Path:
    """A checkout with three kinds of launch: Megatron code it reads (PK330 from the code's assertion),
    a LLaMA-Factory YAML (PK400: packing without neat_packing) and gates from a sourced file (PK101)."""
    root = tmp_path / "repo"
    shutil.copytree(UPSTREAM, root, ignore=shutil.ignore_patterns("*.expected", "train_*.sh"))
    shutil.copytree(LLAMAFACTORY, root, dirs_exist_ok=True)
    (root / ".git").mkdir()
    (root / "env").mkdir()
    (root / "env" / "gates.sh").write_text(GATES)
    (root / "pack.sh").write_text(PACK)
    _age(root)
    return root


def _check(
    root: Path, cache: Path | None, *extra: str, path: str = ".", isolated: bool = True, jobs: str = "1"
) -> tuple[str, tuple[int, int, int] | None]:
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT), PACKLINT_CACHE_REPORT="1", PACKLINT_JOBS=jobs)
    env.pop("PACKLINT_NO_CACHE", None)
    args = ["check", *(["--isolated"] if isolated else []), "--exit-zero", "--output-format", "json", *extra]
    if cache is None:
        args.append("--no-cache")
    else:
        env["PACKLINT_CACHE_DIR"] = str(cache)
    proc = subprocess.run(
        [sys.executable, "-m", "packlint", *args, path], cwd=root, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    m = REPORT.search(proc.stderr)
    return proc.stdout, (tuple(int(g) for g in m.groups()) if m else None)  # type: ignore[return-value]


def _codes(out: str) -> list[str]:
    return sorted(f["code"] for f in json.loads(out)["findings"])


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.delenv("PACKLINT_CACHE_DIR", raising=False)
    return _tree(tmp_path), tmp_path / "cache"


def test_an_unchanged_tree_replays_the_same_findings(tree):
    root, cache = tree
    first, counts = _check(root, cache)
    assert counts == (0, N, N)
    assert {"PK330", "PK400", "PK101"} <= set(_codes(first))
    again, counts = _check(root, cache)
    assert counts == (N, 0, 0)
    assert again == first == _check(root, None)[0]  # byte for byte, and what no cache finds
    # a script named by its absolute path (as editors and CI name it): the launch model names it otherwise
    absolute = str(root / "train.sh")
    fresh, counts = _check(root, cache, path=absolute)
    assert counts == (0, 1, 1)
    replayed, counts = _check(root, cache, path=absolute)
    assert counts == (1, 0, 0) and replayed == fresh
    # another option that changes the result is another key: analysed, not replayed
    _out, counts = _check(root, cache, "--ignore", "PK400")
    assert counts == (0, N, N)


def _edit_script(root: Path) -> Path:
    p = root / "train.sh"
    p.write_text(p.read_text().replace("--pipeline-model-parallel-size 4", "--pipeline-model-parallel-size 5"))
    return p


def _edit_sourced(root: Path) -> Path:
    p = root / "env" / "gates.sh"
    p.write_text(GATES.replace("OFFLINE_PACKED_DATA=1", "export OFFLINE_PACKED_DATA=1"))
    return p


def _edit_config(root: Path) -> Path:
    p = root / "examples" / "train_lora" / "qwen_lora_sft.yaml"
    p.write_text(p.read_text() + "neat_packing: true\n")
    return p


def _edit_code(root: Path) -> Path:
    p = root / "megatron" / "training" / "arguments.py"
    p.write_text(p.read_text().replace("Number of layers should be divisible", "Layers must divide"))
    return p


@pytest.mark.parametrize(
    ("change", "readers"),
    [
        (_edit_script, 1),  # train.sh itself
        (_edit_sourced, 2),  # env/gates.sh, checked itself and sourced by pack.sh
        (_edit_config, 2),  # the YAML, checked itself and named by run.sh's launch
        (_edit_code, 1),  # the Megatron code train.sh launches
    ],
)
def test_any_changed_input_is_analysed_again(tree, change, readers):
    root, cache = tree
    before, counts = _check(root, cache)
    assert counts == (0, N, N)
    _aged(change(root))  # (as if made a while ago: else the run after it stores nothing, see the last test)
    after, counts = _check(root, cache)
    assert counts == (N - readers, readers, readers)  # (each script's own input set: only its readers again)
    assert after != before  # the change matters to the findings ...
    assert after == _check(root, None)[0]  # ... and the cached run finds what a run without the cache finds
    replay, counts = _check(root, cache)
    assert counts == (N, 0, 0) and replay == after, _changed(cache)


def test_a_file_that_appears_is_a_change(tree):
    """pack.sh sources env/extra.env only if it exists: its absence was read, and is an input. Only the
    script is named (no directory of the tree is listed), so the existence check alone must tell."""
    root, cache = tree
    before, counts = _check(root, cache, path="pack.sh")
    assert counts == (0, 1, 1) and "PK101" in _codes(before)
    assert _check(root, cache, path="pack.sh")[1] == (1, 0, 0)
    (root / "env" / "extra.env").write_text("export OFFLINE_PACKED_DATA=1\n")
    _aged(root / "env" / "extra.env", root / "env")
    after, counts = _check(root, cache, path="pack.sh")
    assert counts == (0, 1, 1) and after != before  # (PK101 now "may": the file exports it on one path)
    assert after == _check(root, None, path="pack.sh")[0]


def _changed(cache: Path) -> list:
    """The recorded paths whose signature is not what a stored bundle holds (a failing test's message)."""
    from packlint.result_cache import probe

    out = []
    for b in _results(cache):
        if not b.name.startswith("index-"):
            out += [(b.name[:8], r[0], r[1]) for r in json.loads(b.read_text())["inputs"] if probe(r[0], r[1]) != r[2]]
    return out


def _results(cache: Path) -> list[Path]:
    return sorted((cache / "results").rglob("*.json"))


def _indexes(cache: Path) -> list[Path]:
    return sorted((cache / "results" / f"v{FORMAT}").glob("index-*.json"))


def _bundle(cache: Path) -> Path:
    """The file holding the last stored run's findings (the index, in shards, names it)."""
    names = {n for p in _indexes(cache) for n in json.loads(p.read_text())["jobs"].values()}
    (name,) = names
    return cache / "results" / f"v{FORMAT}" / f"{name}.json"


def _edit_bundle(bundle: Path, edit) -> None:
    data = json.loads(bundle.read_text())
    edit(data)
    bundle.write_text(json.dumps(data))


def test_a_corrupt_or_foreign_entry_is_a_miss(tree):
    root, cache = tree
    expected, _ = _check(root, cache)
    assert _check(root, cache)[1] == (N, 0, 0)
    for damage in (
        lambda b: b.write_text("{not json"),
        lambda b: b.write_text(json.dumps({"key": b.stem, "inputs": [], "entries": {"x": 1}})),
        lambda b: b.write_bytes(b"\xff" * 100),
        lambda b: b.write_text(json.dumps({"key": b.stem, "inputs": [["s", "/", "x"]], "entries": {}})),
        # the memo entries' read sets (stored once, numbered by the entries): missing, not runs, or a number past them
        lambda b: _edit_bundle(b, lambda d: d.pop("groups")),
        lambda b: _edit_bundle(b, lambda d: [d.update(groups=[[0]])] + [e.update(g=[0]) for e in d["entries"].values()]),
        lambda b: _edit_bundle(b, lambda d: [e.update(g=[len(d["groups"])]) for e in d["entries"].values()]),
        lambda b: _edit_bundle(b, lambda d: [e.update(g="0") for e in d["entries"].values()]),
    ):
        damage(_bundle(cache))
        out, counts = _check(root, cache)
        assert counts == (0, N, N) and out == expected
    # findings of the wrong shape under a valid input set: a miss, never a crash or a wrong report
    assert _check(root, cache)[1] == (N, 0, 0)
    bundle = _bundle(cache)
    data = json.loads(bundle.read_text())
    for entry in data["entries"].values():
        for f in entry["o"]["findings"]:
            f["line"] = "7"
            f["location"] = ["x", "1", 1, 1, 1]
    bundle.write_text(json.dumps(data))
    out, counts = _check(root, cache)
    assert counts is not None and counts[0] == 0 and out == expected
    for index in _indexes(cache):
        jobs = json.loads(index.read_text())["jobs"]
        index.write_text(json.dumps({"key": index.stem, "jobs": {k: "../../../etc/passwd" for k in jobs}}))
    out, counts = _check(root, cache)
    assert counts == (0, N, N) and out == expected


def test_entries_are_private_bounded_and_cleaned(tree, monkeypatch):
    root, cache = tree
    _check(root, cache)
    files = _results(cache)
    assert 1 <= len(_indexes(cache)) <= N and len(files) == 1 + len(_indexes(cache))
    for p in files:
        assert p.stat().st_mode & 0o777 == 0o600
    d = files[0].parent
    while d != cache:
        assert d.stat().st_mode & 0o777 == 0o700
        d = d.parent
    # the directory's size bound applies to these entries as to the others (caches.evict)
    from packlint import caches

    removed = caches.evict(cache, 1)
    assert {Path(p) for p in removed} >= set(files)
    _check(root, cache)
    env = dict(os.environ, PYTHONPATH=str(ROOT), PACKLINT_CACHE_DIR=str(cache))
    proc = subprocess.run(
        [sys.executable, "-m", "packlint", "clean"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert "check results" in proc.stdout + proc.stderr
    assert not _results(cache)


def test_no_cache_and_inherited_environment_store_nothing(tree):
    root, cache = tree
    _out, counts = _check(root, None)
    assert counts is None
    _out, counts = _check(root, cache, "--inherit-env")
    assert counts is None and not _results(cache)


def test_a_file_changed_during_the_last_seconds_is_not_trusted(tree):
    root, cache = tree
    (root / "pack.sh").write_text(PACK + "\n")  # (mtime: now)
    _out, counts = _check(root, cache)
    assert counts == (0, N, N - 1)  # (the scripts that did not read it are stored)
    again, counts = _check(root, cache)
    assert counts[:2] == (N - 1, 1)  # (pack.sh analysed again; stored once it is older than the run by 2 s)
    assert again == _check(root, None)[0]


def test_reports_that_read_the_rule_table_are_the_same_when_replayed(tree):
    """A replay loads no rule table unless the report reads one: SARIF's rule list, the JSON's URLs."""
    root, cache = tree
    fresh, counts = _check(root, cache, "--output-format", "sarif")
    assert counts == (0, N, N)
    replayed, counts = _check(root, cache, "--output-format", "sarif")
    assert counts == (N, 0, 0) and replayed == fresh
    assert json.loads(replayed)["runs"][0]["tool"]["driver"]["rules"]


def test_a_project_configuration_is_an_input(tree):
    """pyproject.toml's [tool.packlint] (here a severity override, which the replay needs the rule table
    for) is read by the run: editing it is a change, and the findings follow it."""
    root, cache = tree
    conf = root / "pyproject.toml"
    conf.write_text('[tool.packlint.severity]\nPK400 = "warning"\n')
    _age(root)
    first, counts = _check(root, cache, isolated=False)
    assert counts == (0, N, N)
    assert {f["severity"] for f in json.loads(first)["findings"] if f["code"] == "PK400"} == {"warning"}
    again, counts = _check(root, cache, isolated=False)
    assert counts == (N, 0, 0) and again == first
    conf.write_text('[tool.packlint.severity]\nPK400 = "info"\n')
    _aged(conf)
    changed, counts = _check(root, cache, isolated=False)
    assert counts == (0, N, N)
    assert {f["severity"] for f in json.loads(changed)["findings"] if f["code"] == "PK400"} == {"info"}
    assert changed == _check(root, None, isolated=False)[0]


def test_what_worker_processes_read_is_an_input_too(tree):
    """With worker processes the launched code is read in a worker, not in the main process: its reads come
    back with its result and join the run's input set. Only the script is named (the main process walks no
    directory, so it sees none of the code's files itself): a code edit must still be a change."""
    root, cache = tree
    first, counts = _check(root, cache, jobs="2", path="train.sh")
    assert counts == (0, 1, 1)
    assert first == _check(root, None, path="train.sh")[0]
    assert _check(root, cache, jobs="2", path="train.sh")[1] == (1, 0, 0)
    _aged(_edit_code(root))
    after, counts = _check(root, cache, jobs="2", path="train.sh")
    assert counts == (0, 1, 1) and after != first
    assert after == _check(root, None, path="train.sh")[0]


def test_the_import_path_is_part_of_the_key(tmp_path, monkeypatch):
    """A stack's own config is also looked for in the installed package (importlib's finders: reads that
    are not recorded), so the import path is in the key: the same tree checked with a PYTHONPATH that holds a
    verl with its `trainer/config/` is analysed again (and names that config: outside the checkout, PK603)."""
    monkeypatch.delenv("PACKLINT_CACHE_DIR", raising=False)
    root, site, cache = tmp_path / "repo", tmp_path / "site", tmp_path / "cache"
    root.mkdir()
    (root / ".git").mkdir()
    (root / "run.sh").write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo data.train_batch_size=100\n")
    config = site / "verl" / "trainer" / "config"
    config.mkdir(parents=True)
    for d in (site / "verl", site / "verl" / "trainer"):
        (d / "__init__.py").write_text("")
    (config / "ppo_trainer.yaml").write_text(
        "data:\n  train_batch_size: 1024\nactor_rollout_ref:\n  actor:\n    strategy: fsdp\n"
        "    ppo_mini_batch_size: 256\n    use_dynamic_bsz: false\n  rollout:\n    n: 1\n"
        "trainer:\n  nnodes: 1\n  n_gpus_per_node: 8\n"
    )
    _age(root)
    _age(site)

    def run(pythonpath: str) -> tuple[list[str], str]:
        env = dict(os.environ, NO_COLOR="1", PYTHONPATH=pythonpath, PACKLINT_CACHE_REPORT="1", PACKLINT_JOBS="1")
        env["PACKLINT_CACHE_DIR"] = str(cache)
        env.pop("PACKLINT_NO_CACHE", None)
        proc = subprocess.run(
            [sys.executable, "-m", "packlint", "check", "--isolated", "--exit-zero", "--output-format", "json", "."],
            cwd=root, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        return _codes(proc.stdout), proc.stderr

    plain, _ = run(str(ROOT))
    assert "PK603" not in plain
    again, report = run(str(ROOT))
    assert again == plain and "1 hit" in report  # (the same key: replayed)
    with_verl, report = run(f"{ROOT}{os.pathsep}{site}")
    assert "PK603" in with_verl and "0 hit" in report, report
    # a directory on the import path gaining a file that changes nothing (`.hypothesis/` in a checkout on
    # PYTHONPATH): importlib.metadata lists it, but that listing is not an input, so the run is replayed
    other = tmp_path / "other"
    other.mkdir()
    run(f"{ROOT}{os.pathsep}{other}")
    (other / ".hypothesis").mkdir()
    _age(other)
    replayed, report = run(f"{ROOT}{os.pathsep}{other}")
    assert "1 hit" in report, report


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_only_the_scripts_that_read_an_edited_file_are_analysed_again(tmp_path, monkeypatch, jobs):
    """Each script has its own input set (in-run memos carry what they read: caches.Memo). a.sh and b.sh launch
    the same program; in one process b.sh gets the program's facts from the memo a.sh filled: an edit of a.sh
    makes only a.sh analysed again (b.sh's set does not hold what a.sh read for itself), an edit of the
    program's code both (b.sh read the code only through the memo). With two workers, what the main process
    reads to hand the scripts out (their sizes) is no script's input either."""
    monkeypatch.delenv("PACKLINT_CACHE_DIR", raising=False)
    root, cache = tmp_path / "repo", tmp_path / "cache"
    shutil.copytree(UPSTREAM, root, ignore=shutil.ignore_patterns("*.expected", "*.sh"))
    (root / ".git").mkdir()
    bad = (UPSTREAM / "train.sh").read_text()
    (root / "a.sh").write_text(bad)
    (root / "b.sh").write_text(bad.replace("--micro-batch-size 1", "--micro-batch-size 2"))
    _age(root)
    first, counts = _check(root, cache, jobs=jobs)
    assert counts == (0, 2, 2) and _codes(first) == ["PK330", "PK330"]
    a = root / "a.sh"
    a.write_text(a.read_text().replace("--num-layers 30", "--num-layers 32"))  # (divisible by 4 stages)
    _aged(a)
    after, counts = _check(root, cache, jobs=jobs)
    assert counts == (1, 1, 1) and _codes(after) == ["PK330"]
    assert after == _check(root, None)[0]
    _aged(_edit_code(root))  # (the assertion's message: b.sh's PK330 quotes it)
    edited, counts = _check(root, cache, jobs=jobs)
    assert counts == (0, 2, 2) and edited != after
    assert edited == _check(root, None)[0]
    assert _check(root, cache, jobs=jobs)[1] == (2, 0, 0)


def test_an_entrys_rows_are_stored_as_maximal_runs():
    from packlint.result_reads import runs as _runs

    assert _runs([]) == []
    assert _runs([3]) == [3, 1]
    assert _runs([0, 1, 2, 5, 6, 9]) == [0, 3, 5, 2, 9, 1]
    rows = sorted(set(range(0, 5000)) - set(range(0, 5000, 37)) | {9000, 9001})
    runs = _runs(rows)
    assert [i for k in range(0, len(runs), 2) for i in range(runs[k], runs[k] + runs[k + 1])] == rows
    assert all(runs[k] + runs[k + 1] < runs[k + 2] for k in range(0, len(runs) - 2, 2))  # (maximal)


@given(
    own=st.sets(st.integers(0, 300), max_size=60),
    groups=st.lists(st.sets(st.integers(0, 300), max_size=80), max_size=8),
    shared=st.booleans(),
)
@settings(max_examples=300, deadline=None)
def test_a_set_stored_as_its_own_runs_and_its_groups_holds_exactly_its_union(own, groups, shared):
    """A script's input set keeps the memo entries' read sets as groups (result_reads.Reads) and is stored as its own
    rows' runs and the numbers of its groups, each group's runs once for every set stored with it: the rows these
    describe are exactly the union whatever the overlaps, and whether a set touches some rows is the union's answer."""
    from packlint.result_reads import Reads, grouped, runs, touches

    reads = Reads()
    reads.update(own)
    frozen = [frozenset(g) for g in groups]
    for g in frozen + frozen[:1]:  # (a group merged twice is held once)
        reads.merge(g)
    other = Reads()
    if shared and frozen:
        other.merge(frozen[-1])
    other.add(301)
    reads.absorb(other)
    union = set(own).union(*frozen, {301})
    numbered: dict = {}
    stored: list = []
    if shared:  # (another set stored first numbers some of the same groups)
        earlier = Reads()
        for g in frozen[::2]:
            earlier.merge(frozenset(g))  # (an equal group, another object: one number)
        grouped(earlier, numbered, stored)

    def rows(spans):
        return {i for k in range(0, len(spans), 2) for i in range(spans[k], spans[k] + spans[k + 1])}

    mine, refs = grouped(reads, numbered, stored)
    assert mine == runs(sorted(reads)) and refs == sorted(set(refs))
    assert rows(mine).union(*(rows(stored[n]) for n in refs)) == union
    assert len(stored) == len(set(frozen) | set(frozen[::2] if shared else []))
    for probe in ({0}, {150, 299}, {301}, set(range(0, 301, 7)), {302}):
        assert touches(reads, probe, {}) == bool(union & probe)


def test_a_file_two_programs_import_is_an_input_of_both(tmp_path, monkeypatch):
    """The programs of a tree share their files: the second program's reading gets a file's bytes and its
    modules' look-ups from the run's memos (codebase/reader.py) that the first filled. An edit of a shared
    file, or a module they import appearing, makes the scripts of both programs analysed again; the findings
    are --no-cache's. (Not this test's alone: the file-facts memo and the tree-wide quoted-name search also
    carry these reads.)"""
    monkeypatch.delenv("PACKLINT_CACHE_DIR", raising=False)
    root, cache = tmp_path / "repo", tmp_path / "cache"
    shutil.copytree(UPSTREAM, root, ignore=shutil.ignore_patterns("*.expected", "*.sh"))
    (root / ".git").mkdir()
    shutil.copy(root / "pretrain_gpt.py", root / "pretrain_bert.py")
    arguments = root / "megatron" / "training" / "arguments.py"
    arguments.write_text("import apex\n" + arguments.read_text())  # (an optional library, not in the tree)
    bad = (UPSTREAM / "train.sh").read_text()
    (root / "a.sh").write_text(bad)
    (root / "b.sh").write_text(bad.replace("pretrain_gpt.py", "pretrain_bert.py"))
    _age(root)
    first, counts = _check(root, cache)
    assert counts == (0, 2, 2) and _codes(first) == ["PK330", "PK330"]
    assert first == _check(root, None)[0]
    _aged(_edit_code(root))  # (the assertion's message, which both scripts' PK330 quote)
    edited, counts = _check(root, cache)
    assert counts == (0, 2, 2) and edited != first
    assert edited == _check(root, None)[0]
    assert _check(root, cache)[1] == (2, 0, 0)
    # the library both programs import appears in the tree (its look-up, shared by both, had found nothing)
    (root / "apex.py").write_text("")
    _aged(root / "apex.py", root)
    assert _check(root, cache)[1] == (0, 2, 2)


def test_a_memo_entrys_reads_reach_every_script_and_open_lookup_that_uses_it():
    """A memo entry's read set is added once per script (and once per open lookup), however often the script
    hits it (result_reads.Reads): the next script, and a lookup opened after the first hit, still get it whole."""
    from packlint import result_cache as rc

    rec = rc._Recorder()
    deps = frozenset({3, 4, 5})
    was_cur, was_open = rc._CUR[0], list(rc._OPEN)
    try:
        rc.begin_job()
        rec.used(deps)
        outer = rec.open()
        rec.used(deps)
        rec.used(frozenset({7}))
        assert rec.close(outer) == frozenset({3, 4, 5, 7})
        first = rc._CUR[0].flat()
        rc.begin_job()
        rec.used(deps)
        rec.used(deps)
        assert first == {3, 4, 5, 7} and rc._CUR[0].flat() == {3, 4, 5}
        assert list(rc._CUR[0].merged.values()) == [deps]  # (held once, by reference)
    finally:
        rc._CUR[0] = was_cur
        rc._OPEN[:] = was_open


def test_a_recorded_path_asked_again_gets_its_first_answer_and_stays_each_scripts_input(tmp_path):
    """While a run records, a path's stat is asked of the system once (`_stat_again`): a file, a folder, a missing
    path (the same error again: type, errno, name) and a symbolic link through lstat answer as the first time, and the
    path is an input of every script that asks it, not only the first."""
    from packlint import result_cache as rc

    there = tmp_path / "there.py"
    there.write_text("x = 1\n")
    (tmp_path / "link").symlink_to(there)
    missing = str(tmp_path / "missing.py")
    rc.start(str(tmp_path / "cache"))
    asked_system: list[str] = []
    system_stat = rc._ORIG["stat"]
    rc._ORIG["stat"] = lambda p, **kw: asked_system.append(str(p)) or system_stat(p, **kw)
    try:
        rc.begin_job()
        first = os.stat(there)
        assert os.path.isdir(tmp_path) and not os.path.exists(missing)
        with pytest.raises(FileNotFoundError):
            os.stat(missing)
        link = os.lstat(tmp_path / "link")
        mine = rc.end_job().flat()
        rc.begin_job()
        again = os.stat(there)
        with pytest.raises(FileNotFoundError) as err:
            os.stat(missing)
        assert (err.value.errno, err.value.filename) == (2, missing)
        assert os.path.isdir(tmp_path) and os.path.isfile(there) and not os.path.isfile(missing)
        assert os.path.islink(tmp_path / "link") and os.lstat(tmp_path / "link") == link
        theirs = rc.end_job().flat()
        assert again == first and (again.st_size, again.st_mtime_ns) == (6, first.st_mtime_ns)
        rows = {(k, p): i for i, (k, p, _s) in enumerate(rc._ROWS)}
        asked = {rows["s", str(there)], rows["s", missing], rows["s", str(tmp_path)], rows["l", str(tmp_path / "link")]}
        assert asked <= mine and asked <= theirs
        assert asked_system.count(str(there)) == 1 and asked_system.count(missing) == 1
    finally:
        rc._ORIG["stat"] = system_stat
        rc.stop()
    assert not rc._STATS  # (a later run asks the system again)


def test_a_bundle_is_the_json_of_its_parts_named_by_its_inputs_and_keys(tree):
    """Store.save writes the rows' JSON once, for the bundle's name and inside its text: the text is what
    json.dumps makes of the bundle, and the name the digest of [rows, the sorted job keys]."""
    from packlint.result_key import _digest

    root, cache = tree
    _check(root, cache)
    bundle = _bundle(cache)
    data = bundle.read_bytes()
    value = json.loads(data)
    assert data == json.dumps(value, separators=(",", ":")).encode()
    assert list(value) == ["inputs", "groups", "entries", "key"] and value["key"] == bundle.stem
    named = json.dumps([value["inputs"], sorted(value["entries"])], separators=(",", ":")).encode()
    assert _digest(named) == bundle.stem


def test_each_worker_stores_what_it_analysed(tmp_path, monkeypatch):
    """With two workers each stores its own scripts' outcomes (a bundle of the rows it read, indexed under a lock
    they share: check_workers._flush); the next run replays every script, and a change to the code, read in
    the workers, is a change for every script that launches it."""
    monkeypatch.delenv("PACKLINT_CACHE_DIR", raising=False)
    root, cache = tmp_path / "repo", tmp_path / "cache"
    shutil.copytree(UPSTREAM, root, ignore=shutil.ignore_patterns("*.expected", "*.sh"))
    (root / ".git").mkdir()
    bad = (UPSTREAM / "train.sh").read_text()
    for k in range(6):
        (root / f"s{k}.sh").write_text(bad.replace("--micro-batch-size 1", f"--micro-batch-size {k + 1}"))
    _age(root)
    first, counts = _check(root, cache, jobs="2")
    assert counts == (0, 6, 6) and first == _check(root, None)[0]
    assert len([p for p in _results(cache) if not p.name.startswith("index-")]) >= 2  # (this process's, a worker's)
    assert _check(root, cache, jobs="2") == (first, (6, 0, 0))
    _aged(_edit_code(root))
    edited, counts = _check(root, cache, jobs="2")
    assert counts == (0, 6, 6) and edited != first and edited == _check(root, None)[0]
    assert _check(root, cache, jobs="2")[1] == (6, 0, 0)
