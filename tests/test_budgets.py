"""Every evaluator has a budget, by construction (issue 29, the second reliability audit,
`../shared/research/reliability-audit-2.md`): regexes (R04/R05/R26), bash bracket ranges (R30), OmegaConf
interpolation (R06), TOML keys (R07) and big integers (R21/R22), YAML size (R10), the startup-check
evaluator (R08/R09), the argparse reader (R13) and the history search (R12). Each reproduction runs in a
subprocess under RLIMIT_AS / RLIMIT_CPU (tests/limited.py) or in-process on a small bound, and asserts the
bounded, correct result. No assertion depends on wall time."""

from __future__ import annotations

import json
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
