"""The HF-stack probe's settings, read from a launch: which stack, which model, which attention
implementation, and how that stack's collator packs the row. Torch-free, like settings.py.

How each stack packs (the collator code the mode re-enacts; snapshots as in
docs/packing-stacks.md):

- ``position_ids``: one row, position_ids restart at 0 per sample, **no** attention_mask.
  TRL padding_free / packing_strategy bfd (huggingface/trl@f2cd57710a:trl/trainer/sft_trainer.py:471-506,
  1143), transformers' DataCollatorWithFlattening, ms-swift padding_free/packing
  (modelscope/ms-swift@3602360a56:swift/template/base.py:1921-1937), OpenRLHF packing_samples
  (OpenRLHF/OpenRLHF@3c3be6234e:openrlhf/models/actor.py:236-240), verl use_remove_padding
  (volcengine/verl@b178a3cd56:verl/workers/actor/dp_actor.py:170-250), axolotl sample_packing when the
  attention "decontaminates" and the mask is dropped
  (axolotl-ai-cloud/axolotl@067b021c8b:src/axolotl/core/trainers/base.py:324-332,
  src/axolotl/utils/schemas/config.py:1487-1491), LLaMA-Factory neat_packing on FA2
  (hiyouga/LLaMA-Factory@ff6d4d12ee:src/llamafactory/data/collator.py:538-542).
- ``position_ids+mask``: position_ids restart per sample **and** a 2-D attention_mask of non-zeros
  goes with them. LLaMA-Factory ``packing`` without neat_packing (supervised.py:199,212-213:
  positions reset, mask all ones), axolotl before v0.18 on sdpa/eager (the multipack collator's
  mask of sequence ids 1,1,2,2,... is kept: src/axolotl/utils/collators/batching.py:167-176).
- ``block4d``: a 4-D additive block-diagonal causal mask built in the collator, positions reset.
  LLaMA-Factory neat_packing on sdpa/eager (collator.py:93-125 prepare_4d_attention_mask, 535-536).
- ``concat``: samples concatenated, positions continue, 2-D all-ones mask. TRL packing_strategy
  wrapped (and TRL <= 0.18 packing).
- ``none``: not packed: nothing to prove.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runtime_probe.settings import DEVICES, DTYPES, ProbeUsageError

HF_MODES = ("position_ids", "position_ids+mask", "block4d", "concat", "none")
MODE_TEXT = {
    "position_ids": "one row, position_ids restart per sample, no attention_mask",
    "position_ids+mask": "one row, position_ids restart per sample, plus a 2-D attention_mask of ones",
    "block4d": "one row, position_ids restart per sample, 4-D block-diagonal causal mask from the collator",
    "concat": "samples concatenated, positions continue, 2-D all-ones attention_mask",
    "none": "not packed",
}
USE_CACHE = ("auto", "false", "true", "both")
HF_STACKS = ("trl", "llamafactory", "axolotl", "ms-swift", "openrlhf", "verl", "transformers")
ATTN_IMPLEMENTATIONS = ("sdpa", "eager", "flex_attention", "flash_attention_2", "flash_attention_3")
DEFAULT_HF_LENGTHS = (13, 7, 19, 11)  # uneven, total 50: below the tiny model's 64-token budget

_TRUE = {"1", "true", "yes", "on", "y", "t"}
_FALSE = {"0", "false", "no", "off", "n", "f"}


@dataclass
class HFProbeSettings:
    """One HF-stack probe: a tiny random model of the configured architecture, a row packed the way
    the stack's collator packs it, one forward with the configured attention implementation."""

    stack: str = "transformers"
    mode: str = "position_ids"
    attn_implementation: str = "sdpa"
    model_path: str | None = None  # --model_name_or_path: a local directory is read, a hub id never
    model_type: str | None = None  # explicit model type (config key), else from config.json / the name
    lengths: list[int] | None = None
    device: str = "auto"
    dtype: str = "auto"
    seed: int = 0
    layers: int = 2
    hidden: int = 64
    heads: int = 4
    vocab: int = 256
    use_cache: str = "auto"  # auto: False for a stack (its training forward), both for a custom loop
    notes: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if self.mode not in HF_MODES:
            raise ProbeUsageError(f"--hf-mode must be one of {', '.join(HF_MODES)}, got {self.mode!r}")
        if self.device not in DEVICES:
            raise ProbeUsageError(f"--device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.dtype not in DTYPES + ("float64",):
            raise ProbeUsageError(f"--dtype must be one of {', '.join(DTYPES)}, float64, got {self.dtype!r}")
        if self.use_cache not in USE_CACHE:
            raise ProbeUsageError(f"--use-cache must be one of {', '.join(USE_CACHE)}, got {self.use_cache!r}")
        if not self.attn_implementation or not isinstance(self.attn_implementation, str):
            raise ProbeUsageError(f"attn_implementation must be a name, got {self.attn_implementation!r}")
        for name in ("layers", "hidden", "heads", "vocab"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ProbeUsageError(f"{name} must be a positive integer, got {v!r}")
        if self.hidden % self.heads or (self.hidden // self.heads) % 2:
            raise ProbeUsageError(f"hidden {self.hidden} must split into {self.heads} heads of an even size")
        if self.lengths is not None and (len(self.lengths) < 2 or any(x < 1 for x in self.lengths)):
            raise ProbeUsageError("--lengths: at least 2 positive sample lengths")

    def true_lengths(self) -> list[int]:
        return list(self.lengths) if self.lengths is not None else list(DEFAULT_HF_LENGTHS)

    def key(self) -> tuple:
        d = dataclasses.asdict(self)
        d.pop("notes")
        return ("hf",) + tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(d.items()))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- reading a launch


class Unknown:
    """A value packlint could not work out (kept distinct from 'absent' and from any default)."""

    def __init__(self, why: str) -> None:
        self.why = why

    def __repr__(self) -> str:
        return f"Unknown({self.why!r})"


class NotProbed(Unknown):
    """A launch the probe knows it does not re-enact (a different code path), with the reason."""


MEGATRON_SWIFT_WHY = (
    "Megatron-SWIFT (`megatron sft|pt|rlhf`) trains through Megatron-Core (padding-free THD rows with "
    "cu_seqlens, PackedSeqParams), not through transformers' forward, so the HF probe's tiny transformers "
    "model would test a code path this launch never runs; probe Megatron-Core's packed path with "
    "`packlint probe --megatron-gpt packed`"
)

# launch-model flag or config key -> the probe's name for it. `--x` and `--x=`, `-` and `_` spellings
# are folded by _norm; keys of a config file (i20-config's settings) use the same names.
_KEYS = {
    "model_name_or_path": "model",
    "model": "model",
    "base_model": "model",  # axolotl
    "pretrain": "model",  # OpenRLHF
    "actor_rollout_ref.model.path": "model",  # verl (Hydra)
    "model_type": "model_type",
    "attn_implementation": "attn",
    "model_init_kwargs.attn_implementation": "attn",  # TRL SFTConfig
    "attn_impl": "attn",  # ms-swift
    "flash_attn": "flash_attn",  # LLaMA-Factory: fa2 | sdpa | disabled | auto
    "actor_rollout_ref.model.override_config.attn_implementation": "attn",
    "flash_attention": "flash_attention",  # axolotl legacy: true -> flash_attention_2
    "sdp_attention": "sdp_attention",  # axolotl legacy: true -> sdpa
    "packing": "packing",
    "padding_free": "padding_free",
    "packing_strategy": "packing_strategy",
    "neat_packing": "neat_packing",
    "sample_packing": "sample_packing",
    "packing_samples": "packing_samples",  # OpenRLHF (pre-0.10.2 spelling)
    "ds.packing_samples": "packing_samples",  # OpenRLHF >= 0.10.2
    "use_remove_padding": "use_remove_padding",
    "actor_rollout_ref.model.use_remove_padding": "use_remove_padding",
}


def _norm(name: str) -> str:
    return name.lstrip("-").split("=", 1)[0].replace("-", "_").replace("+", "")


def _entry_value(entry: Any) -> Any:
    """A launch-model value entry (flag occurrence, env entry, setting) -> a plain value or Unknown."""
    if isinstance(entry, list):
        if not entry:
            return None
        entry = entry[-1]  # the last occurrence wins (argparse, HfArgumentParser, Hydra)
    if not isinstance(entry, dict):
        return entry
    if "unknown" in entry:
        return Unknown(str(entry["unknown"]))
    if "values" in entry or "alternatives" in entry:
        return Unknown(f"differs between branches ({entry.get('values')})")
    return entry.get("value")


def launch_values(part: Mapping[str, Any]) -> dict[str, Any]:
    """THE ONE PLACE that reads a launch (or one variant of it) for the HF probe: model path/type,
    attention implementation and the packing switches, by the probe's names. Values come from the
    launch model's flags today, and from config-file settings (`settings`, i20-config's reading of
    LLaMA-Factory/TRL/axolotl YAML) when those are present; the flags win, like on the command line.
    Hydra overrides (`key=value` words in the argv) are read too. A value packlint could not know is
    an Unknown, never a default."""
    out: dict[str, Any] = {}
    config = part.get("config") or {}
    settings = (config.get("settings") if isinstance(config, dict) else None) or part.get("settings") or {}
    if isinstance(settings, dict):
        for k, entry in settings.items():
            name = _KEYS.get(_norm(str(k)))
            if name:
                out[name] = _entry_value(entry)
    for word in part.get("argv") or []:  # Hydra: actor_rollout_ref.model.use_remove_padding=True
        if isinstance(word, str) and "=" in word and not word.startswith("-"):
            k, v = word.split("=", 1)
            name = _KEYS.get(_norm(k))
            if name:
                out[name] = v
    for flag, occ in (part.get("flags") or {}).items():
        name = _KEYS.get(_norm(str(flag)))
        if name:
            out[name] = _entry_value(occ)
    return out


def _truth(v: Any) -> bool | Unknown | None:
    """A switch's value: True/False, None when absent, Unknown when not known or not a boolean."""
    if v is None or isinstance(v, Unknown):
        return v
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    return Unknown(f"{v!r} is not a boolean")


_PROGRAM_STACKS = (
    ("llamafactory", "llamafactory"),
    ("llama_factory", "llamafactory"),
    ("axolotl", "axolotl"),
    ("swift", "ms-swift"),
    ("openrlhf", "openrlhf"),
    ("verl", "verl"),
    ("trl", "trl"),
    ("sft", "trl"),
)


# packlint.configs' stack names (the launch model's `config.stack`) -> the probe's
_CONFIG_STACKS = {
    "llamafactory": "llamafactory",
    "trl": "trl",
    "axolotl": "axolotl",
    "swift": "ms-swift",
    "verl": "verl",
    "openrlhf": "openrlhf",
}  # ("hf-trainer", any HF Trainer script, is left to the program's name: it may be TRL's own sft.py)


def config_of(part: Mapping[str, Any]) -> dict:
    c = part.get("config")
    return c if isinstance(c, dict) else {}


def stack_version(part: Mapping[str, Any]) -> tuple[int, ...] | None:
    """The stack's version from the launch model's config block (`stack_version.value`), if known."""
    v = config_of(part).get("stack_version") or {}
    text = v.get("value") if isinstance(v, dict) else None
    if not isinstance(text, str):
        return None
    parts = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


def detect_stack(
    launch: Mapping[str, Any], values: dict[str, Any], part: Mapping[str, Any] | None = None
) -> str | None:
    """Which HF stack a launch runs, from the program/launcher and the switches it passes; None when it
    passes no HF packing switch (then it is not an HF-stack launch the probe knows)."""
    packing_keys = {
        "packing",
        "padding_free",
        "neat_packing",
        "sample_packing",
        "packing_samples",
        "use_remove_padding",
    }
    named = _CONFIG_STACKS.get(str(config_of(part or launch).get("stack")))
    if named and packing_keys & set(values):
        return named
    words = " ".join(str(launch.get(k) or "") for k in ("launcher", "program")).lower()
    program = str(launch.get("program") or "").lower().split()
    megatron_swift = program[:1] == ["megatron"] and program[1:2] in (["sft"], ["pt"], ["rlhf"])
    if (megatron_swift or config_of(part or launch).get("stack") == "megatron-swift") and packing_keys & set(values):
        return "megatron-swift"
    words += " " + " ".join(str(w) for w in (launch.get("argv") or [])[:3]).lower()
    words = words.replace("-", "_").replace("/", " ")
    if "use_remove_padding" in values:
        return "verl"
    if "packing_samples" in values:
        return "openrlhf"
    if "sample_packing" in values:
        return "axolotl"
    if "neat_packing" in values or "flash_attn" in values:
        return "llamafactory"
    if not ({"packing", "padding_free"} & set(values)):
        return None
    for needle, stack in _PROGRAM_STACKS:
        if needle in words:
            return stack
    return "transformers" if "packing" not in values else "trl"


def _attn(stack: str, values: dict[str, Any], notes: list[str]) -> str | Unknown:
    attn = values.get("attn")
    if isinstance(attn, Unknown):
        return attn
    if attn:
        return str(attn)
    if stack == "llamafactory" and values.get("flash_attn") is not None:
        fa = values["flash_attn"]
        if isinstance(fa, Unknown):
            return fa
        mapping = {"fa2": "flash_attention_2", "sdpa": "sdpa", "disabled": "eager"}
        if str(fa) in mapping:
            return mapping[str(fa)]
        if str(fa) == "auto":
            notes.append("flash_attn: auto leaves the choice to transformers: its default, sdpa, is probed")
            return "sdpa"
        return Unknown(f"flash_attn {fa!r} is not one LLaMA-Factory knows")
    if stack == "axolotl":
        if _truth(values.get("flash_attention")) is True:
            return "flash_attention_2"
        if _truth(values.get("sdp_attention")) is True:
            return "sdpa"
    if stack in ("openrlhf", "verl"):
        # OpenRLHF packing forces flash attention (packing-stacks.md row 25); verl's default
        # override_config.attn_implementation is flash_attention_2 (verl/workers/fsdp_workers.py:331)
        notes.append(f"attn_implementation not set: {stack} uses flash_attention_2 with packing")
        return "flash_attention_2"
    notes.append("attn_implementation not set: transformers' default, sdpa, is probed")
    return "sdpa"


def hf_mode(stack: str, values: dict[str, Any], attn: str, version: tuple[int, ...] | None = None) -> str | Unknown:
    """How the stack's collator packs the row under these switches (see the module docstring), and,
    where the stack's version is known, under that version: TRL before 0.19 packed by concatenation
    (boundary-aware packing arrived with PR #3526, v0.19.0); axolotl before 0.18 kept the mask on
    sdpa/eager (PR #3796, v0.18.0)."""

    def on(name: str) -> bool | Unknown | None:
        return _truth(values.get(name))

    def unknown_of(*names: str) -> Unknown | None:
        for n in names:
            v = on(n)
            if isinstance(v, Unknown):
                return Unknown(f"{n}: {v.why}")
        return None

    if stack == "trl" or stack == "transformers":
        u = unknown_of("packing", "padding_free")
        if u:
            return u
        strategy = values.get("packing_strategy")
        if isinstance(strategy, Unknown):
            return Unknown(f"packing_strategy: {strategy.why}")
        if on("padding_free") is True:
            return "position_ids"
        if on("packing") is True:
            if stack == "trl" and version is not None and version < (0, 19):
                return "concat"
            return "concat" if str(strategy or "bfd") == "wrapped" else "position_ids"
        return "none"
    if stack == "llamafactory":
        u = unknown_of("neat_packing", "packing")
        if u:
            return u
        if on("neat_packing") is True:
            return "position_ids" if attn == "flash_attention_2" else "block4d"
        if on("packing") is True:
            return "position_ids+mask"
        return "none"
    if stack == "axolotl":
        u = unknown_of("sample_packing")
        if u:
            return u
        if on("sample_packing") is not True:
            return "none"
        old = version is not None and version < (0, 18) and attn in ("sdpa", "eager")
        return "position_ids+mask" if old else "position_ids"
    if stack == "ms-swift":
        u = unknown_of("packing", "padding_free")
        if u:
            return u
        return "position_ids" if (on("packing") is True or on("padding_free") is True) else "none"
    if stack == "openrlhf":
        u = unknown_of("packing_samples")
        return u if u else ("position_ids" if on("packing_samples") is True else "none")
    if stack == "verl":
        u = unknown_of("use_remove_padding")
        return u if u else ("position_ids" if on("use_remove_padding") is True else "none")
    return Unknown(f"stack {stack!r} is not one the probe knows")


def hf_settings_from_part(
    launch: Mapping[str, Any], part: Mapping[str, Any], **overrides: Any
) -> HFProbeSettings | Unknown | None:
    """The HF probe's settings for one launch variant: None when it is no HF-stack launch, an Unknown
    (with the reason) when a value it needs could not be worked out, else the settings."""
    values = launch_values(part)
    stack = overrides.pop("stack", None) or detect_stack(launch, values, part)
    if stack is None:
        return None
    if stack == "megatron-swift":
        return NotProbed(MEGATRON_SWIFT_WHY)
    notes: list[str] = []
    attn = overrides.pop("attn_implementation", None) or _attn(stack, values, notes)
    if isinstance(attn, Unknown):
        return Unknown(f"attn_implementation: {attn.why}")
    version = stack_version(part)
    mode = overrides.pop("mode", None) or hf_mode(stack, values, attn, version)
    if isinstance(mode, Unknown):
        return mode
    s = HFProbeSettings(stack=stack, mode=mode, attn_implementation=attn, notes=notes)
    model = values.get("model")
    if isinstance(model, Unknown):
        notes.append(f"model path unknown ({model.why}): the default architecture is probed")
    elif model:
        s.model_path = str(model)
        script_dir = os.path.dirname(str(launch.get("file") or ""))
        if not os.path.isabs(s.model_path) and not os.path.isdir(s.model_path) and script_dir:
            beside = os.path.join(script_dir, s.model_path)
            if os.path.isdir(beside):  # the job usually runs from the script's directory
                notes.append(f"model path {s.model_path!r} read relative to the script's directory: {beside}")
                s.model_path = beside
    mt = values.get("model_type")
    if mt and not isinstance(mt, Unknown):
        s.model_type = str(mt)
    if version is not None:
        notes.append(f"{stack} version {'.'.join(map(str, version))} (from the launch's configuration)")
    if stack == "axolotl" and mode == "position_ids" and version is None:
        notes.append(
            "axolotl >= 0.18 drops the attention_mask for packed batches on sdpa/eager/flash (PR #3796); "
            "before 0.18 sdpa/eager kept it: probe that with --hf-mode position_ids+mask"
        )
    if stack == "ms-swift" and mode != "none" and not s.attn_implementation.startswith("flash"):
        notes.append(
            "ms-swift >= 3.5 refuses packing/padding_free without flash attention at start-up "
            "(modelscope/ms-swift@3602360a56:swift/arguments/sft_args.py:185-196); 3.4 only warned"
        )
    for k, v in overrides.items():
        if v is None:
            continue
        if not hasattr(s, k) or k == "notes":
            raise TypeError(f"hf_settings_from_part: unknown setting {k!r}")
        setattr(s, k, v)
    return s


def read_local_config(path: str | None) -> dict | None:
    """config.json of a local model directory, read as JSON (never from_pretrained, never a hub id)."""
    if not path:
        return None
    f = os.path.join(path, "config.json")
    if not os.path.isdir(path) or not os.path.isfile(f):
        return None
    try:
        with open(f, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ProbeUsageError(f"{f}: cannot read the model config: {exc}") from None
    if not isinstance(data, dict):
        raise ProbeUsageError(f"{f}: the model config is not a JSON object")
    return data
