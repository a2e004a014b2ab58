"""Arithmetic: `$(( ))`, `(( ))`, C-style `for`, array indices, `let`, `declare -i`."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from packlint.interpret import expansion, parameters
from packlint.interpret.limits import MAX_NESTING
from packlint.interpret.syntax import field, name_of, snippet, text_of
from packlint.interpret.words import join_pieces
from packlint.interpret.world import World
from packlint.parse import ParsedScript
from packlint.values import Known, Span, Unknown, Variable

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter


def arith(interp: Interpreter, node: Node | None, world: World, ps: ParsedScript) -> int | Unknown:
    """An arithmetic expression's value (`$(( ))`, `(( ))`, indices), bounded by MAX_NESTING; errors are Unknown."""
    if node is None:
        return 0
    interp.depth += 1
    try:
        if interp.depth > MAX_NESTING:
            return Unknown("nesting too deep")
        return arith_at(interp, node, world, ps)
    except (ZeroDivisionError, OverflowError, ValueError, RecursionError):
        return Unknown(f"arithmetic error in {snippet(node)}")
    finally:
        interp.depth -= 1


def arith_var(interp: Interpreter, name: str, world: World, ps: ParsedScript, span: Span) -> int | Unknown:
    v = parameters.scalar(interp, name, world, span)
    if not isinstance(v, Known):
        return Unknown(v.reason)
    return to_int(v.text, world)


def arith_at(interp: Interpreter, node: Node, world: World, ps: ParsedScript) -> int | Unknown:
    """One arithmetic node: its value (assignments inside it are made), or Unknown."""
    t = node.type
    span = ps.source.span(node)
    if t == "number":
        return parse_int(name_of(node))
    if t in ("variable_name", "word"):
        text = text_of(node)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
            return arith_var(interp, text, world, ps, span)
        return to_int(text, world)
    if t in _WORDS:
        v = expansion.expand_joined(interp, node, world, ps)
        if not isinstance(v, Known):
            return Unknown(v.reason)
        if not v.text.strip() and t != "string":
            # `$(( ${WORLD_SIZE} / 8 ))` with the variable empty: bash reads `/ 8` (a syntax error, or
            # another expression: `$E + 1` is `+ 1`), never 0 in its place
            return Unknown(f"{snippet(node)} is empty: bash reads the expression without it")
        return to_int(v.text, world)
    if t == "parenthesized_expression":
        kids = node.named_children
        return arith(interp, kids[0], world, ps) if kids else 0
    if t == "subscript":
        name = name_of(field(node, "name"))
        pieces = parameters.param(interp, name, node.child_by_field_name("index"), world, True, span, ps)
        joined = join_pieces(pieces, span)
        return Unknown(joined.reason) if not isinstance(joined, Known) else to_int(joined.text, world)
    if t == "unary_expression":
        op = node.children[0].type
        operand = node.named_children[-1]
        if op in ("++", "--"):
            return arith_update(interp, operand, world, ps, 1 if op == "++" else -1, prefix=True)
        if operand.type == "binary_expression":
            # tree-sitter-bash binds `-5 + 3` as -(5 + 3); in bash unary operators bind tighter
            # than every binary one, so apply the operator to the leftmost operand instead.
            return arith_unary_leftmost(interp, op, operand, world, ps)
        n = arith(interp, operand, world, ps)
        if isinstance(n, Unknown):
            return n
        return unary(op, n)
    if t == "postfix_expression":
        op = node.children[-1].type
        return arith_update(interp, node.named_children[0], world, ps, 1 if op == "++" else -1, prefix=False)
    if t == "ternary_expression":
        c = arith(interp, node.child_by_field_name("condition"), world, ps)
        if isinstance(c, Unknown):
            return c
        return arith(interp, node.child_by_field_name("consequence" if c else "alternative"), world, ps)
    if t == "variable_assignment":
        name = name_of(field(node, "name"))
        result = arith(interp, node.child_by_field_name("value"), world, ps)
        value = Known(str(result), span) if not isinstance(result, Unknown) else result
        exported = (world.vars.get(name) or Variable()).exported
        interp.set_var(world, name, Variable(value, None, exported, span), span)
        return result
    if t == "binary_expression":
        return arith_binary(interp, node, world, ps, span)
    return Unknown(f"unsupported arithmetic {snippet(node)}")


# Nodes inside `(( ))` that are words to expand first (`$X`, `${A[1]}`, `"3"`, `$(cmd)`).
_WORDS = frozenset(
    {
        "simple_expansion",
        "expansion",
        "command_substitution",
        "string",
        "concatenation",
        "raw_string",
        "arithmetic_expansion",
    }
)
_ASSIGNMENTS = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^="})


def arith_binary(interp: Interpreter, node: Node, world: World, ps: ParsedScript, span: Span) -> int | Unknown:
    """`a OP b`: assignments (`x += 2`), short-circuit `&&`/`||`, and the other operators."""
    op_node = node.child_by_field_name("operator")
    op = op_node.type if op_node is not None else ""
    left = node.child_by_field_name("left")
    right = node.child_by_field_name("right")
    if op in _ASSIGNMENTS:
        assert left is not None, "tree-sitter-bash gives every binary expression its left operand"
        name = name_of(left)
        r = arith(interp, right, world, ps)
        if op != "=" and not isinstance(r, Unknown):
            cur = arith_var(interp, name, world, ps, span)
            r = cur if isinstance(cur, Unknown) else binop(op[:-1], cur, r)
        val = Known(str(r), span) if not isinstance(r, Unknown) else r
        old = world.vars.get(name)
        interp.set_var(world, name, Variable(val, None, old.exported if old else False, span), span)
        return r
    if op == "&&":
        a = arith(interp, left, world, ps)
        if a == 0:
            return 0
        b = arith(interp, right, world, ps)
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return a if isinstance(a, Unknown) else b
        return int(bool(b))
    if op == "||":
        a = arith(interp, left, world, ps)
        if not isinstance(a, Unknown) and a != 0:
            return 1
        b = arith(interp, right, world, ps)
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return a if isinstance(a, Unknown) else b
        return int(bool(b))
    a = arith(interp, left, world, ps)
    b = arith(interp, right, world, ps)
    if isinstance(a, Unknown):
        return a
    if isinstance(b, Unknown):
        return b
    return binop(op, a, b)


def arith_unary_leftmost(interp: Interpreter, op: str, node: Node, world: World, ps: ParsedScript) -> int | Unknown:
    """Apply a unary operator to the leftmost operand of a binary expression (bash's precedence)."""
    if node.type != "binary_expression":
        v = arith(interp, node, world, ps)
        return v if isinstance(v, Unknown) else unary(op, v)
    op_node = node.child_by_field_name("operator")
    bop = op_node.type if op_node is not None else ""
    if bop.endswith("=") and bop not in ("==", "!=", "<=", ">="):
        v = arith(interp, node, world, ps)
        return v if isinstance(v, Unknown) else unary(op, v)
    a = arith_unary_leftmost(interp, op, field(node, "left"), world, ps)
    if bop == "&&" and a == 0:
        return 0
    if bop == "||" and not isinstance(a, Unknown) and a != 0:
        return 1
    b = arith(interp, node.child_by_field_name("right"), world, ps)
    if isinstance(a, Unknown):
        return a
    if isinstance(b, Unknown):
        return b
    if bop in ("&&", "||"):
        return int(bool(b))
    return binop(bop, a, b)


def arith_update(
    interp: Interpreter, operand: Node, world: World, ps: ParsedScript, delta: int, prefix: bool
) -> int | Unknown:
    """`x++`, `++x`, `x--`, `--x`: update the variable; the value before or after."""
    name = name_of(operand)
    span = ps.source.span(operand)
    cur = arith_var(interp, name, world, ps, span)
    if isinstance(cur, Unknown):
        return cur
    old = world.vars.get(name)
    interp.set_var(
        world, name, Variable(Known(str(cur + delta), span), None, old.exported if old else False, span), span
    )
    return cur + delta if prefix else cur


def parse_int(text: str) -> int | Unknown:
    """An integer literal as bash reads it: decimal, `0x` hex, leading-0 octal, `BASE#DIGITS`; wrapped
    to 64 bits as bash does (`$((99999999999999999999))` is 7766279631452241919), at any length."""
    text = text.strip()
    try:
        if "#" in text:
            base, digits = text.split("#", 1)
            if len(base) > 2:
                raise ValueError
            return _wrapped(digits, int(base))
        if text.lower().startswith(("0x", "-0x")):
            return _wrapped(text, 16)
        if len(text) > 1 and text.startswith("0") and text.isdigit():
            return _wrapped(text, 8)
        return _wrapped(text, 10)
    except ValueError:
        return Unknown(f"{_short(text)} is not an integer")


def _short(text: str) -> str:
    return repr(text) if len(text) <= 40 else repr(text[:40]) + f"... ({len(text):,} characters)"


_WRAP_CHUNK = 256  # digits converted at a time: int() never sees more than this (its limit is 4,300)


def _wrapped(text: str, base: int) -> int:
    """int(text, base) modulo 2**64 as a signed 64-bit value; ValueError as int() gives it."""
    if len(text) <= _WRAP_CHUNK:
        return wrap64(int(text, base))
    t = text.replace("_", "x")  # (int() accepts `1_000`; bash does not: keep them invalid)
    sign = -1 if t.startswith("-") else 1
    t = t.lstrip("+-")
    if base == 16 and t[:2].lower() == "0x":
        t = t[2:]
    n = 0
    for i in range(0, len(t), _WRAP_CHUNK):
        chunk = t[i : i + _WRAP_CHUNK]
        if not chunk.isalnum():
            raise ValueError(text)
        n = (n * pow(base, len(chunk), 1 << 64) + int(chunk, base)) % (1 << 64)
    return wrap64(sign * n)


def wrap64(n: int) -> int:
    """A signed 64-bit value, as bash's arithmetic keeps it."""
    return ((n + (1 << 63)) % (1 << 64)) - (1 << 63)


def to_int(text: str, world: World) -> int | Unknown:
    """bash evaluates a variable's text as an arithmetic expression: plain integers, empty -> 0,
    names -> their values (one level deep), simple `a OP b`."""
    t = text.strip()
    if t == "":
        return 0
    v = parse_int(t)
    if not isinstance(v, Unknown):
        return v
    if re.fullmatch(r"[A-Za-z_]\w*", t):
        var = world.vars.get(t)
        if var is None:
            return 0
        s = var.scalar()
        if not isinstance(s, Known):
            return Unknown(s.reason if s is not None else "unset")
        inner = parse_int(s.text) if s.text.strip() else 0
        return inner
    m = re.fullmatch(r"\s*(-?\w+)\s*([-+*/%])\s*(-?\w+)\s*", t)
    if m:
        a = to_int(m.group(1), world)
        b = to_int(m.group(3), world)
        if isinstance(a, Unknown) or isinstance(b, Unknown):
            return a if isinstance(a, Unknown) else b
        return binop(m.group(2), a, b)
    return Unknown(f"{t!r} is not an integer")


def unary(op: str, v: int) -> int | Unknown:
    return {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op, Unknown(f"operator {op}"))


def binop(op: str, a: int, b: int) -> int | Unknown:
    """A binary operator on 64-bit integers, wrapping like bash; C division and remainder."""
    if op in ("/", "%") and b == 0:
        return Unknown("division by zero")
    if op == "/":
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    if op == "%":
        r = abs(a) % abs(b)
        return r if a >= 0 else -r
    if op == "**":
        if b < 0 or b > 256:
            return Unknown("exponent out of range")
        return a**b
    table = {
        "+": a + b,
        "-": a - b,
        "*": a * b,
        "<<": a << b if 0 <= b < 64 else 0,
        ">>": a >> b if 0 <= b < 64 else 0,
        "&": a & b,
        "|": a | b,
        "^": a ^ b,
        "<": int(a < b),
        ">": int(a > b),
        "<=": int(a <= b),
        ">=": int(a >= b),
        "==": int(a == b),
        "!=": int(a != b),
        "-eq": int(a == b),
        "-ne": int(a != b),
        "-lt": int(a < b),
        "-gt": int(a > b),
        "-le": int(a <= b),
        "-ge": int(a >= b),
    }
    if op not in table:
        return Unknown(f"operator {op}")
    r = table[op]
    return ((r + (1 << 63)) % (1 << 64)) - (1 << 63)
