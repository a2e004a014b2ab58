"""`packlint rules`: every rule in the table (built-in plus --rule-file), as a table, JSON, or the
Markdown reference page (docs/rules-reference.md is this output for the built-in table)."""

from __future__ import annotations

import json
import sys


def add_arguments(parser) -> None:
    from packlint.cmd_check import add_rule_arguments

    parser.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    add_rule_arguments(parser)


def rule_json(rule) -> dict:
    return {
        "code": rule.code,
        "name": rule.name,
        "severity": rule.severity,
        "summary": rule.summary,
        "scope": rule.scope,
        "for_each": rule.for_each,
        "when": rule.when_text,
        "builtin": rule.builtin,
        "file": rule.file,
    }


def run(args) -> int:
    from packlint.rule_table import load_table

    table = load_table(args.rule_file)
    if args.format == "json":
        json.dump(
            {"version": 1, "rules": [rule_json(r) for r in table.rules]}, sys.stdout, indent=2, ensure_ascii=False
        )
        sys.stdout.write("\n")
        return 0
    if args.format == "markdown":
        from packlint.rule_docs import table_markdown

        sys.stdout.write(table_markdown(table))
        return 0
    rows = [(r.code, r.name, r.severity, r.summary) for r in table.rules]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(("CODE", "NAME", "SEVERITY"))]
    header = ("CODE", "NAME", "SEVERITY", "SUMMARY")
    lines = []
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
