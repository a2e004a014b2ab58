"""Mechanisms the seventeenth holdout (on the released 0.3.9) found, each in its repository's shape:

- EndoDAV's `scripts/export_gt.sh` runs `python export_gt.py --data_path <your_data_path> --split endovis --useage
  eval`: bash reads the placeholder as `< your_data_path` and `> --split`, so the command runs only if a file
  `your_data_path` exists where the script starts. PK202 already rested on that premise (an info); PK209 reported
  "does not give --split" as a certain error. A premise every given option rests on is the whole command line's, and
  what the command line lacks rests on it too.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.check_helpers import check_findings, write_tree

_REQUIRED = (
    "import argparse\np = argparse.ArgumentParser()\np.add_argument('--data_path', required=True)\n"
    "p.add_argument('--split', required=True, choices=['endovis', 'eigen'])\n"
    "p.add_argument('--useage', required=True, choices=['eval', '3d_recon'])\nargs = p.parse_args()\n"
)


def _pk(findings: list[dict], code: str) -> list[tuple[str, int, str]]:
    return sorted((f["path"].rsplit("/", 1)[-1], f["line"], f["severity"]) for f in findings if f["code"] == code)


def test_what_a_command_line_lacks_rests_on_its_placeholder_redirection(tmp_path: Path, capsys) -> None:
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "export_gt.py": _REQUIRED,
            "scripts/export_gt.sh": "python export_gt.py --data_path <your_data_path> --split endovis --useage eval\n",
            "scripts/export_gt_bad.sh": "python export_gt.py --data_path <your_data_path> --split endovis\n",
            "scripts/export_plain.sh": "python export_gt.py --data_path data/endovis --split endovis\n",
        },
    )
    findings = check_findings(capsys, root)
    assert _pk(findings, "PK209") == [
        ("export_gt.sh", 1, "info"),  # (bash passes --data_path endovis: --split is lost, if the file exists)
        ("export_gt_bad.sh", 1, "error"),  # (--useage is written nowhere: missing whatever the machine holds)
        ("export_plain.sh", 1, "error"),  # (no placeholder: --useage is missing, from the checkout alone)
    ]
    premises = [f["premises"] for f in findings if f["code"] == "PK209" and f["severity"] == "info"]
    assert all(p and p[0]["kind"] == "machine" and "your_data_path" in p[0]["because"] for p in premises)
    bad = next(f for f in findings if f["code"] == "PK209" and f["path"].endswith("export_gt_bad.sh"))
    assert "--useage" in bad["message"] and "--split" not in bad["message"] and not bad["premises"]


_TRAIN = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\np.parse_args()\n"


def test_the_checkout_root_idiom_names_the_program(tmp_path: Path, capsys) -> None:
    """BUTSpeechFIT/DiCoP's shape: `REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"` is the folder
    above the script's (packlint took the program for unknown, so a misspelt flag drew nothing); `python
    "$(dirname "$0")/../train.py"` names the checkout's train.py from wherever the script starts (it was an info
    'found by its name only')."""
    import subprocess

    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "train.py": _TRAIN,
            "scripts/a.sh": 'REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"\n'
            'echo "$REPO_ROOT"\npython "$REPO_ROOT/train.py" --lr 1 --bogus\n',
            "scripts/b.sh": 'REPO_ROOT="$(cd "$(dirname "$0")/.." && pwd)"\n'
            'cmd=(python "$REPO_ROOT/train.py" --lr 1 --bogus)\n'
            '"${cmd[@]}" 2>&1 | tee -a log\n',
            "scripts/deep/c.sh": 'ROOT=$(cd $(dirname $0)/../..; pwd)\necho "$ROOT"\npython $ROOT/train.py --bogus\n',
            "scripts/d.sh": 'python "$(dirname "$0")/../train.py" --lr 1 --bogus\n',
        },
    )
    findings = check_findings(capsys, root)
    assert _pk(findings, "PK201") == [
        ("a.sh", 3, "error"),
        ("b.sh", 2, "error"),
        ("c.sh", 3, "error"),
        ("d.sh", 1, "error"),
    ]
    from packlint.api import inspect_script

    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "python").write_text('#!/bin/sh\necho "$1"\n')
    (stub / "python").chmod(0o755)
    env = dict(os.environ, PATH=f"{stub}{os.pathsep}{os.environ['PATH']}")
    for rel in ("scripts/a.sh", "scripts/b.sh", "scripts/deep/c.sh", "scripts/d.sh"):  # (bash, the oracle)
        ran = subprocess.run(["bash", rel], cwd=root, env=env, capture_output=True, text=True).stdout.split()[-1]
        said = inspect_script(str(root / rel))["launches"][0]["command"][1]
        assert os.path.normpath(os.path.join(root, said)) == os.path.normpath(os.path.join(root, ran)), (rel, said)


def test_a_relative_folder_without_cd_stays_unknown(tmp_path: Path, capsys) -> None:
    """`$("$(dirname "$0")/..")` would run the folder, not go to it: no value."""
    from packlint.api import inspect_script

    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "x\n",
            "train.py": _TRAIN,
            "scripts/x.sh": 'R="$("$(dirname "$0")/..")"\npython "$R/train.py" --lr 1\n',
        },
    )
    model = inspect_script(str(root / "scripts/x.sh"))
    launch = model["launches"][0]
    assert launch["program"] is None or "train.py" not in str(launch["code"].get("file") or "")


_LF_FINETUNING = """from dataclasses import dataclass, field
from typing import Literal


@dataclass
class FinetuningArguments:
    stage: Literal["pt", "sft", "rm", "ppo", "dpo"] = field(default="sft")
    finetuning_type: Literal["lora", "freeze", "full"{extra}] = field(default="lora")
"""
_LF_MODEL = """from dataclasses import dataclass, field
from typing import Optional


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default=None)
"""
_LF_DATA = """from dataclasses import dataclass, field
from typing import Optional


@dataclass
class DataArguments:
    dataset: Optional[str] = field(default=None)
    template: Optional[str] = field(default=None)
"""
_LF_TRAIN = (
    "llamafactory-cli train \\\n    --stage sft \\\n    --do_train \\\n    --model_name_or_path m \\\n"
    "    --dataset d \\\n    --template qwen \\\n    --finetuning_type {ft} \\\n    --output_dir out{more}\n"
)


def _lf_tree(tmp_path: Path, files: dict[str, str], package: str = "LLaMA-Factory/src/llamafactory") -> Path:
    base = {
        ".git/HEAD": "ref: refs/heads/main\n",
        f"{package}/__init__.py": "",
        f"{package}/extras/env.py": 'VERSION = "0.9.1.dev0"\n',
        f"{package}/hparams/__init__.py": "",
        f"{package}/hparams/model_args.py": _LF_MODEL,
        f"{package}/hparams/data_args.py": _LF_DATA,
    }
    return write_tree(tmp_path, {**base, **files})


def test_a_llamafactory_sub_project_is_the_one_its_cli_runs(tmp_path: Path, capsys) -> None:
    """dgme-syz/global_attention: LLaMA-Factory/ (setup.py; the README says `cd LLaMA-Factory && pip install -e .`)
    adds finetuning_type 'ga'; scripts/train.sh runs `llamafactory-cli train ... --finetuning_type ga` from the
    checkout's root. PK208 took the release's choices (an error); the sub-project's own classes decide, as they
    already did for its version."""
    package = "LLaMA-Factory/src/llamafactory"
    root = _lf_tree(
        tmp_path,
        {
            "LLaMA-Factory/setup.py": "from setuptools import setup, find_packages\n"
            "setup(name='llamafactory', package_dir={'': 'src'}, packages=find_packages('src'))\n",
            f"{package}/hparams/finetuning_args.py": _LF_FINETUNING.format(extra=', "ga"'),
            "scripts/train.sh": _LF_TRAIN.format(ft="ga", more=""),
            "scripts/typo.sh": _LF_TRAIN.format(ft="gaa", more=""),
        },
    )
    findings = check_findings(capsys, root)
    assert _pk(findings, "PK208") == [("typo.sh", 7, "error")]  # (the sub-project's choices: lora, freeze, full, ga)
    assert "ga" in next(f["message"] for f in findings if f["code"] == "PK208").split("values (")[1]


def test_a_vendored_llamafactory_parses_with_the_classes_its_parser_lists(tmp_path: Path, capsys) -> None:
    """12345ljx/HeterExpert: the fork's hparams/parser.py has `_TRAIN_ARGS = [ModelArguments, MoEArguments, ...]`
    (hparams/moefication_args.py): --task_name is its key (6 false PK207). A key no listed class has still is one;
    a listed class packlint did not read leaves the keys open."""
    package = "LLaMA-Factory/src/llamafactory"
    parser = (
        "from transformers import HfArgumentParser, Seq2SeqTrainingArguments\n"
        "from .data_args import DataArguments\nfrom .finetuning_args import FinetuningArguments\n"
        "from .model_args import ModelArguments\nfrom .moefication_args import MoEArguments\n\n"
        "_TRAIN_ARGS = [ModelArguments, MoEArguments, DataArguments, Seq2SeqTrainingArguments, FinetuningArguments]\n"
        "_INFER_ARGS = [ModelArguments, DataArguments, FinetuningArguments]\n"
    )
    moe = "from dataclasses import dataclass\n\n\n@dataclass\nclass MoEArguments:\n    task_name: str = ''\n"
    files = {
        f"{package}/hparams/finetuning_args.py": _LF_FINETUNING.format(extra=""),
        f"{package}/hparams/parser.py": parser,
        f"{package}/hparams/moefication_args.py": moe,
        "LLaMA-Factory/scripts/train.sh": _LF_TRAIN.format(ft="lora", more=" \\\n    --task_name arc_easy"),
        "LLaMA-Factory/scripts/bad.sh": _LF_TRAIN.format(ft="lora", more=" \\\n    --bogus_key 1"),
    }
    root = _lf_tree(tmp_path / "a", files)
    assert _pk(check_findings(capsys, root), "PK207") == [("bad.sh", 9, "error")]
    # MoEArguments defined elsewhere (not read): no key is judged
    files[f"{package}/hparams/moefication_args.py"] = "from moefication import MoEArguments\n"
    root = _lf_tree(tmp_path / "b", files)
    assert _pk(check_findings(capsys, root), "PK207") == []


def test_a_parse_in_an_except_handler_gives_way_to_the_parser_that_surely_runs(tmp_path: Path, capsys) -> None:
    """lisun-ai/HLM's pretrain.py: argparse takes --config_json (required) and parses; the HfArgumentParser's
    dataclasses come from parse_json_file(args.config_json), and parse_args_into_dataclasses() runs only in the
    `except` after it. packlint judged the launch by the HfArgumentParser ('--config_json is not a flag')."""
    program = (
        "import argparse\nfrom dataclasses import dataclass, field\n"
        "from transformers import HfArgumentParser, TrainingArguments\n\n\n@dataclass\nclass DataArguments:\n"
        "    data: str = field(default=None)\n\n\ndef main():\n    ap = argparse.ArgumentParser()\n"
        "    ap.add_argument('--config_json', type=str, required=True)\n    args = ap.parse_args()\n"
        "    parser = HfArgumentParser((DataArguments, TrainingArguments))\n    try:\n"
        "        data_args, training_args = parser.parse_json_file(args.config_json)\n    except Exception:\n"
        "        data_args, training_args = parser.parse_args_into_dataclasses()\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "requirements.txt": "transformers==4.41.2\n",
            "pretrain.py": program,
            "config.json": "{}\n",
            "run.sh": "torchrun --standalone --nproc_per_node 2 pretrain.py \\\n    --config_json ./config.json\n",
            "typo.sh": "torchrun --standalone --nproc_per_node 2 pretrain.py --config_json ./config.json --data x\n",
        },
    )
    findings = check_findings(capsys, root)
    assert _pk(findings, "PK201") == [("typo.sh", 1, "error")]  # (argparse exits on --data: its parse runs first)
    assert "argparse exits" in next(f["message"] for f in findings if f["code"] == "PK201")


def test_a_json_word_a_program_reads_from_sys_argv_is_data(tmp_path: Path, capsys) -> None:
    """thunlp/CSS-LM's script/prep.sh: `python3 ../code/prep.py ../data/corpus/corpus.json ../data/out` where
    prep.py opens sys.argv[1] (no parser): the corpus is fetched at set-up (its README says to download it), so its
    absence is the machine's (an info), not a missing config (a warning)."""
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "code/prep.py": "import json, sys\nwith open(sys.argv[1]) as f:\n    data = json.load(f)\n",
            "code/other.py": "import json\nprint(json.load(open('x.json')))\n",
            "script/prep.sh": "python3 ../code/prep.py ../data/corpus/corpus.json ../data/corpus_prep/out\n",
            "script/cfg.sh": "python3 ../code/prep.py ../configs/train_config.json\n",
        },
    )
    findings = check_findings(capsys, root)
    assert _pk(findings, "PK601") == [("cfg.sh", 1, "warning"), ("prep.sh", 1, "info")]


def test_the_llamafactory_beside_the_launched_program_is_the_one_it_imports(tmp_path: Path, capsys) -> None:
    """lesliegaga/Agent_Foundation_Models, vaijsc/mathreasoning: `deepspeed LLaMA-Factory/src/train.py ...
    --masked_thought 0.2` from the checkout's root; the copy's DataArguments adds masked_thought. Python puts
    src/ first on the import path, so src/llamafactory is what runs (PK207 judged the key by the releases)."""
    package = "LLaMA-Factory/src/llamafactory"
    data = _LF_DATA + "    masked_thought: float = 0.0\n"
    launch = "deepspeed --include=localhost:0 LLaMA-Factory/src/train.py --stage sft --do_train --dataset d {more}\n"
    root = _lf_tree(
        tmp_path,
        {
            f"{package}/hparams/data_args.py": data,
            f"{package}/hparams/finetuning_args.py": _LF_FINETUNING.format(extra=""),
            "LLaMA-Factory/src/train.py": "from llamafactory.train.tuner import run_exp\n\nrun_exp()\n",
            "sft_root.sh": launch.format(more="--masked_thought 0.2 --output_dir out"),
            "typo_root.sh": launch.format(more="--masked_thougth 0.2 --output_dir out"),
        },
    )
    assert _pk(check_findings(capsys, root), "PK207") == [("typo_root.sh", 1, "error")]


def test_a_verl_launch_naming_verl_source_the_checkout_lacks_is_not_judged_by_the_releases(
    tmp_path: Path, capsys
) -> None:
    """TongLiu-github/opd2 committed thunlp/OPD's scripts without OPD's verl/ tree; the launch names
    `custom_reward_function.path=verl/verl/utils/reward_score/ttrl_math/__init__.py`: the job runs that copy of verl
    (whose config adds algorithm.grpo_outcome_weight), not a release (9 warnings). A launch naming no verl source
    is still judged by the releases."""
    launch = (
        "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n"
        "    algorithm.grpo_outcome_weight=1.0 \\\n{extra}    trainer.n_gpus_per_node=8\n"
    )
    reward = '    custom_reward_function.path="verl/verl/utils/reward_score/ttrl_math/__init__.py" \\\n'
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "train.sh": launch.format(extra=reward),
            "abs.sh": launch.format(extra=reward.replace('"verl/', '"/root/OPD/verl/')),
            "plain.sh": launch.format(extra=""),
        },
    )
    assert _pk(check_findings(capsys, root), "PK207") == [("plain.sh", 3, "warning")]


def test_a_field_of_a_pinned_release_older_than_the_snapshots_is_not_judged(tmp_path: Path, capsys) -> None:
    """HLTCHKUST/cqr4cqa pins transformers==4.4.2 and passes --sharded_ddp, a TrainingArguments field of 4.4.2 that
    no snapshot (4.41.2 on) has: PK201 warned 'not a flag'. A name no release had stays a finding."""
    program = (
        "from dataclasses import dataclass\nfrom transformers import HfArgumentParser, TrainingArguments\n\n\n"
        "@dataclass\nclass A:\n    model: str = 'm'\n\n\n"
        "HfArgumentParser((A, TrainingArguments)).parse_args_into_dataclasses()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "requirements.txt": "transformers==4.4.2\n",
            "train.py": program,
            "run.sh": "python train.py --output_dir out --sharded_ddp simple\n",
            "typo.sh": "python train.py --output_dir out --sharded_ddpp simple\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK201") == [("typo.sh", 1, "warning")]


def test_a_parser_in_an_except_handler_after_exit_does_not_judge_the_launch(tmp_path: Path, capsys) -> None:
    """ycyoon/RGTNet: main() parses with a first parser (--trained-model, nargs=2) in its `try:` body; a larger
    parser sits in the `except` handler after sys.exit(1). packlint read the larger one (3 false PK201)."""
    program = (
        "import argparse\nimport sys\n\n\ndef main():\n    try:\n        parser = argparse.ArgumentParser()\n"
        "        parser.add_argument('--trained-model', nargs=2)\n        args = parser.parse_args()\n"
        "    except Exception:\n        sys.exit(1)\n        parser = argparse.ArgumentParser()\n"
        "        parser.add_argument('--models', nargs='+')\n        parser.add_argument('--config')\n"
        "        parser.add_argument('--debug', action='store_true')\n        args = parser.parse_args()\n\n\n"
        "if __name__ == '__main__':\n    main()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "prog.py": program,
            "run.sh": "python prog.py --trained-model rgtnet /models/m0\n",
            "bad.sh": "python prog.py --trained-model rgtnet /models/m0 --debug\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK201") == [("bad.sh", 1, "error")]


def test_a_pipeline_module_splits_the_world_before_deepspeeds_data_parallel_size(tmp_path: Path, capsys) -> None:
    """Gezy777/distributed_train: `deepspeed --num_gpus=2 train.py` builds PipelineModule(..., num_stages=2): one
    data-parallel replica, and 16 == 4 x 4 x 1. PK610 took the two processes for the data-parallel size."""
    program = (
        "import argparse\nimport deepspeed\nimport torch.nn as nn\nfrom deepspeed.pipe import PipelineModule\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
        "parser = deepspeed.add_config_arguments(parser)\nargs = parser.parse_args()\n{model}"
        "engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())\n"
    )
    pipe = "model = PipelineModule(layers=[nn.Linear(8, 8)], num_stages=2, loss_fn=nn.CrossEntropyLoss())\n"
    cfg = (
        '{\n  "train_batch_size": 16,\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 4\n}\n'
    )
    launch = "deepspeed --num_gpus=2 {prog} --deepspeed_config ds_config.json\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "train.py": program.format(model=pipe),
            "plain.py": program.format(model="model = nn.Linear(8, 2)\n"),
            "ds_config.json": cfg,
            "run.sh": launch.format(prog="train.py"),
        },
    )
    assert _pk(check_findings(capsys, root), "PK610") == []
    (root / "run.sh").write_text(launch.format(prog="plain.py"))  # (no split: 16 != 4 x 4 x 2)
    assert _pk(check_findings(capsys, root), "PK610") == [("ds_config.json", 2, "error")]


def test_a_pipeline_modules_stage_count_from_an_option_divides_each_hosts_processes(tmp_path: Path, capsys) -> None:
    """DeepSpeedExamples' pipeline_parallelism (the recall case): `num_stages=args.pipeline_parallel_size`, the
    launch gives `-p 2`: 6 processes per host are 3·k replicas, and 256 = 8 x accumulation x 3·k for no k."""
    program = (
        "import argparse\nimport deepspeed\nimport torch\nfrom deepspeed.pipe import PipelineModule\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
        "parser.add_argument('-p', '--pipeline-parallel-size', type=int, default=2)\n"
        "parser.add_argument('--steps', type=int, default=100)\n"
        "parser = deepspeed.add_config_arguments(parser)\nargs = parser.parse_args()\n"
        "net = PipelineModule(layers=[torch.nn.Linear(8, 8)],\n"
        "    loss_fn=torch.nn.CrossEntropyLoss(),\n"
        "    num_stages=args.pipeline_parallel_size,\n"
        "    partition_method='parameters')\n"
        "engine, _, _, _ = deepspeed.initialize(args=args, model=net, model_parameters=net.parameters())\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "train.py": program,
            "ds_config.json": '{\n  "train_batch_size" : 256,\n  "train_micro_batch_size_per_gpu" : 8\n}\n',
            "run.sh": "deepspeed --num_gpus 6 train.py --deepspeed_config=ds_config.json -p 2 --steps=200\n",
        },
    )
    found = [f for f in check_findings(capsys, root) if f["code"] == "PK610"]
    assert [f["severity"] for f in found] == ["error"] and "3·k" in found[0]["message"]
    (root / "run.sh").write_text("deepspeed --num_gpus 8 train.py --deepspeed_config=ds_config.json -p 2\n")
    assert [f for f in check_findings(capsys, root) if f["code"] == "PK610"] == []  # (4·k: k = 8 adds up)


def test_verls_patch_releases_are_snapshots_too(tmp_path: Path, capsys) -> None:
    """minhphucng30-UND/pretrain_sharpen (no verl in the checkout, none pinned) sets `algorithm.rollout_is*`, keys of
    verl 0.6.0 only (0.6.1 moved them under algorithm.rollout_correction): the snapshots, one per minor release,
    had 0.6.1 and not 0.6.0 (15 false warnings). Every release is a snapshot now; a pin between two of them (a
    pre-release) is judged by both and names that assumption, as the dataclass stacks do."""
    launch = (
        "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n"
        "    algorithm.rollout_is=true \\\n    algorithm.rollout_is_threshold=2.0 \\\n    {extra}"
        "trainer.n_gpus_per_node=8\n"
    )
    cases = {"none": "", "exact": "verl==0.6.1\n", "pre": "verl==0.6.1rc1\n"}
    got = {}
    for name, pin in cases.items():
        files = {
            ".git/HEAD": "ref: refs/heads/main\n",
            "run.sh": launch.format(extra="algorithm.rollout_iss=1 \\\n    "),
        }
        if pin:
            files["requirements.txt"] = pin
        findings = check_findings(capsys, write_tree(tmp_path / name, files))
        got[name] = sorted((f["message"].split()[0], f["severity"]) for f in findings if f["code"] == "PK207")
    assert got["none"] == [("algorithm.rollout_iss", "warning")]  # (0.6.0 has the two others)
    assert got["exact"] == [
        ("algorithm.rollout_is", "error"),
        ("algorithm.rollout_is_threshold", "error"),
        ("algorithm.rollout_iss", "error"),
    ]
    assert got["pre"] == [("algorithm.rollout_iss", "warning")]  # (0.6.0 or 0.6.1: the assumption named)


def test_a_megatron_program_a_fork_does_not_hold_at_that_path_is_not_upstreams(tmp_path: Path, capsys) -> None:
    """jgcb00/Megatron-LM's examples launch `../../Megatron-LM/pretrain_gpt.py` (a layout of their author's); the
    checkout is a Megatron of its own, whose parser takes `--tokenizer-type HuggingFacePretrainedTokenizer`:
    upstream's snapshot judged it (PK202 and PK201 warnings). A checkout without Megatron code of its own still
    draws upstream's verdict under the assumption, and so does one with Megatron code but no program of that name
    (test_partial_knowledge)."""
    launch = (
        "torchrun --nproc_per_node 8 ../../Megatron-LM/pretrain_gpt.py --num-layers 2 --hidden-size 64 "
        "--num-attention-heads 4 --seq-length 128 --max-position-embeddings 128 --micro-batch-size 1 "
        "--train-iters 10 --lr 1e-4 --tokenizer-type HuggingFacePretrainedTokenizer\n"
    )
    arguments = "import argparse\n\n\ndef parse_args():\n    return argparse.ArgumentParser().parse_args()\n"
    fork = write_tree(
        tmp_path / "fork",
        {
            ".git/HEAD": "x\n",
            "megatron/training/arguments.py": arguments,
            "pretrain_gpt.py": "from megatron.training import pretrain\n",
            "examples/gpt3/train.sh": launch,
        },
    )
    assert [f for f in check_findings(capsys, fork) if f["code"] in ("PK201", "PK202")] == []
    user = write_tree(tmp_path / "user", {".git/HEAD": "x\n", "examples/gpt3/train.sh": launch})
    assert _pk(check_findings(capsys, user), "PK202") == [("train.sh", 1, "warning")]


def test_an_option_an_open_parser_may_take_for_a_dest_is_not_its_default(tmp_path: Path, capsys) -> None:
    """TransMLA's benchmark_throughput.py parses with vLLM's FlexibleArgumentParser (a class packlint does not read,
    which takes `--input_len` for `--input-len`); its validate_args raises when input_len is None. PK330 built the
    namespace without the launch's `--input_len` (an error); PK201 already left the word alone."""
    program = (
        "import argparse\nfrom vllm.utils import FlexibleArgumentParser\n\n\ndef validate_args(args):\n"
        "    if args.input_len is None:\n        raise ValueError('input_len must be provided')\n\n\n"
        "if __name__ == '__main__':\n    parser = FlexibleArgumentParser(description='bench')\n"
        "    parser.add_argument('--input-len', type=int, default=None)\n"
        "    parser.add_argument('--output-len', type=int, default=None)\n"
        "    args = parser.parse_args()\n    validate_args(args)\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "x\n",
            "requirements.txt": "vllm==0.8.4\n",
            "prog.py": program,
            "run.sh": "python prog.py --input_len 1024 --output-len 1024\n",
            "none.sh": "python prog.py --output-len 1024\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK330") == [("none.sh", 1, "error")]


def test_a_one_dash_option_takes_its_value_after_an_equals_sign_or_attached(tmp_path: Path, capsys) -> None:
    """11777-MMML/11777-videoQA's IGV/train.sh runs `python run.py -v='IGV'`: argparse splits `-v=IGV` as it
    splits `--x=v` (and takes `-vIGV` as `-v IGV`). PK202 said -v=IGV needs a value; the seeded attached form drew
    PK201 and PK209. A one-dash option that is not defined is still unknown."""
    program = (
        "import argparse\nparser = argparse.ArgumentParser()\n"
        "parser.add_argument('-v', type=str, required=True)\nparser.add_argument('-bs', type=int, default=256)\n"
        "args = parser.parse_args()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "x\n",
            "run.py": program,
            "a.sh": "python run.py -v='IGV'\n",
            "b.sh": "python run.py -v=IGV -bs=8\n",
            "c.sh": "python run.py -vIGV\n",
            "d.sh": "python run.py -v IGV -bs=eight\n",
            "e.sh": "python run.py -v=IGV -q=1\n",
        },
    )
    findings = check_findings(capsys, root)
    got = sorted((f["path"].rsplit("/", 1)[-1], f["code"]) for f in findings if f["severity"] in ("error", "warning"))
    assert got == [("d.sh", "PK202"), ("e.sh", "PK201")]


def test_a_pipeline_module_subclass_with_a_stage_count_of_the_world_leaves_dp_unknown(tmp_path: Path, capsys) -> None:
    """Gezy777/distributed_train as it is: `class MyCustomPipelineModule(PipelineModule)` made with
    `num_stages=dist.get_world_size()`: the stage count is the machine's, so DeepSpeed's data-parallel size is not
    known (a false PK610 error on the released 0.3.9)."""
    program = (
        "import argparse\nimport deepspeed\nimport torch.distributed as dist\nimport torch.nn as nn\n"
        "from deepspeed.pipe import PipelineModule\n\n\nclass MyCustomPipelineModule(PipelineModule):\n"
        "    def _partition_layers(self, method='uniform'):\n        num_stages = self._topo.get_dim('pipe')\n\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int, default=-1)\n"
        "parser = deepspeed.add_config_arguments(parser)\nargs = parser.parse_args()\n"
        "model = MyCustomPipelineModule(\n    layers=[nn.Linear(8, 8)],\n    num_stages=dist.get_world_size(),\n)\n"
        "engine, _, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())\n"
    )
    cfg = '{\n  "train_batch_size": 1024,\n  "train_micro_batch_size_per_gpu": 128,\n  "gradient_accumulation_steps": 8\n}\n'
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "x\n",
            "pipeline_train.py": program,
            "ds_config.json": cfg,
            "run_pipeline.sh": "deepspeed --num_gpus=2 pipeline_train.py --deepspeed_config ds_config.json\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK610") == []


def test_a_fallback_parser_in_a_handler_that_catches_the_exit_takes_its_options(tmp_path: Path, capsys) -> None:
    """lisun-ai/HLM's finetune_glue.py shape: `try: args = p1.parse_args()` / `except: args = p2.parse_args()` (a bare
    except catches argparse's SystemExit): an option the second parser takes parses (it was a false PK201 on the first
    parser alone); an option neither takes still exits; `except Exception` lets the exit through."""
    program = (
        "import argparse\n\n\ndef main():\n    p1 = argparse.ArgumentParser()\n"
        "    p1.add_argument('--config_json', type=str)\n    p2 = argparse.ArgumentParser()\n"
        "    p2.add_argument('--task_name', type=str)\n    try:\n        args = p1.parse_args()\n"
        "    except{catch}:\n        args = p2.parse_args()\n\n\nmain()\n"
    )
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "x\n",
            "bare.py": program.format(catch=""),
            "exc.py": program.format(catch=" Exception"),
            "run_plain.sh": "python bare.py --task_name mrpc\n",
            "run_bogus.sh": "python bare.py --task_name mrpc --bogus 1\n",
            "run_exc.sh": "python exc.py --task_name mrpc\n",
        },
    )
    assert _pk(check_findings(capsys, root), "PK201") == [("run_bogus.sh", 1, "error"), ("run_exc.sh", 1, "error")]


def test_a_verl_module_run_from_a_folder_of_the_machine_is_its_verl(tmp_path: Path, capsys) -> None:
    """Shi-qingyu/videoreward-verl's scripts/ref/train_RL_singlenodes.sh: `cd /your_local_path_to/Video-o3/RL` then
    `python3 -m verl.trainer.main_ppo ...` (the old project's launcher): `-m` imports that folder's verl first, so the
    keys the checkout's vendored verl lacks depend on the machine (7 false errors). Run in the checkout, an error."""
    launch = "python3 -m verl.trainer.main_ppo \\\n    data.train_files=x.parquet \\\n    data.mask_blank=True\n"
    cfg = "data:\n  train_files: null\n  max_prompt_length: 512\ntrainer:\n  n_gpus_per_node: 8\n"
    root = write_tree(
        tmp_path,
        {
            ".git/HEAD": "x\n",
            "verl/__init__.py": "",
            "verl/version/version": "0.7.0.dev\n",
            "verl/trainer/__init__.py": "",
            "verl/trainer/main_ppo.py": "import hydra\n\n\n@hydra.main(config_path='config', config_name='ppo_trainer')\n"
            "def main(config):\n    pass\n",
            "verl/trainer/config/ppo_trainer.yaml": cfg,
            "scripts/run_here.sh": launch,
            "scripts/run_other.sh": "cd /your_local_path_to/Other-Project/RL\n" + launch,
        },
    )
    assert _pk(check_findings(capsys, root), "PK207") == [("run_here.sh", 3, "error"), ("run_other.sh", 4, "info")]


def test_a_multi_node_option_that_says_one_machine_is_a_local_run(tmp_path: Path, capsys) -> None:
    """seunghyukoh/diffusion-vs-ar's `accelerate launch --multi_gpu --num_machines 1 ... src/train_bash.py --bogus`:
    PK201 said argparse exits "after the job got its nodes"; one machine is a local run ("at startup"). Two are not."""
    program = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\np.parse_args()\n"
    launch = "accelerate launch --multi_gpu --num_machines {n} --num_processes 8 train.py --lr 1 --bogus 1\n"
    root = write_tree(
        tmp_path,
        {".git/HEAD": "x\n", "train.py": program, "one.sh": launch.format(n=1), "two.sh": launch.format(n=2)},
    )
    said = {f["path"].rsplit("/", 1)[-1]: f["message"] for f in check_findings(capsys, root) if f["code"] == "PK201"}
    assert "at startup" in said["one.sh"] and "after the job got its nodes" in said["two.sh"]


def test_values_an_argument_loop_would_set_rest_on_the_script_run_without_arguments(tmp_path: Path, capsys) -> None:
    """gpauloski/BERT-PyTorch's launchers set defaults, then `while [[ "$#" -gt 0 ]]; do case $1 in -a|--kwargs)
    KWARGS="$2"; ...`: run without arguments the loop does not run, so a value it would set is known only on that
    assumption (the third part: a verdict from it said evidence `checkout`). A variable the loop does not set keeps
    its verdict."""
    program = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\np.parse_args()\n"
    loop = (
        'LR=abc\nWD=xyz\nwhile [[ "$#" -gt 0 ]]; do\n  case $1 in\n    --lr) LR="$2"; shift ;;\n  esac\n  shift\n'
        "done\npython run.py --lr {var}\n"
    )
    root = write_tree(
        tmp_path,
        {".git/HEAD": "x\n", "run.py": program, "a.sh": loop.format(var="$LR"), "b.sh": loop.format(var="$WD")},
    )
    found = {f["path"].rsplit("/", 1)[-1]: f for f in check_findings(capsys, root) if f["code"] == "PK202"}
    assert found["a.sh"]["severity"] == "warning" and found["a.sh"]["premises"][0]["kind"] == "assumed"
    assert "the script run without arguments" in found["a.sh"]["premises"][0]["because"]
    assert found["b.sh"]["severity"] == "error" and not found["b.sh"]["premises"]


def test_a_read_loop_with_an_empty_ifs_takes_each_line_whole(tmp_path: Path, capsys) -> None:
    """fyh2001/megatron-sft-recipes' run_fsdp_opt_sweep.sh: `while IFS= read -r line; do ... done <<< "$MATRIX"` was
    an internal error (an empty IFS made an empty regular-expression set); bash takes each line whole."""
    from packlint.api import inspect_script

    script = (
        'MATRIX="x 1\ny 2"\nwhile IFS= read -r line; do\n  [ -z "${line}" ] && continue\n  set -- ${line}\n'
        '  python run.py --name "$1" --n "$2"\ndone <<< "${MATRIX}"\n'
    )
    root = write_tree(tmp_path, {".git/HEAD": "x\n", "run.py": "print(1)\n", "sweep.sh": script})
    model = inspect_script(str(root / "sweep.sh"))
    commands = sorted(
        tuple(v["command"]) for launch in model["launches"] for v in (launch.get("variants") or [launch])
    )
    assert commands == [("python", "run.py", "--name", "x", "--n", "1"), ("python", "run.py", "--name", "y", "--n", "2")]
    assert check_findings(capsys, root) is not None  # (no internal error)
