"""Mechanisms behind false findings the sixth holdout (h-holdout-k, h-holdout-l) found in the program and stack
lookup, each in the shape of the repository it stands for, with the true finding of the same shape kept."""

from __future__ import annotations

from pathlib import Path

from check_helpers import check_findings as _findings
from check_helpers import write_tree as _tree

_OPENRLHF_DPO = """import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--save_path", type=str, default="./ckpt")
    parser.add_argument("--flash_attn", action="store_true", default=False)
    args = parser.parse_args()
"""


def test_a_program_is_looked_up_in_the_folder_a_cd_before_the_launch_entered(tmp_path, capsys):
    """SeanLeng1/Reward-Calibration: scripts/general_scripts/train-dpo-llama.sh does `cd OpenRLHF` then
    `deepspeed --module openrlhf.cli.train_dpo ... --flash_attn`; the checkout's OpenRLHF/ is OpenRLHF 0.3.8, whose
    train_dpo.py defines --flash_attn. The cd was ignored, the snapshots (0.8.11+) were used: 3 false PK201. The
    program is the vendored file (module or relative path), and a flag it lacks is still an error."""
    root = _tree(
        tmp_path / "Reward-Calibration",
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "OpenRLHF/version.txt": "0.3.8\n",
            "OpenRLHF/openrlhf/__init__.py": "",
            "OpenRLHF/openrlhf/cli/__init__.py": "",
            "OpenRLHF/openrlhf/cli/train_dpo.py": _OPENRLHF_DPO,
            "scripts/general_scripts/train-dpo-llama.sh": (
                "#!/bin/bash\nset -x\ncd OpenRLHF\nread -r -d '' training_commands <<EOF\nopenrlhf.cli.train_dpo \\\n"
                "   --save_path ./ckpt/7b_llama_dpo \\\n   --flash_attn\nEOF\n\ndeepspeed --module $training_commands\n"
            ),
            "scripts/general_scripts/train_rm.sh": (
                "#!/bin/bash\ncd OpenRLHF\npython openrlhf/cli/train_dpo.py --save_path x --flash_attn --bogus\n"
            ),
        },
    )
    found = _findings(capsys, root / "scripts")
    got = sorted((Path(f["path"]).name, f["code"], f["severity"], f["message"].split(" ")[0]) for f in found)
    assert got == [("train_rm.sh", "PK201", "error", "--bogus")], found
    assert "OpenRLHF/openrlhf/cli/train_dpo.py" in found[0]["message"]


_VERL_RUN = """#!/bin/bash
set -x
python3 -m verl.trainer.main_ppo \\
    data.train_files=d/train.parquet \\
    data.train_batch_size=128 \\
    actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    trainer.n_gpus_per_node=8 \\
    trainer.nnodes=2
"""
_RAY_TRAINER_03 = """class RayPPOTrainer:
    def _validate_config(self):
        config = self.config
        if not config.actor_rollout_ref.actor.use_dynamic_bsz:
            assert config.data.train_batch_size >= config.actor_rollout_ref.actor.ppo_mini_batch_size
"""


_PPO_YAML = """data:
  train_files: ~/data/rlhf/gsm8k/train.parquet
  train_batch_size: 1024
actor_rollout_ref:
  actor:
    ppo_mini_batch_size: 256
    use_dynamic_bsz: False
trainer:
  nnodes: 1
  n_gpus_per_node: 8
"""


_SETUP = "from setuptools import setup, find_packages\n\nsetup(name='verl', packages=find_packages())\n"
_MAIN_PPO = """import hydra


@hydra.main(config_path="config", config_name="ppo_trainer", version_base=None)
def main(config):
    pass
"""


def _verl_subproject(folder: str, version: str, ray_trainer: str) -> dict[str, str]:
    return {
        f"{folder}/setup.py": _SETUP,
        f"{folder}/verl/__init__.py": "",
        f"{folder}/verl/version/version": version + "\n",
        f"{folder}/verl/trainer/__init__.py": "",
        f"{folder}/verl/trainer/main_ppo.py": _MAIN_PPO,
        f"{folder}/verl/trainer/ppo/__init__.py": "",
        f"{folder}/verl/trainer/ppo/ray_trainer.py": ray_trainer,
        f"{folder}/verl/trainer/config/ppo_trainer.yaml": _PPO_YAML,
    }


def test_a_stack_installed_from_a_sub_project_folder_is_the_one_the_launch_runs(tmp_path, capsys):
    """MetaStone-AI/MetaStone-S1: verl/ is a verl 0.2.0.dev project (verl/verl/..., README `pip install -e verl`);
    scripts/run_multi_node.sh runs `python3 -m verl.trainer.main_ppo` from outside it. The copy was not associated
    with the launch, the version was unknown and verl>=0.3 assumed: a false PK453 (0.2 has no such check). The
    sub-project's package is the module's: its version and code decide; the same shape at 0.3 keeps the error."""
    old = _tree(
        tmp_path / "MetaStone-S1",
        {".git/HEAD": "ref: refs/heads/main\n", "scripts/run_multi_node.sh": _VERL_RUN}
        | _verl_subproject("verl", "0.2.0.dev", "class RayPPOTrainer:\n    pass\n"),
    )
    assert [f for f in _findings(capsys, old / "scripts") if f["code"] == "PK453"] == []
    new = _tree(
        tmp_path / "verl-fork",
        {".git/HEAD": "ref: refs/heads/main\n", "scripts/run_multi_node.sh": _VERL_RUN}
        | _verl_subproject("verl", "0.3.1.dev", _RAY_TRAINER_03),
    )
    (kept,) = [f for f in _findings(capsys, new / "scripts") if f["code"] == "PK453"]
    assert kept["severity"] == "error" and kept["evidence"] == "checkout", kept


def test_several_sub_projects_holding_the_package_leave_the_launch_undecided(tmp_path, capsys):
    """Two verl projects side by side (an old and a new copy): which one `pip install -e` put on the path is the
    machine's. Neither version decides, and the finding stays an assumption (a warning), not an error."""
    root = _tree(
        tmp_path / "two-verls",
        {".git/HEAD": "ref: refs/heads/main\n", "scripts/run.sh": _VERL_RUN}
        | _verl_subproject("verl", "0.2.0.dev", "class RayPPOTrainer:\n    pass\n")
        | _verl_subproject("verl-new", "0.4.0", _RAY_TRAINER_03),
    )
    found = [f for f in _findings(capsys, root / "scripts") if f["code"] == "PK453"]
    assert [(f["severity"], f["evidence"]) for f in found] == [("warning", "assumed")], found
    assert "the installed version is unknown" in found[0]["message"]


_QUININE_ARGS = """import argparse

try:
    from quinine import QuinineArgumentParser

    _quinine_available = True
except ImportError:
    _quinine_available = False


def parse_args(extra_args_provider=None):
    parser = (
        QuinineArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
        if _quinine_available
        else argparse.ArgumentParser(description="Megatron-LM Arguments", allow_abbrev=False)
    )
    parser.add_argument("--num-layers", type=int, default=None)
    args = parser.parse_quinfig() if _quinine_available else parser.parse_args()
    return args
"""
_QUININE_STMT = """import argparse
try:
    from quinine import QuinineArgumentParser
    _q = True
except ImportError:
    _q = False


def parse():
    if not _q:
        p = argparse.ArgumentParser(allow_abbrev=False)
    else:
        p = QuinineArgumentParser(allow_abbrev=False)
    p.add_argument("--lr", type=float, default=1e-4)
    return p.parse_quinfig() if _q else p.parse_args()


parse()
"""


_PRETRAIN = 'from megatron.arguments import parse_args\n\nif __name__ == "__main__":\n    parse_args()\n'


def test_a_parser_class_chosen_by_an_optional_import_leaves_its_flags_open(tmp_path, capsys):
    """lorr1/Megatron-LM: megatron/arguments.py builds `QuinineArgumentParser(...) if _quinine_available else
    argparse.ArgumentParser(...)` (quinine imported under try/except); quinine's parser adds --config, which the
    examples pass. Only the argparse branch was read: 3 false PK201 errors. The flags of a parser whose class is
    a package packlint cannot read are open, whichever branch names it; a plain parser still decides."""
    root = _tree(
        tmp_path / "Megatron-LM",
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "megatron/__init__.py": "",
            "megatron/arguments.py": _QUININE_ARGS,
            "pretrain_gpt.py": _PRETRAIN,
            "quin/train.py": _QUININE_STMT,
            "plain/train.py": _QUININE_STMT.replace("QuinineArgumentParser(", "argparse.ArgumentParser("),
            "examples/quin_distributed.sh": (
                "#!/bin/bash\npython -m torch.distributed.launch --nproc_per_node 8 pretrain_gpt.py --num-layers 24 "
                "--config configs/gpt2.yaml\n"
            ),
            "examples/quin_stmt.sh": "#!/bin/bash\npython quin/train.py --lr 1e-4 --config configs/a.yaml\n",
            "examples/plain.sh": "#!/bin/bash\npython plain/train.py --lr 1e-4 --config configs/a.yaml\n",
        },
    )
    found = [f for f in _findings(capsys, root / "examples") if f["code"] == "PK201"]
    assert [(Path(f["path"]).name, f["severity"]) for f in found] == [("plain.sh", "error")], found


_LONG_VITA_FLAGS = (
    "    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 1 \\\n"
    "    --num-layers 48 --micro-batch-size 1 --use-mcore-models --use-flash-attn \\\n"
    "    --reset-attention-mask --reset-position-ids --seq-length 32768\n"
)


def test_reset_mask_on_a_program_patched_by_modellink_is_undecided(tmp_path, capsys):
    """VITA-MLLM/Long-VITA: scripts/modellink/*.sh run long_vita_modellink/pretrain_long_vita.py, which starts with
    `from modellink import megatron_adaptor` (MindSpeed-LLM, not in the tree) and patches the flash attention with
    its own (npu_fusion_attention with the reset mask's actual_seq_qlen): 2 false PK490 judged from upstream's
    Transformer Engine default. A program importing a package that patches Megatron at import does not run the
    release's defaults; the GPU scripts' program (upstream Megatron only) keeps its PK490."""
    root = _tree(
        tmp_path / "Long-VITA",
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "long_vita_modellink/__init__.py": "",
            "long_vita_modellink/pretrain_long_vita.py": (
                "from modellink import megatron_adaptor\nfrom megatron.training import get_args, pretrain\n\n"
                'if __name__ == "__main__":\n    pretrain(None, None, None)\n'
            ),
            "long_vita/__init__.py": "",
            "long_vita/pretrain_long_vita.py": (
                'from megatron.training import get_args, pretrain\n\nif __name__ == "__main__":\n'
                "    pretrain(None, None, None)\n"
            ),
            "scripts/modellink/finetune_stage1.sh": (
                "#!/bin/bash\ntorchrun --nproc_per_node 8 long_vita_modellink/pretrain_long_vita.py \\\n"
                + _LONG_VITA_FLAGS
            ),
            "scripts/megatron/finetune_stage1.sh": (
                "#!/bin/bash\ntorchrun --nproc_per_node 8 long_vita/pretrain_long_vita.py \\\n" + _LONG_VITA_FLAGS
            ),
        },
    )
    found = [f for f in _findings(capsys, root / "scripts") if f["code"] == "PK490"]
    assert [Path(f["path"]).parent.name for f in found] == ["megatron"], found


def test_an_absolute_program_path_of_another_machine_mapped_by_its_end_is_a_named_premise(tmp_path, capsys):
    """behroozazarkhalili/HF-TRL-Slurm: the Slurm jobs run `python /project/6014832/ermia/HF-TRL/.claude/skills/
    slurm-model-trainer/scripts/train_sft.py --trackio_dir ...` (the author's checkout); packlint maps it to the
    checkout's file by the end of the path, a mapping the finding did not name (evidence checkout, an error). The
    PK201 stands, as an assumption named in its evidence (a warning); a relative path found as written does not."""
    skill = ".claude/skills/slurm-model-trainer/scripts"
    root = _tree(
        tmp_path / "HF-TRL-Slurm",
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            f"{skill}/train_sft.py": (
                "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument('--model', required=True)\n"
                "args = parser.parse_args()\n"
            ),
            "jobs/sft.slurm": (
                "#!/bin/bash\n#SBATCH --gres=gpu:1\n"
                f"python /project/6014832/ermia/HF-TRL/{skill}/train_sft.py --model m --trackio_dir ./trackio\n"
            ),
            "jobs/sft_rel.sh": f"#!/bin/bash\ncd ..\npython {skill}/train_sft.py --model m --trackio_dir ./trackio\n",
        },
    )
    found = sorted(
        (f for f in _findings(capsys, root / "jobs") if f["code"] == "PK201"), key=lambda f: Path(f["path"]).name
    )
    assert [(Path(f["path"]).name, f["severity"], f["evidence"]) for f in found] == [
        ("sft.slurm", "warning", "assumed"),
        ("sft_rel.sh", "error", "checkout"),
    ], found
    (premise,) = [p for p in found[0]["premises"] if "/project/6014832" in str(p)]
    assert f"this checkout's {skill}/train_sft.py" in str(premise)


def test_a_cd_to_another_machines_path_maps_the_program_lookup_under_a_named_premise(tmp_path, capsys):
    """The same Reward-Calibration shape with `cd /home/me/Reward-Calibration/OpenRLHF` (the author's machine): the
    folder is the checkout's OpenRLHF/ by the path's tail, an assumption named in the evidence (a warning)."""
    root = _tree(
        tmp_path / "Reward-Calibration",
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "OpenRLHF/openrlhf/__init__.py": "",
            "OpenRLHF/openrlhf/cli/__init__.py": "",
            "OpenRLHF/openrlhf/cli/train_dpo.py": _OPENRLHF_DPO,
            "scripts/train_dpo.sh": (
                "#!/bin/bash\ncd /home/me/Reward-Calibration/OpenRLHF\n"
                "deepspeed --module openrlhf.cli.train_dpo --save_path x --flash_attn --bogus\n"
            ),
        },
    )
    (found,) = [f for f in _findings(capsys, root / "scripts") if f["code"] == "PK201"]
    assert found["message"].startswith("--bogus") and (found["severity"], found["evidence"]) == ("warning", "assumed")
    assert "OpenRLHF/openrlhf/cli/train_dpo.py" in found["message"]
    assert any("taken to be the checkout's OpenRLHF/" in str(p) for p in found["premises"]), found
