"""The engine's first look at a rule (packlint.conditions.settle): what the launch model alone settles is the
condition's value, the costly parts are not read for a rule it settles, and the findings do not change."""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from packlint import engine
from packlint.conditions.settle import OPAQUE, costly, settle
from packlint.conditions.tree import (
    BOOL,
    FUNCTIONS,
    And,
    BinOp,
    Builtin,
    Const,
    EvalContext,
    Function,
    Not,
    Or,
    PredicateBody,
    PredicateCall,
    Unk,
)

# a costly leaf: a built-in outside the launch-model families; its values come from the test's table
_VALUES: dict[int, object] = {}
_CALLS = [0]


def _t_costly(ctx: EvalContext, node: Builtin, a: list) -> object:
    _CALLS[0] += 1
    return _VALUES[a[0]]


@contextlib.contextmanager
def _costly_leaf():
    """The test's built-in, in the registry only while a test uses it (the docs' test lists every built-in), and
    counted among those that read the launched code."""
    from packlint.conditions import settle as settle_mod

    readers = settle_mod._code_readers()
    FUNCTIONS["t_costly_leaf"] = Function(("int",), (), BOOL, _t_costly, "a test's costly leaf")
    settle_mod._CODE_READERS = readers | {"t_costly_leaf"}
    try:
        yield
    finally:
        del FUNCTIONS["t_costly_leaf"]
        settle_mod._CODE_READERS = readers


_KLEENE = st.sampled_from([True, False, "unk"])
_names = itertools.count()


def _value(v: object) -> object:
    return Unk("not known in this test", "unknown") if v == "unk" else v


@st.composite
def _exprs(draw, depth: int = 0):
    kind = draw(st.sampled_from(["cheap", "costly", "and", "or", "not", "pred", "cmp"] if depth < 5 else ["cheap"]))
    if kind == "cheap":
        return Const(_value(draw(_KLEENE)), BOOL)
    if kind == "costly":
        i = len(_VALUES)
        _VALUES[i] = _value(draw(_KLEENE))
        return Builtin("t_costly_leaf", [Const(i, "int")], BOOL)
    if kind in ("and", "or"):
        node = And if kind == "and" else Or
        return node(draw(_exprs(depth + 1)), draw(_exprs(depth + 1)))
    if kind == "not":
        return Not(draw(_exprs(depth + 1)))
    if kind == "cmp":  # (not monotone in an undecided side: settle must not look through it)
        return BinOp("==", draw(_exprs(depth + 1)), Const(True, BOOL), BOOL)
    body = PredicateBody()
    body.expr, body.type = draw(_exprs(depth + 1)), BOOL
    return PredicateCall(f"p{next(_names)}", [], [], body)


def _same(a: object, b: object) -> bool:
    if isinstance(a, Unk) or isinstance(b, Unk):
        return isinstance(a, Unk) and isinstance(b, Unk) and (a.kind, a.reason) == (b.kind, b.reason)
    return a is b or a == b


@settings(max_examples=400, deadline=None)
@given(_exprs())
def test_a_settled_value_is_the_value_and_reads_nothing_costly(expr) -> None:
    ctx = EvalContext({}, {}, {})
    _CALLS[0] = 0
    with _costly_leaf():
        settled = settle(expr, ctx)
        assert _CALLS[0] == 0  # (no costly part was read)
        if not costly(expr):
            assert settled is not OPAQUE
        full = expr.eval(EvalContext({}, {}, {}))
    assert settled is OPAQUE or _same(settled, full)


def test_opaque_only_where_a_costly_part_could_change_the_value() -> None:
    i = len(_VALUES)
    _VALUES[i] = True
    leaf = Builtin("t_costly_leaf", [Const(i, "int")], BOOL)
    ctx = EvalContext({}, {}, {})
    with _costly_leaf():
        assert settle(And(leaf, Const(False, BOOL)), ctx) is False
        assert settle(Or(Const(True, BOOL), leaf), ctx) is True
        assert settle(Not(And(Const(False, BOOL), leaf)), ctx) is True
        assert settle(And(leaf, Const(True, BOOL)), ctx) is OPAQUE
        assert settle(BinOp("==", And(leaf, Const(False, BOOL)), Const(False, BOOL), BOOL), ctx) is OPAQUE


def _checks(tmp_path: Path, script: str) -> tuple[list, int]:
    """The findings of a Megatron-style launch whose program's code is at hand, and how often the code's
    environment reads were searched (codebase_env._read_reads: an import closure, a grep of the code base)."""
    from packlint.api import inspect_script
    from packlint.conditions.functions import codebase_env
    from packlint.engine import check_model
    from packlint.rule_table import load_table

    (tmp_path / "pretrain_gpt.py").write_text(
        "import os\nimport argparse\np = argparse.ArgumentParser()\np.add_argument('--micro-batch-size', type=int)\n"
        "p.parse_args()\nos.environ.get('OFFLINE_PACKED_DATA')\n"
    )
    path = tmp_path / "run.sh"
    path.write_text(script)
    calls = [0]
    real = codebase_env._read_reads

    def counted(ctx, name):
        calls[0] += 1
        return real(ctx, name)

    codebase_env._read_reads = counted
    try:
        from packlint.codebase import CodeSession
        from packlint.codebase.options import CodeOptions

        model = inspect_script(str(path))
        session = CodeSession(str(path), CodeOptions(use_cache=False))
        findings = check_model(model, load_table().rules, code=session.facts)
    finally:
        codebase_env._read_reads = real
    return [f.to_json() for f in findings], calls[0]


def _as_before(monkeypatch) -> None:
    """The engine without the launch model's first look: every term in the rule's order, every head shared."""
    monkeypatch.setattr(engine, "_costly", lambda rule: False)
    monkeypatch.setattr(engine, "_costly_head", lambda rule: False)
    monkeypatch.setattr(engine, "_plan", lambda rule: None if (t := engine._conjuncts(rule)) is None else (t, ()))


def test_a_launch_without_the_gates_does_not_search_the_code_for_them(tmp_path: Path, monkeypatch) -> None:
    plain = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 2\n"
    found, searched = _checks(tmp_path, plain)
    assert searched == 0  # (PK001/PK002: no gate is set, so whether the code reads one decides nothing)
    _as_before(monkeypatch)
    before, searched_before = _checks(tmp_path, plain)
    assert searched_before > 0 and found == before


def test_a_launch_with_a_gate_still_reads_the_code(tmp_path: Path, monkeypatch) -> None:
    gated = (
        "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 2\n"
    )
    found, searched = _checks(tmp_path, gated)
    assert searched > 0
    _as_before(monkeypatch)
    before, _ = _checks(tmp_path, gated)
    assert found == before and any(f["code"] == "PK001" for f in found)


def test_the_classification_memo_is_bounded(monkeypatch) -> None:
    """A long-lived process (the editor server) may load table after table: the nodes classified are kept up to a
    bound, then forgotten and classified again, with the same answers."""
    from packlint.conditions import settle as settle_mod

    monkeypatch.setattr(settle_mod, "MAX_KEPT", 8)
    monkeypatch.setattr(settle_mod, "_COSTLY", {})
    monkeypatch.setattr(settle_mod, "_KEEP", [])
    leaf = Builtin("t_costly_leaf", [Const(0, "int")], BOOL)
    trees = [And(Const(True, BOOL), leaf if k % 2 else Const(False, BOOL)) for k in range(20)]
    with _costly_leaf():
        assert [costly(t) for t in trees] == [bool(k % 2) for k in range(20)]
    assert len(settle_mod._KEEP) <= 8
