"""Every evaluator has a budget, by construction (issue 29, the second reliability audit,
`../shared/research/reliability-audit-2.md`): regexes (R04/R05/R26), bash bracket ranges (R30), OmegaConf
interpolation (R06), TOML keys (R07) and big integers (R21/R22), YAML size (R10), the startup-check
evaluator (R08/R09), the argparse reader (R13) and the history search (R12). Each reproduction runs in a
subprocess under RLIMIT_AS / RLIMIT_CPU (tests/limited.py) or in-process on a small bound, and asserts the
bounded, correct result. No assertion depends on wall time."""

from __future__ import annotations

import json
import os
import re

import pytest
from limited import assert_clean, run_limited

from packlint import regex_guard
from packlint.interpret.patterns import glob_match, remove_affix, replace_pattern

RULE = """[[rule]]
code = "XX001"
name = "user-rule"
severity = "error"
summary = "s"
explanation = "e"
when = "{when}"
message = "{message}"
"""

NESTED_BOUNDED = "^(a{1,16}){1,16}b"


# ------------------------------------------------------------------------------------ regexes (R04/R05)


@pytest.fixture(params=["re2", "checked subset"])
def engine(request, monkeypatch):
    """Both paths of regex_guard: RE2 (where installed) and the checked subset + timed `regex` without it."""
    if request.param == "re2":
        if regex_guard._re2 is None:
            pytest.skip("google-re2 is not installed")
    else:
        monkeypatch.setattr(regex_guard, "_linear", lambda pattern: None)
    regex_guard.reset_budget()
    return request.param


def test_r04_nested_bounded_repeats_are_not_run_on_a_backtracking_engine(engine):
    # `re` takes hours on this; RE2 decides it at once, the fallback gives up after CALL_TIMEOUT_S
    decided, found = regex_guard.bounded_find(NESTED_BOUNDED, "a" * 60)
    assert (decided, found) == (True, None) if engine == "re2" else found is None
    assert regex_guard.nested_quantifier(NESTED_BOUNDED) is not None
    assert regex_guard._analyse("^(?:x?){30}x{30}$")[0] is not None  # `a?^n a^n`, the classic
    assert regex_guard._analyse("^" + "x?" * 30 + "x" * 30 + "$") == (None, False)  # the same, unrolled: not on `re`
    assert regex_guard._analyse("(?i)onevision[-_]?1[._]5|llava[-_]?ov[-_]?1[._]?5") == (None, True)
    assert regex_guard._analyse("^--[a-z-]+=\\d{1,9}$") == (None, "one")  # one unbounded: short subjects only


def test_r04_what_is_decided_agrees_with_re(engine):
    cases = [
        ("^a+c$", "aaac"),
        ("x", "abc"),
        ("(?i)megatron[-_]?patch", "Megatron_Patch"),
        ("^$", ""),
        ("^(a)(b)?$", "a"),
        ("a{2,3}(b{1,4}){2}", "aabbbb"),
        ("^--[a-z-]+=\\d+$", "--max-len=8"),
    ]
    for pattern, subject in cases:
        decided, found = regex_guard.bounded_find(pattern, subject)
        expected = re.search(pattern, subject)
        assert decided and (found is None) == (expected is None), pattern
        if found is not None:
            assert (found.group(0), found.groups()) == (expected.group(0), expected.groups())


def test_r04_a_bad_or_backreference_pattern_is_decided_or_undecided_never_an_error(engine):
    assert regex_guard.bounded_find("[z-a]", "abc") == (False, None)
    decided, found = regex_guard.bounded_find(r"(a)\1", "xaa")  # RE2 cannot: the checked subset does
    assert decided and found is not None


def test_r04_script_regex_with_nested_bounded_repeats_is_bounded(tmp_path):
    x = "a" * 60
    script = f"#!/bin/bash\nX={x}\nif [[ $X =~ {NESTED_BOUNDED} ]]; then M=1; else M=2; fi\npython train.py --m $M\n"
    (tmp_path / "l.sh").write_text(script)
    rc, out, err = run_limited(["inspect", "l.sh"], tmp_path, cpu=20)
    assert_clean(rc, out, err)
    # RE2: bash's answer (no match, M=2); without it: undecided, both branches
    assert "--m 2" in out or ("--m one of: 1" in out and "| 2" in out), out
    rc, out, err = run_limited(["check", "l.sh"], tmp_path, cpu=20)
    assert_clean(rc, out, err)


def test_r05_rule_pattern_with_nested_bounded_repeats_is_refused_at_load(tmp_path):
    (tmp_path / "redos.toml").write_text(RULE.format(when=f"matches(flag('--name'), '{NESTED_BOUNDED}')", message="m"))
    (tmp_path / "s.sh").write_text("python train.py --name " + "a" * 60 + "\n")
    for args in (["check", "--rule-file", "redos.toml", "s.sh"], ["rules", "--rule-file", "redos.toml"]):
        rc, out, err = run_limited(args, tmp_path, cpu=20)
        assert_clean(rc, out, err)
        assert rc == 2 and "grow exponentially" in err and err.count("\n") == 1, err


def test_rule_patterns_of_every_function_are_bounded_objects():
    # every rule function that takes a pattern compiles it through regex_guard.rule_pattern
    from packlint.conditions.functions import codebase, core, stack_source
    from packlint.regex import BoundedRegex

    assert isinstance(core._compile_regex([None, "^a+$"]), BoundedRegex)
    assert all(isinstance(r, BoundedRegex) for r in codebase._compile_two_regexes(["^A", "^B"]))
    assert isinstance(stack_source._compile_path_regex(["x.py", "def f"])[1], BoundedRegex)
    with pytest.raises(re.error, match="exponentially"):
        stack_source._compile_path_regex(["x.py", NESTED_BOUNDED])


# ------------------------------------------------------------------------------ bracket ranges (R30)


@pytest.mark.parametrize(
    ("call", "expected"),  # bash 5: a reversed range matches nothing; negated, any character
    [
        (lambda: remove_affix("abcZ", "[a-Z]*", "%%"), "abcZ"),
        (lambda: replace_pattern("abcZ", "[z-a]", "q", "//"), "abcZ"),
        (lambda: remove_affix("abcZ", "*[9-0]", "##"), "abcZ"),
        (lambda: glob_match("b", "[z-a]"), False),
        (lambda: glob_match("b", "[!z-a]"), True),
        (lambda: glob_match("b", "[z-ab]"), True),
    ],
)
def test_r30_reversed_bracket_ranges_are_bashs(call, expected):
    assert call() == expected


def test_r30_reversed_ranges_in_a_script(tmp_path):
    (tmp_path / "r.sh").write_text("X=abcZ\nY=${X%%[a-Z]*}\nZ=${X//[z-a]/q}\npython train.py --y $Y --z $Z\n")
    rc, out, err = run_limited(["inspect", "--format", "json", "r.sh"], tmp_path)
    assert_clean(rc, out, err)
    flags = json.loads(out)["launches"][0]["flags"]
    assert flags["--y"][-1]["value"] == "abcZ" and flags["--z"][-1]["value"] == "abcZ"


# ------------------------------------------------------------------ OmegaConf interpolation bomb (R06)


def _interpolation_bomb(levels: int) -> str:
    lines = ["grpo:", "  num_prompts_per_step: 32", "policy:", "  model_name: Qwen/Qwen2.5-1.5B", "  a0: xxxxxxxxxx"]
    for i in range(1, levels + 1):
        lines.append(f'  a{i}: "' + "".join(f"${{policy.a{i - 1}}}" for _ in range(10)) + '"')
    lines.append("  run_name: run_${policy.model_name}_${grpo.num_prompts_per_step}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [8, 9, 12])
def test_r06_interpolation_bomb_is_bounded_and_unknown_past_the_limit(tmp_path, levels):
    (tmp_path / "grpo.yaml").write_text(_interpolation_bomb(levels))
    (tmp_path / "l.sh").write_text("#!/bin/bash\nuv run python examples/run_grpo_math.py --config grpo.yaml\n")
    rc, out, err = run_limited(["inspect", "--format", "json", "l.sh"], tmp_path, memory=1 << 30)
    assert_clean(rc, out, err)
    settings = json.loads(out)["launches"][0]["variants"][0]["config"]["settings"]
    assert settings["policy.a3"]["value"] == "x" * 10_000  # under the limit: as OmegaConf gives it
    assert "expands past packlint's limit" in settings["policy.a4"]["unknown"]
    assert all("unknown" in settings[f"policy.a{i}"] for i in range(5, levels + 1))
    assert settings["policy.run_name"]["value"] == "run_Qwen/Qwen2.5-1.5B_32"  # an unknown touches only its own


def test_r06_the_budget_is_per_configuration():
    from packlint.configs import interpolation

    settings = {"a": {"value": "y" * 60_000}}
    for i in range(200):  # 200 values of 60,000 characters each: 12 MB in all, over MAX_TOTAL_CHARS
        settings[f"b{i}"] = {"value": "${a}-"}
    interpolation.resolve_interpolations(settings)
    made = [k for k, s in settings.items() if k != "a" and "value" in s]
    assert 0 < len(made) < 200 and all(
        "packlint's limit" in settings[k]["unknown"] for k in settings if k not in made + ["a"]
    )


# ------------------------------------------------------------------------------ TOML (R07, R21/R22)


def _dotted(parts: int) -> str:
    return ".".join(["a"] * parts) + " = 1\n"


@pytest.mark.parametrize("where", [".packlint.toml", "pyproject.toml"])
def test_r07_a_dotted_key_of_32000_parts_in_the_settings_is_one_line(tmp_path, where):
    head = "[tool.packlint]\n" if where == "pyproject.toml" else ""
    (tmp_path / where).write_text(head + _dotted(32_000))
    (tmp_path / "l.sh").write_text("#!/bin/bash\npython train.py\n")
    rc, out, err = run_limited(["check", "l.sh"], tmp_path, memory=1 << 30, cpu=20)
    assert_clean(rc, out, err)
    assert rc == 2 and "over packlint's limits" in err and err.count("\n") == 1, err


def test_r07_a_dotted_key_in_a_rule_file_is_refused(tmp_path):
    (tmp_path / "r.toml").write_text(_dotted(20_000))
    (tmp_path / "l.sh").write_text("python train.py\n")
    rc, out, err = run_limited(["check", "--rule-file", "r.toml", "l.sh"], tmp_path, memory=1 << 30, cpu=20)
    assert_clean(rc, out, err)
    assert rc == 2 and "over packlint's limits" in err


def test_r07_a_torchtitan_toml_with_a_long_key_is_unknown_with_an_info(tmp_path):
    (tmp_path / "t.toml").write_text("[training]\nsteps = 10\n" + _dotted(20_000))
    (tmp_path / "l.sh").write_text("#!/bin/bash\ntorchrun -m torchtitan.train --job.config_file t.toml\n")
    rc, out, err = run_limited(["check", "--format", "json", "l.sh"], tmp_path, memory=1 << 30, cpu=20)
    assert_clean(rc, out, err)
    codes = [f["code"] for f in json.loads(out)["findings"]]
    assert "PK603" in codes and "PK602" not in codes, out


def test_toml_key_cost_is_linear_and_real_files_pass():
    from pathlib import Path

    from packlint.toml_bounds import KEY_COST, key_cost

    root = Path(__file__).resolve().parent.parent
    for f in [root / "pyproject.toml", *sorted((root / "rules").glob("*.toml"))]:
        assert key_cost(f.read_text())[1] == 0, f
    assert key_cost('x = {"a.b.c" = 1, d.e = 2}\n')[0] == 1 + 1 + 4  # quoted parts are one; inline tables count
    assert key_cost(_dotted(1100))[0] > KEY_COST


@pytest.mark.parametrize(
    ("name", "text", "launch"),
    [
        ("ds.json", '{"train_batch_size": ' + "9" * 5000 + "}\n", "deepspeed train.py --deepspeed ds.json"),
        ("t.toml", "[training]\nsteps = " + "9" * 5000 + "\n", "torchrun -m torchtitan.train --job.config_file t.toml"),
    ],
)
def test_r21_integers_over_4300_digits_are_the_loaders_error_not_an_internal_one(tmp_path, name, text, launch):
    (tmp_path / name).write_text(text)
    (tmp_path / "l.sh").write_text(f"#!/bin/bash\n{launch}\n")
    rc, out, err = run_limited(["check", "--format", "json", "l.sh"], tmp_path)
    assert_clean(rc, out, err)
    (finding,) = [f for f in json.loads(out)["findings"] if f["code"] == "PK602"]  # json/tomllib refuse it too
    assert "too long" in finding["message"]


def test_r22_pyproject_with_a_5000_digit_integer_is_one_line(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.packlint]\nx = " + "9" * 5000 + "\n")
    (tmp_path / "l.sh").write_text("python train.py\n")
    rc, out, err = run_limited(["check", "l.sh"], tmp_path)
    assert_clean(rc, out, err)
    assert rc == 2 and err.count("\n") == 1 and "too long" in err, err


# ------------------------------------------------------------------------------------ large YAML (R10)


@pytest.mark.parametrize(
    "text",
    [
        "stage: sft\nx: [" + ", ".join(["1"] * 200_000) + "]\n",  # 600 KB flow list: libyaml's tree refuses it
        "stage: sft\nx:\n" + "  - 1\n" * 201_000,  # counted on the text: over MAX_NODES before composing
        "stage: sft\nx: " + "[" * 100_000 + "]" * 100_000 + "\n",  # 200 KB of nesting (ruamel's path)
        "\ufeffstage: sft\n" + "".join(f"k{i}: [1, 2]\n" for i in range(9_000)),  # a BOM: ruamel's path
    ],
    ids=["flow-list", "long-list", "deep-flow", "bom-many-lines"],
)
def test_r10_large_yaml_is_refused_before_composing_with_an_info(tmp_path, text):
    (tmp_path / "sft.yaml").write_text(text)
    (tmp_path / "l.sh").write_text("#!/bin/bash\ntrl sft --config sft.yaml\n")
    rc, out, err = run_limited(["check", "--format", "json", "l.sh"], tmp_path, cpu=30)
    assert_clean(rc, out, err)
    codes = [f["code"] for f in json.loads(out)["findings"]]
    assert codes == ["PK603"], out


# ----------------------------------------------------------------- the startup-check evaluator (R08/R09)


def _evaluate(body_src: str, attrs: dict) -> list[dict]:
    import ast

    from packlint.codebase.startup_checks import Evaluator, _Module, _Reader, unknown

    class Index:
        def source(self, path):
            return None

    mod = _Module("/x/arguments.py", ast.parse(body_src))
    steps = _Reader(Index(), []).steps(mod, mod.functions["validate_args"].body, "args", None)
    data = {"prelude": [["inline", "/x", 1]], "body": steps, "validate": {"param": "args"}, "program_defaults": {}}
    return Evaluator(data, attrs, {}, unknown("absent")).run()


BOMBS = """
def validate_args(args, defaults={}):
    assert len('x' * (args.num_layers * 10**9)) > 0, "string repetition"
    assert len((0,) * (args.num_layers * 10**8)) > 0, "tuple repetition"
    assert ((((args.num_layers + 1) ** 63) ** 63) ** 63) ** 63 > 0, "a tower of powers"
    assert (args.num_layers << 100000) > 0, "a shift"
    assert str(10 ** 5000) != "", "an integer of 5,000 digits"
    assert args.num_layers * 2 == 64, "an ordinary check"
    assert 2 ** 100 > 0 and 'ab' * 3 == 'ababab', "small values are still computed"
"""


def test_r08_r09_value_sizes_are_checked_before_computing():
    res = _evaluate(BOMBS, {"num_layers": 32})
    assert [r["status"] for r in res] == ["undecided"] * 5 + ["passes", "passes"]
    assert all("evaluation limits" in r["why"] or "operator" in r["why"] for r in res[:5]), res[:5]


def test_r08_the_evaluator_has_a_step_budget():
    from packlint.codebase import startup_eval

    body = "\n".join(f"    assert args.a + {i} > 0, 'm{i}'" for i in range(300))
    res = _evaluate("def validate_args(args, defaults={}):\n" + body + "\n", {"a": 1})
    assert all(r["status"] == "passes" for r in res)
    old = startup_eval.MAX_EVAL_STEPS
    startup_eval.MAX_EVAL_STEPS = 200
    try:
        res = _evaluate("def validate_args(args, defaults={}):\n" + body + "\n", {"a": 1})
    finally:
        startup_eval.MAX_EVAL_STEPS = old
    statuses = [r["status"] for r in res]
    assert statuses[0] == "passes" and statuses[-1] == "undecided" and "budget" in res[-1]["why"]


def test_r08_r09_pk330_with_a_bomb_in_validate_args_is_bounded(tmp_path):
    import shutil
    from pathlib import Path

    base = tmp_path / "upstream"
    shutil.copytree(Path(__file__).parent / "fixtures" / "startup" / "upstream", base)
    args_py = base / "megatron" / "training" / "arguments.py"
    bombs = "".join(line + "\n" for line in BOMBS.splitlines()[2:7])
    args_py.write_text(
        args_py.read_text().replace("    update_use_dist_ckpt(args)\n", bombs + "    update_use_dist_ckpt(args)\n", 1)
    )
    rc, out, err = run_limited(
        ["check", "--isolated", "--no-cache", "--code-base", "upstream", "--select", "PK3", "upstream/train_ok.sh"],
        tmp_path,
        memory=1 << 30,
        cpu=30,
    )
    assert_clean(rc, out, err)
    assert rc == 0, out


# ---------------------------------------------------------------------------- the argparse reader (R13)


def _call_tree_program(functions: int = 34, statements: int = 300) -> str:
    lines = ["import argparse", ""]
    for i in range(functions):
        lines.append(f"def f{i}(p):")
        lines += [f"    x{j} = {j} + {j}" for j in range(statements)]
        lines += [f"    f{i + 1}(p)"] * 3 if i < functions - 1 else ["    p.add_argument('--late', type=int)"]
        lines.append("")
    lines += ["def main():", "    p = argparse.ArgumentParser()", "    p.add_argument('--early', type=int)"]
    lines += ["    f0(p)", "    args = p.parse_args()", "", "if __name__ == '__main__':", "    main()"]
    return "\n".join(lines) + "\n"


def test_r13_a_call_tree_that_runs_long_bodies_stops_on_the_step_budget_with_an_info(tmp_path):
    (tmp_path / "train.py").write_text(_call_tree_program())  # 200 KB; 3**34 calls of 300 statements
    (tmp_path / "l.sh").write_text("#!/bin/bash\npython train.py --bogus 1\n")
    rc, out, err = run_limited(["check", "--no-cache", "--format", "json", "l.sh"], tmp_path, cpu=30)
    assert_clean(rc, out, err)
    (finding,) = json.loads(out)["findings"]  # no PK201 for --bogus: the parser was not read to its end
    assert finding["code"] == "PK206" and "budget for reading the parser" in finding["message"], finding


def test_r13_a_small_call_tree_is_read_to_its_end(tmp_path):
    (tmp_path / "train.py").write_text(_call_tree_program(functions=4, statements=20))
    (tmp_path / "l.sh").write_text("#!/bin/bash\npython train.py --late 1 --bogus 1\n")
    rc, out, err = run_limited(["check", "--no-cache", "--format", "json", "l.sh"], tmp_path)
    assert_clean(rc, out, err)
    assert [f["code"] for f in json.loads(out)["findings"]] == ["PK201"]


# -------------------------------------------------------------- the history search and grep (R12)


def test_r12_searches_stop_when_the_runs_budget_is_spent(tmp_path, monkeypatch):
    import subprocess

    from packlint.codebase.resolve import clear_run_memos
    from packlint.codebase.search_budget import SEARCHES
    from packlint.conditions.functions import codebase_env as codebase

    (tmp_path / "a.py").write_text("X = 'SOME_NAME'\n")
    assert codebase._quoted_anywhere([str(tmp_path)], "SOME_NAME") is True
    calls = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a) or pytest.fail("a search past the budget"))
    SEARCHES.left = 0
    try:
        # unknown: taken as quoted, so PK205 says nothing about it; no program is run
        assert codebase._quoted_anywhere([str(tmp_path)], "OTHER_NAME") is True
        assert calls == []
        clear_run_memos()  # a new run (check_paths): the budget again
        assert SEARCHES.left == SEARCHES.total
    finally:
        SEARCHES.reset()


def test_r12_each_search_is_charged_to_the_budget(tmp_path):
    from packlint.codebase.search_budget import SEARCHES
    from packlint.conditions.functions import codebase_env as codebase

    (tmp_path / "a.py").write_text("X = 'SOME_NAME'\n")
    SEARCHES.reset()
    codebase._quoted_anywhere([str(tmp_path)], "NAME_NOT_THERE_1")
    assert SEARCHES.left < SEARCHES.total
    assert SEARCHES.timeout(60) == pytest.approx(SEARCHES.left) and SEARCHES.timeout(0.5) == 0.5
    SEARCHES.reset()


# --------------------------------------------------------------- configuration path globs (same engine)


def test_path_globs_with_many_double_stars_are_bounded(engine):
    from packlint.globs import path_glob_regex

    rx = path_glob_regex("**/" * 16 + "x")  # `re` would take hours on a 30-component path
    assert rx.match("a/" * 30 + "y") is False
    if engine == "re2":  # linear: decided (without RE2 a match past the time bound is no match)
        assert rx.match("a/" * 30 + "x") is True


def test_a_checked_repositorys_exclude_glob_cannot_hang_the_check(tmp_path):
    (tmp_path / ".packlint.toml").write_text('exclude = ["' + "**/" * 16 + 'x"]\n')
    d = tmp_path
    for _ in range(12):
        d = d / "a"
    d.mkdir(parents=True)
    (d / "y.sh").write_text("#!/bin/bash\npython train.py\n")
    rc, out, err = run_limited(["check", "."], tmp_path, cpu=20)
    assert_clean(rc, out, err)
    assert rc == 0, out


def test_r26_the_editor_server_analyses_the_redos_document_within_bounds(tmp_path):
    """The server's analysis (check_paths on the document's text, as `check -`) of the R04 script."""
    import subprocess
    import sys

    from limited import HANG_GUARD_S, ROOT, _limits

    pytest.importorskip("pygls")
    test = f"if [[ $X =~ {NESTED_BOUNDED} ]]; then export OFFLINE_PACKING_BMR=1; fi"
    text = f"#!/bin/bash\nX={'a' * 60}\n{test}\npython train.py\n"
    code = (
        "import sys; from packlint.server import PacklintServer; "
        "a = PacklintServer().analyse('file://' + sys.argv[1], sys.stdin.read()); print('analysed', type(a).__name__)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "l.sh")],
        input=text.encode(),
        capture_output=True,
        timeout=HANG_GUARD_S,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=_limits(1536 << 20, 30),
    )
    assert proc.returncode == 0 and b"analysed" in proc.stdout, proc.stderr[-2000:]
    assert b"Traceback" not in proc.stderr


def test_r10_libyamls_tree_refuses_past_max_nodes_without_another_composer(monkeypatch):
    from packlint.configs import files

    monkeypatch.setattr(files, "MAX_NODES", 1000)
    text = "stage: sft\n" + "".join(f"k{i}:\n  a: 1\n  b: 2\n" for i in range(200))  # 1,200 values, 600 counted
    monkeypatch.setattr(files, "_yaml", lambda: pytest.fail("ruamel's composer was asked"))
    with pytest.raises(files.ConfigLimitError, match="more than 1,000 values"):
        files.load_yaml(text)


def test_stack_source_patterns_are_decided_on_large_stack_files(engine):
    # axolotl's utils/schemas/config.py is 88 KB: a literal rule pattern is decided on it (n steps)
    text = "x = 1\n" * 20_000 + "if attn_implementation in ('sdpa', 'eager'):\n"
    decided, found = regex_guard.bounded_find("attn_implementation in [(].sdpa., .eager.[)]", text)
    assert decided and found is not None
