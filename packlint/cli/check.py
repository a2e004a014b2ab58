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

FORMATS = ("text", "json", "sarif", "github", "gcc", "junit", "gitlab")
# display filter (`-S`, like ShellCheck's): a finding shows when its severity is at or above this
DISPLAY_SEVERITIES = ("error", "warning", "info")


def add_rule_arguments(parser) -> None:
    parser.add_argument(
        "--rule-file",
        action="append",
        default=[],
        metavar="PATH",
        help="also load the rules in this TOML file (repeatable)",
    )


def _split_codes(values: list[str]) -> list[str]:
    return [c.strip() for v in values or [] for c in v.split(",") if c.strip()]


def add_selection_arguments(parser, *, assumed_env: bool = True) -> None:
    """Options shared by `check`, `run` and `config`: what to check with, and the config file.
    `assumed_env`: offer --env/--inherit-env (not for `run`, which checks with the real environment)."""
    from packlint.cli.inspect import add_input_arguments, add_known_env_argument

    if assumed_env:
        add_input_arguments(parser)
    add_known_env_argument(parser)
    parser.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="CODES",
        help="only these rules: codes, code prefixes or names, comma-separated (repeatable)",
    )
    parser.add_argument(
        "--extend-select",
        action="append",
        default=[],
        metavar="CODES",
        help="enable these rules on top of the selection (config or --select), comma-separated",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        default=[],
        metavar="CODES",
        help="skip these rules: codes, code prefixes or names, comma-separated (repeatable)",
    )
    parser.add_argument(
        "--fail-on",
        choices=["error", "warning", "info"],
        default=None,
        help="exit 1 when a finding of this severity or above is reported (default: error)",
    )
    add_rule_arguments(parser)
    from packlint.cli.codebase import add_code_arguments

    add_code_arguments(parser)
    parser.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help="use this configuration file (pyproject.toml, packlint.toml) for every file",
    )
    parser.add_argument("--isolated", action="store_true", help="ignore every configuration file")
    parser.add_argument(
        "--megatron-version",
        default=None,
        metavar="RELEASE",
        help="check a Megatron-LM program whose code is not found against this release's flag "
        "snapshot ('core_v0.14.0', '0.14', 'main'; config: megatron-version)",
    )


def add_arguments(parser) -> None:
    parser.add_argument(
        "paths", nargs="*", metavar="PATH", help="scripts or directories to check ('-' reads stdin; default: .)"
    )
    add_selection_arguments(parser)
    parser.add_argument("--stdin-filename", default=None, help="name to report when reading stdin")
    parser.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    parser.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=FORMATS,
        default="text",
        help="text (default), json, sarif (SARIF 2.1.0), github (workflow commands), "
        "gcc (file:line:col: error: message [CODE]), junit (JUnit XML), "
        "gitlab (GitLab Code Quality JSON); --format is an alias",
    )
    parser.add_argument(
        "--severity",
        "-S",
        choices=DISPLAY_SEVERITIES,
        default=None,
        help="show only findings of this severity or above (display only; --fail-on decides "
        "the exit status of what is shown)",
    )
    parser.add_argument(
        "--statistics", action="store_true", help="print the number of findings per rule code instead of the findings"
    )
    parser.add_argument(
        "--quiet",
        "-q",
        action="store_true",
        help="text: no code frames or summary line, one line per finding; nothing when clean",
    )
    parser.add_argument(
        "--fix", action="store_true", help="apply the safe fixes to the files, then report what is left"
    )
    parser.add_argument(
        "--unsafe-fixes",
        action="store_true",
        help="with --fix or --diff: apply the unsafe fixes too (they change what the script does)",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="print the fixes as a unified diff instead of writing them (exit 1 when there is one)",
    )
    parser.add_argument(
        "--output-file", "-o", default=None, metavar="FILE", help="write the report to FILE instead of stdout"
    )
    parser.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="colour the text output (auto: only on a terminal, and not when NO_COLOR is set)",
    )
    parser.add_argument(
        "--baseline",
        default=None,
        metavar="FILE",
        help="report only findings that are not recorded in this baseline file",
    )
    parser.add_argument(
        "--write-baseline",
        default=None,
        metavar="FILE",
        help="record every current finding in FILE (exit 0) for a later --baseline",
    )
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
    from packlint.cli.inspect import parse_env_pairs
    from packlint.config import CliSettings

    known = []
    for name in getattr(args, "known_env", []) or []:
        for n in name.split(","):
            n = n.strip()
            if n:
                if not n.replace("_", "a").isalnum() or n[0].isdigit():
                    raise PacklintError(f"--known-env expects a variable name, got {n!r}")
                known.append(n)
    from packlint.cli.codebase import code_settings

    code_bases, path_maps = code_settings(args)
    # per process, inherited by forked workers; set on every call (an in-process caller's earlier
    # --no-cache or --allow-outside does not stick to the next call)
    from packlint.rule_table import disable_cache
    from packlint.scope import allow_outside, named_code_bases

    allow_outside(bool(getattr(args, "allow_outside", False)))
    named_code_bases(code_bases)
    disable_cache(bool(getattr(args, "no_cache", False)))  # --no-cache: no cache at all
    return CliSettings(
        select=_split_codes(args.select) or None,
        ignore=_split_codes(args.ignore),
        extend_select=_split_codes(getattr(args, "extend_select", [])),
        fail_on=args.fail_on,
        rule_files=list(args.rule_file),
        env=parse_env_pairs(getattr(args, "env", None)),
        known_env=known,
        config=args.config,
        isolated=args.isolated,
        code_bases=code_bases,
        path_maps=path_maps,
        code_reading=not getattr(args, "no_code_base", False),
        code_cache=not getattr(args, "no_cache", False),
        megatron_version=_megatron_version(getattr(args, "megatron_version", None)),
    )


def _megatron_version(text: str | None) -> str | None:
    if text is None:
        return None
    from packlint.codebase.snapshots import normalize_version, release_names

    name = normalize_version(text)
    if name is None:
        raise PacklintError(
            f"--megatron-version: unknown release {text!r} "
            f"(the shipped snapshots: {', '.join(release_names()) or 'none'})"
        )
    return name


def render(fmt: str, result, *, color: bool = False) -> str:
    import importlib

    return importlib.import_module(f"packlint.reporters.{fmt}").render(result, color=color)


def run(args) -> int:
    from packlint.checking import CheckOptions, check_paths, error_result

    fixing = args.fix or args.diff
    if args.unsafe_fixes and not fixing:
        raise PacklintError("--unsafe-fixes needs --fix or --diff")
    if fixing and (args.baseline or args.write_baseline):
        raise PacklintError("--fix and --diff cannot be combined with --baseline or --write-baseline")
    try:
        options = CheckOptions(
            cli=cli_settings(args),
            inherit_env=args.inherit_env,
            script_args=args.script_args,
            stdin_filename=args.stdin_filename,
            baseline=args.baseline,
            write_baseline=args.write_baseline,
        )
        options.result_cache = True  # (replays unchanged scripts: packlint.result_cache)
        if fixing:
            from packlint.cli.fix import run_fixes

            status = run_fixes(args, options)
            if status is not None:
                return status
        result = check_paths(args.paths, options)
    except PacklintError as exc:
        if args.format == "text":
            raise
        # a run-level error: one line on stderr, and still a valid document on stdout
        print(f"packlint: error: {exc.one_line()}", file=sys.stderr)
        _emit(args, render(args.format, error_result(exc.one_line())))
        return exc.exit_code
    from packlint.reporters.escape import terminal_safe

    for e in result.file_errors:
        print(f"packlint: error: {terminal_safe(e.line())}", file=sys.stderr)
    if result.failed and args.format == "text" and not result.findings and not result.files:
        return result.exit_code(args.exit_zero)  # exit 2, nothing checked: only the error (no "All clear")
    if args.severity:
        result.filter_display(args.severity)
    out_stream = sys.stdout
    color = args.format == "text" and args.output_file is None and use_color(args.color, out_stream)
    if args.statistics:
        _emit(args, statistics(result, args.format))
    elif args.quiet and args.format == "text":
        from packlint.reporters.text import render_quiet

        _emit(args, render_quiet(result, color=color))
    else:
        _emit(args, render(args.format, result, color=color))
    if result.baseline_written:
        n = len(result.findings) + result.baselined
        print(
            f"packlint: wrote {n} finding{'' if n == 1 else 's'} to the baseline {result.baseline_written}",
            file=sys.stderr,
        )
    return result.exit_code(args.exit_zero)


def statistics(result, fmt: str) -> str:
    """Findings per rule code, most frequent first (ruff's `--statistics`); json with --output-format json."""
    counts: dict[str, list] = {}
    for f in result.findings:
        entry = counts.setdefault(f.code, [0, f.name, f.severity, 0])
        entry[0] += 1
        entry[3] += 1 if f.fix is not None else 0
    rows = sorted(counts.items(), key=lambda kv: (-kv[1][0], kv[0]))
    if fmt == "json":
        import json

        return (
            json.dumps(
                [{"code": c, "name": n, "severity": s, "count": k, "fixable": fx} for c, (k, n, s, fx) in rows],
                indent=2,
            )
            + "\n"
        )
    width = max((len(str(k)) for _, (k, *_r) in rows), default=1)
    lines = [f"{k:>{width}}\t{c}\t{'[*] ' if fx else ''}{n} [{s}]" for c, (k, n, s, fx) in rows]
    no_launch = sorted(getattr(result, "no_launch_files", []))
    if no_launch:  # never silently clean (issue 27): the files in which no launch was found
        lines.append(f"no launch found in {len(no_launch)} file{'' if len(no_launch) == 1 else 's'}:")
        lines.extend(f"  {p}" for p in no_launch)
    return "\n".join(lines) + ("\n" if lines else "")


def _emit(args, text: str) -> None:
    data = text.encode("utf-8", "backslashreplace")  # (the reporters escape what they print; a safety net)
    if args.output_file:
        try:
            with open(args.output_file, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise PacklintError(
                f"cannot write the report: {exc.strerror or exc}", path=args.output_file, exit_code=EXIT_USAGE
            ) from None
        return
    write_stdout(data)


def write_stdout(data: bytes) -> None:
    """Write to stdout; a full disk or a closed pipe is a one-line error (exit 2), never an internal
    error, and nothing more is written (stdout is pointed at /dev/null, so the flush at exit is quiet)."""
    try:
        sys.stdout.flush()
        out = getattr(sys.stdout, "buffer", None)
        if out is None:
            sys.stdout.write(data.decode("utf-8"))
        else:
            out.write(data)
        sys.stdout.flush()
    except OSError as exc:
        try:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, sys.stdout.fileno())
            os.close(fd)
        except (OSError, ValueError, AttributeError):
            pass
        raise PacklintError(
            f"cannot write the report: {exc.strerror or exc}", path="<stdout>", exit_code=EXIT_USAGE
        ) from None
