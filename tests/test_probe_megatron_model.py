"""`--megatron-gpt`: the installed Megatron-Core GPTModel, THD packed vs alone, and the LLaVA
image-expansion case (cu_seqlens in collapsed vs expanded space), on CPU.

The reference is independent of the packed path: the same tiny model (same weights) in float64 runs
each *segment the kernel was given* on its own, unpacked (Megatron's sbhd path, no cu_seqlens, no thd
RoPE). Concatenated, those runs are what the packed forward must compute if the kernel honours its
cu_seqlens; compared with each true sample alone, they give the leak the probe has to report.
For the real LLaVAModel the reference builds each sample's expanded embeddings itself (the model's
word embedding, vision encoder and projector, the image's embeddings put in place of the image token
with torch.cat, not through `_preprocess_data`) and runs the language model on them.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("megatron.core")

from runtime_probe.backends import make_backend  # noqa: E402
from runtime_probe.gpt_settings import GPTProbeSettings  # noqa: E402
from runtime_probe.megatron_model import (  # noqa: E402
    IMAGE_AT,
    build_gpt,
    build_llava,
    llava_inputs,
    run_gpt_probe,
)

TEXT = [6, 4, 7]
K = 4


def _reference_per_sample(s: GPTProbeSettings, kernel_cu: list[int]) -> list[float]:
    """float64: per true sample, max |(segments run alone, concatenated) - (the sample alone)|."""
    cpu = torch.device("cpu")
    f64 = make_backend("sdpa", cpu, torch.float64)
    gen = torch.Generator().manual_seed(s.seed)
    ids = [torch.randint(0, s.vocab, (n,), generator=gen) for n in TEXT]  # the probe's draws, in its order
    llava = s.case != "packed"
    with torch.no_grad():
        if llava and not s.reenact:
            llava_model = build_llava(s, f64, torch.float64, cpu)
            # the probe's float32 weights, upcast (initialising in float64 draws other numbers: class token)
            weights = build_llava(s, make_backend("sdpa", cpu, torch.float32), torch.float32, cpu).state_dict()
            llava_model.load_state_dict({k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in weights.items()})
            lm = llava_model.language_model
            pieces = []
            for x, image in llava_inputs(s, ids, K, gen):
                v = llava_model.vision_model(image[None].double())[:, llava_model.vision_model.class_token_len :]
                im = llava_model.vision_projection(v.permute(1, 0, 2))[:, 0]  # [K, h]
                text = lm.embedding.word_embeddings(torch.where(x < 0, 0, x))
                pieces.append(torch.cat([text[:IMAGE_AT], im, text[IMAGE_AT + 1 :]]))
            row = torch.cat(pieces)

            def alone(x):
                return lm(input_ids=None, position_ids=None, attention_mask=None, decoder_input=x[:, None])[0]
        elif llava:
            model = build_gpt(s, f64, torch.float64, cpu)
            hidden = s.heads * s.head_dim
            scale = float(model.embedding.word_embeddings.weight.float().std())
            images = [torch.randn(K, hidden, generator=gen) * scale for _ in TEXT]
            pieces = []
            for x, im in zip(ids, images, strict=True):
                e = model.embedding.word_embeddings(x)
                pieces.append(torch.cat([e[:IMAGE_AT], im.to(e.dtype), e[IMAGE_AT + 1 :]]))
            row = torch.cat(pieces)

            def alone(x):
                return model(input_ids=None, position_ids=None, attention_mask=None, decoder_input=x[:, None])[0]
        else:
            model = build_gpt(s, f64, torch.float64, cpu)
            pieces = ids
            row = torch.cat(ids)

            def alone(x):
                return model(input_ids=x[None], position_ids=torch.arange(len(x))[None], attention_mask=None)[0]

        segments = torch.cat([alone(row[a:b]) for a, b in zip(kernel_cu[:-1], kernel_cu[1:], strict=True)])
        errs, a = [], 0
        for p in pieces:
            errs.append(float((segments[a : a + len(p)] - alone(p)).abs().max()))
            a += len(p)
    return errs


@pytest.mark.parametrize(
    "case, reenact",
    [
        ("packed", False),
        ("llava-expanded", False),
        ("llava-collapsed", False),
        ("llava-expanded", True),
        ("llava-collapsed", True),
    ],
)
def test_gpt_model_verdict_matches_float64_segment_reference(case, reenact):
    s = GPTProbeSettings(case=case, lengths=TEXT, image_tokens=K, device="cpu", reenact=reenact)
    report = run_gpt_probe(s)
    real = case != "packed" and not reenact
    assert ("LLaVAModel:" in report.backend_detail) == real, report.backend_detail
    assert not any("cannot be built" in n for n in report.notes), report.notes
    probe_errs = next(c.value["per_sample"] for c in report.checks if c.name.startswith("(i)"))
    ref = _reference_per_sample(s, report.cu_seqlens)
    for p, r in zip(probe_errs, ref, strict=True):
        assert abs(p - r) <= 1e-5 + 1e-4 * r, (case, probe_errs, ref)
    if case == "llava-collapsed":
        # the kernel's boundaries are the collapsed ones: the samples after the first straddle them
        assert report.cu_seqlens[:-1] == [0, 6, 10, 17] and report.tokens == sum(TEXT) + len(TEXT) * (K - 1)
        assert min(ref) > 1e-3  # every sample straddles a wrong boundary (sample 0 loses its own tail)
        assert report.verdict == "failed" and report.leakage["abs"] > 0
        raised = next(c for c in report.checks if c.name == "collapsed cu_seqlens as they are")
        assert raised.status == "fail" and "split" in raised.detail
    else:
        assert max(ref) < 1e-6
        assert report.verdict == "proven" and report.leakage["abs"] == 0.0 and report.exit_code == 0


def test_cli_megatron_gpt_exit_codes(capsys):
    from packlint.cli import main

    small = ["--lengths", "5,4,6", "--image-tokens", "3", "--device", "cpu"]
    assert main(["probe", "--megatron-gpt", *small]) == 0
    assert main(["probe", "--megatron-gpt", "llava-collapsed", *small]) == 1
    assert main(["probe", "--megatron-gpt", "llava-expanded", "--image-tokens", "1"]) == 2
    err = capsys.readouterr().err
    assert "--image-tokens 1: must be at least 2" in err


def test_probe_gpu_benchmark_cpu_smoke(tmp_path):
    """benchmarks/probe_gpu.py --cpu writes the JSON and the markdown table, every cell as expected."""
    import importlib.util
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "benchmarks" / "probe_gpu.py"
    spec = importlib.util.spec_from_file_location("probe_gpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # 5 cells, to keep it fast: LLaVA collapsed (real LLaVAModel and re-enacted), HF sdpa position_ids and
    # position_ids+mask on Llama, and the hybrid qwen3_next
    cells = ["--only", "megatron-gpt,hf", "--backends", "sdpa (position_ids,llava-collapsed"]
    code = mod.main(["--cpu", *cells, "--out", str(tmp_path)])
    doc = json.loads((tmp_path / "probe_gpu-cpu.json").read_text())
    kinds = {(r["kind"], r["config"]) for r in doc["rows"]}
    assert code == 0 and kinds == {("megatron-gpt", "leaking"), ("hf", "correct"), ("hf", "leaking")}
    assert all(r["status"] == "pass" for r in doc["rows"]), doc["rows"]
    names = {r["backend"] for r in doc["rows"]}
    assert {"llava-collapsed (LLaVAModel)", "llava-collapsed (re-enacted)", "sdpa (position_ids, qwen3_next)"} <= names
    hybrid = next(r for r in doc["rows"] if "qwen3_next" in r["backend"])
    assert hybrid["mixing"] == ["layer 0 linear_attn (Qwen3NextGatedDeltaNet)"], hybrid
    assert all((r["leakage"] == 0) == (r["config"] == "correct") for r in doc["rows"])
    md = (tmp_path / "probe_gpu-cpu.md").read_text()
    assert md.count("\n| ") == len(doc["rows"]) + 1 and "0 failed" in md
    assert mod.main(["--out", str(tmp_path)]) == 2  # the GPU matrix without CUDA: one line, exit 2


def test_megatron_gpt_with_a_script_is_a_usage_error(tmp_path, capsys):
    from packlint.cli import main

    script = tmp_path / "t.sh"
    script.write_text("torchrun pretrain_gpt.py --micro-batch-size 1\n")
    assert main(["probe", str(script), "--megatron-gpt"]) == 2
    assert "give it no SCRIPT" in capsys.readouterr().err


def test_llava_falls_back_to_the_reenactment_with_one_note(monkeypatch):
    """When the real LLaVAModel cannot be built, the report says why in one note and the expansion is
    re-enacted on GPTModel: the verdict is still measured, not assumed."""
    import runtime_probe.megatron_model as mm

    cuda = torch.Tensor.cuda

    def refuse(*args, **kwargs):
        raise AssertionError("Sequence/Context Parallelism is supported only with TE DotProductAttention.\nmore")

    monkeypatch.setattr(mm, "build_llava", refuse)
    report = run_gpt_probe(GPTProbeSettings(case="llava-collapsed", lengths=TEXT, image_tokens=K, device="cpu"))
    note = next(n for n in report.notes if "cannot be built" in n)
    assert "AssertionError: Sequence/Context Parallelism" in note and "\n" not in note and "re-enacted" in note
    assert report.backend_detail.startswith("Megatron-Core") and "LLaVAModel:" not in report.backend_detail
    assert report.verdict == "failed" and report.leakage["abs"] > 0
    assert torch.Tensor.cuda is cuda  # the build shim left Tensor.cuda as it was


def test_building_llava_on_cpu_restores_tensor_cuda():
    cuda = torch.Tensor.cuda
    s = GPTProbeSettings(case="llava-expanded", lengths=TEXT, image_tokens=K, device="cpu")
    model = build_llava(s, make_backend("sdpa", torch.device("cpu"), torch.float32), torch.float32, torch.device("cpu"))
    assert torch.Tensor.cuda is cuda and model.img_seq_len == K
    assert model.vision_model.position_ids.device.type == "cpu"


def test_llava_row_longer_than_1024_tokens_is_not_cut_short():
    # seen on an H200 with probe_gpu's GPU sizes (4 samples, 1452 tokens once expanded): LLaVAModel cut
    # the combined embeddings at language_max_sequence_length=1024 and RoPE's split by cu_seqlens raised
    s = GPTProbeSettings(case="llava-expanded", lengths=[560, 470], image_tokens=4, device="cpu", heads=2, head_dim=8)
    assert s.max_sequence_length() == 1088
    report = run_gpt_probe(s)
    assert report.verdict == "proven" and report.tokens == 1036, report.render_text()
    assert report.leakage["abs"] == 0.0
