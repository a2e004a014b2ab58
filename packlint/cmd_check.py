"""`packlint check [PATH ...]`: run the rule table over launch scripts and report the findings.

The work is done by packlint.checking.check_paths (shared with `packlint run`); this module turns the
command line into options, picks the reporter and maps the result to an exit status:
0 clean, 1 findings at or above --fail-on, 2 usage, configuration, rule-table, unreadable-input or
internal error (every format still renders a valid document then).
"""

from __future__ import annotations

import os
import sys

from packlint.errors import EXIT_USAGE, PacklintError

FORMATS = ("text", "json", "sarif", "github", "gcc")


def add_rule_arguments(parser) -> None:
    parser.add_argument("--rule-file", action="append", default=[], metavar="PATH",
                        help="also load the rules in this TOML file (repeatable)")


def _split_codes(values: list[str]) -> list[str]:
    return [c.strip() for v in values or [] for c in v.split(",") if c.strip()]


def add_selection_arguments(parser, *, assumed_env: bool = True) -> None:
    """Options shared by `check`, `run` and `config`: what to check with, and the config file.
    `assumed_env`: offer --env/--inherit-env (not for `run`, which checks with the real environment)."""
    if assumed_env:
        from packlint.cmd_inspect import add_input_arguments

        add_input_arguments(parser)
    parser.add_argument("--known-env", action="append", default=[], metavar="NAME",
                        help="a variable the cluster always sets (value unknown to packlint; repeatable)")
    parser.add_argument("--select", action="append", default=[], metavar="CODES",
                        help="only these rules: codes, code prefixes or names, comma-separated (repeatable)")
    parser.add_argument("--ignore", action="append", default=[], metavar="CODES",
                        help="skip these rules: codes, code prefixes or names, comma-separated (repeatable)")
    parser.add_argument("--fail-on", choices=["error", "warning", "info"], default=None,
                        help="exit 1 when a finding of this severity or above is reported (default: error)")
    add_rule_arguments(parser)
    parser.add_argument("--config", default=None, metavar="FILE",
                        help="use this configuration file (pyproject.toml, packlint.toml) for every file")
    parser.add_argument("--isolated", action="store_true", help="ignore every configuration file")


def add_arguments(parser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH",
                        help="scripts or directories to check ('-' reads stdin; default: .)")
    add_selection_arguments(parser)
    parser.add_argument("--stdin-filename", default=None, help="name to report when reading stdin")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text (default), json, sarif (SARIF 2.1.0), github (workflow commands), "
                             "gcc (file:line:col: error: message [CODE])")
    parser.add_argument("--output-file", "-o", default=None, metavar="FILE",
                        help="write the report to FILE instead of stdout")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                        help="colour the text output (auto: only on a terminal, and not when NO_COLOR is set)")
    parser.add_argument("--baseline", default=None, metavar="FILE",
                        help="report only findings that are not recorded in this baseline file")
    parser.add_argument("--write-baseline", default=None, metavar="FILE",
                        help="record every current finding in FILE (exit 0) for a later --baseline")
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


def cli_settings(args):
    """The command line's share of the settings (merged with the config file per checked file)."""
    from packlint.cmd_inspect import parse_env_pairs
    from packlint.config import CliSettings

    known = []
    for name in getattr(args, "known_env", []) or []:
        for n in name.split(","):
            n = n.strip()
            if n:
                if not n.replace("_", "a").isalnum() or n[0].isdigit():
                    raise PacklintError(f"--known-env expects a variable name, got {n!r}")
                known.append(n)
    return CliSettings(select=_split_codes(args.select) or None, ignore=_split_codes(args.ignore),
                       fail_on=args.fail_on, rule_files=list(args.rule_file),
                       env=parse_env_pairs(getattr(args, "env", None)),
                       known_env=known, config=args.config, isolated=args.isolated)


def render(fmt: str, result, *, color: bool = False) -> str:
    import importlib

    return importlib.import_module(f"packlint.reporters.{fmt}").render(result, color=color)


def run(args) -> int:
    from packlint.checking import CheckOptions, check_paths, error_result

    try:
        options = CheckOptions(cli=cli_settings(args), inherit_env=args.inherit_env, script_args=args.script_args,
                               stdin_filename=args.stdin_filename, baseline=args.baseline,
                               write_baseline=args.write_baseline)
        result = check_paths(args.paths, options)
    except PacklintError as exc:
        if args.format == "text":
            raise
        # a run-level error: one line on stderr, and still a valid document on stdout
        print(f"packlint: error: {exc.one_line()}", file=sys.stderr)
        _emit(args, render(args.format, error_result(exc.one_line())))
        return exc.exit_code
    for e in result.file_errors:
        print(f"packlint: error: {e.line()}", file=sys.stderr)
    if result.failed and args.format == "text" and not result.findings and not result.files:
        return result.exit_code(args.exit_zero)  # exit 2, nothing checked: only the error (no "All clear")
    out_stream = sys.stdout
    color = args.format == "text" and args.output_file is None and use_color(args.color, out_stream)
    _emit(args, render(args.format, result, color=color))
    if result.baseline_written:
        n = len(result.findings) + result.baselined
        print(f"packlint: wrote {n} finding{'' if n == 1 else 's'} to the baseline {result.baseline_written}",
              file=sys.stderr)
    return result.exit_code(args.exit_zero)


def _emit(args, text: str) -> None:
    if args.output_file:
        try:
            with open(args.output_file, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise PacklintError(f"cannot write the report: {exc.strerror or exc}", path=args.output_file,
                                exit_code=EXIT_USAGE) from None
        return
    sys.stdout.write(text)
    sys.stdout.flush()
