"""Differential test: packlint's launch model against real bash.

Each fixture runs under bash with every launcher replaced by a recorder (tests/oracle); for every
launch bash performed, packlint must have a launch at that place whose argv and env agree with bash
wherever packlint claims to know a value, and every launch packlint says always runs must have run.
See tests/oracle/harness.py for the exact rules.
"""

from __future__ import annotations

import copy
import shutil
import textwrap

import pytest

if shutil.which("bash") is None:
    pytest.skip("bash is not installed", allow_module_level=True)

from oracle.harness import BashRun, Fixture, compare, discover_fixtures, run_under_bash  # noqa: E402

FIXTURES = discover_fixtures()

# Fixtures that bash cannot run to the end, and why (everything else must exit 0 under the recorder,
# otherwise the "packlint says it always runs, bash never ran it" check is silently skipped).
NOT_COMPLETING = {
    "syntax_error_placeholder": "template placeholder `CHECKPOINT=<path>` is a syntax error",
    # input guards: bash, given nothing by the caller, stops at the guard; packlint analyses the launch
    # after it with the guarded variable unknown (interpret/guards.py)
    "guard_exit": "exits at `[ -z \"$BASE_FOLDER\" ] && ... exit 1` when the caller sets nothing",
    "guard_param_abort": "aborts at `${CHECKPOINT_DIR:?...}` when the caller sets nothing",
    "guard_arg_count": "exits at `[ \"$#\" -lt 3 ]` when the caller gives no arguments",
}


def packlint_model(fx: Fixture, run: BashRun, monkeypatch) -> dict:
    from packlint.api import inspect_script

    monkeypatch.chdir(run.root)  # the same cwd bash had
    return inspect_script(run.script.relative_to(run.root), env=dict(fx.env), args=list(fx.args))


@pytest.mark.parametrize("fx", FIXTURES, ids=[f.name for f in FIXTURES])
def test_bash_runs_fixture(fx, tmp_path):
    """The fixture itself is sound: bash runs it to the end and it launches something."""
    run = run_under_bash(fx, tmp_path)
    if fx.name in NOT_COMPLETING:
        assert run.rc != 0, f"{fx.name} was expected to stop early ({NOT_COMPLETING[fx.name]})"
        return
    assert run.rc == 0, f"bash exited {run.rc}\n--- stderr ---\n{run.stderr[-4000:]}"
    assert run.records, f"bash launched nothing\n--- stderr ---\n{run.stderr[-4000:]}"


@pytest.mark.parametrize("fx", FIXTURES, ids=[f.name for f in FIXTURES])
def test_packlint_agrees_with_bash(fx, tmp_path, monkeypatch):
    run = run_under_bash(fx, tmp_path)
    model = packlint_model(fx, run, monkeypatch)
    problems = compare(model, run)
    assert not problems, f"{fx.name}: packlint disagrees with bash:\n  " + "\n  ".join(problems)


# ------------------------------------------------------------------ the oracle itself can fail

SCRIPT = textwrap.dedent("""\
    #!/bin/bash
    export OFFLINE_PACKED_DATA=1
    MBS=1
    torchrun --nproc_per_node 8 \\
        train.py --micro-batch-size $MBS
    bash -c "python3 eval.py --x 1"
    """)


def _loc(line, end_line=None):
    return {"file": "t.sh", "line": line, "column": 1, "end_line": end_line or line, "end_column": 40}


def _env_entry(value, line):
    return {"value": value, "exported": True, "source": "script", **_loc(line), "value_location": None}


def _hand_model() -> dict:
    """What a correct packlint must say about SCRIPT."""
    env = {"OFFLINE_PACKED_DATA": _env_entry("1", 2)}
    return {"version": 1, "script": "t.sh", "args": [], "diagnostics": [], "launches": [
        {"id": 0, "launcher": "torchrun", "launchers": ["torchrun"], "program": "train.py", **_loc(4, 5),
         "when": [], "env": copy.deepcopy(env), "unexported": {"MBS": _env_entry("1", 3)},
         "command": ["torchrun", "--nproc_per_node", "8", "train.py", "--micro-batch-size", "1"],
         "variants": []},
        {"id": 1, "launcher": "python3", "launchers": ["bash", "python3"], "program": "eval.py", **_loc(6),
         "when": [], "env": copy.deepcopy(env), "unexported": {},
         "command": ["python3", "eval.py", "--x", "1"],
         "variants": []},
    ]}


@pytest.fixture
def synthetic_run(tmp_path) -> BashRun:
    root = tmp_path / "scripts"
    root.mkdir()
    (root / "t.sh").write_text(SCRIPT)
    fx = Fixture("t", root / "t.sh")
    run = run_under_bash(fx, tmp_path / "work", script_root=root)
    assert run.rc == 0, run.stderr
    assert [r["name"] for r in run.records] == ["torchrun", "python3"]
    return run


def test_oracle_accepts_correct_model(synthetic_run):
    assert compare(_hand_model(), synthetic_run) == []


def _mutations():
    def flag_value(m):
        m["launches"][0]["command"][-1] = "2"

    def env_value(m):
        m["launches"][0]["env"]["OFFLINE_PACKED_DATA"]["value"] = "0"

    def env_missing(m):
        del m["launches"][0]["env"]["OFFLINE_PACKED_DATA"]

    def claims_exported(m):
        m["launches"][0]["env"]["MBS"] = _env_entry("1", 3)

    def unexported_wrong(m):
        del m["launches"][1]["env"]["OFFLINE_PACKED_DATA"]
        m["launches"][1]["unexported"]["OFFLINE_PACKED_DATA"] = _env_entry("1", 2)

    def extra_word(m):
        m["launches"][0]["command"].append("--fp16")

    def dropped_word(m):
        del m["launches"][0]["command"][1:3]

    def wrong_place(m):
        m["launches"][0].update(_loc(10, 11))

    def phantom_launch(m):
        ph = copy.deepcopy(m["launches"][0])
        ph.update(id=2, **_loc(20))
        m["launches"].append(ph)

    def wrong_variants(m):
        l0 = m["launches"][0]
        v = {k: copy.deepcopy(l0[k]) for k in ("env", "unexported", "command")}
        v2 = copy.deepcopy(v)
        v["command"][-1] = "4"
        v2["command"][-1] = "8"
        v["when"], v2["when"] = ["t.sh:3: a"], ["t.sh:3: b"]
        l0["variants"] = [v, v2]

    return [flag_value, env_value, env_missing, claims_exported, unexported_wrong, extra_word,
            dropped_word, wrong_place, phantom_launch, wrong_variants]


@pytest.mark.parametrize("mutate", _mutations(), ids=lambda f: f.__name__)
def test_oracle_catches_wrong_model(synthetic_run, mutate):
    model = _hand_model()
    mutate(model)
    assert compare(model, synthetic_run), f"the oracle accepted a wrong model ({mutate.__name__})"


def test_oracle_accepts_unknowns_and_a_matching_variant(synthetic_run):
    model = _hand_model()
    l0 = model["launches"][0]
    l0["command"][2] = {"unknown": "command substitution $(nvidia-smi -L | wc -l)"}
    l0["env"]["OFFLINE_PACKED_DATA"] = {"unknown": "command substitution $(echo 1)", "exported": True}
    good = {k: copy.deepcopy(l0[k]) for k in ("env", "unexported", "command")}
    bad = copy.deepcopy(good)
    bad["command"][-1] = "4"
    good["when"], bad["when"] = ["t.sh:3: a"], ["t.sh:3: b"]
    l0["variants"] = [bad, good]
    assert compare(model, synthetic_run) == []
