"""Command-line entry point: parses the sub-command and hands off to its module (imported lazily,
so `packlint check` never pays for what `packlint probe` needs)."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from packlint import __version__
from packlint.errors import EXIT_USAGE, PacklintError

# sub-command -> module exposing `add_arguments(parser)` and `run(args) -> int`
COMMANDS = {
    "inspect": ("packlint.cli.inspect", "show the launch model: every launch, its env and flags"),
    "check": ("packlint.cli.check", "find packing mistakes in launch scripts"),
    "rules": ("packlint.cli.rules", "list every rule"),
    "explain": ("packlint.cli.explain", "show a rule's documentation"),
    "probe": ("packlint.cli.probe", "prove packed attention is block-diagonal: one real forward"),
    "run": (
        "packlint.cli.run",
        "the launch gate: check SCRIPT with the real environment and ARGS, then exec bash SCRIPT ARGS",
    ),
    "config": ("packlint.cli.config", "show the settings in effect for a path and where each comes from"),
    "code-base": ("packlint.cli.codebase", "show what packlint reads from a code base: flags, env reads"),
    "clean": ("packlint.cli.clean", "remove packlint's caches (rule table, stacks table, code-base facts)"),
    "server": ("packlint.cli.server", "the editor server: Language Server Protocol over stdio (needs packlint[lsp])"),
}


def _terminal_columns() -> int:
    """shutil.get_terminal_size().columns, without importing shutil (which loads bz2 and lzma)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help layout. argparse builds a formatter for every `add_argument`, and the stock one
    imports shutil to size itself: 3 ms of every start, for help text that is rarely printed."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _terminal_columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """argparse with a "did you mean" for unknown options and sub-commands (ruff and git do this)."""

    def _known_options(self) -> list[str]:
        found = [o for o in self._option_string_actions if o.startswith("--")]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for p in action.choices.values():
                    found.extend(o for o in p._option_string_actions if o.startswith("--"))
        return sorted(set(found))

    def error(self, message: str):
        import difflib
        import re

        hints = []
        m = re.match(r"unrecognized arguments: (.*)", message)
        if m:
            known = self._known_options()
            for word in m.group(1).split():
                if word.startswith("--"):
                    close = difflib.get_close_matches(word.split("=", 1)[0], known, n=1, cutoff=0.6)
                    if close:
                        hints.append(f"{word}: did you mean {close[0]}?")
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), choices, n=1, cutoff=0.6)
            if close:
                hints.append(f"did you mean '{close[0]}'?")
        if hints:
            message = f"{message} ({'; '.join(hints)})"
        super().error(message)


# the commands whose process ends with them: `main` runs them with the cyclic garbage collector off
_SHORT_LIVED = ("check", "inspect", "rules", "explain", "config", "code-base", "clean")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; with `only`, just that sub-command's module is imported (start-up time:
    `packlint check` should not pay for importing the probe's argument set-up)."""
    parser = _Parser(
        prog="packlint",
        description="Catch sequence-packing mistakes in training launch scripts.",
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"packlint {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, (module_name, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text, formatter_class=_Formatter)
        if only is None or name == only:
            importlib.import_module(module_name).add_arguments(p)
    return parser


def _split_script_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Everything after a bare `--` is the checked script's own positional arguments."""
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, []


def main(argv: list[str] | None = None) -> int:
    """The command line. The cyclic garbage collector is off while a command runs (as `check_paths` has it):
    the imports and the reports make tens of thousands of objects and no garbage cycles, and its passes
    over them cost ~10 ms of a ~90 ms `packlint check FILE`. Not for the commands that run a model, a
    script or an editor session (probe, run, server), nor in the caller of an in-process `main` after it."""
    import gc

    enabled = gc.isenabled()
    argv = list(sys.argv[1:] if argv is None else argv)
    if next((a for a in argv if not a.startswith("-")), None) in _SHORT_LIVED:
        gc.disable()
    try:
        return _main(argv)
    finally:
        if enabled:
            gc.enable()


def entry() -> None:
    """The console script (and `python -m packlint`): `main`, then, for the short-lived commands, the process ends
    at once once its output is flushed (`os._exit`, as mypy's `--fast-exit`): the interpreter's teardown frees the
    run's memos (the launched code's syntax trees and facts) one object at a time, a third of the CPU of a cold
    single-process check of a 600-script repository. Everything a command writes (reports, caches) is written and
    closed before `main` returns; a process that embeds `main` keeps the usual exit (and its collector)."""
    argv = sys.argv[1:]
    if next((a for a in argv if not a.startswith("-")), None) not in _SHORT_LIVED:
        sys.exit(main(argv))
    # the collector stays off to the end: `main` turning it back on would make the next allocation pass over every
    # object the run made since the last pass (millions after a repository's check: ~7% of its CPU) just before exiting
    import gc

    gc.disable()
    exit_now(_main(argv))


def exit_now(code: int) -> None:
    """End the process at once with `code`, its output flushed (entry)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # (a closed pipe: nothing more can be said)
        pass
    os._exit(code)


def _main(argv: list[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    if command == "run":
        # `packlint run [OPTIONS] SCRIPT [ARGS...]`: everything after SCRIPT is the script's, its own
        # `--` and options included; only the options before SCRIPT are packlint's
        from packlint.cli.run import split_argv

        i = argv.index("run")
        opts, rest = split_argv(argv[i + 1 :])
        own = argv[: i + 1] + opts + (["--", rest[0]] if rest else [])
        script_args = rest[1:]
    else:
        own, script_args = _split_script_args(argv)
    first = next((a for a in own if not a.startswith("-")), None)
    parser = build_parser(first if first in COMMANDS else None)
    try:
        args = parser.parse_args(own)
    except SystemExit as exc:  # argparse already printed its message
        return EXIT_USAGE if exc.code not in (0, None) else 0
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    args.script_args = script_args
    module_name = COMMANDS[args.command][0]
    try:
        return importlib.import_module(module_name).run(args)
    except PacklintError as exc:
        print(f"packlint: error: {exc.one_line()}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except RecursionError:
        print("packlint: error: the input is nested too deeply to analyse", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        import errno

        if exc.errno not in (errno.ENOSPC, errno.EPIPE, errno.EDQUOT, errno.EFBIG, errno.EIO):
            return _internal_error(exc)
        # a full disk or a closed pipe on the output (H33): one line, and a quiet exit
        try:
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, sys.stdout.fileno())
            os.close(fd)
        except (OSError, ValueError, AttributeError):
            pass
        print(f"packlint: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        return _internal_error(exc)


def _internal_error(exc: BaseException) -> int:
    """A bug in packlint: one line, never a traceback (unless asked for)."""
    if os.environ.get("PACKLINT_DEBUG"):
        raise exc
    print(
        f"packlint: error: internal error: {type(exc).__name__}: {exc} -- this is a bug in packlint, "
        "please report it (PACKLINT_DEBUG=1 shows a traceback)",
        file=sys.stderr,
    )
    return EXIT_USAGE
