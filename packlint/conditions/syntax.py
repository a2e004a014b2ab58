"""The condition language's syntax: tokenizer and recursive-descent parser into an untyped tree
(grammar in packlint.conditions). Nothing here knows types, names or the launch model."""

from __future__ import annotations

import functools
import re
from typing import Any

# Integer literals in conditions: at most this many digits.
MAX_INT_DIGITS = 30


class ConditionError(Exception):
    """A condition that does not parse or type-check; `pos` is a 0-based offset into the text."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.message = message
        self.pos = pos


# ---------------------------------------------------------------------------------------------- tokens

# compiled on first use: a warm start loads the compiled table and never tokenizes, and compiling
# this pattern at import cost every run about half a millisecond
_TOKEN_PATTERN = r"""
    (?P<ws>\s+)
  | (?P<int>\d+)
  | (?P<str>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>==|!=|<=|>=|[<>()+\-*/%,\[\]])
"""

_KEYWORDS = {"and", "or", "not", "true", "false", "in"}


@functools.cache
def _token_re() -> re.Pattern[str]:
    return re.compile(_TOKEN_PATTERN, re.VERBOSE)


class Token:
    __slots__ = ("kind", "text", "pos", "value")

    def __init__(self, kind: str, text: str, pos: int, value: Any = None) -> None:
        self.kind, self.text, self.pos, self.value = kind, text, pos, value  # kind: int|str|name|op|kw|end


def tokenize(text: str) -> list[Token]:
    token_re = _token_re()
    tokens: list[Token] = []
    pos = 0
    while pos < len(text):
        m = token_re.match(text, pos)
        if m is None:
            ch = text[pos]
            if ch in "'\"":
                raise ConditionError("unterminated string", pos)
            raise ConditionError(f"unexpected character {ch!r}", pos)
        kind = m.lastgroup
        tok = m.group()
        if kind == "int":
            if len(tok) > MAX_INT_DIGITS:  # (int() of 4,300 digits or more raises; no count is that large)
                raise ConditionError(f"integer literal of {len(tok):,} digits: at most {MAX_INT_DIGITS} allowed", pos)
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

    def __init__(self, pos: int, func: str, args: list[Node]) -> None:
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

    def __init__(self, pos: int, operand: Node, items: list[Any]) -> None:
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
