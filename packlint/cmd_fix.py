"""`packlint check --fix / --unsafe-fixes / --diff`: the fix loop of packlint.fixes run over the checked
files. `--fix` writes the files and lets `check` report what is left; `--diff` prints a unified diff
and writes nothing (exit 1 when there is a diff, like ruff). stdin: `--fix` prints the fixed script."""

from __future__ import annotations

import sys

from packlint.errors import PacklintError


def text_checker(path: str, options):
    """A function text -> findings for `path` (checked as if the file held `text`; `source` resolves
    beside it, its configuration applies)."""
    from packlint.checking import CheckOptions, check_paths

    def check(text: str):
        opts = CheckOptions(
            cli=options.cli,
            inherit_env=options.inherit_env,
            script_args=options.script_args,
            stdin_filename=path,
            read_stdin=lambda: text.encode("utf-8", "surrogatepass"),
        )
        result = check_paths(["-"], opts)
        return result.findings

    return check


def _outside_checked_tree(path: str, roots: list[str]) -> str | None:
    """Why `path` (found under one of the command-line `roots`) must not be rewritten, or None: a
    symbolic link found in a checked directory that leads out of it. A file named on the command line
    is fixed where its link points (the user named it)."""
    import os

    if any(os.path.abspath(path) == os.path.abspath(r) for r in roots):
        return None
    real = os.path.realpath(path)
    for r in roots:
        top = os.path.realpath(r)
        if os.path.isdir(top) and (real == top or real.startswith(top.rstrip(os.sep) + os.sep)):
            return None
    return "a symbolic link to a file outside the checked tree"


def _why(exc: PacklintError) -> str:
    msg = exc.message
    return "the file changed since it was checked" if msg.startswith("changed since") else msg


def run_fixes(args, options) -> int | None:
    """Fix every file; None when `check` should go on and report (after --fix), else the exit status."""
    from packlint.discover import STDIN, discover
    from packlint.errors import EXIT_FINDINGS, EXIT_OK
    from packlint.fixes import fix_text, read_fixable, unified_diff
    from packlint.safe_io import atomic_write

    paths = args.paths or ["."]
    files, _errors = discover(paths)  # unreadable paths: reported by the check that follows
    unsafe = args.unsafe_fixes
    applied = 0
    diffs = []
    for path in files:
        if path == STDIN:
            data = options.read_stdin()
            display = options.stdin_filename or "-"
            text = data.decode("utf-8", "surrogateescape")
            outcome = fix_text(display, text, text_checker(display, options), unsafe=unsafe)
            if args.diff:
                diffs.append(unified_diff(outcome))
                applied += outcome.applied
                continue
            from packlint.cmd_check import write_stdout

            write_stdout(outcome.text.encode("utf-8", "surrogateescape"))  # (the script's own bytes back)
            return EXIT_OK
        from pathlib import Path

        from packlint.source import display_path

        display = display_path(Path(path))
        try:
            text, why = read_fixable(path)
        except (PacklintError, OSError):  # unreadable: the check that follows reports it
            continue
        if text is None:
            print(f"packlint: {display}: {why}", file=sys.stderr)
            continue
        outcome = fix_text(display, text, text_checker(display, options), unsafe=unsafe)
        if outcome.note:
            print(f"packlint: {display}: {outcome.note}", file=sys.stderr)
        applied += outcome.applied
        if not outcome.changed:
            continue
        if args.diff:
            diffs.append(unified_diff(outcome))
            continue
        outside = _outside_checked_tree(path, paths)
        if outside:
            print(f"packlint: {display}: not fixed: {outside}", file=sys.stderr)
            applied -= outcome.applied
            continue
        try:  # temp file, fsync, rename; only if the file still holds what was checked
            atomic_write(path, outcome.text.encode("utf-8"), follow=True, what="script", expect=text.encode("utf-8"))
        except PacklintError as exc:
            print(f"packlint: {display}: not fixed: {_why(exc)}", file=sys.stderr)
            applied -= outcome.applied
    n = f"{applied} fix{'' if applied == 1 else 'es'}"
    if args.diff:
        from packlint.cmd_check import write_stdout

        write_stdout("".join(diffs).encode("utf-8", "surrogateescape"))
        print(
            f"packlint: would apply {n}" + ("" if unsafe else " (safe only; --unsafe-fixes for the rest)"),
            file=sys.stderr,
        )
        return EXIT_FINDINGS if any(diffs) else EXIT_OK
    print(f"packlint: applied {n}", file=sys.stderr)
    return None
