"""Forks and the upstream premise (issues 26 and 27, h-forks): which launches upstream Megatron-LM's
snapshots, startup checks and defaults describe."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from packlint.codebase.snapshots import foreign_flags, names_upstream


def test_fork_flags_are_foreign_and_typos_are_not() -> None:
    # Megatron-DeepSpeed's own flags and a flag older than the snapshots: no release defines them
    got = foreign_flags(["--deepspeed", "--zero-stage", "--deepspeed_config", "--data-impl", "--num-layers"])
    assert got == ("--deepspeed", "--zero-stage", "--deepspeed_config", "--data-impl")
    # a misspelt upstream flag stays PK201's (close to --micro-batch-size); underscores are upstream's spelling
    assert foreign_flags(["--micro-bach-size", "--tensor_model_parallel_size", "--checkpoint-activations"]) == ()


def test_a_path_naming_upstream_wins_over_its_flags() -> None:
    assert names_upstream("/workspace/Megatron-LM/pretrain_gpt.py")
    assert not names_upstream("/workspace/Megatron-DeepSpeed/pretrain_gpt.py")
    assert not names_upstream("pretrain_gpt.py")


# A LLaMA-Factory config in the shape of OpenBMB/MiniCPM minicpm_sala/finetune/llama_factory/configs/*.yaml:
# its DeepSpeed file is relative to LLaMA-Factory's own checkout, where the README copies the config.
_LF_CONFIG = """### model
model_name_or_path: /root/ld/ld_model_pretrained/MiniCPM4/
trust_remote_code: true

### method
stage: sft
do_train: true
finetuning_type: full

### ddp
ddp_timeout: 180000000
deepspeed: examples/deepspeed/ds_z3_config.json

### dataset
dataset: glaive_toolcall_en,glaive_toolcall_zh
template: cpm4
cutoff_len: 1800

### output
output_dir: saves/minicpm/fuction_call
per_device_train_batch_size: 2
"""


def _pk601(capsys, path) -> list[tuple[str, str]]:
    import json

    from packlint.cli import main

    main(["check", "--isolated", "--no-cache", "--exit-zero", "--format", "json", str(path)])
    out = json.loads(capsys.readouterr().out)
    return [(f["code"], f["severity"]) for f in out["findings"] if f["code"] == "PK601"]


def test_a_config_checked_on_its_own_names_a_file_of_the_directory_its_stack_starts_in(tmp_path, capsys) -> None:
    (tmp_path / ".git").mkdir()
    configs = tmp_path / "finetune" / "configs"
    configs.mkdir(parents=True)
    cfg = configs / "minicpm_sft.yaml"
    cfg.write_text(_LF_CONFIG)
    # no launch script names it: where LLaMA-Factory starts is the machine's
    assert _pk601(capsys, cfg) == [("PK601", "info")]
    # a launch script beside it names it: the file is missing where that launch runs it
    (configs / "train.sh").write_text("#!/bin/bash\nllamafactory-cli train minicpm_sft.yaml\n")
    from packlint.conditions.functions import stack

    stack._PINNED_MEMO.clear()
    stack._WORDS_MEMO.clear()
    assert _pk601(capsys, cfg) == [("PK601", "warning")]


def _premises(capsys, path, code: str) -> list[str]:
    import json

    from packlint.cli import main

    main(["check", "--isolated", "--no-cache", "--exit-zero", "--format", "json", str(path)])
    out = json.loads(capsys.readouterr().out)
    return [p["because"] for f in out["findings"] if f["code"] == code for p in f["premises"]]


def test_values_from_a_source_resolved_against_the_working_directory_are_assumed(capsys) -> None:
    from pathlib import Path

    here = Path(__file__).parent / "fixtures" / "check" / "PK301"
    relative = _premises(capsys, here / "sourced_relative.sh", "PK301")
    assert any(p.startswith("the script run from its own directory") for p in relative), relative
    anchored = _premises(capsys, here / "sourced_beside_script.sh", "PK301")
    assert anchored == [], anchored  # known from the checkout; world < TP x PP needs no upstream premise


def test_source_parent_directory(tmp_path, capsys) -> None:
    """`source ../setup.sh` (the shape issue 26 names): bash reads the working directory's parent."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "exp" / "run").mkdir(parents=True)
    (tmp_path / "exp" / "setup.sh").write_text("TP=4\nPP=2\n")
    script = tmp_path / "exp" / "run" / "train.sh"
    script.write_text(
        "#!/bin/bash\nsource ../setup.sh\ntorchrun --nproc_per_node 2 /workspace/Megatron-LM/pretrain_gpt.py "
        "--tensor-model-parallel-size $TP --pipeline-model-parallel-size $PP --num-layers 24 --micro-batch-size 1\n"
    )
    got = _premises(capsys, script, "PK301")
    assert "the script run from its own directory (`source ../setup.sh`)" in got, got


_AXOLOTL_CONFIG = """base_model: openlm-research/open_llama_3b
model_type: LlamaForCausalLM
load_in_8bit: true
datasets:
  - path: teknium/GPT4-LLM-Cleaned
    type: alpaca
sequence_len: 1024
adapter: lora
lora_r: 8
micro_batch_size: 2
num_epochs: 4
learning_rate: 0.0002
eval_table_max_new_tokens: 128
debug: true
"""


def _pk207(capsys, path) -> list[str]:
    import json

    from packlint.cli import main

    main(["check", "--isolated", "--no-cache", "--exit-zero", "--format", "json", str(path)])
    out = json.loads(capsys.readouterr().out)
    return sorted(f["message"].split(" ", 1)[0] for f in out["findings"] if f["code"] == "PK207")


def test_a_vendored_axolotl_without_the_config_model_judges_no_key(tmp_path, capsys) -> None:
    """rohanbalkondekar/axolotl's shape: axolotl 0.3.0 vendored in src/axolotl (setup.py), a DictDefault config
    whose `debug` the CLI reads (`cfg.debug`): the current release's pydantic model is not what runs."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "examples").mkdir()
    cfg = tmp_path / "examples" / "lora.yml"
    cfg.write_text(_AXOLOTL_CONFIG)
    assert "debug" in _pk207(capsys, cfg)  # without the code: the current release's model, which lacks it
    (tmp_path / "setup.py").write_text('from setuptools import setup\nsetup(name="axolotl", version="0.3.0")\n')
    (tmp_path / "src" / "axolotl" / "cli").mkdir(parents=True)
    (tmp_path / "src" / "axolotl" / "__init__.py").write_text("")
    (tmp_path / "src" / "axolotl" / "cli" / "__init__.py").write_text(
        "def do_cli(cfg, cli_args):\n    if cli_args.debug or cfg.debug:\n        pass\n"
    )
    from packlint.conditions.functions import stack_vendored

    stack_vendored._LOCAL.clear()
    assert _pk207(capsys, cfg) == []


_MII_UTILS = """import argparse


def parse_args(server_args=False, client_args=False):
    server_parser = argparse.ArgumentParser(add_help=False)
    server_parser.add_argument("--tp_size", type=int, nargs="+", default=None)
    client_parser = argparse.ArgumentParser(add_help=False)
    client_parser.add_argument("--stream", action="store_true")
    parents = []
    if server_args:
        parents.append(server_parser)
    if client_args:
        parents.append(client_parser)
    parser = argparse.ArgumentParser(parents=parents)
    parser.add_argument("--model", type=str, default="meta-llama/Llama-2-7b-hf")
    return parser.parse_args()
"""


def _pk201(capsys, path) -> list[str]:
    import json

    from packlint.cli import main

    main(["check", "--isolated", "--no-cache", "--exit-zero", "--format", "json", str(path)])
    out = json.loads(capsys.readouterr().out)
    return sorted(f["message"].split(" ", 1)[0] for f in out["findings"] if f["code"] == "PK201")


def test_argparse_parents_give_their_options(tmp_path, capsys) -> None:
    """microsoft/DeepSpeedExamples benchmarks/inference/mii's shape: `ArgumentParser(parents=parents)` with a
    list appended to under conditions: its options are unknown (no PK201); a literal list is read."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "__init__.py").write_text("")
    (tmp_path / "src" / "utils.py").write_text(_MII_UTILS)
    (tmp_path / "run_benchmark.py").write_text("from src.utils import parse_args\n\nargs = parse_args(True, True)\n")
    script = tmp_path / "run_all.sh"
    script.write_text("python ./run_benchmark.py --model m --stream --tp_size 4 --backend fastgen\n")
    assert _pk201(capsys, script) == []
    (tmp_path / "src" / "utils.py").write_text(
        _MII_UTILS.replace("parents=parents", "parents=[server_parser, client_parser]")
    )
    assert _pk201(capsys, script) == ["--backend"]


def test_pk423_stands_for_the_axolotl_in_the_tree(tmp_path, capsys) -> None:
    """rohanbalkondekar/axolotl's examples/mistral/config.yml shape: sample_packing with eval_table_size 5. The
    current release rejects it at start; the axolotl 0.3.0 the checkout vendors has no such check."""
    import json

    from packlint.cli import main

    def codes() -> list[str]:
        main(["check", "--isolated", "--no-cache", "--exit-zero", "--format", "json", str(cfg)])
        return [f["code"] for f in json.loads(capsys.readouterr().out)["findings"] if f["severity"] != "info"]

    (tmp_path / ".git").mkdir()
    (tmp_path / "examples").mkdir()
    cfg = tmp_path / "examples" / "config.yml"
    cfg.write_text(
        "base_model: mistralai/Mistral-7B-v0.1\nmodel_type: MistralForCausalLM\ndatasets:\n  - path: mhenrichsen/alpaca_2k_test\n"
        "    type: alpaca\nsequence_len: 8192\nsample_packing: true\npad_to_sequence_len: true\nmicro_batch_size: 2\n"
        "num_epochs: 4\nlearning_rate: 0.000005\nflash_attention: true\neval_table_size: 5\n"
    )
    assert "PK423" in codes()
    (tmp_path / "src" / "axolotl" / "utils").mkdir(parents=True)
    (tmp_path / "src" / "axolotl" / "__init__.py").write_text("")
    (tmp_path / "src" / "axolotl" / "utils" / "trainer.py").write_text(
        "def setup_trainer(cfg):\n    return cfg.eval_sample_packing is not False\n"
    )
    assert "PK423" not in codes()


def test_a_pre_core_megatron_in_the_tree_is_not_judged_by_todays_release(tmp_path, capsys) -> None:
    """yandex/YaLM-100B vendors Megatron-LM 1.1.5 (megatron_lm/, `megatron/package_info.py`, no `megatron/core/`),
    whose `--model-parallel-size` and `--checkpoint-activations` are current flags and whose validation is inline
    in parse_args: PK324 (retired in later releases) is undecided there. The same tree with Megatron-Core is judged."""
    import json
    import shutil

    from packlint.cli import main

    tree = tmp_path / "repo"
    shutil.copytree(Path(__file__).parent / "fixtures" / "startup" / "pre_core_megatron", tree)
    (tree / ".git").mkdir()
    script = tree / "megatron_lm" / "examples" / "finetune_mnli_distributed.sh"

    def pk324() -> list[str]:
        capsys.readouterr()
        main(["check", "--isolated", "--no-cache", "--exit-zero", "--format", "json", str(script)])
        out = json.loads(capsys.readouterr().out)
        return sorted(f["message"].split(" ", 1)[0] for f in out["findings"] if f["code"] == "PK324")

    assert pk324() == []
    (tree / "megatron_lm" / "megatron" / "core").mkdir()
    assert pk324() == ["--checkpoint-activations", "--model-parallel-size"]


def test_a_program_in_a_submodule_of_a_fork_is_the_forks(tmp_path, capsys) -> None:
    """databricks/megablocks: `pretrain_gpt.py` of third_party/Megatron-LM, a git submodule (not fetched) whose
    url is stanford-futuredata/Megatron-LM, a fork with --moe-num-experts, --moe-top-k, ...: upstream's snapshots
    are not its code (72 false PK201 warnings). With NVIDIA's url the path means upstream, and a flag no release
    has stays PK201."""
    for url, want in (
        ("https://github.com/stanford-futuredata/Megatron-LM.git", []),
        ("https://github.com/NVIDIA/Megatron-LM.git", ["--moe-num-experts"]),
    ):
        root = tmp_path / url.split("/")[-2]
        (root / ".git").mkdir(parents=True)
        (root / "third_party" / "Megatron-LM").mkdir(parents=True)
        (root / ".gitmodules").write_text(
            f'[submodule "third_party/Megatron-LM"]\n\tpath = third_party/Megatron-LM\n\turl = {url}\n'
        )
        script = root / "exp" / "moe" / "moe_46m_8gpu.sh"
        script.parent.mkdir(parents=True)
        script.write_text(
            "#!/bin/bash\ntorchrun --nproc_per_node 8 third_party/Megatron-LM/pretrain_gpt.py \\\n"
            "  --num-layers 6 --hidden-size 512 --num-attention-heads 8 --seq-length 1024 --max-position-embeddings 1024 \\\n"
            "  --micro-batch-size 8 --moe-num-experts 64 --tensor-model-parallel-size 1\n"
        )
        assert _pk201(capsys, script) == want, url


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_upstream_megatron_as_a_submodule_is_the_commit_its_gitlink_pins(tmp_path, capsys) -> None:
    """Mr-Philo/MS-AMP-Examples: `torchrun ../third_party/Megatron-LM/pretrain_gpt.py --data-impl mmap ...`, the
    submodule (NVIDIA/Megatron-LM, not checked out) pinned at 0609f27 of 2023, which still defines --data-impl and
    --no-query-key-layer-scaling: upstream's snapshots (core_v0.12.0 on) are not that code (14 false PK201
    warnings). Pinned at a snapshot's own commit, the snapshots decide, and an unknown flag stays PK201."""
    import json

    from packlint.cli import main

    releases = json.loads((Path(__file__).parents[1] / "rules" / "megatron_flags.json").read_text())["releases"]
    for sha, want in (
        ("0609f27fe8376f17ab65c001d3d8f35cd8175950", []),
        (releases[-1]["commit"], ["--data-impl"]),
    ):
        root = tmp_path / sha[:7]
        (root / "third_party" / "Megatron-LM").mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / ".gitmodules").write_text(
            '[submodule "third_party/Megatron-LM"]\n\tpath = third_party/Megatron-LM\n'
            "\turl = https://github.com/NVIDIA/Megatron-LM.git\n"
        )
        subprocess.run(
            ["git", "-C", str(root), "update-index", "--add", "--cacheinfo", f"160000,{sha},third_party/Megatron-LM"],
            check=True,
        )
        script = root / "gpt3" / "pretrain_345m_megatron.sh"
        script.parent.mkdir(parents=True)
        script.write_text(
            "#!/bin/bash\ncd ..\ntorchrun --nproc_per_node 8 third_party/Megatron-LM/pretrain_gpt.py \\\n"
            "  --num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 1024 \\\n"
            "  --max-position-embeddings 1024 --micro-batch-size 4 --data-impl mmap --tensor-model-parallel-size 1\n"
        )
        assert _pk201(capsys, script) == want, sha
        if not want:
            main(["check", "--isolated", "--no-cache", "--exit-zero", "--format", "json", str(script)])
            (info,) = [f for f in json.loads(capsys.readouterr().out)["findings"] if f["code"] == "PK206"]
            assert info["severity"] == "info" and "at the commit 0609f27fe837 its gitlink pins" in info["message"]


def test_a_forks_megatron_package_directory_is_not_upstreams_name(tmp_path, capsys) -> None:
    """FlagOpen/FlagPerf: `torchrun $SCALEHOME/megatron/pretrain_gpt.py` with SCALEHOME=/workspace/FlagScale-release-v0.2:
    `megatron/` is the package directory FlagScale keeps its Megatron in, not a name for upstream; the checkout
    above it is the fork (25 false PK201 warnings on upstream snapshots). `/workspace/Megatron-LM/...` stays upstream."""
    for home, want in (
        ("/workspace/FlagScale-release-v0.2", []),
        ("/workspace/Megatron-LM", ["--apply-layernorm-rms"]),
    ):
        root = tmp_path / home.rsplit("/", 1)[-1]
        (root / ".git").mkdir(parents=True)
        script = root / "training" / "aquila2_7B" / "singlenode.sh"
        script.parent.mkdir(parents=True)
        script.write_text(
            f"#!/bin/bash\nSCALEHOME={home}\ntorchrun --nproc_per_node 8 $SCALEHOME/megatron/pretrain_gpt.py \\\n"
            "  --num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 --micro-batch-size 1 \\\n"
            "  --max-position-embeddings 2048 --apply-layernorm-rms --tensor-model-parallel-size 1\n"
        )
        assert _pk201(capsys, script) == want, home
