"""The guard's verdict: one line on stderr (rank 0, and any rank that fails), a JSON report written
atomically, and, in `fail` mode, the process stopped with exit status 3 before the first optimizer step.

No torch here.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from packlint.guard.settings import EXIT_GUARD, GuardSettings, rank
from runtime_probe.report import FAIL, INFO, PASS, SKIP, Check

WARN = "warn"
__all__ = ["FAIL", "INFO", "PASS", "SKIP", "WARN", "Check", "GuardFailed", "GuardResult", "finish"]


class GuardFailed(SystemExit):
    """Raised in `fail` mode: a SystemExit with status 3, so that nothing past the first forward runs
    (no backward, no optimizer step) and the launcher sees a nonzero status."""

    def __init__(self, line: str) -> None:
        super().__init__(EXIT_GUARD)
        self.line = line

    def __str__(self) -> str:
        return self.line


@dataclass
class GuardResult:
    framework: str  # transformers | megatron-core
    model: str  # the model's class name
    checks: list[Check] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)  # what the batch and the model carry
    leakage: float | None = None
    measured: dict[str, Any] | None = None

    def add(self, name: str, status: str, detail: str, value: Any = None) -> None:
        self.checks.append(Check(name, status, detail, value))

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == FAIL]

    @property
    def warnings(self) -> list[Check]:
        return [c for c in self.checks if c.status == WARN]

    @property
    def verdict(self) -> str:
        return "fail" if self.failed else "pass"

    def line(self, settings: GuardSettings) -> str:
        """`packlint-guard: PASS ...` or `packlint-guard: FAIL <reason>; leakage <x>`: one line."""
        leak = "not measured" if self.leakage is None else f"{self.leakage:.3g}"
        who = f"{self.framework} {self.model}"
        if self.failed:
            first = self.failed[0]
            more = f" (+{len(self.failed) - 1} more)" if len(self.failed) > 1 else ""
            tail = "; warn mode: training goes on" if settings.mode == "warn" else "; stopping before the first step"
            return f"packlint-guard: FAIL {first.name}: {first.detail}{more}; leakage {leak} [{who}]{tail}"
        passed = [c.name for c in self.checks if c.status == PASS]
        warned = f"; {len(self.warnings)} warning(s): {self.warnings[0].detail}" if self.warnings else ""
        return f"packlint-guard: PASS {len(passed)} checks on the first batch; leakage {leak} [{who}]{warned}"

    def to_json(self, settings: GuardSettings) -> dict[str, Any]:
        from runtime_probe.report import _jsonable

        return {
            "tool": "packlint-guard",
            "verdict": self.verdict,
            "mode": settings.mode,
            "rank": rank(),
            "pid": os.getpid(),
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "framework": self.framework,
            "model": self.model,
            "facts": _jsonable(self.facts),
            "checks": [c.to_json() for c in self.checks],
            "leakage": _jsonable(self.leakage),
            "measured": _jsonable(self.measured),
            "line": self.line(settings),
        }


def report_path(settings: GuardSettings, this_rank: int) -> str | None:
    """Rank 0 writes the report file itself; another rank writes `<report>.rank<N>` only when it fails."""
    if not settings.report:
        return None
    return settings.report if this_rank == 0 else f"{settings.report}.rank{this_rank}"


def write_atomic(path: str, data: dict[str, Any]) -> None:
    """A temporary file beside `path`, then os.replace: a reader never sees half a report."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".packlint-guard-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, sort_keys=True)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def finish(result: GuardResult, settings: GuardSettings) -> None:
    """Print the line (rank 0; any rank that fails), write the report, stop in `fail` mode."""
    this_rank = rank()
    line = result.line(settings)
    failed = bool(result.failed)
    if this_rank == 0 or failed:
        prefix = "" if this_rank == 0 else f"[rank {this_rank}] "
        print(prefix + line, file=sys.stderr, flush=True)
    path = report_path(settings, this_rank)
    if path and (this_rank == 0 or failed):
        try:
            write_atomic(path, result.to_json(settings))
        except OSError as exc:
            print(f"packlint-guard: cannot write the report {path}: {exc.strerror or exc}", file=sys.stderr)
    if failed and settings.mode == "fail":
        raise GuardFailed(line)


def say_unguarded(exc: BaseException) -> None:
    """The guard's own failure on a batch: one line, and training goes on (the guard never stops a run
    for a bug of its own)."""
    print(
        f"packlint-guard: ERROR the guard could not check this batch ({type(exc).__name__}: {exc}); "
        "training goes on unguarded",
        file=sys.stderr,
        flush=True,
    )
