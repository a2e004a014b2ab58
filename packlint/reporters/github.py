"""`--format github`: GitHub Actions workflow commands, one annotation per finding.

    ::error file=train.sh,line=12,col=8,endLine=12,endColumn=31,title=PK001 packing-gate-leak::message

error -> `::error`, warning -> `::warning`, info -> `::notice`. Paths are relative to the repository
root (where GitHub looks for them). The annotation body carries the related notes and the help on
further lines. GitHub shows only 10 annotations of each level per step, so a last plain line gives the
totals. Files packlint could not check are `::error` annotations too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packlint.checking import CheckResult

from packlint.baseline import relative_path
from packlint.reporters.escape import github_safe

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}
GITHUB_LIMIT = 10  # annotations of one level GitHub shows per step


def escape_data(text: str) -> str:
    return github_safe(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def render(result: CheckResult, **_: object) -> str:
    out = []
    counts = {"error": 0, "warning": 0, "notice": 0}
    for f in result.findings:
        loc = f.location
        cmd = COMMAND[f.severity]
        counts[cmd] += 1
        props = [
            f"file={escape_property(relative_path(loc.path, result.root))}",
            f"line={loc.line}",
            f"col={loc.column}",
            f"endLine={loc.end_line}",
        ]
        if loc.end_line == loc.line and loc.end_column > loc.column:
            props.append(f"endColumn={loc.end_column}")
        props.append(f"title={escape_property(f'{f.code} {f.name}')}")
        body = [f.message]
        for r in f.related:
            body.append(f"note: {relative_path(r.location.path, result.root)}:{r.location.line}: {r.message}")
        if f.help:
            body.append(f"help: {f.help}")
        out.append(f"::{cmd} {','.join(props)}::{escape_data(chr(10).join(body))}")
    for e in result.file_errors:
        counts["error"] += 1
        props = []
        if e.path:
            props.append(f"file={escape_property(relative_path(e.path, result.root))}")
        title = "packlint internal error" if e.kind == "internal" else "packlint could not check this"
        props.append(f"title={escape_property(title)}")
        out.append(f"::error {','.join(props)}::{escape_data(e.message)}")
    s = result.summary
    line = (
        f"packlint: {_plural(s.errors, 'error')}, {_plural(s.warnings, 'warning')}, {_plural(s.infos, 'info')} "
        f"in {_plural(s.files, 'file')}"
    )
    extra = []
    if s.suppressed:
        extra.append(f"{s.suppressed} suppressed by comments")
    if s.baselined:
        extra.append(f"{s.baselined} in the baseline")
    if result.file_errors:
        extra.append(f"{len(result.file_errors)} could not be checked")
    if extra:
        line += f" ({', '.join(extra)})"
    over = [k for k, n in counts.items() if n > GITHUB_LIMIT]
    if over:
        line += (
            f"; GitHub shows only the first {GITHUB_LIMIT} annotations of each level per step "
            f"({', '.join(f'{counts[k]} {k}s' for k in over)} here): every one is listed above"
        )
    out.append(line)
    return "".join(x + "\n" for x in out)
