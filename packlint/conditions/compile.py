"""From text to compiled tree: name resolution and type checking of a parsed condition (`check`), and
message templates (`text {expr} text`). Everything is resolved and checked when the table loads."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from packlint.conditions.syntax import Binary, Call, ConditionError, InList, Lit, Name, Node, Unary, parse
from packlint.conditions.tree import (
    BOOL,
    FUNCTIONS,
    INT,
    STR,
    And,
    BinOp,
    Builtin,
    Const,
    EvalContext,
    Expr,
    In,
    NameLookupError,
    Neg,
    Not,
    Or,
    PredicateBody,
    PredicateCall,
    Unk,
    Var,
)

if TYPE_CHECKING:
    from packlint.conditions.functions.derived import Setting


class Scope:
    """What names mean while checking one expression: bound names (for_each, predicate parameters) ->
    type; predicates -> (params, body); constants from [variables] -> (value, type)."""

    def __init__(
        self,
        variables: dict[str, Any] | None = None,
        predicates: dict[str, Any] | None = None,
        constants: dict[str, Any] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.variables: dict[str, str] = {} if variables is None else variables
        self.predicates: dict[str, tuple[list[tuple[str, str]], PredicateBody]] = (
            {} if predicates is None else predicates
        )
        self.constants: dict[str, tuple[Any, str]] = {} if constants is None else constants
        # [defaults] of the table: setting name -> Setting (its flag spellings and default)
        self.settings: dict[str, Setting] = {} if settings is None else settings


def check(node: Node, scope: Scope) -> Expr:
    """Resolve names and type-check a parsed condition; raises ConditionError with a position."""
    if isinstance(node, Lit):
        t = BOOL if isinstance(node.value, bool) else INT if isinstance(node.value, int) else STR
        return Const(node.value, t)
    if isinstance(node, Name):
        return _check_name(node, scope)
    if isinstance(node, Call):
        args = [check(a, scope) for a in node.args]
        if node.func in scope.predicates:
            return _check_predicate_call(node, args, scope)
        return _check_builtin_call(node, args, scope)
    if isinstance(node, Unary):
        operand = check(node.operand, scope)
        if node.op == "not":
            _want(operand, BOOL, node.operand.pos, "'not'")
            return Not(operand)
        _want(operand, INT, node.operand.pos, "unary '-'")
        return Neg(operand)
    if isinstance(node, InList):
        operand = check(node.operand, scope)
        types = {BOOL if isinstance(i.value, bool) else INT if isinstance(i.value, int) else STR for i in node.items}
        if types != {operand.type}:
            raise ConditionError(f"'in' compares a {operand.type} with a list of {'/'.join(sorted(types))}", node.pos)
        return In(operand, tuple(i.value for i in node.items))
    if isinstance(node, Binary):
        return _check_binary(node, scope)
    raise ConditionError("internal: unknown syntax node", node.pos)  # pragma: no cover


def _check_name(node: Name, scope: Scope) -> Expr:
    """A bare name: a bound name, a [variables] constant, a predicate or a built-in without parameters."""
    if node.ident in scope.variables:
        return Var(node.ident, scope.variables[node.ident])
    if node.ident in scope.constants:
        value, t = scope.constants[node.ident]
        return Const(value, t)
    if node.ident in scope.predicates:
        params, body = scope.predicates[node.ident]
        if params:
            raise ConditionError(f"predicate {node.ident!r} takes {len(params)} argument(s)", node.pos)
        if not body.type:
            raise ConditionError(f"predicate {node.ident!r} refers to itself", node.pos)
        return PredicateCall(node.ident, [], [], body)
    if node.ident in FUNCTIONS and not FUNCTIONS[node.ident].params:
        return Builtin(node.ident, [], FUNCTIONS[node.ident].returns)
    raise ConditionError(f"unknown name {node.ident!r}{_suggest(node.ident, scope)}", node.pos)


def _check_predicate_call(node: Call, args: list[Expr], scope: Scope) -> Expr:
    """A call of a predicate of the table, its arguments checked against the parameters' types."""
    params, body = scope.predicates[node.func]
    if len(args) != len(params):
        raise ConditionError(f"predicate {node.func!r} takes {len(params)} argument(s), got {len(args)}", node.pos)
    if not body.type:
        raise ConditionError(f"predicate {node.func!r} refers to itself", node.pos)
    for (pname, ptype), arg, raw in zip(params, args, node.args, strict=True):
        if arg.type != ptype:
            raise ConditionError(f"argument {pname!r} of {node.func!r} must be {ptype}, not {arg.type}", raw.pos)
    return PredicateCall(node.func, [p for p, _ in params], args, body)


def _check_builtin_call(node: Call, args: list[Expr], scope: Scope) -> Expr:
    """A call of a built-in function: arity, argument types, literal arguments compiled now."""
    fn = FUNCTIONS.get(node.func)
    if fn is None:
        raise ConditionError(f"unknown function {node.func!r}{_suggest(node.func, scope)}", node.pos)
    n_min, n_max = len(fn.params), len(fn.params) + len(fn.optional)
    if not n_min <= len(args) <= n_max:
        want = str(n_min) if n_min == n_max else f"{n_min} or {n_max}"
        raise ConditionError(f"{node.func}() takes {want} argument(s), got {len(args)}", node.pos)
    for i, (arg, raw) in enumerate(zip(args, node.args, strict=True)):
        want_t = (fn.params + fn.optional)[i]
        if arg.type != want_t:
            raise ConditionError(f"argument {i + 1} of {node.func}() must be {want_t}, not {arg.type}", raw.pos)
    static = None
    if fn.literal:
        for i in fn.literal:
            if not isinstance(args[i], Const):
                raise ConditionError(f"argument {i + 1} of {node.func}() must be a literal", node.args[i].pos)
        literals = [a.value if isinstance(a, Const) else None for a in args]
        make_static = fn.compile_static
        assert make_static is not None  # a function with literal arguments compiles them
        try:
            static = make_static(literals, scope) if fn.scoped else make_static(literals)
        except re.error as exc:
            raise ConditionError(f"bad regex {literals[1]!r}: {exc}", node.args[1].pos) from None
        except NameLookupError as exc:
            raise ConditionError(str(exc), node.args[0].pos) from None
    return Builtin(node.func, args, fn.returns, static)


def _check_binary(node: Binary, scope: Scope) -> Expr:
    """`and`/`or` over bools, `==`/`!=` over equal types, arithmetic and order over ints."""
    left = check(node.left, scope)
    right = check(node.right, scope)
    op = node.op
    if op in ("and", "or"):
        _want(left, BOOL, node.left.pos, f"'{op}'")
        _want(right, BOOL, node.right.pos, f"'{op}'")
        return And(left, right) if op == "and" else Or(left, right)
    if op in ("==", "!="):
        if left.type != right.type:
            raise ConditionError(
                f"'{op}' compares a {left.type} with a {right.type}"
                + (
                    " (use int(...) to read a number)"
                    if STR in (left.type, right.type) and INT in (left.type, right.type)
                    else ""
                ),
                node.pos,
            )
        return BinOp(op, left, right, BOOL)
    _want(left, INT, node.left.pos, f"'{op}'")
    _want(right, INT, node.right.pos, f"'{op}'")
    return BinOp(op, left, right, BOOL if op in ("<", "<=", ">", ">=") else INT)


def _want(expr: Expr, t: str, pos: int, what: str) -> None:
    if expr.type != t:
        hint = " (use int(...) to read a number)" if t == INT and expr.type == STR else ""
        raise ConditionError(f"{what} needs a {t}, got a {expr.type}{hint}", pos)


def _suggest(name: str, scope: Scope) -> str:
    import difflib

    pool = list(FUNCTIONS) + list(scope.predicates) + list(scope.variables) + list(scope.constants)
    close = difflib.get_close_matches(name, pool, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def compile_condition(text: str, scope: Scope, want: str | None = BOOL) -> Expr:
    expr = check(parse(text), scope)
    if want is not None and expr.type != want:
        raise ConditionError(f"the condition must be a {want}, not a {expr.type}", 0)
    return expr


# ---------------------------------------------------------------------------------------------- templates


class Template:
    """`text {expr} text`: each `{...}` is an expression of any type; `{{` and `}}` are literal braces."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts  # str | Expr

    def render(self, ctx: EvalContext) -> str:
        out = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
                continue
            v = p.eval(ctx)
            if isinstance(v, Unk):
                out.append("<unset>" if v.kind == "absent" else "<unknown>")
            elif isinstance(v, bool):
                out.append("true" if v else "false")
            else:
                out.append(str(v))
        return "".join(out)


def compile_template(text: str, scope: Scope) -> Template:
    parts: list[Any] = []
    buf: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "{" and text.startswith("{{", i):
            buf.append("{")
            i += 2
        elif ch == "}" and text.startswith("}}", i):
            buf.append("}")
            i += 2
        elif ch == "{":
            end = _find_close(text, i + 1)
            if end < 0:
                raise ConditionError("unclosed '{' in template", i)
            if buf:
                parts.append("".join(buf))
                buf = []
            try:
                parts.append(check(parse(text[i + 1 : end]), scope))
            except ConditionError as exc:
                raise ConditionError(exc.message, i + 1 + exc.pos) from None
            i = end + 1
        elif ch == "}":
            raise ConditionError("unmatched '}' in template (write '}}')", i)
        else:
            buf.append(ch)
            i += 1
    if buf:
        parts.append("".join(buf))
    return Template(parts)


def _find_close(text: str, i: int) -> int:
    quote = None
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "}":
            return i
        i += 1
    return -1
