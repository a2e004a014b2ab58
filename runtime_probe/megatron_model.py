"""`--megatron-gpt`: the installed Megatron-Core's whole GPTModel (tiny: embeddings, RoPE, N layers,
output layer), THD `PackedSeqParams` vs each sample alone, and the LLaVA image-expansion case.

CPU notes: Megatron-Core's local `DotProductAttention` refuses packed sequences
(megatron/core/transformer/dot_product_attention.py:153 in 0.16.1: "Packed sequence is not supported
by DotProductAttention. Please use TEDotProductAttention instead"), so the core attention is the
probe's varlen kernel (runtime_probe.megatron_layer.megatron_classes), exactly as `--megatron-layer`
does; everything around it (embedding, GPTModel's thd RoPE with cu_seqlens, layer norms, MLP, output
layer) is Megatron's own code. RoPE gets the same CPU shim as the layer mode.

LLaVA: LLaVAModel._preprocess_data expands each image placeholder into the vision tokens before the
language model; the cu_seqlens handed to it stay in collapsed space (one token per image) unless they
are remapped (NVIDIA/Megatron-LM PR #3427, closed unmerged: Energon expands image tokens at data
preparation, so Megatron-LM's own SFT path is unaffected). The probe builds that expanded row (text
embeddings from the model's embedding, image embeddings as random vectors of the same scale) and
feeds it to GPTModel as decoder_input, with collapsed or expanded cu_seqlens.
"""

from __future__ import annotations

import time
import warnings

import torch

from runtime_probe.gpt_settings import GPTProbeSettings
from runtime_probe.report import FAIL, PASS, ProbeReport

IMAGE_AT = 1  # the image placeholder follows the first text token of each sample


def build_gpt(s: GPTProbeSettings, backend, dtype, device):
    """A tiny GPTModel on the local spec with the core attention swapped for `backend`."""
    from runtime_probe.megatron_layer import _config, megatron_classes

    VarlenCoreAttention, CpuSafeRotaryEmbedding = megatron_classes(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.models.gpt import GPTModel
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.transformer.transformer_config import TransformerConfig

        config = _config(TransformerConfig, s.heads, s.head_dim, s.heads * s.head_dim, dtype, layers=s.layers)
        spec = get_gpt_layer_local_spec()
        spec.submodules.self_attention.submodules.core_attention = VarlenCoreAttention
        torch.manual_seed(s.seed)
        model = GPTModel(
            config,
            spec,
            vocab_size=s.vocab,
            max_sequence_length=1024,
            position_embedding_type="rope",
            pre_process=True,
            post_process=True,
        )
    if device.type == "cpu":
        model.rotary_pos_emb.__class__ = CpuSafeRotaryEmbedding
    return model.to(device=device, dtype=dtype).eval()


def packed_params(PackedSeqParams, cu: list[int], device):
    t = torch.tensor(cu, dtype=torch.int32, device=device)
    m = max(b - a for a, b in zip(cu[:-1], cu[1:], strict=True))
    return PackedSeqParams(qkv_format="thd", cu_seqlens_q=t, cu_seqlens_kv=t, max_seqlen_q=m, max_seqlen_kv=m)


def run_gpt_probe(s: GPTProbeSettings) -> ProbeReport:
    """PROVEN when every sample's logits packed equal its logits alone and perturbing one sample
    changes no other's by exactly 0; FAILED with the numbers otherwise."""
    s.validate()
    from runtime_probe import megatron_import
    from runtime_probe.backends import BackendUnavailable, choose_backend, default_tolerance
    from runtime_probe.probe import NoBackend, TorchMissing, attention_work, resolve_device, resolve_dtype
    from runtime_probe.static_checks import check_packed_params

    timings: dict[str, float] = {}
    t = time.perf_counter()
    try:
        PackedSeqParams = megatron_import.load_packed_seq_params(full_import=True)
    except ImportError:
        raise TorchMissing("the probe needs megatron-core: pip install 'packlint[probe]'") from None
    timings["import megatron.core"] = time.perf_counter() - t
    t = time.perf_counter()
    device = resolve_device(s.device)
    dtype = resolve_dtype(s.dtype, device)
    try:
        backend, skipped = choose_backend(s.backend, device, dtype)
    except BackendUnavailable as exc:
        raise NoBackend(str(exc)) from None
    model = build_gpt(s, backend, dtype, device)
    timings["build model"] = time.perf_counter() - t
    version = megatron_import.megatron_version() or "?"

    text = s.true_lengths()
    llava = s.case != "packed"
    k = s.image_tokens if llava else 1
    lengths = [n - 1 + k for n in text] if llava else text  # expanded: the placeholder becomes k tokens
    collapsed = text
    bounds, a = [], 0
    for n in lengths:
        bounds.append((a, a + n))
        a += n
    total = a
    r = ProbeReport(settings=s.to_json(), backend=backend.name, device=str(device))
    r.dtype = str(dtype).replace("torch.", "")
    r.notes.extend(s.notes)
    r.notes.extend(f"backend skipped: {x}" for x in skipped)
    r.lengths, r.tokens = lengths, total
    r.work = attention_work(lengths)
    r.backend_detail = (
        f"Megatron-Core {version} GPTModel (local spec, {s.layers} layers, hidden {s.heads * s.head_dim}, "
        f"{s.heads} heads, RoPE, vocab {s.vocab}); core attention -> {backend.describe(True)}"
    )
    gen = torch.Generator().manual_seed(s.seed)
    ids = [torch.randint(0, s.vocab, (n,), generator=gen) for n in text]
    hidden = s.heads * s.head_dim

    with torch.no_grad():
        if llava:
            scale = float(model.embedding.word_embeddings.weight.float().std())
            images = [torch.randn(k, hidden, generator=gen) * scale for _ in text]

            def embed(i: int, sample_ids, image):
                e = model.embedding.word_embeddings(sample_ids.to(device))  # [n, h] (RoPE model: no positions)
                e = torch.cat([e[:IMAGE_AT], image.to(device=device, dtype=e.dtype), e[IMAGE_AT + 1 :]])
                return e

            pieces = [embed(i, x, im) for i, (x, im) in enumerate(zip(ids, images, strict=True))]
            cu_true = [0] + [int(x) for x in torch.tensor(lengths).cumsum(0)]
            cu_coll = [0] + [int(x) for x in torch.tensor(collapsed).cumsum(0)]
            r.pipeline.append(
                f"LLaVA _preprocess_data: each of {len(text)} samples has one image placeholder expanded into "
                f"{k} image embeddings: {sum(text)} collapsed tokens -> {total} expanded"
            )
            if s.case == "llava-collapsed":
                cu = cu_coll + ([total] if cu_coll[-1] < total else [])
                r.pipeline.append(
                    f"cu_seqlens left in collapsed space {cu_coll} (Megatron-LM PR #3427's bug); the expanded tail "
                    f"[{cu_coll[-1]}, {total}) is handed over as one more sub-sequence, the way a padded tail is"
                )
            else:
                cu = cu_true
                r.pipeline.append(f"cu_seqlens remapped to expanded space {cu_true} (PR #3427's remap)")

            def run_packed(pcs):
                x = torch.cat(pcs)[:, None, :]  # [T, 1, h]
                p = packed_params(PackedSeqParams, cu, device)
                return model(
                    input_ids=None, position_ids=None, attention_mask=None, decoder_input=x, packed_seq_params=p
                )[0].float()

            def run_alone(i):
                return model(
                    input_ids=None, position_ids=None, attention_mask=None, decoder_input=pieces[i][:, None, :]
                )[0].float()

            def perturbed(i):
                pcs = list(pieces)
                pcs[i] = torch.randn(pcs[i].shape, generator=gen).to(device=device, dtype=pcs[i].dtype) * scale
                return pcs

            if s.case == "llava-collapsed":
                # first, exactly what PR #3427 describes: collapsed cu_seqlens over the expanded row
                try:
                    x = torch.cat(pieces)[:, None, :]
                    model(
                        input_ids=None,
                        position_ids=None,
                        attention_mask=None,
                        decoder_input=x,
                        packed_seq_params=packed_params(PackedSeqParams, cu_coll, device),
                    )
                    r.add(
                        "collapsed cu_seqlens as they are",
                        FAIL,
                        f"accepted: cu_seqlens end at {cu_coll[-1]} over a row of {total} tokens",
                    )
                except Exception as exc:  # noqa: BLE001 - what Megatron does with them is the finding
                    first = (str(exc).strip().splitlines() or [""])[0]
                    r.add(
                        "collapsed cu_seqlens as they are",
                        FAIL,
                        f"cu_seqlens end at {cu_coll[-1]}, the row has {total} tokens: Megatron-Core's unfused thd "
                        f"RoPE raises {type(exc).__name__}: {first[:160]} (fused RoPE and the varlen kernels do not "
                        "check: they attend across the wrong boundaries)",
                    )
        else:
            cu = [0] + [int(x) for x in torch.tensor(lengths).cumsum(0)]
            r.pipeline.append(f"{len(text)} samples in one THD row of {total} tokens, cu_seqlens {cu}")

            def run_packed(pcs):
                p = packed_params(PackedSeqParams, cu, device)
                return model(
                    input_ids=torch.cat(pcs)[None].to(device),
                    position_ids=None,
                    attention_mask=None,
                    packed_seq_params=p,
                )[0].float()

            def run_alone(i):
                x = ids[i][None].to(device)
                pos = torch.arange(x.shape[1], device=device)[None]
                return model(input_ids=x, position_ids=pos, attention_mask=None)[0].float()

            def perturbed(i):
                pcs = list(ids)
                pcs[i] = (ids[i] + 1 + torch.randint(0, s.vocab - 1, ids[i].shape, generator=gen)) % s.vocab
                return pcs

            pieces = ids
        p = packed_params(PackedSeqParams, cu, device)
        r.cu_seqlens, r.max_seqlen = cu, int(p.max_seqlen_q)
        r.shapes = {"decoder_input" if llava else "input_ids": [total, 1, hidden] if llava else [1, total]}
        checks = check_packed_params(p, total, device)
        r.checks.extend(checks)

        t = time.perf_counter()
        out = run_packed(pieces)
        timings["forward"] = time.perf_counter() - t
        r.add("forward", PASS, f"one GPTModel forward over {total} tokens on {device} with cu_seqlens {cu}")
        t = time.perf_counter()
        errs, scale_out = [], 1.0
        for i, (a, b) in enumerate(bounds):
            alone = run_alone(i)
            scale_out = max(scale_out, float(alone.abs().max()))
            errs.append(float((out[a:b] - alone).abs().max()))
        tol = default_tolerance(dtype) * scale_out
        worst = max(range(len(errs)), key=lambda j: errs[j])
        ok = errs[worst] <= tol
        r.add(
            "(i) packed == each sample alone",
            PASS if ok else FAIL,
            f"max |logits packed - alone| = {errs[worst]:.3g} over {len(errs)} samples at their true (expanded) "
            f"boundaries (tolerance {tol:.2g} for {r.dtype})" + ("" if ok else f"; worst: sample {worst}"),
            {"max_error": errs[worst], "tolerance": tol, "per_sample": errs},
        )
        per, leak = [], 0.0
        for i in range(len(pieces) - 1):
            out2 = run_packed(perturbed(i))
            diff = (out2 - out).abs().amax(dim=-1)
            a, b = bounds[i]
            diff[a:b] = 0.0
            diff = torch.nan_to_num(diff, nan=float("inf"))
            change = float(diff.max())
            per.append({"perturbed": i, "max_change": change})
            leak = max(leak, change)
        timings["verify"] = time.perf_counter() - t
    mean = float(out.abs().mean())
    r.leakage = {
        "abs": leak,
        "rel": leak / mean if mean else float("inf"),
        "mean_abs_output": mean,
        "per_perturbed": per,
    }
    w = max(per, key=lambda d: d["max_change"]) if per else {}
    r.add(
        "(ii) leakage",
        PASS if leak == 0.0 else FAIL,
        "perturbing each sample but the last changes no other sample's logits: exactly 0"
        if leak == 0.0
        else f"perturbing sample {w['perturbed']} changes another sample's logits by {leak:.3g}",
        leak,
    )
    r.verdict = "proven" if r.ok else "failed"
    r.timings_s = timings
    return r
