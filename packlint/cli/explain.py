"""`packlint explain CODE`: a rule's documentation (Markdown), with its tested bad and good examples."""

from __future__ import annotations

import sys

from packlint.errors import PacklintError


def add_arguments(parser) -> None:
    from packlint.cli.check import add_rule_arguments

    parser.add_argument("code", help="rule code (PK001) or name (packing-gate-leak)")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    add_rule_arguments(parser)


def run(args) -> int:
    from packlint.cli.check import use_color
    from packlint.rule_docs import rule_markdown
    from packlint.rule_table import load_table

    table = load_table(args.rule_file)
    rule = table.by_code(args.code)
    if rule is None:
        import difflib

        names = [r.code for r in table.rules] + [r.name for r in table.rules]
        close = difflib.get_close_matches(args.code, names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else " (see `packlint rules`)"
        raise PacklintError(f"no rule {args.code!r}{hint}")
    text = rule_markdown(rule)
    if use_color(args.color, sys.stdout):
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        sys.stdout.write(text)
    return 0
