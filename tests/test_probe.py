"""The runtime probe on CPU: each configuration of the gates, each way cu_seqlens can be wrong, each
backend that runs here. Small rows (tens of tokens, 2 heads) keep the file fast; GPU kernels are
marked `cuda` and skipped without CUDA."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings as hsettings, strategies as st  # noqa: E402

from runtime_probe import ProbeSettings, ProbeUsageError, run_probe  # noqa: E402
from runtime_probe.backends import (  # noqa: E402
    ATEN_FLASH_EXPECTED, BackendUnavailable, aten_flash_schema, block_causal_mask, make_backend)
from runtime_probe.probe import NoBackend  # noqa: E402
from runtime_probe.settings import default_lengths  # noqa: E402

LENGTHS = [16, 24, 9, 31]          # uneven on purpose; 80 tokens
HAS_CUDA = torch.cuda.is_available()


def probe(**kw) -> "runtime_probe.ProbeReport":  # noqa: F821
    base = dict(bmr="1", packed_data="1", mbs=1, lengths=list(LENGTHS), heads=2, head_dim=8, device="cpu")
    base.update(kw)
    return run_probe(ProbeSettings(**base))


def check(report, name_part: str):
    found = [c for c in report.checks if name_part in c.name]
    assert found, f"no check named like {name_part!r}: {[c.name for c in report.checks]}"
    return found[0]


def failed_names(report) -> list[str]:
    return [c.name for c in report.checks if c.status == "fail"]


# ------------------------------------------------------------------------------ the gates

def test_correct_configuration_is_proven_with_leakage_exactly_zero():
    r = probe()
    assert r.ok and r.verdict == "proven" and r.exit_code == 0, r.render_text()
    assert r.leakage["abs"] == 0.0 and r.leakage["rel"] == 0.0
    assert len(r.leakage["per_perturbed"]) == len(LENGTHS) - 1  # every sub-sample but the last
    assert r.cu_seqlens == [0, 16, 40, 49, 80] and r.max_seqlen == 31
    assert r.shapes["cu_lengths"] == [1, 5]
    assert check(r, "(i)").value["max_error"] <= check(r, "(i)").value["tolerance"]
    assert check(r, "second opinion").status == "pass"
    assert r.work["packed"] == sum(n * n for n in LENGTHS) and r.work["unpacked"] == 80 * 80


def test_bmr_on_packed_data_off_leaks():
    r = probe(packed_data="0")
    assert not r.ok and r.exit_code == 1 and r.verdict == "failed"
    assert r.plain_causal and r.cu_seqlens is None and r.shapes["cu_lengths"] == [1, 1]
    assert r.leakage["abs"] > 0.01 and r.leakage["rel"] > 0.01
    assert {"gate 2: batch", "(i) packed == each sub-sample alone", "(ii) leakage"} <= set(failed_names(r))
    # perturbing sub-sample 0 must move a later sub-sample (causal leak goes forward)
    first = r.leakage["per_perturbed"][0]
    assert first["perturbed"] == 0 and first["worst_subsample"] > 0


def test_packed_data_unset_counts_as_closed():
    r = probe(packed_data=None)
    assert r.leakage["abs"] > 0 and "gate 2: batch" in failed_names(r)


def test_packed_data_on_bmr_off_is_reported_as_dropped_samples():
    r = probe(bmr="0", packed_data="1")
    assert r.exit_code == 1
    c = check(r, "gate 1")
    assert c.status == "fail" and "dropped" in c.detail and "legacy captioning" in c.detail
    assert check(r, "forward").status == "skip"
    assert r.leakage is None and r.cu_seqlens is None  # no invented tensors


def test_mbs_two_reports_the_assert_not_a_traceback():
    r = probe(mbs=2)
    c = check(r, "MBS assert")
    assert c.status == "fail" and "micro-batch-size must be 1 for packing" in c.detail
    assert r.shapes["cu_lengths"] == [2, 5] and r.exit_code == 1
    assert check(r, "forward").status == "skip"


def test_mbs_two_with_closed_gate_is_no_assert_but_a_leak():
    r = probe(mbs=2, packed_data="0")
    assert "consumer: MBS assert" not in failed_names(r)
    assert r.leakage["abs"] > 0


def test_packing_sft_data_forces_mbs_to_one():
    r = probe(mbs=4, bmr=None, packed_data=None, packing_flag="--packing-sft-data")
    assert r.ok and r.verdict == "proven", r.render_text()
    assert any("forces --micro-batch-size to 1" in n for n in r.notes)


def test_packing_pretrain_data_keeps_mbs_and_asserts():
    r = probe(mbs=2, bmr=None, packed_data=None, packing_flag="--packing-pretrain-data")
    assert "consumer: MBS assert" in failed_names(r)


def test_online_packing_opens_gate_two_without_packed_data():
    r = probe(packed_data="0", packing_flag="--packing-pretrain-data")
    assert r.ok and r.leakage["abs"] == 0.0
    assert r.gates["OFFLINE_PACKED_DATA"]["read"] is False  # `is_packing_enabled or ...` short-circuits


def test_nothing_packed_is_not_a_failure():
    r = probe(bmr="0", packed_data="0")
    assert r.verdict == "not-packed" and r.ok and r.exit_code == 0 and r.leakage is None


@pytest.mark.parametrize("raw,on", [("1", True), (" 1 ", True), ("01", True),
                                    ("2", False), ("0", False)])
def test_gate_values_follow_python_int(raw, on):
    r = probe(packed_data=raw)
    assert r.gates["OFFLINE_PACKED_DATA"]["on"] is on
    assert (r.leakage["abs"] == 0.0) is on


@pytest.mark.parametrize("gate", ["bmr", "packed_data"])
def test_non_integer_gate_crashes_the_run(gate):
    r = probe(**{gate: "yes"})
    assert r.exit_code == 1
    assert any("ValueError" in c.detail for c in r.checks if c.status == "fail")


# ------------------------------------------------------------------------------ wrong cu_seqlens

def test_cu_seqlens_ending_short_fails_the_static_check():
    r = probe(cu_seqlens=[0, 16, 40, 49, 70])
    c = check(r, "ends at the row length")
    assert c.status == "fail" and "70 < 80" in c.detail and "uninitialised" in c.detail
    assert check(r, "forward").status == "skip" and r.exit_code == 1


def test_cu_seqlens_ending_long_fails_the_static_check():
    r = probe(cu_seqlens=[0, 16, 40, 49, 96])
    c = check(r, "ends at the row length")
    assert c.status == "fail" and "past" in c.detail
    assert check(r, "forward").status == "skip"


def test_misaligned_cu_seqlens_fail_check_i_with_a_number():
    r = probe(cu_seqlens=[0, 18, 40, 47, 80])  # same total, two boundaries shifted
    assert check(r, "ends at the row length").status == "pass"
    c = check(r, "(i)")
    assert c.status == "fail" and c.value["max_error"] > 10 * c.value["tolerance"]
    assert r.leakage["abs"] > 0


@pytest.mark.parametrize("cu,what", [([1, 16, 40, 49, 80], "starts at 0"), ([0, 16, 16, 49, 80], "strictly increasing"),
                                     ([0, 40, 16, 49, 80], "strictly increasing")])
def test_malformed_cu_seqlens_fail_the_static_check(cu, what):
    r = probe(cu_seqlens=cu)
    assert check(r, what).status == "fail"


def test_uniform_boundaries_over_uneven_samples_are_caught():
    """The Megatron-Bridge failure: [0, T, 2T, ...] that look packed but ignore the real lengths."""
    r = probe(lengths=[10, 30, 20, 20], cu_seqlens=[0, 20, 40, 60, 80])
    assert check(r, "(i)").status == "fail" and r.leakage["abs"] > 0


# ------------------------------------------------------------------------------ sequence parallel

def test_sequence_parallel_padding_keeps_leakage_zero():
    r = probe(sequence_parallel=True, tp=4, lengths=[16, 24, 9, 30])  # 79 tokens -> pad 1
    assert r.padding == 1 and r.tokens == 80
    assert r.cu_seqlens == [0, 16, 40, 49, 79, 80]  # padding is one extra dummy sub-sequence
    assert r.ok and r.leakage["abs"] == 0.0, r.render_text()


def test_sequence_parallel_with_context_parallel_pads_to_tp_cp_2():
    r = probe(sequence_parallel=True, tp=2, cp=2, lengths=[16, 24, 9, 30])
    assert r.tokens == 80 and r.padding == 1  # multiple of 2*2*2 = 8
    r = probe(sequence_parallel=True, tp=2, cp=3, lengths=[16, 24, 9, 30])
    assert r.tokens == 84 and r.cu_seqlens[-1] == 84 and r.max_seqlen == 30 and r.ok


def test_sequence_parallel_pad_larger_than_any_sample_raises_max_seqlen():
    r = probe(sequence_parallel=True, tp=8, lengths=[2, 3])
    assert r.padding == 3 and r.max_seqlen == 3 and r.ok


def test_sequence_parallel_needs_tensor_parallel():
    r = probe(sequence_parallel=True, tp=1, lengths=[16, 24, 9, 30])
    assert r.padding == 0 and any("turns sequence parallelism off" in n for n in r.notes)


def test_sequence_parallel_with_closed_gate_pads_the_causal_row():
    r = probe(sequence_parallel=True, tp=4, packed_data="0", lengths=[16, 24, 9, 30])
    assert r.tokens == 80 and r.cu_seqlens is None and r.leakage["abs"] > 0


# ------------------------------------------------------------------------------ backends on CPU

@pytest.mark.parametrize("backend", ["sdpa", "flex"])
def test_cpu_backend_proves_and_refutes(backend):
    good = probe(backend=backend)
    assert good.backend == backend and good.ok and good.leakage["abs"] == 0.0, good.render_text()
    bad = probe(backend=backend, packed_data="0")
    assert bad.leakage["abs"] > 0


def test_flex_compiled_refuses_cpu_with_a_reason():
    # the verdict matrix (tests/test_probe_matrix.py) checks the probe; this checks the factory
    with pytest.raises(BackendUnavailable, match="refused on CPU"):
        make_backend("flex-compiled", torch.device("cpu"), torch.float32)


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_half_precision_on_cpu_uses_a_looser_tolerance(dtype):
    r = probe(dtype=dtype, second_opinion=False)
    assert r.ok and r.dtype == dtype and r.leakage["abs"] == 0.0, r.render_text()
    assert check(r, "(i)").value["tolerance"] > 1e-3


def _broken_sdpa(device, dtype):
    from runtime_probe.backends import Backend

    def attend(q, k, v, cu, max_seqlen):
        raise RuntimeError("kernel exploded\nsecond line of a long trace")

    return Backend("sdpa", attend, "broken on purpose")


def test_auto_falls_back_when_a_kernel_fails_on_valid_input(monkeypatch):
    from runtime_probe import backends

    monkeypatch.setitem(backends._FACTORIES, "sdpa", _broken_sdpa)
    r = probe(second_opinion=False)
    assert r.backend == "flex" and r.ok and r.leakage["abs"] == 0.0
    assert any("sdpa raised RuntimeError: kernel exploded" in n for n in r.notes)
    assert [c.name for c in r.checks].count("forward") == 1


def test_a_named_kernel_that_fails_is_no_usable_backend(monkeypatch):
    from runtime_probe import backends

    monkeypatch.setitem(backends._FACTORIES, "sdpa", _broken_sdpa)
    with pytest.raises(NoBackend, match="kernel exploded$"):
        probe(backend="sdpa")


def test_sdpa_mask_is_block_diagonal_causal():
    m = block_causal_mask(torch.tensor([0, 2, 5], dtype=torch.int32), 5, "cpu")
    expected = torch.tensor([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 1, 1, 1]],
                            dtype=torch.bool)
    assert torch.equal(m, expected)


def test_aten_flash_schema_matches_the_positional_call():
    """We call aten::_flash_attention_forward positionally; this torch's schema must agree."""
    schema, names = aten_flash_schema()
    assert tuple(names[: len(ATEN_FLASH_EXPECTED)]) == ATEN_FLASH_EXPECTED, schema


@pytest.mark.parametrize("backend", ["flash-attn", "te", "aten-flash"])
def test_gpu_only_backends_refuse_cpu_with_a_reason(backend):
    with pytest.raises(BackendUnavailable, match="CUDA"):
        make_backend(backend, torch.device("cpu"), torch.bfloat16)
    with pytest.raises(NoBackend, match=backend):
        probe(backend=backend)


def test_cuda_device_without_cuda_is_a_usage_error():
    if HAS_CUDA:
        pytest.skip("CUDA present")
    with pytest.raises(ProbeUsageError, match="CUDA is not available"):
        probe(device="cuda")


# ------------------------------------------------------------------------------ GPU kernels

@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("backend", ["flash-attn", "te", "aten-flash", "flex-compiled", "sdpa"])
def test_gpu_backend_proves_and_refutes(backend):
    try:
        good = probe(device="cuda", backend=backend, dtype="bfloat16", heads=4, head_dim=64)
    except NoBackend as exc:
        pytest.skip(str(exc))
    assert good.ok and good.leakage["abs"] == 0.0, good.render_text()
    assert check(good, "device").status == "pass"
    bad = probe(device="cuda", backend=backend, dtype="bfloat16", heads=4, head_dim=64, packed_data="0")
    assert bad.leakage["abs"] > 0


@pytest.mark.cuda
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_gpu_auto_picks_a_varlen_kernel_and_megatron_layer_runs():
    r = probe(device="cuda", heads=4, head_dim=64)
    assert r.ok and r.backend in ("flash-attn", "te", "aten-flash", "flex-compiled", "sdpa")
    r = probe(device="cuda", heads=4, head_dim=64, megatron_layer=True)
    assert r.ok and r.leakage["abs"] == 0.0, r.render_text()


# ------------------------------------------------------------------------------ Megatron layer

def test_megatron_layer_thd_path_proves_and_refutes():
    good = probe(megatron_layer=True, heads=2, head_dim=8)
    assert good.ok and good.leakage["abs"] == 0.0, good.render_text()
    assert "TransformerLayer" in good.backend_detail
    bad = probe(megatron_layer=True, heads=2, head_dim=8, packed_data="0")
    assert bad.leakage["abs"] > 0 and check(bad, "(i)").status == "fail"


# ------------------------------------------------------------------------------ property

@hsettings(max_examples=12, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=24), min_size=2, max_size=6))
def test_any_lengths_correct_config_has_zero_leakage_and_closed_gate_leaks(lengths):
    good = probe(lengths=lengths, second_opinion=False)
    assert good.ok and good.leakage["abs"] == 0.0
    assert good.cu_seqlens[-1] == sum(lengths)
    bad = probe(lengths=lengths, packed_data="0", second_opinion=False)
    assert bad.leakage["abs"] > 0


# ------------------------------------------------------------------------------ report and sizes

def test_report_serialises_and_renders():
    for r in (probe(), probe(packed_data="0"), probe(mbs=2), probe(cu_seqlens=[0, 80])):
        doc = json.loads(json.dumps(r.to_json()))
        assert doc["ok"] == r.ok and doc["exit_code"] == r.exit_code
        text = r.render_text()
        assert text.splitlines()[0].startswith(("PROVEN", "FAILED"))
        for c in r.checks:
            assert c.name in text


def test_default_size_is_eight_uneven_subsamples_of_4096_tokens():
    lengths = default_lengths()
    assert len(lengths) == 8 and sum(lengths) == 4096 and len(set(lengths)) > 4
    assert sum(ProbeSettings(seq_length=1000).true_lengths()) == 1000
    assert ProbeSettings(seq_length=10).true_lengths() == [2, 2, 2, 2, 2]


@pytest.mark.parametrize("kw,match", [
    (dict(lengths=[5]), "at least 2"), (dict(lengths=[5, 0]), "positive"), (dict(mbs=0), "mbs"),
    (dict(lengths=[600, 600], seq_length=1000), "more than --seq-length"), (dict(backend="nope"), "backend"),
])
def test_bad_settings_are_usage_errors(kw, match):
    with pytest.raises(ProbeUsageError, match=match):
        probe(**kw)


def test_packed_seq_params_loads_without_megatron_core_init():
    """The fast path must not run megatron/core/__init__.py (~150 modules, seconds); the time is
    measured by benchmarks/probe_bench.py, here we check what was imported."""
    code = ("import sys, dataclasses;"
            "from runtime_probe import megatron_import as m; cls = m.load_packed_seq_params();"
            "assert 'megatron.core' not in sys.modules, 'megatron.core __init__ ran';"
            "assert not [n for n in sys.modules if n.startswith('megatron.core.')], 'megatron.core.* imported';"
            "assert m.HOW.startswith('loaded by path'), m.HOW;"
            "names = {f.name for f in dataclasses.fields(cls)};"
            "assert {'qkv_format', 'cu_seqlens_q', 'cu_seqlens_kv', 'max_seqlen_q', 'max_seqlen_kv'} <= names;"
            "p = cls(qkv_format='thd', max_seqlen_q=3); assert p.qkv_format == 'thd'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr


def test_packed_seq_params_falls_back_to_the_ordinary_import():
    code = ("import sys, warnings; warnings.simplefilter('ignore');"
            "from runtime_probe import megatron_import as m; m._candidate_files = lambda: [];"
            "cls = m.load_packed_seq_params();"
            "assert m.HOW.endswith('(fallback)'), m.HOW; assert 'megatron.core' in sys.modules;"
            "assert cls.__module__ == 'megatron.core.packed_seq_params'")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr


def test_megatron_layer_norms_take_the_run_dtype(monkeypatch):
    # CUDA's layer_norm refuses a float32 weight on a bfloat16 input (seen on an H200: every backend of the
    # bf16 Megatron-layer probe raised); CPU's accepts it, so refuse it here as CUDA does
    import torch.nn.functional as F

    real = F.layer_norm

    def cuda_like(x, shape, weight=None, bias=None, eps=1e-5):
        if weight is not None and weight.dtype != x.dtype:
            raise RuntimeError(f"expected scalar type {x.dtype} but found {weight.dtype}")
        return real(x, shape, weight, bias, eps)

    monkeypatch.setattr(F, "layer_norm", cuda_like)
    good = probe(megatron_layer=True, backend="sdpa", dtype="bfloat16", heads=2, head_dim=8)
    assert good.ok and good.leakage["abs"] == 0.0, good.render_text()
