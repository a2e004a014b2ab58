"""The condition language of the rule table: a small, typed, three-valued expression language over one
variant of the launch model.

    expr     := or
    or       := and ('or' and)*
    and      := not ('and' not)*
    not      := 'not' not | cmp
    cmp      := sum (('==' | '!=' | '<' | '<=' | '>' | '>=') sum | 'in' '[' literal (',' literal)* ']')?
    sum      := prod (('+' | '-') prod)*
    prod     := unary (('*' | '/' | '%') unary)*
    unary    := '-' unary | atom
    atom     := INT | STRING | 'true' | 'false' | NAME | NAME '(' args ')' | '(' expr ')'

Types are `bool`, `int` and `str`; every expression is type-checked when the table loads, names and
functions are resolved then, and regexes are compiled then. Nothing is ever passed to `eval`/`exec`.

At run time a value is a Python bool/int/str, or `Unk`: a value packlint does not have. `Unk` has three
kinds: `unknown` (the launch model could not determine it: a rule over it is *undecided* and may be
reported as an info), `invalid` (the value is known but meaningless for the operation, e.g. `int('true')`,
which another rule reports) and `absent` (the variable or flag is not there at all). Any operation on an
`Unk` gives an `Unk`, except that `false and X` is false and `true or X` is true (Kleene logic); a rule
fires only when its condition is exactly `True`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

BOOL, INT, STR = "bool", "int", "str"

# ---------------------------------------------------------------------------------------------- values

_KIND_RANK = {"unknown": 3, "invalid": 2, "absent": 1}


class Unk:
    """A value the rule cannot use: `reason` says why, `kind` is unknown | invalid | absent, `loc`
    (a LOCATION dict) says where it came from. (Plain classes here: dataclass creation costs start-up.)"""

    __slots__ = ("reason", "kind", "loc")

    def __init__(self, reason: str, kind: str = "unknown", loc: dict | None = None) -> None:
        self.reason, self.kind, self.loc = reason, kind, loc

    def __repr__(self) -> str:
        return f"Unk({self.reason!r}, {self.kind!r})"


def _pick(*vals: Any) -> Unk:
    """The most informative of several unknowns (an undetermined value beats an invalid or absent one)."""
    best = None
    for v in vals:
        if isinstance(v, Unk) and (best is None or _KIND_RANK[v.kind] > _KIND_RANK[best.kind]):
            best = v
    assert best is not None
    return best


class ConditionError(Exception):
    """A condition that does not parse or type-check; `pos` is a 0-based offset into the text."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


def python_int(text: str) -> int | None:
    """What Python's `int(text)` returns, or None where it raises (the gates are read with `int()`)."""
    try:
        return int(text)
    except (ValueError, TypeError):
        return None


# ---------------------------------------------------------------------------------------------- tokens

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<int>\d+)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|[<>()+\-*/%,\[\]])
""",
    re.VERBOSE,
)

_KEYWORDS = {"and", "or", "not", "true", "false", "in"}


class Token:
    __slots__ = ("kind", "text", "pos", "value")

    def __init__(self, kind: str, text: str, pos: int, value: Any = None) -> None:
        self.kind, self.text, self.pos, self.value = kind, text, pos, value  # kind: int|str|name|op|kw|end


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            ch = text[pos]
            if ch in "'\"":
                raise ConditionError("unterminated string", pos)
            raise ConditionError(f"unexpected character {ch!r}", pos)
        kind = m.lastgroup
        tok = m.group()
        if kind == "int":
            tokens.append(Token("int", tok, pos, int(tok)))
        elif kind == "str":
            tokens.append(Token("str", tok, pos, _unescape(tok[1:-1])))
        elif kind == "name":
            tokens.append(Token("kw" if tok in _KEYWORDS else "name", tok, pos))
        elif kind == "op":
            tokens.append(Token("op", tok, pos))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


def _unescape(s: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)


# ---------------------------------------------------------------------------------------------- syntax


class Node:
    __slots__ = ("pos",)
    pos: int


class Lit(Node):
    __slots__ = ("value",)

    def __init__(self, pos: int, value: Any) -> None:
        self.pos, self.value = pos, value


class Name(Node):
    __slots__ = ("ident",)

    def __init__(self, pos: int, ident: str) -> None:
        self.pos, self.ident = pos, ident


class Call(Node):
    __slots__ = ("func", "args")

    def __init__(self, pos: int, func: str, args: list) -> None:
        self.pos, self.func, self.args = pos, func, args


class Unary(Node):
    __slots__ = ("op", "operand")

    def __init__(self, pos: int, op: str, operand: Node) -> None:
        self.pos, self.op, self.operand = pos, op, operand


class Binary(Node):
    __slots__ = ("op", "left", "right")

    def __init__(self, pos: int, op: str, left: Node, right: Node) -> None:
        self.pos, self.op, self.left, self.right = pos, op, left, right


class InList(Node):
    __slots__ = ("operand", "items")

    def __init__(self, pos: int, operand: Node, items: list) -> None:
        self.pos, self.operand, self.items = pos, operand, items


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def next(self) -> Token:
        t = self.tokens[self.i]
        self.i += 1
        return t

    def accept(self, text: str) -> Token | None:
        if self.tok.kind in ("op", "kw") and self.tok.text == text:
            return self.next()
        return None

    def expect(self, text: str) -> Token:
        t = self.accept(text)
        if t is None:
            raise ConditionError(f"expected {text!r}, found {self._describe(self.tok)}", self.tok.pos)
        return t

    @staticmethod
    def _describe(t: Token) -> str:
        return "end of condition" if t.kind == "end" else repr(t.text)

    def parse(self) -> Node:
        if self.tok.kind == "end":
            raise ConditionError("empty condition", 0)
        node = self.parse_or()
        if self.tok.kind != "end":
            raise ConditionError(f"unexpected {self._describe(self.tok)}", self.tok.pos)
        return node

    def parse_or(self) -> Node:
        node = self.parse_and()
        while (t := self.accept("or")) is not None:
            node = Binary(t.pos, "or", node, self.parse_and())
        return node

    def parse_and(self) -> Node:
        node = self.parse_not()
        while (t := self.accept("and")) is not None:
            node = Binary(t.pos, "and", node, self.parse_not())
        return node

    def parse_not(self) -> Node:
        if (t := self.accept("not")) is not None:
            return Unary(t.pos, "not", self.parse_not())
        return self.parse_cmp()

    def parse_cmp(self) -> Node:
        node = self.parse_sum()
        t = self.tok
        if t.kind == "op" and t.text in ("==", "!=", "<", "<=", ">", ">="):
            self.next()
            node = Binary(t.pos, t.text, node, self.parse_sum())
        elif self.accept("in") is not None:
            self.expect("[")
            items = [self.parse_literal()]
            while self.accept(",") is not None:
                items.append(self.parse_literal())
            self.expect("]")
            node = InList(t.pos, node, items)
        if self.tok.kind == "op" and self.tok.text in ("==", "!=", "<", "<=", ">", ">="):
            raise ConditionError("comparisons do not chain; use 'and'", self.tok.pos)
        return node

    def parse_literal(self) -> Lit:
        t = self.tok
        neg = False
        if t.kind == "op" and t.text == "-":
            self.next()
            neg = True
            t = self.tok
        if t.kind == "int":
            self.next()
            return Lit(t.pos, -t.value if neg else t.value)
        if t.kind == "str" and not neg:
            self.next()
            return Lit(t.pos, t.value)
        raise ConditionError(f"expected a literal in the list, found {self._describe(t)}", t.pos)

    def parse_sum(self) -> Node:
        node = self.parse_prod()
        while self.tok.kind == "op" and self.tok.text in ("+", "-"):
            t = self.next()
            node = Binary(t.pos, t.text, node, self.parse_prod())
        return node

    def parse_prod(self) -> Node:
        node = self.parse_unary()
        while self.tok.kind == "op" and self.tok.text in ("*", "/", "%"):
            t = self.next()
            node = Binary(t.pos, t.text, node, self.parse_unary())
        return node

    def parse_unary(self) -> Node:
        if self.tok.kind == "op" and self.tok.text == "-":
            t = self.next()
            return Unary(t.pos, "-", self.parse_unary())
        return self.parse_atom()

    def parse_atom(self) -> Node:
        t = self.tok
        if t.kind == "int":
            self.next()
            return Lit(t.pos, t.value)
        if t.kind == "str":
            self.next()
            return Lit(t.pos, t.value)
        if t.kind == "kw" and t.text in ("true", "false"):
            self.next()
            return Lit(t.pos, t.text == "true")
        if t.kind == "name":
            self.next()
            if self.accept("(") is not None:
                args: list[Node] = []
                if self.accept(")") is None:
                    args.append(self.parse_or())
                    while self.accept(",") is not None:
                        args.append(self.parse_or())
                    self.expect(")")
                return Call(t.pos, t.text, args)
            return Name(t.pos, t.text)
        if self.accept("(") is not None:
            node = self.parse_or()
            self.expect(")")
            return node
        raise ConditionError(f"expected a value, found {self._describe(t)}", t.pos)


def parse(text: str) -> Node:
    """Parse a condition into an untyped syntax tree (raises ConditionError with a position)."""
    return _Parser(text).parse()


# ---------------------------------------------------------------------------------------------- typed tree
# Compiled expressions are small objects with `eval(ctx)`; they pickle (the table cache stores them).


class Expr:
    __slots__ = ("type",)
    type: str

    def eval(self, ctx: EvalContext) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError


class Const(Expr):
    __slots__ = ("value",)

    def __init__(self, value: Any, type_: str) -> None:
        self.value = value
        self.type = type_

    def eval(self, ctx):
        return self.value


class Var(Expr):
    """A name bound by `for_each` or a predicate parameter."""

    __slots__ = ("ident",)

    def __init__(self, ident: str, type_: str) -> None:
        self.ident = ident
        self.type = type_

    def eval(self, ctx):
        return ctx.bindings[self.ident]


class PredicateCall(Expr):
    """A named predicate from the table, with arguments bound to its parameters."""

    __slots__ = ("name", "params", "args", "body")

    def __init__(self, name: str, params: list[str], args: list[Expr], body: PredicateBody) -> None:
        self.name = name
        self.params = params
        self.args = args
        self.body = body
        self.type = body.type

    def eval(self, ctx):
        if not self.params:
            if ctx.item is not None:
                return self.body.expr.eval(ctx)
            # without parameters it reads only the context: once per variant for all the rules that ask
            key = ("predicate", self.name)
            memo = ctx.memo
            if key not in memo:
                memo[key] = self.body.expr.eval(ctx)
            return memo[key]
        values = [a.eval(ctx) for a in self.args]
        saved = ctx.bindings
        ctx.bindings = {**saved, **dict(zip(self.params, values, strict=True))}
        try:
            return self.body.expr.eval(ctx)
        finally:
            ctx.bindings = saved


class PredicateBody:
    """Filled in after type-checking, so predicates may refer to each other in any order."""

    __slots__ = ("expr", "type")

    def __init__(self) -> None:
        # set by compile_table before anything evaluates it (None only while the table compiles)
        self.expr: Expr = None  # type: ignore[assignment]
        self.type = ""


class Builtin(Expr):
    """A call of a built-in function (see FUNCTIONS); `static` holds literal arguments compiled at load
    time (e.g. a regex)."""

    __slots__ = ("func", "args", "static", "memo_key")

    def __init__(self, func: str, args: list[Expr], type_: str, static: Any = None) -> None:
        self.func = func
        self.args = args
        self.type = type_
        self.static = static
        # a call on literals reads only the context (`setting('tp')`, `size('world')`): its value is kept
        # in the context and shared by every rule of the variant that makes the same call
        self.memo_key: tuple | None = None
        if all(type(a) is Const for a in args):
            key = (func, *(a.value for a in args))  # type: ignore[attr-defined]
            try:
                hash(key)
            except TypeError:
                key = None
            self.memo_key = key

    def eval(self, ctx):
        key = self.memo_key
        if key is None or ctx.item is not None:
            return FUNCTIONS[self.func].impl(ctx, self, [a.eval(ctx) for a in self.args])
        memo = ctx.memo
        if key in memo:
            return memo[key]
        value = memo[key] = FUNCTIONS[self.func].impl(ctx, self, [a.eval(ctx) for a in self.args])
        return value


class Not(Expr):
    __slots__ = ("operand",)

    def __init__(self, operand: Expr) -> None:
        self.operand = operand
        self.type = BOOL

    def eval(self, ctx):
        v = self.operand.eval(ctx)
        return v if isinstance(v, Unk) else not v


class Neg(Expr):
    __slots__ = ("operand",)

    def __init__(self, operand: Expr) -> None:
        self.operand = operand
        self.type = INT

    def eval(self, ctx):
        v = self.operand.eval(ctx)
        return v if isinstance(v, Unk) else -v


class _Logical(Expr):
    """Three-valued `and` / `or`: the `decisive` value on either side settles it (False for and, True
    for or); otherwise both sides known give the other value, and an undecided side keeps it undecided."""

    __slots__ = ("left", "right")
    decisive: bool

    def __init__(self, left: Expr, right: Expr) -> None:
        self.left, self.right = left, right
        self.type = BOOL

    def eval(self, ctx):
        a = self.left.eval(ctx)
        if a is self.decisive:
            return a
        b = self.right.eval(ctx)
        if b is self.decisive:
            return b
        if a is (not self.decisive) and b is (not self.decisive):
            return a
        return _pick(a, b)


class And(_Logical):
    __slots__ = ()
    decisive = False


class Or(_Logical):
    __slots__ = ()
    decisive = True


def _div(a: int, b: int) -> Any:
    if b == 0:
        return Unk("division by zero", "invalid")
    return a // b


def _mod(a: int, b: int) -> Any:
    if b == 0:
        return Unk("modulo by zero", "invalid")
    return a % b


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": _div,
    "%": _mod,
}


class BinOp(Expr):
    __slots__ = ("op", "left", "right")

    def __init__(self, op: str, left: Expr, right: Expr, type_: str) -> None:
        self.op, self.left, self.right = op, left, right
        self.type = type_

    def eval(self, ctx):
        a = self.left.eval(ctx)
        b = self.right.eval(ctx)
        if isinstance(a, Unk) or isinstance(b, Unk):
            return _pick(a, b)
        return _BINOPS[self.op](a, b)


class In(Expr):
    __slots__ = ("operand", "items")

    def __init__(self, operand: Expr, items: tuple) -> None:
        self.operand, self.items = operand, items
        self.type = BOOL

    def eval(self, ctx):
        v = self.operand.eval(ctx)
        return v if isinstance(v, Unk) else v in self.items


# ---------------------------------------------------------------------------------------------- functions


class Function:
    """A built-in: parameter types (required, then optional), return type, implementation, doc;
    `literal`: argument indexes that must be literals (compiled at load by `compile_static`)."""

    __slots__ = ("params", "optional", "returns", "impl", "doc", "literal", "compile_static", "scoped")

    def __init__(
        self,
        params: tuple,
        optional: tuple,
        returns: str,
        impl: Callable,
        doc: str,
        literal: tuple = (),
        compile_static: Callable | None = None,
        scoped: bool = False,
    ) -> None:
        self.params, self.optional, self.returns, self.impl, self.doc = params, optional, returns, impl, doc
        self.literal, self.compile_static = literal, compile_static
        self.scoped = scoped  # compile_static also gets the Scope (to resolve names from the table)


def _is_unk(*vals: Any) -> bool:
    return any(isinstance(v, Unk) for v in vals)


def _entry_value(entry: dict | None, what: str, loc_fallback: dict | None = None) -> Any:
    """The text of an ENV_ENTRY / FLAG_ENTRY (as a str), or Unk."""
    if entry is None:
        return Unk(f"{what} is not set", "absent")
    loc = _loc_of(entry) or loc_fallback
    if "unknown" in entry:
        return Unk(f"{what} is {entry['unknown']}", "unknown", loc)
    value = entry.get("value")
    if value is None:
        return Unk(f"{what} is not set", "absent", loc)
    if value is True:
        return "true"
    if isinstance(value, list):
        if any(isinstance(v, dict) for v in value):
            unk = next(v for v in value if isinstance(v, dict))
            return Unk(f"{what} is {unk.get('unknown', 'unknown')}", "unknown", loc)
        return " ".join(value)
    return str(value)


def _loc_of(entry: dict | None) -> dict | None:
    if not entry or entry.get("line") is None or entry.get("file") is None:
        return None
    return {k: entry.get(k) for k in ("file", "line", "column", "end_line", "end_column")}


def _name_arg(v: Any) -> str | None:
    return None if isinstance(v, Unk) else v


def _f_env(ctx, node, a):
    name = _name_arg(a[0])
    if name is None:
        return a[0]
    entry = ctx.variant.get("env", {}).get(name)
    if entry is None:
        hidden = _unread_source(ctx)
        if hidden is not None:
            return Unk(f"{name} is not set in the script, but {hidden} may set it", "unknown")
    return _entry_value(entry, name)


def _unread_source(ctx) -> str | None:
    """A `source`d file packlint could not read before this launch: anything may be set in it."""
    launch_file, launch_line = ctx.launch.get("file"), ctx.launch.get("line") or 0
    for d in ctx.model.get("diagnostics", []):
        if d.get("code") not in ("source-not-found", "source-unknown", "source-unreadable", "export-unknown"):
            continue
        if d.get("file") != launch_file or (d.get("line") or 0) < launch_line:
            if d.get("code") == "export-unknown":
                return f"the export with a name packlint cannot know at {d.get('file')}:{d.get('line')}"
            msg = d.get("message", "")
            what = msg.split(": ", 1)[1].split(" (", 1)[0] if ": " in msg else "a file"
            return f"the file sourced at {d.get('file')}:{d.get('line')} ({what}) could not be read and"
    return None


def _free_unknowns(ctx) -> str | None:
    """An argument packlint cannot know that is not a flag's value: it may hold any flags."""
    memo = ctx.memo
    if "free_unknowns" not in memo:
        memo["free_unknowns"] = _read_free_unknowns(ctx)
    return memo["free_unknowns"]


def _read_free_unknowns(ctx) -> str | None:
    argv = ctx.variant.get("argv")
    if argv is None:
        argv = ctx.launch.get("argv", [])
    flags = ctx.variant.get("flags", {})
    for i, item in enumerate(argv):
        if not isinstance(item, dict):
            continue
        prev = argv[i - 1] if i > 0 else None
        if (
            isinstance(prev, str)
            and prev.startswith("-")
            and "=" not in prev
            and any(isinstance(o, dict) and "unknown" in o for o in flags.get(prev, []))
        ):
            continue  # the value of `prev`
        return item.get("unknown", "an unknown argument")
    return None


def _f_shell(ctx, node, a):
    name = _name_arg(a[0])
    if name is None:
        return a[0]
    entry = ctx.variant.get("unexported", {}).get(name) or ctx.variant.get("env", {}).get(name)
    return _entry_value(entry, name)


def _f_in_env(ctx, node, a):
    return a[0] if _is_unk(a[0]) else a[0] in ctx.variant.get("env", {})


def _f_assigned(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    entry = ctx.variant.get("env", {}).get(a[0])
    if entry is not None and entry.get("source", "script") in ("script", "prefix"):
        return True
    return a[0] in ctx.variant.get("unexported", {})


def _f_exported(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    entry = ctx.variant.get("env", {}).get(a[0])
    return entry is not None and entry.get("source", "script") in ("script", "prefix")


def _f_unexported(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    return a[0] in ctx.variant.get("unexported", {}) and a[0] not in ctx.variant.get("env", {})


def _f_exported_after(ctx, node, a):
    return a[0] if _is_unk(a[0]) else a[0] in ctx.variant.get("exported_after", {})


def _f_later_launch_env(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    me = ctx.launch.get("id", -1)
    for launch in ctx.model.get("launches", []):
        if launch.get("id", -1) > me and any(a[0] in v.get("env", {}) for v in launch.get("variants") or [launch]):
            return True
    return False


def _f_source(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    entry = ctx.variant.get("env", {}).get(a[0])
    if entry is None:
        return Unk(f"{a[0]} is not set", "absent")
    return entry.get("source", "script")


def _occurrences(ctx, key: str, name: str) -> list[dict]:
    return [o for o in ctx.variant.get(key, {}).get(name, []) if o is not None and o.get("value", "") is not None]


def _f_has_flag(ctx, node, a, key="flags"):
    if _is_unk(a[0]):
        return a[0]
    if _occurrences(ctx, key, a[0]):
        return True
    if key == "flags":
        hidden = _free_unknowns(ctx)
        if hidden is not None:
            return Unk(f"the program's arguments include {hidden}, which may contain {a[0]}", "unknown")
    return False


def _f_flag(ctx, node, a, key="flags"):
    if _is_unk(a[0]):
        return a[0]
    occ = _occurrences(ctx, key, a[0])
    return _entry_value(occ[-1] if occ else None, a[0])


def _f_flag_distinct_in_script(ctx, node, a):
    """Distinct values among the occurrences written in the script (not those the caller passes in
    through "$@": overriding a default that way is the intended idiom)."""
    return _f_flag_distinct(ctx, node, a, script_only=True)


def _f_flag_count(ctx, node, a):
    return a[0] if _is_unk(a[0]) else len(_occurrences(ctx, "flags", a[0]))


def _f_flag_distinct(ctx, node, a, script_only: bool = False):
    if _is_unk(a[0]):
        return a[0]
    vals = [
        _entry_value(o, a[0])
        for o in _occurrences(ctx, "flags", a[0])
        if not (script_only and o.get("source") == "caller")
    ]
    known = {_same_value(a[0], v) for v in vals if not isinstance(v, Unk)}
    unknown = [v for v in vals if isinstance(v, Unk)]
    if unknown and len(known) < 2:
        return unknown[0]
    return len(known)


_HYDRA_BOOLEANS = {"true": "true", "false": "false"}


def _same_value(name: str, value):
    """The value as the program reads it: a Hydra/OmegaConf override (`key=value`, no leading dash)
    reads `True`, `true` and `TRUE` as one boolean."""
    if isinstance(value, str) and not name.startswith("-"):
        return _HYDRA_BOOLEANS.get(value.lower(), value)
    return value


def _f_flag_values(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    vals = [_entry_value(o, a[0]) for o in _occurrences(ctx, "flags", a[0])]
    return ", ".join("?" if isinstance(v, Unk) else repr(v) for v in vals)


def _f_int(ctx, node, a):
    v = a[0]
    if isinstance(v, Unk):
        if v.kind == "absent" and len(a) > 1:
            return a[1]
        return v
    n = python_int(v)
    if n is None:
        return Unk(f"{v!r} is not an integer", "invalid")
    return n


def _f_is_int(ctx, node, a):
    return a[0] if _is_unk(a[0]) else python_int(a[0]) is not None


def _f_matches(ctx, node, a):
    return a[0] if _is_unk(a[0]) else node.static.search(a[0]) is not None


def _f_quote(ctx, node, a):
    v = a[0]
    if isinstance(v, Unk):
        return "unset" if v.kind == "absent" else "unknown"
    return repr(v)


def _f_world_size(ctx, node, a):
    ws = ctx.variant.get("world_size") or ctx.launch.get("world_size") or {"unknown": "no world size in the model"}
    if "unknown" in ws:
        return Unk(f"the world size is {ws['unknown']}", "unknown")
    n = python_int(str(ws.get("value")))
    return Unk(f"the world size {ws.get('value')!r} is not an integer", "invalid") if n is None else n


def _f_launcher(ctx, node, a):
    return ctx.launch.get("launcher") or Unk("no launcher", "absent")


def _f_program(ctx, node, a):
    return ctx.launch.get("program") or Unk("no program", "absent")


def _f_bash_rejects(ctx, node, a):
    return ctx.bash_rejects()


def _f_item(field_name: str):
    def impl(ctx, node, a):
        item = ctx.item or {}
        v = item.get(field_name)
        return v if v is not None else Unk(f"no {field_name}", "absent")

    return impl


def _compile_regex(args: list) -> Any:
    return re.compile(args[1])


# ---------------------------------------------------------------------------------------------- derived values
# Issue 12: parallel sizes (from the launch model's `parallel` block: world from the launcher, TP/PP/CP/
# EP/VPP from the flags, DP derived) and *settings* — one program setting under all its spellings
# (`--micro-batch-size 2`, Megatron-Bridge's `train.micro_batch_size=2`) with the default the table's
# [defaults] gives. Arithmetic over them (`*`, `/`, `%`) is the language's own; these functions give it
# typed values, and say "unknown" (rule undecided) rather than guess.

SIZE_NAMES = ("nodes", "procs_per_node", "world", "tp", "pp", "cp", "ep", "vpp", "dp")


class NameLookupError(Exception):
    """A literal name argument that the table does not define (reported at load as a ConditionError)."""


class Setting:
    """One entry of [defaults]: the flag spellings of a setting and the value used when none is given
    (None: the program has no default; the setting is absent)."""

    __slots__ = ("name", "flags", "default")

    def __init__(self, name: str, flags: tuple[str, ...], default: str | None) -> None:
        self.name, self.flags, self.default = name, flags, default

    def __reduce__(self):
        return (Setting, (self.name, self.flags, self.default))


def _compile_size(args: list) -> str:
    if args[0] not in SIZE_NAMES:
        raise NameLookupError(f"unknown size {args[0]!r} (one of {', '.join(SIZE_NAMES)})")
    return args[0]


def _compile_setting(args: list, scope: Scope) -> Setting:
    found = scope.settings.get(args[0])
    if found is None:
        import difflib

        close = difflib.get_close_matches(args[0], list(scope.settings), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise NameLookupError(f"unknown setting {args[0]!r}: not in any table's [defaults]{hint}")
    return found


def _f_size(ctx, node, a):
    name = node.static
    entry = (ctx.variant.get("parallel") or ctx.launch.get("parallel") or {}).get(name)
    label = {"procs_per_node": "processes per node", "world": "the world size"}.get(name, name.upper())
    if entry is None:
        return Unk(f"{label} is not in the launch model", "unknown")
    loc = _loc_of(entry)
    if "unknown" in entry:
        # the world size is wrong (PK301's finding), or the script does not say it (a hostfile, the
        # allocation): no "could not decide" info, which the user could not settle with --env anyway
        kind = "invalid" if entry.get("not_divisible") else "absent" if entry.get("not_in_script") else "unknown"
        return Unk(f"{label} is unknown ({entry['unknown']})", kind, loc)
    if "range" in entry:
        lo, hi = entry["range"]
        return Unk(f"{label} is an elastic range {lo}..{hi}", "unknown", loc)
    if "values" in entry:
        return Unk(f"{label} differs between branches", "unknown", loc)
    value = entry.get("value")
    if value is None:
        return Unk(f"{label} is not set", "absent", loc)
    return int(value)


def schema_default(ctx, setting: Setting) -> str | None:
    """The value the program uses when the script gives none of the setting's flags. Today the
    table's [defaults]; the code-base flag schema (when the launched code is read) will answer here."""
    return setting.default


def _setting_occurrence(ctx, setting: Setting) -> tuple[str, dict] | None:
    """The occurrence the program keeps: the last one written, over all spellings."""
    best = None
    for flag in setting.flags:
        for occ in _occurrences(ctx, "flags", flag):
            key = (occ.get("line") or 0, occ.get("column") or 0)
            if best is None or key >= best[0]:
                best = (key, flag, occ)
    return None if best is None else (best[1], best[2])


def _f_setting(ctx, node, a):
    setting: Setting = node.static
    found = _setting_occurrence(ctx, setting)
    if found is not None:
        return _entry_value(found[1], found[0])
    hidden = _free_unknowns(ctx)
    if hidden is not None:
        return Unk(f"{setting.flags[0]} may be given by {hidden}", "unknown")
    if any(not f.startswith("-") and "." in f for f in ctx.variant.get("flags", {})):
        # Hydra overrides (Megatron-Bridge): what is not overridden comes from the recipe, not argparse
        return Unk(f"{setting.flags[0]} is not overridden: the recipe's config decides it", "unknown")
    default = schema_default(ctx, setting)
    if default is None:
        return Unk(f"{setting.flags[0]} is not given and has no default", "absent")
    return default


_TRUE_WORDS = {"true", "1", "yes", "on"}


def _f_enabled(ctx, node, a):
    v = _f_setting(ctx, node, a)
    if isinstance(v, Unk):
        return False if v.kind == "absent" else v
    return v.strip().lower() in _TRUE_WORDS


def _f_setting_given(ctx, node, a):
    return _setting_occurrence(ctx, node.static) is not None


def python_float(text: str) -> float | None:
    """What Python's `float(text)` returns (learning rates are floats: `1e-4`), or None where it raises."""
    try:
        return float(text)
    except (ValueError, TypeError):
        return None


def _f_float_lt(ctx, node, a):
    if _is_unk(*a):
        return _pick(*a)
    x, y = python_float(a[0]), python_float(a[1])
    if x is None or y is None:
        return Unk(f"{a[0] if x is None else a[1]!r} is not a number", "invalid")
    return x < y


def _f_choose(ctx, node, a):
    return a[0] if isinstance(a[0], Unk) else (a[1] if a[0] else a[2])


DERIVED_FUNCTIONS: dict[str, Function] = {
    "count": Function(
        (BOOL,),
        (),
        INT,
        lambda c, n, a: a[0] if isinstance(a[0], Unk) else int(a[0]),
        "1 when the condition holds, else 0 (to add flags that count as a layer, say)",
    ),
    "choose": Function(
        (BOOL, STR, STR),
        (),
        STR,
        _f_choose,
        "the second argument when the condition holds, else the third (for messages)",
    ),
    "float_lt": Function(
        (STR, STR), (), BOOL, _f_float_lt, "both values read with Python float() (`1e-4`), the first is smaller"
    ),
    "size": Function(
        (STR,),
        (),
        INT,
        _f_size,
        "a parallel size of the launch: 'world', 'nodes', 'procs_per_node' (from the launcher), "
        "'tp', 'pp', 'cp', 'ep', 'vpp' (from the flags, with defaults), 'dp' = world / "
        "(tp x pp x cp); unknown for an elastic range or a size packlint cannot know",
        literal=(0,),
        compile_static=_compile_size,
    ),
    "setting": Function(
        (STR,),
        (),
        STR,
        _f_setting,
        "a program setting from [defaults] under any of its spellings (argparse flag, Hydra "
        "override), the last one given; else its default; absent when it has none",
        literal=(0,),
        compile_static=_compile_setting,
        scoped=True,
    ),
    "enabled": Function(
        (STR,),
        (),
        BOOL,
        _f_enabled,
        "a boolean setting is on: given as a store-true flag or with the value true/1/yes/on",
        literal=(0,),
        compile_static=_compile_setting,
        scoped=True,
    ),
    "setting_given": Function(
        (STR,),
        (),
        BOOL,
        _f_setting_given,
        "the script gives the setting under one of its spellings (defaults do not count)",
        literal=(0,),
        compile_static=_compile_setting,
        scoped=True,
    ),
}

FUNCTIONS: dict[str, Function] = {
    "env": Function(
        (STR,), (), STR, _f_env, "the value the launched process sees for an environment variable (absent when unset)"
    ),
    "shell": Function((STR,), (), STR, _f_shell, "the value of a shell variable at the launch, exported or not"),
    "in_env": Function(
        (STR,), (), BOOL, _f_in_env, "the launched process has the variable (exported, prefix, caller or cluster)"
    ),
    "exported": Function(
        (STR,),
        (),
        BOOL,
        _f_exported,
        "the script itself exports the variable to the launch (export or prefix assignment)",
    ),
    "assigned": Function(
        (STR,), (), BOOL, _f_assigned, "the script (or a file it sources) assigns the variable, exported or not"
    ),
    "unexported": Function(
        (STR,), (), BOOL, _f_unexported, "the variable is set in the shell at the launch but not exported"
    ),
    "exported_after": Function(
        (STR,), (), BOOL, _f_exported_after, "the variable is first exported after the launch ran"
    ),
    "later_launch_env": Function(
        (STR,), (), BOOL, _f_later_launch_env, "a later launch in the script has the variable in its environment"
    ),
    "env_source": Function(
        (STR,), (), STR, _f_source, "where the launch's value comes from: script, caller, prefix or cluster"
    ),
    "has_flag": Function((STR,), (), BOOL, _f_has_flag, "the program is given the flag"),
    "flag": Function(
        (STR,),
        (),
        STR,
        _f_flag,
        "the flag's effective (last) value; 'true' for a store-true flag; absent when not given",
    ),
    "flag_count": Function((STR,), (), INT, _f_flag_count, "how many times the flag is given"),
    "flag_distinct": Function((STR,), (), INT, _f_flag_distinct, "how many different values the flag is given"),
    "flag_distinct_in_script": Function(
        (STR,),
        (),
        INT,
        _f_flag_distinct_in_script,
        "how many different values the script itself gives the flag "
        '(not counting the caller\'s arguments forwarded with "$@")',
    ),
    "flag_values": Function((STR,), (), STR, _f_flag_values, "every value the flag is given, in order (for messages)"),
    "has_launcher_flag": Function(
        (STR,),
        (),
        BOOL,
        lambda c, n, a: _f_has_flag(c, n, a, "launcher_flags"),
        "the launcher (torchrun, deepspeed, ...) is given the option",
    ),
    "launcher_flag": Function(
        (STR,), (), STR, lambda c, n, a: _f_flag(c, n, a, "launcher_flags"), "the launcher option's effective value"
    ),
    "world_size": Function((), (), INT, _f_world_size, "the number of processes the launcher starts"),
    "launcher": Function((), (), STR, _f_launcher, "the outermost launcher (torchrun, deepspeed, ...)"),
    "program": Function((), (), STR, _f_program, "the training entry point"),
    "int": Function(
        (STR,),
        (INT,),
        INT,
        _f_int,
        "Python int() of a value; the optional second argument is used when the value is absent",
    ),
    "is_int": Function((STR,), (), BOOL, _f_is_int, "Python int() accepts the value"),
    "matches": Function(
        (STR, STR),
        (),
        BOOL,
        _f_matches,
        "the value matches the regex (re.search)",
        literal=(1,),
        compile_static=_compile_regex,
    ),
    "known": Function(
        (STR,),
        (),
        BOOL,
        lambda c, n, a: not isinstance(a[0], Unk),
        "the value is known (not unknown, invalid or absent); never undecided",
    ),
    "quote": Function((STR,), (), STR, _f_quote, "the value in quotes, or `unset` / `unknown` (for messages)"),
    "bash_rejects": Function(
        (), (), BOOL, _f_bash_rejects, "`bash -n` rejects the script (true when bash is not available)"
    ),
    "diag_code": Function((), (), STR, _f_item("code"), "for_each diagnostics: the diagnostic's code"),
    "diag_message": Function((), (), STR, _f_item("message"), "for_each diagnostics: its message"),
}
FUNCTIONS.update(DERIVED_FUNCTIONS)


# ---------------------------------------------------------------------------------------------- checking


class Scope:
    """What names mean while checking one expression: bound names (for_each, predicate parameters) ->
    type; predicates -> (params, body); constants from [variables] -> (value, type)."""

    def __init__(
        self,
        variables: dict | None = None,
        predicates: dict | None = None,
        constants: dict | None = None,
        settings: dict | None = None,
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
    if isinstance(node, Call):
        args = [check(a, scope) for a in node.args]
        if node.func in scope.predicates:
            params, body = scope.predicates[node.func]
            if len(args) != len(params):
                raise ConditionError(
                    f"predicate {node.func!r} takes {len(params)} argument(s), got {len(args)}", node.pos
                )
            if not body.type:
                raise ConditionError(f"predicate {node.func!r} refers to itself", node.pos)
            for (pname, ptype), arg, raw in zip(params, args, node.args, strict=True):
                if arg.type != ptype:
                    raise ConditionError(
                        f"argument {pname!r} of {node.func!r} must be {ptype}, not {arg.type}", raw.pos
                    )
            return PredicateCall(node.func, [p for p, _ in params], args, body)
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
    raise ConditionError("internal: unknown syntax node", node.pos)  # pragma: no cover


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

    def __init__(self, parts: list) -> None:
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
    parts: list = []
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


# ---------------------------------------------------------------------------------------------- context


class EvalContext:
    """What an expression reads: one variant of one launch (or only the script, for script rules)."""

    __slots__ = ("model", "launch", "variant", "bindings", "item", "_bash_rejects", "_code", "memo")

    def __init__(
        self,
        model: dict,
        launch: dict | None,
        variant: dict | None,
        bash_rejects: Callable[[], Any] | None = None,
        code: Callable[[dict, dict], Any] | None = None,
    ) -> None:
        self.model = model
        self.launch = launch or {}
        self.variant = variant or {}
        self.bindings: dict[str, Any] = {}
        self.item: dict | None = None
        self._bash_rejects = bash_rejects
        self._code = code  # (launch, variant) -> packlint.codebase.CodeFacts | None, memoised by the caller
        # what depends only on (launch, variant), computed once for all the rules that ask
        self.memo: dict[str, Any] = {}

    def code_facts(self) -> Any:
        """The facts about the code this launch runs (packlint.codebase.model.CodeFacts), or None when
        no code base is at hand (or code reading is off). Computed on first use by the check's code
        session, so rules that never ask cost nothing."""
        if self._code is None or not self.launch:
            return None
        return self._code(self.launch, self.variant)

    def bash_rejects(self) -> Any:
        return True if self._bash_rejects is None else self._bash_rejects()


# ---------------------------------------------------------------------------------------------- code base
# Issue 10: conditions over the code a launch runs (packlint.codebase). The facts come from the check's
# code session through EvalContext.code_facts(); when the program's source is not at hand and it is one
# of Megatron-LM's root programs, its flags are checked against the shipped release snapshots
# (packlint.codebase.snapshots). Nothing here reads code itself.


def _code(ctx) -> Any:
    try:
        return ctx.code_facts()
    except Exception:  # a reader bug must not take the check down: the rules then see no code
        return None


def _pinned_megatron(ctx) -> str | None:
    session = getattr(ctx._code, "__self__", None)
    return getattr(getattr(session, "options", None), "megatron_version", None)


def _schema_view(ctx) -> tuple[Any, str, Any]:
    """(FlagSchema or None, what it was read from (for messages), Snapshot or None)."""
    view = ctx.memo.get("schema_view")
    if view is None:
        view = ctx.memo["schema_view"] = _read_schema_view(ctx)
    return view


def _read_schema_view(ctx) -> tuple[Any, str, Any]:
    facts = _code(ctx)
    if facts is not None and facts.known:
        if facts.schema is None:
            return None, "", None
        return facts.schema, _code_label(facts, "the parser of "), None
    from packlint.codebase.snapshots import snapshot_for

    snap = snapshot_for(ctx.variant.get("program") or ctx.launch.get("program"), _pinned_megatron(ctx))
    if snap is None:
        return None, "", None
    return snap.schema, snap.describe + " (its code base was not found)", snap


def _code_label(facts, prefix: str = "") -> str:
    """The program file as a reader can find it: relative to the working directory when under it or
    one level up, else absolute."""
    res = facts.resolution
    return f"{prefix}{_show_path(res.file) if res.file else (res.program or '?')}"


def _show_path(path: str) -> str:
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("../..") else rel


def _f_code_searched(ctx, node, a):
    return _code(ctx) is not None


def _f_code_known(ctx, node, a):
    facts = _code(ctx)
    return facts is not None and facts.known


def _f_code_program(ctx, node, a):
    facts = _code(ctx)
    if facts is None:
        return Unk("code reading is off or the launch runs no program", "absent")
    return _code_label(facts) if facts.known else (facts.resolution.program or "?")


def _f_code_detail(ctx, node, a):
    facts = _code(ctx)
    if facts is None:
        return Unk("code reading is off or the launch runs no program", "absent")
    return facts.resolution.detail or facts.resolution.how


def _f_code_reads(ctx, node, a):
    """True / False from the code's reads. The reads found in the program's import closure decide
    first; a read with a computed name makes the names starting with its known prefix undecidable (a
    name computed from nothing known, an empty prefix, e.g. Megatron's YAML loader resolving `${NAME}`
    from a config file, is not counted: it would make every variable undecidable). A name the closure
    does not read still counts as read when a Python file anywhere under the code base's roots quotes
    it: modules imported dynamically (registries, importlib) escape any static closure, and a
    variable is only called dead when no module of the code base reads it."""
    if _is_unk(a[0]):
        return a[0]
    facts = _code(ctx)
    if facts is None or not facts.known:
        return Unk("the code base of the launch was not found", "absent")
    hit = None
    for r in facts.env_reads:
        if not r.computed and r.name == a[0]:
            return True
        if r.computed and r.name and a[0].startswith(r.name) and hit is None:
            hit = r
    if hit is not None:
        return Unk(
            f"the code reads environment variables named {hit.name}... (a computed name) at "
            f"{_show_path(hit.file)}:{hit.line}, which may be {a[0]}",
            "unknown",
        )
    return _quoted_anywhere(_code_roots(facts), a[0])


def _code_roots(facts) -> list[str]:
    import os

    res = facts.resolution
    roots = [res.root] if res.root else []
    roots += [p for p in (res.pythonpath or []) if p]
    if not roots and res.file:
        roots = [os.path.dirname(res.file)]
    out: list[str] = []
    for r in roots:
        r = os.path.abspath(r)
        if os.path.isdir(r) and not any(r == o or r.startswith(o.rstrip("/") + "/") for o in out):
            out = [o for o in out if not o.startswith(r.rstrip("/") + "/")] + [r]
    return out


_MENTION_MEMO: dict[tuple, bool] = {}


def _quoted_anywhere(roots: list[str], name: str) -> bool:
    """A Python file under `roots` holds the string literal `name` ('NAME' or "NAME"). grep where it
    exists (a fraction of a second on Megatron-LM's 70 MB), else one Python text scan per root."""
    key = (tuple(roots), name)
    if key in _MENTION_MEMO:
        return _MENTION_MEMO[key]
    if not roots:
        return False
    import shutil
    import subprocess

    found = None
    grep = shutil.which("grep")
    if grep is not None:
        try:
            proc = subprocess.run(
                [grep, "-rlF", "--include=*.py", "-m", "1", "-e", f'"{name}"', "-e", f"'{name}'", "--", *roots],
                capture_output=True,
                timeout=60,
            )
            if proc.returncode in (0, 1):
                found = proc.returncode == 0
        except (OSError, subprocess.SubprocessError):
            found = None
    if found is None:
        found = any(name in _quoted_names(root) for root in roots)
    _MENTION_MEMO[key] = found
    return found


_QUOTED_MEMO: dict[str, frozenset] = {}
_QUOTED_RE = re.compile(rb"""['"]([A-Za-z_][A-Za-z0-9_]{1,127})['"]""")
_MAX_TREE_FILES = 20000


def _quoted_names(root: str) -> frozenset:
    """Every identifier-like string literal in the Python files under `root` (one pass per root and
    process; a text scan, no parsing)."""
    if root in _QUOTED_MEMO:
        return _QUOTED_MEMO[root]
    import os

    names: set[bytes] = set()
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("__pycache__", "node_modules")]
        for fn in filenames:
            if not fn.endswith(".py"):
                continue
            seen += 1
            if seen > _MAX_TREE_FILES:
                break
            try:
                with open(os.path.join(dirpath, fn), "rb") as fh:
                    names.update(_QUOTED_RE.findall(fh.read()))
            except OSError:
                continue
    result = frozenset(n.decode("ascii", "replace") for n in names)
    _QUOTED_MEMO[root] = result
    return result


def _f_code_read_at(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    facts = _code(ctx)
    reads = facts.reads_of(a[0]) if facts is not None and facts.known else []
    if not reads:
        return Unk(f"{a[0]} is not read", "absent")
    r = reads[0]
    return f"{_show_path(r.file)}:{r.line}"


def _f_flags_checked(ctx, node, a):
    return _schema_view(ctx)[0] is not None


def _f_flags_closed(ctx, node, a):
    schema = _schema_view(ctx)[0]
    if schema is None:
        return Unk("no flag schema for this program", "absent")
    return bool(schema.closed)


def _f_flags_source(ctx, node, a):
    schema, what, _ = _schema_view(ctx)
    return what if schema is not None else Unk("no flag schema for this program", "absent")


def _f_flag_defined(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    schema = _schema_view(ctx)[0]
    if schema is None:
        return Unk("no flag schema for this program", "absent")
    if not a[0].startswith("-"):
        return True
    return schema.lookup(a[0]) is not None


def _f_flag_suggestion(ctx, node, a):
    """' (did you mean --x?)' from the schema, '' when nothing is close."""
    if _is_unk(a[0]):
        return a[0]
    schema, _, snap = _schema_view(ctx)
    if schema is None:
        return ""
    close = schema.close_names(a[0], 1, 0.75)
    if snap is not None and snap.pinned is not None:
        from packlint.codebase.snapshots import snapshot_for

        full = snapshot_for(ctx.variant.get("program") or ctx.launch.get("program"), None)
        rel = full.flag_releases.get(a[0]) if full is not None else None
        if full is not None and rel:  # a flag of other releases: that says more than a similar name
            return f" (it exists in Megatron-LM {full.range_text(rel)})"
    return f" (did you mean {close[0]}?)" if close else ""


def _f_flag_close_match(ctx, node, a):
    """The one flag of the schema close to this name (a fix may rename to it); absent when none or
    several are close, so no fix guesses between them."""
    if _is_unk(a[0]):
        return a[0]
    schema = _schema_view(ctx)[0]
    if schema is None:
        return Unk("no flag schema for this program", "absent")
    close = schema.close_names(a[0], 2, 0.75)
    return close[0] if len(close) == 1 else Unk("no single close flag", "absent")


def _f_flag_releases(ctx, node, a):
    """The snapshot releases a flag is valid in, when not all of those considered; absent otherwise."""
    if _is_unk(a[0]):
        return a[0]
    snap = _schema_view(ctx)[2]
    rel = snap.flag_releases.get(a[0]) if snap is not None else None
    if not rel or len(rel) == len(snap.considered):
        return Unk(f"{a[0]} is valid in every release considered", "absent")
    return snap.range_text(rel)


def _f_flag_removed(ctx, node, a):
    if _is_unk(a[0]):
        return a[0]
    snap = _schema_view(ctx)[2]
    return snap is not None and snap.removed_after(a[0]) is not None


def _f_flag_spec(field_name: str):
    def impl(ctx, node, a):
        if _is_unk(a[0]):
            return a[0]
        schema = _schema_view(ctx)[0]
        spec = schema.lookup(a[0]) if schema is not None else None
        if spec is None:
            return Unk(f"{a[0]} is not in the schema", "absent")
        v = getattr(spec, field_name)
        if field_name == "origin":
            return v if spec.origin_file else Unk("no origin", "absent")
        return "|".join(v) if isinstance(v, tuple) else ("" if v is None else str(v))

    return impl


_ONE_VALUE_ACTIONS = ("store", "append")


def _value_words(occ: dict) -> list | None:
    """The words argparse receives as the occurrence's value (None: none, the flag stands alone);
    an item that is a dict is a word packlint does not know."""
    v = occ.get("value")
    if v is True or v is None:
        return None
    if isinstance(v, list):
        return v
    return [v]


def _type_problem(spec, word: str) -> str | None:
    """What argparse says about one value word, or None when it accepts it."""
    if word == "":
        # an empty word is almost always an unset variable the caller is meant to set: not judged
        return None
    t = spec.type or "str"
    if t == "int" and python_int(word) is None:
        return f'{word!r} is not an integer: argparse exits with "invalid int value: {word!r}"'
    if t == "float":
        try:
            float(word)
        except ValueError:
            return f'{word!r} is not a number: argparse exits with "invalid float value: {word!r}"'
    if spec.choices:  # an empty tuple is a list computed at run time that read as empty: open
        text = word
        if t == "int" and python_int(word) is not None:
            text = str(python_int(word))
        elif t == "float":
            try:
                text = str(float(word))
            except ValueError:
                pass
        if text not in spec.choices and word not in spec.choices:
            return (
                f"{word!r} is not one of its choices ({', '.join(spec.choices)}): argparse exits with "
                f'"invalid choice: {word!r}"'
            )
    return None


def _flag_problem(spec, occ: dict, name: str) -> Any:
    words = _value_words(occ)
    if "unknown" in occ:
        return None
    if not spec.takes_value:
        if words is None:
            return None
        if any(isinstance(w, dict) for w in words):
            return Unk("the words after it are not known", "unknown")
        shown = " ".join(words)
        return (
            f"takes no value ({spec.action}), but is followed by {shown!r}: argparse reads it as an extra "
            f"argument and exits with 'unrecognized arguments'"
        )
    nargs = spec.nargs
    if words is None and _followed_by_expansion(occ, name):
        # `--flag $X` with X empty here (often a positional parameter the caller gives): bash drops the
        # word, but packlint cannot tell an intended caller value from a missing one
        return Unk(f"the value after {name} is an expansion that is empty here", "unknown")
    if words is None:
        if nargs in (None, "+") or (isinstance(nargs, int) and nargs > 0):
            return (
                "needs a value but none follows it: argparse exits with 'expected one argument'"
                if nargs is None
                else "needs at least one value but none follows it"
            )
        return None
    joined = " ".join(w for w in words if isinstance(w, str))
    if "$__PLGAP" in joined:  # a region the parser could not read (packlint.parse.GAP_VARIABLE): unknown
        return Unk("the value comes from a part of the script packlint could not parse", "unknown")
    if "<" in joined and ">" in joined.split("<", 1)[1]:
        return Unk("the value is a template placeholder (<...>)", "unknown")
    if any(isinstance(w, dict) for w in words):
        known_count = len(words)
        if nargs is None and known_count > 1:
            return Unk("some of the words after it are not known", "unknown")
        return None
    if nargs is None and len(words) > 1:
        return (
            f"takes one value but is given {len(words)} words ({' '.join(words)!r}), often an unquoted "
            f"variable: argparse takes {words[0]!r} and exits with 'unrecognized arguments: "
            f"{' '.join(words[1:])}'"
        )
    if isinstance(nargs, int) and not isinstance(nargs, bool) and len(words) != nargs:
        return f"takes exactly {nargs} values but is given {len(words)} ({' '.join(words)!r})"
    for w in words:
        bad = _type_problem(spec, w)
        if bad is not None:
            return bad
    return None


_LINES_MEMO: dict[str, list[str]] = {}


def _followed_by_expansion(occ: dict, flag: str) -> bool:
    """The script writes the flag followed by an unquoted `$...` word (`--load $CKPT`, also inside a
    string of flags), so a missing value may be an empty expansion the caller is meant to fill."""
    path = occ.get("file")
    if not path:
        return False
    if path not in _LINES_MEMO:
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                _LINES_MEMO[path] = [fh.read()]
        except OSError:
            _LINES_MEMO[path] = [""]
    text = _LINES_MEMO[path][0]
    pattern = r"(?<![\w-])" + re.escape(flag) + r"(?:[ \t]|\\\n)+\$(?!\()"
    return re.search(pattern, text) is not None


def _f_flag_problem(ctx, node, a):
    """What is wrong with the values a flag is given, by its spec in the schema; absent when nothing is."""
    if _is_unk(a[0]):
        return a[0]
    schema = _schema_view(ctx)[0]
    spec = schema.lookup(a[0]) if schema is not None else None
    if spec is None:
        return Unk(f"{a[0]} is not in the schema", "absent")
    unk = None
    for occ in ctx.variant.get("flags", {}).get(a[0], []):
        if not isinstance(occ, dict):
            continue
        p = _flag_problem(spec, occ, a[0])
        if isinstance(p, str):
            return p
        if isinstance(p, Unk):
            unk = p
    return unk if unk is not None else Unk(f"{a[0]}'s values are fine", "absent")


_EXPANDS_MEMO: dict[tuple[str, str], bool] = {}


def _f_script_expands(ctx, node, a):
    """The script text expands the variable itself (`$NAME`, `${NAME...}`): an export then may serve
    the script's own commands, not the program."""
    if _is_unk(a[0]):
        return a[0]
    path = ctx.model.get("script")
    files = [path] + [f for f in ctx.model.get("files", []) if isinstance(f, str)] if path else []
    for f in files:
        key = (f, a[0])
        if key not in _EXPANDS_MEMO:
            try:
                with open(f, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
            except OSError:
                text = ""
            _EXPANDS_MEMO[key] = re.search(r"\$\{?[#!]?" + re.escape(a[0]) + r"\b", text) is not None
        if _EXPANDS_MEMO[key]:
            return True
    return False


CODEBASE_FUNCTIONS: dict[str, Function] = {
    "code_searched": Function(
        (),
        (),
        BOOL,
        _f_code_searched,
        "packlint looked for the code the launch runs (code reading on, a program given)",
    ),
    "code_known": Function((), (), BOOL, _f_code_known, "the source of the launch's program was found and read"),
    "code_program": Function(
        (), (), STR, _f_code_program, "the program file (relative to its code base) or, when not found, as written"
    ),
    "code_detail": Function(
        (), (), STR, _f_code_detail, "how the program was found, or where packlint looked (for messages)"
    ),
    "code_reads": Function(
        (STR,),
        (),
        BOOL,
        _f_code_reads,
        "a module of the launched code base reads the environment variable "
        "(undecided where a computed name may be it; absent without code)",
    ),
    "code_read_at": Function((STR,), (), STR, _f_code_read_at, "file:line of the first read of the variable"),
    "flags_checked": Function(
        (), (), BOOL, _f_flags_checked, "a flag schema is at hand: the program's parser, or a Megatron-LM snapshot"
    ),
    "flags_closed": Function(
        (),
        (),
        BOOL,
        _f_flags_closed,
        "the parser rejects flags it does not define (no parse_known_args, nothing unresolved)",
    ),
    "flags_source": Function((), (), STR, _f_flags_source, "what the flags were checked against (for messages)"),
    "flag_defined": Function(
        (STR,), (), BOOL, _f_flag_defined, "the program's parser defines the flag (argparse's prefix matching included)"
    ),
    "flag_suggestion": Function((STR,), (), STR, _f_flag_suggestion, "' (did you mean --x?)' from the schema, or ''"),
    "flag_close_match": Function(
        (STR,), (), STR, _f_flag_close_match, "the one flag of the schema close to this name (absent: none or several)"
    ),
    "flag_releases": Function(
        (STR,), (), STR, _f_flag_releases, "Megatron-LM snapshots: the releases the flag is valid in, when not all"
    ),
    "flag_removed": Function(
        (STR,), (), BOOL, _f_flag_removed, "Megatron-LM snapshots: the flag is gone from the newest release considered"
    ),
    "flag_type": Function((STR,), (), STR, _f_flag_spec("type"), "the flag's type in the schema"),
    "flag_action": Function((STR,), (), STR, _f_flag_spec("action"), "the flag's argparse action"),
    "flag_origin": Function((STR,), (), STR, _f_flag_spec("origin"), "file:line where the flag is defined"),
    "flag_problem": Function(
        (STR,),
        (),
        STR,
        _f_flag_problem,
        "what argparse rejects in the flag's values (type, choices, a value for a "
        "store_true flag, several words for a one-value flag); absent when nothing",
    ),
    "script_expands": Function(
        (STR,), (), BOOL, _f_script_expands, "the script text itself expands the variable ($NAME)"
    ),
}
FUNCTIONS.update(CODEBASE_FUNCTIONS)
