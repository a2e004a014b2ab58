"""Rule documentation is generated from the rule table: docs/rules-reference.md must equal
`packlint rules --format markdown --released` (every rule this version ships; a rule whose `since` is
newer enters it when tools/release.py cuts that release), and `packlint explain` prints the same
section for one rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from packlint.cli import main
from packlint.rule_docs import REGENERATE, _visible, anchor, rule_markdown, table_markdown
from packlint.rule_table import is_released, load_table

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "rules-reference.md"


def run(capsys, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_committed_reference_is_the_generated_one(capsys):
    code, out = run(capsys, "rules", "--format", "markdown", "--released")
    assert code == 0
    assert REFERENCE.read_text() == out, f"docs/rules-reference.md is stale; regenerate it: {REGENERATE}"


def test_reference_documents_every_released_rule_with_a_working_index():
    text = REFERENCE.read_text()
    headings = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
                for h in re.findall(r"^## (.+)$", text, re.M)}
    for rule in load_table().rules:
        if not is_released(rule):
            assert f"## {rule.code} " not in text, f"{rule.code} is unreleased (since {rule.since})"
            continue
        assert f"| [{rule.code}](#{anchor(rule)}) | `{rule.name}` |" in text, rule.code
        assert f"Added in packlint {rule.since}." in text, rule.code
        assert anchor(rule) in headings, rule.code
        for ex in rule.examples:
            assert _visible(ex.script.strip("\n")) in text, (rule.code, ex.kind)


def test_explain_prints_the_rule_section(capsys):
    rule = load_table().by_code("PK003")
    code, out = run(capsys, "explain", "PK003", "--color", "never")
    assert code == 0 and out == rule_markdown(rule)
    assert out.startswith("# PK003 `packing-micro-batch` (error)\n")
    assert "\n## Bad (" in out and "\n## Condition\n" in out
    # the override's severity shows in the index
    assert "| `packing-micro-batch` | error / warning |" in REFERENCE.read_text()


def test_user_rule_files_get_the_same_reference(capsys):
    team = ROOT / "tests" / "fixtures" / "check" / "tables" / "megatron.toml"
    code, out = run(capsys, "rules", "--format", "markdown", "--rule-file", str(team))
    assert code == 0
    assert "| [MG001](#mg001-" in out and "Defined in `" + str(team) in out


def test_unreleased_rules_are_marked_and_left_out_of_the_released_reference(capsys):
    """As at 0.1.0, when the 0.2.0 rules were unreleased: `--released` leaves them out, the full page and
    `packlint rules` mark them."""
    table = load_table()
    at_010 = table_markdown(table, released=True, version="0.1.0")
    assert "## PK001 `packing-gate-leak`" in at_010 and "Added in packlint 0.1.0." in at_010
    assert "PK201" not in at_010 and "PK301" not in at_010
    full = table_markdown(table, version="0.1.0")
    assert "## PK201 `unknown-flag`" in full and "Added in packlint 0.2.0 (unreleased)." in full
    unreleased = [r for r in table.rules if not is_released(r)]
    code, out = run(capsys, "rules")
    assert code == 0 and out.splitlines()[0].split() == ["CODE", "NAME", "SEVERITY", "SINCE", "SUMMARY"]
    for r in table.rules:
        line = next(ln for ln in out.splitlines() if ln.startswith(r.code + " "))
        assert (f"{r.since} (unreleased)" in line) == (r in unreleased), line
    code, out = run(capsys, "rules", "--format", "json")
    by_code = {r["code"]: r for r in json.loads(out)["rules"]}
    assert by_code["PK001"]["since"] == "0.1.0" and by_code["PK001"]["released"] is True
    assert {c for c, r in by_code.items() if not r["released"]} == {r.code for r in unreleased}
    code, out = run(capsys, "rules", "--format", "json", "--released")
    assert {r["code"] for r in json.loads(out)["rules"]} == {r.code for r in table.rules if is_released(r)}
    assert "--released" in REGENERATE


def test_a_built_in_rule_needs_since(tmp_path):
    from packlint.errors import PacklintError
    from packlint.rule_table import compile_table

    entry = """
[[rule]]
code = "PK998"
name = "x-rule"
severity = "warning"
summary = "s"
when = "has_flag('--x')"
message = "m"
explanation = "e"
"""
    team = compile_table([("team.toml", entry.encode(), False)])
    assert team.rules[0].since is None and is_released(team.rules[0])  # user rules need no since
    with pytest.raises(PacklintError, match="needs `since`"):
        compile_table([("rules/x.toml", entry.encode(), True)])
    bad = entry.replace('severity = "warning"', 'severity = "warning"\nsince = "0.3"')
    with pytest.raises(PacklintError, match="since"):
        compile_table([("team.toml", bad.encode(), False)])
