"""Rule documentation generated from the rule table's own metadata (like ruff's and sqlfluff's rule
pages): one rule for `packlint explain`, the whole table for `packlint rules --format markdown`, which
writes docs/rules-reference.md. The rule's TOML entry is the only place its documentation is kept."""

from __future__ import annotations

from pathlib import Path

REGENERATE = "packlint rules --format markdown > docs/rules-reference.md"


def rule_markdown(rule, level: int = 1) -> str:
    """One rule: heading, summary, explanation, its tested bad and good examples, references, condition.
    `level` is the Markdown level of the rule's heading; its sections are one level below."""
    h, sub = "#" * level, "#" * (level + 1)
    out = [f"{h} {rule.code} `{rule.name}` ({rule.severity})", "", rule.summary, "", rule.explanation, ""]
    for kind, heading in (("bad", "Bad"), ("good", "Good")):
        for ex in (e for e in rule.examples if e.kind == kind):
            title = f" ({ex.title})" if ex.title else ""
            out += [f"{sub} {heading}{title}", "", "```bash", _visible(ex.script.strip("\n")), "```", ""]
    if rule.references:
        out += [f"{sub} References", ""] + [f"- {r}" for r in rule.references] + [""]
    out += [f"{sub} Condition", "", "```", rule.when_text, "```", ""]
    return "\n".join(out)


def severities(rule) -> str:
    """The rule's severity, then any other severity its overrides give it: `error / warning`."""
    seen = [rule.severity]
    for o in rule.overrides:
        if o.severity and o.severity not in seen:
            seen.append(o.severity)
    return " / ".join(seen)


def anchor(rule) -> str:
    """The GitHub anchor of the rule's `## CODE `name` (severity)` heading."""
    return f"{rule.code}-{rule.name}-{rule.severity}".lower()


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _defined_in(rule) -> str:
    return f"rules/{Path(rule.file).name}" if rule.builtin else str(rule.file)


def table_markdown(table) -> str:
    """docs/rules-reference.md: an index table, then one section per rule, sorted by code."""
    rules = sorted(table.rules, key=lambda r: r.code)
    out = ["# Rule reference", "",
           f"<!-- Generated from rules/*.toml by `packlint rules --format markdown`; do not edit by hand."
           f" Regenerate: {REGENERATE} -->", "",
           "Every rule packlint ships, generated from its entry in `rules/*.toml` (the table format and the",
           "condition language: [rules.md](rules.md)). The bad and good examples are run by the test suite;",
           "`packlint explain CODE` prints the same section in a terminal.", "",
           "| code | name | severity | summary |", "|---|---|---|---|"]
    for r in rules:
        out.append(f"| [{r.code}](#{anchor(r)}) | `{r.name}` | {severities(r)} | {_cell(r.summary)} |")
    out.append("")
    for r in rules:
        section = rule_markdown(r, level=2).rstrip("\n")
        out += [section, "", f"Defined in `{_defined_in(r)}`.", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _visible(script: str) -> str:
    """A carriage return (PK904's example) shown as `\\r` at the end of its line: a raw CR would be
    read back as a line break."""
    return script.replace("\r\n", "\\r\n").replace("\r", "\\r")
