"""`packlint check [PATH ...]`: run the rule table over launch scripts and report the findings."""

from __future__ import annotations

import os
import sys

from packlint.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, PacklintError
from packlint.findings import SEVERITY_RANK

FORMATS = ("text", "json")


def add_rule_arguments(parser) -> None:
    parser.add_argument("--rule-file", action="append", default=[], metavar="PATH",
                        help="also load the rules in this TOML file (repeatable)")


def _split_codes(values: list[str]) -> list[str]:
    return [c.strip() for v in values or [] for c in v.split(",") if c.strip()]


def add_arguments(parser) -> None:
    from packlint.cmd_inspect import add_input_arguments

    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="scripts or directories to check ('-' reads stdin; default: .)")
    add_input_arguments(parser)
    parser.add_argument("--stdin-filename", default=None, help="name to report when reading stdin")
    parser.add_argument("--select", action="append", default=[], metavar="CODES",
                        help="only these rules: codes, code prefixes or names, comma-separated (repeatable)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="skip these rules: codes, code prefixes or names, comma-separated (repeatable)")
    parser.add_argument("--fail-on", choices=["error", "warning", "info"], default="error",
                        help="exit 1 when a finding of this severity or above is reported (default: error)")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--format", choices=FORMATS, default="text")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                        help="colour the text output (auto: only on a terminal, and not when NO_COLOR is set)")
    add_rule_arguments(parser)
    parser.epilog = "Arguments after `--` are the scripts' positional arguments."


def use_color(choice: str, stream) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class _Sources:
    """Source lines for code frames: stdin text by its display name, other files read on demand."""

    def __init__(self) -> None:
        self.texts: dict[str, list[str] | None] = {}

    def add(self, path: str, data: bytes) -> None:
        self.texts[path] = _lines(data)

    def __call__(self, path: str) -> list[str] | None:
        if path not in self.texts:
            try:
                with open(path, "rb") as fh:
                    self.texts[path] = _lines(fh.read())
            except OSError:
                self.texts[path] = None
        return self.texts[path]


def _lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace")
    return [line.rstrip("\r") for line in text.split("\n")]


def run(args) -> int:
    from packlint.discover import STDIN, discover
    from packlint.cmd_inspect import parse_env_pairs
    from packlint.engine import check_model, select_rules, unknown_selectors
    from packlint.findings import Summary
    from packlint.rule_table import load_table

    env = parse_env_pairs(args.env)
    select, ignore = _split_codes(args.select), _split_codes(args.ignore)
    table = load_table(args.rule_file)
    bad = unknown_selectors(table, select + ignore)
    if bad:
        raise PacklintError(f"unknown rule code or name: {', '.join(bad)} (see `packlint rules`)")
    rules = select_rules(table, select, ignore)

    paths = args.paths or ["."]
    if paths.count(STDIN) > 1:
        raise PacklintError("'-' (stdin) can be given only once")
    files, errors = discover(paths)
    failed = False
    for err in errors:
        print(f"packlint: error: {err.path}: {err.message}", file=sys.stderr)
        failed = True

    from packlint.api import inspect_script

    sources = _Sources()
    findings = []
    checked = 0
    for path in files:
        text = None
        display = path
        if path == STDIN:
            text = sys.stdin.buffer.read()
            display = args.stdin_filename or "<stdin>"
        else:
            try:
                with open(path, "rb") as fh:
                    text = fh.read()
            except OSError as exc:
                print(f"packlint: error: {path}: {exc.strerror or exc}", file=sys.stderr)
                failed = True
                continue
        sources.add(display, text)
        try:
            # a file is read by inspect_script itself, so `source` resolves beside the script
            model = inspect_script(display if path == STDIN else path, env=env, inherit_env=args.inherit_env,
                                   args=args.script_args, known_env=tuple(getattr(args, "known_env", ()) or ()),
                                   text=text if path == STDIN else None,
                                   display_path=display if path == STDIN else None)
            findings.extend(check_model(model, rules, script_text=text))
        except PacklintError as exc:
            print(f"packlint: error: {exc.one_line()}", file=sys.stderr)
            failed = True
            continue
        except RecursionError:
            print(f"packlint: error: {display}: the script is nested too deeply to analyse", file=sys.stderr)
            failed = True
            continue
        except Exception as exc:  # an internal error: one line, never a traceback
            if os.environ.get("PACKLINT_DEBUG"):
                raise
            print(f"packlint: error: {display}: internal error: {type(exc).__name__}: {exc} "
                  "(set PACKLINT_DEBUG=1 for a traceback)", file=sys.stderr)
            failed = True
            continue
        checked += 1

    summary = Summary.of(findings, checked)
    if args.format == "json":
        from packlint.reporters.json import render
        output = render(findings, summary)
    else:
        from packlint.reporters.text import render
        output = render(findings, summary, color=use_color(args.color, sys.stdout), read_source=sources)
    sys.stdout.write(output)
    sys.stdout.flush()

    if failed:
        return EXIT_USAGE
    if args.exit_zero:
        return EXIT_OK
    threshold = SEVERITY_RANK[args.fail_on]
    return EXIT_FINDINGS if any(SEVERITY_RANK[f.severity] >= threshold for f in findings) else EXIT_OK
