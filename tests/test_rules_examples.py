"""Every rule's bad and good examples (from its table entry) are run, so its documentation cannot go
stale: a bad example must fire that rule, a good example must fire nothing at warning or above."""

from __future__ import annotations

import pytest

from packlint.api import inspect_script
from packlint.engine import check_model
from packlint.rule_table import load_table

TABLE = load_table(use_cache=False)
CASES = [pytest.param(rule, ex, id=f"{rule.code}-{ex.kind}{i}")
         for rule in TABLE.rules for i, ex in enumerate(rule.examples)]


def run_example(ex) -> list:
    text = ex.script.lstrip("\n").encode()
    model = inspect_script("example.sh", env=ex.env, args=ex.args, text=text, display_path="example.sh")
    return check_model(model, TABLE.rules, script_text=text)


@pytest.mark.parametrize("rule,example", CASES)
def test_rule_example(rule, example):
    findings = run_example(example)
    codes = [(f.code, f.severity) for f in findings]
    if example.kind == "bad":
        # an info rule (PK903) is proven by its own info finding; others by a warning or error
        assert any(f.code == rule.code and (f.severity != "info" or rule.severity == "info")
                   for f in findings), codes
    else:
        assert not [f for f in findings if f.severity in ("error", "warning")], codes
        if rule.severity == "info":
            assert not [f for f in findings if f.code == rule.code], codes


def test_every_rule_has_examples():
    for rule in TABLE.rules:
        kinds = {e.kind for e in rule.examples}
        assert kinds == {"bad", "good"}, rule.code
