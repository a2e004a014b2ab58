"""Exit status of a statement where it decides control flow (`&&`, `||`, `!`, conditions)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from packlint.interpret import arithmetic, commands, conditionals, fallbacks, statements
from packlint.interpret.bash_tables import PREDICATES
from packlint.interpret.limits import MAX_NESTING
from packlint.interpret.syntax import NOISE, snippet, text_of
from packlint.interpret.world import StatusOut, World
from packlint.parse import ParsedScript
from packlint.values import Condition, Known, Unknown

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def status_seq(
    interp: Interpreter, nodes: list[Node], world: World, ps: ParsedScript, in_condition: bool = False
) -> list[tuple[World, bool | None]]:
    """Run a condition list (`if a; b; then`): the status is the last command's."""
    if not nodes:
        return [(world, True)]
    pairs: StatusOut = [(world, True)]
    for n in nodes:
        nxt: StatusOut = []
        for w, _ in pairs:
            if w.flow is not None:
                nxt.append((w, False))
                continue
            nxt.extend(status(interp, n, w, ps, in_condition))
        pairs = nxt
    return pairs


def status(
    interp: Interpreter, node: Node, world: World, ps: ParsedScript, in_condition: bool = False
) -> list[tuple[World, bool | None]]:
    """Run a statement and give its exit status per world (None: unknown), bounded by MAX_NESTING."""
    interp.depth += 1  # `a && b && ...` and `! ! ...` nest one level per operator
    try:
        if interp.depth > MAX_NESTING:
            interp.diag(
                "warning",
                "too-deep",
                "nesting too deep to analyse; the rest of this construct is skipped",
                ps.source.span(node),
            )
            return [(world, None)]
        return status_at(interp, node, world, ps, in_condition)
    finally:
        interp.depth -= 1


def status_at(
    interp: Interpreter, node: Node, world: World, ps: ParsedScript, in_condition: bool = False
) -> list[tuple[World, bool | None]]:
    """The status by node type: `&&`/`||` lists fork on unknown statuses, `!` negates, tests decide."""
    t = node.type
    if t == "list":
        kids = [c for c in node.children if c.type not in ("comment",)]
        left, op, right = kids[0], kids[1].type, kids[-1]
        if op not in ("&&", "||") or len(kids) < 3:  # a grammar gap: an ERROR node where the operator is
            interp.names_unknown(node, world, ps)
            return [(world, None)]
        out = []
        origin = fallbacks.test_origin([left], world, ps)  # `[ -z "$X" ] && X=...`
        for w, st in status(interp, left, world, ps, in_condition):
            if w.flow is not None:
                out.append((w, st))
                continue
            run_right = {"&&": st, "||": None if st is None else not st}[op]
            if run_right is not False:
                interp.note_branch([right], ps, lambda: f"the command after `{snippet(left, 40)} {op}`")
            if run_right is True:
                with fallbacks.premise(interp, origin):
                    out.extend(status(interp, right, w, ps, in_condition))
            elif run_right is False:
                out.append((w, st))
            else:
                text = snippet(left)
                span = ps.source.span(left)
                yes, no = w, w.fork()
                runs = "succeeds" if op == "&&" else "fails"
                skips = "fails" if op == "&&" else "succeeds"
                yes.when = yes.when + (Condition(text, runs, span),)
                no.when = no.when + (Condition(text, skips, span),)
                out.extend(status(interp, right, yes, ps, in_condition))
                out.append((no, op == "||"))
        return out
    if t == "negated_command":
        inner = node.named_children[-1]
        return [(w, None if s is None else not s) for w, s in status(interp, inner, world, ps, in_condition)]
    if t == "test_command":
        return [(world, conditionals.eval_test_node(interp, node, world, ps))]
    if t == "compound_statement" and node.children and node.children[0].type == "((":
        v = None
        for c in node.named_children:
            v = arithmetic.arith(interp, c, world, ps)
        return [(world, None if isinstance(v, Unknown) or v is None else v != 0)]
    if t == "redirected_statement":
        body = node.child_by_field_name("body")
        return status(interp, body, world, ps, in_condition) if body is not None else [(world, None)]
    if t == "pipeline":
        statements.exec_pipeline(interp, node, world, ps)
        last = [c for c in node.named_children if c.type not in NOISE][-1]
        bang = node.children and node.children[0].type == "!"
        st = command_status_guess(interp, last, world, ps, in_condition)
        return [(world, None if st is None else (not st if bang else st))]
    if t == "command":
        before = len(interp.launches)
        fields_status: list[tuple[World, bool | None]] = []
        worlds = commands.exec_command(interp, node, world, ps, status_out=fields_status)
        if fields_status:
            return fields_status
        guessed = command_status_guess(interp, node, world, ps, in_condition)
        if len(interp.launches) > before:
            guessed = None
        return [(w, guessed if w.flow is None else False) for w in worlds]
    worlds = interp.exec_stmt(node, world, ps)
    return [(w, None if in_condition else True) for w in worlds]


def command_status_guess(
    interp: Interpreter, node: Node, world: World, ps: ParsedScript, in_condition: bool
) -> bool | None:
    """Ordinary commands in `&&`/`||` lists are assumed to succeed (launch scripts run on a working
    machine); in `if`/`while` conditions, and for commands that exist to be tested, it is unknown."""
    if node.type != "command":
        return None if in_condition else True
    name_node = node.child_by_field_name("name")
    name = text_of(name_node) if name_node is not None else ""
    if name_node is not None and "$" in name and name_node.named_children:
        # `if $UNIQUE_SOLUTION; then` with UNIQUE_SOLUTION=true: the command bash runs is the value
        from packlint.interpret.expansion import expand_joined

        value = expand_joined(interp, name_node.named_children[0], world.fork(), ps)
        name = value.text if isinstance(value, Known) else name
    if name in ("true", ":"):
        return True
    if name == "false":
        return False
    if in_condition or os.path.basename(name) in PREDICATES:
        return None
    return True
