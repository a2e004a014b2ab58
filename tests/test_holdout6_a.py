"""Mechanisms behind false findings of the sixth holdout's Megatron/multimodal half (issue 26; log
h-holdout-l), each in the shape the real repository uses."""

from __future__ import annotations

import json

from packlint.cli import main


def _check_json(capsys, *argv) -> list[dict]:
    capsys.readouterr()
    main(["check", "--isolated", "--format", "json", "--exit-zero", "--no-cache", *argv])
    return json.loads(capsys.readouterr().out)["findings"]


def _codes(findings: list[dict], code: str) -> list[dict]:
    return [f for f in findings if f["code"] == code]


# --- PK105: the values bash gives, not the assignments' words (FastVideo, Forks25) -----------------

_FASTVIDEO_SLURM = """\
#!/bin/bash
#SBATCH --job-name=t2v
#SBATCH --nodes=1
export WANDB_BASE_URL="https://api.wandb.ai"
export WANDB_MODE="online"
export NCCL_P2P_DISABLE=1
export TOKENIZERS_PARALLELISM=false
export WANDB_MODE=online
torchrun --nnodes 1 --nproc_per_node 1 train.py --seed 42
"""

_EZPZ_UTILS = """\
#!/bin/bash
ezpz_setup_job() {
    local dist_launch_cmd="mpiexec --verbose --envall -n 8 -ppn 4 --cpu-bind depth -d 16"
    export LAUNCH="${dist_launch_cmd}"
    export DIST_LAUNCH="${dist_launch_cmd}"
    export ezlaunch="${DIST_LAUNCH}"
    export LAUNCH="${DIST_LAUNCH}"
}
ezpz_setup_job
${LAUNCH} python3 train.py --lr 1e-4
"""

_TRAIN = "import os\nprint(os.environ.get('WANDB_MODE'))\n"


def test_pk105_same_value_quoted_once_and_once_not_is_not_lost(tmp_path, capsys) -> None:
    (tmp_path / "train.py").write_text(_TRAIN)
    (tmp_path / "finetune_t2v.slurm").write_text(_FASTVIDEO_SLURM)
    assert _codes(_check_json(capsys, str(tmp_path)), "PK105") == []


def test_pk105_same_value_through_another_variable_is_not_lost(tmp_path, capsys) -> None:
    (tmp_path / "train.py").write_text(_TRAIN)
    (tmp_path / "ezpz_utils.sh").write_text(_EZPZ_UTILS)
    assert _codes(_check_json(capsys, str(tmp_path)), "PK105") == []


def test_pk105_different_values_still_fire(tmp_path, capsys) -> None:
    (tmp_path / "train.py").write_text(_TRAIN)
    (tmp_path / "finetune_t2v.slurm").write_text(
        _FASTVIDEO_SLURM.replace("export WANDB_MODE=online", "export WANDB_MODE=offline")
    )
    (tmp_path / "ezpz_utils.sh").write_text(
        _EZPZ_UTILS.replace('export DIST_LAUNCH="${dist_launch_cmd}"', 'export DIST_LAUNCH="srun -n 8"')
    )
    found = _codes(_check_json(capsys, str(tmp_path)), "PK105")
    assert sorted((f["path"].rsplit("/", 1)[-1], f["line"]) for f in found) == [
        ("ezpz_utils.sh", 7),
        ("finetune_t2v.slurm", 8),
    ]


def test_pk105_unknown_value_is_undecided(tmp_path, capsys) -> None:
    (tmp_path / "train.py").write_text(_TRAIN)
    # the first value comes from the caller's environment: it may equal the second one, or not
    (tmp_path / "run.sh").write_text(
        'export CUDA_VISIBLE_DEVICES="${GPUS}"\nexport CUDA_VISIBLE_DEVICES=0,1\ntorchrun --nproc_per_node 2 train.py\n'
    )
    assert _codes(_check_json(capsys, str(tmp_path)), "PK105") == []
