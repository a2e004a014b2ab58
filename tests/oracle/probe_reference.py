"""An independent float64 reference for the HF probe's verdicts. It shares no code with runtime_probe:
its own tiny configs (written out below, other sizes than the probe's), its own packed rows, its own
perturbations and thresholds; only transformers' model classes are common (they are what is tested).

For one cell (model x collator mode x attention implementation x use_cache) it answers, in float64:
- "leak": changing one sample's tokens moves another sample's logits (beyond 1e-11 x max |logit|);
- "differs": no sample moves another, but a sample's logits packed differ from its logits alone
  (beyond 1e-6 x max |logit|: eager attention takes its softmax in float32);
- "proven": neither.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

os.environ["HF_HUB_OFFLINE"] = "1"

LEAK_REL = 1e-11
ALONE_REL = 1e-6

_BASE = {
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 8,
    "vocab_size": 96,
    "max_position_embeddings": 128,
    "pad_token_id": None,
    "bos_token_id": None,
    "eos_token_id": None,
}


@dataclass(frozen=True)
class RefModel:
    """A reference model: the model type, the config the reference builds (its own sizes), and what the
    probe is told (a model type, or a config.json of the same architecture the test writes)."""

    name: str
    model_type: str
    config: dict
    probe_config: dict | None = None  # None: the probe gets --model-type only (its own defaults / table)
    multimodal: bool = False


def _hybrid(init: float) -> dict:
    return {"initializer_range": init}


MODELS: dict[str, RefModel] = {
    "llama": RefModel("llama", "llama", {}),
    "qwen2": RefModel("qwen2", "qwen2", {}),
    "mistral-window4": RefModel(
        "mistral-window4", "mistral", {"sliding_window": 4}, {"model_type": "mistral", "sliding_window": 4}
    ),
    "qwen2_moe": RefModel(
        "qwen2_moe",
        "qwen2_moe",
        {
            "num_experts": 4,
            "num_experts_per_tok": 2,
            "moe_intermediate_size": 24,
            "shared_expert_intermediate_size": 24,
        },
    ),
    "lfm2-conv": RefModel("lfm2-conv", "lfm2", {"layer_types": ["conv", "full_attention"]}),
    **{
        f"falcon_h1@{init}": RefModel(
            f"falcon_h1@{init}",
            "falcon_h1",
            {
                **_hybrid(init),
                "mamba_d_ssm": 64,
                "mamba_n_heads": 8,
                "mamba_d_head": 8,
                "mamba_d_state": 8,
                "mamba_n_groups": 1,
                "mamba_chunk_size": 8,
            },
            {"model_type": "falcon_h1", **_hybrid(init)},
        )
        for init in (0.02, 0.002)
    },
    **{
        f"jamba@{init}": RefModel(
            f"jamba@{init}",
            "jamba",
            {
                **_hybrid(init),
                "attn_layer_period": 2,
                "attn_layer_offset": 1,
                "expert_layer_period": 2,
                "expert_layer_offset": 1,
                "num_experts": 2,
                "num_experts_per_tok": 1,
                "mamba_d_state": 8,
                "mamba_dt_rank": 4,
                "use_mamba_kernels": False,
            },
            {"model_type": "jamba", **_hybrid(init)},
        )
        for init in (0.02, 0.002)
    },
    **{
        f"qwen3_next@{init}": RefModel(
            f"qwen3_next@{init}",
            "qwen3_next",
            {
                **_hybrid(init),
                "layer_types": ["linear_attention", "full_attention"],
                "linear_num_key_heads": 2,
                "linear_num_value_heads": 4,
                "linear_key_head_dim": 8,
                "linear_value_head_dim": 8,
                "num_experts": 4,
                "num_experts_per_tok": 2,
                "moe_intermediate_size": 24,
                "shared_expert_intermediate_size": 24,
            },
            {"model_type": "qwen3_next", **_hybrid(init)},
        )
        for init in (0.02, 0.002)
    },
    "qwen2_5_vl": RefModel(
        "qwen2_5_vl",
        "qwen2_5_vl",
        {"rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]}},
        multimodal=True,
    ),
}

MODES = ("position_ids", "position_ids+mask", "block4d", "concat")


def build(ref: RefModel, attn: str, seed: int):
    """The reference's own tiny model in float64 (eager MoE experts: exact per token)."""
    import torch
    from transformers import CONFIG_MAPPING, AutoModelForCausalLM, AutoModelForImageTextToText

    torch.manual_seed(1000 + seed)
    if ref.multimodal:
        vision = {"depth": 1, "hidden_size": 16, "intermediate_size": 32, "num_heads": 2, "out_hidden_size": 32}
        vision["fullatt_block_indexes"] = [0]
        text = {**_BASE, **ref.config, "model_type": f"{ref.model_type}_text"}
        cfg = CONFIG_MAPPING[ref.model_type](text_config=text, vision_config=vision)
        model = AutoModelForImageTextToText.from_config(cfg, attn_implementation=attn)
    else:
        cfg = CONFIG_MAPPING[ref.model_type](**{**_BASE, **ref.config})
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation=attn)
    if any("Experts" in type(m).__name__ for m in model.modules()):
        model.set_experts_implementation("eager")
    return model.to(torch.float64).eval()


def _row(mode: str, samples: list):
    """The reference's own packing: input_ids, and what each collator mode passes with them."""
    import torch

    ids = torch.cat(samples).unsqueeze(0)
    total = ids.shape[1]
    restart = torch.cat([torch.arange(len(x)) for x in samples]).unsqueeze(0)
    kw = {"input_ids": ids}
    if mode == "position_ids":
        kw["position_ids"] = restart
    elif mode == "position_ids+mask":
        kw["position_ids"] = restart
        kw["attention_mask"] = torch.ones(1, total, dtype=torch.long)
    elif mode == "block4d":
        owner = torch.repeat_interleave(torch.arange(len(samples)), torch.tensor([len(x) for x in samples]))
        keep = (owner[:, None] == owner[None, :]) & (torch.arange(total)[:, None] >= torch.arange(total)[None, :])
        mask = torch.full((total, total), torch.finfo(torch.float64).min, dtype=torch.float64)
        mask[keep] = 0.0
        kw["position_ids"] = restart
        kw["attention_mask"] = mask[None, None]
    else:  # concat: one causal row, positions continue
        kw["position_ids"] = torch.arange(total).unsqueeze(0)
        kw["attention_mask"] = torch.ones(1, total, dtype=torch.long)
    return kw


def reference_cells(
    ref: RefModel, attn: str, seed: int, modes=MODES, caches=(False, True), lengths=(6, 9, 4, 8)
) -> dict[tuple[str, bool], dict]:
    """{(mode, use_cache): {"verdict", "leak", "alone", "scale"}} for one model, in float64."""
    import torch

    model = build(ref, attn, seed)
    vocab = _BASE["vocab_size"]
    g = torch.Generator().manual_seed(2000 + seed)
    samples = [torch.randint(0, vocab, (n,), generator=g) for n in lengths]
    changes = [torch.randint(0, vocab, (n,), generator=g) for n in lengths]
    ends = torch.tensor(lengths).cumsum(0).tolist()
    starts = [0] + ends[:-1]
    out = {}
    for use_cache in caches:

        def logits(kw, use_cache=use_cache):
            with torch.no_grad():
                return model(**kw, use_cache=use_cache).logits[0]

        alone = [logits({"input_ids": x.unsqueeze(0)}) for x in samples]
        for mode in modes:
            packed = logits(_row(mode, samples))
            scale = max(float(packed.abs().max()), *(float(a.abs().max()) for a in alone))
            alone_err = max(float((packed[a:b] - y).abs().max()) for a, b, y in zip(starts, ends, alone, strict=True))
            leak = 0.0
            for i in range(len(samples)):
                changed = list(samples)
                changed[i] = changes[i]
                delta = (logits(_row(mode, changed)) - packed).abs()
                delta[starts[i] : ends[i]] = 0.0
                leak = max(leak, float(delta.max()))
            if leak > LEAK_REL * scale:
                verdict = "leak"
            elif alone_err > ALONE_REL * scale:
                verdict = "differs"
            else:
                verdict = "proven"
            out[(mode, use_cache)] = {"verdict": verdict, "leak": leak, "alone": alone_err, "scale": scale}
    return out
