"""Directory discovery: each real file once, reported under the name it was found by."""

from __future__ import annotations

import json
import os
import shutil

from packlint import cli
from packlint.discover import discover

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "pk001_gate_leak.sh")


def test_symlinked_script_is_checked_once(tmp_path, monkeypatch, capsys):
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(EXAMPLE, d / "a.sh")
    (d / "b.sh").symlink_to("a.sh")
    monkeypatch.chdir(tmp_path)
    files, errors = discover(["d"])
    assert files == ["d/a.sh"] and errors == []
    assert cli.main(["check", "--format", "json", "d"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["path"] for f in findings] == ["d/a.sh"]


def test_symlink_named_explicitly_is_reported_under_its_name(tmp_path, monkeypatch, capsys):
    shutil.copy(EXAMPLE, tmp_path / "real.sh")
    (tmp_path / "link.sh").symlink_to("real.sh")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--format", "json", "link.sh"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert {f["path"] for f in findings} == {"link.sh"}


# ------------------------------------------------------------------ one file set: `check DIR` and the hook

# a LLaMA-Factory SFT recipe in the shape of the project's examples/train_lora/*.yaml: packing without
# neat_packing (PK400), with no launch script in the tree naming it
LF_SFT = """### model
model_name_or_path: Qwen/Qwen2.5-7B-Instruct
trust_remote_code: true

### method
stage: sft
do_train: true
finetuning_type: lora
lora_target: all

### dataset
dataset: identity,alpaca_en_demo
template: qwen
cutoff_len: 4096
packing: true
preprocessing_num_workers: 16

### train
per_device_train_batch_size: 1
gradient_accumulation_steps: 8
learning_rate: 1.0e-4
bf16: true
"""
OTHER_FILES = {
    ".github/workflows/ci.yml": "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps: [{run: make}]\n",
    "data/dataset_info.json": '{"alpaca_en_demo": {"file_name": "alpaca_en_demo.json"}}\n',
    "tokenizer/tokenizer_config.json": '{"model_max_length": 4096, "policy": "none"}\n',
    "docker-compose.yaml": "services:\n  app:\n    image: x\n",
    "broken.yaml": "model_name_or_path: [unclosed\n",
    "broken_ds.json": '{"train_batch_size": 8,\n',
    "pyproject.toml": "[project]\nname = 'x'\n",
}


def _tree(root, files: dict) -> None:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_check_dir_catches_a_stack_config_as_the_hook_does(tmp_path, monkeypatch, capsys):
    from packlint.precommit_hook import main as hook

    _tree(tmp_path, {"examples/train_lora/qwen_lora_sft.yaml": LF_SFT, **OTHER_FILES})
    monkeypatch.chdir(tmp_path)
    files, errors = discover(["."])
    assert files == ["examples/train_lora/qwen_lora_sft.yaml"] and errors == []
    assert cli.main(["check", "--isolated", "--format", "json", "."]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(f["code"], f["path"]) for f in out["findings"]] == [("PK400", "examples/train_lora/qwen_lora_sft.yaml")]
    assert out["errors"] == []  # the other YAML/JSON/TOML: skipped silently, no exit 2
    # the hook, given every file as pre-commit stages them, keeps the same one and fails the same way
    staged = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert hook(["--isolated", "--format", "json", *staged]) == 1
    assert [f["path"] for f in json.loads(capsys.readouterr().out)["findings"]] == [
        "examples/train_lora/qwen_lora_sft.yaml"
    ]


def test_the_hook_and_the_walk_select_the_same_files(tmp_path, monkeypatch):
    from packlint.precommit_hook import select_argv

    _tree(tmp_path, {
        "sft.yaml": LF_SFT, "ds_z2.json": '{"zero_optimization": {"stage": 2}, "train_batch_size": "auto"}\n',
        "run.sh": "torchrun train.py\n", "job.sbatch": "#!/bin/bash\n#SBATCH -N 1\nsrun python t.py\n",
        "train": "#!/usr/bin/env bash\npython t.py\n", "notes.txt": "#!/bin/bash\n", **OTHER_FILES,
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    every = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    walked, _ = discover(["."])
    assert walked == ["ds_z2.json", "job.sbatch", "run.sh", "sft.yaml", "train"]
    assert select_argv(every) == ["check", *walked]


def test_gitignore_is_respected_in_a_directory_walk(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    _tree(repo, {
        ".git/HEAD": "ref: refs/heads/main\n",
        # (git: a file under an ignored directory cannot be re-included; `saves/keep.sh` stays ignored)
        ".gitignore": "outputs/\n*.tmp.sh\n!keep.tmp.sh\nsaves/\n!saves/keep.sh\nwandb\n/top_only.sh\n",
        "scripts/keep.tmp.sh": "torchrun t.py\n",
        "scripts/train.sh": "torchrun t.py\n",
        "scripts/old.tmp.sh": "torchrun t.py\n",
        "scripts/top_only.sh": "torchrun t.py\n",  # `/top_only.sh` is anchored at the root: not this one
        "top_only.sh": "torchrun t.py\n",
        "outputs/run1/launch.sh": "torchrun t.py\n",
        "outputs/run1/sft.yaml": LF_SFT,
        "wandb/run-1/files/code/train.sh": "torchrun t.py\n",
        "saves/keep.sh": "torchrun t.py\n",
        "saves/drop.sh": "torchrun t.py\n",
        "sub/.gitignore": "local.sh\n",
        "sub/local.sh": "torchrun t.py\n",
        "sub/kept.sh": "torchrun t.py\n",
    })  # fmt: skip
    monkeypatch.chdir(repo)
    files, errors = discover(["."])
    assert errors == []
    assert files == ["scripts/keep.tmp.sh", "scripts/top_only.sh", "scripts/train.sh", "sub/kept.sh"]
    # walking a sub-directory still applies the .gitignore above it, up to the checkout's root
    assert discover(["scripts"])[0] == ["scripts/keep.tmp.sh", "scripts/top_only.sh", "scripts/train.sh"]
    # a file named on the command line is checked as named (pre-commit names tracked files)
    assert discover(["scripts/old.tmp.sh"])[0] == ["scripts/old.tmp.sh"]
    # and so is an ignored directory named there (`packlint check outputs/`), as ripgrep and ruff do
    assert discover(["outputs"])[0] == ["outputs/run1/launch.sh", "outputs/run1/sft.yaml"]
    assert discover(["wandb/run-1"])[0] == ["wandb/run-1/files/code/train.sh"]
    # outside a git checkout a .gitignore above the walked directory is not the walk's
    plain = tmp_path / "plain"
    _tree(plain, {".gitignore": "sub/\n", "sub/a.sh": "torchrun t.py\n"})
    monkeypatch.chdir(plain / "sub")
    assert discover(["."])[0] == ["a.sh"]


def test_a_makefile_with_a_shell_shebang_is_no_script(tmp_path, monkeypatch):
    """OpenManus-RL vendors ALFWorld's FF planner, whose `makefile` opens with `#!/bin/sh` (make's input:
    `.c.o:; $(CC) -c $(CFLAGS) $<` is no shell); once a PK900 'does not parse'."""
    from packlint.precommit_hook import select_argv

    _tree(tmp_path, {
        "ff_planner/makefile": "#!/bin/sh\n#\n\n.SUFFIXES: .c .o\n\n.c.o:; $(CC) -c $(CFLAGS) $<\n",
        "ff_planner/Makefile": "#!/bin/sh\nall:\n\tcc -o ff main.c\n", "rules.mk": "#!/bin/sh\nX := 1\n",
        "ff_planner/run_sample.sh": "./ff -o samples/domain.pddl -f samples/problem.pddl\n",
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    walked, _ = discover(["."])
    assert walked == ["ff_planner/run_sample.sh"]
    staged = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert select_argv(staged) == ["check", "ff_planner/run_sample.sh"]  # the pre-commit hook agrees


TRL_RECIPE = (
    "model_name_or_path: Qwen/Qwen2-VL-2B-Instruct\ndataset_name: MMInstruction/Clevr_CoGenT_TrainA_R1\n"
    "packing: true\nmax_seq_length: 4096\noutput_dir: data/Qwen2-VL-2B-Instruct-SFT\n"
)


def test_a_trl_recipe_a_script_names_is_judged_through_that_script(tmp_path, monkeypatch):
    """R1-V's shape: `src/scripts/run_sft_clevr.sh` runs the checkout's own SFT program on
    `src/r1-v/configs/qwen2vl_sft_config.yaml` (a program that builds its own SFTTrainer, with
    skip_prepare_dataset). The walk leaves that recipe to the script's launch instead of guessing
    `trl sft --config` reads it (once a false PK410 'packing concatenates samples' at the recipe); a recipe
    no script names is still checked on its own, and so is a recipe named on the command line."""
    _tree(tmp_path, {
        "src/scripts/run_sft_clevr.sh": (
            "ACCELERATE_LOG_LEVEL=info accelerate launch --config_file src/r1-v/configs/zero2.yaml "
            "src/r1-v/src/open_r1/sft.py --config src/r1-v/configs/qwen2vl_sft_config.yaml\n"
        ),
        "src/r1-v/configs/qwen2vl_sft_config.yaml": TRL_RECIPE,
        "src/r1-v/configs/unused_sft_config.yaml": TRL_RECIPE,
    })  # fmt: skip
    (tmp_path / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    walked, _ = discover(["."])
    assert walked == ["src/r1-v/configs/unused_sft_config.yaml", "src/scripts/run_sft_clevr.sh"]
    named, _ = discover(["src/r1-v/configs/qwen2vl_sft_config.yaml"])
    assert named == ["src/r1-v/configs/qwen2vl_sft_config.yaml"]


def test_a_trl_recipe_of_a_checkout_with_its_own_trlparser_program_is_left_to_it(tmp_path, monkeypatch):
    """R1-VL's shape: `src/r1-vl/configs/qwen2vl_sft_config.yaml` is named by no script, and the checkout has its
    own `src/open_r1/sft.py` that parses recipes with TrlParser (and builds its SFTTrainer with
    skip_prepare_dataset): the recipe is not judged as `trl sft` would read it (once a false PK410 error, with
    the trl==0.14.0 pin of its setup.py). A checkout with no such program keeps the stand-in."""
    program = "from trl import ModelConfig, ScriptArguments, SFTConfig, SFTTrainer, TrlParser\n"
    _tree(tmp_path / "r1vl", {"src/r1-vl/configs/qwen2vl_sft_config.yaml": TRL_RECIPE,
                              "src/r1-vl/src/open_r1/sft.py": program})  # fmt: skip
    _tree(tmp_path / "plain", {"recipes/sft.yaml": TRL_RECIPE, "tools/convert.py": "import json\n"})
    for d in ("r1vl", "plain"):
        (tmp_path / d / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    walked, _ = discover(["r1vl", "plain"])
    assert walked == ["plain/recipes/sft.yaml"]


def test_a_file_git_tracks_is_never_ignored(tmp_path, monkeypatch):
    """princeton-nlp/MeZO and LM-BFF: `.gitignore` has `*.sh` and the scripts are committed with `git add -f`:
    git tracks them, so they are the checkout's (packlint checked 0 files of the repository)."""
    import subprocess

    if shutil.which("git") is None:
        import pytest

        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    _tree(repo, {
        ".gitignore": "*.sh\nlog/\n",
        "medium_models/run_fewshot.sh": "torchrun t.py\n",
        "medium_models/log/run.sh": "torchrun t.py\n",
        "medium_models/scratch.sh": "torchrun t.py\n",
        "log/tracked/a.sh": "torchrun t.py\n",
    })  # fmt: skip
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run(
        [*git, "add", "-f", "medium_models/run_fewshot.sh", "log/tracked/a.sh", ".gitignore"], cwd=repo, check=True
    )
    monkeypatch.chdir(repo)
    assert discover(["."])[0] == ["log/tracked/a.sh", "medium_models/run_fewshot.sh"]


def test_a_template_with_a_shell_shebang_is_no_script(tmp_path, monkeypatch):
    """aws-samples/awsome-distributed-training: `slurm/training-sub.template` opens with `#!/bin/bash` and holds
    `{{ MODEL_PARAMETERS | indent(4) }}`; a Python generator renders it into the .sbatch files (a false PK900)."""
    from packlint.precommit_hook import select_argv

    _tree(tmp_path, {
        "slurm/training-sub.template": (
            "#!/bin/bash\ndeclare -a TRAINING_ARGS=(\n    {{ MODEL_PARAMETERS | indent(4) }}\n)\n"
        ),
        "slurm/job.sh.j2": "#!/bin/bash\n{% for n in nodes %}echo {{ n }}{% endfor %}\n",
        "slurm/run.sh.in": "#!/bin/sh\nexec @PYTHON@ train.py\n",
        "slurm/llama.sbatch": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py\n",
    })  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert discover(["."])[0] == ["slurm/llama.sbatch"]
    staged = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert select_argv(staged) == ["check", "slurm/llama.sbatch"]
