"""What one probe is asked to re-enact: the gates, batch shape and parallel layout of one launch.

Kept free of torch so that `packlint` can build settings (and fail fast on bad input) without
paying for, or even having, the probe's heavy dependencies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packlint.model_types import VariantJSON

# The two env gates, spelled as the training code reads them (task_encoder.py).
GATE_BMR = "OFFLINE_PACKING_BMR"
GATE_PACKED_DATA = "OFFLINE_PACKED_DATA"
PACKING_FLAGS = ("--packing-pretrain-data", "--packing-sft-data")

BACKENDS = ("auto", "flash-attn", "te", "aten-flash", "flex-compiled", "flex", "sdpa")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "float32", "float16", "bfloat16")

DEFAULT_SUBSAMPLES = 8
DEFAULT_TOKENS = 4096
# Deliberately uneven: uniform lengths would hide a boundary that is off by a whole sub-sample.
_DEFAULT_WEIGHTS = (11, 5, 8, 13, 6, 9, 7, 5)


class ProbeUsageError(ValueError):
    """Bad probe input (a one-line message, exit status 2), never a traceback."""


def default_lengths(total: int = DEFAULT_TOKENS) -> list[int]:
    """8 uneven sub-sample lengths summing exactly to `total` (the probe's default size)."""
    n = DEFAULT_SUBSAMPLES
    if total < 2 * n:
        n = max(2, total // 2)
        weights = [1] * n
    else:
        weights = list(_DEFAULT_WEIGHTS)
    s = sum(weights)
    lengths = [max(1, total * w // s) for w in weights]
    lengths[0] += total - sum(lengths)
    return lengths


def parse_lengths(text: str) -> list[int]:
    """`512,384,...` -> [512, 384, ...]; positive integers only, at least two sub-samples."""
    parts = [p.strip() for p in str(text).replace(" ", ",").split(",") if p.strip()]
    if not parts:
        raise ProbeUsageError(f"--lengths {text!r}: expected comma-separated positive integers")
    out = []
    for p in parts:
        try:
            v = int(p)
        except ValueError:
            raise ProbeUsageError(f"--lengths {text!r}: {p!r} is not an integer") from None
        if v <= 0:
            raise ProbeUsageError(f"--lengths {text!r}: sub-sample lengths must be positive, got {v}")
        out.append(v)
    if len(out) < 2:
        raise ProbeUsageError(f"--lengths {text!r}: leakage needs at least 2 sub-samples")
    return out


def parse_int_list(text: str, what: str) -> list[int]:
    """A comma-separated list of (possibly zero or negative) integers, e.g. for --cu-seqlens."""
    parts = [p.strip() for p in str(text).split(",") if p.strip()]
    try:
        return [int(p) for p in parts]
    except ValueError:
        raise ProbeUsageError(f"{what} {text!r}: expected comma-separated integers") from None


@dataclass
class ProbeSettings:
    """Everything one probe needs. Gate values are the raw env strings the process would see
    (None = unset), because the code's `int(os.environ.get(NAME, 0)) == 1` is part of what we test."""

    bmr: str | None = None  # OFFLINE_PACKING_BMR
    packed_data: str | None = None  # OFFLINE_PACKED_DATA
    packing_flag: str | None = None  # "--packing-pretrain-data" / "--packing-sft-data" / None
    mbs: int = 1  # --micro-batch-size
    lengths: list[int] | None = None  # true sub-sample lengths; None = default_lengths()
    seq_length: int | None = None  # --seq-length (the packed row may not exceed it)
    tp: int = 1  # --tensor-model-parallel-size
    cp: int = 1  # --context-parallel-size
    sequence_parallel: bool = False  # --sequence-parallel
    device: str = "auto"
    backend: str = "auto"
    dtype: str = "auto"
    heads: int = 4  # the mask is the same for every head; 4 keeps CPU fast
    head_dim: int = 64
    seed: int = 0
    megatron_layer: bool = False  # run a real Megatron-Core TransformerLayer
    second_opinion: bool = True  # CPU: cross-check the kernel against float64 reference attention
    cu_seqlens: list[int] | None = None  # test a pipeline's own boundaries instead of re-enacting
    notes: list[str] = field(default_factory=list)  # how the values were obtained

    def validate(self) -> None:
        """Reject what the probe cannot run, with the one-line reason."""
        for name in ("mbs", "tp", "cp", "heads", "head_dim"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ProbeUsageError(f"--{name.replace('_', '-')} must be a positive integer, got {v!r}")
        if self.seq_length is not None and (not isinstance(self.seq_length, int) or self.seq_length < 2):
            raise ProbeUsageError(f"--seq-length must be an integer >= 2, got {self.seq_length!r}")
        if self.lengths is not None:
            if len(self.lengths) < 2:
                raise ProbeUsageError("--lengths: leakage needs at least 2 sub-samples")
            if any((not isinstance(x, int)) or x <= 0 for x in self.lengths):
                raise ProbeUsageError(f"--lengths: sub-sample lengths must be positive integers, got {self.lengths}")
            if self.seq_length is not None and sum(self.lengths) > self.seq_length:
                raise ProbeUsageError(
                    f"--lengths sum to {sum(self.lengths)} tokens, more than --seq-length "
                    f"{self.seq_length}: the packer never builds such a row"
                )
        if self.device not in DEVICES:
            raise ProbeUsageError(f"--device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.backend not in BACKENDS:
            raise ProbeUsageError(f"--backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.dtype not in DTYPES:
            raise ProbeUsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.packing_flag is not None and self.packing_flag not in PACKING_FLAGS:
            raise ProbeUsageError(f"packing flag must be one of {', '.join(PACKING_FLAGS)}, got {self.packing_flag!r}")

    def true_lengths(self) -> list[int]:
        """The sub-sample lengths the probe packs: given, or the default size capped by --seq-length."""
        if self.lengths is not None:
            return list(self.lengths)
        total = DEFAULT_TOKENS if self.seq_length is None else min(DEFAULT_TOKENS, self.seq_length)
        return default_lengths(total)

    def key(self) -> tuple:
        """What makes two probes different (notes excluded): used to skip duplicate variants."""
        d = dataclasses.asdict(self)
        d.pop("notes")
        return tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(d.items()))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


# ---------------------------------------------------------------- reading a launch-model variant

_INT_FLAGS = {
    "--micro-batch-size": "mbs",
    "--seq-length": "seq_length",
    "--tensor-model-parallel-size": "tp",
    "--context-parallel-size": "cp",
}


def _env_value(entry: Any, name: str, notes: list[str]) -> str | None:
    """An ENV_ENTRY -> the string the process sees (None = unset); unknown -> unset plus a note."""
    if entry is None:
        return None
    if not isinstance(entry, dict):
        return str(entry)
    if "unknown" in entry:
        notes.append(f"{name}: value unknown ({entry['unknown']}); probed as unset (0)")
        return None
    if "values" in entry or "alternatives" in entry:
        notes.append(f"{name}: differs between branches ({entry.get('values')}); probed as unset (0)")
        return None
    if entry.get("exported") is False:
        notes.append(f"{name} is set but not exported: the training process does not see it")
        return None
    v = entry.get("value")
    return None if v is None else str(v)


def _last_flag(flags: Mapping[str, Any], name: str, notes: list[str]) -> tuple[bool, Any]:
    """(present, value) of the last occurrence of a flag (Megatron's parser keeps the last one)."""
    occ = flags.get(name)
    if not occ:
        return False, None
    if isinstance(occ, dict):
        occ = [occ]
    last = occ[-1]
    if not isinstance(last, dict):
        return True, last
    if "unknown" in last:
        notes.append(f"{name}: value unknown ({last['unknown']}); using the default")
        return True, None
    if "values" in last or "alternatives" in last:
        notes.append(f"{name}: differs between branches ({last.get('values')}); using the default")
        return True, None
    if "value" in last and last["value"] is None:
        return False, None
    return True, last.get("value")


def settings_from_variant(variant: VariantJSON, **overrides: Any) -> ProbeSettings:
    """Read the probe's settings from one launch-model VARIANT (the launch model JSON in docs/launch-model.md).

    Values packlint could not know fall back to the defaults and leave a note, so the report says
    what was assumed. `overrides` (device, backend, lengths, ...) win over what the script says."""
    notes: list[str] = []
    env = variant.get("env") or {}
    flags = variant.get("flags") or {}
    s = ProbeSettings(notes=notes)
    s.bmr = _env_value(env.get(GATE_BMR), GATE_BMR, notes)
    s.packed_data = _env_value(env.get(GATE_PACKED_DATA), GATE_PACKED_DATA, notes)

    for flag, attr in _INT_FLAGS.items():
        present, value = _last_flag(flags, flag, notes)
        if not present or value is None:
            continue
        if isinstance(value, list):
            value = value[-1] if value else None
        try:
            iv = int(str(value))
        except (TypeError, ValueError):
            notes.append(f"{flag} {value!r} is not an integer (Megatron's parser would reject it); using the default")
            continue
        if iv < 1:
            notes.append(f"{flag} {iv} is not positive; using the default")
            continue
        setattr(s, attr, iv)

    present, value = _last_flag(flags, "--sequence-parallel", notes)
    s.sequence_parallel = bool(present and value is not False)
    for flag in reversed(PACKING_FLAGS):  # --packing-sft-data wins: it is the one that changes MBS
        present, value = _last_flag(flags, flag, notes)
        if present and value is not False:
            if s.packing_flag is not None:
                notes.append(f"both {PACKING_FLAGS[0]} and {PACKING_FLAGS[1]} are given")
            else:
                s.packing_flag = flag

    for k, v in overrides.items():
        if v is None:
            continue
        if not hasattr(s, k) or k == "notes":
            raise TypeError(f"settings_from_variant: unknown setting {k!r}")
        setattr(s, k, v)
    return s
