"""Bounded cost by construction (issue 19): every reproduction of the reliability audit about cost or
crashes in analysis, run in a subprocess under RLIMIT_AS / RLIMIT_CPU (tests/limited.py), asserting
the bounded, correct result: the value over a cap is Unknown with its reason (what `inspect` shows),
and what bash decides is what packlint reports. No assertion depends on wall time.

Ids are those of the reliability audit of 0.2 (its report is not part of the repository): H14 brace expansion, H15 pattern
substitution, H16 the PK105 export scan, H12 array appends, H31/Q5 integer sizes, Q7 regexes."""

from __future__ import annotations

import json
import random
import re
import shutil
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from limited import assert_clean, inspect_limited, run_limited

from packlint.env_hygiene import _names_read
from packlint.interpret.limits import MAX_ARRAY_ITEMS, MAX_BRACE_WORDS, MAX_VALUE_CHARS
from packlint.interpret.patterns import TooCostly, remove_affix, replace_pattern
from packlint.interpret.words import brace_expand
from packlint import regex_guard
from packlint.regex_guard import bounded_search, nested_quantifier

BASH = shutil.which("bash")
needs_bash = pytest.mark.skipif(BASH is None, reason="bash is not installed")


def bash_out(script: str) -> str:
    assert BASH is not None
    return subprocess.run([BASH, "-c", script], capture_output=True, text=True, timeout=60).stdout


def launch(model: dict) -> dict:
    assert len(model["launches"]) == 1, model["launches"]
    return model["launches"][0]


def flag_value(model: dict, name: str) -> dict:
    return launch(model)["flags"][name][-1]


# ------------------------------------------------------------------------------------------ H14 braces


def test_h14_brace_bomb_in_a_command_is_unknown_with_the_reason(tmp_path):
    (tmp_path / "bb.sh").write_text("python train.py " + "{a,b}" * 30 + "\n")
    argv = launch(inspect_limited("bb.sh", tmp_path))["argv"]
    assert argv == [{"unknown": "brace expansion into 1,073,741,824 words: too large to track (limit 4,096 words)"}]


def test_h14_nested_brace_bomb_stops_while_building(tmp_path):
    word = "{a,{b,{c,{d,{e,{f,{g,{h,{i,{j,{k,{l,{m,n}}}}}}}}}}}}}"
    (tmp_path / "bn.sh").write_text("python train.py " + word * 4 + "\n")
    argv = launch(inspect_limited("bn.sh", tmp_path))["argv"]
    assert len(argv) == 1 and "brace expansion into more than 4,096 words" in argv[0]["unknown"]


@needs_bash
def test_h14_assignments_are_not_brace_expanded_as_in_bash(tmp_path):
    script = "X=" + "{a,b}" * 30 + "\nY=x{c,d}y\ndeclare Z=q{1,2}\n"
    (tmp_path / "ba.sh").write_text(script + 'python train.py --x "$X" --y "$Y" --z "$Z"\n')
    model = inspect_limited("ba.sh", tmp_path)
    want = bash_out(script + 'printf "%s\\n" "$X" "$Y" "$Z"').splitlines()
    assert want[:2] == ["{a,b}" * 30, "x{c,d}y"]  # bash leaves assignments alone
    assert [flag_value(model, f)["value"] for f in ("--x", "--y")] == want[:2]
    assert flag_value(model, "--z")["value"] != "{1,2}"  # `declare` arguments are expanded (packlint: joined)


@needs_bash
@pytest.mark.parametrize(
    "word",
    ["{a,b}", "x{a,b}y", "{a,b}{c,d}", "{train,val,test}.json", "--lr={1e-4,3e-4}", "{a,}b", "pre{a,b}-{1,2,3}"],
)
def test_brace_expansion_under_the_cap_is_bashs(word):
    assert brace_expand(word) == bash_out(f"printf '%s\\n' {word}").splitlines()


def test_brace_expansion_exactly_at_the_cap_is_built():
    assert MAX_BRACE_WORDS == 4096
    out = brace_expand("{a,b}" * 12)
    assert out is not None and len(out) == 4096 and out[0] == "a" * 12 and out[-1] == "b" * 12
    assert brace_expand("{a,b}" * 13) is None


# ------------------------------------------------------------------------------ H15 pattern operations

RB = (
    "X=x\nX=${X//?/$X$X}\nX=${X//?/$X$X}\nX=${X//?/$X$X}\nX=${X//?/$X$X}\n"
    'X=${X//?/$X$X$X$X$X$X$X$X}\npython train.py --x "$X"\n'
)


def test_h15_substitution_bomb_is_predicted_before_building(tmp_path):
    (tmp_path / "rb.sh").write_text(RB)
    model = inspect_limited("rb.sh", tmp_path, memory=1024 << 20)
    reason = f"value too long to track (over {MAX_VALUE_CHARS:,} characters)"
    assert flag_value(model, "--x")["unknown"] == reason
    assert launch(model)["unexported"]["X"]["unknown"] == reason


@needs_bash
def test_h15_the_steps_under_the_cap_are_bashs(tmp_path):
    script = "X=x\nX=${X//?/$X$X}\nX=${X//?/$X$X}\nX=${X//?/$X$X}\nY=${X/#x/ab}\nZ=${X//xx/_}\n"
    (tmp_path / "r4.sh").write_text(script + 'python train.py --x "$X" --y "$Y" --z "$Z"\n')
    model = inspect_limited("r4.sh", tmp_path)
    want = bash_out(script + 'printf "%s\\n" "$X" "$Y" "$Z"').splitlines()
    assert [flag_value(model, f)["value"] for f in ("--x", "--y", "--z")] == want
    assert len(want[0]) == 128


def test_concatenation_and_append_are_checked_before_joining(tmp_path):
    doubling = "X=ab\n" + "X=$X$X\n" * 19  # 1 MiB: at the cap
    script = doubling + "Y=" + "$X" * 3000 + '\nW=$X\nW+=$X\npython train.py --y "$Y" --w "$W" --x "$X"\n'
    (tmp_path / "cat.sh").write_text(script)
    model = inspect_limited("cat.sh", tmp_path, memory=1024 << 20)
    assert flag_value(model, "--y")["unknown"] == "value too long to track"
    assert flag_value(model, "--w")["unknown"] == "value too long to track"
    assert len(flag_value(model, "--x")["value"]) == MAX_VALUE_CHARS


def test_backtracking_pattern_on_a_long_value_is_unknown(tmp_path):
    doubling = "X=ab\n" + "X=$X$X\n" * 19
    script = doubling + 'Z=${X%%a*b}\ncase $X in *a*a*a*c) M=1;; *) M=2;; esac\npython train.py --z "$Z" --m $M\n'
    (tmp_path / "pat.sh").write_text(script)
    model = inspect_limited("pat.sh", tmp_path, memory=1024 << 20)
    assert (
        flag_value(model, "--z")["unknown"] == "${X%%pattern} on a value of 1,048,576 characters: too costly to track"
    )
    rc, out, err = run_limited(["inspect", "pat.sh"], tmp_path, memory=1024 << 20)
    assert_clean(rc, out, err)
    assert "--m one of: 1" in out and "| 2" in out  # the case arm could not be decided: both worlds


@needs_bash
@given(
    text=st.text(alphabet="ab/.-", max_size=12),
    pattern=st.text(alphabet="ab*?/.", min_size=0, max_size=4),
    op=st.sampled_from(["#", "##", "%", "%%"]),
)
@settings(max_examples=60, derandomize=True, deadline=None)
def test_affix_removal_literal_fast_path_agrees_with_the_matcher(text, pattern, op):
    # the literal fast path and the regex path give the same result (the regex path is the old code)
    got = remove_affix(text, pattern, op)
    import packlint.interpret.patterns as P

    rx = P._glob_regex(pattern)
    n = len(text)
    if op in ("#", "##"):
        rng = range(0, n + 1) if op == "#" else range(n, -1, -1)
        want = next((text[k:] for k in rng if re.fullmatch(rx, text[:k], re.S)), text)
    else:
        rng = range(n, -1, -1) if op == "%" else range(0, n + 1)
        want = next((text[:k] for k in rng if re.fullmatch(rx, text[k:], re.S)), text)
    assert got == want


def test_substitution_size_prediction_is_exact_at_the_edge():
    text = "x" * 1024
    assert len(replace_pattern(text, "?", "y" * 1024, "//")) == MAX_VALUE_CHARS
    with pytest.raises(TooCostly):
        replace_pattern(text, "?", "y" * 1025, "//")


# --------------------------------------------------------------------------------------- H16 PK105


def _old_reads(text: str, name: str) -> bool:  # the quadratic scan's test, as 0.2.0 had it
    return re.search(r"\$\{?[#!]?" + re.escape(name) + r"(?![A-Za-z0-9_])", text) is not None


@given(
    text=st.lists(
        st.sampled_from(["$", "{", "}", "#", "!", "A", "AB", "A_1", "B", "_", "1", " ", "x", "=", '"', "-"]),
        max_size=25,
    ).map("".join)
)
@settings(max_examples=300, derandomize=True, deadline=None)
def test_names_read_is_the_old_per_name_search(text):
    for name in ("A", "AB", "A_1", "B", "_", "A1", "x"):
        assert (name in _names_read(text)) == _old_reads(text, name), (text, name)


def test_h16_five_thousand_exports_are_linear_and_report_the_same(tmp_path):
    lines = [f"export A_{i}=1" for i in range(5000)] + ["export A_3=2", "python train.py"]
    (tmp_path / "ex.sh").write_text("\n".join(lines) + "\n")
    rc, out, err = run_limited(["check", "--format", "json", "--select", "PK105", "ex.sh"], tmp_path, cpu=20)
    assert_clean(rc, out, err)
    findings = json.loads(out)["findings"]
    assert [(f["code"], f["line"]) for f in findings] == [("PK105", 5001)]


def test_pk105_findings_unchanged_on_a_mixed_script(tmp_path):
    # the same findings the per-name scan gave (computed here with it, from the syntax tree)
    rnd = random.Random(3)
    lines = []
    for _ in range(300):
        n = f"V{rnd.randint(0, 40)}"
        r = rnd.random()
        if r < 0.4:
            lines.append(f"export {n}={rnd.randint(0, 3)}")
        elif r < 0.55:
            lines.append(f"{n}={rnd.randint(0, 3)}")
        elif r < 0.7:
            lines.append(f"echo ${{{n}}}x")
        elif r < 0.8:
            lines.append(f"echo $#{n} ${{#{n}}} ${{!{n}}}")
        elif r < 0.9:
            lines.append(f"export {n}=${n}_1")
        else:
            lines.append("python train.py")
    (tmp_path / "mix.sh").write_text("\n".join(lines) + "\n")
    import packlint.env_hygiene as E
    from packlint.parse import parse
    from packlint.source import load

    ps = parse(load(str(tmp_path / "mix.sh"), "mix.sh"))
    new = E.overwritten_exports(ps)
    saved = E._names_read
    try:
        E._names_read = lambda text: {n for n in {f"V{i}" for i in range(41)} if _old_reads(text, n)}
        old = E.overwritten_exports(ps)
    finally:
        E._names_read = saved
    assert new == old and len(new) > 5


# ---------------------------------------------------------------------------------- H12 array appends


def test_h12_sixty_thousand_appends_are_linear_past_the_cap(tmp_path):
    body = "".join(f"ARGS+=(--f{i} {i})\n" for i in range(60000))
    (tmp_path / "app.sh").write_text(body + 'python train.py "${ARGS[@]}"\n')
    argv = launch(inspect_limited("app.sh", tmp_path, cpu=30))["argv"]
    assert argv == [{"unknown": f"an array of more than {MAX_ARRAY_ITEMS:,} items: too large to track"}]


def test_array_under_the_cap_keeps_every_item(tmp_path):
    body = "".join(f"ARGS+=(--f{i} {i})\n" for i in range(MAX_ARRAY_ITEMS // 2))
    (tmp_path / "app.sh").write_text(body + 'python train.py "${ARGS[@]}"\n')
    argv = launch(inspect_limited("app.sh", tmp_path))["argv"]
    assert len(argv) == MAX_ARRAY_ITEMS and argv[-2:] == ["--f2047", "2047"]


def test_word_splitting_past_the_cap_is_unknown(tmp_path):
    script = "X='a '\n" + "X=$X$X\n" * 18 + "python train.py $X\n"  # 2**18 words
    (tmp_path / "split.sh").write_text(script)
    argv = launch(inspect_limited("split.sh", tmp_path, memory=1024 << 20))["argv"]
    assert argv == [{"unknown": "a value that splits into more than 65,536 words: more than packlint tracks"}]


# --------------------------------------------------------------------------------- H31, Q5 integers


def test_h31_huge_launcher_counts_are_unknown_not_an_internal_error(tmp_path):
    (tmp_path / "bigint.sh").write_text(
        "torchrun --nnodes " + "7" * 4000 + " --nproc_per_node " + "3" * 4000 + " pretrain_gpt.py --num-layers 10\n"
    )
    rc, out, err = run_limited(["check", "bigint.sh"], tmp_path)
    assert_clean(rc, out, err)
    model = inspect_limited("bigint.sh", tmp_path)
    assert launch(model)["world_size"] == {"unknown": "--nnodes is too large a number to track"}


def test_slurm_counts_of_thousands_of_digits(tmp_path):
    (tmp_path / "s.sh").write_text("#SBATCH --nodes=" + "7" * 5000 + "\nsrun python train.py\n")
    rc, out, err = run_limited(["check", "s.sh"], tmp_path)
    assert_clean(rc, out, err)


@needs_bash
@pytest.mark.parametrize(
    "expr", ["99999999999999999999", "9" * 5000, "0x" + "f" * 300, "0" + "7" * 300, "9223372036854775807 + 1"]
)
def test_arithmetic_wraps_at_64_bits_like_bash(tmp_path, expr):
    (tmp_path / "a.sh").write_text(f"X=$(({expr}))\npython train.py --x $X\n")
    want = bash_out(f"echo $(({expr}))").strip()
    assert flag_value(inspect_limited("a.sh", tmp_path), "--x")["value"] == want


RULE = """[[rule]]
code = "XX001"
name = "user-rule"
severity = "error"
summary = "s"
explanation = "e"
when = "{when}"
message = "{message}"
"""


def test_q5_a_huge_integer_literal_in_a_rule_is_a_positioned_error(tmp_path):
    (tmp_path / "big.toml").write_text(RULE.format(when="9" * 5000 + " > 1", message="m"))
    (tmp_path / "s.sh").write_text("python train.py\n")
    rc, out, err = run_limited(["check", "--rule-file", "big.toml", "s.sh"], tmp_path)
    assert_clean(rc, out, err)
    assert rc == 2
    assert re.fullmatch(
        r"packlint: error: big\.toml:7:9: .*integer literal of 5,000 digits: at most 30 allowed.*\n", err
    )


def test_q5_products_of_huge_values_are_undecided(tmp_path):
    product = "int(flag('--x')) * int(flag('--x')) * int(flag('--x'))"
    (tmp_path / "big.toml").write_text(RULE.format(when=f"{product} > 1", message=f"{{{product}}}"))
    (tmp_path / "s.sh").write_text("python train.py --x " + "9" * 3000 + "\n")
    rc, out, err = run_limited(["check", "--format", "json", "--rule-file", "big.toml", "s.sh"], tmp_path)
    assert_clean(rc, out, err)
    (finding,) = json.loads(out)["findings"]
    assert finding["severity"] == "info" and "too large to track" in finding["message"]


# ------------------------------------------------------------------------------------------ Q7 regexes


@pytest.mark.parametrize("pattern", ["^(a+)+$", "(a|aa)+$", "(x+y?)*$", "^(?:a{1,99}){1,99}$"])
def test_q7_exponential_user_patterns_are_refused_at_load(tmp_path, pattern):
    (tmp_path / "redos.toml").write_text(RULE.format(when=f"matches(flag('--name'), '{pattern}')", message="m"))
    (tmp_path / "s.sh").write_text("python train.py --name " + "a" * 118 + "b\n")
    rc, out, err = run_limited(["check", "--rule-file", "redos.toml", "s.sh"], tmp_path)
    assert_clean(rc, out, err)
    assert rc == 2
    assert err.startswith("packlint: error: redos.toml:") and "bad regex" in err and err.count("\n") == 1
    assert "rule XX001: when: bad regex" in err and "grow exponentially" in err


def test_q7_polynomial_user_pattern_is_bounded_and_undecided(tmp_path):
    (tmp_path / "poly.toml").write_text(RULE.format(when="matches(flag('--name'), '.*a.*a.*a.*b')", message="m"))
    (tmp_path / "s.sh").write_text("python train.py --name " + "a" * 4000 + "c\n")
    rc, out, err = run_limited(["check", "--format", "json", "--rule-file", "poly.toml", "s.sh"], tmp_path, cpu=20)
    assert_clean(rc, out, err)
    findings = json.loads(out)["findings"]
    if regex_guard._re2 is not None:  # RE2 matches it in linear time: decided (no match), no finding
        assert findings == []
        return
    (finding,) = findings
    assert finding["severity"] == "info" and "within packlint's limits" in finding["message"]


def test_a_safe_user_pattern_still_decides(tmp_path):
    (tmp_path / "ok.toml").write_text(RULE.format(when="matches(flag('--name'), '^a+c$')", message="matched"))
    (tmp_path / "s.sh").write_text("python train.py --name " + "a" * 4000 + "c\n")
    rc, out, err = run_limited(["check", "--format", "json", "--rule-file", "ok.toml", "s.sh"], tmp_path)
    assert_clean(rc, out, err)
    assert [f["message"] for f in json.loads(out)["findings"]] == ["matched"]


def test_script_regex_redos_is_undecided(tmp_path):
    script = "X=" + "a" * 40 + "b\nif [[ $X =~ (a|aa)+$ ]]; then M=1; else M=2; fi\npython train.py --m $M\n"
    (tmp_path / "eq.sh").write_text(script)
    rc, out, err = run_limited(["inspect", "eq.sh"], tmp_path, cpu=20)
    assert_clean(rc, out, err)
    if regex_guard._re2 is not None:  # RE2: linear, decided as bash decides it (no match)
        assert "--m 2 " in out
    else:
        assert "--m one of: 1" in out and "| 2" in out


def test_built_in_patterns_are_not_exponential():
    # every literal string of the built-in tables (patterns among them) passes the load-time check
    from pathlib import Path

    rules = Path(__file__).resolve().parent.parent / "rules"
    literals = [m.group(1) for f in rules.glob("*.toml") for m in re.finditer(r"'([^'\n]*)'", f.read_text())]
    assert any("megatron" in lit for lit in literals)
    assert [lit for lit in literals if nested_quantifier(lit) is not None] == []


def test_nested_quantifier_cases():
    assert nested_quantifier("(a)\\1") == "a backreference"
    assert nested_quantifier("(a+)+") and nested_quantifier("(?:ab|a)*") and nested_quantifier("(a*b*)*")
    for safe in ("^a+c$", "(?:fp16|bf16)$", "^--[a-z-]+=\\d+$", "a{2,3}(b{1,4}){2}", "(?i)megatron[-_]?patch"):
        assert nested_quantifier(safe) is None, safe


def test_bounded_search_agrees_with_re_on_cheap_patterns():
    for pattern, subject in [("^a+c$", "aaac"), ("x", "abc"), ("(?i)megatron[-_]?patch", "Megatron_Patch"), ("^$", "")]:
        assert bounded_search(pattern, subject) == (re.search(pattern, subject) is not None)
    assert bounded_search("a", "a" * (1 << 17)) is True  # no unbounded repeat: linear on `re` or RE2
    if regex_guard._re2 is None:  # backtracking past the checked subset: over MAX_SUBJECT_CHARS, undecided
        assert bounded_search(".*a.*a.*b", "a" * (1 << 17)) is None


def test_yaml_alias_bomb_named_by_a_launch_stops_quickly(tmp_path):
    """A "billion laughs" YAML (ten aliases of ten aliases, nine levels deep) in the file a launch names: the
    libyaml path hands a document with aliases to ruamel's, whose walk is bounded (MAX_NODES), and the
    check ends in well under a second with PK603 (over packlint's limits: values unknown) instead of visiting 10**9 shared nodes."""
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    (tmp_path / "x.yaml").write_text("\n".join(lines) + "\nstage: sft\nmodel_name_or_path: m\n")
    (tmp_path / "t.sh").write_text("llamafactory-cli train x.yaml\n")
    code = "import sys; from packlint.cli import main; sys.exit(main(['check', '--exit-zero', 't.sh']))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0 and "PK603" in r.stdout and "PK602" not in r.stdout, r.stdout + r.stderr
