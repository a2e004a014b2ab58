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
    # the first value is a command's output: it may equal the second one, or not
    (tmp_path / "run.sh").write_text(
        'export CUDA_VISIBLE_DEVICES="$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)"\n'
        "export CUDA_VISIBLE_DEVICES=0,1\ntorchrun --nproc_per_node 2 train.py\n"
    )
    assert _codes(_check_json(capsys, str(tmp_path)), "PK105") == []


def test_pk105_two_machine_variables_are_two_settings(tmp_path, capsys) -> None:
    # zhenghh04/alcf-megatron-deepspeed-build utils/local_rank.sh: PMIX_* then PALS_*, nothing read between
    (tmp_path / "train.py").write_text(_TRAIN)
    (tmp_path / "local_rank.sh").write_text(
        "#!/bin/bash\nexport LOCAL_RANK=$PMIX_LOCAL_RANK\nexport RANK=$PMIX_RANK\n"
        "export LOCAL_RANK=$PALS_LOCAL_RANKID\nexport RANK=$PALS_RANKID\npython train.py\n"
    )
    found = _codes(_check_json(capsys, str(tmp_path)), "PK105")
    assert sorted(f["line"] for f in found) == [4, 5], found


_EZPZ_LIBRARY = """\
#!/bin/bash
# sourced by the launch scripts; nothing here runs on its own
ezpz_save_dist_env() {
    dist_launch_cmd=$(ezpz_get_dist_launch_cmd "${hostfile}")
    export LAUNCH="${dist_launch_cmd}"
    export DIST_LAUNCH="${dist_launch_cmd}"
    export LAUNCH="${DIST_LAUNCH}"
    export WANDB_MODE="online"
    export WANDB_MODE=online
    export NCCL_DEBUG="INFO"
    export NCCL_DEBUG=WARN
}
"""


def test_pk105_in_code_no_launch_runs_compares_literal_values_only(tmp_path, capsys) -> None:
    (tmp_path / "train.py").write_text(_TRAIN)
    (tmp_path / "ezpz_utils.sh").write_text(_EZPZ_LIBRARY)
    found = _codes(_check_json(capsys, str(tmp_path)), "PK105")
    assert [(f["line"], "NCCL_DEBUG" in f["message"]) for f in found] == [(11, True)], found


# --- PK301: a world size set in the fallback branch of the platform's variables (Long-VITA) ----------

_PRETRAIN_GPT = """\
import argparse

p = argparse.ArgumentParser()
p.add_argument("--tensor-model-parallel-size", type=int, default=1)
p.add_argument("--pipeline-model-parallel-size", type=int, default=1)
p.add_argument("--num-layers", type=int)
p.add_argument("--hidden-size", type=int)
p.add_argument("--num-attention-heads", type=int)
p.add_argument("--micro-batch-size", type=int)
p.add_argument("--global-batch-size", type=int)
p.add_argument("--seq-length", type=int)
p.add_argument("--max-position-embeddings", type=int)
p.parse_args()
"""

_LONG_VITA = """\
#!/bin/bash
set -e
GPUS_PER_NODE=${NPROC_PER_NODE}
NNODES=${WORLD_SIZE}
NODE_RANK=${RANK}
MASTER_PORT=34567
if [ -z "$GPUS_PER_NODE" ]; then
    GPUS_PER_NODE=8
    NNODES=1
    NODE_RANK=0
    MASTER_ADDR=127.0.0.1
fi
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT"
torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \\
    --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 --num-layers 80 --hidden-size 8192 \\
    --num-attention-heads 64 --micro-batch-size 1 --global-batch-size 64 --seq-length 4096 --max-position-embeddings 4096
"""


def _pk301(tmp_path, capsys, script: str) -> list[dict]:
    (tmp_path / "pretrain_gpt.py").write_text(_PRETRAIN_GPT)
    (tmp_path / "scripts").mkdir(exist_ok=True)
    (tmp_path / "scripts" / "pretrain_72b_tp8pp8_stage1.sh").write_text(script)
    return _codes(_check_json(capsys, str(tmp_path)), "PK301")


def test_pk301_world_size_from_the_platforms_fallback_branch_is_machine_info(tmp_path, capsys) -> None:
    (f,) = _pk301(tmp_path, capsys, _LONG_VITA)
    assert f["severity"] == "info" and f["evidence"] == "machine", f
    assert "$NPROC_PER_NODE unset" in f["message"], f["message"]


def test_pk301_and_list_fallback_carries_the_premise(tmp_path, capsys) -> None:
    script = _LONG_VITA.replace(
        'if [ -z "$GPUS_PER_NODE" ]; then\n    GPUS_PER_NODE=8\n    NNODES=1\n    NODE_RANK=0\n    MASTER_ADDR=127.0.0.1\nfi\n',
        '[ -z "$GPUS_PER_NODE" ] && GPUS_PER_NODE=8\n[ -z "$NNODES" ] && NNODES=1\nMASTER_ADDR=127.0.0.1\n',
    )
    (f,) = _pk301(tmp_path, capsys, script)
    assert f["severity"] == "info" and f["evidence"] == "machine", f


def test_pk301_world_size_the_script_sets_stays_an_error(tmp_path, capsys) -> None:
    script = _LONG_VITA.replace(
        "GPUS_PER_NODE=${NPROC_PER_NODE}\nNNODES=${WORLD_SIZE}\nNODE_RANK=${RANK}\n",
        "GPUS_PER_NODE=4\nNNODES=2\nNODE_RANK=0\nMASTER_ADDR=10.0.0.1\n",
    )
    (f,) = _pk301(tmp_path, capsys, script)
    assert f["severity"] == "error" and f["evidence"] == "checkout", f


# --- PK202: a placeholder default of a caller's variable (Mono-InternVL) --------------------------------

_INTERNVL_FINETUNE = """\
from dataclasses import dataclass, field

from transformers import HfArgumentParser, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default=None)


@dataclass
class DataTrainingArguments:
    meta_path: str = field(default=None)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    parser.parse_args_into_dataclasses()


if __name__ == "__main__":
    main()
"""

_MONO_TORCHRUN = """\
#!/bin/bash

GPUS=8
PER_DEVICE_BATCH_SIZE=4
BATCH_SIZE=128
GRADIENT_ACC=$((BATCH_SIZE / PER_DEVICE_BATCH_SIZE / GPUS))

MODEL=${MODEL:-"Path to your model"}
OUTPUT_DIR=${OUTPUT_DIR:-"Path to your output directory"}
mkdir -p "$OUTPUT_DIR"

export PYTHONPATH="${PYTHONPATH}:$(pwd)"

torchrun --nproc_per_node=$GPUS --master_port=29501 \\
  internvl/train/internvl_chat_finetune.py \\
  --model_name_or_path ${MODEL} \\
  --meta_path "./shell/data_llava_finetune.json" \\
  --per_device_train_batch_size ${PER_DEVICE_BATCH_SIZE} \\
  --output_dir ${OUTPUT_DIR} \\
  --gradient_accumulation_steps ${GRADIENT_ACC}
"""


def _mono(tmp_path, capsys, script: str) -> list[dict]:
    (tmp_path / ".git").mkdir()  # the checkout's root: torchrun's program path is relative to it
    (tmp_path / "internvl" / "train").mkdir(parents=True)
    (tmp_path / "internvl" / "train" / "internvl_chat_finetune.py").write_text(_INTERNVL_FINETUNE)
    (tmp_path / "shell").mkdir()
    (tmp_path / "shell" / "mono_internvl_finetune_llava_torchrun.sh").write_text(script)
    return _codes(_check_json(capsys, str(tmp_path)), "PK202")


def test_pk202_on_a_placeholder_default_names_the_callers_premise(tmp_path, capsys) -> None:
    found = _mono(tmp_path, capsys, _MONO_TORCHRUN)
    assert sorted(f["line"] for f in found) == [16, 19], found
    for f in found:
        assert f["severity"] == "warning" and f["evidence"] == "assumed", f
        assert "leaves $MODEL unset" in f["message"] or "leaves $OUTPUT_DIR unset" in f["message"], f["message"]


def test_pk202_on_a_real_default_stays_an_error(tmp_path, capsys) -> None:
    script = _MONO_TORCHRUN.replace('"Path to your model"', '"/mnt/models/Mono InternVL 2B"')
    found = [f for f in _mono(tmp_path, capsys, script) if f["line"] == 16]
    assert [(f["severity"], f["evidence"]) for f in found] == [("error", "checkout")], found


# --- PK106: a relative `cd` on the line before `source` (training_results_v4.0 GigaComputing) ---------

_RUN_AND_TIME = """\
#!/bin/bash

cd ../pytorch
source configs/config_DGXH100_1x8x4xtp4pp1cp1.sh
export CONT=./nvdlfwea+mlperfv40+lora.pytorch.sqsh
export DATADIR=/path/to/datasets
sbatch -N $DGXNNODES -t $WALLTIME run.sub
"""


def _mlperf(tmp_path, capsys, script: str) -> list[dict]:
    impl = tmp_path / "GigaComputing" / "benchmark" / "llama2_70b_lora" / "implementations"
    (tmp_path / ".git").mkdir()
    (impl / "pytorch" / "configs").mkdir(parents=True)
    (impl / "pytorch" / "configs" / "config_DGXH100_1x8x4xtp4pp1cp1.sh").write_text(
        "export DGXNNODES=1\nexport WALLTIME=60\nexport TP=4\n"
    )
    (impl / "G593-SD1_pytorch").mkdir()
    (impl / "G593-SD1_pytorch" / "run_and_time.sh").write_text(script)
    return _codes(_check_json(capsys, str(tmp_path)), "PK106")


def test_pk106_source_after_a_relative_cd_is_found_there(tmp_path, capsys) -> None:
    assert _mlperf(tmp_path, capsys, _RUN_AND_TIME) == []


def test_pk106_a_file_missing_after_the_cd_still_fires(tmp_path, capsys) -> None:
    (f,) = _mlperf(tmp_path, capsys, _RUN_AND_TIME.replace("config_DGXH100_1x8x4xtp4pp1cp1", "config_DGXH200"))
    assert f["severity"] == "warning" and f["line"] == 4, f
