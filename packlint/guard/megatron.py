"""The guard on Megatron-Core models: `install_megatron(model)` hooks a `GPTModel` (or the language model
of a `LLaVAModel`) with a one-shot forward pre-hook that reads `packed_seq_params` as the model is
really handed it, and checks it against the tokens the attention kernel sees.

For a LLaVAModel the hook sits on its `language_model`: that GPTModel is called with the combined
embeddings after `_preprocess_data` has expanded each image token into the image's embeddings
(megatron/core/models/multimodal/llava_model.py:927-936 in 0.16.1), so the row length it sees is the one
cu_seqlens must end at. A second hook on the LLaVAModel notes the collapsed length (input_ids before
expansion) so that cu_seqlens left in collapsed image-token space are named as such (Megatron-LM PR #3427).
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from packlint.guard import boundaries as bd
from packlint.guard.report import FAIL, INFO, PASS, SKIP, GuardResult, finish, say_unguarded
from packlint.guard.settings import GuardSettings

LOCAL_ATTENTION = "megatron.core.transformer.dot_product_attention"


def _unwrap(model: Any) -> Any:
    """DDP, Float16Module and friends keep the real model in `.module`."""
    seen = 0
    while hasattr(model, "module") and not hasattr(model, "decoder") and not hasattr(model, "language_model"):
        model = model.module
        seen += 1
        if seen > 8:
            break
    return model


def _kernel_tokens(model: Any, bound: dict[str, Any]) -> tuple[int, int, str]:
    """(tokens the attention kernel sees, all rows of the micro-batch together as q/k/v hold them; rows;
    how they were counted). With sequence or context parallelism a rank holds a slice: cu_seqlens describe
    the whole row, so the slice is multiplied back."""
    config = getattr(model, "config", None)
    cp = int(getattr(config, "context_parallel_size", 1) or 1)
    dec = bound.get("decoder_input")
    if dec is not None:
        s, b = int(dec.shape[0]), int(dec.shape[1])
        tp = int(getattr(config, "tensor_model_parallel_size", 1) or 1)
        sp = tp if getattr(config, "sequence_parallel", False) else 1
        how = f"decoder_input [{s}, {b}, h]" + (f" x sequence parallel {sp}" if sp > 1 else "")
        return s * b * sp * cp, b, how + (f" x context parallel {cp}" if cp > 1 else "")
    ids = bound.get("input_ids")
    if ids is None:
        return 0, 1, "no input_ids or decoder_input (a later pipeline stage)"
    b, s = int(ids.shape[0]), int(ids.shape[-1])
    return s * b * cp, b, f"input_ids [{b}, {s}]" + (f" x context parallel {cp}" if cp > 1 else "")


def _core_attention(model: Any) -> Any:
    layers = getattr(getattr(model, "decoder", None), "layers", None)
    if not layers:
        return None
    return getattr(getattr(layers[0], "self_attention", None), "core_attention", None)


def _check_cu(r: GuardResult, p: Any, tokens: int, device: Any, outer: dict[str, Any]) -> None:
    """The probe's static checks on cu_seqlens_q/kv (or the padded ones, which then end at the row), and
    the LLaVA reading of a short last entry: the collapsed image-token space."""
    from runtime_probe.static_checks import check_cu_seqlens, check_packed_params

    cu = p.cu_seqlens_q
    last = int(cu.reshape(-1)[-1]) if cu.numel() else 0
    collapsed = outer.get("collapsed_tokens")
    if collapsed is not None and tokens and last != tokens and last == collapsed:
        r.add(
            "image expansion",
            FAIL,
            f"cu_seqlens end at {last}, the input_ids' length before image expansion; after LLaVAModel expands "
            f"{outer.get('image_tokens')} image token(s) the language model sees {tokens} tokens: cu_seqlens are "
            "in collapsed image-token space and must be remapped (Megatron-LM PR #3427)",
        )
    checks = check_packed_params(p, tokens, device) if tokens else []
    padded = getattr(p, "cu_seqlens_q_padded", None)
    if padded is not None and tokens:
        checks = [c for c in checks if "ends at the row length" not in c.name]
        checks += check_cu_seqlens("cu_seqlens_q_padded", padded, p.max_seqlen_q, tokens, device)
    r.checks.extend(c for c in checks if c.status == FAIL)
    if checks and not r.failed:
        r.add("cu_seqlens", PASS, f"{len(checks)} checks: int32, 1-D, 0 .. {tokens} increasing, q == kv, thd")


def check_call(model: Any, bound: dict[str, Any], outer: dict[str, Any]) -> GuardResult:
    """Every check on one GPTModel forward call's arguments (no forward is run)."""
    from runtime_probe.megatron_import import megatron_version

    r = GuardResult("megatron-core", outer.get("model") or type(model).__name__)
    tokens, rows, how = _kernel_tokens(model, bound)
    p = bound.get("packed_seq_params")
    core = _core_attention(model)
    config = getattr(model, "config", None)
    r.facts = {
        "megatron_core": megatron_version(),
        "kernel_tokens": tokens,
        "counted_from": how,
        "rows": rows,
        "core_attention": f"{type(core).__module__}.{type(core).__name__}" if core is not None else None,
        "attention_backend": str(getattr(config, "attention_backend", None)),
        "packed_seq_params": p is not None,
        **{k: v for k, v in outer.items() if k != "model"},
    }
    pos = bound.get("position_ids")
    length = tokens // max(rows, 1) if rows else tokens
    pos_cuts = bd.position_cuts(pos, rows, int(pos.shape[-1]), None) if pos is not None and pos.dim() >= 1 else None
    if p is None:
        if pos_cuts:
            r.add(
                "packed_seq_params",
                FAIL,
                f"position_ids restart at {bd.short(pos_cuts)} (samples are packed) but no packed_seq_params reach "
                "the model: attention is plain causal over the whole row",
            )
        else:
            r.add("packed_seq_params", PASS, f"not packed: no packed_seq_params, {how}")
        return r
    cu = p.cu_seqlens_q
    r.facts["cu_seqlens_q"] = [int(x) for x in cu.reshape(-1).tolist()][:4096]
    r.facts["qkv_format"] = p.qkv_format
    ref = bound.get("decoder_input") if bound.get("decoder_input") is not None else bound.get("input_ids")
    _check_cu(r, p, tokens, cu.device if ref is None else ref.device, outer)
    if not tokens:
        r.add("cu_seqlens: ends at the row length", SKIP, f"not checked: {how}")
    if rows != 1:
        r.add("micro-batch", FAIL, f"the THD packed path takes one row per micro-batch; this one has {rows}")
    else:
        r.add("micro-batch", PASS, "one row (THD)")
    if pos_cuts:
        cuts = bd.cu_cuts(cu, tokens or length)
        ok = pos_cuts == cuts
        r.add(
            "position_ids agree with cu_seqlens",
            PASS if ok else FAIL,
            f"position_ids restart at {bd.short(pos_cuts)}, cu_seqlens cut at {bd.short(cuts)}",
        )
    if core is not None and type(core).__module__ == LOCAL_ATTENTION:
        r.add(
            "attention backend",
            FAIL,
            "the core attention is Megatron-Core's local DotProductAttention, which refuses packed sequences "
            "(dot_product_attention.py:153 in 0.16.1): use the Transformer Engine spec",
        )
    elif core is not None:
        r.add("attention backend", INFO, f"core attention {type(core).__name__} reads cu_seqlens ({p.qkv_format})")
    return r


def install_megatron(model: Any, settings: GuardSettings | None = None) -> list[Any]:
    """Hook a Megatron-Core GPTModel or LLaVAModel (wrapped or not); returns the hook handles. Each hook
    removes itself on the first forward, so later steps pay nothing."""
    settings = settings or GuardSettings.from_env()
    model = _unwrap(model)
    target = getattr(model, "language_model", None) or model
    if getattr(target, "_packlint_guard", None) is not None:
        if target is model:
            return list(target._packlint_guard)
        for h in target._packlint_guard:  # hooked as a bare GPTModel first: hook it again as LLaVA's
            h.remove()
    outer: dict[str, Any] = {}
    handles: list[Any] = []

    def remove_all() -> None:
        for h in handles:
            h.remove()
        target._packlint_guard = None

    if target is not model:
        try:
            outer_sig: inspect.Signature | None = inspect.signature(model.forward)
        except (TypeError, ValueError):
            outer_sig = None

        def outer_hook(module: Any, args: tuple, kwargs: dict) -> None:
            try:
                got = outer_sig.bind_partial(*args, **kwargs).arguments if outer_sig else dict(kwargs)
                ids = got.get("input_ids")
                index = got.get("image_token_index") or getattr(module, "image_token_index", None)
                if ids is not None:
                    outer["collapsed_tokens"] = int(ids.shape[-1])
                    outer["image_tokens"] = int((ids == index).sum()) if index is not None else None
                outer["model"] = type(module).__name__
            except Exception:  # noqa: BLE001 - the note is a nicety; the language-model hook still checks
                pass

        handles.append(model.register_forward_pre_hook(outer_hook, with_kwargs=True))
    try:
        sig: inspect.Signature | None = inspect.signature(target.forward)
    except (TypeError, ValueError):
        sig = None

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        remove_all()
        t = time.perf_counter()
        try:
            bound = sig.bind_partial(*args, **kwargs).arguments if sig else dict(kwargs)
            result = check_call(module, dict(bound), outer)
            if settings.measure:
                from packlint.guard.measure import measure_megatron

                measure_megatron(module, dict(bound), result)
        except Exception as exc:  # noqa: BLE001 - the guard's own failure never stops a training run
            say_unguarded(exc)
            return
        result.facts["guard_seconds"] = round(time.perf_counter() - t, 4)
        finish(result, settings)

    handles.append(target.register_forward_pre_hook(hook, with_kwargs=True))
    target._packlint_guard = handles
    return handles
