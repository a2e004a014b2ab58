"""Variable assignment: `A=v`, `A+=v`, arrays, `A[i]=v`, integer and nameref variables."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packlint.interpret import arithmetic, expansion, fallbacks
from packlint.interpret.limits import MAX_ARRAY_ITEMS
from packlint.interpret.syntax import glued_groups, name_of, snippet, text_of
from packlint.interpret.words import array_too_large, capped_items, concat_values, join_pieces
from packlint.interpret.world import World
from packlint.parse import ParsedScript
from packlint.values import Known, Unknown, Value, Variable

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def assignment_value(
    interp: Interpreter, node: Node, world: World, ps: ParsedScript, glue_tail: list[Node] | None = None
) -> tuple[str | None, Variable]:
    """The (name, new variable) an assignment node gives, from the old value (`+=`, `declare -i`)."""
    name_node = node.child_by_field_name("name")
    value_node = node.child_by_field_name("value")
    span = ps.source.span(node)
    if name_node is None:
        return None, Variable()
    name = text_of(name_node)
    if name_node.type == "subscript":
        return None, Variable()
    appending = any(c.type == "+=" for c in node.children)
    old = world.vars.get(name)
    if value_node is not None and value_node.type == "array":
        items: list[Value | None] = []
        prev: list[Value | None] = []
        if appending and old is not None:
            prev = old.items if old.items is not None else ([old.value] if old.value is not None else [])
        if array_too_large(prev):  # already past the cap: stays unknown, and costs nothing more
            items = list(prev)
        else:
            for group in glued_groups([c for c in value_node.named_children if c.type != "comment"]):
                items.extend(expansion.expand_group(interp, group, world, ps))
                if len(prev) + len(items) > MAX_ARRAY_ITEMS:
                    break
            items = capped_items(list(prev) + items if prev else items, span)
        return name, Variable(None, items, old.exported if old else False, span, old.exported_at if old else None)
    if glue_tail:
        assert value_node is not None, "a glue tail follows a value that ends with `$`"
        value = join_pieces(
            expansion.group_pieces(interp, [value_node, *glue_tail], world, ps),
            ps.source.span_of_points(value_node.start_point, glue_tail[-1].end_point),
        )
    else:
        value = expansion.expand_joined(interp, value_node, world, ps) if value_node is not None else Known("", span)
    if old is not None and old.integer and old.items is None:
        # `declare -i M; M=2+3; M+=1`: the value is evaluated as arithmetic (and += adds)
        r = arithmetic.to_int(value.text, world) if isinstance(value, Known) else Unknown(value.reason)
        if appending and not isinstance(r, Unknown):
            cur = arithmetic.to_int(old.value.text, world) if isinstance(old.value, Known) else Unknown("unknown value")
            r = cur if isinstance(cur, Unknown) else cur + r
        var = Variable(
            Known(str(r), span) if not isinstance(r, Unknown) else Unknown(r.reason, span),
            None,
            old.exported,
            span,
            old.exported_at,
        )
        var.integer = True
        return name, var
    if appending and old is not None:
        if old.items is not None:
            items = list(old.items)
            if items:
                first = items[0]  # `A[1]=x; A+=y`: y goes to the unset A[0] ("y x")
                items[0] = concat_values(first if first is not None else Known(""), value, span)
            else:
                items = [value]
            return name, Variable(None, items, old.exported, span, old.exported_at)
        value = concat_values(old.value or Known(""), value, span)
    if isinstance(value, Known) and value.span is None:
        value = Known(value.text, span)
    if isinstance(value, Known) and interp.branch_origin is not None:
        value = fallbacks.carry(interp, value)  # set in `if [ -z "$X" ]`'s branch: holds on X unset
    return name, Variable(value, None, old.exported if old else False, span, old.exported_at if old else None)


def assign(
    interp: Interpreter,
    node: Node,
    world: World,
    ps: ParsedScript,
    *,
    export: bool = False,
    local: bool = False,
    force_array: bool = False,
    glue_tail: list[Node] | None = None,
    value: tuple[str | None, Variable] | None = None,
) -> str | None:
    """Run one assignment: through namerefs, not over readonly variables, keeping the export mark. `value`: the
    (name, variable) already expanded (a declaration command expands all its words first: declarations)."""
    name_node = node.child_by_field_name("name")
    if name_node is not None and name_node.type == "subscript":
        assign_subscript(interp, node, name_node, world, ps)
        return None
    name, var = value if value is not None else assignment_value(interp, node, world, ps, glue_tail=glue_tail)
    if name is None:
        return None
    old = world.vars.get(name)
    if old is not None and old.ref is not None:  # through a nameref: the named variable is set
        name = old.ref
        old = world.vars.get(name)
    if old is not None and old.readonly:
        interp.diag(
            "warning", "readonly", f"assignment to readonly variable {name} is ignored by bash", var.assigned_at
        )
        return name
    if force_array and var.items is None:
        var = Variable(None, [] if var.value is None else [var.value], var.exported, var.assigned_at, var.exported_at)
    if old is not None and old.source in ("caller", "cluster") and not export:
        var.exported = True  # a variable from the environment stays exported
    if export:
        var.exported = True
        var.exported_at = var.assigned_at
    if local and world.locals_stack:
        frame = world.locals_stack[-1]
        if name not in frame:
            frame[name] = old
    interp.set_var(world, name, var, var.assigned_at)
    return name


def assign_subscript(interp: Interpreter, node: Node, sub: Node, world: World, ps: ParsedScript) -> None:
    """`A[i]=v` (indexed, sparse) and `C[key]=v` (associative)."""
    name = sub.child_by_field_name("name")
    index = sub.child_by_field_name("index")
    value_node = node.child_by_field_name("value")
    if name is None:
        return
    vname = name_of(name)
    span = ps.source.span(node)
    value = expansion.expand_joined(interp, value_node, world, ps) if value_node is not None else Known("", span)
    old = world.vars.get(vname)
    if old is not None and old.assoc is not None:  # C[key]=v / C[key]+=v
        key = expansion.expand_joined(interp, index, world, ps) if index is not None else Known("")
        new = old.copy()
        if not isinstance(key, Known):
            new.assoc = {}
        else:
            assoc = new.assoc
            assert assoc is not None, "a copy keeps the associative array"
            if any(c.type == "+=" for c in node.children) and key.text in assoc:
                value = concat_values(assoc[key.text], value, span)
            assoc[key.text] = value
        world.vars[vname] = new
        return
    idx = arithmetic.arith(interp, index, world, ps) if index is not None else Unknown("no index")
    items: list[Value | None] = (
        list(old.items)
        if old is not None and old.items is not None
        else ([old.value] if old is not None and old.value is not None else [])
    )
    if isinstance(idx, Unknown) or idx < 0 or idx > 4096:
        items.append(Unknown(f"array element at an unknown index ({snippet(index)})", span))
    else:
        while len(items) <= idx:
            items.append(None)  # a hole: bash arrays are sparse
        items[idx] = value
    world.vars[vname] = Variable(None, items, old.exported if old else False, span, old.exported_at if old else None)


def assignment_prefix(v: Value) -> str | None:
    """`NAME=<unknown>` (a partly unknown word whose known start is an assignment): NAME."""
    if isinstance(v, Unknown) and v.parts:
        head = ""
        for text, _ in v.parts:
            if text is None:
                break
            head += text
        m = re.match(r"([A-Za-z_]\w*)=", head)
        if m:
            return m.group(1)
    return None
