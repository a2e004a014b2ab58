"""Run packlint in a subprocess under resource limits set for the child alone (RLIMIT_AS, RLIMIT_CPU),
for the tests of bounded cost (test_bounds.py, test_fuzz.py).

A run that needs more memory or CPU time than these limits fails its test: the child gets a
MemoryError (reported as an internal error, exit 2) or SIGXCPU/SIGKILL. Nothing here measures wall
time; the wall-clock timeout only turns a hang into a failure instead of a stuck CI job."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Address space: the interpreter, tree-sitter and the rule table take ~300 MiB of it; every audit bomb
# needed gigabytes (H14 1.1 GB at 22 lists, H15 8.4 GB).
MEMORY_LIMIT = 1536 << 20
# CPU seconds: a bounded run takes well under 5 s on a loaded 2-core machine; the audit's
# reproductions took 27 s (H14), 9 s (H15), over 120 s (H16), over 90 s (H12), or never ended (Q7).
CPU_LIMIT = 40
HANG_GUARD_S = 600


def _limits(memory: int, cpu: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))

    return apply


def run_limited(
    args: list[str], cwd: Path, *, memory: int = MEMORY_LIMIT, cpu: int = CPU_LIMIT
) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `python -m packlint ARGS` under the limits. A signal (the CPU
    limit) gives a negative exit code."""
    # (the checkout first; an engine installed beside it, such as google-re2 on PYTHONPATH, stays visible)
    env = dict(
        os.environ, NO_COLOR="1", PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    )
    env.pop("PACKLINT_DEBUG", None)
    proc = subprocess.run(
        [sys.executable, "-m", "packlint", *args],
        cwd=cwd,
        capture_output=True,
        timeout=HANG_GUARD_S,
        env=env,
        input=b"",
        preexec_fn=_limits(memory, cpu),
    )
    return proc.returncode, proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")


def assert_clean(rc: int, out: str, err: str) -> None:
    """No traceback, no internal error, an exit code packlint defines."""
    assert rc in (0, 1, 2), f"exit code {rc} (a signal: over the CPU limit?)\n{err[-2000:]}"
    assert "Traceback" not in out + err, err[-3000:]
    assert "internal error" not in err, err[-3000:]


def inspect_limited(path: str, cwd: Path, **limits: int) -> dict:
    rc, out, err = run_limited(["inspect", "--format", "json", path], cwd, **limits)
    assert_clean(rc, out, err)
    assert rc == 0, err
    return json.loads(out)
