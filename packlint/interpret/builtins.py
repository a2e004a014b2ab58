"""bash builtins that change what a launch sees, reached as ordinary commands."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packlint.interpret import arithmetic, assignment, conditionals, nested_code, sourcing
from packlint.interpret.world import StatusOut, World, reassigned
from packlint.parse import ParsedScript
from packlint.source import SourceFile
from packlint.values import Known, Span, Unknown, Value, Variable

if TYPE_CHECKING:
    from packlint.interpret.run import Interpreter


def builtin_set(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`set -a`/`set -o allexport` and `set -- ARGS` (the positional arguments)."""
    args = fields[1:]
    for a in args:
        if isinstance(a, Known) and re.fullmatch(r"[-+][a-zA-Z]+", a.text) and "a" in a.text:
            world.allexport = a.text.startswith("-")
        if isinstance(a, Known) and a.text in ("-o", "+o"):
            i = args.index(a)
            if i + 1 < len(args) and isinstance(args[i + 1], Known) and args[i + 1].text == "allexport":
                world.allexport = a.text == "-o"
    for i, a in enumerate(args):
        if isinstance(a, Known) and a.text == "--":
            world.positional = list(args[i + 1 :])
            world.script_args = False
            return [world]
    if args and isinstance(args[0], Known) and not args[0].text.startswith(("-", "+")):
        world.positional = list(args)
        world.script_args = False
    return [world]


def builtin_shift(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`shift [N]`: drop positional arguments; fails (status false) past the end."""
    n = 1
    if len(fields) > 1:
        v = fields[1]
        if not isinstance(v, Known) or not v.text.isdigit():
            world.positional = [Unknown("positional arguments after an unknown shift", span)]
            return [world]
        n = int(v.text) if len(v.text) <= 9 else len(world.positional) + 1  # (never int() of unbounded digits)
    if n > len(world.positional):
        if status_out is not None:
            status_out.append((world, False))
        return [world]
    world.positional = world.positional[n:]
    return [world]


def builtin_source(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    return sourcing.source_file(interp, fields, world, ps, span)


def builtin_exit(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    world.flow = "exit"
    return [world]


def builtin_return(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    # `return` ends a function or a sourced file; at the top of the script bash treats it as exit
    world.flow = "return" if world.locals_stack or interp.source_calls else "exit"
    return [world]


def _loop_levels(fields: list[Value]) -> int:
    if len(fields) > 1 and isinstance(fields[1], Known) and fields[1].text.isdigit():
        return max(1, int(fields[1].text[:9]) if len(fields[1].text) <= 9 else 10**9)
    return 1


def builtin_break(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    n = _loop_levels(fields)
    world.flow = "break" if n == 1 else f"break {n}"
    return [world]


def builtin_continue(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    n = _loop_levels(fields)
    world.flow = "continue" if n == 1 else f"continue {n}"
    return [world]


def builtin_test(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    if status_out is not None:
        status_out.append((world, conditionals.test_args(interp, fields[1:])))
    return [world]


def builtin_shopt(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`shopt -s/-u nullglob|expand_aliases`: the options that change what a launch line becomes."""
    args = [f.text for f in fields[1:] if isinstance(f, Known)]
    on = "-s" in args
    if "-s" in args or "-u" in args:
        if "nullglob" in args:
            world.nullglob = on
        if "expand_aliases" in args:
            world.expand_aliases = on
    return [world]


def builtin_alias(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`alias tr="torchrun --nproc_per_node 2"` (used only with expand_aliases, as in scripts)."""
    for f in fields[1:]:
        if isinstance(f, Known) and "=" in f.text:
            name, _, value = f.text.partition("=")
            world.aliases = dict(world.aliases or {})
            world.aliases[name] = (value, f.span)
    return [world]


def builtin_trap(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`trap 'cmd' EXIT`: the command runs when the script ends (kept and run then)."""
    args = [f for f in fields[1:] if not (isinstance(f, Known) and f.text in ("--",))]
    if len(args) >= 2 and isinstance(args[0], Known) and not args[0].text.startswith("-"):
        signals = {a.text.upper().removeprefix("SIG") for a in args[1:] if isinstance(a, Known)}
        if signals & {"EXIT", "0"}:
            world.exit_trap = None if args[0].text in ("", "-") else (args[0], span)
    return [world]


def builtin_read(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`read` sets its variables from input: unknown; `read -a NAME` (also bundled, `-ra`) an array of
    unknown length."""
    args = fields[1:]
    array = None
    names = []
    i = 0
    while i < len(args):
        f = args[i]
        t = f.text if isinstance(f, Known) else None
        if t is not None and t.startswith("-") and len(t) > 1:
            letters = t[1:]
            takes = next((c for c in letters if c in "adnNptu"), None)
            if takes == "a" and i + 1 < len(args) and isinstance(args[i + 1], Known):
                array = args[i + 1].text
            i += 2 if takes else 1
            continue
        if t is not None and re.fullmatch(r"[A-Za-z_]\w*", t):
            names.append(t)
        i += 1
    if array is not None:
        world.vars[array] = Variable(None, [Unknown("read from input", span, may_split=True)], assigned_at=span)
    for n in names:
        world.vars[n] = Variable(Unknown("value read from input at run time", span), assigned_at=span)
    return [world]


def builtin_eval(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`eval WORDS`: the words joined are run as code at this point of the script."""
    args = fields[1:]
    if not args:
        return [world]
    code = nested_code.code_text(interp, args, world)
    if code is None:
        interp.diag("info", "unanalysed", "`eval` of an unknown string is not analysed", span)
        return [world]
    data = code.text.encode("utf-8", "surrogateescape")
    at = code.span
    if (
        len(args) == 1
        and at is not None
        and at.line == span.line
        and at.file == span.file
        and b"\n" not in data
        and (at.end_line == at.line)
    ):
        # `eval "torchrun ..."` written on this line: spans point into the string itself
        line = ps.source.line_text(at.line - 1 - ps.source.line_base)
        quoted = line[at.column - 1 : at.column] in ("'", '"')
        src = SourceFile(
            path=ps.source.path,
            data=data,
            line_base=at.line - 1,
            column_base=at.column if quoted else at.column - 1,
            marks=nested_code.byte_marks(code),
        )
    else:
        # text from elsewhere (`eval "$CMD"`) or over several lines: findings point at the `eval`
        # command, never at columns past the end of its line
        src = SourceFile(
            path=ps.source.path,
            data=data,
            line_base=span.line - 1,
            column_base=span.column - 1,
            pinned=span,
            marks=nested_code.byte_marks(code),
        )
    return nested_code.exec_source(interp, src, world, None)


def builtin_unknown_assign(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """printf -v VAR / getopts / mapfile: the target variable becomes unknown."""
    args = fields[1:]
    name = fields[0].text
    named: list[Value] = []
    if name == "printf":
        named = [args[i + 1] for i, a in enumerate(args[:-1]) if isinstance(a, Known) and a.text == "-v"]
    elif name == "getopts" and len(args) >= 2:
        named = [args[1]]
    elif name in ("mapfile", "readarray") and args:
        named = [args[-1]]
    for t in (v.text for v in named if isinstance(v, Known)):
        if name in ("mapfile", "readarray"):  # an array of as many lines as the input has
            world.vars[t] = Variable(
                None, [Unknown(f"lines read by {name} at run time", span, may_split=True)], assigned_at=span
            )
        else:
            world.vars[t] = Variable(Unknown(f"set by {name} at run time", span), assigned_at=span)
    return [world]


def builtin_let(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`let x++`, `let x=1+2`, `let x+=3`."""
    for a in fields[1:]:
        if isinstance(a, Known):
            inc = re.fullmatch(r"\s*(?:([A-Za-z_]\w*)(\+\+|--)|(\+\+|--)([A-Za-z_]\w*))\s*", a.text)
            if inc:
                name = inc.group(1) or inc.group(4)
                cur = arithmetic.arith_var(interp, name, world, ps, span)
                if not isinstance(cur, Unknown):
                    step = 1 if "+" in (inc.group(2) or inc.group(3)) else -1
                    interp.set_var(world, name, reassigned(world, name, Known(str(cur + step), span), span), span)
                continue
            m = re.fullmatch(r"([A-Za-z_]\w*)\s*([-+*/%]?=)\s*(.+)", a.text)
            if m:
                rhs = arithmetic.to_int(m.group(3), world)
                if m.group(2) != "=" and not isinstance(rhs, Unknown):
                    cur = arithmetic.arith_var(interp, m.group(1), world, ps, span)
                    rhs = cur if isinstance(cur, Unknown) else arithmetic.binop(m.group(2)[0], cur, rhs)
                val = Known(str(rhs), span) if not isinstance(rhs, Unknown) else rhs
                interp.set_var(world, m.group(1), reassigned(world, m.group(1), val, span), span)
    return [world]


def builtin_declare(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`export`/`declare`/`local`/`readonly` reached as an ordinary command (after a tree-sitter
    misparse, or behind `builtin`): same semantics as the declaration statement, on expanded words."""
    keyword = fields[0].text
    export = keyword == "export"
    readonly = keyword == "readonly"
    global_flag = any(isinstance(f, Known) and f.text.startswith("-") and "g" in f.text for f in fields[1:])
    local = keyword == "local" or (keyword in ("declare", "typeset") and bool(world.locals_stack) and not global_flag)
    unexport = False
    for f in fields[1:]:
        if not isinstance(f, Known):
            name = assignment.assignment_prefix(f)
            if name is not None:  # `export NAME=<unknown>`
                old = world.vars.get(name)
                var = Variable(
                    Unknown(f.reason, f.span),
                    None,
                    export and not unexport or bool(old and old.exported),
                    f.span,
                    f.span if export else None,
                )
                interp.set_var(world, name, var, f.span)
            continue
        t = f.text
        if t.startswith("-") and "=" not in t:
            export = export or "x" in t
            readonly = readonly or "r" in t
            unexport = unexport or (keyword == "export" and "n" in t)
            continue
        if t.startswith("+"):
            unexport = unexport or "x" in t
            continue
        name, eq, value = t.partition("=")
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            continue
        old = world.vars.get(name)
        if local and world.locals_stack and name not in world.locals_stack[-1]:
            world.locals_stack[-1][name] = old
        if eq:
            var = Variable(Known(value, f.span), None, False, f.span, None)
        elif old is not None:
            var = old.copy()
        else:
            var = Variable(None, None, False, None, None)
        if old is not None and old.source in ("caller", "cluster"):
            var.exported = True
        if export and not unexport:
            var.exported, var.exported_at = True, f.span
        if unexport:
            var.exported = False
        var.readonly = var.readonly or readonly
        interp.set_var(world, name, var, f.span)
    return [world]


def builtin_unset(
    interp: Interpreter, fields: list[Value], world: World, ps: ParsedScript, span: Span, status_out: StatusOut | None
) -> list[World]:
    """`unset NAME` / `unset -f NAME` reached as a command (readonly variables stay)."""
    functions = any(isinstance(f, Known) and f.text == "-f" for f in fields[1:])
    for f in fields[1:]:
        if isinstance(f, Known) and not f.text.startswith("-"):
            if functions:
                world.functions.pop(f.text, None)
            elif not (world.vars.get(f.text) and world.vars[f.text].readonly):
                world.vars.pop(f.text, None)
    return [world]


BUILTINS = {
    "export": builtin_declare,
    "declare": builtin_declare,
    "typeset": builtin_declare,
    "local": builtin_declare,
    "readonly": builtin_declare,
    "unset": builtin_unset,
    "trap": builtin_trap,
    "shopt": builtin_shopt,
    "alias": builtin_alias,
    "set": builtin_set,
    "shift": builtin_shift,
    "source": builtin_source,
    ".": builtin_source,
    "exit": builtin_exit,
    "return": builtin_return,
    "break": builtin_break,
    "continue": builtin_continue,
    "test": builtin_test,
    "[": builtin_test,
    "read": builtin_read,
    "eval": builtin_eval,
    "printf": builtin_unknown_assign,
    "getopts": builtin_unknown_assign,
    "mapfile": builtin_unknown_assign,
    "readarray": builtin_unknown_assign,
    "let": builtin_let,
}
