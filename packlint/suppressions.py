"""`# packlint: disable=...` comments: which findings they silence, and which silence nothing.

Forms (codes, code prefixes, rule names or `all`, comma-separated; an optional reason after `--`):

    export OFFLINE_PACKING_VQA=1   # packlint: disable=PK004 -- read by the 1.5 code base
    # packlint: disable=PK001,PK003        (alone on a line: applies to the next command)
    # packlint: disable-file=PK004          (anywhere: the whole file)

A line directive applies to findings whose primary location is on its line (any line of a multi-line
finding) or, when the comment stands alone, in the command below it, all of its lines: a command
continued with a backslash, a multi-line array, a here-document, a whole `if`/`for`/function block (ShellCheck's
scope; a run of comment-only lines stacks). The command's extent comes from the bash parser, only for
files that have such a directive.
A file directive applies to findings located in that file; in the checked script it also applies to
findings located in files the script sources (the checked script is the one a team can edit).

Directives that suppress nothing (and malformed ones) become diagnostics with code
`unused-suppression`; the rule table turns them into findings (PK901, like ruff's RUF100). Only the
checked script's own directives are judged (a sourced file's directive may serve another script),
only for rules that are enabled for the file, and never when an exclusive rule (PK900) stopped the
launch rules. The comment scanner knows bash quoting and here-documents: a `#` inside a string or a
here-document body is not a comment.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable

from packlint.findings import Finding
from packlint.regex import LazyRegex

UNUSED_DIAG_CODE = "unused-suppression"

_INTERESTING = LazyRegex(r"\$'|<<|['\"\\#\n]")
_DQ_BODY = LazyRegex(r'(?:\\.|[^"\\])*"', re.S)
_ANSI_BODY = LazyRegex(r"(?:\\.|[^'\\])*'", re.S)
_HEREDOC = LazyRegex(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([A-Za-z0-9_.\-/]+))")
_WORD_START = frozenset(" \t\n;&|()<>")
_DIRECTIVE_START = LazyRegex(r"#\s*packlint(?:\s*:|\s+(?=disable))\s*", re.I)
_DIRECTIVE = LazyRegex(
    r"(disable-file|disable)\s*=\s*([A-Za-z0-9_-]+(?:\s*,\s*[A-Za-z0-9_-]+)*)\s*,?\s*"
    r"(?:--\s*(.*))?$",
    re.I,
)


class Comment:
    __slots__ = ("line", "column", "end_column", "text", "alone")

    def __init__(self, line: int, column: int, end_column: int, text: str, alone: bool) -> None:
        self.line, self.column, self.end_column, self.text, self.alone = line, column, end_column, text, alone


class Directive:
    """One `# packlint:` comment. `kind`: line | file | malformed; `selectors` as written."""

    __slots__ = ("path", "kind", "selectors", "reason", "line", "column", "end_column", "alone", "used")

    def __init__(self, path: str, kind: str, selectors: list[str], reason: str | None, comment: Comment) -> None:
        self.path, self.kind, self.selectors, self.reason = path, kind, selectors, reason
        self.line, self.column, self.end_column, self.alone = (
            comment.line,
            comment.column,
            comment.end_column,
            comment.alone,
        )
        self.used: set[str] = set()

    def __repr__(self) -> str:
        return f"Directive({self.path}:{self.line} {self.kind}={','.join(self.selectors)})"


def find_comments(text: str) -> list[Comment]:
    """Every bash comment in `text` (a `#` starting a word, outside quotes and here-document bodies)."""
    out: list[Comment] = []
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    pending: list[tuple[str, bool]] = []
    pos, n = 0, len(text)
    while pos < n:
        m = _INTERESTING.search(text, pos)
        if m is None:
            break
        tok, i = m.group(), m.start()
        if tok == "'":
            j = text.find("'", i + 1)
            pos = n if j < 0 else j + 1
        elif tok == "$'":
            b = _ANSI_BODY.match(text, i + 2)
            pos = b.end() if b else n
        elif tok == '"':
            b = _DQ_BODY.match(text, i + 1)
            pos = b.end() if b else n
        elif tok == "\\":
            pos = i + 2
        elif tok == "#":
            if i == 0 or text[i - 1] in _WORD_START:
                j = text.find("\n", i)
                j = n if j < 0 else j
                row = bisect_right(starts, i) - 1
                line_start = starts[row]
                comment = text[i:j].rstrip("\r")
                out.append(
                    Comment(
                        row + 1,
                        i - line_start + 1,
                        i - line_start + 1 + len(comment),
                        comment,
                        not text[line_start:i].strip(),
                    )
                )
                pos = j
            else:
                pos = i + 1
        elif tok == "<<":
            if text.startswith("<<<", i):
                pos = i + 3
                continue
            h = _HEREDOC.match(text, i)
            if h:
                delim = next(g for g in (h.group(2), h.group(3), h.group(4)) if g is not None)
                pending.append((delim, bool(h.group(1))))
                pos = h.end()
            else:
                pos = i + 2
        else:  # newline: skip the bodies of here-documents started on this line
            pos = i + 1
            for delim, strip_tabs in pending:
                while pos < n:
                    e = text.find("\n", pos)
                    e = n if e < 0 else e
                    line = text[pos:e].rstrip("\r")
                    pos = e + 1
                    if (line.lstrip("\t") if strip_tabs else line) == delim:
                        break
            pending = []
    return out


def parse_directives(text: str, path: str) -> list[Directive]:
    if "packlint" not in text and "PACKLINT" not in text.upper():
        return []
    out = []
    for c in find_comments(text):
        m = _DIRECTIVE_START.match(c.text)
        if m is None:
            continue
        body = c.text[m.end() :].strip()
        d = _DIRECTIVE.match(body)
        if d is None:
            out.append(Directive(path, "malformed", [], body, c))
            continue
        kind = "file" if d.group(1).lower() == "disable-file" else "line"
        selectors = [s.strip() for s in d.group(2).split(",") if s.strip()]
        reason = (d.group(3) or "").strip() or None
        out.append(Directive(path, kind, selectors, reason, c))
    return out


def selector_matches(selector: str, code: str, name: str) -> bool:
    s = selector.strip()
    return s.lower() == "all" or code.startswith(s.upper()) or name == s.lower()


def _exact(selector: str, code: str, name: str) -> bool:
    return selector.upper() == code or selector.lower() == name


class FileDirectives:
    """The directives of one file, indexed for lookup by line. `command_end`: line -> the last line of
    the command that starts there (for the lines below a directive that stands alone)."""

    def __init__(
        self,
        path: str,
        directives: list[Directive],
        comment_only_lines: set[int],
        command_end: Callable[[int], int] | None = None,
    ) -> None:
        self.path = path
        self.directives = directives
        self.by_line: dict[int, list[Directive]] = {}
        for d in directives:
            if d.kind == "line":
                self.by_line.setdefault(d.line, []).append(d)
        self.file_level = [d for d in directives if d.kind == "file"]
        self.comment_only = comment_only_lines
        # (first line, last line, directive) of the command below each directive that stands alone
        self.scopes: list[tuple[int, int, Directive]] = []
        for d in directives:
            if d.kind == "line" and d.alone:
                first = d.line + 1
                while first in comment_only_lines:
                    first += 1
                last = command_end(first) if command_end is not None else first
                self.scopes.append((first, max(first, last), d))

    def for_span(self, line: int, end_line: int) -> list[Directive]:
        found: list[Directive] = []
        for ln in range(line, max(line, end_line) + 1):
            found.extend(self.by_line.get(ln, ()))
        above = line - 1
        while above >= 1 and above in self.comment_only:
            found.extend(d for d in self.by_line.get(above, ()) if d.alone)
            above -= 1
        found.extend(d for first, last, d in self.scopes if first <= line <= last and d not in found)
        return found


def command_ends(text: str) -> Callable[[int], int]:
    """line -> the last line of the outermost command that starts on that line (its continuation lines,
    a multi-line array or string, a here-document's body, a compound command's block), from the bash
    parser; the line itself where no command starts there."""
    from packlint.parse import _parser

    root = _parser().parse(text.encode("utf-8", "surrogateescape")).root_node

    def end(line: int) -> int:
        row = line - 1
        node = root
        last = row
        while True:
            inner = None
            for child in node.named_children:
                if child.start_point[0] > row:
                    break
                if child.end_point[0] < row:
                    continue
                if child.start_point[0] == row:
                    if child.type != "comment":
                        stop = child.end_point[0] - (1 if child.end_point[1] == 0 and child.end_point[0] > row else 0)
                        last = max(last, stop)
                elif inner is None:
                    inner = child  # a block that started above: the command is inside it
            if last > row or inner is None:
                return last + 1
            node = inner

    return end


# the compound commands whose inner commands are commands of their own (a directive goes above those)
_BLOCKS = frozenset(
    {
        "if_statement",
        "elif_clause",
        "else_clause",
        "for_statement",
        "c_style_for_statement",
        "while_statement",
        "function_definition",
        "compound_statement",
        "do_group",
        "case_statement",
        "case_item",
        "subshell",
    }
)


def command_start(text: str, line: int) -> int:
    """The first line of the innermost command holding `line` (a command inside an `if`/`for`/function
    block is a command of its own): where a directive goes to cover it all."""
    from packlint.parse import _parser

    row = line - 1
    node = _parser().parse(text.encode("utf-8", "surrogateescape")).root_node
    while True:
        holder = next(
            (c for c in node.named_children if c.type != "comment" and c.start_point[0] <= row <= c.end_point[0]),
            None,
        )
        if holder is None:  # a line of the block's own (`fi`, `done`): the block
            return line if node.parent is None else node.start_point[0] + 1
        if holder.type in _BLOCKS and holder.start_point[0] != row:
            node = holder
            continue
        return holder.start_point[0] + 1


def load_file_directives(path: str, text: str) -> FileDirectives:
    directives = parse_directives(text, path)
    comment_only: set[int] = set()
    command_end = None
    if directives:
        comment_only = {c.line for c in find_comments(text) if c.alone}
        if any(d.kind == "line" and d.alone for d in directives):
            try:
                command_end = command_ends(text)
            except (RecursionError, ValueError):  # the next line then, as for any unparsed text
                command_end = None
    return FileDirectives(path, directives, comment_only, command_end)


def suppress(
    findings: list[Finding],
    main_path: str,
    directives_of: Callable[[str], FileDirectives | None],
) -> tuple[list[Finding], int]:
    """Drop suppressed findings; mark each directive selector that matched. Returns (kept, suppressed)."""
    main = directives_of(main_path)
    kept: list[Finding] = []
    suppressed = 0
    for f in findings:
        fd = directives_of(f.location.path)
        candidates: list[Directive] = []
        if fd is not None:
            candidates.extend(fd.for_span(f.location.line, f.location.end_line))
            candidates.extend(fd.file_level)
        if main is not None and main is not fd:
            candidates.extend(main.file_level)
        hit = None
        for d in candidates:
            sel = next((s for s in d.selectors if selector_matches(s, f.code, f.name)), None)
            if sel is not None:
                hit = (d, sel)
                break
        if hit is None:
            kept.append(f)
        else:
            hit[0].used.add(hit[1])
            suppressed += 1
    return kept, suppressed


def unused_diagnostics(main: FileDirectives | None, enabled: Iterable, known: Iterable, exempt: Iterable) -> list[dict]:
    """Diagnostics (launch-model diagnostic shape) for the main script's directives that suppress
    nothing. `enabled`/`known`: rules enabled for the file / every loaded rule; `exempt`: rules that
    report suppressions themselves (never judged: they run after this)."""
    if main is None:
        return []
    enabled = [(r.code, r.name) for r in enabled]
    known = [(r.code, r.name) for r in known]
    exempt = [(r.code, r.name) for r in exempt]
    out = []
    for d in main.directives:
        if d.kind == "malformed":
            out.append(
                _diag(
                    d,
                    f"`{_short(d)}` is not a packlint directive: write `# packlint: disable=CODES` "
                    f"or `# packlint: disable-file=CODES` (an optional reason after `--`)",
                )
            )
            continue
        unknown, unused = [], []
        for sel in d.selectors:
            if sel in d.used:
                continue
            if any(_exact(sel, c, n) for c, n in exempt):
                continue
            if sel.lower() == "all":
                unused.append(sel)
            elif not any(selector_matches(sel, c, n) for c, n in known):
                unknown.append(sel)
            elif any(selector_matches(sel, c, n) for c, n in enabled):
                unused.append(sel)
        if not unknown and not unused:
            continue
        what = "disable-file" if d.kind == "file" else "disable"
        parts = []
        if unused:
            scope = "in this file" if d.kind == "file" else ("in the next command" if d.alone else "on this line")
            parts.append(f"{', '.join(unused)} suppresses nothing {scope}")
        if unknown:
            parts.append(f"{', '.join(unknown)} {'is not a rule' if len(unknown) == 1 else 'are not rules'}")
        out.append(_diag(d, f"unused suppression `{what}={','.join(d.selectors)}`: " + "; ".join(parts)))
    return out


def _short(d: Directive) -> str:
    text = d.reason or ""
    return text if len(text) <= 40 else text[:37] + "..."


def _diag(d: Directive, message: str) -> dict:
    return {
        "severity": "warning",
        "code": UNUSED_DIAG_CODE,
        "message": message,
        "file": d.path,
        "line": d.line,
        "column": d.column,
        "end_line": d.line,
        "end_column": d.end_column,
    }


def suppress_reports(
    findings: list[Finding], directives_of: Callable[[str], FileDirectives | None], main_path: str
) -> tuple[list[Finding], int]:
    """Findings about suppressions (PK901) are silenced only by a directive that names the rule exactly
    (code or name, not a prefix or `all`) and is not the directive being reported."""
    main = directives_of(main_path)
    kept, n = [], 0
    for f in findings:
        fd = directives_of(f.location.path)
        candidates = []
        if fd is not None:
            candidates = [
                d
                for d in fd.for_span(f.location.line, f.location.end_line) + fd.file_level
                if not (d.line == f.location.line and d.column == f.location.column)
            ]
        if main is not None and main is not fd:
            candidates += main.file_level
        if any(_exact(s, f.code, f.name) for d in candidates for s in d.selectors):
            n += 1
        else:
            kept.append(f)
    return kept, n
