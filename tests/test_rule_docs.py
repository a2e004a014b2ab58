"""Rule documentation is generated from the rule table: docs/rules-reference.md must equal
`packlint rules --format markdown`, and `packlint explain` prints the same section for one rule."""

from __future__ import annotations

import re
from pathlib import Path

from packlint.cli import main
from packlint.rule_docs import REGENERATE, _visible, anchor, rule_markdown
from packlint.rule_table import load_table

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "rules-reference.md"


def run(capsys, *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_committed_reference_is_the_generated_one(capsys):
    code, out = run(capsys, "rules", "--format", "markdown")
    assert code == 0
    assert REFERENCE.read_text() == out, f"docs/rules-reference.md is stale; regenerate it: {REGENERATE}"


def test_reference_documents_every_rule_with_a_working_index():
    text = REFERENCE.read_text()
    headings = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-")
                for h in re.findall(r"^## (.+)$", text, re.M)}
    for rule in load_table().rules:
        assert f"| [{rule.code}](#{anchor(rule)}) | `{rule.name}` |" in text, rule.code
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
