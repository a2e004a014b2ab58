"""`measure`: one real packed-vs-alone forward of the first row on the user's own model, under
torch.no_grad() and in eval mode (dropout off), restored afterwards. The leakage number is the largest
|logits packed - logits alone| over the samples of row 0, against the dtype's tolerance
(runtime_probe.backends.default_tolerance, the probe's) scaled by the largest logit.

Skipped, with the reason, where one forward per sample could not be run faithfully or safely: inputs
that are not token ids (pixel_values, inputs_embeds), and sharded parameters (ZeRO-3, FSDP), whose
forwards are collectives that every rank would have to make in step.
"""

from __future__ import annotations

from typing import Any

from packlint.guard.report import FAIL, PASS, SKIP, GuardResult
from packlint.guard.settings import GuardSettings

ROW_KEYS = ("input_ids", "position_ids", "attention_mask", "seq_idx")
# what a training forward may also carry that changes no logits: the loss inputs, output switches
IGNORED = ("labels", "num_items_in_batch", "return_dict", "output_attentions", "output_hidden_states", "logits_to_keep")
KEEP_KEYS = (*ROW_KEYS, "cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k", "use_cache")


def _why_not(model: Any, kw: dict[str, Any]) -> str | None:
    other = sorted(k for k, v in kw.items() if v is not None and k not in KEEP_KEYS and k not in IGNORED)
    if kw.get("input_ids") is None:
        return "the call passes no input_ids"
    if other:
        return f"the call passes {', '.join(other)}: each sample alone cannot be rebuilt from token ids only"
    for p in model.parameters():
        if hasattr(p, "ds_id") or type(p).__name__ in ("DTensor", "FlatParameter"):
            return "the parameters are sharded (ZeRO-3 / FSDP): a forward is a collective every rank must make"
    return None


def _segments(result: GuardResult, length: int) -> list[tuple[int, int]]:
    cuts = set()
    for v in (result.facts.get("cuts") or {}).values():
        cuts.update(v)
    if not cuts:
        cuts.update(result.facts.get("separator_cuts") or [])
    edges = [0, *sorted(c for c in cuts if 0 < c < length), length]
    return list(zip(edges[:-1], edges[1:], strict=True))


def measure_hf(model: Any, kw: dict[str, Any], result: GuardResult, settings: GuardSettings) -> None:
    import torch

    from runtime_probe.backends import default_tolerance

    why = _why_not(model, kw)
    if why:
        result.add("measure", SKIP, f"not measured: {why}")
        return
    ids = kw["input_ids"]
    b, n = int(ids.shape[0]), int(ids.shape[1])
    row: dict[str, Any] = {}
    for k in KEEP_KEYS:
        v = kw.get(k)
        if v is None:
            continue
        if k in ROW_KEYS and hasattr(v, "shape") and v.dim() >= 1 and v.shape[0] == b:
            v = v[:1]
        elif k not in ROW_KEYS and b > 1 and k != "use_cache":
            continue  # cu_seq_lens over several rows do not describe row 0 alone
        row[k] = v
    segs = _segments(result, n)
    pos = kw.get("position_ids")
    start = int(pos.reshape(-1)[0]) if pos is not None and pos.dim() == 2 else 0
    dtype = next(model.parameters()).dtype
    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            packed = model(**row).logits[0].float()
            errs, scale = [], 1.0
            for a, c in segs:
                alone = (
                    model(
                        input_ids=ids[:1, a:c],
                        position_ids=torch.arange(start, start + c - a, device=ids.device)[None],
                        use_cache=False,
                    )
                    .logits[0]
                    .float()
                )
                scale = max(scale, float(alone.abs().max()))
                errs.append(float((packed[a:c] - alone).abs().max()))
    finally:
        model.train(was_training)
    tol = default_tolerance(dtype) * scale
    leak = max(errs) if errs else 0.0
    worst = max(range(len(errs)), key=lambda i: errs[i]) if errs else 0
    result.leakage = leak
    result.measured = {"segments": segs, "per_sample": errs, "tolerance": tol, "dtype": str(dtype)}
    ok = leak <= tol
    result.add(
        "measure: packed == alone",
        PASS if ok else FAIL,
        f"row 0, {len(segs)} samples: max |logits packed - alone| = {leak:.3g} (tolerance {tol:.2g})"
        + ("" if ok else f"; worst: sample {worst} [{segs[worst][0]}, {segs[worst][1]})"),
        leak,
    )


def _megatron_why_not(model: Any, bound: dict[str, Any], result: GuardResult) -> str | None:
    config = getattr(model, "config", None)
    sizes = {
        k: int(getattr(config, k, 1) or 1)
        for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")
    }
    split = [f"{k}={v}" for k, v in sizes.items() if v > 1]
    if split:
        return f"model parallelism ({', '.join(split)}): each forward is a collective every rank must make"
    p = bound.get("packed_seq_params")
    if p is None or p.qkv_format != "thd":
        return "no THD packed_seq_params"
    if bound.get("decoder_input") is None and bound.get("input_ids") is None:
        return "no input_ids or decoder_input"
    if result.failed:
        return "the cu_seqlens or the micro-batch failed the checks above (the kernel would read out of bounds)"
    if not getattr(model, "post_process", True) or not getattr(model, "pre_process", True):
        return "a pipeline stage that is not both first and last"
    return None


def measure_megatron(model: Any, bound: dict[str, Any], result: GuardResult) -> None:
    """The GPTModel (a LLaVAModel's language model included) on the row as it was handed over, and on each
    cu_seqlens segment alone (no packed_seq_params: RoPE from 0, as the THD path applies it per segment).
    What it proves: the attention path keeps the segments cu_seqlens give apart. Whether those are the
    true samples is the checks' business (a measure cannot know the truth the batch does not carry)."""
    import torch

    from runtime_probe.backends import default_tolerance

    why = _megatron_why_not(model, bound, result)
    if why:
        result.add("measure", SKIP, f"not measured: {why}")
        return
    p = bound["packed_seq_params"]
    cu = [int(x) for x in p.cu_seqlens_q.reshape(-1).tolist()]
    dec: Any = bound.get("decoder_input")
    ids: Any = bound.get("input_ids")
    dtype = next(model.parameters()).dtype

    def run(a: int, b: int, packed: bool) -> Any:
        kw: dict[str, Any] = {"attention_mask": None, "labels": None}
        if dec is not None:
            kw.update(input_ids=None, position_ids=None, decoder_input=dec if packed else dec[a:b])
        else:
            pos = None if packed else torch.arange(b - a, device=ids.device)[None]
            kw.update(
                input_ids=ids if packed else ids[:, a:b], position_ids=pos if not packed else bound.get("position_ids")
            )
        if packed:
            kw["packed_seq_params"] = p
        out = model(**kw)
        out = out[0] if isinstance(out, (tuple, list)) else out
        return out.reshape(-1, out.shape[-1]).float()

    was_training = model.training
    try:
        model.eval()
        with torch.no_grad():
            whole = run(0, cu[-1], True)
            errs, scale = [], 1.0
            for a, b in zip(cu[:-1], cu[1:], strict=True):
                alone = run(a, b, False)
                scale = max(scale, float(alone.abs().max()))
                errs.append(float((whole[a:b] - alone).abs().max()))
    finally:
        model.train(was_training)
    tol = default_tolerance(dtype) * scale
    leak = max(errs) if errs else 0.0
    result.leakage = leak
    segs = list(zip(cu[:-1], cu[1:], strict=True))
    result.measured = {"segments": segs, "per_sample": errs, "tolerance": tol, "dtype": str(dtype)}
    result.add(
        "measure: packed == alone",
        PASS if leak <= tol else FAIL,
        f"{len(segs)} cu_seqlens segments: max |logits packed - alone| = {leak:.3g} (tolerance {tol:.2g})",
        leak,
    )
