"""`packlint run [OPTIONS] SCRIPT [ARGS...]`: the launch gate.

Checks SCRIPT with the caller's real environment (`os.environ`) and the real positional ARGS, exactly
as the launch will see them. Findings at or above --fail-on: they are printed and the script is not
launched (exit 1). Otherwise packlint replaces itself with `bash -- SCRIPT ARGS...` (exec: same pid,
so signals, stdin/stdout/stderr and the exit status belong to the script). SCRIPT must be a regular
file (a directory, FIFO or device is refused before any check), and it is launched only if it still
holds the bytes that were checked.

Everything packlint prints goes to stderr; stdout is the script's. Options are read only before
SCRIPT: everything after it (a `--` and options that look like packlint's included) is the script's.

Exit status when it does not launch: 1 findings (or a failed probe), 2 usage, configuration or
internal error; when it launches, the script's own status. With --guard the script runs as a child
process (packlint.guard.launch) and a guard that failed in fail mode makes the status nonzero: the
script's own when it is nonzero, else 3.
"""

from __future__ import annotations

import os
import sys

from packlint.errors import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, PacklintError

FORMATS = ("text", "json", "github", "gcc")
PROBE_MISSING = "the probe needs torch: pip install 'packlint[probe] @ git+https://github.com/packlint/packlint'"


def add_arguments(parser) -> None:
    from packlint.cli.check import add_selection_arguments

    parser.add_argument("script", help="the launch script to check and then run with bash")
    parser.add_argument("--dry-run", action="store_true", help="check only; never launch")
    parser.add_argument(
        "--force", action="store_true", help="launch even when there are findings (and say so on stderr)"
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help="after the static check, run the runtime probe on the script's launches "
        "(needs packlint[probe]); a failed probe blocks the launch",
    )
    parser.add_argument(
        "--guard",
        action="store_true",
        help="check the first real batch inside the launched training processes (transformers Trainer, "
        "Megatron-Core GPTModel/LLaVAModel) before the first optimizer step; a failure stops the run (exit 3)",
    )
    parser.add_argument("--guard-mode", choices=["fail", "warn"], default="fail", help="what a failed guard does")
    parser.add_argument(
        "--guard-report", metavar="PATH", help="the guard's JSON report (default: a new temporary file)"
    )
    parser.add_argument(
        "--guard-measure", action="store_true", help="also run one packed-vs-alone forward of the first row"
    )
    add_selection_arguments(parser, assumed_env=False)
    parser.add_argument("--format", choices=FORMATS, default="text", help="how findings are printed (on stderr)")
    parser.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    parser.epilog = (
        "Options go before SCRIPT; everything after SCRIPT is passed to it unchanged. "
        "Exit: the script's own status when launched; 1 findings; 2 errors."
    )


def split_argv(tokens: list[str]) -> tuple[list[str], list[str]]:
    """(packlint's options, [SCRIPT, ARGS...]): options end at the first word that is not an option
    or an option's value, or at `--`."""
    import argparse

    probe = argparse.ArgumentParser(add_help=True)
    add_arguments(probe)
    actions = probe._option_string_actions  # noqa: SLF001 - argparse has no public lookup

    def lookup(name: str):
        if name in actions:
            return actions[name]
        if name.startswith("--"):
            matches = [a for opt, a in actions.items() if opt.startswith(name)]
            if len({id(a) for a in matches}) == 1:
                return matches[0]
        return None

    i = 0
    while i < len(tokens):
        t = tokens[i]
        if t == "--":
            return tokens[:i], tokens[i + 1 :]
        if t.startswith("-") and t != "-":
            action = lookup(t.split("=", 1)[0])
            if action is None or action.nargs == 0 or "=" in t:
                i += 1
            else:
                i += 2
            continue
        return tokens[:i], tokens[i:]
    return tokens, []


def _say(message: str) -> None:
    print(f"packlint: {message}", file=sys.stderr)


def run(args) -> int:
    from packlint.checking import CheckOptions, check_paths
    from packlint.cli.check import cli_settings, render, use_color

    script = args.script
    if script == "-":
        raise PacklintError("`packlint run` needs a script file (stdin is the script's own)")
    try:  # a regular file, or a refusal before anything is checked (R12)
        checked = _script_bytes(script)
    except PacklintError as exc:
        _say(f"error: {exc.one_line()}")
        _say(f"not launching {script}: it could not be checked")
        return EXIT_USAGE
    options = CheckOptions(
        cli=cli_settings(args), real_env=True, script_args=list(args.script_args), apply_exclude=False
    )
    result = check_paths([script], options)
    for e in result.file_errors:
        _say(f"error: {e.line()}")
    if result.findings:
        color = args.format == "text" and use_color(args.color, sys.stderr)
        sys.stderr.write(render(args.format, result, color=color))
    blocking = result.blocking
    if result.failed:
        if args.dry_run:
            return EXIT_USAGE
        if not args.force:
            _say(f"not launching {script}: it could not be checked (--force launches anyway)")
            return EXIT_USAGE
        _say(f"--force: launching {script} although it could not be checked")
    elif blocking:
        s = "" if blocking == 1 else "s"
        if args.dry_run:
            return EXIT_FINDINGS
        if not args.force:
            _say(f"not launching {script}: {blocking} finding{s} at or above --fail-on (--force launches anyway)")
            return EXIT_FINDINGS
        _say(f"--force: launching {script} despite {blocking} finding{s} at or above --fail-on")
    if args.probe:
        code = _probe(result, script)
        if code != EXIT_OK:
            if args.dry_run or not args.force:
                if not args.dry_run and code != EXIT_USAGE:
                    _say(f"not launching {script}: the runtime probe failed (--force launches anyway)")
                # not launched because of a check: 1, as for findings (the verdict is printed above); the
                # probe's own 3 (DIFFERS) would read as the guard's stop (3) of a launched run
                return code if code == EXIT_USAGE else EXIT_FINDINGS
            _say(f"--force: launching {script} although the runtime probe failed")
    if args.dry_run:
        return EXIT_FINDINGS if blocking else EXIT_OK
    if args.guard:
        from packlint.guard.launch import launch_guarded

        if not _still_checked(script, checked):
            _say(f"not launching {script}: it changed while it was checked")
            return EXIT_USAGE
        return launch_guarded(script, list(args.script_args), args)
    return launch(script, list(args.script_args), checked)


def _script_bytes(script: str) -> tuple[bytes, tuple[int, ...]]:
    """The script's bytes and identity (device, inode, size, mtime): a regular file (not a directory,
    FIFO or device) within the size limit, read through one descriptor."""
    from packlint.safe_io import open_regular, read_open
    from packlint.source import MAX_SCRIPT_BYTES

    fd, st = open_regular(script, MAX_SCRIPT_BYTES, "", display=script)
    try:
        return read_open(fd, st, MAX_SCRIPT_BYTES, "", script), _identity(st)
    finally:
        os.close(fd)


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _probe(result, script: str) -> int:
    """Run the runtime probe on the checked script's launch model (issue 6's runtime_probe)."""
    model = next(iter(result.models.values()), None)
    if model is None:
        _say(f"error: {script}: no launch model to probe")
        return EXIT_USAGE
    try:
        from runtime_probe.launches import has_gate_env, has_training_flags, probe_model, select_hf_targets
        from runtime_probe.probe import TorchMissing
        from runtime_probe.settings import ProbeUsageError
    except ImportError:
        _say(f"error: {PROBE_MISSING}")
        return EXIT_USAGE
    from packlint.model_view import as_model
    from packlint.model_view import launches as model_launches

    launches = model_launches(as_model(model)) if model else []
    # Megatron/LLaVA launches, and HF-stack launches (TRL, LLaMA-Factory, axolotl, ms-swift, OpenRLHF,
    # verl) whose packing switches the HF probe reads: it runs a tiny model of the configured architecture
    if not any(has_training_flags(ln) or has_gate_env(ln) for ln in launches) and not select_hf_targets(model)[2]:
        # a script that trains nothing (a data-prep step, a helper) is not a reason to block its launch
        _say(f"probe: {script}: no training launch to probe")
        return EXIT_OK
    try:
        probe_result = probe_model(model)
    except TorchMissing:
        _say(f"error: {PROBE_MISSING}")
        return EXIT_USAGE
    except ImportError:
        _say(f"error: {PROBE_MISSING}")
        return EXIT_USAGE
    except ProbeUsageError as exc:
        _say(f"error: probe: {exc}")
        return EXIT_USAGE
    sys.stderr.write(probe_result.render_text().rstrip("\n") + "\n")
    return probe_result.exit_code


def _still_checked(script: str, checked: tuple[bytes, tuple[int, ...]]) -> bool:
    """The file at `script` is, right now, the one that was checked: the same file (device, inode,
    size, mtime) as when it was first read, its bytes (read again through one descriptor) unchanged,
    and the name still leading to it, as the last step before bash is started (R23). What remains is
    the time between this and bash's own open of the name: microseconds, not the length of a check."""
    try:
        data, identity = _script_bytes(script)
        return data == checked[0] and identity == checked[1] and _identity(os.stat(script)) == identity
    except (OSError, PacklintError):
        return False


def launch(script: str, script_args: list[str], checked: tuple[bytes, tuple[int, ...]] | None = None) -> int:
    """Replace this process with `bash -- SCRIPT ARGS...` (POSIX exec; elsewhere a child process). The
    `--` ends bash's options: a script named `-c` or `-x.sh` is run as the file that was checked (R11).
    bash is the one found in an absolute PATH entry (never `./bash`, R28); with `checked`, the script
    is launched only if it still holds those bytes (`_still_checked`, the last step before the exec)."""
    from packlint.tools import find_program

    bash = find_program("bash")
    if bash is None:
        _say("error: cannot run bash: not found in an absolute PATH entry")
        return 127
    argv = ["bash", "--", script, *script_args]
    sys.stdout.flush()
    sys.stderr.flush()
    if checked is not None and not _still_checked(script, checked):
        _say(f"not launching {script}: it changed while it was checked")
        return EXIT_USAGE
    if os.name != "posix":  # pragma: no cover - no exec semantics outside POSIX
        import subprocess

        return subprocess.call([bash, *argv[1:]])
    try:
        os.execv(bash, argv)
    except OSError as exc:
        _say(f"error: cannot run bash: {exc.strerror or exc}")
        return 127
