"""One probe, end to end: re-enact the pipeline, check the boundaries, run one real forward, and
prove (or refute, with a number) that attention is block-diagonal causal."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from runtime_probe import megatron_import
from runtime_probe.report import FAIL, PASS, SKIP, ProbeReport
from runtime_probe.settings import ProbeSettings, ProbeUsageError

if TYPE_CHECKING:
    from collections.abc import Callable

INSTALL_HINT = "pip install 'packlint[probe] @ git+https://github.com/packlint/packlint'"


class TorchMissing(ProbeUsageError):
    """torch (or megatron-core) is not installed: say which extra brings it."""


class NoBackend(ProbeUsageError):
    """No attention kernel can run with these settings on this machine."""


def _import_torch():
    try:
        import torch
    except ImportError:
        raise TorchMissing(f"the probe needs torch: {INSTALL_HINT}") from None
    return torch


def resolve_device(name: str):
    torch = _import_torch()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cuda" and not torch.cuda.is_available():
        raise ProbeUsageError(f"--device cuda: CUDA is not available (torch {torch.__version__})")
    return torch.device(name)


def resolve_dtype(name: str, device):
    torch = _import_torch()
    if name == "auto":
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return getattr(torch, name)


def attention_work(lengths: list[int]) -> dict:
    """Attention work packed (sum Li^2) vs one causal row over everything (T^2): what packing saves,
    and the share of the score matrix that crosses samples when the boundaries are lost."""
    total = sum(lengths)
    packed = sum(n * n for n in lengths)
    unpacked = total * total
    return {
        "packed": packed,
        "unpacked": unpacked,
        "saved_fraction": 1 - packed / unpacked,
        "cross_fraction": (unpacked - packed) / unpacked,
        "packed_causal_pairs": sum(n * (n + 1) // 2 for n in lengths),
        "unpacked_causal_pairs": total * (total + 1) // 2,
    }


def run_probe(settings: ProbeSettings) -> ProbeReport:
    """Probe one configuration. Raises ProbeUsageError (exit 2) for bad input, a missing torch or no
    usable kernel; every finding about the configuration itself is a check in the report."""
    settings.validate()
    timings: dict[str, float] = {}
    t = time.perf_counter()
    _import_torch()  # timed here, so the report separates import cost from the forward
    timings["import torch"] = time.perf_counter() - t

    t = time.perf_counter()
    try:
        PackedSeqParams = megatron_import.load_packed_seq_params(full_import=settings.megatron_layer)
    except ImportError:
        raise TorchMissing(f"the probe needs megatron-core (for PackedSeqParams): {INSTALL_HINT}") from None
    timings["import PackedSeqParams"] = time.perf_counter() - t

    from runtime_probe.backends import BackendUnavailable, candidate_names, choose_backend, make_backend
    from runtime_probe.pipeline import build_batch
    from runtime_probe.static_checks import check_packed_params

    device = resolve_device(settings.device)
    dtype = resolve_dtype(settings.dtype, device)
    try:
        backend, skipped = choose_backend(settings.backend, device, dtype)
    except BackendUnavailable as exc:
        raise NoBackend(str(exc)) from None

    r = ProbeReport(
        settings=settings.to_json(),
        backend=backend.name,
        backend_detail=backend.detail,
        device=str(device),
        dtype=str(dtype).replace("torch.", ""),
    )
    r.notes.extend(settings.notes)
    r.notes.extend(f"backend skipped: {s}" for s in skipped)
    r.notes.append(f"PackedSeqParams: megatron-core {megatron_import.megatron_version() or '?'}, {megatron_import.HOW}")

    # ---------------------------------------------------------------- re-enact the pipeline
    t = time.perf_counter()
    batch = build_batch(settings, device, PackedSeqParams)
    r.gates, r.pipeline, r.lengths = batch.gates, batch.steps, batch.lengths
    r.tokens, r.padding = batch.tokens, batch.padding
    r.checks.extend(batch.checks)
    r.notes.extend(batch.notes)
    if batch.cu_lengths is not None:
        r.shapes["cu_lengths"] = list(batch.cu_lengths.shape)
    if batch.kind == "unpacked":
        r.verdict = "not-packed"
        timings["build"] = time.perf_counter() - t
        r.timings_s = timings
        return r
    r.work = attention_work(batch.lengths)
    if batch.stopped:
        r.add("forward", SKIP, "not run: no batch reaches attention (see the failed check)")
        timings["build"] = time.perf_counter() - t
        r.timings_s = timings
        return r

    p = batch.packed_seq_params
    tokens = batch.tokens
    if p is not None:
        r.cu_seqlens = [int(x) for x in p.cu_seqlens_q.tolist()]
        r.max_seqlen = int(p.max_seqlen_q)
        r.shapes["cu_seqlens"] = list(p.cu_seqlens_q.shape)
        r.checks.extend(check_packed_params(p, tokens, device))
    else:
        r.plain_causal = True
        r.add(
            "gate 2: batch",
            FAIL,
            f"closed: the real cu_lengths from pack_selected_samples are replaced by the dummy [[0]], so the "
            f"consumer passes no packed_seq_params and attends plain causal over all {len(batch.lengths)} "
            f"sub-samples ({sum(batch.lengths)} tokens) as if they were one",
        )
    timings["build"] = time.perf_counter() - t
    if not r.ok and p is not None:
        r.add(
            "forward",
            SKIP,
            "not run: a static check failed; a varlen kernel would read out of bounds or "
            "leave rows uninitialised on these boundaries",
        )
        r.timings_s = timings
        return r

    # ---------------------------------------------------------------- one real forward, verified
    # the boundaries passed the static checks, so a kernel that raises now fails on valid input: in
    # auto mode that kernel is skipped for the next one; a kernel asked for by name is unusable (exit 2)
    names = [backend.name] + (
        [n for n in candidate_names("auto", device) if n != backend.name] if settings.backend == "auto" else []
    )
    mark = len(r.checks)
    for i, name in enumerate(names):
        try:
            if i > 0:
                backend = make_backend(name, device, dtype)
                r.backend, r.backend_detail = backend.name, backend.detail
            _forward_and_verify(r, backend, settings, batch, p, device, dtype, timings)
            break
        except BackendUnavailable as exc:
            r.notes.append(f"backend skipped: {name}: {exc}")
        except Exception as exc:  # noqa: BLE001 - any kernel failure becomes one line, never a traceback
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            r.notes.append(f"backend failed: {name} raised {type(exc).__name__}: {first}")
            del r.checks[mark:]
            r.leakage = None
    else:
        raise NoBackend(
            "no usable attention backend: "
            + "; ".join(n.split(": ", 1)[1] for n in r.notes if n.startswith(("backend failed", "backend skipped")))
        )

    r.verdict = "proven" if r.ok and p is not None else "failed"
    r.timings_s = timings
    return r


def _forward_and_verify(
    r: ProbeReport, backend, settings: ProbeSettings, batch, p, device, dtype, timings: dict
) -> None:
    """One packed forward on `backend`, then proofs (i) and (ii), and on CPU a float64 second opinion."""
    import torch

    from runtime_probe.backends import default_tolerance
    from runtime_probe.verify import Verification, compare_with_alone, measure_leakage

    tokens = batch.tokens
    gen = torch.Generator().manual_seed(settings.seed)
    cu = p.cu_seqlens_q if p is not None else None
    max_seqlen = p.max_seqlen_q if p is not None else tokens
    t = time.perf_counter()
    r.backend_detail = backend.describe(p is not None)
    packed: Callable[..., Any]  # the layer takes hidden states, the bare kernel q, k, v
    alone: Callable[..., Any]
    if settings.megatron_layer:
        from runtime_probe.megatron_layer import build_layer, layer_inputs

        packed_fn, alone_fn, desc = build_layer(
            backend, settings.heads, settings.head_dim, dtype, device, settings.seed
        )
        r.backend_detail = f"{desc}; {backend.describe(p is not None)}"
        inputs = [layer_inputs(tokens, settings.heads * settings.head_dim, dtype, device, gen)]
        timings["build layer"] = time.perf_counter() - t
        t = time.perf_counter()

        def packed_layer(x):
            return packed_fn(x, p)

        packed = packed_layer
        alone = alone_fn
        r.shapes["hidden_states"] = [tokens, 1, settings.heads * settings.head_dim]
    else:
        inputs = [
            torch.randn(tokens, settings.heads, settings.head_dim, generator=gen).to(device=device, dtype=dtype)
            for _ in range(3)
        ]

        def packed_kernel(q, k, v):
            with torch.no_grad():
                return backend.attend(q, k, v, cu, max_seqlen)

        packed = packed_kernel

        def alone(q, k, v):
            with torch.no_grad():
                return backend.attend(q, k, v, None, q.shape[0])

        r.shapes["q/k/v (thd)"] = [tokens, settings.heads, settings.head_dim]
    out = packed(*inputs)
    if device.type == "cuda":
        torch.cuda.synchronize()
    timings["forward"] = time.perf_counter() - t
    r.add(
        "forward",
        PASS,
        f"one {backend.name} forward over {tokens} tokens on {device}"
        + (" (plain causal: no cu_seqlens)" if p is None else f" with cu_seqlens of {len(r.cu_seqlens or ())} entries"),
    )

    # ---------------------------------------------------------------- verify two ways
    t = time.perf_counter()
    bounds = batch.true_bounds()
    v = Verification(output=out)
    compare_with_alone(out, inputs, bounds, alone, default_tolerance(dtype), v)
    r.add(
        "(i) packed == each sub-sample alone",
        PASS if v.error_ok else FAIL,
        f"max |packed - alone| = {v.max_error:.3g} over {len(bounds)} sub-samples at their true boundaries "
        f"(tolerance {v.tolerance:.2g} for {r.dtype})"
        + (
            ""
            if v.error_ok
            else f"; worst: sub-sample {v.worst_subsample} "
            f"[{bounds[v.worst_subsample][0]}, {bounds[v.worst_subsample][1]})"
        ),
        {"max_error": v.max_error, "tolerance": v.tolerance, "per_subsample": v.per_subsample_error},
    )
    measure_leakage(packed, inputs, out, bounds, gen, v)
    if device.type == "cuda":
        torch.cuda.synchronize()
    timings["verify"] = time.perf_counter() - t
    r.leakage = {
        "abs": v.leakage,
        "rel": v.rel_leakage,
        "mean_abs_output": v.mean_abs_output,
        "per_perturbed": v.per_perturbed,
    }
    leak_ok = v.leakage == 0.0
    # (a leak is always measured on some perturbation, so `worst` is set whenever it is reported)
    worst = max(v.per_perturbed, key=lambda d: d["max_change"]) if v.per_perturbed else {}
    r.add(
        "(ii) leakage",
        PASS if leak_ok else FAIL,
        f"perturbing each of sub-samples 0..{len(bounds) - 2} changes no other sub-sample's output: exactly 0"
        if leak_ok
        else f"perturbing sub-sample {worst['perturbed']} changes sub-sample {worst['worst_subsample']} "
        f"(token {worst['worst_token']}) by {v.leakage:.3g} ({v.rel_leakage:.1%} of the mean |output|)",
        v.leakage,
    )

    # ---------------------------------------------------------------- a second opinion on CPU
    # It cross-checks the kernel, not the configuration: causal attention written out in float64,
    # sub-sequence by sub-sequence between the boundaries the kernel was handed, on one head (the
    # mask is the same for every head). It shares no code with the kernels or their mask builders
    # and costs milliseconds (eager flex_attention, the earlier second opinion, imported
    # torch._dynamo: ~1/3 of the probe's time). Without boundaries (plain causal) the two agreeing
    # would say nothing about packing, so it is skipped with that reason.
    name = f"second opinion: float64 reference attention vs {backend.name} on the same boundaries"
    if settings.second_opinion and not settings.megatron_layer and device.type == "cpu":
        if p is None:
            r.add(
                name,
                SKIP,
                "skipped: no cu_seqlens reached the kernel, so there are no boundaries to "
                "cross-check (the failure above is the configuration's, not the kernel's)",
            )
        else:
            t = time.perf_counter()
            assert cu is not None  # (p is not None here)
            diff = reference_difference(out, inputs, [int(x) for x in cu.tolist()])
            agree = diff <= v.tolerance
            r.add(
                name,
                PASS if agree else FAIL,
                f"kernel cross-check: softmax(q k^T / sqrt(d)) v in float64 per sub-sequence computes the "
                f"same output as {backend.name} on head 0 of {settings.heads}: max difference {diff:.3g}"
                if agree
                else f"kernel cross-check: {backend.name} differs from float64 reference attention "
                f"by {diff:.3g} on the same boundaries (tolerance {v.tolerance:.2g}): the "
                "kernel is wrong on this machine",
                diff,
            )
            timings["second opinion"] = time.perf_counter() - t


def reference_difference(out, inputs, cu: list[int]) -> float:
    """max |kernel - reference| on head 0, where the reference is causal attention computed in float64
    separately for each [cu[i], cu[i+1]). Rows past cu[-1] belong to no sub-sequence and are skipped."""
    import math

    import torch

    q, k, v = (x[:, 0].to(torch.float64) for x in inputs)
    worst = 0.0
    for a, b in zip(cu[:-1], cu[1:], strict=True):
        scores = (q[a:b] @ k[a:b].T) / math.sqrt(q.shape[-1])
        future = torch.ones(b - a, b - a, dtype=torch.bool).triu(1)
        ref = torch.softmax(scores.masked_fill(future, float("-inf")), dim=-1) @ v[a:b]
        d = (out[a:b, 0].to(torch.float64) - ref).abs()
        if not bool(torch.isfinite(d).all()):
            return float("inf")
        worst = max(worst, float(d.max().item()) if d.numel() else 0.0)
    return worst
