"""Settings of the Megatron-Core real-model probe (`--megatron-gpt`): a tiny GPTModel, THD packed vs
unpacked, and the LLaVA image-expansion case. Torch-free, like settings.py."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from runtime_probe.settings import BACKENDS, DEVICES, DTYPES, ProbeUsageError

GPT_CASES = ("packed", "llava-collapsed", "llava-expanded")
DEFAULT_GPT_LENGTHS = (13, 7, 19, 11)


@dataclass
class GPTProbeSettings:
    """`packed`: text samples in one THD row, cu_seqlens at the true boundaries. `llava-collapsed` /
    `llava-expanded`: each sample holds one image placeholder expanded into `image_tokens` embeddings
    before the language model; cu_seqlens counted in collapsed space (one token per image: the bug of
    NVIDIA/Megatron-LM PR #3427) or in expanded space (the fix). The LLaVA cases run the installed
    megatron-core's real LLaVAModel (vision encoder, projector, _preprocess_data); `reenact` re-enacts
    the expansion on the GPTModel instead (the fallback when LLaVAModel cannot be built)."""

    case: str = "packed"
    lengths: list[int] | None = None  # text tokens per sample (the image placeholder included)
    image_tokens: int = 8  # embeddings one image placeholder expands into
    layers: int = 2
    heads: int = 4
    head_dim: int = 16
    vocab: int = 256
    backend: str = "auto"
    device: str = "auto"
    dtype: str = "auto"
    seed: int = 0
    reenact: bool = False  # LLaVA cases: re-enact the expansion on GPTModel instead of the real LLaVAModel
    notes: list[str] = field(default_factory=list)

    def validate(self) -> None:
        if self.case not in GPT_CASES:
            raise ProbeUsageError(f"--megatron-gpt case must be one of {', '.join(GPT_CASES)}, got {self.case!r}")
        for name in ("image_tokens", "layers", "heads", "head_dim", "vocab"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ProbeUsageError(f"{name} must be a positive integer, got {v!r}")
        if self.head_dim % 2:
            raise ProbeUsageError(f"--head-dim must be even for RoPE, got {self.head_dim}")
        if self.case != "packed" and self.image_tokens < 2:
            raise ProbeUsageError("the LLaVA case needs --image-tokens >= 2 (one token per image collapses nothing)")
        lengths = self.true_lengths()
        if len(lengths) < 2 or any(x < 3 for x in lengths):
            raise ProbeUsageError("--lengths: at least 2 samples of at least 3 tokens")
        if self.backend not in BACKENDS:
            raise ProbeUsageError(f"--backend must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.device not in DEVICES:
            raise ProbeUsageError(f"--device must be one of {', '.join(DEVICES)}, got {self.device!r}")
        if self.dtype not in DTYPES:
            raise ProbeUsageError(f"--dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")

    def true_lengths(self) -> list[int]:
        return list(self.lengths) if self.lengths is not None else list(DEFAULT_GPT_LENGTHS)

    def max_sequence_length(self) -> int:
        """The models' position table: the packed row as the model sees it (each image placeholder
        expanded into `image_tokens` embeddings), at least 1024. LLaVAModel cuts the combined
        embeddings at its `language_max_sequence_length` (llava_model.py `_preprocess_data`), so a
        shorter table would split the row short of its cu_seqlens."""
        k = self.image_tokens if self.case != "packed" else 1
        total = sum(n - 1 + k for n in self.true_lengths())
        return max(1024, -(-total // 64) * 64)

    def key(self) -> tuple:
        d = dataclasses.asdict(self)
        d.pop("notes")
        return ("gpt",) + tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in sorted(d.items()))

    def to_json(self) -> dict:
        return dataclasses.asdict(self)
