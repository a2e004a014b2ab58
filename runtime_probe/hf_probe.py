"""The HF-stack probe: the installed transformers, a tiny random model of the configured architecture
(runtime_probe.hf_model), a row packed the way the stack's collator packs it, forwards with the
configured attention implementation, each sample's logits compared packed vs alone, and the sample x
sample leakage matrix (perturb each sample, measure every other sample's logits).

Exact verdicts: the verdict is computed in float64 (a run in another dtype is reported beside it), so
PROVEN means the leakage is exactly 0 or within a bound derived from float64 and the logits'
magnitude (`rounding_bound`), never a fixed tolerance. MoE experts run eager (per token).

Both use_cache settings are probed: with a cache, transformers' mask code skips packed-sequence
detection (masking_utils._preprocess_mask_arguments, `cache is None`). The stacks' training forwards
pass use_cache=False (TRL sft_trainer.py:1710, verl dp_actor.py:249, LLaMA-Factory
model_utils/kv_cache.py:40; the HF Trainer turns the cache off), so their verdict is the
use_cache=False one; a custom loop (`--stack transformers`) is judged on both.
"""

from __future__ import annotations

import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from runtime_probe.hf_model import (
    BuiltModel,
    build_model,
    cast_model,
    first_sentence,
    import_transformers,
    stack_versions,
)
from runtime_probe.hf_settings import MODE_TEXT, HFProbeSettings
from runtime_probe.report import FAIL, INFO, PASS, ProbeReport
from runtime_probe.settings import ProbeUsageError

__all__ = ["build_model", "pack", "run_hf_probe"]


# ---------------------------------------------------------------- packing as the collator does


@dataclass
class PackedRow:
    kwargs: dict  # what the collator hands the model: input_ids, position_ids, attention_mask
    bounds: list[tuple[int, int]]
    shapes: dict


def pack(mode: str, samples: list, dtype, device) -> PackedRow:
    """One row of the samples, packed the way `mode` says (hf_settings module docstring)."""
    import torch

    lengths = [int(x.shape[0]) for x in samples]
    bounds, a = [], 0
    for n in lengths:
        bounds.append((a, a + n))
        a += n
    ids = torch.cat(samples)[None].to(device)
    reset = torch.cat([torch.arange(n) for n in lengths])[None].to(device)
    kw: dict[str, Any] = {"input_ids": ids}
    if mode in ("position_ids", "position_ids+mask", "block4d"):
        kw["position_ids"] = reset
    if mode == "position_ids+mask":
        kw["attention_mask"] = torch.ones_like(ids)
    if mode == "concat":
        kw["attention_mask"] = torch.ones_like(ids)
    if mode == "block4d":
        # LLaMA-Factory prepare_4d_attention_mask (collator.py:93-125): sample indices 1, 1, 2, ...,
        # allowed = same index & causal -> 0.0, else finfo(dtype).min, shape [bsz, 1, T, T]
        idx = torch.cat([torch.full((n,), i + 1) for i, n in enumerate(lengths)])[None]
        allowed = (idx[:, None, None, :] == idx[:, None, :, None]) & torch.tril(
            torch.ones(len(idx[0]), len(idx[0]), dtype=torch.bool)
        )
        kw["attention_mask"] = torch.where(allowed, torch.tensor(0, dtype=dtype), torch.finfo(dtype).min).to(device)
    shapes = {k: list(v.shape) for k, v in kw.items()}
    return PackedRow(kw, bounds, shapes)


# ---------------------------------------------------------------- which layer leaks

# a token mixer that carries state along the row (Gated DeltaNet, Mamba, short convolutions), by its
# class name: Qwen3NextGatedDeltaNet, OlmoHybridGatedDeltaNet, BambaMixer, JambaMambaMixer,
# NemotronHMamba2Mixer, FalconH1Mixer, GraniteMoeHybridMambaLayer, Lfm2ShortConv ...
_RECURRENT = re.compile(r"Mamba|DeltaNet|ShortConv|LinearAttention|Mixer|Conv")
_NOT_RECURRENT = re.compile(r"(MoE|MLP|Moe|MoeBlock|Experts|Attention)$")


def is_recurrent(module) -> bool:
    name = type(module).__name__
    return bool(_RECURRENT.search(name)) and not _NOT_RECURRENT.search(name)


def decoder_layers(model) -> list:
    """The decoder's layers: the first ModuleList named `...layers` holding num_hidden_layers modules."""
    import torch

    cfg = getattr(model.config, "text_config", None) or model.config
    n = getattr(cfg, "num_hidden_layers", None)
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and name.endswith("layers") and len(mod) == n:
            return list(mod)
    return []


def _layer_modules(model) -> list[tuple[int, str, Any, str]]:
    """(layer index, child name, child module, layer kind) for each non-norm child of each decoder layer."""
    kinds = getattr(getattr(model.config, "text_config", None) or model.config, "layer_types", None)
    out = []
    for i, layer in enumerate(decoder_layers(model)):
        kind = kinds[i] if isinstance(kinds, list) and i < len(kinds) else type(layer).__name__
        for name, child in layer.named_children():
            if "norm" not in name.lower() and not isinstance(child, type(None)):
                out.append((i, name, child, str(kind)))
    return out


def _first_tensor(x):
    import torch

    if isinstance(x, torch.Tensor):
        return x
    if isinstance(x, (tuple, list)):
        return next((y for y in x if isinstance(y, torch.Tensor)), None)
    return getattr(x, "last_hidden_state", None)


def trace_layers(model, forward, packed_kwargs: dict, bounds, samples, device) -> list[dict]:
    """Which module of which layer mixes samples, each measured on its own: one packed forward records
    every module's input and output; then each sample runs alone with every module's input replaced by
    that sample's slice of the module's packed input. A module isolates the samples when its output
    alone equals the slice of its packed output (whatever the layers before it did). Per module:
    {"layer", "module", "class", "kind", "recurrent", "own_leak"} (max over samples after the first)."""
    modules = _layer_modules(model)
    packed: dict[int, list] = {}

    def record_in(j, x):
        packed[j] = [x.detach().clone() if x is not None else None, None]

    def record_out(j, y):
        packed[j][1] = y

    _hooked(modules, lambda j, x: record_in(j, x), record_out, lambda: forward(**packed_kwargs))
    own = [0.0] * len(modules)
    for s_i, (a, b) in enumerate(bounds):
        if s_i == 0:
            continue  # the first sample has nothing before it to leak from
        got: dict[int, Any] = {}

        def replace(j, x, a=a, b=b):
            x = packed[j][0]
            return x[:, a:b] if x is not None and x.dim() >= 2 and x.shape[1] >= b else None

        _hooked(modules, replace, got.__setitem__, lambda s_i=s_i: forward(input_ids=samples[s_i][None].to(device)))
        for j in range(len(modules)):
            ref, y = packed[j][1], got.get(j)
            if ref is None or y is None or ref.dim() < 2 or ref.shape[1] < b or y.shape[1] != b - a:
                continue
            own[j] = max(own[j], float((ref[:, a:b].float() - y.float()).abs().max()))
    return [
        {
            "layer": i,
            "module": name,
            "class": type(mod).__name__,
            "kind": kind,
            "recurrent": is_recurrent(mod),
            "own_leak": own[j],
        }
        for j, (i, name, mod, kind) in enumerate(modules)
    ]


def _hooked(modules, on_input, on_output, run) -> None:
    """Run `run()` with every module hooked: on_input(j, x) sees module j's hidden_states and may
    return a replacement; on_output(j, y) sees its output's first tensor."""
    handles = []

    def hooks(j):
        def pre(mod, args, kwargs):
            x = on_input(j, args[0] if args else kwargs.get("hidden_states"))
            if x is None:
                return None
            return ((x, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": x})

        def post(mod, args, kwargs, output):
            on_output(j, _first_tensor(output))

        return pre, post

    try:
        for j, (_, _, mod, _) in enumerate(modules):
            pre, post = hooks(j)
            handles.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
            handles.append(mod.register_forward_hook(post, with_kwargs=True))
        run()
    finally:
        for h in handles:
            h.remove()


def _fast_kernels() -> str:
    """Which optional linear-attention / state-space kernel packages are importable (none on a plain install)."""
    import importlib.util

    have = [m for m in ("fla", "causal_conv1d", "mamba_ssm") if importlib.util.find_spec(m) is not None]
    return ", ".join(have) if have else "none of fla, causal_conv1d, mamba_ssm (transformers' torch fallbacks run)"


@contextmanager
def _uncompiled_flex(attn: str, active: bool = True):
    """transformers compiles flex_attention on first use. Uncompiled here: the same flex_attention call,
    BlockMask and all. On CPU the whole probe runs so (torch 2.13's inductor CPU flex kernel is not
    trusted here, docs/probe.md: wrong rows from run to run; compiling costs ~15-30 s). On CUDA the
    requested dtype's run is the compiled kernel's and the float64 runs are uncompiled: the compiled
    kernel's float64 runs errored (seen on an H200, torch 2.11), which left flex's verdict UNDECIDED."""
    if attn != "flex_attention" or not active:
        yield False
        return
    import warnings

    import transformers.integrations.flex_attention as tfa
    from torch.nn.attention.flex_attention import flex_attention

    wrapped = tfa.WrappedFlexAttention
    saved = wrapped.__call__
    wrapped.__call__ = lambda self: flex_attention
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "flex_attention called without torch.compile()"
            yield True
    finally:
        wrapped.__call__ = saved


# ---------------------------------------------------------------- measuring

# A change this many units in the last place of the largest logit is rounding (a sum taken in another
# order: a matmul over a different number of rows, experts gathering different tokens); anything
# larger is a leak. float64: 2.3e-13 x max|logit|. Eager attention takes its softmax in float32
# (modeling_llama.eager_attention_forward, `softmax(..., dtype=torch.float32)`), so packed vs alone is
# bounded by float32's unit there; the leakage keeps float64's (masked scores are exactly 0 after it).
ROUNDING_ULPS = 1024
# without a float64 run (flash-attn kernels have none), only a leak this many ulps of the largest logit
# in the requested dtype is called a LEAK; below it the probe says UNDECIDED, never PROVEN
LOW_PRECISION_LEAK_ULPS = 16


def rounding_bounds(dtype, scale: float, attn: str) -> tuple[float, float]:
    """(leakage bound, packed-vs-alone bound) for a run in `dtype` whose largest |logit| is `scale`."""
    import torch

    eps = float(torch.finfo(dtype).eps)
    eps_alone = max(eps, float(torch.finfo(torch.float32).eps)) if attn == "eager" else eps
    return ROUNDING_ULPS * eps * scale, ROUNDING_ULPS * eps_alone * scale


@dataclass
class Measurement:
    """One setting's numbers: (i) per sample, the leakage matrix, the rounding bounds."""

    dtype: str
    use_cache: bool
    per_sample: list[float]
    scale: float
    mean_abs: float
    matrix: list[list[float]]
    leak_bound: float
    alone_bound: float
    error: str | None = None  # the forward raised: this setting could not be measured

    @property
    def leak(self) -> float:
        return max((x for i, row in enumerate(self.matrix) for j, x in enumerate(row) if i != j), default=0.0)

    @property
    def worst_pair(self) -> tuple[int, int]:
        cells = [(x, i, j) for i, row in enumerate(self.matrix) for j, x in enumerate(row) if i != j]
        _, i, j = max(cells) if cells else (0.0, 0, 0)
        return i, j

    @property
    def max_error(self) -> float:
        return max(self.per_sample, default=0.0)

    @property
    def verdict(self) -> str:
        if self.error:
            return "undecided"
        if self.leak > self.leak_bound:
            return "leak"
        return "differs" if self.max_error > self.alone_bound else "proven"

    def summary(self) -> str:
        if self.error:
            return f"could not run: {self.error}"
        i, j = self.worst_pair
        where = f"{self.leak:.3g} (sample {i} -> sample {j})" if self.leak else "exactly 0"
        return (
            f"{self.verdict.upper()}: leakage {where}, "
            f"max |packed - alone| {self.max_error:.3g} (bounds {self.leak_bound:.2g}, {self.alone_bound:.2g})"
        )


def measure(model, s: HFProbeSettings, samples, perturbed, dtype, device, use_cache: bool) -> Measurement:
    """Packed vs alone per sample, and each sample perturbed in turn (every sample, the last too: an
    anti-causal leak shows as well) with every sample's largest logit change: the matrix."""
    import torch

    def forward(**kw):
        return model(**kw, use_cache=use_cache).logits[0].to(torch.float64)

    name = str(dtype).replace("torch.", "")
    row = pack(s.mode, samples, dtype, device)
    try:
        out = forward(**row.kwargs)
        alone = [forward(input_ids=x[None].to(device)) for x in samples]
    except Exception as exc:  # noqa: BLE001 - e.g. float64 on a kernel without it: reported, not a traceback
        return Measurement(name, use_cache, [], 0.0, 0.0, [], 0.0, 0.0, f"{type(exc).__name__}: {first_sentence(exc)}")
    per = [float((out[a:b] - y).abs().max()) for (a, b), y in zip(row.bounds, alone, strict=True)]
    scale = max([float(out.abs().max())] + [float(y.abs().max()) for y in alone])
    n = len(samples)
    matrix = [[0.0] * n for _ in range(n)]
    for i in range(n):
        moved = list(samples)
        moved[i] = perturbed[i]
        diff = (forward(**pack(s.mode, moved, dtype, device).kwargs) - out).abs().amax(dim=-1)
        for j, (a, b) in enumerate(row.bounds):
            matrix[i][j] = float(diff[a:b].max())
    lb, ab = rounding_bounds(dtype, scale, s.attn_implementation)
    return Measurement(name, use_cache, per, scale, float(out.abs().mean()), matrix, lb, ab)


# ---------------------------------------------------------------- the probe

_SEVERITY = {"leak": 3, "differs": 2, "undecided": 1, "proven": 0}


def judged_cache_settings(s: HFProbeSettings) -> tuple[list[bool], str]:
    """The use_cache settings the verdict covers, and why."""
    if s.use_cache == "false":
        return [False], "use_cache=False (--use-cache false)"
    if s.use_cache == "true":
        return [True], "use_cache=True (--use-cache true)"
    if s.use_cache == "both" or s.stack == "transformers":
        why = "--use-cache both" if s.use_cache == "both" else "a custom loop may keep the config's use_cache=True"
        return [False, True], f"use_cache=False and True ({why})"
    return [False], (
        f"use_cache=False ({s.stack}'s training forward turns the KV cache off: TRL sft_trainer.py:1710, "
        "verl dp_actor.py:249, LLaMA-Factory kv_cache.py:40, the HF Trainer)"
    )


def _resolve_dtype(torch, name: str, device):
    """auto: float64 on CPU (the verdict's own dtype); bfloat16 on CUDA, as the stacks train."""
    if name == "auto":
        return torch.float64 if device.type == "cpu" else torch.bfloat16
    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}[
        name
    ]


def _measure_all(built: BuiltModel, s, samples, perturbed, requested, device) -> tuple[Measurement | None, dict]:
    """(the requested dtype's run when it is not float64, {use_cache: float64 measurement})."""
    import torch

    model = built.model
    low = None
    if requested != torch.float64:
        low = measure(model, s, samples, perturbed, requested, device, judged_cache_settings(s)[0][0])
        if low.error:
            raise ProbeUsageError(f"{s.attn_implementation} forward failed on the packed row ({s.mode}): {low.error}")
        try:
            cast_model(model, torch.float64)
        except Exception as exc:  # noqa: BLE001
            err = f"{type(exc).__name__}: {first_sentence(exc)}"
            return low, {uc: Measurement("float64", uc, [], 0, 0, [], 0, 0, err) for uc in (False, True)}
    with _uncompiled_flex(s.attn_implementation, device.type != "cpu"):  # on CPU the caller's already is
        exact = {uc: measure(model, s, samples, perturbed, torch.float64, device, uc) for uc in (False, True)}
    if low is None and exact[False].error and exact[True].error:
        raise ProbeUsageError(
            f"{s.attn_implementation} forward failed on the packed row ({s.mode}): {exact[False].error}"
        )
    return low, exact


def run_hf_probe(s: HFProbeSettings) -> ProbeReport:
    """Probe one HF-stack configuration. PROVEN: in float64, perturbing any sample moves no other
    sample's logits beyond rounding, and each sample's logits packed equal its logits alone. LEAK:
    samples see each other. DIFFERS: packed differs from alone without any leakage. UNDECIDED: no exact
    rerun. Raises ProbeUsageError (exit 2) for what cannot run here."""
    s.validate()
    timings: dict[str, float] = {}
    t = time.perf_counter()
    torch, transformers = import_transformers()
    timings["import torch+transformers"] = time.perf_counter() - t
    from runtime_probe.probe import attention_work, resolve_device

    device = resolve_device(s.device)
    requested = _resolve_dtype(torch, s.dtype, device)
    lengths = s.true_lengths()
    r = ProbeReport(settings=s.to_json(), backend=s.attn_implementation, device=str(device))
    r.dtype = "float64" if requested == torch.float64 else f"{str(requested).replace('torch.', '')} (verdict: float64)"
    r.lengths, r.tokens = lengths, sum(lengths)
    r.versions = stack_versions()
    r.notes.extend(s.notes)
    r.pipeline.append(f"stack: {s.stack}; collator: {MODE_TEXT[s.mode]} ({s.mode})")
    if s.mode == "none":
        r.verdict = "not-packed"
        r.pipeline.append("no packing switch is on: each sample is its own row; nothing to prove")
        r.timings_s = timings
        return r
    t = time.perf_counter()
    built = build_model(s, device, requested)
    timings["build model"] = time.perf_counter() - t
    r.notes.extend(built.notes)
    r.work = attention_work(lengths)
    gen = torch.Generator().manual_seed(s.seed)
    # never a VLM's image/video placeholder (mistral3's image token is 10): text samples only
    special = _special_ids(built.model.config)
    allowed = torch.tensor([i for i in range(s.vocab) if i not in special])
    picks = [torch.randint(0, len(allowed), (n,), generator=gen) for n in lengths]
    samples = [allowed[p] for p in picks]
    k = len(allowed)
    perturbed = [allowed[(p + 1 + torch.randint(0, k - 1, p.shape, generator=gen)) % k] for p in picks]
    row = pack(s.mode, samples, requested, device)
    r.shapes = row.shapes
    r.pipeline.append("the model's attention mask: " + _MASK_TEXT[s.mode])
    r.pipeline.append(
        f"packed {len(lengths)} samples into one row of {sum(lengths)} tokens: "
        + ", ".join(f"{k} {v}" for k, v in row.shapes.items())
    )
    on_cpu = device.type == "cpu"
    with _uncompiled_flex(s.attn_implementation, on_cpu) as eager_flex, torch.no_grad():
        r.backend_detail = built.desc + ("; flex_attention run uncompiled on CPU" if eager_flex else "")
        if s.attn_implementation == "flex_attention" and not on_cpu:
            r.backend_detail += "; the float64 runs call flex_attention uncompiled (the same call and BlockMask)"
        t = time.perf_counter()
        low, exact = _measure_all(built, s, samples, perturbed, requested, device)
        timings["forward + verify"] = time.perf_counter() - t
        _decide(r, s, built, low, exact, row.bounds)
        judged = _judged(s, exact)
        if judged and (_has_recurrent(built.model) or judged.verdict == "leak"):
            t = time.perf_counter()
            with _uncompiled_flex(s.attn_implementation, not on_cpu):  # the model is float64 by now
                _per_layer(r, built, s, judged, samples, device)
            timings["per layer"] = time.perf_counter() - t
    r.timings_s = timings
    return r


def _special_ids(config) -> set[int]:
    """Token ids the config reserves (`image_token_id`, `video_token_index`, ...), top level and text."""
    out: set[int] = set()
    for cfg in (config, getattr(config, "text_config", None)):
        for key, value in (cfg.to_dict() if cfg is not None else {}).items():
            if key.endswith(("_token_id", "_token_index")) and isinstance(value, int) and not isinstance(value, bool):
                out.add(value)
    return out


_MASK_TEXT = {
    "position_ids": "none passed; transformers builds it from the restarting position_ids",
    "position_ids+mask": "the 2-D mask of ones; transformers then builds the mask without the restarting "
    "position_ids (they still reach RoPE)",
    "block4d": "the collator's 4-D mask, used as given",
    "concat": "the 2-D mask of ones: plain causal over the whole row",
}


def _judged(s: HFProbeSettings, exact: dict) -> Measurement | None:
    """The measurement the verdict rests on: the worst of the judged use_cache settings."""
    ms = [exact[uc] for uc in judged_cache_settings(s)[0] if not exact[uc].error]
    return max(ms, key=lambda m: _SEVERITY[m.verdict]) if ms else None


def _verdict(s: HFProbeSettings, low: Measurement | None, exact: dict) -> str:
    """The worst verdict over the judged use_cache settings (float64); without any float64 run, LEAK
    only when the requested dtype's leak is beyond its own rounding bound, else UNDECIDED."""
    settings, _ = judged_cache_settings(s)
    if all(exact[uc].error for uc in settings) and low is not None:
        import torch

        # a leak of more than LOW_PRECISION_LEAK_ULPS units in the last place of the largest logit is
        # no reordered sum (those move a logit by a few ulps); anything under it cannot be decided
        eps = float(torch.finfo(getattr(torch, low.dtype)).eps)
        return "leak" if low.leak > LOW_PRECISION_LEAK_ULPS * eps * low.scale else "undecided"
    return max((exact[uc].verdict for uc in settings), key=lambda v: _SEVERITY[v])


def _headline(verdict: str, m: Measurement | None, low: Measurement | None, cache: str) -> str:
    if m is None:
        m = low
    assert m is not None
    i, j = m.worst_pair
    if verdict == "leak":
        return (
            f"LEAK: packed samples see each other: leakage {m.leak:.3g} (changing sample {i} moves sample {j}), "
            f"max |packed - alone| = {m.max_error:.3g} [{m.dtype}, {cache}]"
        )
    if verdict == "differs":
        return (
            f"DIFFERS: packed differs from alone, but the samples do not see each other: max |packed - alone| = "
            f"{m.max_error:.3g}, leakage {m.leak:.3g} [{m.dtype}, {cache}] (positions, a sliding window or another "
            "per-token mask the packed row does not keep)"
        )
    if verdict == "undecided":
        why = m.error or "no float64 rerun"
        return (
            f"UNDECIDED: no exact (float64) verdict: {why}; the {m.dtype} run leaks {m.leak:.3g}, within its rounding"
        )
    leak = "exactly 0" if m.leak == 0 else f"{m.leak:.2g}, within rounding (bound {m.leak_bound:.2g})"
    return f"PROVEN: packed samples cannot see each other: leakage {leak}, packed == alone [{m.dtype}, {cache}]"


def _decide(r: ProbeReport, s: HFProbeSettings, built: BuiltModel, low, exact: dict, bounds) -> None:
    settings, why = judged_cache_settings(s)
    cache = " and ".join(f"use_cache={uc}" for uc in settings)
    judged = _judged(s, exact)
    m = judged or low
    assert m is not None
    r.verdict = _verdict(s, low, exact)
    r.headline = _headline(r.verdict, judged, low, cache)
    errored = [exact[uc] for uc in settings if exact[uc].error]
    if r.verdict == "undecided" and errored and judged is not None:
        e = errored[0]
        r.headline = (
            f"UNDECIDED: the float64 run with use_cache={e.use_cache} could not run ({e.error}); "
            f"with use_cache={judged.use_cache}: {judged.summary()}"
        )
    r.add("forward", PASS, f"{s.attn_implementation} forwards: the packed row, each sample alone, each sample changed")
    if judged is not None:
        ok_i = judged.max_error <= judged.alone_bound
        worst = max(range(len(judged.per_sample)), key=lambda k: judged.per_sample[k])
        r.add(
            "(i) packed == each sample alone",
            PASS if ok_i else FAIL,
            f"max |logits packed - alone| = {judged.max_error:.3g} over {len(bounds)} samples (bound "
            f"{judged.alone_bound:.2g}: {ROUNDING_ULPS} ulps of max |logit| {judged.scale:.3g} in {judged.dtype}"
            + (", float32 softmax" if s.attn_implementation == "eager" else "")
            + ")"
            + ("" if ok_i else f"; worst: sample {worst} [{bounds[worst][0]}, {bounds[worst][1]})"),
            {"max_error": judged.max_error, "tolerance": judged.alone_bound, "per_sample": judged.per_sample},
        )
        i, j = judged.worst_pair
        ok_ii = judged.leak <= judged.leak_bound
        detail = (
            "changing any sample's tokens moves no other sample's logits: exactly 0"
            if judged.leak == 0
            else f"changing sample {i} moves sample {j}'s logits by {judged.leak:.3g} (bound {judged.leak_bound:.2g}"
            + (": rounding only)" if ok_ii else ")")
        )
        r.add("(ii) leakage", PASS if ok_ii else FAIL, detail, judged.leak)
    for uc in (False, True):
        e = exact[uc]
        judged_here = uc in settings
        status = INFO if not judged_here or e.verdict == "proven" else FAIL if e.verdict != "undecided" else INFO
        if judged_here and len(settings) == 1:
            continue
        label = "judged" if judged_here else f"not judged: {s.stack} trains without a cache"
        r.add(f"use_cache={uc} ({label})", status, f"float64: {e.summary()}", e.verdict)
    if low is not None:
        r.add(f"{low.dtype} run (requested)", INFO, low.summary() + "; not the verdict (float64 decides)", low.verdict)
    r.leakage = {
        "abs": m.leak,
        "rel": m.leak / m.mean_abs if m.mean_abs else float("inf"),
        "mean_abs_output": m.mean_abs,
        "bound": m.leak_bound,
        "matrix": m.matrix,
        "matrix_dtype": m.dtype,
        "use_cache": m.use_cache,
        "per_perturbed": [
            {"perturbed": i, "max_change": max((x for j, x in enumerate(row) if j != i), default=0.0)}
            for i, row in enumerate(m.matrix)
        ],
    }
    attn = "attention-free (built without attn_implementation)" if built.attention_free else s.attn_implementation
    r.assumptions = [
        f"dtype: the verdict in float64 on {r.device}"
        + (f" (the requested {low.dtype} run is shown beside it)" if low is not None else ""),
        f"use_cache: {why}",
        f"attention: {attn}" + (f"; MoE experts: {built.experts}" if built.experts else ""),
        f"config: {built.source}; class {type(built.model).__name__}",
    ]
    _notes(r, s, exact)


def _notes(r: ProbeReport, s: HFProbeSettings, exact: dict) -> None:
    if s.mode == "position_ids+mask" and exact[False].verdict == "leak":
        r.notes.append(
            "transformers detects packed position_ids only when no attention_mask is passed "
            "(masking_utils._preprocess_mask_arguments); a 2-D mask of ones turns the detection off"
        )
    if exact[True].verdict == "leak" and exact[False].verdict != "leak":
        r.notes.append(
            "with use_cache=True (a KV cache is created) transformers skips packed-sequence detection "
            "(masking_utils._preprocess_mask_arguments: `cache is None`): a loop that keeps the config's "
            "use_cache=True leaks where use_cache=False isolates"
        )
    if exact[False].verdict == "leak" and s.mode in ("position_ids", "block4d"):
        r.notes.append(
            "the attention mask isolates the samples in this mode, unless the model builds its own (a VLM's "
            "3-D rope positions): a linear-attention / recurrent / convolution layer (Gated DeltaNet, Mamba, "
            "short conv) carries state across the packed boundaries unless given cu_seqlens "
            "(packing-stacks.md row 10), and a multimodal wrapper may drop the packed position_ids"
        )


def _has_recurrent(model) -> bool:
    return any(is_recurrent(m) for layer in decoder_layers(model) for _, m in layer.named_children())


def _per_layer(r: ProbeReport, built: BuiltModel, s: HFProbeSettings, judged: Measurement, samples, device) -> None:
    import torch

    model = built.model
    layers = decoder_layers(model)
    if not layers:
        return

    def forward(**kw):
        return model(**kw, use_cache=judged.use_cache).logits[0].to(torch.float64)

    float_row = pack(s.mode, samples, torch.float64, device)
    trace = trace_layers(model, forward, float_row.kwargs, float_row.bounds, samples, device)
    tol = judged.alone_bound
    mixing = [d for d in trace if d["own_leak"] > tol]
    where = "; ".join(
        f"layer {d['layer']} {d['module']} ({d['class']}, {d['kind']}): {d['own_leak']:.3g}" for d in mixing
    )
    rest = max((d["own_leak"] for d in trace if d["own_leak"] <= tol), default=0.0)
    r.add(
        "(iii) per layer",
        FAIL if mixing else PASS,
        (
            f"the modules that mix samples, each fed its own packed input: {where}; every other module "
            f"isolates (max {rest:.2g})"
            if mixing
            else f"every module of every layer isolates the samples when fed its packed input (max {rest:.2g})"
        ),
        trace,
    )
    recurrent = [type(m).__name__ for layer in layers for _, m in layer.named_children() if is_recurrent(m)]
    if recurrent:
        r.notes.append(
            f"recurrent / linear-attention layers: {', '.join(dict.fromkeys(recurrent))}; "
            f"fast kernels installed: {_fast_kernels()}"
        )
