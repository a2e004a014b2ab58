"""Statements and control flow: blocks, subshells, pipelines, `if`, `case`, functions."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from packlint.interpret import arithmetic, assignment, exit_status, expansion, fallbacks, loops
from packlint.interpret.limits import MAX_NESTING
from packlint.interpret.patterns import glob_match
from packlint.interpret.syntax import NOISE, child_statements, snippet, text_of
from packlint.interpret.world import World
from packlint.parse import ParsedScript
from packlint.values import Condition, Known

if TYPE_CHECKING:
    from tree_sitter import Node

    Clause = tuple[list[Node] | None, list[Node]]  # (condition, body) of `if`/`elif`; None: `else`
    CaseArm = tuple[list[Node], list[Node], Node]  # (patterns, body, case_item) of one `case` arm
    from packlint.interpret.run import Interpreter


def exec_program(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    return interp.exec_block(child_statements(node), [world], ps)


def exec_compound(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    if node.children and node.children[0].type == "((":
        for c in node.named_children:
            arithmetic.arith(interp, c, world, ps)
        return [world]
    return interp.exec_block(child_statements(node), [world], ps)


def exec_subshell(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    interp.exec_block(child_statements(node), [world.fork()], ps)
    return [world]


def exec_redirected(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    """A statement with redirections: `while read ... <<< "..."` over known lines, else the body."""
    body = node.child_by_field_name("body")
    if body is None:
        return [world]
    if body.type == "while_statement":
        lines = fed_lines(interp, node, world, ps)
        if lines is not None:
            fed = loops.while_read(interp, body, lines, world, ps)
            if fed is not None:
                return fed
    return interp.exec_stmt(body, world, ps)


def fed_lines(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[str] | None:
    """The lines a loop reads from `<<< "text"` or a here-document, when they are known."""
    for c in node.children:
        if c.type == "herestring_redirect":
            value = next((x for x in c.named_children), None)
            text = expansion.expand_joined(interp, value, world, ps) if value is not None else None
            return text.text.split("\n") if isinstance(text, Known) else None
        if c.type == "heredoc_redirect":
            body = next((x for x in c.named_children if x.type == "heredoc_body"), None)
            if body is None or body.named_children:  # expansions inside: not followed
                return None
            return text_of(body).rstrip("\n").split("\n")
    return None


def exec_pipeline(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    parts = [c for c in node.named_children if c.type not in NOISE]
    for part in parts:  # every element runs in a subshell: its variables do not come back
        interp.exec_stmt(part, world.fork(), ps)
    return [world]


def exec_negated(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    return [w for w, _ in exit_status.status(interp, node, world, ps)]


def exec_list(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    return [w for w, _ in exit_status.status(interp, node, world, ps)]


def exec_test(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    return [world]


def exec_function_definition(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    name_node = node.child_by_field_name("name")
    body = node.child_by_field_name("body")
    if name_node is not None and body is not None:
        world.functions[text_of(name_node)] = (body, ps)
    return [world]


def exec_assignment(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    assignment.assign(interp, node, world, ps)
    return [world]


def exec_assignments(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    for c in node.named_children:
        if c.type == "variable_assignment":
            assignment.assign(interp, c, world, ps)
    return [world]


def exec_if(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    """`if`/`elif`/`else`: the clauses in order, each condition run for its status."""
    clauses: list[Clause] = []  # (condition nodes or None, body statements)
    cond: list[Node] = []
    body: list[Node] = []
    for i, child in enumerate(node.children):
        fname = node.field_name_for_child(i)
        if child.type in ("elif_clause", "else_clause"):
            continue
        if fname == "condition":
            if child.type not in NOISE:
                cond.append(child)
        elif child.is_named and child.type not in NOISE:
            body.append(child)
    clauses.append((cond, body))
    for child in node.named_children:
        if child.type == "elif_clause":
            c_nodes: list[Node] = []
            b_nodes: list[Node] = []
            in_body = False
            for sub in child.children:
                if sub.type == "then":
                    in_body = True
                    continue
                if sub.is_named and sub.type not in NOISE:
                    (b_nodes if in_body else c_nodes).append(sub)
            clauses.append((c_nodes, b_nodes))
        elif child.type == "else_clause":
            clauses.append((None, child_statements(child)))
    return run_clauses_at(interp, clauses, world, ps)  # only `elif` levels count as nesting


def run_clauses(interp: Interpreter, clauses: list[Clause], world: World, ps: ParsedScript) -> list[World]:
    """The remaining `elif`/`else` clauses, one nesting level per `elif`."""
    if not clauses:
        return [world]
    interp.depth += 1  # one level per `elif`: a long chain recurses
    try:
        if interp.depth > MAX_NESTING:
            cond = clauses[0][0]
            interp.diag(
                "warning",
                "too-deep",
                "nesting too deep to analyse; the rest of this construct is skipped",
                ps.source.span(cond[-1]) if cond else None,
            )
            return [world]
        return run_clauses_at(interp, clauses, world, ps)
    finally:
        interp.depth -= 1


def run_clauses_at(interp: Interpreter, clauses: list[Clause], world: World, ps: ParsedScript) -> list[World]:
    """Take the branch a known status decides; fork the world on an unknown one."""
    (cond, body), rest = clauses[0], clauses[1:]
    if cond is None:
        interp.note_branch(body, ps, lambda: "the `else` body")
        return interp.exec_block(body, [world], ps)
    results: list[World] = []
    origin = fallbacks.test_origin(cond, world, ps)  # `if [ -z "$X" ]` on a variable the script never sets
    for w, status in exit_status.status_seq(interp, cond, world, ps, in_condition=True):
        if status is True:
            interp.note_branch(body, ps, lambda: f"the `if {snippet(cond[-1], 40)}` body")
            with fallbacks.premise(interp, origin):
                results.extend(interp.exec_block(body, [w], ps))
        elif status is False:
            with fallbacks.premise(interp, origin):
                results.extend(run_clauses(interp, rest, w, ps))
        else:  # unknown: `cond` is not empty (an empty condition list is true)
            text, span = snippet(cond[-1]), ps.source.span(cond[-1])
            yes, no = w, w.fork()
            yes.when = yes.when + (Condition(text, "is true", span),)
            no.when = no.when + (Condition(text, "is false", span),)
            interp.note_branch(body, ps, lambda: f"the `if {snippet(cond[-1], 40)}` body")
            results.extend(interp.exec_block(body, [yes], ps))
            results.extend(run_clauses(interp, rest, no, ps))
    return interp.merge(results)


def exec_case(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    """`case`: a known subject picks its arms; an unknown one forks one world per arm."""
    subject_node = node.child_by_field_name("value")
    if subject_node is None:
        subject_node = next((c for c in node.named_children if c.type != "case_item"), None)
    subject = expansion.expand_joined(interp, subject_node, world, ps) if subject_node is not None else Known("")
    items = [c for c in node.named_children if c.type == "case_item"]
    arms = []
    for item in items:
        patterns, body, seen_paren = [], [], False
        for c in item.children:
            if c.type == ")":
                seen_paren = True
                continue
            if not seen_paren:
                if c.is_named and c.type not in NOISE:
                    patterns.append(c)
            elif c.is_named and c.type not in NOISE:
                body.append(c)
        arms.append((patterns, body, item))
    if isinstance(subject, Known):
        decided = case_known(interp, subject.text, arms, world, ps)
        if decided is not None:
            return decided
    # undecidable: one world per arm, plus "no arm matched" unless there is a catch-all
    results: list[World] = []
    subject_text = snippet(subject_node) if subject_node is not None else "?"
    catch_all = False
    for patterns, body, item in arms:
        w = world.fork()
        pat_text = " | ".join(snippet(p) for p in patterns)
        w.when = w.when + (Condition(f"case {subject_text}", f"matches `{pat_text})`", ps.source.span(item)),)
        interp.note_branch(body, ps, f"the `case {subject_text}` arm `{pat_text})`")
        results.extend(interp.exec_block(body, [w], ps))
        if any(snippet(p) == "*" for p in patterns):
            catch_all = True
            break
    if not catch_all:
        w = world.fork()
        w.when = w.when + (Condition(f"case {subject_text}", "matches no arm", ps.source.span(node)),)
        results.append(w)
    return interp.merge(results)


def _arm_label(patterns: list[Node]) -> Callable[[], str]:
    return lambda: f"the `case` arm `{' | '.join(snippet(p) for p in patterns)})`"


def case_known(
    interp: Interpreter, subject: str, arms: list[CaseArm], world: World, ps: ParsedScript
) -> list[World] | None:
    """`case` on a known subject, with bash's terminators: `;;` stops, `;&` runs the next arm's body
    too, `;;&` goes on testing the arms after it. None: a pattern is unknown (undecidable)."""
    worlds = [world]
    i, run_next = 0, False
    while i < len(arms):
        patterns, body, item = arms[i]
        if not run_next:
            matched = False
            for p in patterns:
                pat = expansion.expand_pattern(interp, p, world, ps)
                if pat is None:
                    return None if worlds == [world] else worlds
                hit = glob_match(subject, pat)
                if hit is None:  # too costly to decide: as an unknown pattern
                    return None if worlds == [world] else worlds
                if hit:
                    matched = True
                    break
            if not matched:
                i += 1
                continue
        interp.note_branch(body, ps, _arm_label(patterns))
        worlds = interp.exec_block(body, worlds, ps)
        terminator = next((c.type for c in item.children if c.type in (";;", ";&", ";;&")), ";;")
        if terminator == ";;":
            return worlds
        run_next = terminator == ";&"
        i += 1
    return worlds
