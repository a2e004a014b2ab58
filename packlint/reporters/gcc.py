"""`--format gcc`: `file:line:col: error: message [PK001]`, one line per finding, for editors (vim's
quickfix, Emacs compilation mode) and CI problem matchers. Severities: error, warning, note (info).
Files packlint could not check: `file:1:1: error: message [packlint-error]`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packlint.checking import CheckResult

from packlint.reporters.escape import terminal_safe

LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _one_line(text: str) -> str:
    return terminal_safe(" ".join(text.split()))


def render(result: CheckResult, **_: object) -> str:
    out = []
    for f in result.findings:
        loc = f.location
        out.append(
            f"{terminal_safe(loc.path)}:{loc.line}:{loc.column}: {LEVEL[f.severity]}: {_one_line(f.message)} [{f.code}]"
        )
    for e in result.file_errors:
        kind = "packlint-internal-error" if e.kind == "internal" else "packlint-error"
        where = f"{terminal_safe(e.path)}:1:1: " if e.path else "packlint: "
        out.append(f"{where}error: {_one_line(e.message)} [{kind}]")
    return "".join(line + "\n" for line in out)
