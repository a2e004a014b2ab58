"""Every rule's bad and good examples (from its table entry) are run, so its documentation cannot go
stale: a bad example must fire that rule, a good example must fire nothing at warning or above."""

from __future__ import annotations

from pathlib import Path

import pytest

from packlint.api import inspect_script
from packlint.engine import check_model
from packlint.rule_table import load_table

TABLE = load_table(use_cache=False)
CASES = [pytest.param(rule, ex, id=f"{rule.code}-{ex.kind}{i}")
         for rule in TABLE.rules for i, ex in enumerate(rule.examples)]


def run_example(ex, where: Path) -> list:
    """Check the example as a script in `where`, beside the small code base it launches (`code`), with
    code reading on: rules over the launched code (PK2xx) see that code, or find none."""
    from packlint.codebase import CodeOptions, CodeSession

    text = ex.script.lstrip("\n").encode()
    for rel, source in (getattr(ex, "code", None) or {}).items():
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        (where / rel).write_text(source.lstrip("\n"))
    script = where / "example.sh"
    script.write_bytes(text)
    model = inspect_script(str(script), env=ex.env, args=ex.args, text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    return check_model(model, TABLE.rules, script_text=text, code=session.facts)


@pytest.mark.parametrize("rule,example", CASES)
def test_rule_example(rule, example, tmp_path):
    findings = run_example(example, tmp_path)
    codes = [(f.code, f.severity) for f in findings]
    if example.kind == "bad":
        # an info rule (PK204, PK903) is proven by its own info finding; others by a warning or error
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
