"""Environment hygiene facts read from the syntax tree: an exported variable set again before anything
could read it (its first value is lost: `export PYTORCH_CUDA_ALLOC_CONF=A` then `=B`).

Only statements of one statement list are compared, so both assignments are on the same path; any
command between them that may read the environment (anything but a few builtins that do not), a
reference to the variable, or a compound statement (a branch, a loop) ends the search. Appends
(`PATH=$PATH:x`) read the first value and are not overwrites. The facts travel as diagnostics with the
code `env-overwritten`; rule PK105 reports them.
"""

from __future__ import annotations

import re
import shlex

from packlint.values import Span

# Commands that do not read the environment of the variables in question (a reference to the variable
# in their arguments still counts as a read).
_INERT_COMMANDS = frozenset(
    {
        "echo",
        "printf",
        "mkdir",
        "cd",
        "pushd",
        "popd",
        "ulimit",
        "set",
        "shopt",
        "umask",
        "true",
        ":",
        "sleep",
        "date",
        "touch",
    }
)
_STATEMENT_CONTAINERS = (
    "program",
    "compound_statement",
    "do_group",
    "subshell",
    "if_statement",
    "elif_clause",
    "else_clause",
    "case_item",
    "function_definition",
)
_MASK = re.compile(r"\$__PX(\d+)")
_EXPORTING = re.compile(rb"\b(?:export|declare|typeset)\b")


def _text(node, ps) -> str:
    """The node's source text with packlint's masked `${...}` expansions put back."""
    raw = node.text.decode("utf-8", "replace")
    if "$__PX" not in raw:
        return raw
    return _MASK.sub(
        lambda m: ps.raw_expansions[int(m.group(1))] if int(m.group(1)) < len(ps.raw_expansions) else m.group(0), raw
    )


# A reference to a variable: `$NAME`, `${NAME...}`, `${#NAME}`, `${!NAME}` (the name is the longest
# identifier there, so NAME is read exactly when it is one of these names).
_READ = re.compile(r"\$\{?[#!]?([A-Za-z_][A-Za-z0-9_]*)")


# bash reads a bare name as a variable in arithmetic (`$((MAX-WARMUP))`, `$[A+1]`, `((A++))`) and in an
# array subscript (`${ARR[I]}`, itself arithmetic): there every identifier of the text is taken as read
_ARITH = re.compile(r"\(\(|\$\[|\[")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _names_read(text: str) -> set[str]:
    """Every variable name the text refers to, in one pass (linear in the text, whatever the number of
    pending exports: H16 of the reliability audit). Where the text has arithmetic or a subscript, every
    identifier in it counts as read (more reads only ever mean fewer reports)."""
    if "$" not in text and "((" not in text:
        return set()
    names = {m.group(1) for m in _READ.finditer(text)}
    if _ARITH.search(text):
        names.update(_NAME.findall(text))
    return names


def _exports(node, ps) -> list[tuple[str, str, object]] | None:
    """(name, value text, assignment node) for `export A=1 B=2` / `declare -x A=1`; None when the
    statement is not an export."""
    if node.type != "declaration_command" or not node.children:
        return None
    keyword = node.children[0].text.decode("utf-8", "replace")
    words = [c for c in node.children[1:]]
    if keyword == "declare" or keyword == "typeset":
        flags = [w.text.decode("utf-8", "replace") for w in words if w.type == "word"]
        if not any(f.startswith("-") and "x" in f for f in flags):
            return None
    elif keyword != "export":
        return None
    out = []
    for w in words:
        if w.type == "variable_assignment":
            name_node = w.child_by_field_name("name")
            value_node = w.child_by_field_name("value")
            if name_node is None or name_node.type != "variable_name":
                continue
            out.append((name_node.text.decode(), _value_text(w, value_node, ps), w))
    return out


def _value_text(assignment, value_node, ps) -> str:
    """The value as written: everything after the first `=`, with the words glued right after the assignment
    (tree-sitter-bash ends `LOG_PATH=$R/$P/debug.log` at `$R/$` and makes `P/debug.log` a word of its own, which
    showed as '$R/$'; the interpreter glues them back the same way: `glue_tail`)."""
    if value_node is None:
        return ""
    text = _text(assignment, ps)
    value = text.split("=", 1)[1] if "=" in text else _text(value_node, ps)
    end, nxt = assignment.end_byte, assignment.next_sibling
    while nxt is not None and nxt.start_byte == end and nxt.type in ("word", "concatenation", "simple_expansion"):
        value += _text(nxt, ps)
        end, nxt = nxt.end_byte, nxt.next_sibling
    return value


def _assignments(node, ps) -> list[tuple[str, str, object]]:
    """Plain `A=1` statements (not prefixes of a command)."""
    if node.type == "variable_assignment":
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is not None and name_node.type == "variable_name":
            return [(name_node.text.decode(), _value_text(node, value_node, ps), node)]
    if node.type == "variable_assignments":
        return [a for c in node.named_children for a in _assignments(c, ps)]
    return []


def _appends(assignment) -> bool:
    """`NAME+=value` (bash appends to the value, or adds to it in arithmetic context)."""
    name = assignment.child_by_field_name("name")
    return name is not None and assignment.text[name.end_byte - assignment.start_byte :].startswith(b"+=")


def _inert(node, ps) -> bool:
    if node.type != "command":
        return False
    name = node.child_by_field_name("name")
    if name is None:
        return False
    return name.text.decode("utf-8", "replace") in _INERT_COMMANDS and not any(
        c.type == "variable_assignment" for c in node.children
    )


def _lost(first: Span, first_value: str, second: Span, value: str, replaced) -> bool:
    """Whether the second assignment gives another value than the first: by the values the interpreter
    computed each time the second ran (`"online"` and `online`, `$A` and `$B` holding the same text
    are equal); undecided (not reported) where a value was unknown; by the words where it never ran."""
    verdicts = replaced.get((first, second)) if replaced is not None else None
    if verdicts:
        return "differ" in verdicts
    if value == first_value:
        return False
    # code the interpreter did not run (a function no launch calls): literal words are unquoted as bash
    # does; a word with an expansion has an unknown value there: undecided
    a, b = _literal(first_value), _literal(value)
    return a is not None and b is not None and a != b


def _literal(word: str) -> str | None:
    """The value bash gives an assignment word without expansions (quotes removed); None: it has one."""
    if any(c in word for c in "$`~") or "\n" in word:
        return None
    try:
        parts = shlex.split(word, comments=False, posix=True)
    except ValueError:
        return None
    if not parts:
        return ""
    return parts[0] if len(parts) == 1 else None


def overwritten_exports(ps, replaced=None) -> list[tuple[str, Span, str, Span, str, bool]]:
    """(name, first span, first value, second span, second value, whether the second exports too)
    for every lost export. `replaced` is the interpreter's record of the values each replacement
    compared (Interpreter.replaced_values)."""
    found: list[tuple[str, Span, str, Span, str, bool]] = []
    if _EXPORTING.search(ps.source.data) is None:
        return found  # no statement exports anything
    stack = [ps.root]
    while stack:
        node = stack.pop()
        if not node.named_child_count:
            continue  # a leaf (most nodes): nothing below it
        children = node.named_children
        stack.extend(reversed(children))
        if node.type not in _STATEMENT_CONTAINERS:
            continue
        pending: dict[str, tuple[Span, str]] = {}  # exported, not read since
        for stmt in children:
            if stmt.type == "comment":
                continue
            exports = _exports(stmt, ps)
            sets = exports if exports is not None else _assignments(stmt, ps)
            if exports is None and not sets and not _inert(stmt, ps):
                pending.clear()  # a command or a compound statement may read anything
                continue
            if pending:
                for name in _names_read(_text(stmt, ps)):
                    pending.pop(name, None)
            for name, value, anode in sets:
                if _appends(anode):  # `A+=' --b'` reads the value it adds to: nothing is lost
                    pending.pop(name, None)
                elif name in pending:
                    first_span, first_value = pending.pop(name)
                    second_span = ps.source.span(anode)
                    if _lost(first_span, first_value, second_span, value, replaced):
                        found.append((name, first_span, first_value, second_span, value, exports is not None))
                if exports is not None:
                    pending[name] = (ps.source.span(anode), value)
    found.sort(key=lambda f: (f[3].line, f[3].column))
    return found
