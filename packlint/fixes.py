"""Fixes: a finding's FixPlan (resolved by the engine from the rule's `fix` entry) turned into text edits
on the script, and the loop that applies them (`packlint check --fix / --unsafe-fixes / --diff`, the
editor server's code actions).

Why a separate stage: the rule table says *what* to change in terms of the finding's spans; only the
script's syntax tree says *how* to change it without breaking the script (deleting the one statement of
an `if` body, one assignment of `export A=1 B=1`, a statement inside `a && b`). Every edit is checked
with `bash -n` before it is offered, and a round of edits is checked again as a whole.

Decisions (docs/fixes.md):
- only the file that was checked is edited, never a file it sources (the user did not name it);
- a file that is not plain UTF-8 without BOM and CRLF line ends is left alone;
- a file bash already rejects is left alone;
- edits never overlap: the later of two overlapping edits waits for the next round; safe fixes go
  first, all at once, then unsafe ones one per round; at most MAX_ROUNDS rounds, each followed by a
  re-check (so a fix that mends two findings is not followed by a second, redundant one).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from typing import Any

from packlint.findings import Finding, FixPlan
from packlint.records import record

MAX_ROUNDS = 10

# nodes whose children are statements (a statement is a direct child of one of these)
_CONTAINERS = {
    "program",
    "compound_statement",
    "do_group",
    "if_statement",
    "elif_clause",
    "else_clause",
    "case_item",
    "subshell",
    "function_definition",
}
# a statement inside one of these is part of a larger statement: deleting it changes that one
_COMPOSITE = {"list", "pipeline", "negated_command"}
_ASSIGNMENT_STATEMENTS = {"variable_assignment", "variable_assignments", "declaration_command"}


@record(eq=True)
class TextEdit:
    """Replace text[start:end] (code-point offsets) by `content`; line/column: 1-based, end exclusive."""

    path: str
    start: int
    end: int
    content: str
    line: int
    column: int
    end_line: int
    end_column: int

    def to_json(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "content": self.content,
        }


@record(eq=True)
class Fix:
    """A concrete fix of one finding: applicability (safe | unsafe), a title, the edits (one file)."""

    applicability: str
    title: str
    edits: tuple[TextEdit, ...]

    def to_json(self) -> dict:
        return {"applicability": self.applicability, "message": self.title, "edits": [e.to_json() for e in self.edits]}


# ---------------------------------------------------------------------------------------------- text


class Script:
    """One script's text with its line starts and syntax tree (parsed on first use)."""

    def __init__(self, path: str, text: str) -> None:
        self.path, self.text = path, text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._tree: Any = None
        self._data = text.encode("utf-8", "surrogatepass")

    def offset(self, line: int, column: int) -> int | None:
        if line < 1 or line > len(self.starts):
            return None
        off = self.starts[line - 1] + column - 1
        line_end = self.starts[line] - 1 if line < len(self.starts) else len(self.text)
        return off if self.starts[line - 1] <= off <= line_end + 1 else None

    def position(self, off: int) -> tuple[int, int]:
        import bisect

        i = bisect.bisect_right(self.starts, off) - 1
        return i + 1, off - self.starts[i] + 1

    @property
    def root(self):
        if self._tree is None:
            from packlint.parse import _parser

            self._tree = _parser().parse(self._data)
        return self._tree.root_node

    def byte(self, off: int) -> int:
        return off if self.text.isascii() else len(self.text[:off].encode("utf-8", "surrogatepass"))

    def char(self, byte: int) -> int:
        return byte if self.text.isascii() else len(self._data[:byte].decode("utf-8", "replace"))

    def node_range(self, node) -> tuple[int, int]:
        return self.char(node.start_byte), self.char(node.end_byte)

    def node_text(self, node) -> str:
        return self._data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def edit(self, start: int, end: int, content: str) -> TextEdit:
        line, col = self.position(start)
        end_line, end_col = self.position(end)
        return TextEdit(self.path, start, end, content, line, col, end_line, end_col)


def apply_edits(text: str, edits) -> str:
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        text = text[: e.start] + e.content + text[e.end :]
    return text


def bash_accepts(text: str) -> bool:
    """`bash -n` on the text (True when bash is not installed: nothing to ask)."""
    from packlint.tools import find_program, tool_env

    bash = find_program("bash")
    if bash is None:
        return True
    try:
        proc = subprocess.run(
            [bash, "--norc", "--noprofile", "-n"],
            input=text.encode("utf-8", "surrogatepass"),
            capture_output=True,
            timeout=10,
            env=tool_env(),
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


# ---------------------------------------------------------------------------------------------- plans


def _statement(node):
    """(statement node, crossed a composite) for a node: its ancestor that is a direct child of a block."""
    composite = False
    while node.parent is not None and node.parent.type not in _CONTAINERS:
        node = node.parent
        if node.type in _COMPOSITE:
            composite = True
    return node, composite


def _assignment_at(script: Script, start: int, end: int):
    node = script.root.descendant_for_byte_range(script.byte(start), max(script.byte(start), script.byte(end) - 1))
    while node is not None and node.type != "variable_assignment":
        node = node.parent
    return node


def _line_bounds(script: Script, start: int, end: int) -> tuple[int, int]:
    """The whole lines holding text[start:end], newline included."""
    ls = script.text.rfind("\n", 0, start) + 1
    le = script.text.find("\n", end)
    return ls, (len(script.text) if le < 0 else le + 1)


def _alone_on_lines(script: Script, start: int, end: int) -> bool:
    ls, le = _line_bounds(script, start, end)
    before = script.text[ls:start]
    after = script.text[end:le].rstrip("\n")
    return not before.strip() and (not after.strip() or after.strip().startswith("#"))


def _name_expanded(script: Script, name: str, skip: tuple[int, int]) -> bool:
    """Whether the script reads $name anywhere (outside byte range `skip`): then deleting its assignment
    changes what the script does."""
    stack = [script.root]
    while stack:
        n = stack.pop()
        if n.type in ("simple_expansion", "expansion") and not (skip[0] <= n.start_byte < skip[1]):
            for c in n.children:
                if c.type == "variable_name" and script._data[c.start_byte : c.end_byte].decode() == name:
                    return True
        if (
            n.type == "variable_name"
            and n.parent is not None
            and n.parent.type in ("arithmetic_expansion", "binary_expression", "unary_expression", "postfix_expression")
            and script._data[n.start_byte : n.end_byte].decode() == name
        ):
            return True
        stack.extend(n.children)
    # indirect reads the tree cannot see: ${!x}, eval, printenv NAME, declare -p NAME
    return bool(re.search(rf"(printenv|declare\s+-p|typeset\s+-p|\${{!)\s*{re.escape(name)}\b", script.text))


# `${V:=x}` / `${V=x}` assign V; `${V:?msg}` / `${V?msg}` end the script when V is unset
_EFFECT_OPERATORS = frozenset((":=", "=", ":?", "?"))


def _has_side_effects(node) -> bool:
    """Whether expanding `node` does something besides producing a value: runs a command (`$(...)`,
    backticks, `<(...)`), evaluates arithmetic (`$((i++))`), assigns (`${V:=x}`) or may exit (`${V:?}`)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type in ("command_substitution", "process_substitution", "arithmetic_expansion"):
            return True
        if n.type == "expansion" and any(c.type in _EFFECT_OPERATORS for c in n.children):
            return True
        stack.extend(n.children)
    return False


def _keep_effects(script: Script, stmt, assignment) -> list[TextEdit] | None:
    """Instead of deleting `[export] X=VALUE` whose VALUE has a side effect, `: VALUE`: the assignment
    goes, the expansion (and what it runs or assigns) stays. None when bash would not accept that."""
    seen_eq = False
    value = None
    for c in assignment.children:
        if seen_eq:
            value = c
            break
        seen_eq = c.type == "="
    if value is None or value.type == "array":
        return None
    s, e = script.node_range(stmt)
    edits = [script.edit(s, e, ": " + script.node_text(value))]
    return edits if bash_accepts(apply_edits(script.text, edits)) else None


def _delete_statement(script: Script, stmt) -> list[TextEdit] | None:
    s, e = script.node_range(stmt)
    if _alone_on_lines(script, s, e):
        ls, le = _line_bounds(script, s, e)
        return [script.edit(ls, le, "")]
    m = re.compile(r"[ \t]*;[ \t]*").match(script.text, e)
    if m:
        return [script.edit(s, m.end(), "")]
    before = script.text[:s]
    m = re.search(r"[ \t]*;[ \t]*$", before)
    if m:
        return [script.edit(m.start(), e, "")]
    return None


def _delete_assignment(script: Script, plan: FixPlan, node) -> tuple[list[TextEdit], str] | None:
    """Delete one assignment: the word when its statement assigns more, else the whole statement."""
    applicability = plan.applicability
    name_node = next((c for c in node.children if c.type == "variable_name"), None)
    name = script.node_text(name_node) if name_node is not None else ""
    parent = node.parent
    assignment = node
    effects = _has_side_effects(node)
    if effects:
        applicability = "unsafe"  # `V=$(cmd)`: the command stays (`: $(cmd)`), but the statement changed
    if name and plan.refuse_if_read and _name_expanded(script, name, (node.start_byte, node.end_byte)):
        return None  # the script itself reads it: the value is not dead there
    siblings = [c for c in parent.children if c.type == "variable_assignment"] if parent is not None else []
    if (
        parent is not None
        and parent.type in ("declaration_command", "variable_assignments", "command")
        and len(siblings) + (1 if parent.type == "command" else 0) > 1
    ):
        if effects:
            return None  # (one word of several: its side effect cannot be kept apart)
        s, e = script.node_range(node)
        i = parent.children.index(node) if node in parent.children else -1
        prev = parent.children[i - 1] if i > 0 else None
        if prev is not None:
            return [script.edit(script.node_range(prev)[1], e, "")], applicability
        nxt = parent.children[i + 1] if 0 <= i < len(parent.children) - 1 else None
        if nxt is not None:
            return [script.edit(s, script.node_range(nxt)[0], "")], applicability
        return None
    if parent is not None and parent.type == "declaration_command":
        if any(
            c.type == "word" and script.node_text(c).startswith("-") and "x" not in script.node_text(c)
            for c in parent.children
        ):
            applicability = "unsafe"  # declare -r / -i: the declaration does more than assign
        node = parent
    stmt, composite = _statement(node)
    if composite or stmt != node and stmt.type not in _ASSIGNMENT_STATEMENTS:
        return None  # `a && export V=1`: deleting changes the list
    if effects:  # never delete a side effect (`export X=${V:=d}` sets V for what follows)
        kept = _keep_effects(script, stmt, assignment)
        return (kept, applicability) if kept else None
    edits = _delete_statement(script, stmt)
    if edits and not bash_accepts(apply_edits(script.text, edits)):
        # the only statement of a block (`then ... fi`, `{ ...; }`): bash needs one there, so `:` stays
        s, e = script.node_range(stmt)
        edits = [script.edit(s, e, ":")]
    return (edits, applicability) if edits else None


_WORD_BEFORE = " \t\n(\"'"
_WORD_AFTER = " \t\n)\"';"


def _delete_words(script: Script, start: int, end: int) -> list[TextEdit] | None:
    """Delete whole words text[start:end] (a flag and its value), with the space before them; a line
    left empty (or holding only a line continuation) goes too."""
    text = script.text
    if start > 0 and text[start - 1] not in _WORD_BEFORE:
        return None
    if end < len(text) and text[end] not in _WORD_AFTER:
        return None
    ls, le = _line_bounds(script, start, end)
    s = start
    while s > ls and text[s - 1] in " \t":
        s -= 1
    rest = text[ls:s] + text[end:le]
    if rest.strip() == "\\" or (not rest.strip() and not text[: max(ls - 1, 0)].endswith("\\")):
        return [script.edit(ls, le, "")]  # the line held only these words
    if not rest.strip():  # the last line of a continued command: keep it, empty
        return [script.edit(ls, le - 1 if text[le - 1 : le] == "\n" else le, "")]
    if s == ls or text[s - 1] in "(\"'":  # first word (of the line, array or string): eat the space after
        s = start
        e = end
        while e < le and text[e] in " \t":
            e += 1
        return [script.edit(start, e, "")]
    return [script.edit(s, end, "")]


def plan_edits(script: Script, plan: FixPlan) -> tuple[list[TextEdit], str] | None:
    """The text edits of one plan on `script` and their applicability, or None when the fix cannot be
    applied safely there (the edit is then not offered)."""
    if plan.start.path != script.path or plan.end.path != script.path:
        return None  # a sourced file: never edited
    start = script.offset(plan.start.line, plan.start.column)
    end = script.offset(plan.end.end_line, plan.end.end_column)
    if start is None or end is None or end < start:
        return None
    if plan.expect is not None and not script.text.startswith(plan.expect, start):
        return None
    applicability = plan.applicability
    kind = plan.kind
    if kind == "delete":
        node = _assignment_at(script, start, end)
        if node is not None and script.node_range(node)[0] == start:
            return _delete_assignment(script, plan, node)
        edits = _delete_words(script, start, end) if end > start else None
    elif kind == "replace":
        edits = [script.edit(start, end, plan.text)]
    elif kind == "replace_prefix":  # `--seq-lenght=4096` -> `--seq-length=4096`
        if not plan.expect:
            return None
        edits = [script.edit(start, start + len(plan.expect), plan.text)]
    elif kind in ("insert_before", "insert_after"):
        node = _assignment_at(script, start, end)
        # an insert at a statement's edge: the span must be a whole assignment statement of its own
        if node is None or script.node_range(node) != (start, end):
            return None
        stmt, composite = _statement(node)
        if stmt != node:
            return None
        edits = [
            script.edit(start if kind == "insert_before" else end, start if kind == "insert_before" else end, plan.text)
        ]
    elif kind in ("insert_line_before", "insert_line_after"):
        node = _assignment_at(script, start, end)
        if (
            node is not None
            and node.parent is not None
            and node.parent.type == "command"
            and kind == "insert_line_after"
        ):
            return None  # `V=1 torchrun ...`: after it is after the launch itself
        if node is None:
            node = script.root.descendant_for_byte_range(
                script.byte(start), max(script.byte(start), script.byte(end) - 1)
            )
        if node is None or node.type == "program":
            return None
        stmt, composite = _statement(node)
        s, e = script.node_range(stmt)
        ls, le = _line_bounds(script, s, e)
        line_text = script.text[ls:le]
        indent = line_text[: len(line_text) - len(line_text.lstrip(" \t"))]
        if kind == "insert_line_after":
            if _alone_on_lines(script, s, e):
                at = le if script.text[le - 1 : le] == "\n" else len(script.text)
                prefix = "" if script.text[le - 1 : le] == "\n" else "\n"
                edits = [script.edit(at, at, f"{prefix}{indent}{plan.text}\n")]
            else:
                edits = [script.edit(e, e, f"; {plan.text}")]
        else:
            if not script.text[ls:s].strip():
                edits = [script.edit(ls, ls, f"{indent}{plan.text}\n")]
            else:
                edits = [script.edit(s, s, f"{plan.text}; ")]
    else:
        return None
    if not edits:
        return None
    return edits, applicability


def concrete_fix(finding: Finding, script: Script, *, verify: bool = True) -> Fix | None:
    """The finding's fix as edits on `script`, checked with `bash -n` (when `verify`)."""
    if finding.fix is None:
        return None
    try:
        planned = plan_edits(script, finding.fix)
    except (UnicodeError, ValueError, AttributeError):
        return None
    if planned is None:
        return None
    edits, applicability = planned
    loc = finding.location
    primary = script.offset(loc.line, loc.column) if loc.path == script.path else None
    if (
        finding.fix.kind == "delete"
        and primary is not None
        and any(e.start <= primary < e.end for e in edits)
        and (finding.fix.start != loc)
    ):
        return None  # the delete would take the reported (kept) occurrence too
    if verify and not bash_accepts(apply_edits(script.text, edits)):
        return None
    return Fix(applicability, finding.fix.title, tuple(edits))


# ---------------------------------------------------------------------------------------------- loop


def _new_lines_last(fix: Fix) -> int:
    """Edits of existing text before new statements: the specific mend before the general one."""
    return 1 if all(e.start == e.end and e.content.endswith("\n") for e in fix.edits) else 0


def applicable(fix: Fix | None, unsafe: bool) -> bool:
    return fix is not None and (fix.applicability == "safe" or unsafe)


def choose(fixes: list[Fix]) -> list[Fix]:
    """Fixes whose edits overlap no earlier chosen fix (the rest wait for the next round); equal fixes
    (one edit reported by several findings) count once."""
    chosen: list[Fix] = []
    taken: list[tuple[int, int]] = []
    seen: set = set()
    for fix in sorted(fixes, key=lambda f: min(e.start for e in f.edits)):
        key = tuple((e.start, e.end, e.content) for e in fix.edits)
        if key in seen:
            continue
        ranges = [(e.start, e.end) for e in fix.edits]
        if any(
            s < te and ts < e or s == e == ts == te or (s == e and ts < s < te) or (ts == te and s < ts < e)
            for s, e in ranges
            for ts, te in taken
        ):
            continue
        seen.add(key)
        chosen.append(fix)
        taken.extend(ranges)
    return chosen


class FixOutcome:
    """What the loop did to one file: the new text, how many fixes it applied, the rounds it took."""

    def __init__(self, path: str, original: str, text: str, applied: int, rounds: int, note: str | None = None) -> None:
        self.path, self.original, self.text, self.applied, self.rounds = path, original, text, applied, rounds
        self.note = note
        self.refusals: list[str] = []  # config files: `PKxxx at line:col: no fix: why` (packlint.configfix)

    @property
    def changed(self) -> bool:
        return self.text != self.original


def read_fixable(path: str) -> tuple[str | None, str | None]:
    """The file's text for fixing, or (None, why not)."""
    from packlint.source import read_bytes

    data = read_bytes(path)
    if data.startswith(b"\xef\xbb\xbf") or data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return None, "not fixed: the file starts with a byte-order mark"
    if b"\r" in data:
        return None, "not fixed: the file has CR line ends"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, "not fixed: the file is not UTF-8"


def fix_text(path: str, text: str, check: Callable[[str], list[Finding]], *, unsafe: bool) -> FixOutcome:
    """Apply fixes to a fixed point: check, apply the non-overlapping applicable fixes, re-check, ...
    (at most MAX_ROUNDS rounds; a round bash rejects is undone and ends the loop)."""
    original = text
    if not bash_accepts(text):
        return FixOutcome(path, original, text, 0, 0, "not fixed: bash rejects the script as it is")
    applied = 0
    rounds = 0
    for _ in range(MAX_ROUNDS):
        findings = check(text)
        script = Script(path, text)
        # a plan's applicability can only go down (safe -> unsafe) when its edits are made: skip the
        # plans that cannot apply, and ask bash only about the fixes chosen (one `bash -n` each)
        candidates = [x for x in findings if x.fix is not None and (unsafe or x.fix.applicability == "safe")]
        fixes: list[Fix] = [
            f
            for f in (concrete_fix(x, script, verify=False) for x in candidates)
            if f is not None and applicable(f, unsafe)
        ]
        # every safe fix, and one unsafe fix per round: two unsafe fixes often mend one mistake twice
        # (PK101 exports the assignment, PK001 would add another export); the re-check settles it
        safe = [f for f in fixes if f.applicability == "safe"]
        risky = sorted(
            (f for f in fixes if f.applicability == "unsafe"),
            key=lambda f: (_new_lines_last(f), min(e.start for e in f.edits)),
        )
        chosen = [f for f in choose(safe) if bash_accepts(apply_edits(text, f.edits))]
        if not chosen:
            chosen = next(([f] for f in risky if bash_accepts(apply_edits(text, f.edits))), [])
        if not chosen:
            break
        new = apply_edits(text, [e for f in chosen for e in f.edits])
        if new == text:
            break
        if not bash_accepts(new):
            return FixOutcome(
                path, original, text, applied, rounds, "stopped: a round of fixes together made a script bash rejects"
            )
        text = new
        applied += len(chosen)
        rounds += 1
    return FixOutcome(path, original, text, applied, rounds)


def unified_diff(outcome: FixOutcome) -> str:
    import difflib

    return "".join(
        difflib.unified_diff(
            outcome.original.splitlines(keepends=True),
            outcome.text.splitlines(keepends=True),
            fromfile=f"a/{outcome.path}",
            tofile=f"b/{outcome.path}",
        )
    )
