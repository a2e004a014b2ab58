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
from typing import Any, Callable

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

_TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<int>\d+)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|[<>()+\-*/%,\[\]])
""", re.VERBOSE)

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

    def eval(self, ctx: "EvalContext") -> Any:  # pragma: no cover - abstract
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

    def __init__(self, name: str, params: list[str], args: list[Expr], body: "PredicateBody") -> None:
        self.name = name
        self.params = params
        self.args = args
        self.body = body
        self.type = body.type

    def eval(self, ctx):
        if not self.params:
            return self.body.expr.eval(ctx)
        values = [a.eval(ctx) for a in self.args]
        saved = ctx.bindings
        ctx.bindings = {**saved, **dict(zip(self.params, values))}
        try:
            return self.body.expr.eval(ctx)
        finally:
            ctx.bindings = saved


class PredicateBody:
    """Filled in after type-checking, so predicates may refer to each other in any order."""

    __slots__ = ("expr", "type")

    def __init__(self) -> None:
        self.expr: Expr | None = None
        self.type = ""


class Builtin(Expr):
    """A call of a built-in function (see FUNCTIONS); `static` holds literal arguments compiled at load
    time (e.g. a regex)."""

    __slots__ = ("func", "args", "static")

    def __init__(self, func: str, args: list[Expr], type_: str, static: Any = None) -> None:
        self.func = func
        self.args = args
        self.type = type_
        self.static = static

    def eval(self, ctx):
        return FUNCTIONS[self.func].impl(ctx, self, [a.eval(ctx) for a in self.args])


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
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b, "/": _div, "%": _mod,
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

    __slots__ = ("params", "optional", "returns", "impl", "doc", "literal", "compile_static")

    def __init__(self, params: tuple, optional: tuple, returns: str, impl: Callable, doc: str,
                 literal: tuple = (), compile_static: Callable | None = None) -> None:
        self.params, self.optional, self.returns, self.impl, self.doc = params, optional, returns, impl, doc
        self.literal, self.compile_static = literal, compile_static


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
    argv = ctx.variant.get("argv")
    if argv is None:
        argv = ctx.launch.get("argv", [])
    flags = ctx.variant.get("flags", {})
    for i, item in enumerate(argv):
        if not isinstance(item, dict):
            continue
        prev = argv[i - 1] if i > 0 else None
        if (isinstance(prev, str) and prev.startswith("-") and "=" not in prev
                and any(isinstance(o, dict) and "unknown" in o for o in flags.get(prev, []))):
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
    vals = [_entry_value(o, a[0]) for o in _occurrences(ctx, "flags", a[0])
            if not (script_only and o.get("source") == "caller")]
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


FUNCTIONS: dict[str, Function] = {
    "env": Function((STR,), (), STR, _f_env,
                    "the value the launched process sees for an environment variable (absent when unset)"),
    "shell": Function((STR,), (), STR, _f_shell,
                      "the value of a shell variable at the launch, exported or not"),
    "in_env": Function((STR,), (), BOOL, _f_in_env,
                       "the launched process has the variable (exported, prefix, caller or cluster)"),
    "exported": Function((STR,), (), BOOL, _f_exported,
                         "the script itself exports the variable to the launch (export or prefix assignment)"),
    "assigned": Function((STR,), (), BOOL, _f_assigned,
                         "the script (or a file it sources) assigns the variable, exported or not"),
    "unexported": Function((STR,), (), BOOL, _f_unexported,
                           "the variable is set in the shell at the launch but not exported"),
    "exported_after": Function((STR,), (), BOOL, _f_exported_after,
                               "the variable is first exported after the launch ran"),
    "later_launch_env": Function((STR,), (), BOOL, _f_later_launch_env,
                                 "a later launch in the script has the variable in its environment"),
    "env_source": Function((STR,), (), STR, _f_source,
                           "where the launch's value comes from: script, caller, prefix or cluster"),
    "has_flag": Function((STR,), (), BOOL, _f_has_flag, "the program is given the flag"),
    "flag": Function((STR,), (), STR, _f_flag,
                     "the flag's effective (last) value; 'true' for a store-true flag; absent when not given"),
    "flag_count": Function((STR,), (), INT, _f_flag_count, "how many times the flag is given"),
    "flag_distinct": Function((STR,), (), INT, _f_flag_distinct,
                              "how many different values the flag is given"),
    "flag_distinct_in_script": Function((STR,), (), INT, _f_flag_distinct_in_script,
                                        "how many different values the script itself gives the flag "
                                        "(not counting the caller's arguments forwarded with \"$@\")"),
    "flag_values": Function((STR,), (), STR, _f_flag_values,
                            "every value the flag is given, in order (for messages)"),
    "has_launcher_flag": Function((STR,), (), BOOL, lambda c, n, a: _f_has_flag(c, n, a, "launcher_flags"),
                                  "the launcher (torchrun, deepspeed, ...) is given the option"),
    "launcher_flag": Function((STR,), (), STR, lambda c, n, a: _f_flag(c, n, a, "launcher_flags"),
                              "the launcher option's effective value"),
    "world_size": Function((), (), INT, _f_world_size, "the number of processes the launcher starts"),
    "launcher": Function((), (), STR, _f_launcher, "the outermost launcher (torchrun, deepspeed, ...)"),
    "program": Function((), (), STR, _f_program, "the training entry point"),
    "int": Function((STR,), (INT,), INT, _f_int,
                    "Python int() of a value; the optional second argument is used when the value is absent"),
    "is_int": Function((STR,), (), BOOL, _f_is_int, "Python int() accepts the value"),
    "matches": Function((STR, STR), (), BOOL, _f_matches, "the value matches the regex (re.search)",
                        literal=(1,), compile_static=_compile_regex),
    "known": Function((STR,), (), BOOL, lambda c, n, a: not isinstance(a[0], Unk),
                      "the value is known (not unknown, invalid or absent); never undecided"),
    "quote": Function((STR,), (), STR, _f_quote, "the value in quotes, or `unset` / `unknown` (for messages)"),
    "bash_rejects": Function((), (), BOOL, _f_bash_rejects,
                             "`bash -n` rejects the script (true when bash is not available)"),
    "diag_code": Function((), (), STR, _f_item("code"), "for_each diagnostics: the diagnostic's code"),
    "diag_message": Function((), (), STR, _f_item("message"), "for_each diagnostics: its message"),
}


# ---------------------------------------------------------------------------------------------- checking


class Scope:
    """What names mean while checking one expression: bound names (for_each, predicate parameters) ->
    type; predicates -> (params, body); constants from [variables] -> (value, type)."""

    def __init__(self, variables: dict | None = None, predicates: dict | None = None,
                 constants: dict | None = None) -> None:
        self.variables: dict[str, str] = {} if variables is None else variables
        self.predicates: dict[str, tuple[list[tuple[str, str]], PredicateBody]] = (
            {} if predicates is None else predicates)
        self.constants: dict[str, tuple[Any, str]] = {} if constants is None else constants


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
                    f"predicate {node.func!r} takes {len(params)} argument(s), got {len(args)}", node.pos)
            if not body.type:
                raise ConditionError(f"predicate {node.func!r} refers to itself", node.pos)
            for (pname, ptype), arg, raw in zip(params, args, node.args):
                if arg.type != ptype:
                    raise ConditionError(
                        f"argument {pname!r} of {node.func!r} must be {ptype}, not {arg.type}", raw.pos)
            return PredicateCall(node.func, [p for p, _ in params], args, body)
        fn = FUNCTIONS.get(node.func)
        if fn is None:
            raise ConditionError(f"unknown function {node.func!r}{_suggest(node.func, scope)}", node.pos)
        n_min, n_max = len(fn.params), len(fn.params) + len(fn.optional)
        if not n_min <= len(args) <= n_max:
            want = str(n_min) if n_min == n_max else f"{n_min} or {n_max}"
            raise ConditionError(f"{node.func}() takes {want} argument(s), got {len(args)}", node.pos)
        for i, (arg, raw) in enumerate(zip(args, node.args)):
            want_t = (fn.params + fn.optional)[i]
            if arg.type != want_t:
                raise ConditionError(f"argument {i + 1} of {node.func}() must be {want_t}, not {arg.type}",
                                     raw.pos)
        static = None
        if fn.literal:
            for i in fn.literal:
                if not isinstance(args[i], Const):
                    raise ConditionError(f"argument {i + 1} of {node.func}() must be a literal",
                                         node.args[i].pos)
            try:
                static = fn.compile_static([a.value if isinstance(a, Const) else None for a in args])
            except re.error as exc:
                raise ConditionError(f"bad regex {args[1].value!r}: {exc}", node.args[1].pos) from None
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
        types = {BOOL if isinstance(i.value, bool) else INT if isinstance(i.value, int) else STR
                 for i in node.items}
        if types != {operand.type}:
            raise ConditionError(f"'in' compares a {operand.type} with a list of {'/'.join(sorted(types))}",
                                 node.pos)
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
                raise ConditionError(f"'{op}' compares a {left.type} with a {right.type}"
                                     + (" (use int(...) to read a number)" if STR in (left.type, right.type)
                                        and INT in (left.type, right.type) else ""), node.pos)
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

    def render(self, ctx: "EvalContext") -> str:
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
                parts.append(check(parse(text[i + 1:end]), scope))
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

    __slots__ = ("model", "launch", "variant", "bindings", "item", "_bash_rejects")

    def __init__(self, model: dict, launch: dict | None, variant: dict | None,
                 bash_rejects: Callable[[], Any] | None = None) -> None:
        self.model = model
        self.launch = launch or {}
        self.variant = variant or {}
        self.bindings: dict[str, Any] = {}
        self.item: dict | None = None
        self._bash_rejects = bash_rejects

    def bash_rejects(self) -> Any:
        return True if self._bash_rejects is None else self._bash_rejects()
