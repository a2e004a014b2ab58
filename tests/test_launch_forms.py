"""Launch forms the bash oracle cannot run as they are (tests/test_differential.py covers the rest):
a Slurm job script's #SBATCH headers give the job's node and GPU counts; runners running tools and
empty launcher options."""

from __future__ import annotations

from packlint.api import inspect_script

JOB = """#!/bin/bash
#SBATCH --job-name=pretrain
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=8
export OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1
srun torchrun --nnodes "$SLURM_NNODES" --nproc_per_node "$SLURM_GPUS_PER_NODE" train.py --micro-batch-size 1
"""


def test_sbatch_headers_give_the_job_counts(tmp_path):
    path = tmp_path / "job.sh"
    path.write_text(JOB)
    (launch,) = inspect_script(str(path))["launches"]
    assert launch["world_size"] == {"value": "16"}
    assert launch["env"]["SLURM_NNODES"]["value"] == "2"
    assert launch["env"]["SLURM_NTASKS"]["value"] == "2"


def test_headers_after_the_first_command_are_ignored(tmp_path):
    """sbatch stops reading #SBATCH lines at the first command, as Slurm does."""
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/bash\necho start\n#SBATCH --nodes=9\ntorchrun --nnodes \"$SLURM_NNODES\" t.py\n")
    (launch,) = inspect_script(str(path))["launches"]
    assert "SLURM_NNODES" not in launch["env"]


def test_caller_value_wins_over_headers(tmp_path):
    path = tmp_path / "job.sh"
    path.write_text(JOB)
    (launch,) = inspect_script(str(path), env={"SLURM_NNODES": "4"})["launches"]
    assert launch["world_size"] == {"value": "32"}


def test_environment_runner_running_a_tool_is_no_launch(tmp_path):
    path = tmp_path / "tools.sh"
    path.write_text("conda run -n megatron pip list\nuv run --with ruff ruff check .\n"
                    "pixi run -e cuda python -c 'import torch'\n")
    assert inspect_script(str(path))["launches"] == []


def test_empty_launcher_option_does_not_swallow_the_program(tmp_path):
    path = tmp_path / "t.sh"
    path.write_text("torchrun --nproc_per_node $UNSET --nnodes $UNSET --node_rank 0 pretrain_gpt.py "
                    "--norm RMSNorm --tp 1\n")
    (launch,) = inspect_script(str(path))["launches"]
    assert launch["program"] == "pretrain_gpt.py"
    assert "unknown" in launch["world_size"]
