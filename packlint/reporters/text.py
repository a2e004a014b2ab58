"""Text output: a ruff-style code frame per finding, then a summary. Plain text unless colour is on."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from packlint.checking import CheckResult

from collections.abc import Callable

from packlint.findings import Finding, Summary
from packlint.reporters.escape import terminal_safe as _safe

_RESET = "\x1b[0m"
_STYLE = {
    "error": "\x1b[1;31m",
    "warning": "\x1b[1;33m",
    "info": "\x1b[1;34m",
    "path": "\x1b[1m",
    "code": "\x1b[1;31m",
    "gutter": "\x1b[34m",
    "note": "\x1b[36m",
    "help": "\x1b[32m",
    "dim": "\x1b[2m",
}


class _Painter:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, style: str, text: str) -> str:
        return f"{_STYLE[style]}{text}{_RESET}" if self.color and text else text


def _expand(line: str) -> str:
    return line.replace("\t", "    ")


def _visual_col(line: str, col: int) -> int:
    """0-based display column of the 1-based character column `col` (tabs count 4)."""
    return len(_expand(line[: max(0, col - 1)]))


def render(result: CheckResult, *, color: bool = False, **_: object) -> str:
    """Code frames for `result.findings` (sources from `result.sources`), then the summary line.
    File errors are not part of it: `packlint check` prints them on stderr."""
    return render_findings(result.findings, result.summary, color=color, read_source=result.sources.lines)


def render_findings(
    findings: list[Finding],
    summary: Summary,
    *,
    color: bool = False,
    read_source: Callable[[str], list[str] | None] = lambda p: None,
) -> str:
    paint = _Painter(color)
    out: list[str] = []
    for f in findings:
        loc = f.location
        label = f.severity if f.certainty in ("certain", "as-shipped") or f.severity == "info" else f"{f.severity}, may"
        out.append(
            f"{paint('path', f'{_safe(loc.path)}:{loc.line}:{loc.column}')}: "
            f"{paint(f.severity, f.code)} [{paint(f.severity, label)}] {_safe(f.message)}"
        )
        lines = read_source(loc.path)
        if lines is not None and 1 <= loc.line <= len(lines):
            src = lines[loc.line - 1]
            width = len(str(loc.line))
            gutter = " " * width + " |"
            start = _visual_col(src, loc.column)
            if loc.end_line == loc.line and loc.end_column > loc.column:
                end = _visual_col(src, loc.end_column)
            else:
                end = len(_expand(src).rstrip())
            end = max(end, start + 1)
            out.append(paint("gutter", gutter))
            out.append(paint("gutter", f"{loc.line} |") + " " + _safe(_expand(src)))
            out.append(paint("gutter", gutter) + " " + " " * start + paint(f.severity, "^" * (end - start)))
            out.append(paint("gutter", gutter))
            pad = " " * width
        else:
            pad = ""
        for r in f.related:
            out.append(
                f"{pad} = {paint('note', 'note')}: {_safe(r.location.path)}:{r.location.line}:{r.location.column}: "
                f"{_safe(r.message)}"
            )
        if f.help:
            out.append(f"{pad} = {paint('help', 'help')}: {_safe(f.help)}")
        out.append("")
    out.append(summary_line(summary, paint))
    return "\n".join(out) + "\n"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def summary_line(summary: Summary, paint: Callable[[str, str], str] = lambda s, t: t) -> str:
    files = _plural(summary.files, "file")
    extra = []
    if getattr(summary, "suppressed", 0):
        extra.append(f"{summary.suppressed} suppressed by comments")
    if getattr(summary, "baselined", 0):
        extra.append(f"{summary.baselined} in the baseline")
    no_launch = getattr(summary, "no_launch", 0)
    if no_launch:
        extra.append(f"no launch found in {no_launch} of them" if summary.files > 1 else "no launch found in it")
    tail = f" ({', '.join(extra)})" if extra else ""
    if not (summary.errors or summary.warnings or summary.infos):
        return f"All clear: no findings in {files}{tail}."
    parts = [
        paint("error", _plural(summary.errors, "error")),
        paint("warning", _plural(summary.warnings, "warning")),
        paint("info", _plural(summary.infos, "info")),
    ]
    return f"Found {', '.join(parts)} in {files}{tail}."


def render_quiet(result: CheckResult, *, color: bool = False, **_: object) -> str:
    """`-q`: one line per finding (`path:line:col: CODE [severity] message`), no frames, no summary;
    nothing at all when there is nothing to report."""
    paint = _Painter(color)
    out = []
    for f in result.findings:
        loc = f.location
        out.append(
            f"{paint('path', f'{_safe(loc.path)}:{loc.line}:{loc.column}')}: {paint(f.severity, f.code)} "
            f"[{f.severity}] {_safe(f.message)}"
        )
    return "".join(line + "\n" for line in out)
