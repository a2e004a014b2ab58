"""Properties: the condition compiler only ever raises ConditionError; the engine never crashes on any
launch model of the documented shape, never fires on unknown gate values, and is silent when both gates
are on with micro-batch size 1."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from packlint.conditions import ConditionError, Scope, compile_condition
from packlint.engine import check_model
from packlint.rule_table import load_table

RULES = load_table(use_cache=False).rules
GATES = ["OFFLINE_PACKING_BMR", "OFFLINE_PACKED_DATA", "OFFLINE_PACKING_VQA"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("abenvflagint()'\",=!<>+-*/%[] 0123456789_ornotd")), max_size=40))
def test_compiler_only_raises_condition_errors(text):
    try:
        compile_condition(text, Scope(), want=None)
    except ConditionError as exc:
        assert 0 <= exc.pos <= len(text)


def loc(line):
    return {"file": "t.sh", "line": line, "column": 1, "end_line": line, "end_column": 5}


values = st.one_of(st.sampled_from(["0", "1", " 1", "2", "true", "", "1.0", "01", "-1"]),
                   st.just({"unknown": "command substitution $(x)"}))


@st.composite
def variants(draw):
    env, unexported = {}, {}
    for i, g in enumerate(GATES):
        where = draw(st.sampled_from(["env", "unexported", "none"]))
        v = draw(values)
        entry = ({"unknown": v["unknown"]} if isinstance(v, dict) else {"value": v}) | {
            "exported": where == "env", "source": "script", **loc(i + 2), "value_location": None}
        if where == "env":
            env[g] = entry
        elif where == "unexported":
            unexported[g] = entry
    flags = {}
    for name in ["--micro-batch-size", "--packing-sft-data", "--seq-length"]:
        n = draw(st.integers(0, 2))
        occ = []
        for k in range(n):
            v = True if name == "--packing-sft-data" else draw(values)
            occ.append(({"unknown": v["unknown"]} if isinstance(v, dict) else {"value": v}) | loc(8))
        if occ:
            flags[name] = occ
    argv = [x for name, occ in flags.items() for o in occ
            for x in ([name] if o.get("value") is True else [name, o.get("value", {"unknown": "u"})])]
    return {"when": [], "env": env, "unexported": unexported, "exported_after": {}, "flags": flags,
            "launcher_flags": {}, "world_size": {"value": "8"}, "argv": argv, "command": []}


def model(vs):
    launch = {"id": 0, "launcher": "torchrun", **loc(9), "when": [], "variants": vs}
    return {"version": 1, "script": "t.sh", "launches": [launch], "diagnostics": []}


@settings(max_examples=300, deadline=None)
@given(st.lists(variants(), min_size=1, max_size=3))
def test_engine_never_crashes_and_unknown_never_fires(vs):
    findings = check_model(model(vs), RULES)
    for f in findings:
        assert f.severity in ("error", "warning", "info") and f.location.line >= 1
        if f.code in ("PK001", "PK002") and f.severity != "info":
            # the gates the rule read were known in the firing variant(s)
            assert any(all("unknown" not in v["env"].get(g, {}) for g in GATES[:2]) for v in vs)


def test_correct_gates_are_silent():
    v = {"when": [], "env": {g: {"value": "1", "exported": True, "source": "script", **loc(2)} for g in GATES[:2]},
         "unexported": {}, "exported_after": {}, "flags": {"--micro-batch-size": [{"value": "1", **loc(8)}]},
         "launcher_flags": {}, "world_size": {"value": "8"}, "argv": ["--micro-batch-size", "1"], "command": []}
    assert check_model(model([v]), RULES) == []


def test_the_engine_prefilter_is_the_condition_itself():
    """The engine skips a rule (no `for_each`) in a variant when `_cannot_fire` says so, and skips every
    rule that starts with a predicate once that predicate is not true: for a rule that ignores
    undecided results this must be exactly "the condition is not true", for one that reports them
    exactly "the condition is false". Checked on every variant of the examples and the stack fixtures."""
    from pathlib import Path

    from packlint import engine
    from packlint.api import inspect_script
    from packlint.conditions import EvalContext
    from packlint.model_view import variants

    root = Path(__file__).resolve().parent.parent
    scripts = sorted((root / "examples").glob("*.sh")) + sorted((root / "tests/fixtures/stacks").glob("*/*/run.sh"))
    assert len(scripts) > 40
    checked = skipped = 0
    for path in scripts:
        model = inspect_script(str(path))
        for launch in model.get("launches", []):
            for variant in variants(launch):
                for rule in RULES:
                    if rule.scope != "launch" or rule.for_each is not None:
                        continue
                    # fresh contexts: the prefilter's memos must not decide what the full condition gives
                    verdict = engine._eval(rule.when, EvalContext(model, launch, variant))
                    expected = verdict is not True if rule.undecided == "ignore" else verdict is False
                    assert engine._cannot_fire(rule, EvalContext(model, launch, variant)) == expected, (
                        path.name, rule.code)
                    head = engine._head(rule)
                    if head is not None and engine._eval(head[1], EvalContext(model, launch, variant)) is not True:
                        assert verdict is not True and rule.undecided == "ignore", (path.name, rule.code)
                        skipped += 1
                    checked += 1
    assert checked > 1000 and skipped > 100
