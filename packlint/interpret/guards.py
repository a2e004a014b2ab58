"""Input guards: a script that exits when a variable its caller sets is empty.

    [ -z "$BASE_FOLDER" ] && echo "set BASE_FOLDER" && exit 1
    if [ -z "$1" ]; then echo "usage: $0 CKPT"; exit 1; fi
    [ -n "$DATA" ] || { echo "DATA?"; exit 1; }
    : "${CHECKPOINT_DIR:?CHECKPOINT_DIR is not set}"

Run as written, with nothing from the caller, every such script stops at its guard, and a model of that
run would hold no launch ("All clear"). But the guard says the caller sets the variable: the launch
runs with a value packlint does not know. So when a guard's test reads a variable that nothing has set
(no assignment on this path, not given with --env / --inherit-env, no positional arguments given), the
variable is taken as set by the caller with an unknown value: the test is undecided, the path that
exits ends there, and the launch after the guard is analysed with the variable unknown (its `when`
names the guard). Only tests that guard an `exit` count; `[ -z "$X" ] && X=default` is a default, and
X stays empty.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from packlint.interpret.syntax import text_of
from packlint.interpret.world import World
from packlint.parse import ParsedScript
from packlint.regex import LazyRegex
from packlint.values import Known, Span, Unknown, Variable

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter

# the operand of a guard's test: `$X`, `"$X"`, `${X}`, `"${X}"`, `${X:-}`, `$1`
_OPERAND = re.compile(r'^"?\$(?:([A-Za-z_]\w*|[1-9])|\{([A-Za-z_]\w*|[1-9])(?::?-)?\})"?$')
_MAX_GUARD_NODES = 200_000  # a bound on the syntax walk (nodes visited per file)


def guard_tests(ps: ParsedScript) -> dict[int, str]:
    """Start byte of each test that guards an `exit` -> the variable it tests."""
    functions_exit: dict[str, bool] = {}
    funcs: dict[str, Node] = {}
    out: dict[int, str] = {}
    stack: list[Node] = [ps.root]
    seen = 0
    while stack and seen < _MAX_GUARD_NODES:
        node = stack.pop()
        seen += 1
        if node.type == "function_definition":
            name = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if name is not None and body is not None:
                funcs[text_of(name)] = body
        stack.extend(node.named_children)

    def exits(node: Node, depth: int = 0) -> bool:
        """`node` runs `exit` in this shell (directly, in a `{ }` group, or in a function it calls)."""
        todo = [node]
        while todo:
            n = todo.pop()
            if n.type in ("subshell", "function_definition", "command_substitution", "process_substitution"):
                continue
            if n.type == "command":
                name_node = n.child_by_field_name("name")
                name = text_of(name_node) if name_node is not None else ""
                if name == "exit":
                    return True
                if name in funcs and depth < 3:
                    if name not in functions_exit:
                        functions_exit[name] = False  # (recursion)
                        functions_exit[name] = exits(funcs[name], depth + 1)
                    if functions_exit[name]:
                        return True
                continue
            todo.extend(n.named_children)
        return False

    stack = [ps.root]
    seen = 0
    while stack and seen < _MAX_GUARD_NODES:
        node = stack.pop()
        seen += 1
        if node.type == "list":
            _list_guard(node, exits, out)
        elif node.type == "if_statement":
            _if_guard(node, exits, out)
        stack.extend(node.named_children)
    return out


def _operator(node: Node) -> str:
    kids = [c for c in node.children if c.type != "comment"]
    return kids[1].type if len(kids) >= 3 else ""


_ARG_COUNT = re.compile(r'^"?\$(?:#|\{#\})"?$')


def _arg_count_guard(expr: Node) -> str | None:
    """`[ "$#" -lt 3 ]`, `[ $# -ne 2 ]`, `[ $# -eq 0 ]`: the script needs N arguments -> "#N"."""
    left, right = expr.child_by_field_name("left"), expr.child_by_field_name("right")
    op = expr.child_by_field_name("operator")
    if left is None or right is None or op is None or not _ARG_COUNT.match(text_of(left)):
        return None
    number = text_of(right).strip('"')
    if not number.isdigit():
        return None
    n = int(number)
    need = {"-lt": n, "-ne": n, "-le": n + 1, "-eq": 1 if n == 0 else 0}.get(text_of(op), 0)
    return f"#{need}" if 0 < need <= 16 else None


def _tested(test: Node, want: str) -> str | None:
    """The variable `[ -z "$X" ]` (want `-z`) or `[ -n "$X" ]` (want `-n`) tests, or None; for `-z`,
    also an argument count too small (`[ $# -lt 3 ]`, as "#3")."""
    if test.type != "test_command":
        return None
    inner = test.named_children
    if len(inner) == 1 and inner[0].type == "binary_expression" and want == "-z":
        return _arg_count_guard(inner[0])
    if len(inner) != 1 or inner[0].type != "unary_expression":
        return None
    expr = inner[0]
    op = expr.children[0]
    if text_of(op) != want:
        return None
    m = _OPERAND.match(text_of(expr.named_children[-1]))
    return (m.group(1) or m.group(2)) if m else None


def _list_guard(node: Node, exits: Callable[[Node], bool], out: dict[int, str]) -> None:
    """`[ -z "$X" ] && ... exit` and `[ -n "$X" ] || ... exit` (the test is the leftmost operand)."""
    op = _operator(node)
    if op not in ("&&", "||"):
        return
    left = node.named_children[0]
    while left.type == "list" and _operator(left) == op:
        left = left.named_children[0]
    name = _tested(left, "-z" if op == "&&" else "-n")
    if name is not None and exits(node.named_children[-1]):
        out[left.start_byte] = name


def _if_guard(node: Node, exits: Callable[[Node], bool], out: dict[int, str]) -> None:
    """`if [ -z "$X" ]; then ... exit ...; fi` (also `[ -z "$A" ] || [ -z "$B" ]` as the condition)."""
    conds: list[Node] = []
    body: list[Node] = []
    other: list[Node] = []  # the elif and else clauses
    for i, child in enumerate(node.children):
        field = node.field_name_for_child(i)
        if field == "condition":
            if child.type != "comment" and child.is_named:
                conds.append(child)
        elif child.type in ("elif_clause", "else_clause"):
            other.append(child)
        elif child.is_named and child.type != "comment":
            body.append(child)
    if len(conds) == 1 and len(other) == 1 and other[0].type == "else_clause" and exits(other[0]):
        # `if [ -n "$X" ]; then ARGS=...; else echo "X?"; exit 1; fi` (also `[ -n "$A" ] && [ -n "$B" ]`): the script
        # exits unless the caller set X (a job script submitted with `qsub -v X=...`)
        out.update(_joined_tests(conds[0], "&&", "-n"))
        return
    if len(conds) != 1 or not any(exits(b) for b in body):
        return
    out.update(_joined_tests(conds[0], "||", "-z"))


def _joined_tests(cond: Node, joiner: str, want: str) -> list[tuple[int, str]]:
    """(start byte, variable) of each `[ want "$X" ]` of a condition made of such tests joined by `joiner`; none
    when any part is another kind of condition (not a plain input guard)."""
    tests, found = [cond], []
    while tests:
        t = tests.pop()
        if t.type == "list" and _operator(t) == joiner:
            tests.extend(t.named_children)
            continue
        name = _tested(t, want)
        if name is None:
            return []
        found.append((t.start_byte, name))
    return found


def assume_caller_set(interp: Interpreter, name: str, world: World, span: Span, text: str) -> None:
    """The guarded variable is set by the caller (value unknown) when nothing has set it on this path."""
    if name.startswith("#"):  # `[ $# -lt 3 ] && exit 1`: the caller gives (at least) 3 arguments
        need = int(name[1:])
        if interp.args or len(world.positional) >= need:
            return
        why = f"given by the caller (the script exits at line {span.line} with fewer than {need} arguments)"
        world.positional = list(world.positional) + [Unknown(why, span)] * (need - len(world.positional))
        interp.diag(
            "info",
            "input-guard",
            f"`{text}` stops the script with fewer than {need} arguments: the launch is analysed with "
            f"{need} arguments from the caller, their values unknown",
            span,
        )
        return
    why = f"${name} is given by the caller (the script exits at line {span.line} when it is empty)"
    if name.isdigit():
        n = int(name)
        if interp.args or n <= len(world.positional):
            return  # arguments were given (--args): they decide
        world.positional = list(world.positional) + [Unknown(why, span)] * (n - len(world.positional))
    else:
        if any(name in frame for frame in world.locals_stack):
            return
        if name in world.vars and not _callers_value(interp, name, world.vars[name]):
            return
        world.vars[name] = Variable(Unknown(why, span), exported=True, source="caller")
    interp.diag(
        "info",
        "input-guard",
        f"`{text}` stops the script when ${name} is empty: the launch is analysed with ${name} set by the "
        "caller, its value unknown",
        span,
    )


def _callers_value(interp: Interpreter, name: str, var: Variable) -> bool:
    """`MODEL_PATH=${MODEL_PATH:-}` (also `X=${X}`, `X="$X"`, `X=${X-}`): the script only copies the
    caller's value into the variable, empty here; a guard on it still says the caller sets it."""
    if not isinstance(var.value, Known) or var.value.text or var.assigned_at is None or interp._here is None:
        return False
    ps = interp._here[1]
    at = var.assigned_at
    if at.file != ps.source.path:
        return False
    lines = ps.source.data.split(b"\n")
    if not 0 < at.line <= len(lines):
        return False
    text = lines[at.line - 1].decode("utf-8", "replace")
    n = re.escape(name)
    return re.search(rf"\b{n}=([\"']?)\$(\{{{n}(:?[-=])?\}}|{n}\b)\1(\s|;|$)", text) is not None


def guard_name(interp: Interpreter, node: Node, ps: ParsedScript) -> str | None:
    """The variable the test `node` guards, if it is an input guard (see guard_tests)."""
    key = id(ps)
    entry = interp.guard_memo.get(key)
    if entry is None or entry[0] is not ps:
        entry = interp.guard_memo[key] = (ps, guard_tests(ps))
    return entry[1].get(node.start_byte)


# `$1`, `$@`, `${2:-x}`, `${#1}`: a read of the script's positional arguments
_POSITIONAL_REF = LazyRegex(r"\$(?:[1-9@*]|\{[#!]?(?:[1-9][0-9]*|[@*])[^}]*\})")


def from_caller_arguments(text: str, first_line: int, last_line: int) -> bool:
    """Lines `first_line`..`last_line` (0-based, of `text`) expand something while the script reads its
    positional arguments: checked without arguments `$1` is empty, so a path written there
    (`blend=$1; . ./sft/"$blend".sh`, `file=./train/$1.py`) names the caller's file, not a missing one."""
    lines = text.split("\n")
    first = max(first_line, 0)
    if "$" not in "\n".join(lines[first : max(last_line, first) + 1]):
        return False
    return _POSITIONAL_REF.search(text) is not None
