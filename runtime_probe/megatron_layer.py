"""`--megatron-layer`: push the packed row through a real Megatron-Core TransformerLayer (local spec,
RoPE applied per sub-sequence as GPTModel does for `thd`), with the core attention swapped for the
probe's chosen kernel. This exercises Megatron's own thd code path (squeeze of the batch dim,
apply_rotary_pos_emb with cu_seqlens, reshape back), not just the kernel.

CPU notes: Megatron-Core 0.16.1 builds this layer on CPU with `use_cpu_initialization`. Two
things assume CUDA: RotaryEmbedding moves its `inv_freq` buffer to torch.cuda.current_device() at
the first forward (shimmed below), and DotProductAttention uses the global CUDA memory buffer and
the CUDA RNG tracker for attention dropout (gone with the core attention we replace; dropout is 0
and the layer is in eval mode, so the tracker is never entered). Megatron still wants its process
groups, so we start a one-rank gloo group in memory (no port is opened).
"""

from __future__ import annotations

import warnings

import torch

from runtime_probe.backends import Backend


def _init_groups() -> None:
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    from megatron.core import parallel_state

    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(tensor_model_parallel_size=1, pipeline_model_parallel_size=1)


def megatron_classes(backend: Backend):
    """(VarlenCoreAttention, CpuSafeRotaryEmbedding): the core attention that hands thd input to the
    probe's kernel, and the CPU-safe RoPE. Shared by the single layer and the whole GPTModel."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Transformer Engine and Apex are not installed" x4
        _init_groups()
        from megatron.core.models.common.embeddings.rotary_pos_embedding import RotaryEmbedding
        from megatron.core.transformer.module import MegatronModule

    class VarlenCoreAttention(MegatronModule):
        """Stands in for DotProductAttention: thd input [t, np, hn] with packed_seq_params goes to the
        varlen kernel with its cu_seqlens; sbhd input [s, b, np, hn] without is plain causal per row."""

        def __init__(self, config, layer_number, attn_mask_type, attention_type, **kwargs):
            super().__init__(config=config)

        def forward(
            self,
            query,
            key,
            value,
            attention_mask,
            attn_mask_type=None,
            attention_bias=None,
            packed_seq_params=None,
            **kwargs,
        ):
            if packed_seq_params is not None and packed_seq_params.qkv_format == "thd":
                out = backend.attend(query, key, value, packed_seq_params.cu_seqlens_q, packed_seq_params.max_seqlen_q)
                return out.reshape(out.shape[0], -1)
            rows = [
                backend.attend(query[:, i], key[:, i], value[:, i], None, query.shape[0]) for i in range(query.shape[1])
            ]
            out = torch.stack(rows, dim=1)
            return out.reshape(out.shape[0], out.shape[1], -1)

    class CpuSafeRotaryEmbedding(RotaryEmbedding):
        """CPU shim: RotaryEmbedding.get_emb moves its `inv_freq` buffer to
        torch.cuda.current_device() at the first forward, which raises on a CPU-only torch. On
        CPU we build the same embedding with Megatron's own frequency code, minus that move."""

        def get_emb(self, max_seq_len: int, offset: int = 0):
            if torch.cuda.is_available() or self.inv_freq.device.type != "cpu":
                return super().get_emb(max_seq_len, offset)
            freqs = self.get_freqs_non_repeated(max_seq_len, offset)
            if not self.rotary_interleaved:
                emb = torch.cat((freqs, freqs), dim=-1)
            else:
                emb = torch.stack((freqs.view(-1, 1), freqs.view(-1, 1)), dim=-1).view(freqs.shape[0], -1)
            return emb[:, None, None, :]

    return VarlenCoreAttention, CpuSafeRotaryEmbedding


def build_layer(backend: Backend, heads: int, head_dim: int, dtype: torch.dtype, device: torch.device, seed: int):
    """One TransformerLayer with the core attention replaced by `backend`. Returns
    (packed_fn(x, packed_seq_params) -> y, alone_fn(x) -> y, description)."""
    VarlenCoreAttention, CpuSafeRotaryEmbedding = megatron_classes(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.transformer.transformer_config import TransformerConfig
        from megatron.core.transformer.transformer_layer import TransformerLayer

    hidden = heads * head_dim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = _config(TransformerConfig, heads, head_dim, hidden, dtype)
    spec = get_gpt_layer_local_spec()

    spec.submodules.self_attention.submodules.core_attention = VarlenCoreAttention
    torch.manual_seed(seed)
    # cast as Megatron's Float16Module does for a bf16/fp16 run: the norms too (TorchNorm builds them in
    # float32, and CUDA's layer_norm refuses a float32 weight on a bfloat16 input, where CPU's accepts it)
    layer = TransformerLayer(config, spec.submodules, layer_number=1).to(device=device, dtype=dtype).eval()
    rope = CpuSafeRotaryEmbedding(kv_channels=head_dim, rotary_percent=1.0, use_cpu_initialization=True).to(device)

    def packed_fn(x: torch.Tensor, packed_seq_params) -> torch.Tensor:
        # GPTModel: rotary_pos_emb(rotary_seq_len, packed_seq=thd); positions restart per sub-sequence
        thd = packed_seq_params is not None and packed_seq_params.qkv_format == "thd"
        freqs = rope(x.shape[0], packed_seq=thd)
        with torch.no_grad():
            out, _ = layer(
                hidden_states=x.unsqueeze(1),
                attention_mask=None,
                rotary_pos_emb=freqs,
                packed_seq_params=packed_seq_params,
            )
        return out.squeeze(1)

    def alone_fn(x: torch.Tensor) -> torch.Tensor:
        return packed_fn(x, None)  # a row holding just this sub-sample, not packed

    desc = (
        f"Megatron-Core TransformerLayer (local spec, hidden {hidden}, {heads} heads, RoPE, "
        f"core attention -> {backend.name})"
    )
    return packed_fn, alone_fn, desc


def _config(TransformerConfig, heads: int, head_dim: int, hidden: int, dtype: torch.dtype, layers: int = 1):
    """A small config with every CUDA-only fusion off and no dropout (the probe is a forward)."""
    return TransformerConfig(
        num_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        kv_channels=head_dim,
        ffn_hidden_size=4 * hidden,
        hidden_dropout=0.0,
        attention_dropout=0.0,
        use_cpu_initialization=True,
        params_dtype=dtype,
        bf16=dtype == torch.bfloat16,
        fp16=dtype == torch.float16,
        bias_dropout_fusion=False,
        masked_softmax_fusion=False,
        apply_rope_fusion=False,
        gradient_accumulation_fusion=False,
        persist_layer_norm=False,
    )


def layer_inputs(
    tokens: int, hidden: int, dtype: torch.dtype, device: torch.device, generator: torch.Generator
) -> torch.Tensor:
    x = torch.randn(tokens, hidden, generator=generator, dtype=torch.float32)
    return x.to(device=device, dtype=dtype)


__all__ = ["build_layer", "layer_inputs"]
