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
        ("export_gt_bad.sh", 1, "info"),
        ("export_plain.sh", 1, "error"),  # (no placeholder: --useage is missing, from the checkout alone)
    ]
    premises = [f["premises"] for f in findings if f["code"] == "PK209" and f["severity"] == "info"]
    assert all(p and p[0]["kind"] == "machine" and "your_data_path" in p[0]["because"] for p in premises)


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
