"""Mechanisms the fifteenth holdout's fourth part and the sixteenth holdout (on the released 0.3.8) found, each in
its repository's shape:

- JHU-CLSP/verifiable-by-design's `best_of_n_to_paired_gen.sh` runs `python best_of_n_to_paired_gen.py
  data/nq/dev_model-gemma2-9b-it_concise_gr_bestof32_quip.json ...`: the program's argparse parser takes the words
  as `input_files` (nargs='+'), the outputs of the checkout's own earlier pipeline steps. PK601 warned that "the
  config file" is missing: a data input is made at set-up, so its absence depends on the machine.
- HuskyKingdom/openvla-oft-yhs vendors SimpleVLA-RL's verl (version file 0.1) whose ppo_trainer.yaml adds
  `data.task_suite_name`; in a tree without `.git` (an archive, a copy) packlint did not find that config from the
  scripts' folder, took verl 0.1's snapshot for it and reported 150 keys as unknown (errors). The tree named on the
  command line is the checkout, and a vendored verl's keys come from its own config or not at all.
- peace-zy/InternVLGrpo (OpenGVLab/InternVL's MPO scripts) passes `--loss_type 'sigmoid,bco_pair'` to a program whose
  `class DPOConfig(DPOConfigTRL)` (no @dataclass) re-annotates `loss_type` with a Literal that holds that value:
  HfArgumentParser types each field by `typing.get_type_hints`, where the subclass's annotation wins. PK202 took
  the base dataclass's choices (8 errors). transformers 5.24 parses the value (checked by running it).
- The multimodal half's MISS: a job script guarded by `if [ -n "$MODEL_ID" ]; then ARGS=...; else echo ...; exit 1; fi`
  (the caller sets MODEL_ID: `qsub -v MODEL_ID=...`) was read as exiting at its guard: "no launch", a misspelt flag
  after it never checked. The `-z` form of the guard was already followed.
- The second part: OpenMOSS/MOSS-Video-Preview (a tree without `.git`) names `/mnt/hpfs/.../x.yaml`: the premise
  "an absolute path outside the checkout" needed a `.git` to find the checkout, so PK601 stayed a warning.
- Yimi81/Diffusion-Factory pins transformers==4.35.2, older than every snapshot; `--lr_scheduler="constant"` was called
  ambiguous (lr_scheduler_type, and lr_scheduler_kwargs of 4.36 on): at the pin argparse takes it as lr_scheduler_type.
- The multimodal half's MISS: Cmoris/StreamingSpeechLLM's finetune.sh passes `--model_max_length $MAX_LENGTH
  --lora_enable` with MAX_LENGTH never set (its sibling scripts set it): bash drops the word, and argparse exits with
  "expected one argument". Reported as an info resting on the machine (the environment may set MAX_LENGTH).
- The second part's MISS: jintangxue/3D-PLOT-LLM's 27 scripts set `master_port=${MASTER_PORT:-$((RANDOM % (65535 -
  49152 + 1) + 49152))}`, which tree-sitter-bash misreads by wrapping the whole file in one ERROR from line 1: the
  gap recovery looked only at that outer error's first line, so the sourced env.sh (the interpreter `$PYTHON`) was
  unknown and no launch was seen.
- The third part: shruum/continual_learning (mammoth's main.py, shared by its forks) parses a first parser with
  `parse_known_args()`, then, unless `--load_best_args`, `getattr(importlib.import_module('models.' + args.model),
  'get_parser')().parse_args()`: packlint checked every flag against the first parser (61 false PK201).
- The third part: a vendored torch-quiver script runs `git clone https://github.com/lsds/KungFu.git; cd KungFu;
  . ./scripts/utils/measure.sh`: PK106 warned that the checkout lacks the file, which is the clone's.
- The second part: rosieyzh/openrlhf-pretrain's vendored OLMo scripts run `bash -c "source
  scripts/beaker/warm_hf_cache.sh && torchrun ..."`: PK106 said bash "goes on without the settings", but `&&` skips
  the launch.
"""

from __future__ import annotations

from pathlib import Path

from tests.check_helpers import argparse_program, check_findings, write_tree


def _pk(findings: list[dict], code: str) -> list[tuple[str, int, str]]:
    return sorted((f["path"].rsplit("/", 1)[-1], f["line"], f["severity"]) for f in findings if f["code"] == code)


_POSITIONAL_PROGRAM = (
    "import argparse, json\np = argparse.ArgumentParser()\n"
    "p.add_argument('input_files', nargs='+', help='generation file')\np.add_argument('--output_dir')\n"
    "a = p.parse_args()\nfor f in a.input_files:\n    json.load(open(f))\n"
)


def test_a_missing_json_input_of_a_programs_own_positional_is_data_made_at_set_up(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "data/nq/dev/state.json": "{}",
            "best_of_n_to_paired_gen.py": _POSITIONAL_PROGRAM,
            "train.py": argparse_program("--config"),
            "best_of_n_to_paired_gen.sh": "#!/bin/bash\n"
            "python best_of_n_to_paired_gen.py data/nq/dev_model-x_concise_gr_bestof32_quip.json --output_dir paired\n",
            # a config flag's missing JSON stays the checkout's mistake
            "train.sh": "#!/bin/bash\npython train.py --config data/nq/cfg.json\n",
        },
    )
    found = [f for f in check_findings(capsys, root) if f["code"] == "PK601"]
    assert _pk(found, "PK601") == [("best_of_n_to_paired_gen.sh", 2, "info"), ("train.sh", 2, "warning")]
    data = next(f for f in found if f["severity"] == "info")
    assert "an input the program takes as a positional" in data["message"]


_MAIN_PPO = (
    "import hydra\n\n\n@hydra.main(config_path='config', config_name='ppo_trainer', version_base=None)\n"
    "def main(config):\n    pass\n"
)


def test_a_vendored_verl_in_a_tree_without_git_is_judged_by_its_own_config(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path / "tree",
        {
            "proj/verl/__init__.py": "",
            "proj/verl/trainer/__init__.py": "",
            "proj/verl/version/version": "0.1\n",
            "proj/verl/trainer/main_ppo.py": _MAIN_PPO,
            "proj/verl/trainer/config/ppo_trainer.yaml": "data:\n  task_suite_name: libero_10\n  train_batch_size: 8\n",
            "proj/examples/run_a.sh": "#!/bin/bash\npython -u -m verl.trainer.main_ppo \\\n"
            "    data.task_suite_name=libero_spatial \\\n    data.train_batch_size=4\n",
            "proj/examples/run_typo.sh": "#!/bin/bash\npython -u -m verl.trainer.main_ppo data.train_batch_sizee=4\n",
        },
    )
    # the tree named: its vendored config is composed; the key it adds is fine, the misspelt one is not
    found = check_findings(capsys, root)
    assert _pk(found, "PK207") == [("run_typo.sh", 2, "error")]
    assert "ppo_trainer.yaml" in next(f for f in found if f["code"] == "PK207")["message"]
    # one script named alone: its folder holds no config, and verl 0.1's snapshot is not the vendored copy's
    assert _pk(check_findings(capsys, root / "proj" / "examples" / "run_a.sh"), "PK207") == []


_SUBCLASS_PROGRAM = (
    "from dataclasses import dataclass, field\nfrom typing import Literal\n\n"
    "from transformers import HfArgumentParser, TrainingArguments\n\n\n"
    "@dataclass\nclass BaseConfig(TrainingArguments):\n"
    "    loss_type: Literal['sigmoid', 'hinge', 'bco_pair'] = field(default='sigmoid')\n    beta: float = 0.1\n\n\n"
    "class MyConfig(BaseConfig):\n"
    "    loss_type: Literal['sigmoid', 'hinge', 'bco_pair', 'sigmoid,bco_pair'] = 'sigmoid'\n\n\n"
    "HfArgumentParser((MyConfig,)).parse_args_into_dataclasses()\n"
)


def test_a_plain_subclass_re_annotating_a_dataclass_field_gives_its_choices(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "internvl_chat/train_dpo.py": _SUBCLASS_PROGRAM,
            "internvl_chat/shell/mpo.sh": "#!/bin/bash\ncd internvl_chat\n"
            "torchrun --nproc_per_node 1 train_dpo.py --output_dir out --loss_type 'sigmoid,bco_pair'\n"
            # (a value neither annotation allows is still an error)
            "torchrun --nproc_per_node 1 train_dpo.py --output_dir out --loss_type 'sigmoid,hinge' --beta x\n",
        },
    )
    found = check_findings(capsys, root)
    assert _pk(found, "PK202") == [("mpo.sh", 4, "error"), ("mpo.sh", 4, "error")], found


def test_an_else_exit_guard_on_a_variable_the_caller_sets_is_followed(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train.py": argparse_program("--model-id", "--lr"),
            "run.sh": '#!/bin/bash\n# usage: qsub -v MODEL_ID=... run.sh\nif [ -n "$MODEL_ID" ]; then\n'
            '  ARGS="--model-id $MODEL_ID"\nelse\n  echo "Error: MODEL_ID is required"\n  exit 1\nfi\n'
            "python train.py $ARGS --lrr 5e-5\n",
            # a default, not a guard: the script goes on either way (the launch is checked as before)
            "run_default.sh": '#!/bin/bash\nif [ -n "$LR" ]; then\n  X=$LR\nelse\n  X=1e-4\nfi\n'
            "python train.py --lr $X --lrr 5e-5\n",
        },
    )
    found = check_findings(capsys, root)
    assert _pk(found, "PK201") == [("run.sh", 9, "error"), ("run_default.sh", 7, "error")], found


def test_an_absolute_config_path_in_a_tree_without_git_is_the_machines(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path / "tree",
        {"train.sh": "#!/bin/bash\nllamafactory-cli train /mnt/hpfs/proj/examples/train_full/sft.yaml\n"},
    )
    assert _pk(check_findings(capsys, root), "PK601") == [("train.sh", 2, "info")]


def test_a_prefix_ambiguous_only_among_snapshot_fields_is_undecided_under_an_older_pin(tmp_path: Path, capsys) -> None:
    program = (
        "from transformers import HfArgumentParser, TrainingArguments\n"
        "(args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n"
    )
    run = "#!/bin/bash\npython train.py --output_dir out --lr_scheduler constant\n"
    old = write_tree(
        tmp_path / "old", {".git/HEAD": "", "requirements.txt": "transformers==4.35.2\n", "train.py": program}
    )
    new = write_tree(
        tmp_path / "new", {".git/HEAD": "", "requirements.txt": "transformers==4.46.3\n", "train.py": program}
    )
    write_tree(old, {"run.sh": run})
    write_tree(new, {"run.sh": run})
    assert _pk(check_findings(capsys, old), "PK201") == []
    assert _pk(check_findings(capsys, new), "PK201") == [("run.sh", 2, "error")]


def test_a_value_from_a_variable_the_script_never_sets_is_missing_on_the_machines_say(tmp_path: Path, capsys) -> None:
    program = (
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--model_max_length', type=int, default=512)\n"
        "p.add_argument('--lora_enable', action='store_true')\np.parse_args()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "train.py": program,
            "finetune.sh": "#!/bin/bash\npython train.py --model_max_length $MAX_LENGTH --lora_enable\n",
            # a caller's argument: whether one is meant is the caller's (not judged)
            "caller.sh": "#!/bin/bash\npython train.py --model_max_length $1 --lora_enable\n",
        },
    )
    found = [f for f in check_findings(capsys, root) if f["code"] == "PK202"]
    assert _pk(found, "PK202") == [("finetune.sh", 2, "info")]
    assert "$MAX_LENGTH, which the script never sets" in found[0]["message"]


def test_a_gap_that_wraps_the_whole_file_in_an_error_is_masked_where_it_is(tmp_path: Path, capsys) -> None:
    script = (
        "#!/usr/bin/env bash\n"
        'source "$(dirname "${BASH_SOURCE[0]}")/../../env.sh"\n'
        "# Config = part-interleave + per-part markers + K=8.\n"
        "set -euo pipefail\n\n"
        "master_port=${MASTER_PORT:-$((RANDOM % (65535 - 49152 + 1) + 49152))}\n"
        'filename=$(basename "$0" .sh)\n\n'
        'project_root="${PLOT_ROOT}"\nPYTHON="${PLOT_PYTHON}"\n\n'
        'export PYTHONPATH="$project_root:${PYTHONPATH:-}"\n\n'
        '"$PYTHON" -m torch.distributed.run --nproc_per_node=2 --master_port="${master_port}" train.py --lrr 1e-4\n'
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "env.sh": 'export PLOT_ROOT="${PLOT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"\n'
            'export PLOT_PYTHON="${PLOT_PYTHON:-python}"\n',
            "train.py": argparse_program("--lr"),
            "scripts/ablations/stage1_k8.sh": script,
        },
    )
    found = check_findings(capsys, root)
    assert _pk(found, "PK201") == [("stage1_k8.sh", 14, "error")], found


_MAMMOTH_MAIN = """import importlib
from argparse import ArgumentParser


def main():
    parser = ArgumentParser(description='mammoth', allow_abbrev=False)
    parser.add_argument('--model', type=str, required=True)
    parser.add_argument('--dataset', type=str, required=True)
    parser.add_argument('--load_best_args', action='store_true')
    args = parser.parse_known_args()[0]
    mod = importlib.import_module('models.' + args.model)
    if args.load_best_args:
        parser.add_argument('--buffer_size', type=int, required=True)
        args = parser.parse_args()
    else:
        get_parser = getattr(mod, 'get_parser')
        parser = get_parser()
        args = parser.parse_args()


if __name__ == '__main__':
    main()
"""


def test_a_parse_by_a_parser_packlint_cannot_resolve_opens_the_schema(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "main.py": _MAMMOTH_MAIN,
            "scripts/er.sh": "python main.py --model er --dataset seq-cifar10 --lr 0.1 --batch_size 32 --buffer_size 200\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK201") == []


def test_a_source_after_cd_into_a_folder_the_checkout_lacks_is_the_machines(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "scripts/install-kungfu.sh": "#!/bin/sh\ngit clone https://github.com/lsds/KungFu.git\ncd KungFu\n"
            ". ./scripts/utils/measure.sh\n",
            # a folder the checkout holds: its missing file is still the checkout's
            "tools/.keep": "",
            "scripts/held.sh": "#!/bin/sh\ncd ../tools\n. ./env.sh\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK106") == [("held.sh", 3, "warning"), ("install-kungfu.sh", 4, "info")]


def test_a_missing_source_before_and_and_says_the_next_command_does_not_run(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "",
            "launch.sh": "#!/bin/bash\nsource scripts/warm_hf_cache.sh && torchrun --nproc_per_node 8 train.py\n"
            "source scripts/env.sh\n",
        },
    )
    found = sorted((f["line"], f["message"]) for f in check_findings(capsys, root) if f["code"] == "PK106")
    assert [line for line, _ in found] == [2, 3]
    assert found[0][1].endswith("the command after `&&` does not run")
    assert "goes on without the settings" in found[1][1]
