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


# ------------------------------------------------------------------ issue 18: launches people hide
# A submission wrapper (`python tool.py [opts] -- CMD`) runs CMD somewhere bash never sees: the bash
# oracle cannot run it, so these are checked here.

MASON = """#!/bin/bash
# open-instruct scripts/train/debug/single_gpu_on_beaker.sh (e6c3044), shortened
uv run python mason.py \\
       --cluster ai2/jupiter \\
       --image "$BEAKER_IMAGE" \\
       --pure_docker_mode \\
       --env VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 \\
       --gpus 1 \\
       -- source configs/beaker_configs/ray_node_setup.sh \\&\\& python open_instruct/grpo_fast.py \\
    --dataset_mixer_list ai2-adapt-dev/rlvr_gsm8k_zs 64 \\
    --stop_strings "</answer>" \\
    --learning_rate 3e-7
"""


def test_wrapper_with_dashdash_runs_its_command_as_a_launch(tmp_path):
    path = tmp_path / "beaker.sh"
    path.write_text(MASON)
    (path.parent / "configs" / "beaker_configs").mkdir(parents=True)
    (path.parent / "configs" / "beaker_configs" / "ray_node_setup.sh").write_text("export RAY_NODE=1\n")
    wrapper, inner = inspect_script(str(path))["launches"]
    assert wrapper["program"] == "mason.py" and wrapper["launchers"] == ["uv run", "python"]
    assert inner["program"] == "open_instruct/grpo_fast.py"
    assert inner["context"][0].startswith("run by `mason.py` after `--` at ")
    assert inner["flags"]["--learning_rate"][0]["value"] == "3e-7"
    assert inner["flags"]["--stop_strings"][0]["value"] == "</answer>"  # one word, as the script wrote it
    assert inner["env"]["VLLM_ALLOW_LONG_MAX_MODEL_LEN"]["value"] == "1"  # the wrapper's --env
    assert inner["env"]["RAY_NODE"]["value"] == "1"  # the sourced set-up ran first (`&&`)
    assert inner["line"] == 3  # findings inside point at the wrapper's command


def test_wrapper_argv_command_and_program_arguments(tmp_path):
    path = tmp_path / "t.sh"
    path.write_text(
        "#!/bin/bash\n"
        "python launch.py --nodes 2 -- torchrun --nproc_per_node 8 train.py --lr 1\n"
        "python train.py -- --foo 1\n"  # arguments for the program itself: no second launch
    )
    launches = inspect_script(str(path))["launches"]
    assert [(x["launcher"], x["program"]) for x in launches] == [
        ("python", "launch.py"),
        ("torchrun", "train.py"),
        ("python", "train.py"),
    ]
    assert launches[1]["world_size"] == {"value": "8"}
