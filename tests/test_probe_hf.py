"""The HF-stack probe (issue 22) on the installed transformers, on CPU.

Every verdict is checked against an independent float64 reference: the same tiny model (same weights)
upcast to float64, run with *eager* attention and an explicit 4-D additive mask built here with plain
torch ops (transformers passes a 4-D mask through untouched), once per sample alone and once on the
packed row under each of the two semantics a collator can give: samples isolated (block-diagonal
causal) or samples visible to each other (causal over the whole row). The probe's float32 numbers
must agree with the semantics the stack's code implies, and its verdict must follow from them.
"""

from __future__ import annotations

import textwrap

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from packlint.api import inspect_script  # noqa: E402
from runtime_probe.hf_probe import build_model, pack, run_hf_probe  # noqa: E402
from runtime_probe.hf_settings import HFProbeSettings, hf_settings_from_part, launch_values  # noqa: E402
from runtime_probe.launches import probe_model, select_targets  # noqa: E402

LENGTHS = [9, 5, 12, 7]


def _reference(settings: HFProbeSettings, lengths: list[int]) -> dict:
    """float64: per-sample logits alone, and the packed row isolated / visible, with this test's masks."""
    s = HFProbeSettings(**{**settings.to_json(), "attn_implementation": "eager", "notes": []})
    model = build_model(s, torch.device("cpu"), torch.float64).model
    gen = torch.Generator().manual_seed(s.seed)
    samples = [torch.randint(0, s.vocab, (n,), generator=gen) for n in lengths]  # the probe's samples
    row = torch.cat(samples)[None]
    total = row.shape[1]
    doc = torch.cat([torch.full((n,), i) for i, n in enumerate(lengths)])
    causal = torch.ones(total, total, dtype=torch.bool).tril()
    reset = torch.cat([torch.arange(n) for n in lengths])[None]

    def run(allowed, pos):
        mask = torch.zeros(total, total, dtype=torch.float64).masked_fill(~allowed, float("-inf"))
        with torch.no_grad():
            return model(input_ids=row, position_ids=pos, attention_mask=mask[None, None], use_cache=False).logits[0]

    with torch.no_grad():
        alone = [model(input_ids=x[None], use_cache=False).logits[0] for x in samples]
    isolated = run(causal & (doc[:, None] == doc[None, :]), reset)
    visible_reset = run(causal, reset)
    visible_continued = run(causal, torch.arange(total)[None])

    def per_sample(out):
        errs, a = [], 0
        for n, al in zip(lengths, alone, strict=True):
            errs.append(float((out[a : a + n] - al).abs().max()))
            a += n
        return errs

    return {
        "isolated": per_sample(isolated),
        "visible_reset": per_sample(visible_reset),
        "visible_continued": per_sample(visible_continued),
    }


# which semantics each collator mode gives on transformers 5.24, from the code (hf_settings docstring):
# position_ids without a mask -> masking_utils.find_packed_sequence_indices isolates; a 2-D mask turns
# that detection off (_preprocess_mask_arguments); the 4-D mask is used as given; concat is one causal row
SEMANTICS = {
    "position_ids": "isolated",
    "block4d": "isolated",
    "position_ids+mask": "visible_reset",
    "concat": "visible_continued",
}


def _check_against_reference(report, settings: HFProbeSettings, lengths: list[int]) -> None:
    ref = _reference(settings, lengths)
    expected = SEMANTICS[settings.mode]
    probe_errs = next(c.value["per_sample"] for c in report.checks if c.name.startswith("(i)"))
    ref_errs = ref[expected]
    # the probe's float32 packed-vs-alone numbers are the float64 reference's, sample by sample
    for p, r in zip(probe_errs, ref_errs, strict=True):
        assert abs(p - r) <= 1e-5 + 1e-4 * r, (settings.mode, probe_errs, ref_errs)
    if expected == "isolated":
        # the reference itself: isolated up to rounding (eager attention takes its softmax in float32,
        # modeling_llama.eager_attention_forward, so float64 here means float32 in the softmax)
        assert max(ref_errs) < 1e-6
        assert report.verdict == "proven" and report.ok and report.leakage["abs"] == 0.0
    else:
        assert max(ref_errs) > 1e-3  # samples after the first see the ones before them
        assert ref_errs[0] < 1e-6  # ... and the first sees nothing else (causal)
        assert report.verdict == "leak" and not report.ok and report.exit_code == 1
        assert report.leakage["abs"] > 0
        assert report.render_text().startswith("LEAK: ")
        # (iii): fed its own packed input, each attention layer mixes the samples and nothing else does
        tol = next(c.value["tolerance"] for c in report.checks if c.name.startswith("(i)"))
        layer = next(c for c in report.checks if c.name == "(iii) per layer")
        mixing = {(d["layer"], d["module"]) for d in layer.value if d["own_leak"] > tol}
        assert layer.status == "fail" and mixing == {(i, "self_attn") for i in range(settings.layers)}, layer.value


# ------------------------------------------------------------------ attn x mode on CPU


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
@pytest.mark.parametrize("mode", ["position_ids", "position_ids+mask", "block4d", "concat"])
def test_attn_times_mode_matches_float64_reference(attn, mode):
    s = HFProbeSettings(mode=mode, attn_implementation=attn, device="cpu", lengths=LENGTHS, use_cache="false")
    report = run_hf_probe(s)
    assert report.backend == attn and report.device == "cpu"
    _check_against_reference(report, s, LENGTHS)


def test_flex_attention_on_cpu_isolates_and_leaks_as_its_code_says():
    """transformers' flex_attention path (BlockMask from the packed position_ids), run uncompiled on
    CPU: isolated without a mask, visible with the 2-D mask of ones."""
    lengths = [6, 4, 5]
    for mode in ("position_ids", "position_ids+mask"):
        s = HFProbeSettings(
            mode=mode, attn_implementation="flex_attention", device="cpu", lengths=lengths, use_cache="false"
        )
        report = run_hf_probe(s)
        assert "uncompiled on CPU" in report.backend_detail
        _check_against_reference(report, s, lengths)


def test_not_packed_proves_nothing_and_exits_0():
    report = run_hf_probe(HFProbeSettings(mode="none", device="cpu"))
    assert report.verdict == "not-packed" and report.exit_code == 0 and report.checks == []


# ------------------------------------------------------------------ one test per stack mode, from a script


def _script(tmp_path, body: str):
    p = tmp_path / "train.sh"
    p.write_text("#!/bin/bash\nset -euo pipefail\n" + textwrap.dedent(body))
    return str(p)


STACK_SCRIPTS = {
    # TRL SFT with padding_free (sft_trainer.py:471-506): position_ids, no mask
    "trl-padding-free": (
        """
        accelerate launch --num_processes 8 trl/scripts/sft.py \\
          --model_name_or_path Qwen/Qwen2-0.5B --attn_implementation sdpa \\
          --packing --padding_free True --per_device_train_batch_size 1
        """,
        "trl",
        "position_ids",
    ),
    # TRL packing_strategy wrapped: concatenated, positions continue
    "trl-wrapped": (
        """
        accelerate launch trl/scripts/sft.py --model_name_or_path meta-llama/Llama-3.2-1B \\
          --packing --packing_strategy wrapped --attn_implementation eager
        """,
        "trl",
        "concat",
    ),
    # LLaMA-Factory neat_packing on sdpa: the collator's 4-D mask (collator.py:535-536)
    "llamafactory-neat": (
        """
        FORCE_TORCHRUN=1 llamafactory-cli train --model_name_or_path {model} --stage sft \\
          --packing true --neat_packing true --flash_attn sdpa
        """,
        "llamafactory",
        "block4d",
    ),
    # LLaMA-Factory packing without neat_packing: reset positions + 2-D mask of ones (supervised.py:199,212)
    "llamafactory-packing": (
        """
        llamafactory-cli train --model_name_or_path {model} --stage sft --packing true --flash_attn disabled
        """,
        "llamafactory",
        "position_ids+mask",
    ),
    # axolotl sample_packing on eager (>= 0.18 drops the mask: trainers/base.py:324-332)
    "axolotl": (
        """
        accelerate launch -m axolotl.cli.train config.yml --sample_packing true --attn_implementation eager
        """,
        "axolotl",
        "position_ids",
    ),
    # ms-swift padding_free (template/base.py:1921-1937)
    "ms-swift": (
        """
        swift sft --model Qwen/Qwen2.5-7B-Instruct --padding_free true --attn_impl sdpa
        """,
        "ms-swift",
        "position_ids",
    ),
    # OpenRLHF packing_samples (models/actor.py:236-240)
    "openrlhf": (
        """
        deepspeed --module openrlhf.cli.train_sft --pretrain meta-llama/Llama-3-8B \\
          --ds.packing_samples --attn_implementation sdpa --micro_train_batch_size 1
        """,
        "openrlhf",
        "position_ids",
    ),
    # verl remove-padding (workers/actor/dp_actor.py:170-250), Hydra overrides
    "verl": (
        """
        python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B \\
          actor_rollout_ref.model.use_remove_padding=True \\
          +actor_rollout_ref.model.override_config.attn_implementation=eager
        """,
        "verl",
        "position_ids",
    ),
}


@pytest.mark.parametrize("case", sorted(STACK_SCRIPTS))
def test_stack_launch_is_probed_in_its_mode(tmp_path, case):
    body, stack, mode = STACK_SCRIPTS[case]
    local = tmp_path / "qwen-local"
    local.mkdir()
    # a local checkpoint directory: only its config.json is read (as JSON)
    (local / "config.json").write_text(
        '{"model_type": "qwen2", "hidden_size": 896, "num_attention_heads": 14, "num_key_value_heads": 2,'
        ' "num_hidden_layers": 24, "vocab_size": 151936, "intermediate_size": 4864, "torch_dtype": "bfloat16"}'
    )
    script = _script(tmp_path, body.format(model=local))
    model = inspect_script(script)
    targets, notes = select_targets(model, device="cpu", lengths=LENGTHS)
    assert len(targets) == 1, (targets, notes)
    s = targets[0].settings
    assert isinstance(s, HFProbeSettings) and (s.stack, s.mode) == (stack, mode)
    result = probe_model(model, device="cpu", lengths=LENGTHS)
    (_, report), = result.probes
    if "{model}" in body:
        assert "Qwen2ForCausalLM" in report.backend_detail and "config.json" in report.backend_detail
    _check_against_reference(report, s, LENGTHS)
    assert result.exit_code == report.exit_code


# ------------------------------------------------------------------ reading a launch


def test_unknown_packing_switch_is_not_probed(tmp_path):
    script = _script(
        tmp_path,
        """
        accelerate launch train_sft.py --model_name_or_path x --packing "$(cat packing.txt)" --attn_implementation sdpa
        """,
    )
    targets, notes = select_targets(inspect_script(script))
    assert targets == [] and any("could not decide" in n and "packing" in n for n in notes), notes


def test_flash_attention_2_on_cpu_is_a_usage_error_not_a_verdict():
    from runtime_probe.settings import ProbeUsageError

    with pytest.raises(ProbeUsageError, match="needs a CUDA GPU"):
        run_hf_probe(HFProbeSettings(mode="position_ids", attn_implementation="flash_attention_2", device="cpu"))


def test_launch_values_reads_config_settings_and_flags_win():
    part = {
        "settings": {"packing": {"value": True}, "attn_implementation": {"value": "eager"}},
        "flags": {"--attn_implementation": [{"value": "sdpa"}]},
    }
    v = launch_values(part)
    assert v["packing"] is True and v["attn"] == "sdpa"
    s = hf_settings_from_part({"program": "trl"}, part)
    assert isinstance(s, HFProbeSettings) and (s.mode, s.attn_implementation) == ("position_ids", "sdpa")


def test_a_hub_id_is_never_downloaded(monkeypatch):
    import os

    s = HFProbeSettings(model_path="some-org/mistral-7b-not-on-disk", mode="position_ids", device="cpu")
    desc = build_model(s, torch.device("cpu"), torch.float32).desc
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    assert "MistralForCausalLM" in desc and "not downloaded" in desc


def test_pack_block4d_is_llamafactorys_mask():
    """prepare_4d_attention_mask([[1, 1, 2, 2, 2]]) from LLaMA-Factory's docstring, as 0 / min."""
    row = pack("block4d", [torch.tensor([5, 6]), torch.tensor([7, 8, 9])], torch.float32, torch.device("cpu"))
    m = row.kwargs["attention_mask"][0, 0] == 0
    expected = torch.tensor(
        [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 0, 0], [0, 0, 1, 1, 0], [0, 0, 1, 1, 1]], dtype=torch.bool
    )
    assert torch.equal(m, expected) and row.kwargs["position_ids"].tolist() == [[0, 1, 0, 1, 2]]


# ------------------------------------------------------------------ packlint run --probe


@pytest.mark.parametrize("packing,expected", [("--padding_free True", 0), ("--packing_strategy wrapped", 1)])
def test_run_probe_uses_the_hf_mode(tmp_path, capsys, packing, expected):
    from packlint.cli import main

    script = _script(
        tmp_path,
        f"""
        accelerate launch trl/scripts/sft.py --model_name_or_path Qwen/Qwen2-0.5B \\
          --attn_implementation sdpa --packing {packing}
        """,
    )
    code = main(["run", "--probe", "--dry-run", script])
    err = capsys.readouterr().err
    assert code == expected, err
    assert "Qwen2ForCausalLM" in err and ("PROVEN" in err if expected == 0 else "LEAK: " in err)


def test_use_cache_true_turns_packed_detection_off():
    """What docs/probe.md says and why every probe forward passes use_cache=False: with the config's
    default use_cache=True, transformers creates a DynamicCache and skips packed-sequence detection."""
    s = HFProbeSettings(mode="position_ids", device="cpu")
    model = build_model(s, torch.device("cpu"), torch.float32).model
    model.config.use_cache = True
    row = pack("position_ids", [torch.arange(5), torch.arange(5, 11)], torch.float32, torch.device("cpu"))
    with torch.no_grad():
        cached = model(**row.kwargs).logits[0, 5:]
        uncached = model(**row.kwargs, use_cache=False).logits[0, 5:]
        alone = model(input_ids=torch.arange(5, 11)[None], use_cache=False).logits[0]
    assert float((uncached - alone).abs().max()) < 1e-5
    assert float((cached - alone).abs().max()) > 1e-3


def _config_part(stack, version, settings):
    """A launch-model variant with the `config` block of the config-file reading (packlint.configs:
    ConfigJSON: stack, stack_version, files, settings by dotted key)."""
    return {
        "flags": {},
        "config": {
            "stack": stack,
            "stack_version": {"value": version} if version else {"unknown": "not pinned"},
            "files": [],
            "settings": {k: {"value": v, "source": "file"} for k, v in settings.items()},
        },
    }


@pytest.mark.parametrize(
    "stack,version,settings,expected",
    [
        ("llamafactory", None, {"neat_packing": True, "flash_attn": "sdpa"}, ("llamafactory", "block4d")),
        ("llamafactory", None, {"packing": True, "flash_attn": "fa2"}, ("llamafactory", "position_ids+mask")),
        ("axolotl", "0.17.1", {"sample_packing": True, "attn_implementation": "sdpa"}, ("axolotl", "position_ids+mask")),
        ("axolotl", "0.18.0", {"sample_packing": True, "attn_implementation": "sdpa"}, ("axolotl", "position_ids")),
        ("trl", "0.18.2", {"packing": True, "model_init_kwargs.attn_implementation": "eager"}, ("trl", "concat")),
        ("trl", "0.21.0", {"packing": True}, ("trl", "position_ids")),
        ("swift", None, {"padding_free": True, "attn_impl": "sdpa"}, ("ms-swift", "position_ids")),
        ("verl", None, {"actor_rollout_ref.model.use_remove_padding": False}, ("verl", "none")),
    ],
)
def test_config_file_settings_and_stack_version_decide_the_mode(stack, version, settings, expected):
    s = hf_settings_from_part({"program": "x"}, _config_part(stack, version, settings))
    assert isinstance(s, HFProbeSettings) and (s.stack, s.mode) == expected


def test_llamafactory_yaml_launch_end_to_end(tmp_path):
    """`llamafactory-cli train qwen_sft.yaml`: the YAML's settings (read by packlint.configs) decide the
    stack, the mode and the model; the model's local config.json (beside the script) its architecture."""
    if not _has_config_reading():
        pytest.skip("the launch model has no config block on this branch (packlint.configs not merged)")
    model_dir = tmp_path / "qwen-local"
    model_dir.mkdir()
    (model_dir / "config.json").write_text('{"model_type": "qwen2", "num_attention_heads": 14, "num_key_value_heads": 2}')
    (tmp_path / "qwen_sft.yaml").write_text(
        "model_name_or_path: qwen-local\nstage: sft\npacking: true\nneat_packing: true\nflash_attn: disabled\n"
        "per_device_train_batch_size: 1\ncutoff_len: 64\n"
    )
    script = _script(tmp_path, "FORCE_TORCHRUN=1 llamafactory-cli train qwen_sft.yaml\n")
    model = inspect_script(script)
    result = probe_model(model, device="cpu", lengths=LENGTHS)
    (target, report), = result.probes
    s = target.settings
    assert (s.stack, s.mode, s.attn_implementation) == ("llamafactory", "block4d", "eager")
    assert "Qwen2ForCausalLM" in report.backend_detail
    _check_against_reference(report, s, LENGTHS)


def _has_config_reading() -> bool:
    import importlib.util

    return importlib.util.find_spec("packlint.configs") is not None


def _gated_delta_net_f64(mod, x):
    """Qwen3-Next's Gated DeltaNet token mixer written out here in float64 from the paper's recurrence
    (Yang et al., "Gated Delta Networks"), one token at a time, with the module's weights: causal
    depthwise conv + SiLU, L2-normalised q/k, q scaled by 1/sqrt(d_k), S_t = a_t S_{t-1} (I - b_t k_t k_t^T)
    + b_t v_t k_t^T, o_t = S_t q_t, gated RMS norm, output projection. x: [1, T, hidden] float64."""
    F = torch.nn.functional
    T = x.shape[1]
    q, k, v, z, b, a = mod.fix_query_key_value_ordering(mod.in_proj_qkvz(x), mod.in_proj_ba(x))  # reshapes only
    mixed = torch.cat([t.reshape(1, T, -1) for t in (q, k, v)], dim=-1)[0]  # [T, C]
    w = mod.conv1d.weight[:, 0, :]  # [C, K]
    K = w.shape[1]
    padded = torch.cat([torch.zeros(K - 1, mixed.shape[1], dtype=x.dtype), mixed])
    conv = F.silu(sum(padded[j : j + T] * w[:, j] for j in range(K)))
    q, k, v = torch.split(conv, [mod.key_dim, mod.key_dim, mod.value_dim], dim=-1)
    q, k = (t.reshape(T, mod.num_k_heads, mod.head_k_dim) for t in (q, k))
    v = v.reshape(T, mod.num_v_heads, mod.head_v_dim)
    rep = mod.num_v_heads // mod.num_k_heads
    q, k = q.repeat_interleave(rep, dim=1), k.repeat_interleave(rep, dim=1)
    q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) * mod.head_k_dim**-0.5
    k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    beta = b.reshape(T, mod.num_v_heads).sigmoid()
    decay = torch.exp(-mod.A_log.double().exp() * F.softplus(a.reshape(T, mod.num_v_heads) + mod.dt_bias))
    S = torch.zeros(mod.num_v_heads, mod.head_k_dim, mod.head_v_dim, dtype=x.dtype)
    out = []
    for t in range(T):
        S = S * decay[t][:, None, None]
        delta = (v[t] - torch.einsum("hkv,hk->hv", S, k[t])) * beta[t][:, None]
        S = S + torch.einsum("hk,hv->hkv", k[t], delta)
        out.append(torch.einsum("hkv,hk->hv", S, q[t]))
    o = torch.stack(out).reshape(-1, mod.head_v_dim)
    o = o * torch.rsqrt(o.pow(2).mean(-1, keepdim=True) + mod.norm.variance_epsilon) * mod.norm.weight
    o = o * F.silu(z.reshape(-1, mod.head_v_dim))
    return mod.out_proj(o.reshape(1, T, -1))


def test_hybrid_linear_attention_verdict_matches_float64_recurrence():
    """Qwen3-Next (Gated DeltaNet + full attention, packing-stacks.md row 10), packed with position_ids
    resets (TRL padding_free and friends). The reference: the same weights in float64 with every Gated
    DeltaNet replaced by the recurrence written out in this test, under the two semantics a packed row
    can get: state reset at each sample boundary (cu_seqlens honoured) or carried across the row (not).
    The probe's per-sample |packed - alone| must be one of them, and its verdict and its per-layer
    check follow from which."""
    s = HFProbeSettings(
        mode="position_ids",
        attn_implementation="sdpa",
        model_type="qwen3_next",
        device="cpu",
        lengths=LENGTHS,
        use_cache="false",
    )
    report = run_hf_probe(s)
    probe_errs = next(c.value["per_sample"] for c in report.checks if c.name.startswith("(i)"))

    model = build_model(s, torch.device("cpu"), torch.float64).model
    model.set_experts_implementation("eager")  # torch._grouped_mm has no float64
    gen = torch.Generator().manual_seed(s.seed)
    samples = [torch.randint(0, s.vocab, (n,), generator=gen) for n in LENGTHS]  # the probe's draws
    row = pack("position_ids", samples, torch.float64, torch.device("cpu"))
    mixers = [m for m in model.modules() if type(m).__name__ == "Qwen3NextGatedDeltaNet"]
    assert mixers
    with torch.no_grad():
        # the written-out recurrence is the installed module's computation on one sample (no packing)
        x = torch.randn(1, 9, model.config.hidden_size, dtype=torch.float64, generator=gen)
        assert float((_gated_delta_net_f64(mixers[0], x) - mixers[0](hidden_states=x)).abs().max()) < 1e-5

        def run(segments):
            for m in mixers:
                m.forward = lambda hidden_states, m=m, **kw: torch.cat(
                    [_gated_delta_net_f64(m, hidden_states[:, a:b]) for a, b in segments(hidden_states.shape[1])],
                    dim=1,
                )
            out = model(**row.kwargs, use_cache=False).logits[0]
            alone = [model(input_ids=x[None], use_cache=False).logits[0] for x in samples]
            return [float((out[a:b] - al).abs().max()) for (a, b), al in zip(row.bounds, alone, strict=True)]

        reset = run(lambda T: row.bounds if T == sum(LENGTHS) else [(0, T)])
        carried = run(lambda T: [(0, T)])
        for m in mixers:
            del m.forward
    assert max(reset) < 1e-6 and carried[0] < 1e-6 and min(carried[1:]) > 1e-3  # the two semantics differ
    near = lambda p, r: all(abs(x - y) <= 1e-5 + 1e-3 * y for x, y in zip(p, r, strict=True))  # noqa: E731
    assert near(probe_errs, reset) != near(probe_errs, carried), (probe_errs, reset, carried)
    layer = next(c for c in report.checks if c.name == "(iii) per layer")
    mixing = {(d["layer"], d["class"]) for d in layer.value if d["own_leak"] > 1e-5}
    if near(probe_errs, carried):  # transformers 5.24 on CPU: the torch fallback ignores cu_seqlens
        assert report.verdict == "leak" and report.exit_code == 1
        assert mixing == {(0, "Qwen3NextGatedDeltaNet")}, layer.value  # the full-attention layer isolates
    else:
        assert report.verdict == "proven" and report.leakage["abs"] == 0.0 and not mixing
