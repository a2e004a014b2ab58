"""The condition language and the engine on hand-written launch models (the launch model JSON documented in docs/launch-model.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from packlint.conditions import (ConditionError, EvalContext, Scope, Unk, compile_condition, compile_template,
                                 parse)
from packlint.engine import check_model
from packlint.errors import PacklintError
from packlint.rule_table import compile_table, load_table

TABLES = Path(__file__).parent / "fixtures" / "check" / "tables"
BUILTIN = load_table(use_cache=False)


def loc(line, col=1, end=None, file="t.sh"):
    return {"file": file, "line": line, "column": col, "end_line": line, "end_column": end or col + 1}


def env_entry(value, line=2, **kw):
    e = {"value": value, "exported": True, "source": "script", **loc(line, 8, 30),
         "value_location": loc(line, 28, 29)}
    e.update(kw)
    return e


def flag_entry(value, line=5, col=20):
    return {"value": value, **loc(line, col, col + 18), "value_location": loc(line, col + 19, col + 20)}


def variant(env=None, unexported=None, flags=None, exported_after=None, when=(), world_size="8", argv=None):
    flags = flags or {}
    if argv is None:
        argv = []
        for name, occ in flags.items():
            for o in occ:
                argv += [name] + ([] if o.get("value") is True else [o.get("value", {"unknown": "x"})])
    return {"when": list(when), "env": env or {}, "unexported": unexported or {},
            "exported_after": exported_after or {}, "flags": flags, "launcher_flags": {},
            "world_size": {"value": world_size}, "argv": argv, "command": []}


def model(*variants, diagnostics=()):
    launch = {"id": 0, "launcher": "torchrun", "launchers": ["torchrun"], "program": "train.py",
              **loc(5, 1, 40), "when": [], "variants": list(variants)}
    launch.update({k: v for k, v in variants[0].items() if k != "when"})
    return {"version": 1, "script": "t.sh", "args": [], "launches": [launch], "diagnostics": list(diagnostics)}


def codes(m, rules=BUILTIN.rules):
    return sorted((f.code, f.severity, f.certainty) for f in check_model(m, rules))


# ---------------------------------------------------------------------------------------------- language


def ev(text, v=None, bindings=None, scope=None):
    expr = compile_condition(text, scope or Scope(variables={k: "str" for k in (bindings or {})}), want=None)
    ctx = EvalContext(model(v or variant()), None, v or variant())
    ctx.launch = {"file": "t.sh", "line": 5}
    ctx.bindings = bindings or {}
    return expr.eval(ctx)


@pytest.mark.parametrize("text,expected", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / 2", 3), ("7 % 4", 3), ("-3 + 1", -2),
    ("1 < 2 and 2 <= 2", True), ("not 1 == 1 or 3 != 4", True), ("'a' == \"a\"", True),
    ("2 in [1, 2]", True), ("'x' in ['a']", False), ("true and not false", True),
])
def test_arithmetic_and_logic(text, expected):
    assert ev(text) == expected


def test_int_follows_python_int():
    v = variant(env={"A": env_entry(" 1"), "B": env_entry("true"), "C": env_entry("1.0"), "D": env_entry("01")})
    assert ev("int(env('A'))", v) == 1
    assert ev("int(env('D'))", v) == 1
    assert isinstance(ev("int(env('B'))", v), Unk) and ev("int(env('B'))", v).kind == "invalid"
    assert ev("is_int(env('C'))", v) is False
    assert ev("int(env('UNSET'), 0)", v) == 0
    assert ev("int(env('UNSET'))", v).kind == "absent"


def test_three_valued_logic():
    v = variant(env={"U": {"unknown": "command substitution $(x)", "exported": True, **loc(3)}})
    assert ev("int(env('U')) == 1", v).kind == "unknown"
    assert ev("false and int(env('U')) == 1", v) is False
    assert ev("true or int(env('U')) == 1", v) is True
    assert isinstance(ev("not (int(env('U')) == 1)", v), Unk)
    assert ev("known(env('U'))", v) is False
    assert ev("7 / 0").kind == "invalid"


def test_flags_and_world_size():
    v = variant(flags={"--micro-batch-size": [flag_entry("2"), flag_entry("4", col=40)],
                       "--packing-sft-data": [flag_entry(True)]}, world_size="16")
    assert ev("flag('--micro-batch-size')", v) == "4"
    assert ev("flag_count('--micro-batch-size')", v) == 2
    assert ev("flag_distinct('--micro-batch-size')", v) == 2
    assert ev("has_flag('--packing-sft-data') and not has_flag('--packing-pretrain-data')", v) is True
    assert ev("world_size / 2", v) == 8
    assert ev("int(flag('--seq-length'), 4096)", v) == 4096


def test_free_unknown_argument_may_hold_any_flag():
    v = variant(argv=["--micro-batch-size", "1", {"unknown": "command substitution $(cat extra)"}],
                flags={"--micro-batch-size": [flag_entry("1")]})
    r = ev("has_flag('--packing-sft-data')", v)
    assert isinstance(r, Unk) and "$(cat extra)" in r.reason


def test_regex_and_templates():
    v = variant(env={"A": env_entry("abc")})
    assert ev("matches(env('A'), '^a.c$')", v) is True
    t = compile_template("A={quote(env('A'))} B={quote(env('B'))} {{literal}}", Scope())
    ctx = EvalContext({}, {}, v)
    assert t.render(ctx) == "A='abc' B=unset {literal}"


@pytest.mark.parametrize("text,message,pos", [
    ("env('A') ==", "expected a value", 11),
    ("env_on('A')", "unknown function 'env_on'", 0),
    ("int(env('A')) == '1'", "compares a int with a str", 14),
    ("env('A') + 1", "needs a int", 0),
    ("matches(env('A'), '(')", "bad regex", 18),
    ("1 < 2 < 3", "do not chain", 6),
    ("'abc", "unterminated string", 0),
    ("has_flag('a', 'b')", "takes 1 argument", 0),
    ("a $ b", "unexpected character", 2),
    ("gate2_opn", "unknown name 'gate2_opn'", 0),
])
def test_errors_have_positions(text, message, pos):
    with pytest.raises(ConditionError) as exc:
        compile_condition(text, Scope(), want=None)
    assert message in exc.value.message
    assert exc.value.pos == pos


def test_condition_must_be_bool():
    with pytest.raises(ConditionError, match="must be a bool"):
        compile_condition("1 + 1", Scope())


def test_parse_never_evaluates_python():
    with pytest.raises(ConditionError):
        parse("__import__('os').system('true')")


# ---------------------------------------------------------------------------------------------- engine


def test_both_gates_on_is_clean():
    v = variant(env={"OFFLINE_PACKING_BMR": env_entry("1"), "OFFLINE_PACKED_DATA": env_entry("'1'".strip("'"), 3)},
                flags={"--micro-batch-size": [flag_entry("1")]})
    assert codes(model(v)) == []


def test_leak_is_certain_in_every_variant_and_possible_in_some():
    bmr = {"OFFLINE_PACKING_BMR": env_entry("1")}
    closed = variant(env=bmr, when=["t.sh:3: `[[ $X ]]` is false"])
    opened = variant(env={**bmr, "OFFLINE_PACKED_DATA": env_entry("1", 4)}, when=["t.sh:3: `[[ $X ]]` is true"])
    assert codes(model(closed)) == [("PK001", "error", "certain")]
    findings = check_model(model(closed, opened), BUILTIN.rules)
    assert [(f.code, f.certainty, f.when) for f in findings] == [("PK001", "possible", ("t.sh:3: `[[ $X ]]` is false",))]
    assert "only when t.sh:3" in findings[0].message


def test_unknown_gate_is_an_info_not_an_error():
    v = variant(env={"OFFLINE_PACKING_BMR": env_entry("1"),
                     "OFFLINE_PACKED_DATA": {"unknown": "command substitution $(cat f)", "exported": True,
                                             "source": "script", **loc(3, 8, 20)}})
    findings = check_model(model(v), BUILTIN.rules)
    assert [(f.code, f.severity) for f in findings] == [("PK001", "info")]
    assert "could not decide PK001" in findings[0].message and "$(cat f)" in findings[0].message
    assert findings[0].location.line == 3


def test_invalid_gate_is_pk104_only():
    v = variant(env={"OFFLINE_PACKING_BMR": env_entry("1"), "OFFLINE_PACKED_DATA": env_entry("yes", 3)})
    assert codes(model(v)) == [("PK104", "error", "certain")]


def test_micro_batch_reported_where_the_value_comes_from():
    occ = flag_entry("2")
    occ["value_location"] = loc(2, 11, 12)
    v = variant(env={"OFFLINE_PACKING_BMR": env_entry("1"), "OFFLINE_PACKED_DATA": env_entry("1", 3)},
                flags={"--micro-batch-size": [occ]})
    [f] = check_model(model(v), BUILTIN.rules)
    assert (f.code, f.location.line, f.location.column) == ("PK003", 2, 11)
    assert f.related[0].location.line == 5


def test_sft_packing_makes_micro_batch_a_warning():
    v = variant(flags={"--packing-sft-data": [flag_entry(True)], "--micro-batch-size": [flag_entry("4")]})
    assert codes(model(v)) == [("PK003", "warning", "certain")]


def test_unexported_and_exported_after():
    v = variant(env={"OFFLINE_PACKING_BMR": env_entry("1")},
                unexported={"OFFLINE_PACKED_DATA": env_entry("1", 3, exported=False)})
    assert codes(model(v)) == [("PK001", "error", "certain"), ("PK101", "error", "certain")]
    v = variant(env={"OFFLINE_PACKING_BMR": env_entry("1")}, exported_after={"OFFLINE_PACKED_DATA": loc(9)})
    assert codes(model(v)) == [("PK001", "error", "certain"), ("PK102", "warning", "certain")]


def test_syntax_error_and_the_launch_before_it(monkeypatch):
    """bash runs the commands before a syntax error: a launch there is still checked."""
    v = variant(env={"OFFLINE_PACKING_BMR": env_entry("1")})
    m = model(v, diagnostics=[{"severity": "error", "code": "syntax", "message": "syntax error", **loc(3)}])
    import packlint.engine as engine

    monkeypatch.setattr(engine._BashCheck, "_run", lambda self: True)
    assert sorted(codes(m)) == [("PK001", "error", "certain"), ("PK900", "error", "certain")]
    monkeypatch.setattr(engine._BashCheck, "_run", lambda self: False)  # bash accepts it: not confirmed
    assert codes(m) == [("PK001", "error", "certain")]


def test_no_launch_no_findings():
    assert check_model({"version": 1, "script": "t.sh", "launches": [], "diagnostics": []}, BUILTIN.rules) == []


# ---------------------------------------------------------------------------------------------- tables


def test_megatron_batch_arithmetic_is_expressible():
    table = load_table([TABLES / "megatron.toml"], builtin=False, use_cache=False)
    [rule] = table.rules
    def v(gbs, ws="16"):
        return variant(flags={"--tensor-model-parallel-size": [flag_entry("2")],
                              "--micro-batch-size": [flag_entry("2")],
                              "--global-batch-size": [flag_entry(gbs)]}, world_size=ws)
    [f] = check_model(model(v("20")), [rule])
    assert "data-parallel size 8" in f.message and "world size 16" in f.message
    assert check_model(model(v("32")), [rule]) == []
    unknown = variant(flags={"--global-batch-size": [flag_entry("20")]})
    unknown["world_size"] = {"unknown": "--nnodes is $SLURM_NNODES"}
    [info] = check_model(model(unknown), [rule])
    assert info.severity == "info" and "SLURM_NNODES" in info.message


def _blob(text, name="bad.toml"):
    return [(name, text.encode(), False)]


GOOD_RULE = '''
[[rule]]
code = "XX001"
name = "x-rule"
severity = "error"
summary = "s"
message = "m"
when = "{when}"
explanation = "e"
[[rule.example]]
kind = "bad"
script = "x"
[[rule.example]]
kind = "good"
script = "y"
'''


@pytest.mark.parametrize("when,needle", [
    ("has_flag('--x') and nope", "bad.toml:8:29: rule XX001: when: unknown name 'nope'"),
    ("int(flag('--x')) == 'a'", "compares a int with a str"),
    ("matches(env('A'), '[')", "bad regex"),
    ("flag('--x')", "must be a bool"),
])
def test_table_errors_name_file_rule_and_position(when, needle):
    with pytest.raises(PacklintError) as exc:
        compile_table(_blob(GOOD_RULE.replace("{when}", when)))
    assert needle in exc.value.one_line()
    assert "\n" not in exc.value.one_line()


@pytest.mark.parametrize("text,needle", [
    ("[[rule]]\ncode = 1", "rule #1: code"),
    (GOOD_RULE.replace('severity = "error"', 'severity = "fatal"').replace("{when}", "true"), "rule XX001: severity"),
    (GOOD_RULE.replace('name = "x-rule"', 'name = "X Rule"').replace("{when}", "true"), "rule XX001: name"),
    (GOOD_RULE.replace("{when}", "true") + "\nbogus = 1\n", "unknown field"),
    (GOOD_RULE.replace("{when}", "true").replace('kind = "good"', 'kind = "bad"'), "needs at least one 'bad' and one 'good'"),
    ("x = = 1", "invalid TOML"),
    ('[predicates]\na = "b"\nb = "a"\n', "refers to itself"),
    (GOOD_RULE.replace("{when}", "true") + GOOD_RULE.replace("{when}", "true").replace("x-rule", "y-rule"),
     "code already used"),
])
def test_broken_tables_are_one_line_errors(text, needle):
    with pytest.raises(PacklintError) as exc:
        compile_table(_blob(text))
    assert needle in exc.value.one_line(), exc.value.one_line()


def test_user_rules_can_use_builtin_predicates(tmp_path):
    f = tmp_path / "team.toml"
    f.write_text(GOOD_RULE.replace("{when}", "gate2_open and not has_flag('--use-flash-attn')"))
    table = load_table([f], use_cache=False)
    assert table.by_code("XX001") is not None and table.by_code("PK001") is not None


def test_cache_round_trip(tmp_path, monkeypatch):
    from packlint import caches, rule_table

    # (an in-process `packlint --no-cache` run of another test turns caching off for the process)
    monkeypatch.setattr(rule_table, "_CACHE_OFF", False)
    monkeypatch.setattr(caches, "_OFF", [False])
    monkeypatch.delenv("PACKLINT_NO_CACHE", raising=False)
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path))
    first = load_table()
    assert list(tmp_path.glob("rules-*.json")) and not list(tmp_path.glob("rules-*.pickle"))
    second = load_table()
    assert [r.code for r in first.rules] == [r.code for r in second.rules]
    v = variant(env={"OFFLINE_PACKING_BMR": env_entry("1")})
    assert codes(model(v), second.rules) == codes(model(v), first.rules)


def test_cache_key_covers_every_condition_module(tmp_path):
    """The cached table holds objects of every module of packlint.conditions: each one is in the key,
    and a changed module gives another key."""
    import os

    from packlint import rule_table

    package = Path(rule_table.__file__).with_name("conditions")
    assert set(rule_table._module_files(package)) == {str(p) for p in package.rglob("*.py")}
    copy = tmp_path / "conditions"
    (copy / "functions").mkdir(parents=True)
    for name in ("__init__.py", "functions/__init__.py"):
        (copy / name).write_text("")
    assert rule_table._module_files(copy) == sorted(str(copy / n) for n in ("__init__.py", "functions/__init__.py"))
    blobs = [("t.toml", b"", False)]
    key = rule_table._cache_key(blobs)
    module = rule_table._module_files(package)[-1]
    st = os.stat(module)
    try:
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
        assert rule_table._cache_key(blobs) != key
    finally:
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_rule_codes_are_fixed():
    """A shipped code keeps its name and is never removed; a new rule needs no edit here (its code is
    documented in the generated docs/rules-reference.md)."""
    shipped = {
        "PK001": "packing-gate-leak", "PK002": "packing-gate-corruption", "PK003": "packing-micro-batch",
        "PK004": "dead-packing-vqa", "PK101": "env-not-exported", "PK102": "env-set-after-launch",
        "PK103": "flag-repeated", "PK104": "gate-value-invalid", "PK900": "syntax-error",
        "PK901": "unused-suppression", "PK902": "analysis-incomplete",
        # rules/hygiene.toml
        "PK105": "env-overwritten",
        # rules/megatron.toml
        "PK301": "world-size-not-divisible", "PK302": "batch-not-divisible",
        "PK303": "heads-not-divisible-by-tp", "PK304": "query-groups-not-divisible-by-tp",
        "PK305": "hidden-not-divisible-by-heads", "PK306": "seq-length-not-divisible-by-cp",
        "PK307": "seq-length-above-max-position", "PK308": "layers-not-divisible-by-pp",
        "PK309": "virtual-pipeline-needs-pp", "PK310": "sequence-parallel-without-tp",
        "PK311": "tp-comm-overlap-without-sp", "PK312": "expert-parallel-without-experts",
        "PK313": "precision-conflict", "PK314": "schedule-mixed", "PK315": "overlap-param-gather-requirements",
        "PK316": "save-without-interval", "PK317": "min-lr-above-lr",
        "PK320": "reset-position-packing-micro-batch", "PK321": "packing-with-local-attention",
        "PK322": "reset-position-packing-with-cp", "PK323": "bridge-packed-micro-batch"}
    current = {r.code: r.name for r in BUILTIN.rules}
    assert {code: current.get(code) for code in shipped} == shipped
    assert len(current) == len(BUILTIN.rules)  # no code given to two rules
