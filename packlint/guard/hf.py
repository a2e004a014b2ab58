"""The guard on transformers models: `PackingGuard` (a TrainerCallback), the forward pre-hook it
registers, and the checks on the first batch the model really sees.

What honours which boundary is read from the installed transformers' code (cited for 5.24 in
docs/guard.md): the mask-based implementations (sdpa, eager, flex_attention) cut samples apart only by
a 4-D mask or, when neither a 2-D attention_mask nor a cache is present, by position_ids
(masking_utils._preprocess_mask_arguments -> find_packed_sequence_indices); the flash implementations
by cu_seq_lens_q/k with max_length_q/k, or by position_ids when the batch is one row
(modeling_flash_attention_utils._flash_attention_forward, _is_packed_sequence), after dropping a 2-D
mask of all ones (masking_utils.flash_attention_mask).
This module imports transformers at import time: only the guard's entry points import it, lazily.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field
from typing import Any

from transformers import TrainerCallback

from packlint.guard import boundaries as bd
from packlint.guard.report import FAIL, INFO, PASS, WARN, GuardResult, finish, say_unguarded
from packlint.guard.settings import GuardSettings

MASK_BASED = ("sdpa", "eager", "flex_attention")
CU_KEYS = ("cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k")


def _is_flash(impl: str | None) -> bool:
    return bool(impl) and ("flash_attention" in str(impl) or "flash-attn" in str(impl))


@dataclass
class Batch:
    """What one forward call hands the model, and the model facts the checks need."""

    kw: dict[str, Any]
    impl: str | None
    batch: int
    length: int
    mask: Any = None  # the attention_mask as passed
    mask_kind: str = "none"  # none | 2d-ones | 2d-padding | 2d-segment-ids | 4d | other
    cache_on: bool = False
    cache_why: str = ""
    separators: tuple[int, ...] = ()
    notes: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.batch * self.length

    @property
    def row_starts(self) -> set[int]:
        return {r * self.length for r in range(1, self.batch)}


def _bound_kwargs(module: Any, args: tuple, kwargs: dict) -> dict[str, Any]:
    """The forward's arguments by name, positional ones included (Trainer passes keywords)."""
    if not args:
        return dict(kwargs)
    try:
        return dict(inspect.signature(module.forward).bind_partial(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        return {**kwargs, "input_ids": args[0]}


def _config(model: Any) -> Any:
    return getattr(model, "config", None)


def _separators(config: Any, settings: GuardSettings) -> tuple[int, ...]:
    if settings.separators is not None:
        return settings.separators
    ids: list[int] = []
    for cfg in (config, getattr(config, "text_config", None)):
        eos = getattr(cfg, "eos_token_id", None) if cfg is not None else None
        ids.extend([eos] if isinstance(eos, int) else [x for x in (eos or []) if isinstance(x, int)])
    return tuple(dict.fromkeys(ids))


def _cache_state(model: Any, kw: dict[str, Any]) -> tuple[bool, str]:
    """Whether this forward runs with a KV cache, as the model decides it: an explicit cache object, else
    use_cache from the call or the config (transformers.utils.generic.merge_with_config_defaults), turned
    off under gradient checkpointing in training mode with grad enabled."""
    import torch

    for key in ("past_key_values", "cache"):
        if kw.get(key) is not None:
            return True, f"a cache object is passed ({key}={type(kw[key]).__name__})"
    use = kw.get("use_cache")
    where = "use_cache=True in the forward call"
    if use is None:
        use = getattr(_config(model), "use_cache", None)
        where = "config.use_cache=True (the call does not pass use_cache; the model falls back to its config)"
    if not use:
        return False, ""
    ckpt = any(getattr(m, "gradient_checkpointing", False) for m in model.modules())
    if ckpt and model.training and torch.is_grad_enabled():
        return False, "use_cache is on but gradient checkpointing turns it off in training"
    return True, where


def read_batch(model: Any, kw: dict[str, Any], settings: GuardSettings) -> Batch:
    config = _config(model)
    ids = kw.get("input_ids")
    emb = kw.get("inputs_embeds")
    ref = ids if ids is not None else emb
    b, n = (int(ref.shape[0]), int(ref.shape[1])) if ref is not None and ref.dim() >= 2 else (1, 0)
    impl = getattr(config, "_attn_implementation", None)
    out = Batch(kw=kw, impl=impl, batch=b, length=n, separators=_separators(config, settings))
    mask = kw.get("attention_mask")
    out.mask = mask
    if mask is not None and hasattr(mask, "dim"):
        if mask.dim() == 4:
            out.mask_kind = "4d"
        elif mask.dim() == 2:
            if bd.segment_id_cuts(mask, n) is not None:
                out.mask_kind = "2d-segment-ids"
            else:
                out.mask_kind = "2d-ones" if bool((mask != 0).all()) else "2d-padding"
        else:
            out.mask_kind = "other"
    elif mask is not None:
        out.mask_kind = "other"  # a BlockMask (flex) or a dict of masks: not read
    out.cache_on, out.cache_why = _cache_state(model, kw)
    return out


def carriers(bt: Batch) -> tuple[dict[str, set[int]], set[int], list[str]]:
    """({carrier: cuts} for the strong carriers present, separator cuts, problems with the carriers)."""
    kw, n = bt.kw, bt.length
    got: dict[str, set[int]] = {}
    problems: list[str] = []
    mask2d = bt.mask if bt.mask_kind.startswith("2d") else None
    allowed = bd.allowed_from_mask(bt.mask) if bt.mask_kind == "4d" else None
    live = allowed.diagonal(dim1=-2, dim2=-1).long() if allowed is not None else mask2d  # padding is not a sample
    pos = bd.position_cuts(kw.get("position_ids"), bt.batch, n, live)
    if pos:
        got["position_ids"] = pos | bt.row_starts
    for key in ("cu_seq_lens_q", "cu_seq_lens_k"):
        if kw.get(key) is not None:
            got[key] = bd.cu_cuts(kw[key], bt.tokens)
    if kw.get("seq_idx") is not None:
        got["seq_idx"] = bd.seq_idx_cuts(kw["seq_idx"], n) | bt.row_starts
    if bt.mask_kind == "2d-segment-ids":
        got["attention_mask (sample numbers)"] = (bd.segment_id_cuts(bt.mask, n) or set()) | bt.row_starts
    if bt.mask_kind == "4d":
        cuts, problems = bd.mask4d_cuts(allowed, n)
        got["4-D attention_mask"] = cuts | bt.row_starts
    ids = kw.get("input_ids")
    seps = bd.separator_cuts(ids, bt.separators, mask2d) if ids is not None else set()
    p = kw.get("position_ids")
    if pos is None and p is not None and getattr(p, "dim", lambda: 0)() == 3 and p.shape[0] != 4:
        bt.notes.append(f"position_ids {list(p.shape)} are multimodal RoPE positions: not read as boundaries")
    return got, seps, problems


def flash_position_cuts(position_ids: Any, n: int) -> set[int]:
    """The flash path's own reading (prepare_fa_kwargs_from_position_ids): a sample starts wherever the
    position equals the smallest position of the (one-row) batch."""
    flat = position_ids.detach().to("cpu").reshape(-1)
    return {int(i) for i in (flat == flat.min()).nonzero().reshape(-1).tolist() if 0 < int(i) < n}


def honoured(bt: Batch, detection: bool) -> tuple[set[int] | None, str]:
    """(the cuts the attention path the model runs really keeps, how it gets them); None: not known."""
    kw, impl = bt.kw, bt.impl
    pos = kw.get("position_ids")
    if bt.mask_kind == "2d-segment-ids":
        return bt.row_starts, (
            f"{impl} with a 2-D attention_mask of sample numbers: transformers makes a 2-D mask boolean before "
            "any attention path reads it (masking_utils._preprocess_mask_arguments), so the numbers are lost "
            "(a patched _get_unpad_data, functionary-style, sees only 0/1); it keeps padding out, not samples apart"
        )
    if _is_flash(impl):
        if bt.mask_kind == "4d":
            return set(), f"{impl} with a 4-D attention_mask: the flash path unpads by a 2-D mask only"
        if bt.mask_kind in ("2d-padding", "other"):
            return bt.row_starts, (
                f"{impl} with a 2-D attention_mask that has padding: the flash path unpads by the mask and reads "
                "no sample boundaries (modeling_flash_attention_utils._upad_input)"
            )
        if all(kw.get(k) is not None for k in CU_KEYS):
            return bd.cu_cuts(kw["cu_seq_lens_q"], bt.tokens), f"{impl} reads cu_seq_lens_q/k (varlen kernel)"
        if pos is not None and bt.batch == 1 and pos.dim() == 2:
            return flash_position_cuts(pos, bt.length), f"{impl} derives cu_seqlens from the position_ids"
        if pos is not None and bt.batch > 1:
            return bt.row_starts, f"{impl}: position_ids are read as packed only when the batch is one row"
        return bt.row_starts, f"{impl}: neither cu_seq_lens_q/k with max_length_q/k nor restarting position_ids"
    if impl in MASK_BASED:
        if bt.mask_kind == "4d":
            return bd.mask4d_cuts(bd.allowed_from_mask(bt.mask), bt.length)[0] | bt.row_starts, (
                f"{impl} uses the 4-D attention_mask as given"
            )
        if pos is None:
            return bt.row_starts, f"{impl}: no position_ids and no 4-D mask; cu_seq_lens are read by flash kernels only"
        if not detection:
            return bt.row_starts, (
                f"{impl}: this transformers has no packed-sequence detection (masking_utils.find_packed_sequence_"
                "indices): position_ids do not cut samples apart"
            )
        if bt.mask_kind != "none":
            return bt.row_starts, (
                f"{impl} with a 2-D attention_mask: transformers looks for packed position_ids only when no "
                "attention_mask is passed (masking_utils._preprocess_mask_arguments), so the mask is plain causal"
            )
        if bt.cache_on:
            return bt.row_starts, (
                f"{impl} with a KV cache ({bt.cache_why}): transformers looks for packed position_ids only "
                "without a cache (masking_utils._preprocess_mask_arguments), so the mask is plain causal"
            )
        cuts = bd.position_cuts(pos, bt.batch, bt.length) or set()
        return cuts | bt.row_starts, f"{impl} builds a block-diagonal mask from the restarting position_ids"
    return None, f"attention implementation {impl!r}: the guard does not know which boundaries it reads"


def check_batch(model: Any, kw: dict[str, Any], settings: GuardSettings) -> GuardResult:
    """Every check on one forward call's arguments (no forward is run here)."""
    import transformers

    try:
        from transformers import masking_utils

        detection = hasattr(masking_utils, "find_packed_sequence_indices")
    except ImportError:
        detection = False
    bt = read_batch(model, kw, settings)
    r = GuardResult("transformers", type(model).__name__)
    r.facts = {
        "transformers": transformers.__version__,
        "attn_implementation": bt.impl,
        "packed_sequence_detection": detection,
        "batch": [bt.batch, bt.length],
        "attention_mask": bt.mask_kind,
        "kv_cache": bt.cache_why if bt.cache_on else False,
        "keys": sorted(k for k, v in kw.items() if v is not None),
        "training": bool(getattr(model, "training", False)),
    }
    if bt.length == 0:
        r.add("batch", INFO, "no input_ids or inputs_embeds [B, L] in the call: nothing to check")
        return r
    got, seps, problems = carriers(bt)
    r.facts["cuts"] = {k: sorted(v) for k, v in got.items()}
    r.facts["separator_cuts"] = sorted(seps)
    _check_cu(r, bt)
    for p in problems:
        r.add("4-D attention_mask", FAIL, p)
    samples = set().union(*got.values()) if got else set()
    weak = False
    disagree = {k: v for k, v in got.items() if v != samples}
    if disagree:
        told = "; ".join(f"{k} {bd.short(v - bt.row_starts)}" for k, v in got.items())
        r.add("carriers agree", FAIL, f"the batch's boundaries disagree: {told}")
    elif got:
        r.add("carriers agree", PASS, f"{', '.join(got)} give the same cuts {bd.short(samples - bt.row_starts)}")
    inner = samples - bt.row_starts
    for note in bt.notes:
        r.add("position_ids", WARN, note)
    if not inner and seps and bt.notes:
        r.add(
            "boundaries",
            WARN,
            f"separator token(s) {list(bt.separators)} mid-row at {bd.short(seps)}; unread {bt.notes[0]}",
        )
        r.add("attention path", WARN, "not decided: the batch's boundaries could not all be read")
        _check_cache(r, bt)
        return r
    if not inner and seps:
        samples, weak = seps | bt.row_starts, True
        r.add(
            "boundaries",
            FAIL,
            f"samples are concatenated without boundaries: separator token(s) {list(bt.separators)} end a sample "
            f"mid-row at {bd.short(seps)}, and no position_ids reset, cu_seq_lens or 4-D mask cuts them apart "
            "(a single multi-turn sample that ends each turn with this token looks the same: set "
            "PACKLINT_GUARD_SEPARATOR=none if so)",
            sorted(seps),
        )
    elif seps - samples and inner:
        r.add(
            "separators",
            WARN,
            f"separator token(s) {list(bt.separators)} mid-sample at {bd.short(seps - samples)} "
            "(a chat template's turn ends, or samples the carriers merge)",
        )
    _check_path(r, bt, detection, samples, weak)
    _check_cache(r, bt)
    r.facts["samples_row0"] = len([c for c in samples if c < bt.length]) + 1
    return r


def _check_cu(r: GuardResult, bt: Batch) -> None:
    from runtime_probe.static_checks import check_cu_seqlens

    ref = bt.kw.get("input_ids") if bt.kw.get("input_ids") is not None else bt.kw.get("inputs_embeds")
    device: Any = getattr(ref, "device", None)
    for key, ms in (("cu_seq_lens_q", "max_length_q"), ("cu_seq_lens_k", "max_length_k")):
        cu = bt.kw.get(key)
        if cu is None:
            continue
        checks = check_cu_seqlens(key, cu, bt.kw.get(ms), bt.tokens, cu.device if device is None else device)
        if bt.kw.get(ms) is None:
            checks = [c for c in checks if "max_seqlen" not in c.name]
        bad = [c for c in checks if c.status == FAIL]
        if bad:
            r.checks.extend(bad)
        else:
            r.add(f"{key}: shape, dtype, range", PASS, f"{len(checks)} checks: int32, 1-D, 0 .. {bt.tokens} increasing")


def _check_path(r: GuardResult, bt: Batch, detection: bool, samples: set[int], weak: bool) -> None:
    keeps, how = honoured(bt, detection)
    r.facts["attention_path"] = how
    inner = samples - bt.row_starts
    if not inner:
        r.add("attention path", PASS, f"not packed: one sample per row ({bt.batch} x {bt.length}); {how}")
        return
    if keeps is None:
        r.add("attention path", WARN, f"{how}; {len(inner) + bt.batch} samples in the batch")
        return
    lost = samples - keeps
    if lost:
        r.add(
            "attention path",
            FAIL,
            f"{how}: {len(lost)} of {len(inner)} sample boundaries are not kept ({bd.short(lost)}): packed samples "
            "attend each other",
            sorted(lost),
        )
    else:
        src = "separators" if weak else "the batch's boundaries"
        r.add("attention path", PASS, f"{how}: it keeps all {len(inner)} of {src} ({bt.impl})")


def _check_cache(r: GuardResult, bt: Batch) -> None:
    if bt.cache_on:
        r.add(
            "KV cache",
            WARN,
            f"a KV cache is on in training ({bt.cache_why}): it costs memory, and on sdpa/eager/flex it turns off "
            "transformers' packed-sequence detection (use_cache=False in training)",
        )
    elif bt.cache_why:
        r.add("KV cache", INFO, bt.cache_why)


# ---------------------------------------------------------------- the hook and the callback


def guard_call(model: Any, kw: dict[str, Any], settings: GuardSettings) -> None:
    """Check one forward call; measure if asked; report; raise GuardFailed in fail mode."""
    t = time.perf_counter()
    try:
        result = check_batch(model, kw, settings)
        if settings.measure:
            from packlint.guard.measure import measure_hf

            measure_hf(model, kw, result, settings)
    except Exception as exc:  # noqa: BLE001 - the guard's own failure never stops a training run
        say_unguarded(exc)
        return
    result.facts["guard_seconds"] = round(time.perf_counter() - t, 4)
    finish(result, settings)


def install_hf(model: Any, settings: GuardSettings | None = None) -> Any:
    """Register the one-shot forward pre-hook on `model`; returns its handle. The hook removes itself
    before it checks anything, so later steps pay nothing."""
    settings = settings or GuardSettings.from_env()
    if getattr(model, "_packlint_guard", None) is not None:
        return model._packlint_guard
    handle: Any = None

    def hook(module: Any, args: tuple, kwargs: dict) -> None:
        handle.remove()
        module._packlint_guard = None
        guard_call(module, _bound_kwargs(module, args, kwargs), settings)

    handle = model.register_forward_pre_hook(hook, with_kwargs=True)
    model._packlint_guard = handle
    return handle


class PackingGuard(TrainerCallback):
    """Add to any transformers Trainer (TRL's SFTTrainer, LLaMA-Factory's, axolotl's, ms-swift's):
    `Trainer(..., callbacks=[PackingGuard()])`. At train begin it hooks the model; the first forward's
    batch is checked before the first optimizer step. Settings default to the environment
    (PACKLINT_GUARD, PACKLINT_GUARD_REPORT, PACKLINT_GUARD_MEASURE)."""

    def __init__(self, mode: str | None = None, report: str | None = None, measure: bool | None = None) -> None:
        s = GuardSettings.from_env()
        self.settings = GuardSettings(
            mode=mode or s.mode,
            report=report if report is not None else s.report,
            measure=s.measure if measure is None else measure,
            separators=s.separators,
        )
        self.handle: Any = None

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if model is not None and self.handle is None:
            self.handle = install_hf(model, self.settings)
