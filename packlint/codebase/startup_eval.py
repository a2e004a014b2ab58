"""Evaluation of a program's startup checks (extracted by startup_checks.py), statically and within a
budget: three-valued, over the launch's known values. A check fires only when it is certainly reached and
its test is certainly false; anything unknown on its way (a value the script does not settle, an
assignment not modelled, a branch not decided, an early return that may have happened) makes it undecided.
Nothing here imports or runs the code it reads.

Bounded by construction (audit R08/R09: `'x' * (args.num_layers * 10**9)` took 3.2 GB, `(n**63)**63`
73 s): the size of every value is predicted before it is computed: a string or tuple of at most
MAX_SEQ_ITEMS, an integer of at most MAX_INT_BITS (Python itself refuses to print one of more than 4,300
digits); a program's evaluation visits at most MAX_EVAL_STEPS expression nodes. Past a bound the value is
unknown, with the reason, and the check it feeds is undecided.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable
from typing import Any

from packlint.codebase.filefacts import _dotted  # (one dotted-name reader for the code base)

MAX_SEQ_ITEMS = 1 << 16  # characters of a string, items of a tuple
MAX_INT_BITS = 14_000  # ~4,200 decimal digits
MAX_EVAL_STEPS = 200_000  # expression nodes visited by one Evaluator (a program: a few thousand)


def _src(node: ast.AST | None) -> str | None:
    if node is None:
        return None
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - odd nodes: unknown
        return None


class _Unknown:
    """A value packlint does not know, with why."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"<unknown: {self.why}>"


def unknown(why: str) -> _Unknown:
    return _Unknown(why)


def is_unknown(v: Any) -> bool:
    return isinstance(v, _Unknown)


_EXPR_MEMO: dict[str, ast.expr | None] = {}


def _parse_expr(text: str | None) -> ast.expr | None:
    if text is None:
        return None
    if text not in _EXPR_MEMO:
        try:
            _EXPR_MEMO[text] = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError, RecursionError):
            _EXPR_MEMO[text] = None
    return _EXPR_MEMO[text]


_SAFE_FUNCS: dict[str, Any] = {
    "int": int,
    "float": float,
    "str": str,
    "bool": bool,
    "len": len,
    "abs": abs,
    "min": min,
    "max": max,
}


_OVER_LIMITS = "a value over packlint's evaluation limits"


def _too_big(what: str) -> _Unknown:
    return unknown(f"{what}: {_OVER_LIMITS} ({MAX_SEQ_ITEMS:,} items, {MAX_INT_BITS:,}-bit integers)")


def _int_bits(x: Any) -> int:
    return abs(x).bit_length() if isinstance(x, int) else 0


def _over_limits(op: str, a: Any, b: Any) -> bool:
    """Whether `a OP b` would be over the value bounds, predicted from the operands' sizes."""
    if op == "Add" and isinstance(a, (str, tuple)) and isinstance(b, (str, tuple)):
        return len(a) + len(b) > MAX_SEQ_ITEMS
    if op == "Mult":
        seq, count = (a, b) if isinstance(a, (str, tuple)) else (b, a)
        if isinstance(seq, (str, tuple)) and isinstance(count, int):
            return count > 0 and len(seq) * count > MAX_SEQ_ITEMS
        return _int_bits(a) + _int_bits(b) > MAX_INT_BITS
    if op == "Pow" and isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
        return _int_bits(a) * b > MAX_INT_BITS
    return False


def _arith(op: str, a: Any, b: Any) -> Any:
    """`a OP b` for the arithmetic operators modelled, or unknown (an operator not modelled, a result over
    the value bounds: checked before computing)."""
    if _over_limits(op, a, b):
        return _too_big(f"{op.lower()} of values this large")
    fn = _ARITH.get(op)
    if fn is None:
        return unknown("operator")
    r = fn(a, b)
    return unknown("operator") if r is None else r


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "Add": lambda x, y: x + y,
    "Sub": lambda x, y: x - y,
    "Mult": lambda x, y: x * y,
    "Div": lambda x, y: x / y,
    "FloorDiv": lambda x, y: x // y,
    "Mod": lambda x, y: x % y if not isinstance(x, str) else None,
    "Pow": lambda x, y: x**y,
}


class Evaluator:
    """Runs the extracted steps over known values. `attrs`: attribute -> value or _Unknown;
    `env`: environment variables the launcher sets (WORLD_SIZE) -> text."""

    def __init__(self, startup: dict, attrs: dict[str, Any], env: dict[str, str], absent: _Unknown) -> None:
        self.startup = startup
        self.attrs = dict(attrs)
        self.env = env
        self.absent = absent  # what an attribute the schema does not define reads as
        self.results: list[dict] = []
        self.locals: dict[str, Any] = {}
        self.steps = 0  # expression nodes visited (MAX_EVAL_STEPS)

    # ---------------------------------------------------------------- expressions

    def attr(self, name: str) -> Any:
        return self.attrs.get(name, self.absent)

    def ev(self, node: ast.AST | None, var: str) -> Any:
        try:
            return self._ev(node, var)
        except (ZeroDivisionError, TypeError, ValueError, OverflowError, AttributeError, KeyError, IndexError):
            return unknown("the expression would raise here")
        except RecursionError:
            return unknown("too deeply nested")
        except MemoryError:  # pragma: no cover - the bounds make it unreachable; never a traceback
            return unknown(_OVER_LIMITS)

    def _ev(self, n: ast.AST | None, var: str) -> Any:
        if n is None:
            return unknown("no expression")
        self.steps += 1
        if self.steps > MAX_EVAL_STEPS:
            return unknown(f"packlint's evaluation budget ({MAX_EVAL_STEPS:,} steps) is spent")
        handler = _HANDLERS.get(type(n))
        if handler is not None:
            return handler(self, n, var)
        if isinstance(n, ast.JoinedStr):
            return unknown("an f-string")
        return unknown(f"{type(n).__name__} is not modelled")

    def _e_constant(self, n: ast.Constant, var: str) -> Any:
        return n.value

    def _e_name(self, n: ast.Name, var: str) -> Any:
        if n.id in self.locals:
            return self.locals[n.id]
        if n.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[n.id]
        return unknown(f"{n.id} is not known")

    def _e_attribute(self, n: ast.Attribute, var: str) -> Any:
        if isinstance(n.value, ast.Name) and n.value.id == var and var not in self.locals:
            return self.attr(n.attr)
        return unknown(f"{_src(n)} is not known")

    def _e_boolop(self, n: ast.BoolOp, var: str) -> Any:
        is_and = isinstance(n.op, ast.And)
        pending = None
        last: Any = None
        for sub in n.values:
            v = self._ev(sub, var)
            if is_unknown(v):
                pending = pending or v
                continue
            if is_and and not v:
                return v
            if not is_and and v:
                return v if pending is None else pending
            last = v
        return pending if pending is not None else last

    def _e_unaryop(self, n: ast.UnaryOp, var: str) -> Any:
        v = self._ev(n.operand, var)
        if is_unknown(v):
            return v
        if isinstance(n.op, ast.Not):
            return not v
        if isinstance(n.op, ast.USub):
            return -v
        if isinstance(n.op, ast.UAdd):
            return +v
        return unknown("operator")

    def _e_binop(self, n: ast.BinOp, var: str) -> Any:
        a, b = self._ev(n.left, var), self._ev(n.right, var)
        if is_unknown(a):
            return a
        if is_unknown(b):
            return b
        if not all(isinstance(x, (int, float, str, tuple)) for x in (a, b)):
            return unknown("operands")
        return _arith(type(n.op).__name__, a, b)

    def _e_compare(self, n: ast.Compare, var: str) -> Any:
        left = self._ev(n.left, var)
        result: Any = True
        for cmp_op, comp in zip(n.ops, n.comparators, strict=False):
            right = self._ev(comp, var)
            if is_unknown(left) or is_unknown(right):
                result = left if is_unknown(left) else right
                left = right
                continue
            ok = _compare(cmp_op, left, right)
            if is_unknown(ok):
                return ok
            if not ok:
                return False
            left = right
        return result

    def _e_ifexp(self, n: ast.IfExp, var: str) -> Any:
        t = self._ev(n.test, var)
        if is_unknown(t):
            return t
        return self._ev(n.body if t else n.orelse, var)

    def _e_collection(self, n: ast.Tuple | ast.List | ast.Set, var: str) -> Any:
        items = [self._ev(e, var) for e in n.elts]
        bad = next((i for i in items if is_unknown(i)), None)
        if bad is not None:
            return bad
        return tuple(items) if not isinstance(n, ast.Set) else frozenset(items)

    def _e_dict(self, n: ast.Dict, var: str) -> Any:
        keys = [self._ev(k, var) if k is not None else unknown("**") for k in n.keys]
        vals = [self._ev(v, var) for v in n.values]
        bad = next((i for i in keys + vals if is_unknown(i)), None)
        return bad if bad is not None else dict(zip(keys, vals, strict=False))

    def _e_subscript(self, n: ast.Subscript, var: str) -> Any:
        obj = self._ev(n.value, var)
        idx = self._ev(n.slice, var)
        if is_unknown(obj):
            return obj
        if is_unknown(idx):
            return idx
        if isinstance(obj, (tuple, list, dict, str)):
            return obj[idx]
        return unknown("subscript")

    def _call(self, n: ast.Call, var: str) -> Any:
        fn = _dotted(n.func)
        if n.keywords and fn not in ("os.getenv", "os.environ.get", "getattr"):
            return unknown(f"{fn}() is not modelled")
        if fn == "getattr" and len(n.args) >= 2 and isinstance(n.args[0], ast.Name) and n.args[0].id == var:
            name = self._ev(n.args[1], var)
            if isinstance(name, str):
                v = self.attrs.get(name)
                if v is not None or name in self.attrs:
                    return v
                return unknown(f"args.{name} is not known")
            return unknown("getattr")
        if fn in ("os.getenv", "os.environ.get", "getenv", "environ.get") and n.args:
            name = self._ev(n.args[0], var)
            if isinstance(name, str) and name in self.env:
                return self.env[name]
            return unknown(f"the environment variable {name} is not known here")
        if isinstance(n.func, ast.Attribute) and n.func.attr == "get" and n.args:
            obj = self._ev(n.func.value, var)
            if isinstance(obj, dict):
                key = self._ev(n.args[0], var)
                if is_unknown(key):
                    return key
                dflt = self._ev(n.args[1], var) if len(n.args) > 1 else None
                return obj.get(key, dflt)
            return unknown(f"{fn}() is not modelled")
        if fn in _SAFE_FUNCS:
            args = [self._ev(a, var) for a in n.args]
            bad = next((a for a in args if is_unknown(a)), None)
            if bad is not None:
                return bad
            if fn in ("int", "float") and args and not isinstance(args[0], (int, float, str, bool)):
                return unknown(f"{fn}() of {args[0]!r}")
            return _SAFE_FUNCS[fn](*args)
        return unknown(f"{fn or 'a call'}() is not modelled")

    # ---------------------------------------------------------------- statements

    def run(self) -> list[dict]:
        data = self.startup
        params_defaults = data.get("program_defaults")
        self._defaults_value = params_defaults if isinstance(params_defaults, dict) else unknown("args_defaults")
        state = {"certain": True, "var": "args", "stopped": False}
        # the caller's parameters: the defaults dict is what the program passes (pretrain(...,
        # args_defaults={...}) reaches parse_and_validate_args / initialize_megatron unchanged)
        caller = data.get("caller") or {}
        pdefaults = caller.get("param_defaults") or {}
        passed = data.get("program_kwargs") or {}
        for name in caller.get("params") or []:
            if name in ("args_defaults", "defaults"):
                self.locals[name] = self._defaults_value
                continue
            # a parameter the program never names keeps its default on the way down (pretrain ->
            # initialize_megatron pass their own parameters of the same names)
            lit = passed.get(name, (caller.get("param_passed") or {}).get(name, pdefaults.get(name)))
            if isinstance(lit, dict) and "value" in lit:
                self.locals[name] = _freeze_json(lit["value"])
            else:
                self.locals[name] = unknown(f"the parameter {name} of {caller.get('name')}")
        self.exec(data.get("prelude", []), state, True)
        return self.results

    def exec(self, steps: list, state: dict, certain: bool, var: str | None = None, guards: tuple = ()) -> None:
        """Run steps; `certain`: every step here surely runs (no undecided branch or early return above)."""
        data = self.startup
        for s in steps:
            if state["stopped"] or state.get("returned"):
                return
            kind = s[0]
            if kind == "var":
                state["var"] = s[1]
                continue
            cur = var or state["var"]
            if kind == "inline":
                saved_locals = self.locals
                self.locals = {}
                dp = data.get("defaults_param")
                if dp:
                    self.locals[dp] = self._defaults_value
                vparam = (data.get("validate") or {}).get("param") or "args"
                self.exec(data.get("body", []), state, certain and not state.get("maybe_returned"), vparam, guards)
                self.locals = saved_locals
                state["maybe_returned"] = False
                state["returned"] = False
                continue
            if kind == "assert":
                self.check(s, self.ev(_parse_expr(s[3]), cur), certain and not state.get("maybe_returned"), cur, guards)
            elif kind == "raise":
                self.check(s, False, certain and not state.get("maybe_returned"), cur, guards)
                if certain and not state.get("maybe_returned"):
                    state["stopped"] = True
                    return
            elif kind == "set":
                v = self.ev(_parse_expr(s[4]), cur)
                if is_unknown(v):
                    v = unknown(
                        f"args.{s[3]} is set at {_short(s[1])}:{s[2]} from {s[4]}, "
                        f"which packlint cannot evaluate ({v.why})"
                    )
                if not certain or state.get("maybe_returned"):
                    v = unknown(f"args.{s[3]} may be set at {_short(s[1])}:{s[2]}")
                self.attrs[s[3]] = v
            elif kind == "local":
                v = self.ev(_parse_expr(s[4]), cur)
                if not certain or state.get("maybe_returned"):
                    v = unknown(f"{s[3]} may be set at {_short(s[1])}:{s[2]}")
                self.locals[s[3]] = v
            elif kind == "havoc":
                why = f"{s[4]} at {_short(s[1])}:{s[2]}"
                if s[3] == "*":
                    self.attrs = {k: unknown(why) for k in self.attrs}
                    self.absent = unknown(why)
                else:
                    for a in s[3]:
                        self.attrs[a] = unknown(why)
            elif kind == "lhavoc":
                for name in s[3]:
                    self.locals[name] = unknown(f"{name} at {_short(s[1])}:{s[2]}")
            elif kind == "return":
                if certain and not state.get("maybe_returned"):
                    state["returned"] = True
                    return
                state["maybe_returned"] = True
            elif kind == "if":
                t = self.ev(_parse_expr(s[3]), cur)
                g_then, g_else = guards + (s[3],), guards + (f"not ({s[3]})",)
                if is_unknown(t):
                    self.exec(s[4], state, False, var, g_then)
                    self.exec(s[5], state, False, var, g_else)
                elif t:
                    self.exec(s[4], state, certain, var, g_then)
                else:
                    self.exec(s[5], state, certain, var, g_else)
            elif kind == "opaque":
                if len(s) > 4 and s[4]:
                    it = self.ev(_parse_expr(s[4]), cur)
                    if isinstance(it, (tuple, list, dict, str, frozenset)) and len(it) == 0:
                        continue  # a loop over nothing
                self.exec(s[3], state, False, var, guards + ("a loop or try block",))

    def check(self, s: list, value: Any, certain: bool, var: str, guards: tuple = ()) -> None:
        kind = s[0]
        file, line = s[1], s[2]
        test = s[3] if kind == "assert" else None
        msg_src = s[4] if kind == "assert" else s[3]
        entry: dict = {
            "kind": kind,
            "file": file,
            "line": line,
            "test": test,
            "message_source": msg_src,
            "guards": list(guards),
        }
        if not certain:
            entry["status"] = "undecided"
            entry["why"] = "it may not be reached (a branch or an early return packlint cannot decide)"
        elif is_unknown(value):
            entry["status"] = "undecided"
            entry["why"] = value.why
        elif value:
            entry["status"] = "passes"
        else:
            entry["status"] = "fails"
            entry["message"] = self.render(msg_src, var)
            read_from = test if test else (guards[-1] if guards else None)
            entry["values"] = self.values_read(read_from, var) if read_from else {}
        self.results.append(entry)

    def render(self, msg_src: str | None, var: str) -> str | None:
        node = _parse_expr(msg_src)
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return str(node.value)
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(str(v.value))
                elif isinstance(v, ast.FormattedValue):
                    x = self.ev(v.value, var)
                    text = _src(v.value) or "?"
                    out.append(f"{{{text}}}" if is_unknown(x) else str(x))
            return "".join(out)
        v = self.ev(node, var)
        return str(v) if isinstance(v, str) else msg_src

    def values_read(self, test: str, var: str) -> dict:
        node = _parse_expr(test)
        out: dict = {}
        if node is None:
            return out
        for sub in ast.walk(node):
            if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) and sub.value.id == var:
                v = self.attr(sub.attr)
                if not is_unknown(v):
                    out[f"args.{sub.attr}"] = v
            elif isinstance(sub, ast.Name) and sub.id in self.locals and not is_unknown(self.locals[sub.id]):
                v = self.locals[sub.id]
                if isinstance(v, (int, float, str, bool)) or v is None:
                    out[sub.id] = v
        return out


def _freeze_json(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_freeze_json(x) for x in v)
    if isinstance(v, dict):
        return {k: _freeze_json(x) for k, x in v.items()}
    return v


def _compare(op: ast.cmpop, a: Any, b: Any) -> Any:
    try:
        if isinstance(op, ast.Eq):
            return a == b
        if isinstance(op, ast.NotEq):
            return a != b
        if isinstance(op, ast.Is):
            if b is None or a is None or isinstance(a, bool) or isinstance(b, bool):
                return a is b
            return unknown("identity")
        if isinstance(op, ast.IsNot):
            if b is None or a is None or isinstance(a, bool) or isinstance(b, bool):
                return a is not b
            return unknown("identity")
        if isinstance(op, ast.Lt):
            return a < b
        if isinstance(op, ast.LtE):
            return a <= b
        if isinstance(op, ast.Gt):
            return a > b
        if isinstance(op, ast.GtE):
            return a >= b
        if isinstance(op, ast.In):
            return a in b
        if isinstance(op, ast.NotIn):
            return a not in b
    except TypeError:
        return unknown("the comparison would raise here")
    return unknown("comparison")


_SHORT_MEMO: dict[str, str] = {}


def _short(path: str) -> str:
    """A path as a reader finds it: relative to the working directory when under it (memoised)."""
    hit = _SHORT_MEMO.get(path)
    if hit is None:
        try:
            rel = os.path.relpath(path)
        except ValueError:
            rel = path
        hit = _SHORT_MEMO[path] = path if rel.startswith("../..") else rel
    return hit


_HANDLERS: dict[type, Callable[[Evaluator, Any, str], Any]] = {
    ast.Constant: Evaluator._e_constant,
    ast.Name: Evaluator._e_name,
    ast.Attribute: Evaluator._e_attribute,
    ast.BoolOp: Evaluator._e_boolop,
    ast.UnaryOp: Evaluator._e_unaryop,
    ast.BinOp: Evaluator._e_binop,
    ast.Compare: Evaluator._e_compare,
    ast.IfExp: Evaluator._e_ifexp,
    ast.Tuple: Evaluator._e_collection,
    ast.List: Evaluator._e_collection,
    ast.Set: Evaluator._e_collection,
    ast.Dict: Evaluator._e_dict,
    ast.Subscript: Evaluator._e_subscript,
    ast.Call: Evaluator._call,
}
