"""The HF probe's tiny model: which architecture (a local config.json, the model type named, a guess
from a hub id's name; never a download, never a silent Llama), shrunk to tiny sizes (the text model
and, for a multimodal checkpoint, the vision model too), and the class the training stack loads
(the `...ForConditionalGeneration` wrapper for a VLM, `...ForCausalLM` otherwise).

What the probe assumes about the model is returned with it (`BuiltModel.assumptions`), so every
verdict can say it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from runtime_probe.hf_settings import HFProbeSettings, read_local_config
from runtime_probe.settings import ProbeUsageError

INSTALL_HINT = "pip install 'packlint[probe] @ git+https://github.com/packlint/packlint'"
FLASH = ("flash_attention_2", "flash_attention_3")
# no attention at all: built without attn_implementation (transformers refuses one for them)
ATTENTION_FREE = ("mamba", "mamba2", "falcon_mamba", "rwkv", "xlstm")
# the tiny model may have at most this many parameters: a shrink that missed a size is refused, never
# built full size (gemma3 at 2.7 B, qwen3_5 at 8.95 B were built before the vision model was shrunk)
MAX_PARAMS = 20_000_000

# Layer kinds the checkpoints of a model type ship where the config class's defaults lack them: a
# model type named without a config is built with these (one layer of each kind), never with the
# defaults. LFM2: the class default makes every layer full attention (configuration_lfm2.py:82-88,
# full_attn_idxs = all layers); LiquidAI/LFM2-350M/700M/1.2B config.json `layer_types` mix "conv"
# (short convolutions, 10 of 16 layers in LFM2-1.2B) and "full_attention".
CHECKPOINT_LAYER_KINDS: dict[str, tuple[list[str], str]] = {
    "lfm2": (["conv", "full_attention"], "LiquidAI LFM2 checkpoints: layer_types mix conv and full_attention"),
    "lfm2_moe": (["conv", "full_attention"], "LiquidAI LFM2-MoE checkpoints: layer_types mix conv and full_attention"),
}


def import_transformers():
    os.environ["HF_HUB_OFFLINE"] = "1"  # never download anything, whatever the model path says
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    from runtime_probe.probe import TorchMissing

    try:
        import torch
    except ImportError:
        raise TorchMissing(f"the probe needs torch: {INSTALL_HINT}") from None
    try:
        import transformers
    except ImportError:
        raise TorchMissing(f"the HF-stack probe needs transformers: {INSTALL_HINT}") from None
    transformers.logging.set_verbosity_error()
    return torch, transformers


def stack_versions() -> dict[str, str]:
    """The versions of the stack the probe ran (read from the installed distributions, nothing imported)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for dist in ("torch", "transformers", "megatron-core"):
        try:
            out[dist] = version(dist)
        except PackageNotFoundError:
            out[dist] = "not installed"
    return out


# ---------------------------------------------------------------- which architecture


def _guess_type(name: str, known: list[str]) -> str | None:
    """`Qwen/Qwen2.5-0.5B` -> qwen2: the longest model type whose name (without _ and -) is in the
    hub id's last part. Only a guess, so the report says so."""
    base = name.rstrip("/").split("/")[-1].lower().replace("-", "").replace("_", "").replace(".", "")
    hits = [k for k in known if len(k) > 2 and k.replace("_", "").replace("-", "") in base]
    return max(hits, key=len) if hits else None


def looks_like_path(name: str) -> bool:
    """A local path, not a hub id (`org/name`): absolute, ./ ../ ~, a trailing slash, a backslash,
    or more than one slash."""
    return name.startswith(("/", "./", "../", "~", ".\\")) or name.endswith("/") or "\\" in name or name.count("/") > 1


def resolve_architecture(s: HFProbeSettings, known: list[str]) -> tuple[str, dict, str]:
    """(model_type, config dict, where it came from): local config.json, the model type named, a
    guess from the hub id's name. A path that does not exist, a directory without config.json and a
    name nothing can be told from are usage errors (exit 2): never a silent Llama, never a download."""
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
        return mt, {}, f"model_type {s.model_type} (no config.json: the config class's defaults)"
    if s.model_path:
        path = os.path.expanduser(s.model_path)
        if os.path.isdir(path):
            raise ProbeUsageError(f"--model {s.model_path}: the directory has no config.json to read the model from")
        if looks_like_path(s.model_path) or os.path.exists(path):
            raise ProbeUsageError(f"--model {s.model_path}: no such directory (give a model directory or --model-type)")
        guessed = _guess_type(s.model_path, known)
        if guessed:
            return guessed, {}, f"model type {guessed}, guessed from the name {s.model_path!r} (not downloaded)"
        raise ProbeUsageError(
            f"--model {s.model_path}: not a local directory, and no model type the installed transformers knows "
            "is in its name; give --model-type (nothing is downloaded)"
        )
    return "llama", {}, "llama (no model given)"


# ---------------------------------------------------------------- tiny sizes

_DROP = (
    "quantization_config",
    "torch_dtype",
    "dtype",
    "auto_map",
    "architectures",
    "_name_or_path",
    "transformers_version",
)


def _clean(d: dict) -> dict:
    return {k: v for k, v in d.items() if k not in _DROP}


def _defaults(cls) -> dict:
    try:
        return dict(cls().to_dict())  # what the class fills in: a checkpoint-free model type is all defaults
    except Exception:  # noqa: BLE001 - a class that needs arguments: shrink what the checkpoint names
        return {}


def _mrope(rope: Any, half: int) -> Any:
    """An mrope_section (Qwen2-VL's temporal/height/width split of the rotary half) rescaled to sum
    to the tiny head's rotary half."""
    if not isinstance(rope, dict) or not isinstance(rope.get("mrope_section"), list):
        return rope
    sec = [int(x) for x in rope["mrope_section"]]
    total = sum(sec) or 1
    new = [max(1, x * half // total) for x in sec]
    new[-1] = max(1, half - sum(new[:-1]))
    return {**rope, "mrope_section": new}


def shrink_text(known: dict, s: HFProbeSettings, model_type: str, named_only: bool) -> tuple[dict, str | None]:
    """The tiny sizes for a language model's config dict (`known`: class defaults under the checkpoint's
    values) and a note on the layer kinds (None when nothing to say)."""
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
        elif key in ("state_size", "mamba_d_state", "ssm_state_size", "mamba_chunk_size") and value > 16:
            tiny[key] = 16  # a 50-token row still spans several SSD chunks
        elif key in ("mamba_dt_rank", "time_step_rank") and value > 8:
            tiny[key] = 8
        elif key == "attention_hidden_size":  # rwkv
            tiny[key] = s.hidden
    for kind in ("attn", "expert"):  # Jamba: every `period` layers from `offset` is attention / MoE
        if isinstance(known.get(f"{kind}_layer_period"), int):
            tiny[f"{kind}_layer_period"], tiny[f"{kind}_layer_offset"] = 2, 1
    if isinstance(known.get("mamba_n_heads"), int):  # Mamba-2 heads: n_heads * d_head = expand * hidden
        d_head = min(int(known.get("mamba_d_head") or 16), 16)
        expand = int(known.get("mamba_expand") or 2)
        tiny["mamba_d_head"] = d_head
        tiny["mamba_n_heads"] = max(1, expand * s.hidden // d_head)
        if "mamba_d_ssm" in known:
            tiny["mamba_d_ssm"] = tiny["mamba_n_heads"] * d_head
    for key in ("rope_parameters", "rope_scaling"):
        if key in known:
            tiny[key] = _mrope(known[key], head_dim // 2)
    note = None
    table = CHECKPOINT_LAYER_KINDS.get(model_type) if named_only else None
    if table is not None:
        tiny["layer_types"] = list(table[0])
        tiny.pop("full_attn_idxs", None)
        note = f"layer kinds {table[0]} as the checkpoints have them ({table[1]}), not the class defaults"
    elif isinstance(known.get("layer_types"), list) and known["layer_types"]:
        # one layer of each kind the architecture mixes (linear and full attention, sliding and full)
        kinds = list(dict.fromkeys(known["layer_types"]))
        tiny["layer_types"] = (kinds + [kinds[-1]] * s.layers)[: max(s.layers, 1)]
        if len(kinds) > s.layers:
            tiny["layer_types"] = kinds[: s.layers]
    if "layer_types" in tiny:
        tiny["num_hidden_layers"] = len(tiny["layer_types"])
    if "max_window_layers" in known:
        tiny["max_window_layers"] = s.layers
    return tiny, note


_VISION_SIZES = {
    "depth": 2,
    "embed_dim": 32,
    "num_hidden_layers": 2,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "num_attention_heads": 2,
    "head_dim": 16,
    "projection_dim": 32,
    "vision_output_dim": 32,
    "projector_input_dim": 32,
    "projector_output_dim": 32,
}


def shrink_vision(known: dict, text_hidden: int) -> dict:
    """A vision tower's config dict at tiny sizes: 2 blocks, width 32, 2 heads; layer-index lists
    (full-attention blocks, deepstack taps) point at the last block; the output width is the text's."""
    tiny: dict[str, Any] = {k: v for k, v in _VISION_SIZES.items() if isinstance(known.get(k), int)}
    if isinstance(known.get("out_hidden_size"), int):
        tiny["out_hidden_size"] = text_hidden
    for key in ("fullatt_block_indexes", "deepstack_visual_indexes"):
        if isinstance(known.get(key), list):
            tiny[key] = [1] if known[key] else []
    if isinstance(known.get("vocab_size"), int):
        tiny["vocab_size"] = 256
    return tiny


@dataclass
class TinyConfig:
    model_type: str
    config: Any
    multimodal: bool
    notes: list[str] = field(default_factory=list)


def tiny_config(transformers, model_type: str, data: dict, s: HFProbeSettings) -> TinyConfig:
    """The architecture's own config class shrunk to tiny sizes: a language model's config, or a
    multimodal checkpoint's whole config with its text and vision sub-configs both shrunk."""
    from transformers import CONFIG_MAPPING

    named_only = not data
    data = _clean(data)
    cls = CONFIG_MAPPING[model_type]
    defaults = _defaults(cls)
    sub_text = data.get("text_config", defaults.get("text_config"))
    notes: list[str] = []
    if isinstance(sub_text, dict) and (data.get("vision_config") or defaults.get("vision_config")):
        text = _clean({**(defaults.get("text_config") or {}), **(data.get("text_config") or {})})
        ttype = str(text.get("model_type") or "")
        tdefaults = _defaults(CONFIG_MAPPING[ttype]) if ttype in CONFIG_MAPPING else {}
        text_tiny, note = shrink_text({**tdefaults, **text}, s, ttype, named_only)
        tcls = CONFIG_MAPPING[ttype] if ttype in CONFIG_MAPPING else None  # noqa: SIM401 - a lazy mapping: no .get
        if "mrope_section" in (getattr(tcls, "ignore_keys_at_rope_validation", None) or ()):
            # 3-D rope (Qwen2-VL family): the modeling code's default split ([16, 24, 24], for head_dim
            # 128) applies when a config names none; the tiny head needs its own
            rope = dict(text_tiny.get("rope_parameters") or text.get("rope_parameters") or {})
            rope.setdefault("mrope_section", [16, 24, 24])
            text_tiny["rope_parameters"] = _mrope(rope, (s.hidden // s.heads) // 2)
        vision = _clean({**(defaults.get("vision_config") or {}), **(data.get("vision_config") or {})})
        top = {k: v for k, v in data.items() if k not in ("text_config", "vision_config", "model_type")}
        tiny_vision = {**vision, **shrink_vision(vision, s.hidden)}
        kwargs = {**top, "text_config": {**text, **text_tiny}, "vision_config": tiny_vision}
        notes += [note] if note else []
        multimodal = True
    else:
        tiny, note = shrink_text({**defaults, **data}, s, model_type, named_only)
        kwargs = {k: v for k, v in {**data, **tiny}.items() if k != "model_type"}
        notes += [note] if note else []
        multimodal = False
    try:
        cfg = cls(**kwargs)
    except Exception as exc:  # noqa: BLE001 - a config the class rejects is one line, not a traceback
        raise ProbeUsageError(f"cannot build a tiny {model_type} config: {type(exc).__name__}: {exc}") from None
    return TinyConfig(model_type, cfg, multimodal, notes)


# ---------------------------------------------------------------- the model


def first_sentence(exc: BaseException, limit: int = 240) -> str:
    """An exception's message as one short line: its first line, cut at the first sentence end."""
    first = (str(exc).strip().splitlines() or [""])[0]
    cut = first.find(". ")
    first = first[: cut + 1] if 0 < cut < limit else first
    return first if len(first) <= limit else first[: limit - 3] + "..."


@dataclass
class BuiltModel:
    model: Any
    desc: str
    model_type: str
    source: str  # where the architecture came from
    attention_free: bool
    multimodal: bool
    experts: str | None  # the experts implementation set (MoE), None for a dense model
    notes: list[str] = field(default_factory=list)


def _model_class(transformers, tc: TinyConfig):
    from transformers import AutoModelForCausalLM

    if tc.multimodal:
        from transformers import AutoModelForImageTextToText
        from transformers.models.auto.modeling_auto import MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING

        if type(tc.config) in MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING:
            return AutoModelForImageTextToText
    return AutoModelForCausalLM


def build_model(s: HFProbeSettings, device, dtype) -> BuiltModel:
    """The tiny model, in `dtype` on `device`. Raises ProbeUsageError when the architecture or the
    attention implementation cannot be built here (flash-attn missing, no CUDA, unknown type)."""
    torch, transformers = import_transformers()
    from transformers import CONFIG_MAPPING

    mt, data, where = resolve_architecture(s, list(CONFIG_MAPPING.keys()))
    tc = tiny_config(transformers, mt, data, s)
    attention_free = tc.model_type in ATTENTION_FREE
    if s.attn_implementation in FLASH and device.type != "cuda" and not attention_free:
        raise ProbeUsageError(
            f"attn_implementation {s.attn_implementation} needs a CUDA GPU and flash-attn; on this machine "
            "probe the same collator on another implementation (--attn-implementation sdpa)"
        )
    auto = _model_class(transformers, tc)
    kw = {} if attention_free else {"attn_implementation": s.attn_implementation}
    try:
        with torch.device("meta"):
            n = sum(p.numel() for p in auto.from_config(tc.config, **kw).parameters())
    except Exception as exc:  # noqa: BLE001 - ImportError for flash-attn, ValueError for an unknown name
        about_attn = not attention_free and ("attn" in str(exc).lower() or "attention" in str(exc).lower())
        what = f"attn_implementation {s.attn_implementation!r} cannot run" if about_attn else "cannot be built"
        raise ProbeUsageError(
            f"the tiny {tc.model_type} {what} here: {type(exc).__name__}: {first_sentence(exc)}"
        ) from None
    if n > MAX_PARAMS:
        raise ProbeUsageError(
            f"the tiny {tc.model_type} config still has {n:,} parameters (a size the probe does not shrink); "
            f"refusing to build more than {MAX_PARAMS:,}"
        )
    torch.manual_seed(s.seed)
    model = auto.from_config(tc.config, **kw)
    experts = None
    if getattr(model.config, "_experts_implementation", None) not in (None, "eager") or _has_experts(model):
        try:  # exact per-token experts: grouped_mm has no float64 and batches tokens across samples
            model.set_experts_implementation("eager")
            experts = "eager"
        except Exception:  # noqa: BLE001 - a model without the switch keeps its own experts
            experts = str(getattr(model.config, "_experts_implementation", None))
    model = cast_model(model.to(device=device), dtype).eval()
    desc = (
        f"transformers {transformers.__version__} {type(model).__name__} from {where}; tiny random: "
        f"{_text_sizes(model.config)}, {n:,} parameters"
        + ("; attention-free (built without attn_implementation)" if attention_free else "")
        + (f"; experts: {experts}" if experts else "")
    )
    return BuiltModel(model, desc, tc.model_type, where, attention_free, tc.multimodal, experts, tc.notes)


def cast_model(model, dtype):
    """`model.to(dtype)` for the floating-point tensors only: a complex buffer (Llama 4's rotary
    frequencies) is never cast to a real dtype (that drops its imaginary part); it becomes complex128
    for a float64 run."""
    import torch

    for t in [*model.parameters(), *model.buffers()]:
        if t.is_floating_point():
            t.data = t.data.to(dtype)
        elif t.is_complex() and dtype == torch.float64:
            t.data = t.data.to(torch.complex128)
    return model


def _has_experts(model) -> bool:
    return any("Experts" in type(m).__name__ or "SparseMoe" in type(m).__name__ for m in model.modules())


def _text_sizes(cfg) -> str:
    t = getattr(cfg, "text_config", None) or cfg
    v = getattr(cfg, "vision_config", None)
    text = (
        f"{getattr(t, 'num_hidden_layers', '?')} layers, hidden {getattr(t, 'hidden_size', '?')}, "
        f"{getattr(t, 'num_attention_heads', '-')} heads, vocab {getattr(t, 'vocab_size', '?')}"
    )
    if v is not None:
        depth = getattr(v, "depth", None) or getattr(v, "num_hidden_layers", "?")
        text += f"; vision {depth} blocks, hidden {getattr(v, 'hidden_size', '?')}"
    return text
