"""The attention kernels the probe can run, each behind one call: attend(q, k, v, cu, max_seqlen).

q, k, v are in Megatron's `thd` layout, [tokens, heads, head_dim]. `cu` is the int32 cu_seqlens the
kernel is handed, or None for plain causal attention over the whole row (what Megatron does when
packed_seq_params is None). Output: [tokens, heads, head_dim].

Order when chosen automatically:
  GPU: flash-attn varlen -> Transformer Engine thd -> aten::_flash_attention_forward (PyTorch's own
       varlen flash kernel) -> compiled flex_attention with a document mask -> SDPA with a mask.
  CPU: SDPA with an explicit block-diagonal causal mask (4-D input: 3-D input silently takes a
       ~10x slower path); runtime_probe.probe cross-checks it against float64 reference attention.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch

GPU_ORDER = ("flash-attn", "te", "aten-flash", "flex-compiled", "sdpa")
CPU_ORDER = ("sdpa", "flex")

# aten::_flash_attention_forward's leading positional arguments, as this probe passes them. The
# schema has changed across releases (keyword-only extras, new outputs): we check it before calling.
ATEN_FLASH_EXPECTED = (
    "query",
    "key",
    "value",
    "cum_seq_q",
    "cum_seq_k",
    "max_q",
    "max_k",
    "dropout_p",
    "is_causal",
    "return_debug_mask",
)


class BackendUnavailable(Exception):
    """This kernel cannot run here (not installed, wrong device or dtype, changed schema)."""


@dataclass
class Backend:
    name: str
    attend: Callable  # (q, k, v, cu|None, max_seqlen) -> out
    detail: str = ""  # version / schema, for the report
    mask: str = "varlen boundaries from cu_seqlens"  # how the kernel is told the boundaries when it gets cu_seqlens

    def describe(self, packed: bool) -> str:
        """What ran, for the report's kernel line: the boundaries it was given, or plain causal when
        no cu_seqlens reached it (the same call then attends over the whole row)."""
        how = self.mask if packed else "plain causal over the whole row (no cu_seqlens reached the kernel)"
        return f"{self.detail}; {how}" if self.detail else how


def document_ids(cu: torch.Tensor | None, tokens: int, device) -> torch.Tensor:
    """Token -> sub-sequence index from cu_seqlens; tokens outside [cu[0], cu[-1]) get -1 (they
    belong to no sub-sequence; a varlen kernel never writes them)."""
    pos = torch.arange(tokens, device=device)
    if cu is None:
        return torch.zeros(tokens, dtype=torch.long, device=device)
    cu = cu.to(device=device, dtype=torch.long)
    doc = torch.searchsorted(cu, pos, right=True) - 1
    doc[(pos < cu[0]) | (pos >= cu[-1])] = -1
    return doc


def block_causal_mask(cu: torch.Tensor | None, tokens: int, device) -> torch.Tensor:
    """[T, T] bool, True = may attend: same sub-sequence and key at or before the query."""
    doc = document_ids(cu, tokens, device)
    pos = torch.arange(tokens, device=device)
    return (doc[:, None] == doc[None, :]) & (doc[:, None] >= 0) & (pos[:, None] >= pos[None, :])


def _to_4d(x: torch.Tensor) -> torch.Tensor:
    # [T, H, D] -> [1, H, T, D], made contiguous: the CPU kernel is ~1.6x slower on the strided view
    return x.transpose(0, 1).unsqueeze(0).contiguous()


def _from_4d(x: torch.Tensor) -> torch.Tensor:
    return x.squeeze(0).transpose(0, 1).contiguous()


def _uncovered_rows_nan(out: torch.Tensor, cu: torch.Tensor | None) -> torch.Tensor:
    """Rows no sub-sequence covers are undefined for a varlen kernel; make that visible as NaN
    instead of whatever a masked softmax happens to return."""
    if cu is None:
        return out
    doc = document_ids(cu, out.shape[0], out.device)
    if bool((doc < 0).any()):
        out = out.clone()
        out[doc < 0] = float("nan")
    return out


# ---------------------------------------------------------------------------------------- kernels


def _make_sdpa(device: torch.device, dtype: torch.dtype) -> Backend:
    import torch.nn.functional as F

    cache: dict = {}

    def attend(q, k, v, cu, max_seqlen):
        # the leakage runs reuse one row layout many times: build its [T, T] mask once
        key = (None if cu is None else tuple(cu.tolist()), q.shape[0], str(q.device))
        mask = cache.get(key)
        if mask is None:
            cache.clear()
            allowed = block_causal_mask(cu, q.shape[0], q.device)
            # additive float mask (0 / -inf): SDPA would convert a bool mask on every call
            mask = torch.zeros(allowed.shape, dtype=q.dtype, device=q.device).masked_fill_(~allowed, float("-inf"))
            cache[key] = mask
        out = F.scaled_dot_product_attention(_to_4d(q), _to_4d(k), _to_4d(v), attn_mask=mask)
        return _uncovered_rows_nan(_from_4d(out), cu)

    return Backend(
        "sdpa",
        attend,
        f"torch {torch.__version__} scaled_dot_product_attention, 4-D input",
        mask="explicit [T, T] block-diagonal causal mask (additive) from cu_seqlens",
    )


def _flex_attend(flex_fn):
    from torch.nn.attention.flex_attention import create_block_mask

    cache: dict = {}

    def attend(q, k, v, cu, max_seqlen):
        tokens = q.shape[0]
        # one BlockMask per row layout: rebuilding it (a new mask_mod closure) for every leakage
        # run costs time eagerly and a recompilation under torch.compile
        key = (None if cu is None else tuple(cu.tolist()), tokens, str(q.device))
        block_mask = cache.get(key)
        if block_mask is None:
            doc = document_ids(cu, tokens, q.device)

            def mask_mod(b, h, q_idx, kv_idx):
                return (doc[q_idx] == doc[kv_idx]) & (doc[q_idx] >= 0) & (q_idx >= kv_idx)

            if len(cache) > 16:
                cache.clear()
            block_mask = cache[key] = create_block_mask(mask_mod, None, None, tokens, tokens, device=q.device)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*flex_attention called without torch.compile.*")
            out = flex_fn(_to_4d(q), _to_4d(k), _to_4d(v), block_mask=block_mask)
        return _uncovered_rows_nan(_from_4d(out), cu)

    return attend


def _make_flex(device: torch.device, dtype: torch.dtype) -> Backend:
    from torch.nn.attention.flex_attention import flex_attention

    return Backend(
        "flex",
        _flex_attend(flex_attention),
        f"torch {torch.__version__} flex_attention, eager (materialises the scores)",
        mask="document block mask from cu_seqlens",
    )


_COMPILED_FLEX = None


# Why compiled flex is refused on CPU: inductor's C++ flex-attention template (torch 2.13, the CPU
# build this project pins) returns wrong rows at random. Same inputs, same compiled kernel, three
# calls: rows 0-4 of a 24-token causal row off by up to 2.1 (or NaN) in some calls and exact in
# others, with 1 or 2 threads and with a plain `q >= kv` mask_mod (so not our document mask); head
# dims 8 and 16 at lengths like 24 show it, 32 and 64 did not. A kernel that reads memory it never
# wrote cannot prove anything, and a probe built on it reported correct configurations as FAILED.
# The GPU path (Triton template) is a different kernel and stays available.
CPU_FLEX_COMPILED_REFUSAL = (
    "flex-compiled is refused on CPU: torch's inductor C++ flex-attention kernel returns wrong, "
    "run-to-run different rows for small head dims (e.g. 8 or 16 with a 24-token sub-sample), which "
    "would report a correct configuration as FAILED; use --backend sdpa or flex on CPU "
    "(flex-compiled runs on CUDA)"
)


def _make_flex_compiled(device: torch.device, dtype: torch.dtype) -> Backend:
    global _COMPILED_FLEX
    if device.type != "cuda":
        raise BackendUnavailable(CPU_FLEX_COMPILED_REFUSAL)
    from torch.nn.attention.flex_attention import flex_attention

    if _COMPILED_FLEX is None:
        _COMPILED_FLEX = torch.compile(flex_attention, dynamic=False)
    return Backend(
        "flex-compiled",
        _flex_attend(_COMPILED_FLEX),
        f"torch {torch.__version__} torch.compile(flex_attention)",
        mask="document block mask from cu_seqlens",
    )


def _need_cuda_half(name: str, device: torch.device, dtype: torch.dtype) -> None:
    if device.type != "cuda":
        raise BackendUnavailable(f"{name} needs a CUDA device")
    if dtype not in (torch.float16, torch.bfloat16):
        raise BackendUnavailable(f"{name} needs float16 or bfloat16, not {str(dtype).replace('torch.', '')}")


def _make_flash_attn(device: torch.device, dtype: torch.dtype) -> Backend:
    _need_cuda_half("flash-attn", device, dtype)
    if importlib.util.find_spec("flash_attn") is None:
        raise BackendUnavailable(
            "flash-attn is not installed (pip install 'packlint[flash] @ git+https://github.com/packlint/packlint')"
        )
    try:
        import flash_attn
        from flash_attn import flash_attn_varlen_func
    except Exception as exc:  # a build for another torch/CUDA fails at import
        raise BackendUnavailable(f"flash-attn does not import: {exc}") from None

    def attend(q, k, v, cu, max_seqlen):
        if cu is None:
            cu = torch.tensor([0, q.shape[0]], dtype=torch.int32, device=q.device)
            max_seqlen = q.shape[0]
        out = flash_attn_varlen_func(q, k, v, cu, cu, int(max_seqlen), int(max_seqlen), dropout_p=0.0, causal=True)
        return out[0] if isinstance(out, tuple) else out

    return Backend("flash-attn", attend, f"flash_attn {getattr(flash_attn, '__version__', '?')} flash_attn_varlen_func")


def _make_te(device: torch.device, dtype: torch.dtype) -> Backend:
    _need_cuda_half("te", device, dtype)
    if importlib.util.find_spec("transformer_engine") is None:
        raise BackendUnavailable("Transformer Engine is not installed")
    try:
        import transformer_engine
        import transformer_engine.pytorch as te
    except Exception as exc:
        raise BackendUnavailable(f"Transformer Engine does not import: {exc}") from None
    cache: dict = {}

    def attend(q, k, v, cu, max_seqlen):
        heads, dim = q.shape[1], q.shape[2]
        if (heads, dim) not in cache:
            cache[(heads, dim)] = te.DotProductAttention(
                num_attention_heads=heads,
                kv_channels=dim,
                attention_dropout=0.0,
                qkv_format="thd",
                attn_mask_type="padding_causal",
            )
        if cu is None:
            cu = torch.tensor([0, q.shape[0]], dtype=torch.int32, device=q.device)
            max_seqlen = q.shape[0]
        out = cache[(heads, dim)](
            q,
            k,
            v,
            qkv_format="thd",
            attn_mask_type="padding_causal",
            cu_seqlens_q=cu,
            cu_seqlens_kv=cu,
            max_seqlen_q=int(max_seqlen),
            max_seqlen_kv=int(max_seqlen),
        )
        return out.reshape(q.shape[0], heads, dim)

    return Backend(
        "te",
        attend,
        f"transformer_engine {getattr(transformer_engine, '__version__', '?')} "
        "DotProductAttention(qkv_format='thd', attn_mask_type='padding_causal')",
    )


def aten_flash_schema() -> tuple[str, list[str]]:
    """The installed aten::_flash_attention_forward schema and its positional argument names."""
    op = torch.ops.aten._flash_attention_forward.default
    schema = op._schema
    names = [a.name for a in schema.arguments if not a.kwarg_only]
    return str(schema), names


def _make_aten_flash(device: torch.device, dtype: torch.dtype) -> Backend:
    _need_cuda_half("aten-flash", device, dtype)
    try:
        schema, names = aten_flash_schema()
    except (AttributeError, RuntimeError) as exc:
        raise BackendUnavailable(f"this torch has no aten::_flash_attention_forward ({exc})") from None
    if tuple(names[: len(ATEN_FLASH_EXPECTED)]) != ATEN_FLASH_EXPECTED:
        raise BackendUnavailable(f"aten::_flash_attention_forward schema changed: {schema}")
    op = torch.ops.aten._flash_attention_forward

    def attend(q, k, v, cu, max_seqlen):
        if cu is None:
            cu = torch.tensor([0, q.shape[0]], dtype=torch.int32, device=q.device)
            max_seqlen = q.shape[0]
        # positional, in schema order: q, k, v, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
        # is_causal, return_debug_mask
        res = op(q, k, v, cu, cu, int(max_seqlen), int(max_seqlen), 0.0, True, False)
        return res[0]

    return Backend("aten-flash", attend, f"torch {torch.__version__} {schema}")


_FACTORIES = {
    "sdpa": _make_sdpa,
    "flex": _make_flex,
    "flex-compiled": _make_flex_compiled,
    "flash-attn": _make_flash_attn,
    "te": _make_te,
    "aten-flash": _make_aten_flash,
}


def make_backend(name: str, device: torch.device, dtype: torch.dtype) -> Backend:
    """Build one named backend or raise BackendUnavailable with the reason."""
    if name in ("flex", "flex-compiled"):
        try:
            importlib.import_module("torch.nn.attention.flex_attention")
        except ImportError:
            raise BackendUnavailable(f"this torch ({torch.__version__}) has no flex_attention") from None
    return _FACTORIES[name](device, dtype)


def candidate_names(requested: str, device: torch.device) -> list[str]:
    """The backends to try, in order: the one asked for, or the device's preference order."""
    if requested != "auto":
        return [requested]
    return list(GPU_ORDER if device.type == "cuda" else CPU_ORDER)


def choose_backend(requested: str, device: torch.device, dtype: torch.dtype) -> tuple[Backend, list[str]]:
    """The requested backend, or the first usable one in the device's order. Returns the backend and
    why the ones before it were skipped. Raises BackendUnavailable when none can run."""
    order = candidate_names(requested, device)
    skipped: list[str] = []
    for name in order:
        try:
            return make_backend(name, device, dtype), skipped
        except BackendUnavailable as exc:
            skipped.append(f"{name}: {exc}")
    raise BackendUnavailable("no usable attention backend: " + "; ".join(skipped))


def default_tolerance(dtype: torch.dtype) -> float:
    """Absolute tolerance for packed-vs-alone on O(1) outputs: a few units in the last place of the
    dtype, times the depth of the reduction; the same kernel on a shorter row differs only in
    blocking and summation order."""
    eps = torch.finfo(dtype).eps
    return float(max(1e-5, 16 * eps) if dtype == torch.float32 else 8 * eps)
