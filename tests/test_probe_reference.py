"""The HF probe against an independent float64 reference (tests/oracle/probe_reference.py, no code
shared with runtime_probe), cell by cell: model x collator mode x attention x use_cache x dtype x seed.
A fast subset here (26 cells); PACKLINT_PROBE_MATRIX=1 runs the whole matrix of
benchmarks/probe_reference_matrix.py (402 cells, about 2-3 minutes on 2 cores)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from oracle.probe_cells import run_cells  # noqa: E402
from oracle.probe_reference import MODELS, MODES  # noqa: E402

FAST = [
    ("llama", MODES, "sdpa", "bfloat16", 0),
    ("falcon_h1@0.002", ("position_ids",), "sdpa", "bfloat16", 0),
    ("qwen3_next@0.002", ("position_ids",), "eager", "float32", 1),
    ("jamba@0.02", ("position_ids",), "sdpa", "bfloat16", 2),
    ("lfm2-conv", ("position_ids", "block4d"), "sdpa", "float32", 0),
    ("qwen2_moe", ("position_ids", "position_ids+mask"), "eager", "bfloat16", 0),
    ("qwen2_5_vl", ("position_ids",), "sdpa", "bfloat16", 0),
    ("mistral-window4", ("block4d",), "sdpa", "float32", 0),
]


def _assert_agree(cells):
    bad = [c for c in cells if not c.agrees]
    assert not [c for c in cells if c.unsafe], bad
    assert not bad, [(c.model, c.mode, c.attn, c.use_cache, c.dtype, c.probe, c.reference) for c in bad]


@pytest.mark.parametrize("case", FAST, ids=lambda c: f"{c[0]}-{c[2]}-{c[3]}-{len(c[1])}modes")
def test_probe_agrees_with_the_float64_reference(case):
    cells = run_cells(*case)
    assert len(cells) == 2 * len(case[1])
    _assert_agree(cells)


def test_fast_subset_covers_every_kind_of_cell():
    """dense, hybrid at a small init scale, conv, MoE, a multimodal wrapper; eager and sdpa; both
    dtypes the probe reruns from; and every reference verdict."""
    kinds = {MODELS[c[0]].model_type for c in FAST}
    assert {"llama", "falcon_h1", "qwen3_next", "lfm2", "qwen2_moe", "qwen2_5_vl"} <= kinds
    assert {c[2] for c in FAST} == {"eager", "sdpa"} and {c[3] for c in FAST} == {"bfloat16", "float32"}
    assert 2 * sum(len(c[1]) for c in FAST) == 26


@pytest.mark.skipif(os.environ.get("PACKLINT_PROBE_MATRIX") != "1", reason="the whole matrix: PACKLINT_PROBE_MATRIX=1")
def test_whole_matrix():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from probe_reference_matrix import plan

    cells = [c for args in plan(list(MODELS), ["eager", "sdpa"]) for c in run_cells(*args)]
    assert len(cells) >= 60
    _assert_agree(cells)
