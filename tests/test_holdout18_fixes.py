"""Mechanisms the eighteenth holdout (on the released 0.3.10) found, each in its repository's shape:

- xudongwu-0/SafeSelfPlay's `scripts/delta/run_grpo_sweep_a100.sh`: a base array of Hydra overrides ("R3 winner"),
  then `case "${ROUND}/${VARIANT}" in ... VARIANT_OVERRIDE="rollout_batch_size=64" ;;` appended last, run by
  `launch_grpo_sweep_a100.sh` as `ROUND=${round} VARIANT=${variant} bash ${SWEEP_SCRIPT}`. The arm exists to
  override the base value: 34 PK103 warnings, all false. A value written in a branch's body over one given
  outside it is that branch's own (as microsoft/DeBERTa's `parameters` and EDAS's npu arm before it), whether
  packlint decides the branch (the caller's values) or not.
"""

from __future__ import annotations

from pathlib import Path

from tests.check_helpers import GIT, check_findings, git, write_tree

_HYDRA = (
    "import hydra\n\n\n@hydra.main(config_path='config', config_name='base', version_base=None)\n"
    "def main(cfg):\n    print(cfg)\n\n\nif __name__ == '__main__':\n    main()\n"
)
_CONFIG = "rollout_batch_size: 128\nsequence_length: 512\nmax_steps: 10\n"

_SWEEP = """#!/bin/bash
set -ex
ROUND=${ROUND:?Set ROUND env var}
VARIANT=${VARIANT:?Set VARIANT env var}
BASELINE_OVERRIDES=(
    "rollout_batch_size=256"      # R3 winner
    "sequence_length=1024"
)
case "${ROUND}/${VARIANT}" in
    round3_rb/rb64)
        VARIANT_OVERRIDE="rollout_batch_size=64"
        ;;
    round3_rb/rb512)  VARIANT_OVERRIDE="rollout_batch_size=512" ;;
    *) echo "unknown ${ROUND}/${VARIANT}"; exit 1 ;;
esac
python examples/start.py --config-path config --config-name base \\
    "${BASELINE_OVERRIDES[@]}" max_steps=5 ${VARIANT_OVERRIDE}
"""

_LAUNCH = """#!/bin/bash
SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
for variant in rb64 rb512; do
    ROUND=round3_rb VARIANT=${variant} bash ${SCRIPT_DIR}/run_sweep.sh
done
"""


def _pk103(findings: list[dict]) -> list[tuple[str, int]]:
    return sorted((f["path"].rsplit("/", 1)[-1], f["line"]) for f in findings if f["code"] == "PK103")


def test_a_case_arm_overriding_a_base_array_is_no_repeat(tmp_path: Path, capsys) -> None:
    tree = {
        ".git/HEAD": "ref: refs/heads/main\n",
        "examples/start.py": _HYDRA,
        "examples/config/base.yaml": _CONFIG,
        "scripts/run_sweep.sh": _SWEEP,
    }
    # undecided (the script alone: ROUND and VARIANT unknown) and decided (its caller gives both)
    assert _pk103(check_findings(capsys, write_tree(tmp_path / "alone", tree))) == []
    called = dict(tree, **{"scripts/launch_sweep.sh": _LAUNCH})
    assert _pk103(check_findings(capsys, write_tree(tmp_path / "called", called))) == []


def test_a_repeat_inside_one_branch_or_outside_any_still_fires(tmp_path: Path, capsys) -> None:
    """The branch's own words compete among themselves; a repeat written in the command itself, under a branch
    or not, is still a repeat."""
    inside = """#!/bin/bash
SIZE=small
ARGS="--lr 1e-4 --batch_size 8"
case "$SIZE" in
    small) EXTRA="--batch_size 4 --batch_size 2" ;;
    *) EXTRA="--batch_size 64" ;;
esac
python train.py $ARGS $EXTRA
"""
    plain = _SWEEP.replace("max_steps=5 ${VARIANT_OVERRIDE}", "max_steps=5 ${VARIANT_OVERRIDE} max_steps=7")
    guarded = """#!/bin/bash
MODE=train
ARGS="--lr 1e-4 --batch_size 8"
if [ "$MODE" = train ]; then
    python train.py $ARGS --batch_size 16 --batch_size 32
fi
"""
    train = (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\n"
        "p.add_argument('--batch_size', type=int)\np.parse_args()\n"
    )
    tree = {
        ".git/HEAD": "ref: refs/heads/main\n",
        "examples/start.py": _HYDRA,
        "examples/config/base.yaml": _CONFIG,
        "inside.sh": inside,
        "scripts/plain.sh": plain,
        "train.py": train,
        "guarded.sh": guarded,
    }
    got = _pk103(check_findings(capsys, write_tree(tmp_path, tree)))
    assert ("inside.sh", 5) in got  # two values inside the `small)` arm
    assert ("plain.sh", 17) in got  # max_steps=5 then 7 on the command line
    assert ("guarded.sh", 5) in got  # --batch_size 16 then 32, both written in the if body's command
    assert len(got) == 3


def test_a_value_tree_sitter_splits_twice_is_one_assignment(tmp_path: Path, capsys) -> None:
    """The seventeenth and eighteenth holdouts' multimodal auditors (h-hold17c-mm's loop_assign): tree-sitter-bash
    reads `name=x$a-y$b-z$c-w$d-v` as the assignment `name=x$a-y$` before a command `b-z$c-w$` `d-v` (a bare `$`
    ends each part). packlint glued one part back, so a value split twice was lost: `$name` read as never set (an
    info "depends on the machine") and a real type error went unreported. Bash gives `x1-y2-z3-w4-v`."""
    import subprocess

    script = "a=1\nb=2\nc=3\nd=4\nname=x$a-y$b-z$c-w$d-v\nexport LR=p$a.q$b/r$c-s\n"
    shown = subprocess.run(["bash", "-c", script + 'echo "$name $LR"'], capture_output=True, text=True).stdout
    assert shown.split() == ["x1-y2-z3-w4-v", "p1.q2/r3-s"]
    main_py = (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--name', required=True)\n"
        "p.add_argument('--lr', type=float)\np.parse_args()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "main.py": main_py,
            "run.sh": script + "python main.py --name $name\n",
            "bad.sh": script + "python main.py --name n --lr $name\n",
            "bad_export.sh": script + "python main.py --name n --lr $LR\n",
        },
    )
    findings = check_findings(capsys, root)
    got = sorted((Path(f["path"]).name, f["code"], f["severity"]) for f in findings if f["severity"] != "info")
    assert got == [("bad.sh", "PK202", "error"), ("bad_export.sh", "PK202", "error")]
    assert not [f for f in findings if "never sets" in f["message"]], findings


_GRPO_CONFIG = (
    "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n\n\n@dataclass\n"
    "class GRPOConfig(TrainingArguments):\n    max_completion_length: int = 256\n"
)
_MODEL_CONFIG = (
    "from dataclasses import dataclass\n\n\n@dataclass\nclass ModelConfig:\n    model_name_or_path: str = ''\n"
)


def test_a_sub_project_pinning_the_released_stack_does_not_run_the_forks_copy(tmp_path: Path, capsys) -> None:
    """williamium3000/trl-projects: a TRL fork (root `trl/`, 1.2.0.dev0, without GRPOConfig.max_prompt_length) with
    `projects/opsd/` whose environment.yml pins trl==0.26.0 (README: `conda env create -f environment.yml`); its
    scripts run `projects/opsd/grpo_train.py` from that folder. The root's trl/ is not on that program's path (only an
    install puts it there, and the project installs the release): 4 false PK201 warnings. Without the pin, the
    fork's own copy is what the code-base fallback reads, as before."""
    tree = {
        ".git/HEAD": "ref: refs/heads/main\n",
        "pyproject.toml": '[project]\nname = "trl"\ndynamic = ["version"]\n',
        "VERSION": "1.2.0.dev0\n",
        "trl/__init__.py": "from .trainer.grpo_config import GRPOConfig\n"
        "from .trainer.model_config import ModelConfig\nfrom transformers import HfArgumentParser as TrlParser\n",
        "trl/trainer/__init__.py": "",
        "trl/trainer/grpo_config.py": _GRPO_CONFIG,
        "trl/trainer/model_config.py": _MODEL_CONFIG,
        "projects/opsd/grpo_train.py": "from trl import GRPOConfig, ModelConfig, TrlParser\n\n"
        "if __name__ == '__main__':\n    TrlParser((GRPOConfig, ModelConfig)).parse_args_into_dataclasses()\n",
        "projects/opsd/scripts/run_grpo.sh": 'cd "$(dirname "$0")/.."\naccelerate launch --num_processes 8 '
        "grpo_train.py --model_name_or_path Qwen/Qwen3-4B --output_dir out --max_prompt_length 2048\n",
    }
    pinned = dict(tree, **{"projects/opsd/environment.yml": "dependencies:\n  - pip:\n    - trl==0.26.0\n"})
    findings = check_findings(capsys, write_tree(tmp_path / "pinned", pinned))
    assert [f for f in findings if f["code"] == "PK201" and f["severity"] != "info"] == []
    findings = check_findings(capsys, write_tree(tmp_path / "fork", tree))
    assert [(f["code"], f["line"]) for f in findings if f["severity"] != "info"] == [("PK201", 2)]


def test_a_flag_before_a_variable_the_script_empties_gets_no_value(tmp_path: Path, capsys) -> None:
    """h-hold17c-mm's empty placeholder, seen again in the eighteenth holdout: `SOURCE=""` then `python prog.py
    --source $SOURCE --n 3`: bash drops the empty word, argparse exits 'expected one argument'. packlint was silent
    (any expansion after a flag was "a value the caller may set"). Quoted, the empty word is the value; a variable
    the script never sets stays the machine's (an info)."""
    import subprocess

    prog = (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--source', type=str)\n"
        "p.add_argument('--n', type=int)\np.parse_args()\n"
    )
    scripts = {
        "empty.sh": 'SOURCE=""\npython prog.py --source $SOURCE --n 3\n',
        "quoted.sh": 'SOURCE=""\npython prog.py --source "$SOURCE" --n 3\n',
        "unset.sh": "python prog.py --source $SOURCE --n 3\n",
    }
    root = write_tree(tmp_path, {".git/HEAD": "ref: refs/heads/main\n", "prog.py": prog, **scripts})
    import sys

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(sys.executable)
    for name, want in (("empty.sh", 2), ("quoted.sh", 0)):  # (bash and argparse, the oracles)
        env = {"PATH": f"{bindir}:/usr/bin:/bin"}
        ran = subprocess.run(["bash", name], cwd=root, capture_output=True, text=True, env=env)
        assert ran.returncode == want, ran.stderr
    got = sorted((Path(f["path"]).name, f["severity"]) for f in check_findings(capsys, root) if f["code"] == "PK202")
    assert got == [("empty.sh", "error"), ("unset.sh", "info")]


def test_a_name_still_quoted_in_the_tree_was_never_removed(tmp_path: Path, capsys) -> None:
    """ssmisya/AdaReasoner: `export C_INCLUDE_PATH=...` (for gcc) before a verl launch whose import closure reaches
    tool_server/, where a launcher config quotes "C_INCLUDE_PATH" in a dict for a subprocess. PK203's history
    search (`git log -G` over the closure's top folders) found the commit that added that file and said "the code
    base's history last mentions it": 17 false warnings. A name the tree still quotes there was not removed; when
    a later commit removes it, the history is evidence again."""
    import pytest

    if GIT is None:
        pytest.skip("no git")
    root = write_tree(
        tmp_path,
        {
            "tools/__init__.py": "",
            "tools/manager.py": "class Manager:\n    pass\n",
            "tools/scripts/__init__.py": "",
            "tools/scripts/start_server_config.py": 'env = {"C_INCLUDE_PATH": "/opt/libaio/usr/include"}\n',
            "proj/trainer/__init__.py": "",
            "proj/trainer/main.py": "import os\nfrom tools.manager import Manager\n"
            "print(os.environ.get('MY_SEED', '0'), Manager)\n",
            "proj/examples/run.sh": "export C_INCLUDE_PATH=/opt/libaio/usr/include\npython3 -m trainer.main\n",
        },
    )
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    found = check_findings(capsys, root)
    assert [f["code"] for f in found if f["code"] in ("PK203", "PK205")] == ["PK205"]  # (read by nothing: an info)
    (root / "tools/scripts/start_server_config.py").write_text("env = {}\n")
    git(root, "commit", "-qam", "two: the config no longer sets it")
    found = [f for f in check_findings(capsys, root) if f["code"] == "PK203"]
    assert len(found) == 1 and "history last mentions it" in found[0]["message"]


# the recipe of alignment-handbook's DPO jobs (comments dropped, the dataset paths shortened)
_H4_RECIPE = """\
model_name_or_path: dummy
torch_dtype: bfloat16
model_revision: main
attn_implementation: flash_attention_2
use_peft: true
load_in_4bit: false
lora_r: 64
lora_alpha: 64
lora_dropout: 0.01
lora_target_modules:
- q_proj
- k_proj
- v_proj
- o_proj
dataset_mixer:
  data/orca_dpo_pairs/data: 1.0
  data/ultrafeedback_binarized/data: 1.0
dataset_splits:
- train
- test
preprocessing_num_workers: 1
bf16: true
beta: dummy
do_eval: true
eval_strategy: steps
eval_steps: 64
gradient_accumulation_steps: 32
gradient_checkpointing: false
gradient_checkpointing_kwargs:
  use_reentrant: false
log_level: info
logging_steps: 5
logging_strategy: steps
lr_scheduler_type: cosine
max_length: 2312
max_prompt_length: 1800
num_train_epochs: 5
dataset_num_proc: 8
objective_type: dpo
average_logps: dummy
learning_rate: dummy
output_dir: dummy
run_name: dummy
optim: adamw_8bit
per_device_train_batch_size: 2
per_device_eval_batch_size: 2
push_to_hub: false
remove_unused_columns: true
report_to:
- wandb
save_strategy: "epoch"
save_total_limit: 10
seed: 42
warmup_ratio: 0.1
"""


def test_a_recipe_named_by_a_job_file_is_read_with_its_launch(tmp_path: Path, capsys) -> None:
    """SaeedNajafi/alignment-handbook: `recipes/*/config.yaml` say `learning_rate: dummy`, and every job that uses
    them, `run.slrm` (`#!/bin/bash`, which `check` reads as a script by its shebang), passes
    `--learning_rate=${lr}`. The scan that connects a recipe to the launches naming it knew `.sh`, `.slurm` and
    `.sbatch` only, so the recipe was judged alone: 10 false PK208 errors. Every scan now takes a launch file as
    `check` does (the shebang, the batch systems' suffixes)."""
    recipe = _H4_RECIPE
    job = (
        "#!/bin/bash\n#SBATCH --gres=gpu:4\nlr=5e-7\n"
        "accelerate launch --config_file=recipes/accelerate_configs/deepspeed_zero2.yaml \\\n"
        "    scripts/run_dpo.py recipes/config.yaml --learning_rate=${lr} --output_dir=out\n"
    )
    tree = {
        ".git/HEAD": "ref: refs/heads/main\n",
        "recipes/config.yaml": recipe,
        "environment.yaml": "dependencies:\n  - pip:\n      - transformers==4.46.3\n      - trl==0.12.2\n",
        "recipes/accelerate_configs/deepspeed_zero2.yaml": "compute_environment: LOCAL_MACHINE\n"
        "distributed_type: DEEPSPEED\nnum_processes: 4\n",
    }
    for name in ("run.slrm", "job.pbs", "run.sh"):
        root = write_tree(tmp_path / name.replace(".", "_"), dict(tree, **{name: job}))
        assert [f for f in check_findings(capsys, root) if f["code"] == "PK208"] == [], name


def test_a_source_path_climbing_above_the_checkout_is_the_machines(tmp_path: Path, capsys) -> None:
    """mr-d-self-driving/DrivePI: root-level sbatch scripts run `source ../../conda_env_cuda12.4.sh drivepi_hwei`, a
    file kept two folders above the clone on the author's cluster. From the script's folder and the working
    directory (both the checkout's root) the path leaves the checkout: whether it exists is the machine's, not a
    missing file of the checkout (6 false PK106 warnings). A `..` path that stays inside is still the checkout's."""
    train = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\np.parse_args()\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "train.py": train,
            "run.sh": "#!/bin/bash\nsource ../../conda_env_cuda12.4.sh drivepi\ntorchrun train.py --lr 1e-4\n",
            "jobs/a/run.sh": "#!/bin/bash\nsource ../../env/cluster.sh\ntorchrun ../../train.py --lr 1e-4\n",
        },
    )
    got = [
        (f["path"].endswith("jobs/a/run.sh"), f["severity"])
        for f in check_findings(capsys, root)
        if f["code"] == "PK106"
    ]
    assert got == [(True, "warning")]


def test_a_declaration_expands_every_word_before_it_assigns(tmp_path: Path) -> None:
    """The bash differential on the eighteenth holdout's checkouts (llada60/ChatGarment's eval_job_script.sh):
    `export CUDA_HOME=/usr/local/cuda-12.1 \\` + `LD_LIBRARY_PATH=$CUDA_HOME/lib64:$LD_LIBRARY_PATH` is one `export`
    command, whose words bash expands before it assigns any: LD_LIBRARY_PATH gets the CUDA_HOME from before the
    command. packlint assigned left to right (`/usr/local/cuda-12.1/lib64:`); plain assignments do run left to
    right (`A=1 B=$A`), and so they stay."""
    import os
    import subprocess

    from packlint.api import inspect_script

    script = (
        "export CUDA_HOME=/usr/local/cuda-12.1 \\\nLD_LIBRARY_PATH=$CUDA_HOME/lib64:$LD_LIBRARY_PATH\n"
        "A=1 B=$A\nexport B\nf() { local X=2 Y=$X; export Y; }\nf\npython train.py\n"
    )
    path = tmp_path / "job.sh"
    path.write_text(script.replace("python train.py", 'echo "$LD_LIBRARY_PATH|$B|$Y"'))
    shown = subprocess.run(["bash", str(path)], capture_output=True, text=True, env={"PATH": os.defpath}).stdout
    assert shown.strip() == "/lib64:|1|"
    path.write_text(script)
    env = inspect_script(str(path))["launches"][0]["variants"][0]["env"]
    # (CUDA_HOME is not set yet when the words are expanded: the environment's, unknown, never `/usr/local/...`)
    assert "value" not in env["LD_LIBRARY_PATH"] and "CUDA_HOME" in env["LD_LIBRARY_PATH"]["unknown"]
    assert env["B"]["value"] == "1" and "Y" not in env


def test_single_quotes_in_a_double_quoted_default_are_kept(tmp_path: Path) -> None:
    """The bash differential on yangzhangok/crystal: `VISUAL_MODEL_ID="${VISUAL_MODEL_ID:-['sam', 'depth', 'dino']}"`:
    inside double quotes bash takes the default word's single quotes as ordinary characters (the program gets
    `['sam', 'depth', 'dino']`, a Python list literal); unquoted they are quotes. packlint removed them in both."""
    import os
    import subprocess

    from packlint.api import inspect_script

    script = (
        "V=\"${V:-['sam', 'depth']}\"\nW=${W:-'a b'}\nX=\"${U:-'x y'}\"\nY=\"${U:+'p q'}\"\n"
        'python t.py --v "$V" --w "$W" --x "$X" --y "$Y"\n'
    )
    path = tmp_path / "run.sh"
    path.write_text(script)
    stub = 'python() { printf "%s\\n" "$@"; }\n'
    shown = subprocess.run(
        ["bash", "-c", stub + f"source {path}"], capture_output=True, text=True, env={"PATH": os.defpath}
    ).stdout.splitlines()
    argv = inspect_script(str(path))["launches"][0]["argv"]
    assert argv == shown[1:] == ["--v", "['sam', 'depth']", "--w", "a b", "--x", "'x y'", "--y", ""]
