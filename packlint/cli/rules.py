"""`packlint rules`: every rule in the table (built-in plus --rule-file), as a table, JSON, or the
Markdown reference page (docs/rules-reference.md is `--format markdown --released` for the built-in
table). A rule whose `since` is newer than this packlint is marked unreleased."""

from __future__ import annotations

import json
import sys


def add_arguments(parser) -> None:
    from packlint.cli.check import add_rule_arguments

    parser.add_argument("--format", choices=["text", "json", "markdown"], default="text")
    parser.add_argument(
        "--released",
        action="store_true",
        help="only the rules this packlint version ships (their `since` is at most its version): "
        "what docs/rules-reference.md holds",
    )
    add_rule_arguments(parser)


def rule_json(rule) -> dict:
    from packlint.rule_table import is_released

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
        "since": rule.since,
        "released": is_released(rule),
    }


def run(args) -> int:
    from packlint.rule_table import is_released, load_table

    table = load_table(args.rule_file)
    rules = [r for r in table.rules if is_released(r)] if args.released else table.rules
    if args.format == "json":
        json.dump({"version": 1, "rules": [rule_json(r) for r in rules]}, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    if args.format == "markdown":
        from packlint.rule_docs import table_markdown

        sys.stdout.write(table_markdown(table, released=args.released))
        return 0
    rows = [(r.code, r.name, r.severity, _since(r), r.summary) for r in rules]
    header = ("CODE", "NAME", "SEVERITY", "SINCE", "SUMMARY")
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header[:4])]
    lines = []
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4])
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def _since(rule) -> str:
    """The SINCE column: `0.2.0`, `0.3.0 (unreleased)`, `-` for a rule without `since`."""
    from packlint.rule_table import is_released

    if rule.since is None:
        return "-"
    return rule.since if is_released(rule) else f"{rule.since} (unreleased)"
