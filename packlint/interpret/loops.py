"""Loops: `for`, C-style `for`, `while`/`until`, `while read` over known input; bounded unrolling."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packlint import evidence
from packlint.interpret import arithmetic, exit_status, expansion
from packlint.interpret.limits import MAX_LOOP_ITERATIONS, MAX_LOOP_WORLDS
from packlint.interpret.syntax import NOISE, bytes_of, child_statements, glued_groups, name_of, snippet
from packlint.interpret.world import World, join_worlds, reassigned
from packlint.parse import ParsedScript
from packlint.values import Condition, Known, Span, Unknown, Value

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def while_read(interp: Interpreter, loop: Node, lines: list[str], world: World, ps: ParsedScript) -> list[World] | None:
    """`while read a b; do ...; done <<< "..."`: one iteration per known input line, with the
    variables `read` sets (split on IFS, the last one taking the rest of the line)."""
    conds = [
        loop.children[i]
        for i in range(loop.child_count)
        if loop.field_name_for_child(i) == "condition" and loop.children[i].type not in NOISE
    ]
    body = loop.child_by_field_name("body")
    if len(conds) != 1 or conds[0].type != "command" or body is None:
        return None
    cmd = conds[0]
    name_node = cmd.child_by_field_name("name")
    if name_node is None or name_node.text != b"read":
        return None
    ifs = None
    for c in cmd.children:
        if c.type != "variable_assignment":
            continue
        assigned = c.child_by_field_name("name")
        if assigned is not None and assigned.text == b"IFS":
            v = expansion.expand_joined(interp, c.child_by_field_name("value"), world, ps)
            ifs = v.text if isinstance(v, Known) else None
    args: list[Value] = []
    for i, c in enumerate(cmd.children):
        if cmd.field_name_for_child(i) == "argument":
            args.extend(expansion.expand_fields(interp, c, world, ps))
    words = [a.text for a in args if isinstance(a, Known)]
    if len(words) != len(args):
        return None
    names = [word for word in words if not word.startswith("-")]
    if (
        not names
        or any(not re.fullmatch(r"[A-Za-z_]\w*", n) for n in names)
        or any(word.startswith("-") and set(word[1:]) - set("rs") for word in words)
    ):
        return None
    span = ps.source.span(cmd)
    worlds = [world]
    for line in lines[:MAX_LOOP_ITERATIONS]:
        if ifs is None or ifs == " \t\n":
            parts = line.split(None, len(names) - 1)
        elif not ifs:  # `while IFS= read -r line`: no splitting, the whole line (fyh2001/megatron-sft-recipes)
            parts = [line]
        else:
            parts = re.split("[" + re.escape(ifs) + "]", line, maxsplit=len(names) - 1)
        parts += [""] * (len(names) - len(parts))
        for w in worlds:
            if w.flow is None:
                for n, part in zip(names, parts, strict=False):
                    interp.set_var(w, n, reassigned(w, n, Known(part, span), span), span)
        worlds = loop_body(interp, body, worlds, ps)
        if all(w.flow is not None for w in worlds):
            break
    for w in worlds:
        after_loop(w)
    return worlds


def exec_for(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    """`for NAME in WORDS`: one pass per known item (up to MAX_LOOP_ITERATIONS, then widened)."""
    var_node = node.child_by_field_name("variable")
    body = node.child_by_field_name("body")
    if var_node is None or body is None:
        return [world]
    name = name_of(var_node)
    value_nodes = [node.children[i] for i in range(node.child_count) if node.field_name_for_child(i) == "value"]
    has_in = any(c.type == "in" for c in node.children)
    if has_in:
        items: list[Value] = []
        for group in glued_groups(value_nodes):
            items.extend(expansion.expand_group(interp, group, world, ps))
    else:
        items = list(world.positional)
    span = ps.source.span(node)
    if any(not isinstance(i, Known) for i in items):
        reason = next(i.reason for i in items if isinstance(i, Unknown))
        return loop_unknown(interp, body, world, ps, name, Unknown(reason, span), f"for {name} in ...", span)
    entry = world.fork()
    worlds = [world]
    for count, item in enumerate(items):
        if count >= MAX_LOOP_ITERATIONS:
            worlds = loop_widen(interp, body, entry, worlds, ps, name, f"for {name} in ...", span, len(items))
            break
        for w in worlds:
            interp.set_var(w, name, reassigned(w, name, item, span), span)
        interp.context.append(f"for {name}={item.text} ({span.short()})")
        try:
            worlds = loop_body(interp, body, worlds, ps)
        finally:
            interp.context.pop()
        if all(w.flow is not None and w.flow.startswith("break_done") for w in worlds):
            break
    for w in worlds:
        after_loop(w)
    return worlds


def loop_body(interp: Interpreter, body: Node, worlds: list[World], ps: ParsedScript) -> list[World]:
    """One pass through a loop body: `break`/`continue [N]`; worlds joined past MAX_LOOP_WORLDS."""
    active = [w for w in worlds if w.flow is None]
    rest = [w for w in worlds if w.flow is not None]
    out = interp.exec_block(child_statements(body), active, ps) if active else []
    for w in out:
        if w.flow == "continue":
            w.flow = None
        elif w.flow == "break":
            w.flow = "break_done"
        elif w.flow and w.flow.startswith(("break ", "continue ")):
            # `break 2` / `continue 2`: leave this loop, then act on the enclosing one
            kind, n = w.flow.split()
            w.flow = f"break_done {kind}" + ("" if int(n) == 2 else f" {int(n) - 1}")
    going = [w for w in out if w.flow is None]
    if len(going) > MAX_LOOP_WORLDS:
        # Undecidable branches inside a loop would multiply the worlds with every iteration (k**n):
        # the worlds that go on to the next iteration are joined (what they disagree on is unknown).
        span = going[0].when[-1].span if going[0].when else None
        joined = join_worlds(going, "undecidable branches inside a loop", span)
        out = [w for w in out if w.flow is not None] + [joined]
    return interp.merge(rest + out)


def loop_widen(
    interp: Interpreter,
    body: Node,
    entry: World,
    worlds: list[World],
    ps: ParsedScript,
    var: str | None,
    text: str,
    span: Span,
    total: int | None = None,
) -> list[World]:
    """The unroll cap is reached: the remaining iterations are analysed in one symbolic pass from
    a state where whatever the iterations changed is unknown (launches inside are still seen)."""
    done = [w for w in worlds if w.flow is not None]
    live = [w for w in worlds if w.flow is None]
    many = f"{total} iterations" if total else "more iterations"
    interp.diag(
        "info",
        "loop-bound",
        f"loop has {many}: the first {MAX_LOOP_ITERATIONS} are followed one by "
        "one, the rest in one pass with the values they change unknown",
        span,
    )
    if not live:
        return done
    joined = join_worlds([entry] + live, f"the iterations of the loop at {span.short()}", span)
    value = Unknown(f"set by the later iterations of the loop at {span.short()}", span)
    times = f"{total - MAX_LOOP_ITERATIONS} more times" if total else "how many more times is unknown"
    out = loop_unknown(interp, body, joined, ps, var, value if var else None, text, span, times)
    for w in out:
        if w.flow == "loop_done":
            w.flow = None
    return done + out


def loop_endless(interp: Interpreter, body: Node, world: World, ps: ParsedScript, span: Span) -> list[World]:
    """`while true` / `while :`: never unrolled. One pass from the entry state finds what the loop
    does with known values; a second pass from the join of entry and exit states (what an iteration
    changes becomes unknown) finds the ways out (`break`, `exit`) that depend on those changes.
    Worlds still looping after that never leave the loop in bash."""
    entry = world.fork()
    first = loop_body(interp, body, [world], ps)
    out = [w for w in first if w.flow is not None]
    live = [w for w in first if w.flow is None]
    if live:
        joined = join_worlds([entry] + live, f"the iterations of the loop at {span.short()}", span)
        second = loop_body(interp, body, [joined], ps)
        out.extend(w for w in second if w.flow is not None)
        forever = [w for w in second if w.flow is None]
        if forever and not out:
            for w in forever:
                w.flow = "exit"  # bash never gets past a loop nothing leaves
            out = forever
    return out


def loop_unknown(
    interp: Interpreter,
    body: Node,
    world: World,
    ps: ParsedScript,
    var: str | None,
    value: Value | None,
    text: str,
    span: Span,
    times: str = "how many times is unknown",
) -> list[World]:
    """A loop whose iteration count is unknown: model "never runs" and "runs once". A launch inside
    is one launch per iteration in bash: its context says so (`times`)."""
    skip = world.fork()
    skip.when = skip.when + (Condition(text, "runs no iteration", span),)
    run = world
    run.when = run.when + (Condition(text, "runs its body", span),)
    if var is not None:
        interp.set_var(run, var, reassigned(run, var, value, span), span)
    interp.context.append(f"{text} ({span.short()}): once per iteration, {times}")
    try:
        out = loop_body(interp, body, [run], ps)
    finally:
        interp.context.pop()
    for w in out:
        after_loop(w)
    # Joined again right after the loop: forking every later statement on "did that data loop run"
    # multiplies the work for nothing (such loops prepare data; they rarely set a gate). What the
    # loop changed becomes unknown; launches inside it keep their own `when`.
    going = [skip] + [w for w in out if w.flow is None]
    ended = [w for w in out if w.flow is not None]
    return interp.merge(ended + [join_worlds(going, f"how many times the loop at {span.short()} runs", span)])


def exec_c_for(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    """`for ((init; cond; update))`: unrolled while the condition is known, up to MAX_LOOP_ITERATIONS."""
    init = node.child_by_field_name("initializer")
    cond = node.child_by_field_name("condition")
    update = node.child_by_field_name("update")
    body = node.child_by_field_name("body")
    span = ps.source.span(node)
    if body is None:
        return [world]
    if init is not None:
        arithmetic.arith(interp, init, world, ps)
    entry = world.fork()
    worlds = [world]
    for count in range(MAX_LOOP_ITERATIONS + 1):
        if count == MAX_LOOP_ITERATIONS:
            worlds = loop_widen(interp, body, entry, worlds, ps, None, snippet(node), span)
            break
        live = [w for w in worlds if w.flow is None]
        if not live:
            break
        nxt = [w for w in worlds if w.flow is not None]
        for w in live:
            c = arithmetic.arith(interp, cond, w, ps) if cond is not None else 1
            if isinstance(c, Unknown):
                nxt.extend(loop_unknown(interp, body, w, ps, None, None, snippet(node), span))
                continue
            if c == 0:
                w.flow = "loop_done"
                nxt.append(w)
                continue
            out = loop_body(interp, body, [w], ps)
            for o in out:
                if o.flow is None and update is not None:
                    arithmetic.arith(interp, update, o, ps)
            nxt.extend(out)
        worlds = interp.merge(nxt)
    for w in worlds:
        after_loop(w)
    return worlds


def exec_while(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    """`while`/`until`: unrolled while the condition is known; endless loops analysed without unrolling."""
    cond_nodes = [
        node.children[i]
        for i in range(node.child_count)
        if node.field_name_for_child(i) == "condition" and node.children[i].type not in NOISE
    ]
    body = node.child_by_field_name("body")
    until = node.children[0].type == "until"
    span = ps.source.span(node)
    if body is None:
        return [world]
    constant = all(b"$" not in bytes_of(c) and b"`" not in bytes_of(c) for c in cond_nodes)
    entry = world.fork()
    worlds = [world]
    finished: list[World] = []
    for count in range(MAX_LOOP_ITERATIONS + 1):
        live = [w for w in worlds if w.flow is None]
        finished.extend(w for w in worlds if w.flow is not None)
        if not live:
            break
        if count == MAX_LOOP_ITERATIONS:
            finished.extend(loop_widen(interp, body, entry, live, ps, None, snippet(node).split("\n")[0], span))
            break
        nxt = []
        for w in live:
            for w2, status in exit_status.status_seq(interp, cond_nodes, w, ps, in_condition=True):
                if status is not None and until:
                    status = not status
                if status is False:
                    if count == 0 and not interp.args and w2.script_args and _POSITIONAL.search(_cond_text(cond_nodes)):
                        _argument_loop_skipped(body, w2, node)
                    finished.append(w2)
                elif status is True and constant:
                    # `while true`, `until false`: unbounded, never unrolled
                    finished.extend(loop_endless(interp, body, w2, ps, span))
                elif status is True:
                    nxt.extend(loop_body(interp, body, [w2], ps))
                else:
                    finished.extend(loop_unknown(interp, body, w2, ps, None, None, snippet(node).split("\n")[0], span))
        worlds = interp.merge(nxt)
    for w in finished:
        after_loop(w)
    return interp.merge(finished)


# a loop condition that reads the script's own arguments (`while [[ "$#" -gt 0 ]]`, `while [ -n "$1" ]`)
_POSITIONAL = re.compile(r"\$(?:#|\{#\}|[1-9@*]|\{[1-9@*])")


def _cond_text(cond_nodes: list[Node]) -> str:
    return " ".join(bytes_of(c).decode("utf-8", "replace") for c in cond_nodes)


def _argument_loop_skipped(body: Node, w: World, node: Node) -> None:
    """An argument loop that does not run because the script is taken to run without arguments: the values of the
    variables its body would set (gpauloski/BERT-PyTorch's `-a|--kwargs) KWARGS="$2"`) rest on that assumption
    (packlint.evidence.NO_ARGUMENTS), so what is decided from them is at most a warning naming it."""
    because = evidence.origin_of(
        evidence.ASSUMED,
        f"{evidence.NO_ARGUMENTS}: the loop over the arguments at line {node.start_point[0] + 1} sets it",
    )
    stack, names = [body], set()
    while stack:
        n = stack.pop()
        if n.type == "variable_assignment":
            target = n.child_by_field_name("name")
            if target is not None and target.text:
                names.add(target.text.decode("utf-8", "replace"))
        stack.extend(n.named_children)
    for name in names:
        var = w.vars.get(name)
        if var is None or not isinstance(var.value, Known) or var.value.origin:
            continue
        new = var.copy()
        new.value = Known(var.value.text, var.value.span, because, var.value.segs)
        w.vars[name] = new


def after_loop(w: World) -> None:
    """Leaving a loop: a plain break/end is done; `break 2`/`continue 2` act on the enclosing loop."""
    if w.flow in ("break_done", "loop_done"):
        w.flow = None
    elif w.flow is not None and w.flow.startswith("break_done "):
        w.flow = w.flow[len("break_done ") :]
