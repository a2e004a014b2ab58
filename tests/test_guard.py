"""The guard (packlint.guard, docs/guard.md): the first real batch, checked inside the training process.

Through the real transformers.Trainer for one step on a tiny Llama built from its config, the Megatron-Core
LLaVAModel the probe builds on CPU, and `packlint run --guard` on a TRL/LLaMA-Factory-shaped launch script
(tests/fixtures/guard). Each verdict on a packed batch is checked against a measurement: the guard's own
packed-vs-alone forward on the same model (PACKLINT_GUARD_MEASURE), whose number must agree with it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
# transformers.Trainer needs accelerate (packlint[probe] lists it): the tests that run it skip without it
trainer = pytest.mark.skipif(
    importlib.util.find_spec("accelerate") is None, reason="transformers.Trainer needs accelerate"
)

from transformers import (  # noqa: E402
    DataCollatorWithFlattening,
    LlamaConfig,
    LlamaForCausalLM,
    Trainer,
    TrainingArguments,
)

from packlint.guard import EXIT_GUARD, GuardSettings, PackingGuard  # noqa: E402
from packlint.guard.hf import check_batch  # noqa: E402
from packlint.guard.report import GuardFailed  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "guard"
EOS, BOS = 2, 1
LENGTHS = (7, 5, 9, 6)


def tiny(attn="sdpa", seed=0):
    cfg = LlamaConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        vocab_size=64,
        eos_token_id=EOS,
        bos_token_id=BOS,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM._from_config(cfg, attn_implementation=attn)


def samples():
    g = torch.Generator().manual_seed(1)
    return [{"input_ids": [BOS, *torch.randint(3, 64, (n,), generator=g).tolist(), EOS]} for n in LENGTHS]


class Concat:
    """A collator that concatenates the samples: no position resets, a 2-D mask of ones."""

    def __call__(self, features):
        x = torch.tensor([[t for f in features for t in f["input_ids"]]])
        return {"input_ids": x, "attention_mask": torch.ones_like(x), "labels": x.clone()}


class FlattenWithMask(DataCollatorWithFlattening):
    """position_ids packing plus a 2-D attention_mask of ones (LLaMA-Factory `packing` without neat_packing)."""

    def __call__(self, features, return_tensors=None, separator_id=None):
        batch = super().__call__(features, return_tensors, separator_id)
        batch["attention_mask"] = torch.ones_like(batch["input_ids"])
        return batch


def train_one_step(tmp_path, collator, attn="sdpa", mode="fail", use_cache=False):
    """(report dict or None, whether the weights changed, the exception the run stopped with)."""
    model = tiny(attn)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    report = tmp_path / "guard.json"
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=1,
        per_device_train_batch_size=4,
        learning_rate=1e-2,
        save_strategy="no",
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
        logging_strategy="no",
        use_cache=use_cache,
    )
    guard = PackingGuard(mode=mode, report=str(report), measure=True)
    trainer = Trainer(model=model, args=args, train_dataset=samples(), data_collator=collator, callbacks=[guard])
    stopped = None
    try:
        trainer.train()
    except GuardFailed as exc:
        stopped = exc
    changed = any(not torch.equal(before[k], v) for k, v in model.state_dict().items())
    data = json.loads(report.read_text()) if report.exists() else None
    return data, changed, stopped


def sample_lengths(cuts):
    """The sample lengths a row's cuts give (the Trainer shuffles the samples)."""
    edges = [0, *cuts, sum(n + 2 for n in LENGTHS)]
    return sorted(b - a for a, b in zip(edges[:-1], edges[1:]))


def status(data, name):
    return next((c["status"] for c in data["checks"] if c["name"] == name), None)


# ---------------------------------------------------------------- through the real Trainer


@trainer
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_flattening_collator_passes_and_trains(tmp_path, attn, capsys):
    data, changed, stopped = train_one_step(tmp_path, DataCollatorWithFlattening(), attn)
    assert stopped is None and changed  # the optimizer stepped
    assert data["verdict"] == "pass", data["checks"]
    assert sample_lengths(data["facts"]["cuts"]["position_ids"]) == sorted(n + 2 for n in LENGTHS)  # BOS, EOS
    assert data["facts"]["attn_implementation"] == attn and data["facts"]["kv_cache"] is False
    assert data["leakage"] <= data["measured"]["tolerance"]  # measured: isolated
    line = capsys.readouterr().err
    assert "packlint-guard: PASS" in line and line.count("packlint-guard:") == 1


@trainer
def test_concatenating_collator_fails_before_the_first_optimizer_step(tmp_path, capsys):
    data, changed, stopped = train_one_step(tmp_path, Concat())
    assert isinstance(stopped, GuardFailed) and stopped.code == EXIT_GUARD == 3
    assert not changed  # no optimizer step
    assert data["verdict"] == "fail" and status(data, "boundaries") == "fail"
    assert sample_lengths(data["facts"]["separator_cuts"]) == sorted(n + 2 for n in LENGTHS)
    assert data["leakage"] > 100 * data["measured"]["tolerance"]  # measured: the samples see each other
    assert "packlint-guard: FAIL boundaries: samples are concatenated" in capsys.readouterr().err


@trainer
@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_2d_mask_with_position_ids_packing_verdict_matches_the_measurement(tmp_path, attn):
    """transformers 5.24 looks for packed position_ids only without an attention_mask: a 2-D mask of ones
    makes the mask plain causal. The guard's verdict must be what the measurement says, on the installed
    version (the test does not assume which)."""
    data, changed, stopped = train_one_step(tmp_path, FlattenWithMask(), attn, mode="warn")
    leaks = data["leakage"] > data["measured"]["tolerance"]
    assert (data["verdict"] == "fail") == leaks
    assert (status(data, "attention path") == "fail") == leaks
    if transformers.__version__ == "5.24.0":
        assert leaks and "2-D attention_mask" in data["facts"]["attention_path"]
    assert stopped is None and changed  # warn mode: training goes on


@trainer
def test_kv_cache_left_on_is_reported_and_its_leak_measured(tmp_path):
    data, changed, stopped = train_one_step(tmp_path, DataCollatorWithFlattening(), use_cache=True)
    assert isinstance(stopped, GuardFailed) and not changed
    assert status(data, "KV cache") == "warn" and "config.use_cache=True" in data["facts"]["kv_cache"]
    assert status(data, "attention path") == "fail" and "KV cache" in data["facts"]["attention_path"]
    assert data["leakage"] > 100 * data["measured"]["tolerance"]


def test_the_hook_runs_once_and_removes_itself():
    model = tiny()
    from packlint.guard.hf import install_hf

    install_hf(model, GuardSettings(mode="warn"))
    assert len(model._forward_pre_hooks) == 1
    x = torch.tensor([[1, 5, 6, 2, 1, 7, 2]])
    with torch.no_grad():
        model(input_ids=x, position_ids=torch.tensor([[0, 1, 2, 3, 0, 1, 2]]), use_cache=False)
    assert len(model._forward_pre_hooks) == 0


# ---------------------------------------------------------------- the checks, on batches as collators make them


def _check(kw, attn="sdpa", **cfg):
    model = tiny()
    model.config._attn_implementation = attn  # what the model runs; no forward is made by check_batch
    model.config.use_cache = False  # as Trainer sets it (TrainingArguments.use_cache defaults to False)
    for k, v in cfg.items():
        setattr(model.config, k, v)
    return check_batch(model, kw, GuardSettings(mode="warn"))


def _flat(cu_dtype=torch.int32, cu=None, **extra):
    coll = DataCollatorWithFlattening(return_flash_attn_kwargs=True)
    b = coll(samples())
    b.pop("labels")
    if cu is not None:
        b["cu_seq_lens_q"] = b["cu_seq_lens_k"] = torch.tensor(cu, dtype=cu_dtype)
    else:
        b["cu_seq_lens_q"] = b["cu_seq_lens_q"].to(cu_dtype)
        b["cu_seq_lens_k"] = b["cu_seq_lens_k"].to(cu_dtype)
    b.update(extra)
    return b


def test_cu_seq_lens_checked_and_compared_with_position_ids():
    ok = _check(_flat(), "flash_attention_2")
    assert ok.verdict == "pass", [c.detail for c in ok.failed]
    assert ok.facts["cuts"]["cu_seq_lens_q"] == [9, 16, 27]
    wrong = _check(_flat(cu=[0, 9, 18, 27, 34]), "flash_attention_2")
    assert {c.name for c in wrong.failed} >= {"carriers agree", "attention path"}
    short = _check(_flat(cu=[0, 9, 16, 27, 30]), "flash_attention_2")
    assert any("ends at the row length" in c.name for c in short.failed)
    int64 = _check(_flat(cu_dtype=torch.int64), "flash_attention_2")
    assert any(c.name == "cu_seq_lens_q: dtype" for c in int64.failed)


def test_cu_seq_lens_alone_are_read_by_flash_only():
    b = _flat()
    b.pop("position_ids")
    assert _check(b, "flash_attention_2").verdict == "pass"
    sdpa = _check(b, "sdpa")
    assert sdpa.verdict == "fail" and "cu_seq_lens are read by flash kernels only" in sdpa.facts["attention_path"]


def test_flash_reads_position_ids_only_for_one_row():
    b = DataCollatorWithFlattening()(samples())
    two = {"input_ids": b["input_ids"].repeat(2, 1), "position_ids": b["position_ids"].repeat(2, 1)}
    assert (
        _check({"input_ids": b["input_ids"], "position_ids": b["position_ids"]}, "flash_attention_2").verdict == "pass"
    )
    r = _check(two, "flash_attention_2")
    assert r.verdict == "fail" and "one row" in r.facts["attention_path"]
    assert _check(two, "sdpa").verdict == "pass"  # the mask path reads each row's position_ids


def _block4d(lengths, broken=False):
    """LLaMA-Factory's neat_packing mask (collator.py prepare_4d_attention_mask): additive, [B, 1, T, T]."""
    idx = torch.cat([torch.full((n,), i + 1) for i, n in enumerate(lengths)])[None]
    t = idx.shape[1]
    allowed = torch.ones(t, t, dtype=torch.bool).tril()
    if not broken:
        allowed = allowed & (idx[:, None, None, :] == idx[:, None, :, None])[0, 0]
    return torch.where(allowed, 0.0, torch.finfo(torch.float32).min)[None, None]


def test_4d_block_mask_passes_and_a_causal_one_with_position_resets_fails():
    b = DataCollatorWithFlattening()(samples())
    kw = {"input_ids": b["input_ids"], "position_ids": b["position_ids"]}
    lengths = [n + 2 for n in LENGTHS]
    good = _check({**kw, "attention_mask": _block4d(lengths)}, "sdpa")
    assert good.verdict == "pass" and good.facts["cuts"]["4-D attention_mask"] == [9, 16, 27]
    bad = _check({**kw, "attention_mask": _block4d(lengths, broken=True)}, "sdpa")
    assert bad.verdict == "fail" and status({"checks": [c.to_json() for c in bad.checks]}, "carriers agree") == "fail"
    assert _check({**kw, "attention_mask": _block4d(lengths)}, "flash_attention_2").verdict == "fail"


def test_unpacked_padded_batch_with_eos_padding_passes():
    ids = torch.tensor([[BOS, 5, 6, 7, EOS, EOS, EOS], [BOS, 8, 9, 10, 11, 12, EOS]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0], [1] * 7])
    r = _check({"input_ids": ids, "attention_mask": mask})
    assert r.verdict == "pass" and not r.facts["separator_cuts"]


def test_left_padding_with_position_ids_is_not_packing():
    """Left padding as generation-style collators build it (position_ids = cumsum(mask) - 1, padding at 1):
    the step from padding to the first real token is not a boundary between samples."""
    ids = torch.tensor([[EOS, EOS, BOS, 5, 6, 7, EOS], [BOS, 8, 9, 10, 11, 12, EOS]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1] * 7])
    pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)
    r = _check({"input_ids": ids, "attention_mask": mask, "position_ids": pos})
    assert r.verdict == "pass" and "position_ids" not in r.facts["cuts"]


def test_multimodal_rope_positions_are_not_guessed_from():
    """Qwen2-VL's [3, B, L] positions do not step by 1 over image tokens: not read, and separators alone
    then only warn."""
    b = DataCollatorWithFlattening()(samples())
    mrope = b["position_ids"][None].expand(3, -1, -1)
    r = _check({"input_ids": b["input_ids"], "position_ids": mrope})
    assert r.verdict == "pass" and {c.name for c in r.warnings} == {"position_ids", "boundaries", "attention path"}


def _sample_number_rows(width=40, base=samples):
    """Rows packed the way MeetKai/functionary's pack_data_points_FA packs them (packed_dataset.py): samples
    concatenated, attention_mask = 1, 1, ..., 2, 2, ..., 0 padding on the right, no position_ids; its
    monkey_patch_packing.py replaces transformers' _get_unpad_data to read the numbers on flash."""
    rows = []
    for group in (base()[:2], base()[2:]):
        ids = [t for f in group for t in f["input_ids"]]
        mask = [i + 1 for i, f in enumerate(group) for _ in f["input_ids"]]
        pad = width - len(ids)
        rows.append(
            {
                "input_ids": torch.tensor(ids + [0] * pad),
                "attention_mask": torch.tensor(mask + [0] * pad),
                "labels": torch.tensor(ids + [-100] * pad),
            }
        )
    return rows


@trainer
def test_sample_number_mask_fails_on_every_path_and_the_leak_is_measured(tmp_path, monkeypatch):
    batch = {k: torch.stack([r[k] for r in _sample_number_rows()]) for k in ("input_ids", "attention_mask")}
    for attn in ("sdpa", "flash_attention_2"):
        r = _check(dict(batch), attn)
        assert r.facts["cuts"]["attention_mask (sample numbers)"] == [9, 40, 51], attn
        assert r.verdict == "fail" and "makes a 2-D mask boolean" in r.facts["attention_path"]
    # the claim, on the installed transformers: the mask the flash path gets is boolean (no kernel needed)
    from transformers.masking_utils import create_causal_mask

    model = tiny()
    model.config._attn_implementation = "flash_attention_2"
    am = batch["attention_mask"][:1]
    import inspect

    # transformers 5.x renamed `past_key_values` to `cache` here (the old name warns)
    no_cache = "cache" if "cache" in inspect.signature(create_causal_mask).parameters else "past_key_values"
    got = create_causal_mask(
        config=model.config,
        inputs_embeds=torch.zeros(1, am.shape[1], 32),
        attention_mask=am,
        position_ids=torch.arange(am.shape[1])[None],
        **{no_cache: None},
    )
    assert got is not None and got.dtype == torch.bool
    # and through the real Trainer on sdpa, measured
    monkeypatch.setattr(sys.modules[__name__], "samples", _sample_number_rows)
    data, _, _ = train_one_step(tmp_path, lambda fs: {k: torch.stack([f[k] for f in fs]) for k in fs[0]}, mode="warn")
    assert data["verdict"] == "fail" and data["leakage"] > 100 * data["measured"]["tolerance"]


def test_separator_mid_sample_is_a_warning_and_can_be_turned_off():
    b = DataCollatorWithFlattening()(samples())
    ids = b["input_ids"].clone()
    ids[0, 4] = EOS  # a turn end inside the first sample
    r = _check({"input_ids": ids, "position_ids": b["position_ids"]})
    assert r.verdict == "pass" and [c.status for c in r.checks if c.name == "separators"] == ["warn"]
    concat = {"input_ids": b["input_ids"], "attention_mask": torch.ones_like(b["input_ids"])}
    model = tiny()
    assert check_batch(model, concat, GuardSettings(mode="warn", separators=())).verdict == "pass"


# ---------------------------------------------------------------- Megatron-Core


@pytest.fixture(scope="module")
def llava():
    pytest.importorskip("megatron.core")
    from runtime_probe import megatron_import
    from runtime_probe.backends import choose_backend
    from runtime_probe.gpt_settings import GPTProbeSettings
    from runtime_probe.megatron_model import build_llava

    s = GPTProbeSettings(case="llava-expanded", lengths=[6, 4, 7, 5], image_tokens=3, device="cpu")
    dev = torch.device("cpu")
    backend, _ = choose_backend("auto", dev, torch.float32)
    return s, build_llava(s, backend, torch.float32, dev), megatron_import.load_packed_seq_params(full_import=True)


@pytest.mark.parametrize("space", ["expanded", "collapsed"])
def test_megatron_llava_collapsed_cu_seqlens_fail_and_expanded_pass(llava, space, tmp_path, capsys):
    from packlint.guard import install_megatron
    from runtime_probe.megatron_model import llava_inputs, packed_params

    s, model, psp = llava
    k = s.image_tokens
    gen = torch.Generator().manual_seed(0)
    pieces = llava_inputs(s, [torch.randint(0, 256, (n,), generator=gen) for n in s.lengths], k, gen)
    ids = torch.cat([a for a, _ in pieces])[None]
    images = torch.stack([b for _, b in pieces])
    cu = [0]
    for n in s.lengths:
        cu.append(cu[-1] + (n - 1 + k if space == "expanded" else n))
    report = tmp_path / "g.json"
    install_megatron(model, GuardSettings(mode="fail", report=str(report), measure=True))
    stopped = None
    try:
        with torch.no_grad():
            model(images, ids, None, None, packed_seq_params=packed_params(psp, cu, torch.device("cpu")))
    except GuardFailed as exc:
        stopped = exc
    data = json.loads(report.read_text())
    assert data["model"] == "LLaVAModel" and data["facts"]["kernel_tokens"] == sum(s.lengths) + 4 * (k - 1)
    assert data["facts"]["collapsed_tokens"] == sum(s.lengths) and data["facts"]["image_tokens"] == 4
    if space == "expanded":
        assert stopped is None and data["verdict"] == "pass", data["checks"]
        # measured on the real model: each cu_seqlens segment packed == alone
        assert data["leakage"] <= data["measured"]["tolerance"] and len(data["measured"]["segments"]) == 4
    else:
        assert stopped is not None and stopped.code == 3
        assert status(data, "image expansion") == "fail" and status(data, "measure") == "skip"
        assert "packlint-guard: FAIL image expansion: cu_seqlens end at 22" in capsys.readouterr().err
    assert not model.language_model._forward_pre_hooks and not model._forward_pre_hooks  # removed


def test_megatron_thd_needs_one_row(llava):
    from packlint.guard.megatron import check_call
    from runtime_probe.megatron_model import packed_params

    _, model, psp = llava
    gpt = model.language_model
    p = packed_params(psp, [0, 5, 12], torch.device("cpu"))
    r = check_call(gpt, {"input_ids": torch.zeros(2, 12, dtype=torch.long), "packed_seq_params": p}, {})
    assert [c.name for c in r.failed] == ["cu_seqlens_q: ends at the row length", "micro-batch"]
    one = check_call(gpt, {"input_ids": torch.zeros(1, 12, dtype=torch.long), "packed_seq_params": p}, {})
    assert one.verdict == "pass"
    resets = torch.tensor([[0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 5, 6]])
    plain = check_call(gpt, {"input_ids": torch.zeros(1, 12, dtype=torch.long), "position_ids": resets}, {})
    assert [c.name for c in plain.failed] == ["packed_seq_params"]


# ---------------------------------------------------------------- packlint run --guard


def _env(tmp_path):
    """The test's interpreter as `python` on PATH (the fixture script calls `python`), packlint importable."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    py = bin_dir / "python"
    py.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    py.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PACKLINT_GUARD")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env["HF_HUB_OFFLINE"] = "1"
    return env


def _packlint_run(env, *argv, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "packlint", "run", *argv], env=env, capture_output=True, text=True, timeout=timeout
    )


@trainer
@pytest.mark.parametrize("collator", ["concat", "flatten"])
def test_packlint_run_guard_stops_a_leaking_launch_and_lets_a_correct_one_train(tmp_path, collator):
    env = _env(tmp_path)
    out = tmp_path / "out"
    report = tmp_path / "guard.json"
    r = _packlint_run(env, "--guard", "--guard-report", str(report), str(FIXTURE / "train.sh"), str(out), collator)
    data = json.loads(report.read_text())
    if collator == "concat":
        assert r.returncode == 3, r.stderr[-2000:]
        assert data["verdict"] == "fail" and "packlint-guard: FAIL boundaries" in r.stderr
        assert r.stderr.count("packlint-guard:") == 1  # one line: rank 0's verdict
        assert not (out / "model.safetensors").exists()  # stopped before any step: nothing trained, nothing saved
        assert "train_loss" not in r.stdout + r.stderr
    else:
        assert r.returncode == 0, r.stderr[-2000:]
        assert data["verdict"] == "pass" and "packlint-guard: PASS" in r.stderr
        from safetensors.torch import load_file

        before = torch.load(out / "weights_before.pt")
        after = load_file(out / "model.safetensors")
        assert any(not torch.equal(before[k], after[k]) for k in after)  # the optimizer stepped
    assert (out / "weights_before.pt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "guard.json", "out"]  # nothing else written


def test_guard_failure_is_nonzero_even_when_the_script_swallows_the_status(tmp_path):
    """A script that ignores its training command's status: packlint run reads the report and exits 3.
    (A stand-in writes the failing report, as a rank would: no torch in this test.)"""
    env = _env(tmp_path)
    s = tmp_path / "launch.sh"
    s.write_text(
        textwrap.dedent("""\
        #!/bin/bash
        python -c 'import json, os; json.dump({"verdict": "fail"}, open(os.environ["PACKLINT_GUARD_REPORT"] + ".rank3", "w"))'
        echo done
        """)
    )
    r = _packlint_run(env, "--guard", "--guard-report", str(tmp_path / "g.json"), str(s))
    assert r.returncode == 3 and "guard: FAIL on 1 rank(s)" in r.stderr
    r = _packlint_run(env, "--guard", "--guard-mode", "warn", "--guard-report", str(tmp_path / "g.json"), str(s))
    assert r.returncode == 0


def test_sitecustomize_chains_the_one_it_shadows_and_imports_no_torch(tmp_path):
    from packlint.guard.launch import SITE_DIR, guard_env

    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['OTHER_SITE_RAN'] = '1'\n")
    env = guard_env(_env(tmp_path), "fail", str(tmp_path / "g.json"), False)
    env["PYTHONPATH"] = os.pathsep.join([SITE_DIR, str(other), str(ROOT)])
    code = (
        "import os, sys; from packlint.guard.inject import GuardFinder; "
        "print(os.environ.get('OTHER_SITE_RAN'), any(isinstance(f, GuardFinder) for f in sys.meta_path), "
        "'torch' in sys.modules, 'transformers' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert r.stdout.split() == ["1", "True", "False", "False"], r.stderr
    assert not (tmp_path / "g.json").exists()


@trainer
def test_import_hook_patches_trainer_and_megatron_models(llava):
    """What the import hook does to each module once it is executed (patched here in place, then
    restored): every Trainer, a subclass's included, gets one PackingGuard; a GPTModel and a LLaVAModel
    built afterwards are hooked, the LLaVAModel's language model with the LLaVA hook on top."""
    import megatron.core.models.gpt.gpt_model as gm
    import megatron.core.models.multimodal.llava_model as lm
    import transformers.trainer as tt

    from packlint.guard import inject
    from runtime_probe.backends import choose_backend
    from runtime_probe.megatron_model import build_llava

    assert set(inject.PATCHES) == {
        "transformers.trainer",
        "megatron.core.models.gpt.gpt_model",
        "megatron.core.models.multimodal.llava_model",
    }
    saved = (tt.Trainer.__init__, gm.GPTModel.__init__, lm.LLaVAModel.__init__)
    try:
        for name, mod in (
            ("transformers.trainer", tt),
            ("megatron.core.models.gpt.gpt_model", gm),
            ("megatron.core.models.multimodal.llava_model", lm),
        ):
            inject.PATCHES[name](mod)

        class SFTTrainer(Trainer):  # TRL's shape: a subclass that calls Trainer.__init__
            def __init__(self, *a, **k):
                super().__init__(*a, **k)

        args = TrainingArguments(output_dir="unused", report_to="none", use_cpu=True)
        for cls in (Trainer, SFTTrainer):
            t = cls(model=tiny(), args=args, train_dataset=samples(), data_collator=DataCollatorWithFlattening())
            assert sum(isinstance(cb, PackingGuard) for cb in t.callback_handler.callbacks) == 1
        s, _, _ = llava
        backend, _ = choose_backend("auto", torch.device("cpu"), torch.float32)
        model = build_llava(s, backend, torch.float32, torch.device("cpu"))
        assert len(model._forward_pre_hooks) == 1 and len(model.language_model._forward_pre_hooks) == 1
    finally:
        tt.Trainer.__init__, gm.GPTModel.__init__, lm.LLaVAModel.__init__ = saved


def test_finder_answers_only_for_its_modules_and_goes_away():
    from packlint.guard.inject import GuardFinder

    f = GuardFinder()
    assert f.find_spec("json", None) is None and f.find_spec("torch.nn", None) is None
    f.pending = {"json.decoder": lambda mod: None}  # a module not imported yet in a fresh interpreter
    sys.meta_path.insert(0, f)
    try:
        import json as pkg

        spec = f.find_spec("json.decoder", pkg.__path__)  # as the import system asks for a submodule
        assert spec is not None and type(spec.loader).__name__ == "_PatchingLoader"
        assert not any(isinstance(x, GuardFinder) for x in sys.meta_path)  # nothing left to patch: removed
    finally:
        sys.meta_path[:] = [x for x in sys.meta_path if x is not f]


def test_other_ranks_are_silent_unless_they_fail(tmp_path, monkeypatch, capsys):
    from packlint.guard.report import GuardResult, finish

    report = tmp_path / "g.json"
    settings = GuardSettings(mode="fail", report=str(report))
    import packlint.guard.report as report_mod

    monkeypatch.setattr(report_mod, "rank", lambda: 2)  # torchrun's RANK, or the process group's once set up
    ok = GuardResult("transformers", "M")
    ok.add("attention path", "pass", "fine")
    finish(ok, settings)
    assert capsys.readouterr().err == "" and list(tmp_path.iterdir()) == []
    bad = GuardResult("transformers", "M")
    bad.add("attention path", "fail", "merged")
    with pytest.raises(GuardFailed) as exc:
        finish(bad, settings)
    assert exc.value.code == 3
    assert capsys.readouterr().err.startswith("[rank 2] packlint-guard: FAIL attention path: merged")
    assert [p.name for p in tmp_path.iterdir()] == ["g.json.rank2"]
    assert json.loads((tmp_path / "g.json.rank2").read_text())["rank"] == 2


def test_the_guards_own_error_never_stops_training(monkeypatch, capsys):
    import packlint.guard.hf as hf

    def broken(*args, **kwargs):
        raise RuntimeError("a batch the guard cannot read")

    monkeypatch.setattr(hf, "check_batch", broken)
    hf.guard_call(tiny(), {"input_ids": torch.tensor([[1, 2]])}, GuardSettings(mode="fail"))
    assert "packlint-guard: ERROR the guard could not check this batch (RuntimeError" in capsys.readouterr().err


def test_megatron_measure_catches_an_attention_path_that_ignores_cu_seqlens(llava, tmp_path):
    """Every check passes on the batch; only the measure sees a core attention that attends across the
    cu_seqlens (here: handed one segment over the whole row, as a backend that drops them would)."""
    from packlint.guard import install_megatron
    from runtime_probe.megatron_model import llava_inputs, packed_params

    s, model, psp = llava
    k = s.image_tokens
    gen = torch.Generator().manual_seed(0)
    pieces = llava_inputs(s, [torch.randint(0, 256, (n,), generator=gen) for n in s.lengths], k, gen)
    ids, images = torch.cat([a for a, _ in pieces])[None], torch.stack([b for _, b in pieces])
    cu = [0]
    for n in s.lengths:
        cu.append(cu[-1] + n - 1 + k)

    def ignore_boundaries(module, args, kwargs):
        if kwargs.get("packed_seq_params") is not None:
            kwargs["packed_seq_params"] = packed_params(psp, [0, cu[-1]], torch.device("cpu"))
        return args, kwargs

    layers = model.language_model.decoder.layers
    handles = [
        x.self_attention.core_attention.register_forward_pre_hook(ignore_boundaries, with_kwargs=True) for x in layers
    ]
    report = tmp_path / "g.json"
    try:
        install_megatron(model, GuardSettings(mode="warn", report=str(report), measure=True))
        with torch.no_grad():
            model(images, ids, None, None, packed_seq_params=packed_params(psp, cu, torch.device("cpu")))
    finally:
        for h in handles:
            h.remove()
    data = json.loads(report.read_text())
    assert [c["name"] for c in data["checks"] if c["status"] == "fail"] == ["measure: packed == alone"]
    assert data["leakage"] > 100 * data["measured"]["tolerance"]


def test_rank_comes_from_the_process_group_else_the_launcher(monkeypatch):
    from packlint.guard.settings import rank

    monkeypatch.setitem(sys.modules, "torch.distributed", None)  # no process group in this process
    monkeypatch.setenv("RANK", "5")
    assert rank() == 5
    monkeypatch.delenv("RANK")
    monkeypatch.setenv("SLURM_PROCID", "3")
    assert rank() == 3
