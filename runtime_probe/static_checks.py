"""Checks on `cu_seqlens` that the kernels themselves never make.

flash-attn trusts its arguments: rows past cu[-1] are left uninitialised, a cu[-1] beyond the row
reads past the end of q/k/v, int64 boundaries are rejected only on some builds, and flex attention
truncates silently. So before any forward we check what the kernel would be handed.
"""

from __future__ import annotations

import torch

from runtime_probe.report import FAIL, PASS, Check


def check_cu_seqlens(name: str, cu: torch.Tensor, max_seqlen, tokens: int, device: torch.device) -> list[Check]:
    """int32, 1-D, starts at 0, strictly increasing, last == tokens the kernel sees,
    max_seqlen >= max(diff), on the same device as q/k/v."""
    checks: list[Check] = []

    def add(what: str, ok: bool, detail: str, value=None) -> None:
        checks.append(Check(f"{name}: {what}", PASS if ok else FAIL, detail, value))

    add(
        "dtype",
        cu.dtype == torch.int32,
        f"{cu.dtype}" + ("" if cu.dtype == torch.int32 else " (flash-attn and TE need int32)"),
        str(cu.dtype),
    )
    add(
        "1-D",
        cu.dim() == 1,
        f"shape {list(cu.shape)}" + ("" if cu.dim() == 1 else ": the kernel wants one vector of boundaries"),
        list(cu.shape),
    )
    flat = cu.reshape(-1).tolist()
    if not flat:
        add("starts at 0", False, "empty")
        return checks
    add("starts at 0", flat[0] == 0, f"cu[0] = {flat[0]}", flat[0])
    diffs = [y - x for x, y in zip(flat, flat[1:], strict=False)]
    bad = [i for i, d in enumerate(diffs) if d <= 0]
    add(
        "strictly increasing",
        not bad,
        "every sub-sequence has at least one token"
        if not bad
        else f"{len(bad)} non-positive step(s), first at index {bad[0]}: {flat[bad[0]]} -> {flat[bad[0] + 1]}",
        bad[:10],
    )
    last = flat[-1]
    if last == tokens:
        detail = f"cu[-1] = {last} = tokens the kernel sees"
    elif last < tokens:
        detail = (
            f"cu[-1] = {last} < {tokens} tokens the kernel sees: the last {tokens - last} rows are never "
            "attended (flash-attn leaves them uninitialised)"
        )
    else:
        detail = (
            f"cu[-1] = {last} > {tokens} tokens the kernel sees: the kernel reads {last - tokens} rows past "
            "the end of q/k/v (flash-attn does not check)"
        )
    add("ends at the row length", last == tokens, detail, {"last": last, "tokens": tokens})
    longest = max(diffs) if diffs else 0
    ms = int(max_seqlen) if max_seqlen is not None else None
    add(
        "max_seqlen covers the longest sub-sequence",
        ms is not None and ms >= longest,
        f"max_seqlen {ms} vs longest {longest}"
        + ("" if ms is not None and ms >= longest else ": the kernel sizes its work by max_seqlen and skips the rest"),
        {"max_seqlen": ms, "longest": longest},
    )
    add("device", cu.device.type == device.type, f"{cu.device} (q/k/v on {device})", str(cu.device))
    return checks


def check_packed_params(p, tokens: int, device: torch.device) -> list[Check]:
    """Run the checks on what Megatron hands the kernel: cu_seqlens_q and cu_seqlens_kv."""
    checks = check_cu_seqlens("cu_seqlens_q", p.cu_seqlens_q, p.max_seqlen_q, tokens, device)
    same = p.cu_seqlens_kv.shape == p.cu_seqlens_q.shape and bool(
        torch.equal(p.cu_seqlens_kv.cpu(), p.cu_seqlens_q.cpu())
    )
    checks.append(
        Check(
            "cu_seqlens_kv == cu_seqlens_q",
            PASS if same else FAIL,
            "self-attention: keys are cut where queries are"
            if same
            else "keys and queries are cut at different boundaries",
        )
    )
    if p.qkv_format != "thd":
        checks.append(Check("qkv_format", FAIL, f"{p.qkv_format!r}: cu_seqlens are only read in the 'thd' format"))
    return checks
