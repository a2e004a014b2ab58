"""`packlint config [PATH]`: the settings in effect for PATH (a script or a directory; default: the
current directory) and where each one comes from: `default`, `FILE:LINE ([tool.packlint].KEY)` or
`command line (--flag)`. The configuration is fully validated (rule files loaded, codes checked), so
`packlint config` is also the way to test a configuration: exit 0 valid, 2 invalid."""

from __future__ import annotations

import json
import sys


def add_arguments(parser) -> None:
    from packlint.cli.check import add_selection_arguments

    parser.add_argument(
        "path",
        nargs="?",
        default=".",
        metavar="PATH",
        help="the script or directory whose settings to show (default: .)",
    )
    add_selection_arguments(parser)
    parser.add_argument("--format", choices=["text", "json"], default="text")


def _toml_value(v) -> str:
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def run(args) -> int:
    from packlint.cli.check import cli_settings
    from packlint.config import Resolver, validate_codes
    from packlint.engine import unknown_selectors
    from packlint.errors import PacklintError
    from packlint.rule_table import load_table

    cli = cli_settings(args)
    settings = Resolver(cli).settings_for(args.path)
    table = load_table(settings.rule_files)
    validate_codes(settings, table)
    bad = unknown_selectors(table, (cli.select or []) + cli.ignore)
    if bad:
        raise PacklintError(f"unknown rule code or name: {', '.join(bad)} (see `packlint rules`)")
    doc = settings.to_json()
    doc["path"] = args.path
    if args.format == "json":
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    cfg = settings.config
    where = "none (built-in defaults)"
    if cfg is not None:
        where = str(cfg.path) + (f" [{cfg.table}]" if cfg.table else "")
    lines = [f"# settings for {args.path}", f"# config file: {where}"]
    values = doc["settings"]
    width = max(len(k) for k in values)
    for key, value in values.items():
        lines.append(f"{key.ljust(width)} = {_toml_value(value)}  # {settings.origins[key]}")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0
