"""`export`/`declare`/`local`/`readonly`/`typeset` and `unset` statements."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packlint.interpret import assignment, builtins, expansion
from packlint.interpret.bash_tables import BASH_DYNAMIC
from packlint.interpret.syntax import bytes_of, glue_chain, is_option, name_of, text_of
from packlint.interpret.world import World
from packlint.parse import ParsedScript
from packlint.records import record
from packlint.values import Known, Unknown, Value, Variable

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


@record
class DeclarationFlags:
    """What the options of `export`/`declare`/`local`/`readonly`/`typeset` ask for."""

    keyword: str
    options: list[str]
    export: bool
    local: bool
    readonly: bool
    force_array: bool
    unexport: bool
    is_function: bool


def read_flags(node: Node, world: World) -> DeclarationFlags:
    """Read the keyword and its option words; `declare` inside a function is local unless `-g`."""
    keyword = node.children[0].type
    options: list[str] = []
    export = keyword == "export"
    local = keyword == "local"
    readonly = keyword == "readonly"
    force_array = unexport = is_function = False
    for c in node.named_children:
        if c.type == "word" and is_option(c):
            flag = name_of(c)
            options.append(flag)
            if flag.startswith("-"):
                export = export or "x" in flag
                readonly = readonly or "r" in flag
                force_array = force_array or "a" in flag or "A" in flag
                is_function = is_function or "f" in flag or "F" in flag
                if keyword == "export" and "n" in flag:
                    unexport = True
            elif "x" in flag:
                unexport = True
    if (
        keyword in ("declare", "typeset")
        and world.locals_stack
        and not any("g" in o for o in options if o.startswith("-"))
    ):
        local = True  # declare inside a function is local, like bash (unless -g)
    return DeclarationFlags(keyword, options, export, local, readonly, force_array, unexport, is_function)


# declaration_command / unset_command are statements in tree-sitter-bash, not commands
def exec_declaration(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    """`export`/`declare`/`local`/`readonly`/`typeset` as a statement."""
    flags = read_flags(node, world)
    options = flags.options
    if flags.is_function:
        if flags.keyword == "export":  # `export -f fn`: child shells (bash -c) see the function
            for c in node.named_children:
                if c.type in ("word", "variable_name") and not is_option(c):
                    world.exported_functions = world.exported_functions | {text_of(c)}
        return [world]
    if flags.keyword in ("local", "declare", "typeset") and any(o.startswith("-") and "n" in o for o in options):
        declare_namerefs(interp, node, world, ps)
        return [world]
    computed = [c for c in node.named_children if c.type in _COMPUTED]
    if computed:
        declare_computed(interp, node, computed, flags, world, ps)
    if any(o.startswith("-") and "A" in o for o in options):
        declare_assoc(interp, node, world, ps)
        return [world]
    if any(o.startswith("-") and "i" in o for o in options):
        mark_integer(node, world, ps)
    children = list(node.named_children)
    glued: set[int] = set()
    tails: dict[int, list[Node]] = {}
    for i, c in enumerate(children):
        if i not in glued and c.type == "variable_assignment":
            tails[i] = _glue_tail(c, children[i + 1 :])
            glued.update(range(i + 1, i + 1 + len(tails[i])))
    # bash expands every word of the command before the builtin assigns any: `export A=1 B=$A` gives B the A
    # from before the command (llada60/ChatGarment: `export CUDA_HOME=... \ LD_LIBRARY_PATH=$CUDA_HOME/lib64`)
    values = {
        i: assignment.assignment_value(interp, children[i], world, ps, glue_tail=tail or None)
        for i, tail in tails.items()
        if len(tails) > 1 and not _subscripted(children[i])
    }
    for i, c in enumerate(children):
        if i in glued:
            continue
        if c.type == "variable_assignment":
            export = flags.export and not flags.unexport
            tail = tails[i]
            name = assignment.assign(
                interp,
                c,
                world,
                ps,
                export=export,
                local=flags.local,
                force_array=flags.force_array,
                glue_tail=tail or None,
                value=values.get(i),
            )
            if name is not None:
                var = world.vars[name]
                if flags.unexport:
                    world.vars[name] = Variable(var.value, var.items, False, var.assigned_at, None, var.source)
                if flags.readonly:
                    var.readonly = True
        elif c.type in ("variable_name", "word") and not is_option(c):
            declare_name(interp, c, flags, world, ps)
    return [world]


def _subscripted(assignment_node: Node) -> bool:
    name = assignment_node.child_by_field_name("name")
    return name is not None and name.type == "subscript"


def _glue_tail(assignment_node: Node, following: list[Node]) -> list[Node]:
    """`export A=$X--$Y`: tree-sitter-bash splits the value after the second `$` (`A=$X--$` + `Y`);
    the words glued to it are the rest of the value (interpret.commands does the same for `A=...`)."""
    return glue_chain(assignment_node.child_by_field_name("value"), assignment_node.end_byte, following)


# Words whose expansion gives the names declared (`export $gate=1`).
_COMPUTED = ("concatenation", "string", "simple_expansion", "expansion", "raw_string", "command_substitution")


_READ_NAME = re.compile(rb"\$\{?([A-Za-z_]\w*)")


def forget_scalars(world: World, ps: ParsedScript, reason: str) -> None:
    """After `declare $v="$value"` with `v` unknown (an argument loop: `--LANGUAGE=ru` sets LANGUAGE),
    any variable may hold a new value: every scalar the script set, and every name the script reads
    that is not set, is unknown from here on (attributes kept; read-only ones cannot change)."""
    for name, var in list(world.vars.items()):
        if var.readonly or var.ref is not None or var.items is not None or var.assoc is not None:
            continue
        if var.value is not None and var.source != "unset":
            new = var.copy()
            new.value = Unknown(reason, var.value.span)
            world.vars[name] = new
    for raw in dict.fromkeys(m.group(1) for m in _READ_NAME.finditer(ps.source.data)):
        name = raw.decode()
        if name not in world.vars and name not in BASH_DYNAMIC:
            world.vars[name] = Variable(Unknown(reason))


def declare_namerefs(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> None:
    """`local -n out=$1`: `out` names another variable; assignments to it go there."""
    for c in node.named_children:
        if c.type != "variable_assignment":
            continue
        name_node, value_node = c.child_by_field_name("name"), c.child_by_field_name("value")
        target = expansion.expand_joined(interp, value_node, world, ps) if value_node is not None else None
        if name_node is None or not isinstance(target, Known) or not re.fullmatch(r"[A-Za-z_]\w*", target.text):
            continue
        ref_name = text_of(name_node)
        if world.locals_stack and ref_name not in world.locals_stack[-1]:
            world.locals_stack[-1][ref_name] = world.vars.get(ref_name)
        value = world.vars[target.text].scalar() if target.text in world.vars else None
        ref = Variable(value, None, False, ps.source.span(c))
        ref.ref = target.text
        world.vars[ref_name] = ref


def declare_computed(
    interp: Interpreter, node: Node, computed: list[Node], flags: DeclarationFlags, world: World, ps: ParsedScript
) -> None:
    """`export $gate=1`, `declare -x "$v=warn"`: the name comes from an expansion."""
    keyword = flags.keyword
    fields: list[Value] = [Known(keyword, ps.source.span(node.children[0])), *(Known(o) for o in flags.options)]
    for c in computed:
        fields.extend(expansion.expand_fields(interp, c, world, ps))
    unknown = [f for f in fields if isinstance(f, Unknown) and not assignment.assignment_prefix(f)]
    if unknown:
        interp.diag(
            "warning",
            "export-unknown",
            f"`{keyword}` of names packlint cannot know ({unknown[0].reason}); the variables it sets are not seen",
            ps.source.span(node),
        )
        world.unknown_exports = True
        forget_scalars(
            world,
            ps,
            f"unknown: it may be set by `{keyword}` of names packlint cannot know ({ps.source.span(node).short()})",
        )
    builtins.builtin_declare(interp, [f for f in fields if f not in unknown], world, ps, ps.source.span(node), None)


def declare_assoc(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> None:
    """`declare -A C=([k]=v ...)`: an associative array."""
    for c in node.named_children:
        if c.type == "variable_assignment":
            name_node, value_node = c.child_by_field_name("name"), c.child_by_field_name("value")
            table: dict[str, Value] = {}
            if value_node is not None and value_node.type == "array":
                for element in value_node.named_children:
                    text = expansion.expand_joined(interp, element, world, ps)
                    m = re.fullmatch(r"\[(.*?)\]=(.*)", text.text or "", re.S) if isinstance(text, Known) else None
                    if m:
                        table[m.group(1)] = Known(m.group(2), ps.source.span(element))
            var = Variable(None, None, False, ps.source.span(c))
            var.assoc = table
            if name_node is not None:
                interp.set_var(world, text_of(name_node), var, ps.source.span(c))
        elif c.type in ("variable_name", "word") and not is_option(c):
            var = Variable(None, None, False, ps.source.span(c))
            var.assoc = {}
            world.vars[text_of(c)] = var


def mark_integer(node: Node, world: World, ps: ParsedScript) -> None:
    """`declare -i NAME`: later assignments to NAME are arithmetic."""
    for c in node.named_children:
        if c.type == "variable_assignment":
            vname = c.child_by_field_name("name")
        elif c.type in ("variable_name", "word") and not is_option(c):
            vname = c
        else:
            vname = None
        if vname is not None:
            n = text_of(vname)
            old = world.vars.get(n)
            marked = old.copy() if old is not None else Variable(None, None, False, ps.source.span(c))
            marked.integer = True
            world.vars[n] = marked


def declare_name(interp: Interpreter, c: Node, flags: DeclarationFlags, world: World, ps: ParsedScript) -> None:
    """`export NAME`, `local NAME`, `readonly NAME`, `export -n NAME` (a name without a value)."""
    name = text_of(c)
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return
    export = flags.export
    span = ps.source.span(c)
    old = world.vars.get(name)
    if flags.local and world.locals_stack:
        frame = world.locals_stack[-1]
        if name not in frame:
            frame[name] = old
        world.vars[name] = Variable(None, [] if flags.force_array else None, export, span, span if export else None)
        return
    if old is None:
        if export:
            # `export NAME` before any assignment: marks it; a later assignment keeps the mark
            interp.set_var(world, name, Variable(None, None, True, None, span), span)
        elif flags.force_array:
            world.vars[name] = Variable(None, [], False, span)
        return
    new = old.copy()
    if export and not flags.unexport:
        new.exported = True
        new.exported_at = span
        interp.set_var(world, name, new, span)
    elif flags.unexport:
        new.exported = False
        world.vars[name] = new
    if flags.readonly:
        new.readonly = True
        world.vars[name] = new


def exec_unset(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> list[World]:
    """`unset NAME`, `unset -f NAME`, `unset 'A[2]'` (a hole in the array)."""
    functions = any(c.type == "word" and c.text == b"-f" for c in node.named_children)
    for c in node.named_children:
        if c.type in ("raw_string", "string", "word", "concatenation") and b"[" in bytes_of(c):
            # unset 'A[2]': a hole in the array
            target = expansion.expand_joined(interp, c, world, ps)
            m = re.fullmatch(r"([A-Za-z_]\w*)\[(\d+)\]", target.text) if isinstance(target, Known) else None
            var = world.vars.get(m.group(1)) if m else None
            if m is not None and var is not None and var.items is not None and int(m.group(2)) < len(var.items):
                items = list(var.items)
                items[int(m.group(2))] = None
                world.vars[m.group(1)] = Variable(None, items, var.exported, var.assigned_at, var.exported_at)
            continue
        if c.type in ("variable_name", "word") and not bytes_of(c).startswith(b"-"):
            name = text_of(c)
            if functions:
                world.functions.pop(name, None)
            else:
                old = world.vars.get(name)
                if old is not None and old.readonly:
                    continue
                world.vars.pop(name, None)
    return [world]
