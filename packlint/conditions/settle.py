"""What the cheap parts of a condition settle, before anything costly is read (the engine's first look at a rule).

Most rules are false for most launches, and a rule is often false for a reason the launch model alone shows
(`gate_on('OFFLINE_PACKING_BMR')` unset) while another of its terms reads the launched code (`code_reads(...)`:
the program's import closure, a grep of the code base). `settle` evaluates a condition with every costly part
taken as *not known yet* (OPAQUE): a call of a built-in of the families that read the launched code (COSTLY: the
program's closure, its parser, its calls, its startup checks), and anything built on one, except through `and`, `or`
and `not`. The launch model, the stack and its config files are cheap here: what they read is kept per variant and
shared by the rules (a stack's rules share their first term, `lf`, `trl`: one evaluation settles them all).
Three-valued logic is monotone through `and`, `or` and `not` (a false side of an `and` makes it false whatever the
other side is, a true side of an `or` true), so a value `settle` finds is the condition's value, and the engine
skips a rule it settles as not firing without reading what the costly part would have read. Where the cheap parts
decide nothing, it says OPAQUE and the rule is evaluated as before.

Cheap parts are evaluated as the engine evaluates them (their memos and the premises they keep are the same);
premises read while settling are dropped (a settled rule reports nothing). A predicate with a costly body keeps
what it settles under a key of its own, never as its value (with a part taken as unknown it is not its value)."""

from __future__ import annotations

from typing import Any

from packlint.conditions.tree import (
    BinOp,
    Builtin,
    EvalContext,
    Expr,
    In,
    Neg,
    Not,
    PredicateCall,
    Unk,
    _Logical,
    _pick,
)

OPAQUE: Any = object()  # (a value not known without the costly part: distinct from the language's Unk)
_UNSET: Any = object()

# the built-in families that read the launched code (packlint.conditions.functions); every other is cheap here
_COSTLY_FAMILIES = (
    "CODEBASE_FUNCTIONS",
    "HF_CODE_FUNCTIONS",
    "STACK_CODE_FUNCTIONS",
    "STARTUP_FUNCTIONS",
    "PATCH_FUNCTIONS",
    "REQUIRED_FLAG_FUNCTIONS",
)
_CODE_READERS: frozenset[str] | None = None
_COSTLY: dict[int, bool] = {}  # id(expr) -> whether it has a costly part (the table's trees live for the process)
_KEEP: list[Expr] = []  # (the trees classified: kept alive, so an id is never reused for another)
MAX_KEPT = 200_000  # nodes classified before both are emptied (a long-lived process loading table after table)


def _code_readers() -> frozenset[str]:
    global _CODE_READERS
    if _CODE_READERS is None:
        from packlint.conditions import functions

        _CODE_READERS = frozenset(name for family in _COSTLY_FAMILIES for name in getattr(functions, family))
    return _CODE_READERS


def costly(expr: Expr) -> bool:
    """Whether the expression calls a built-in that reads the launched code (through any predicate it calls)."""
    key = id(expr)
    found = _COSTLY.get(key)
    if found is None:
        if len(_KEEP) >= MAX_KEPT:
            _COSTLY.clear()
            _KEEP.clear()
        _COSTLY[key] = False  # (a recursive predicate: its own call adds nothing while it is classified)
        found = _COSTLY[key] = _classify(expr)
        _KEEP.append(expr)
    return found


def _classify(expr: Expr) -> bool:
    if isinstance(expr, Builtin):
        return expr.func in _code_readers() or any(costly(a) for a in expr.args)
    if isinstance(expr, PredicateCall):
        return any(costly(a) for a in expr.args) or costly(expr.body.expr)
    if isinstance(expr, _Logical | BinOp):
        return costly(expr.left) or costly(expr.right)
    if isinstance(expr, Not | Neg | In):
        return costly(expr.operand)
    return False  # Const, Var


def settle(expr: Expr, ctx: EvalContext) -> Any:
    """The expression's value where its cheap parts decide it, else OPAQUE (premises go to ctx.premises as in
    an evaluation; the caller drops them)."""
    if not costly(expr):
        try:
            return expr.eval(ctx)
        except RecursionError:  # pragma: no cover - a pathological table
            return OPAQUE
    if isinstance(expr, _Logical):
        decisive = expr.decisive
        a = settle(expr.left, ctx)
        if a is decisive:
            return a
        b = settle(expr.right, ctx)
        if b is decisive:
            return b
        if a is OPAQUE or b is OPAQUE:
            return OPAQUE
        if a is (not decisive) and b is (not decisive):
            return a
        return _pick(a, b)
    if isinstance(expr, Not):
        v = settle(expr.operand, ctx)
        return v if v is OPAQUE or isinstance(v, Unk) else not v
    if isinstance(expr, PredicateCall) and ctx.item is None:
        if not expr.params:
            memo = ctx.memo
            key = ("predicate", expr.name)
            if key in memo:  # (computed in full by an earlier rule: its value)
                return memo[key]
            settled = ("settled", expr.name)  # (what its cheap parts settle: the same for every rule of the variant)
            found = memo.get(settled, _UNSET)
            if found is _UNSET:
                found = memo[settled] = settle(expr.body.expr, ctx)
            return found
        values = [settle(a, ctx) for a in expr.args]
        if any(v is OPAQUE for v in values):
            return OPAQUE  # (the body would read it where it is not settled: a built-in's argument)
        saved = ctx.bindings
        ctx.bindings = {**saved, **dict(zip(expr.params, values, strict=True))}
        try:
            return settle(expr.body.expr, ctx)
        finally:
            ctx.bindings = saved
    return OPAQUE  # a costly call, or an operation on one (comparisons, arithmetic, `in`: not monotone in it)


__all__ = ["OPAQUE", "costly", "settle"]
