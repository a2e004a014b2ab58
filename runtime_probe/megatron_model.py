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
preparation, so Megatron-LM's own SFT path is unaffected). The probe builds the installed
megatron-core's real `LLaVAModel` (tiny: a one-layer ViT of the `internvit` subtype on the local ViT
spec, the `mlp` projector, the GPT language model above) and runs its own forward, vision encoder,
projector and `_preprocess_data` included, over one packed THD row with collapsed or expanded
cu_seqlens. Two CPU shims besides the core attention and RoPE ones: `CLIPViTModel.__init__` puts its
position ids on CUDA (megatron/core/models/vision/clip_vit_model.py:124, `.cuda()`), which is
made a no-op while the model is built on CPU; and the `clip`/`siglip` subtypes cannot be built
without Transformer Engine at all (clip_vit_model.py:22 falls back to `torch.nn.LayerNorm`, which
`build_module(ln_pre_impl, config=...)` at :92 cannot construct), hence `internvit`, which has no
pre/post norm. If the real model cannot be built, the probe says why in one note and re-enacts the
expansion on the GPTModel (text embeddings from the model's embedding, image embeddings random at the
same scale, fed as decoder_input).
"""

from __future__ import annotations

import time
import warnings
from contextlib import contextmanager

import torch

from runtime_probe.gpt_settings import GPTProbeSettings
from runtime_probe.report import FAIL, PASS, ProbeReport, check_packed_vs_alone

IMAGE_AT = 1  # the image placeholder follows the first text token of each sample
IMAGE_TOKEN = -200  # megatron.core.models.multimodal.llava_model.DEFAULT_IMAGE_TOKEN_INDEX
VISION_TYPE = "internvit"  # the tiny ViT: its subtype, layers, heads, head size, patch size
VISION: dict[str, int] = {"layers": 1, "heads": 2, "head_dim": 16, "patch": 2}


@contextmanager
def _cuda_calls_stay_on(device):
    """CPU shim for building LLaVAModel: CLIPViTModel.__init__ does `torch.arange(...).cuda()`
    (megatron/core/models/vision/clip_vit_model.py:124 in 0.16.1), which raises on a CPU-only torch.
    While the model is built for a CPU run, Tensor.cuda returns the tensor unchanged."""
    if device.type != "cpu":
        yield
        return
    saved = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *a, **k: self  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.cuda = saved  # type: ignore[method-assign]


def build_llava(s: GPTProbeSettings, backend, dtype, device):
    """The installed megatron-core's LLaVAModel, tiny: the language model is build_gpt's GPTModel (local
    spec, core attention -> `backend`), the vision model a one-layer `internvit` ViT on the local ViT
    spec whose image is one row of `image_tokens` patches (class token dropped), so that each image
    placeholder expands into exactly `image_tokens` embeddings; the projector is the `mlp` type."""
    from runtime_probe.megatron_layer import _config, megatron_classes

    VarlenCoreAttention, CpuSafeRotaryEmbedding = megatron_classes(backend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import logging

        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec, get_mlp_module_spec
        from megatron.core.models.multimodal.llava_model import LLaVAModel
        from megatron.core.models.vision.vit_layer_specs import get_vit_layer_with_local_spec
        from megatron.core.transformer.transformer_config import TransformerConfig

        hidden = s.heads * s.head_dim
        language = _config(TransformerConfig, s.heads, s.head_dim, hidden, dtype, layers=s.layers)
        vh = VISION["heads"] * VISION["head_dim"]
        vision = _config(TransformerConfig, VISION["heads"], VISION["head_dim"], vh, dtype, layers=VISION["layers"])
        vision.vision_model_type = VISION_TYPE  # read by LLaVAModel.__init__ (llava_model.py:248)
        projection = _config(TransformerConfig, s.heads, s.head_dim, hidden, dtype)
        projection.ffn_hidden_size = hidden
        lspec = get_gpt_layer_local_spec()
        lspec.submodules.self_attention.submodules.core_attention = VarlenCoreAttention
        vspec = get_vit_layer_with_local_spec()  # causal, like the GPT spec; DotProductAttention swapped too
        vspec.submodules.self_attention.submodules.core_attention = VarlenCoreAttention
        torch.manual_seed(s.seed)
        logging.getLogger("megatron.core.models.multimodal.llava_model").setLevel(logging.ERROR)  # "work in progress"
        with _cuda_calls_stay_on(device):
            model = LLaVAModel(
                language_transformer_config=language,
                language_transformer_layer_spec=lspec,
                language_vocab_size=s.vocab,
                language_max_sequence_length=s.max_sequence_length(),
                vision_transformer_config=vision,
                vision_transformer_layer_spec=vspec,
                drop_vision_class_token=True,
                vision_projection_config=projection,
                vision_projection_layer_spec=get_mlp_module_spec(use_te=False).submodules,
                vision_projection_type="mlp",
                language_position_embedding_type="rope",
                img_h=VISION["patch"],
                img_w=VISION["patch"] * s.image_tokens,
                patch_dim=VISION["patch"],
                image_token_index=IMAGE_TOKEN,
            )
    if model.img_seq_len != s.image_tokens:
        raise RuntimeError(f"LLaVAModel.img_seq_len is {model.img_seq_len}, expected {s.image_tokens}")
    if device.type == "cpu":
        model.language_model.rotary_pos_emb.__class__ = CpuSafeRotaryEmbedding
    model.vision_model.position_ids = model.vision_model.position_ids.to(device)
    return model.to(device=device, dtype=dtype).eval()


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
            max_sequence_length=s.max_sequence_length(),
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
        raise TorchMissing(
            "the probe needs megatron-core: pip install 'packlint[probe] @ git+https://github.com/packlint/packlint'"
        ) from None
    timings["import megatron.core"] = time.perf_counter() - t
    t = time.perf_counter()
    device = resolve_device(s.device)
    dtype = resolve_dtype(s.dtype, device)
    try:
        backend, skipped = choose_backend(s.backend, device, dtype)
    except BackendUnavailable as exc:
        raise NoBackend(str(exc)) from None
    llava = s.case != "packed"
    model = None if llava and not s.reenact else build_gpt(s, backend, dtype, device)
    timings["build model"] = time.perf_counter() - t
    version = megatron_import.megatron_version() or "?"

    text = s.true_lengths()
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
    real = None

    with torch.no_grad():
        if llava:
            cu_true = [0] + [int(x) for x in torch.tensor(lengths).cumsum(0)]
            cu_coll = [0] + [int(x) for x in torch.tensor(collapsed).cumsum(0)]
            cu = cu_true if s.case == "llava-expanded" else cu_coll + ([total] if cu_coll[-1] < total else [])
            if not s.reenact:
                t = time.perf_counter()
                try:
                    real = build_llava(s, backend, dtype, device)
                except Exception as exc:  # noqa: BLE001 - a model that cannot be built here is one note
                    r.notes.append(
                        f"the real LLaVAModel cannot be built here ({type(exc).__name__}: "
                        f"{(str(exc).strip().splitlines() or [''])[0][:160]}); its expansion is re-enacted on GPTModel"
                    )
                timings["build LLaVAModel"] = time.perf_counter() - t
            if real is not None:
                pieces, run_packed, run_alone, perturbed = _llava_real(
                    real, s, ids, k, gen, cu, PackedSeqParams, device, dtype
                )
                vh = VISION["heads"] * VISION["head_dim"]
                r.backend_detail = (
                    f"Megatron-Core {version} LLaVAModel: vision {VISION_TYPE} ViT (local spec, {VISION['layers']} "
                    f"layer, hidden {vh}, {k} patches of {VISION['patch']}x{VISION['patch']}, class token dropped), "
                    f"mlp projector, language GPTModel (local spec, {s.layers} layers, hidden {hidden}, {s.heads} "
                    f"heads, RoPE, vocab {s.vocab}); core attention -> {backend.describe(True)}"
                )
                r.pipeline.append(
                    f"LLaVAModel.forward: the vision encoder and projector turn each of {len(text)} images into {k} "
                    f"embeddings; _preprocess_data puts them at each sample's image token ({IMAGE_TOKEN}): "
                    f"{sum(text)} collapsed tokens -> {total} expanded"
                )
            else:
                model = model if model is not None else build_gpt(s, backend, dtype, device)
                pieces, run_packed, run_alone, perturbed = _llava_reenacted(
                    model, s, ids, k, gen, cu, PackedSeqParams, device
                )
                r.pipeline.append(
                    f"LLaVA _preprocess_data re-enacted: each of {len(text)} samples has one image placeholder "
                    f"expanded into {k} image embeddings: {sum(text)} collapsed tokens -> {total} expanded"
                )
            if s.case == "llava-collapsed":
                r.pipeline.append(
                    f"cu_seqlens left in collapsed space {cu_coll} (Megatron-LM PR #3427's bug); the expanded tail "
                    f"[{cu_coll[-1]}, {total}) is handed over as one more sub-sequence, the way a padded tail is"
                )
                # first, exactly what PR #3427 describes: collapsed cu_seqlens over the expanded row
                try:
                    run_packed(pieces, cu_coll)
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
                r.pipeline.append(f"cu_seqlens remapped to expanded space {cu_true} (PR #3427's remap)")
        else:
            assert model is not None  # the text case always builds the GPTModel
            cu = [0] + [int(x) for x in torch.tensor(lengths).cumsum(0)]
            r.pipeline.append(f"{len(text)} samples in one THD row of {total} tokens, cu_seqlens {cu}")

            def run_packed(pcs, cu=cu):
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
        if llava and real is not None:
            r.shapes = {"input_ids": [1, sum(text)], "images": [len(text), 3, VISION["patch"], VISION["patch"] * k]}
        checks = check_packed_params(p, total, device)
        r.checks.extend(checks)

        t = time.perf_counter()
        out = run_packed(pieces)
        timings["forward"] = time.perf_counter() - t
        what = "LLaVAModel" if llava and real is not None else "GPTModel"
        if out.shape[0] != total:
            r.add("forward", FAIL, f"{what} returned {out.shape[0]} positions, expected {total}")
            r.verdict = "failed"
            r.timings_s = timings
            return r
        r.add("forward", PASS, f"one {what} forward over {total} tokens on {device} with cu_seqlens {cu}")
        t = time.perf_counter()
        check_packed_vs_alone(
            r, out, bounds, run_alone, default_tolerance(dtype), " at their true (expanded) boundaries" if llava else ""
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


def _llava_reenacted(model, s: GPTProbeSettings, ids, k: int, gen, cu, PackedSeqParams, device):
    """LLaVA's expansion re-enacted on the GPTModel: text embeddings from its embedding, each image
    placeholder replaced by `k` random vectors at the embedding's scale, fed as decoder_input.
    (pieces, run_packed(pieces, cu), run_alone(i), perturbed(i))."""
    hidden = s.heads * s.head_dim
    scale = float(model.embedding.word_embeddings.weight.float().std())
    images = [torch.randn(k, hidden, generator=gen) * scale for _ in ids]

    def embed(sample_ids, image):
        e = model.embedding.word_embeddings(sample_ids.to(device))  # [n, h] (RoPE model: no positions)
        return torch.cat([e[:IMAGE_AT], image.to(device=device, dtype=e.dtype), e[IMAGE_AT + 1 :]])

    pieces = [embed(x, im) for x, im in zip(ids, images, strict=True)]

    def run_packed(pcs, cu=cu):
        x = torch.cat(pcs)[:, None, :]  # [T, 1, h]
        p = packed_params(PackedSeqParams, cu, device)
        return model(input_ids=None, position_ids=None, attention_mask=None, decoder_input=x, packed_seq_params=p)[
            0
        ].float()

    def run_alone(i):
        return model(input_ids=None, position_ids=None, attention_mask=None, decoder_input=pieces[i][:, None, :])[
            0
        ].float()

    def perturbed(i):
        pcs = list(pieces)
        pcs[i] = torch.randn(pcs[i].shape, generator=gen).to(device=device, dtype=pcs[i].dtype) * scale
        return pcs

    return pieces, run_packed, run_alone, perturbed


def llava_inputs(s: GPTProbeSettings, ids, k: int, gen):
    """Each sample's input_ids with its image token at IMAGE_AT, and one image [3, patch, patch * k]."""
    out = []
    for x in ids:
        x = x.clone()
        x[IMAGE_AT] = IMAGE_TOKEN
        out.append((x, torch.randn(3, VISION["patch"], VISION["patch"] * k, generator=gen)))
    return out


def _llava_real(model, s: GPTProbeSettings, ids, k: int, gen, cu, PackedSeqParams, device, dtype):
    """The real LLaVAModel's forward over the packed row (input_ids with one image token per sample,
    one image per sample): (pieces, run_packed(pieces, cu), run_alone(i), perturbed(i))."""
    pieces = llava_inputs(s, ids, k, gen)

    def forward(pcs, p=None):
        x = torch.cat([a for a, _ in pcs])[None].to(device)
        images = torch.stack([b for _, b in pcs]).to(device=device, dtype=dtype)
        return model(images, x, None, None, packed_seq_params=p)[0][0].float()  # logits [b, s, v] -> [s, v]

    def run_packed(pcs, cu=cu):
        return forward(pcs, packed_params(PackedSeqParams, cu, device))

    def run_alone(i):
        return forward([pieces[i]])

    def perturbed(i):
        pcs = list(pieces)
        x, _ = pcs[i]
        x = (x + 1 + torch.randint(0, s.vocab - 1, x.shape, generator=gen)) % s.vocab
        x[IMAGE_AT] = IMAGE_TOKEN
        pcs[i] = (x, torch.randn(3, VISION["patch"], VISION["patch"] * k, generator=gen))
        return pcs

    return pieces, run_packed, run_alone, perturbed
