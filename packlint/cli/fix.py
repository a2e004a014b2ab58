"""`packlint check --fix / --unsafe-fixes / --diff`: the fix loop of packlint.fixes run over the checked
files, then packlint.configfix's over the config files their findings point into (edited only when the
config file is itself among the checked files: named, or under a checked directory; docs/fixes.md).
`--fix` writes the files and lets `check` report what is left; `--diff` prints a unified diff
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


def _deliver(
    outcome,
    display: str,
    diffs: list[str] | None,
    refuse: str | None,
    path: str,
    checked: str,
    what: str,
    follow: bool = False,
) -> int:
    """One file's fixes handed on: its note said, its diff kept (`--diff`), else `path` rewritten (temp file,
    fsync, rename; only if it still holds the `checked` text). The fixes it counts: none when `refuse`
    says why the file may not be written, or the write fails (said on stderr)."""
    if outcome.note:
        print(f"packlint: {display}: {outcome.note}", file=sys.stderr)
    if not outcome.changed:
        return int(outcome.applied)
    if diffs is not None:
        from packlint.fixes import unified_diff

        diffs.append(unified_diff(outcome))
        return int(outcome.applied)
    if refuse:
        print(f"packlint: {display}: not fixed: {refuse}", file=sys.stderr)
        return 0
    from packlint.safe_io import atomic_write

    try:
        atomic_write(path, outcome.text.encode("utf-8"), follow=follow, what=what, expect=checked.encode("utf-8"))
    except PacklintError as exc:
        print(f"packlint: {display}: not fixed: {_why(exc)}", file=sys.stderr)
        return 0
    return int(outcome.applied)


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


def _recording(check, seen: list):
    """`check`, keeping the findings of its first call (the config-file fixes they carry)."""

    def wrapped(text: str):
        findings = check(text)
        if not seen:
            seen.append(findings)
        return findings

    return wrapped


class PathsChecker:
    """text -> findings of checking `paths` with the config file `config` holding `text` (the config
    file's own check when it is one of `paths`, the scripts that name it otherwise); `models` keeps the
    launch models of the last call (packlint.configfix compares their merged settings)."""

    def __init__(self, paths: list[str], config: str, options) -> None:
        self.paths, self.config, self.options = paths, config, options
        self.models: list[dict] = []

    def __call__(self, text: str):
        import os

        from packlint.checking import CheckOptions, check_paths
        from packlint.configs import set_text_override

        options, config = self.options, self.config
        set_text_override(os.path.abspath(config), text.encode("utf-8", "surrogatepass"))
        findings = []
        self.models = []
        for p in self.paths:
            if os.path.abspath(p) == os.path.abspath(config):
                opts = CheckOptions(
                    cli=options.cli,
                    inherit_env=options.inherit_env,
                    script_args=options.script_args,
                    stdin_filename=config,
                    read_stdin=lambda: text.encode("utf-8", "surrogatepass"),
                )
                opts.keep_models = True
                result = check_paths(["-"], opts)
            else:
                opts = CheckOptions(cli=options.cli, inherit_env=options.inherit_env, script_args=options.script_args)
                opts.keep_models = True
                result = check_paths([p], opts)
            findings.extend(result.findings)
            self.models.extend(result.models.values())
        return findings


def _config_editable(path: str, roots: list[str]) -> str | None:
    """Why a config file a fix would edit must not be written, or None: it must be a file packlint was
    asked to check (named on the command line, or under a directory named there), a regular file and
    not a symbolic link, and inside that tree once links are resolved (docs/fixes.md)."""
    import os

    if os.path.islink(path):
        return "a symbolic link is not rewritten"
    if not os.path.isfile(path):
        return "not a regular file"
    real = os.path.realpath(path)
    for r in roots:
        if r == "-":
            continue
        top = os.path.realpath(r)
        if real == top or os.path.isdir(top) and real.startswith(top.rstrip(os.sep) + os.sep):
            return None
    return "it was not among the files checked (name it on the command line, or check the directory holding it)"


def _fix_stdin(args, options, diffs: list[str]) -> int | None:
    """The script (or config file) read from stdin: its fixed text printed (None), or with `--diff` its
    diff kept and the number of fixes returned."""
    from packlint.configfix import fix_config_text
    from packlint.configs.standalone import is_config_name
    from packlint.fixes import fix_text, unified_diff

    unsafe = args.unsafe_fixes
    display = options.stdin_filename or "-"
    given = options.read_stdin().decode("utf-8", "surrogateescape")
    if is_config_name(display):
        outcome = fix_config_text(display, given, text_checker(display, options), unsafe=unsafe)
        for refusal in outcome.refusals:
            print(f"packlint: {display}: {refusal}", file=sys.stderr)
    else:
        outcome = fix_text(display, given, text_checker(display, options), unsafe=unsafe)
    if args.diff:
        diffs.append(unified_diff(outcome))
        return int(outcome.applied)
    from packlint.cli.check import write_stdout

    write_stdout(outcome.text.encode("utf-8", "surrogateescape"))  # (the script's own bytes back)
    return None


def _fix_script(args, options, path: str, paths: list[str], diffs, configs: dict[str, list[str]]) -> int:
    """One checked script's fixes (the number applied); the config files its findings carry a fix into
    are added to `configs` (config file as findings name it -> the checked files that lead there)."""
    from pathlib import Path

    from packlint.configfix import is_config_fix
    from packlint.fixes import fix_text, read_fixable
    from packlint.source import display_path

    unsafe = args.unsafe_fixes
    display = display_path(Path(path))
    try:
        text, why = read_fixable(path)
    except (PacklintError, OSError):  # unreadable: the check that follows reports it
        return 0
    if text is None:
        print(f"packlint: {display}: {why}", file=sys.stderr)
        return 0
    first: list = []
    outcome = fix_text(display, text, _recording(text_checker(display, options), first), unsafe=unsafe)
    for f in first[0] if first else []:
        if not is_config_fix(f) or f.fix is None:
            continue
        wanted = unsafe or f.fix.applicability == "safe"
        if f.fix.refused and f.fix.start.path == display:
            if wanted:  # (a config fix whose value is set right here)
                where = f"{f.location.line}:{f.location.column}"
                print(f"packlint: {display}: {f.code} at {where}: no fix: {f.fix.refused}", file=sys.stderr)
        elif f.fix.start.path != display and wanted:
            configs.setdefault(f.fix.start.path, []).append(path)
    refuse = _outside_checked_tree(path, paths)
    return _deliver(outcome, display, diffs, refuse, path, text, "script", follow=True)


def _fix_config(args, options, config: str, sources: list[str], paths: list[str], diffs) -> int:
    """The fixes the checked files' findings carry into one config file (the number applied)."""
    from packlint.configfix import fix_config_text
    from packlint.configs import clear_text_override
    from packlint.fixes import read_fixable

    why_not = _config_editable(config, paths)
    if why_not is not None:
        print(f"packlint: {config}: not fixed: {why_not}", file=sys.stderr)
        return 0
    try:
        ctext, cwhy = read_fixable(config)
    except (PacklintError, OSError):
        return 0
    if ctext is None:
        print(f"packlint: {config}: {cwhy}", file=sys.stderr)
        return 0
    try:
        outcome = fix_config_text(config, ctext, PathsChecker(sources, config, options), unsafe=args.unsafe_fixes)
    finally:
        clear_text_override(config)
    for refusal in outcome.refusals:
        print(f"packlint: {config}: {refusal}", file=sys.stderr)
    return _deliver(outcome, config, diffs, None, config, ctext, "config file")


def run_fixes(args, options) -> int | None:
    """Fix every file; None when `check` should go on and report (after --fix), else the exit status.
    Scripts first (packlint.fixes), then the config files the findings point into (packlint.configfix)."""
    from pathlib import Path

    from packlint.configs.standalone import is_config_name
    from packlint.discover import STDIN, discover
    from packlint.errors import EXIT_FINDINGS, EXIT_OK
    from packlint.source import display_path

    paths = args.paths or ["."]
    files, _errors = discover(paths)  # unreadable paths: reported by the check that follows
    applied = 0
    diffs: list[str] = []
    keep = diffs if args.diff else None
    configs: dict[str, list[str]] = {}
    for path in files:
        if path == STDIN:
            n = _fix_stdin(args, options, diffs)
            if n is None:
                return EXIT_OK
            applied += n
        elif is_config_name(path):
            configs.setdefault(display_path(Path(path)), []).append(path)
        else:
            applied += _fix_script(args, options, path, paths, keep, configs)
    for config, sources in configs.items():
        applied += _fix_config(args, options, config, sources, paths, keep)
    said = f"{applied} fix{'' if applied == 1 else 'es'}"
    if args.diff:
        from packlint.cli.check import write_stdout

        write_stdout("".join(diffs).encode("utf-8", "surrogateescape"))
        print(
            f"packlint: would apply {said}"
            + ("" if args.unsafe_fixes else " (safe only; --unsafe-fixes for the rest)"),
            file=sys.stderr,
        )
        return EXIT_FINDINGS if any(diffs) else EXIT_OK
    print(f"packlint: applied {said}", file=sys.stderr)
    return None
