"""The HF-stack probe: the installed transformers, a tiny random model of the configured architecture,
a row packed the way the stack's collator packs it, one forward with the configured attention
implementation, and each sample's logits compared packed vs alone.

Nothing is downloaded: the architecture comes from a local config.json read as JSON, or from the
model type named, or is Llama; HF_HUB_OFFLINE=1 is set before transformers is imported. Every forward
passes use_cache=False, as the stacks' training forwards do (TRL sft_trainer.py:1710, verl
dp_actor.py:249, LLaMA-Factory model_utils/kv_cache.py:40): with a cache, transformers' mask code
skips packed-sequence detection (masking_utils._preprocess_mask_arguments, `cache is None`).
"""

from __future__ import annotations

import os
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from runtime_probe.hf_settings import MODE_TEXT, HFProbeSettings, read_local_config
from runtime_probe.report import FAIL, PASS, ProbeReport, check_packed_vs_alone
from runtime_probe.settings import ProbeUsageError

INSTALL_HINT = "pip install 'packlint[probe] @ git+https://github.com/packlint/packlint'"
FLASH = ("flash_attention_2", "flash_attention_3")


def _import_transformers():
    os.environ["HF_HUB_OFFLINE"] = "1"  # never download anything, whatever the model path says
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    try:
        import torch
    except ImportError:
        from runtime_probe.probe import TorchMissing

        raise TorchMissing(f"the probe needs torch: {INSTALL_HINT}") from None
    try:
        import transformers
    except ImportError:
        from runtime_probe.probe import TorchMissing

        raise TorchMissing(f"the HF-stack probe needs transformers: {INSTALL_HINT}") from None
    transformers.logging.set_verbosity_error()
    return torch, transformers


# ---------------------------------------------------------------- the tiny model


def _guess_type(name: str, known: list[str]) -> str | None:
    """`Qwen/Qwen2.5-0.5B` -> qwen2: the longest model type whose name (without _ and -) is in the
    hub id's last part. Only a guess, so the report says so."""
    base = name.rstrip("/").split("/")[-1].lower().replace("-", "").replace("_", "").replace(".", "")
    hits = [k for k in known if len(k) > 2 and k.replace("_", "").replace("-", "") in base]
    return max(hits, key=len) if hits else None


def resolve_architecture(s: HFProbeSettings, known: list[str]) -> tuple[str, dict, str]:
    """(model_type, config dict, where it came from): local config.json, the model type named, a
    guess from the hub id's name, else llama. Never a download."""
    local = read_local_config(s.model_path)
    if local is not None:
        mt = local.get("model_type")
        if not isinstance(mt, str) or mt not in known:
            raise ProbeUsageError(
                f"{s.model_path}/config.json: model_type {mt!r} is not one the installed transformers knows"
            )
        return mt, dict(local), f"{s.model_path}/config.json (model_type {mt})"
    if s.model_type:
        mt = s.model_type.lower()
        if mt not in known:
            guessed = _guess_type(mt, known)
            if guessed is None:
                raise ProbeUsageError(f"model_type {s.model_type!r} is not one the installed transformers knows")
            mt = guessed
        return mt, {}, f"model_type {s.model_type}"
    if s.model_path:
        guessed = _guess_type(s.model_path, known)
        if guessed:
            return guessed, {}, f"model type {guessed}, guessed from the name {s.model_path!r} (not downloaded)"
        return "llama", {}, f"llama (nothing known about {s.model_path!r}; it is not downloaded)"
    return "llama", {}, "llama (no model given)"


_DROP = (
    "quantization_config",
    "torch_dtype",
    "dtype",
    "auto_map",
    "architectures",
    "_name_or_path",
    "transformers_version",
)


def tiny_config(transformers, model_type: str, data: dict, s: HFProbeSettings):
    """The architecture's own config class, shrunk to tiny sizes (layers, width, heads, vocabulary)."""
    from transformers import CONFIG_MAPPING

    data = {k: v for k, v in data.items() if k not in _DROP}
    if isinstance(data.get("text_config"), dict) and data["text_config"].get("model_type") in CONFIG_MAPPING:
        # a multimodal checkpoint: its language model is what packs
        data = {k: v for k, v in data["text_config"].items() if k not in _DROP}
        model_type = data["model_type"]
    cls = CONFIG_MAPPING[model_type]
    try:
        defaults = cls().to_dict()  # what the class fills in: a checkpoint-free model type is all defaults
    except Exception:  # noqa: BLE001 - a class that needs arguments: shrink what the checkpoint names
        defaults = {}
    known = {**defaults, **data}
    head_dim = s.hidden // s.heads
    kv = known.get("num_key_value_heads")
    heads = known.get("num_attention_heads")
    kv_heads = s.heads if not kv or not heads or kv >= heads else max(1, s.heads // 2)
    tiny: dict[str, Any] = {
        "num_hidden_layers": s.layers,
        "hidden_size": s.hidden,
        "intermediate_size": 2 * s.hidden,
        "num_attention_heads": s.heads,
        "num_key_value_heads": kv_heads,
        "head_dim": head_dim,
        "vocab_size": s.vocab,
        "max_position_embeddings": max(int(known.get("max_position_embeddings") or 0), 4 * 64),
        "use_cache": False,
        "pad_token_id": None,
        "bos_token_id": None,
        "eos_token_id": None,
    }
    for key, value in known.items():
        if not isinstance(value, int) or isinstance(value, bool) or key in tiny:
            continue
        if key.endswith("intermediate_size"):  # moe_, shared_expert_ ...
            tiny[key] = s.hidden
        elif key in ("num_experts", "num_local_experts", "n_routed_experts"):
            tiny[key] = min(value, 4) if value else value
        elif key == "num_experts_per_tok":
            tiny[key] = min(value, 2) if value else value
        elif key.endswith("head_dim") and value > head_dim:  # linear_key_head_dim, qk_rope_head_dim ...
            tiny[key] = head_dim
        elif key.startswith("linear_num_") and key.endswith("heads"):  # gated delta net heads
            tiny[key] = min(value, s.heads)
    if isinstance(known.get("layer_types"), list) and known["layer_types"]:
        # one layer of each kind the architecture mixes (linear and full attention, sliding and full)
        kinds = list(dict.fromkeys(known["layer_types"]))
        tiny["layer_types"] = (kinds + [kinds[-1]] * s.layers)[: max(s.layers, 1)]
        if len(kinds) > s.layers:
            tiny["layer_types"] = kinds[: s.layers]
    if "max_window_layers" in known:
        tiny["max_window_layers"] = s.layers
    data.update(tiny)
    try:
        cfg = cls(**{k: v for k, v in data.items() if k != "model_type"})
    except Exception as exc:  # noqa: BLE001 - a config the class rejects is one line, not a traceback
        raise ProbeUsageError(f"cannot build a tiny {model_type} config: {type(exc).__name__}: {exc}") from None
    return model_type, cfg


@contextmanager
def _eager_flex_on_cpu(attn: str, device):
    """transformers compiles flex_attention on first use; torch 2.13's inductor CPU flex kernel is not
    trusted here (docs/probe.md: wrong rows from run to run) and compiling costs ~15-30 s. On CPU the
    probe runs the same flex_attention call, BlockMask and all, uncompiled; on CUDA it runs as is."""
    if attn != "flex_attention" or device.type != "cpu":
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


def _first_sentence(exc: BaseException, limit: int = 240) -> str:
    """An exception's message as one short line: its first line, cut at the first sentence end."""
    first = (str(exc).strip().splitlines() or [""])[0]
    cut = first.find(". ")
    first = first[: cut + 1] if 0 < cut < limit else first
    return first if len(first) <= limit else first[: limit - 3] + "..."


def build_model(s: HFProbeSettings, device, dtype):
    """(model, description). Raises ProbeUsageError when the architecture or the attention
    implementation cannot be built here (flash-attn missing, no CUDA, unknown type)."""
    torch, transformers = _import_transformers()
    from transformers import CONFIG_MAPPING, AutoModelForCausalLM

    known = list(CONFIG_MAPPING.keys())
    mt, data, where = resolve_architecture(s, known)
    mt, cfg = tiny_config(transformers, mt, data, s)
    if s.attn_implementation in FLASH and device.type != "cuda":
        raise ProbeUsageError(
            f"attn_implementation {s.attn_implementation} needs a CUDA GPU and flash-attn; on this machine "
            "probe the same collator on another implementation (--attn-implementation sdpa)"
        )
    torch.manual_seed(s.seed)
    try:
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation=s.attn_implementation)
    except Exception as exc:  # noqa: BLE001 - ImportError for flash-attn, ValueError for an unknown name
        first = _first_sentence(exc)
        raise ProbeUsageError(
            f"attn_implementation {s.attn_implementation!r} cannot run here on {mt}: {type(exc).__name__}: {first}"
        ) from None
    model = model.to(device=device, dtype=dtype).eval()
    n = sum(p.numel() for p in model.parameters())
    desc = (
        f"transformers {transformers.__version__} {type(model).__name__} from {where}; tiny random: "
        f"{s.layers} layers, hidden {s.hidden}, {s.heads} heads, vocab {s.vocab}, {n:,} parameters"
    )
    return model, desc


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

    n = getattr(model.config, "num_hidden_layers", None)
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and name.endswith("layers") and len(mod) == n:
            return list(mod)
    return []


def _layer_modules(model) -> list[tuple[int, str, Any, str]]:
    """(layer index, child name, child module, layer kind) for each non-norm child of each decoder layer."""
    kinds = getattr(model.config, "layer_types", None)
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


# ---------------------------------------------------------------- the probe


def run_hf_probe(s: HFProbeSettings) -> ProbeReport:
    """Probe one HF-stack configuration. PROVEN: each sample's logits packed equal its logits alone
    (within the dtype's tolerance) and perturbing one sample changes no other's by exactly 0. LEAK:
    the numbers. Raises ProbeUsageError (exit 2) for what cannot run here."""
    s.validate()
    timings: dict[str, float] = {}
    t = time.perf_counter()
    torch, transformers = _import_transformers()
    timings["import torch+transformers"] = time.perf_counter() - t
    from runtime_probe.backends import default_tolerance
    from runtime_probe.probe import attention_work, resolve_device, resolve_dtype

    device = resolve_device(s.device)
    dtype = resolve_dtype(s.dtype, device)
    lengths = s.true_lengths()
    r = ProbeReport(settings=s.to_json(), backend=s.attn_implementation, device=str(device))
    r.dtype = str(dtype).replace("torch.", "")
    r.lengths = lengths
    r.tokens = sum(lengths)
    r.notes.extend(s.notes)
    r.pipeline.append(f"stack: {s.stack}; collator: {MODE_TEXT[s.mode]} ({s.mode})")
    if s.mode == "none":
        r.verdict = "not-packed"
        r.pipeline.append("no packing switch is on: each sample is its own row; nothing to prove")
        r.timings_s = timings
        return r

    t = time.perf_counter()
    model, desc = build_model(s, device, dtype)
    timings["build model"] = time.perf_counter() - t
    r.work = attention_work(lengths)
    gen = torch.Generator().manual_seed(s.seed)
    samples = [torch.randint(0, s.vocab, (n,), generator=gen) for n in lengths]
    row = pack(s.mode, samples, dtype, device)
    r.shapes = row.shapes
    r.pipeline.append(
        "the model's attention mask: "
        + {
            "position_ids": "none passed; transformers builds it from the restarting position_ids",
            "position_ids+mask": "the 2-D mask of ones; transformers then builds the mask without the restarting "
            "position_ids (they still reach RoPE)",
            "block4d": "the collator's 4-D mask, used as given",
            "concat": "the 2-D mask of ones: plain causal over the whole row",
        }[s.mode]
    )
    r.pipeline.append(
        f"packed {len(lengths)} samples into one row of {sum(lengths)} tokens: "
        + ", ".join(f"{k} {v}" for k, v in row.shapes.items())
    )

    with _eager_flex_on_cpu(s.attn_implementation, device) as eager_flex, torch.no_grad():
        r.backend_detail = desc + ("; flex_attention run uncompiled on CPU" if eager_flex else "")

        def forward(**kw):
            return model(**kw, use_cache=False).logits[0].float()

        t = time.perf_counter()
        try:
            out = forward(**row.kwargs)
        except Exception as exc:  # noqa: BLE001 - the configured implementation failing is one line
            first = _first_sentence(exc)
            raise ProbeUsageError(
                f"{s.attn_implementation} forward failed on the packed row ({s.mode}): {type(exc).__name__}: {first}"
            ) from None
        timings["forward"] = time.perf_counter() - t
        r.add("forward", PASS, f"one {s.attn_implementation} forward over {sum(lengths)} packed tokens on {device}")

        t = time.perf_counter()
        tol = check_packed_vs_alone(
            r, out, row.bounds, lambda i: forward(input_ids=samples[i][None].to(device)), default_tolerance(dtype)
        )

        # (ii) perturb each sample but the last (nothing comes after it) and watch the others
        per, leak = [], 0.0
        for i in range(len(samples) - 1):
            moved = list(samples)
            moved[i] = (samples[i] + 1 + torch.randint(0, s.vocab - 1, samples[i].shape, generator=gen)) % s.vocab
            out2 = forward(**pack(s.mode, moved, dtype, device).kwargs)
            diff = (out2 - out).abs().amax(dim=-1)
            a, b = row.bounds[i]
            diff[a:b] = 0.0
            change = float(diff.max())
            victim = int(diff.argmax()) if change > 0 else None
            sub = next((j for j, (x0, x1) in enumerate(row.bounds) if victim is not None and x0 <= victim < x1), None)
            per.append({"perturbed": i, "max_change": change, "worst_token": victim, "worst_subsample": sub})
            leak = max(leak, change)
        timings["verify"] = time.perf_counter() - t
    mean = float(out.abs().mean())
    r.leakage = {
        "abs": leak,
        "rel": leak / mean if mean else float("inf"),
        "mean_abs_output": mean,
        "per_perturbed": per,
    }
    w = max(per, key=lambda d: d["max_change"] or 0.0) if per else {}
    # exactly 0 for attention that isolates; kernels that batch tokens across samples (MoE expert
    # grouping) may move other samples' logits by rounding only, which the dtype's tolerance covers
    if leak == 0.0:
        detail = (
            f"changing the tokens of each of samples 0..{len(samples) - 2} changes no other sample's logits: exactly 0"
        )
    elif leak <= tol:
        detail = (
            f"changing other samples' tokens moves a sample's logits by {leak:.3g}, within rounding (tolerance "
            f"{tol:.2g}): kernels that batch tokens across samples reorder sums; no attention across samples"
        )
    else:
        detail = (
            f"changing the tokens of sample {w['perturbed']} changes sample {w['worst_subsample']}'s logits "
            f"(token {w['worst_token']}) by {leak:.3g}"
        )
    r.add("(ii) leakage", PASS if leak <= tol else FAIL, detail, leak)
    layers = decoder_layers(model)
    recurrent = [type(m).__name__ for layer in layers for _, m in layer.named_children() if is_recurrent(m)]
    named = [k for k in (getattr(model.config, "layer_types", None) or []) if "attention" not in str(k)]
    if (recurrent or leak > tol) and layers:
        t = time.perf_counter()
        with _eager_flex_on_cpu(s.attn_implementation, device), torch.no_grad():
            trace = trace_layers(model, forward, row.kwargs, row.bounds, samples, device)
        timings["per layer"] = time.perf_counter() - t
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
        if recurrent:
            r.notes.append(
                f"recurrent / linear-attention layers: {', '.join(dict.fromkeys(recurrent))}; "
                f"fast kernels installed: {_fast_kernels()}"
            )
    elif named:
        r.notes.append(
            f"the config names layer kinds {sorted(set(map(str, named)))}, but the tiny model built here has no "
            "recurrent / linear-attention layer: this verdict does not cover them"
        )
    if s.mode != "position_ids+mask" and leak > tol and s.mode in ("position_ids", "block4d"):
        r.notes.append(
            "the attention mask isolates the samples in this mode, so the leak comes from elsewhere in the "
            "model: a linear-attention / recurrent / convolution layer (Gated DeltaNet, Mamba) carries state "
            "across the packed boundaries unless it is given cu_seqlens (packing-stacks.md row 10)"
        )
    if s.mode == "position_ids+mask" and leak > 0:
        r.notes.append(
            "transformers detects packed position_ids only when no attention_mask is passed "
            "(masking_utils._preprocess_mask_arguments); a 2-D mask of ones turns the detection off"
        )
    r.verdict = "proven" if r.ok else "leak"
    r.timings_s = timings
    return r
