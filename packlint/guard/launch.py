"""`packlint run --guard SCRIPT ARGS...`: launch the script with the guard in every Python process it starts.

The script runs as a child process (not exec) so that the guard's report can be read when it ends:
PYTHONPATH gets packlint/guard/_site first (its sitecustomize installs packlint.guard.inject), and
PACKLINT_GUARD, PACKLINT_GUARD_REPORT, PACKLINT_GUARD_MEASURE and PACKLINT_GUARD_HOME are set. SIGINT,
SIGTERM and SIGHUP are passed on to the child. Exit status: the script's own; 3 when it is 0 but a rank
reported a guard failure in fail mode (a launcher or a script that swallows the training process's status
cannot hide it). No torch here.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
from typing import Any

from packlint.guard.settings import ENV_MEASURE, ENV_MODE, ENV_REPORT, EXIT_GUARD

SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_site")
HOME = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _say(message: str) -> None:
    print(f"packlint: {message}", file=sys.stderr, flush=True)


def guard_env(base: dict[str, str], mode: str, report: str, measure: bool) -> dict[str, str]:
    env = dict(base)
    old = env.get("PYTHONPATH", "")
    env["PYTHONPATH"] = SITE_DIR + (os.pathsep + old if old else "")
    env[ENV_MODE] = mode
    env[ENV_REPORT] = report
    if measure:
        env[ENV_MEASURE] = "1"
    env["PACKLINT_GUARD_HOME"] = HOME
    return env


def read_reports(report: str) -> list[dict[str, Any]]:
    """Rank 0's report and any `<report>.rank<N>` another rank wrote when it failed."""
    out = []
    for path in [report, *sorted(glob.glob(glob.escape(report) + ".rank*"))]:
        from packlint.safe_io import read_regular

        raw = read_regular(path, 16 << 20)  # (the guard's own report files: regular, bounded)
        try:
            data = json.loads(raw) if raw is not None else None
        except ValueError:
            continue
        if isinstance(data, dict):
            out.append(data)
    return out


def _run_child(argv: list[str], env: dict[str, str]) -> int:
    proc = subprocess.Popen(argv, env=env)
    forwarded = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    saved = {}
    for sig in forwarded:
        try:
            saved[sig] = signal.signal(sig, lambda signum, frame: proc.send_signal(signum))
        except (ValueError, OSError):  # not the main thread, or a signal this platform lacks
            pass
    try:
        while True:
            try:
                return proc.wait()
            except InterruptedError:  # pragma: no cover - PEP 475 retries wait() itself
                continue
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


def launch_guarded(script: str, script_args: list[str], args: Any) -> int:
    report = args.guard_report or os.environ.get(ENV_REPORT)
    if not report:
        report = os.path.join(tempfile.mkdtemp(prefix="packlint-guard-"), "guard.json")
    report = os.path.abspath(report)
    for stale in [report, *glob.glob(glob.escape(report) + ".rank*")]:
        try:
            os.unlink(stale)  # a report left by an earlier run must not speak for this one
        except OSError:
            pass
    env = guard_env(dict(os.environ), args.guard_mode, report, args.guard_measure)
    sys.stdout.flush()
    sys.stderr.flush()
    from packlint.tools import find_program

    bash = find_program("bash")  # from an absolute PATH entry, never ./bash (R28)
    if bash is None:
        _say("error: cannot run bash: not found in an absolute PATH entry")
        return 127
    try:
        code = _run_child([bash, "--", script, *script_args], env)
    except OSError as exc:
        _say(f"error: cannot run bash: {exc.strerror or exc}")
        return 127
    code = 128 - code if code < 0 else code  # killed by a signal: the shell's convention
    reports = read_reports(report)
    failed = [r for r in reports if r.get("verdict") == "fail"]
    if not reports:
        _say(f"guard: no report: no launched process ran a guarded model forward ({report})")
    elif failed:
        _say(f"guard: FAIL on {len(failed)} rank(s); report: {report}")
        if args.guard_mode == "fail" and code == 0:
            return EXIT_GUARD
    else:
        _say(f"guard: PASS; report: {report}")
    return code
