"""Mechanisms behind false findings the fourth holdout (h-holdout-g, h-holdout-h: repositories nobody here had
used) found, each in the shape of the repository it stands for, with the true finding of the same shape kept."""

from __future__ import annotations

import json
from pathlib import Path

from packlint.cli import main


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _findings(capsys, *paths: Path) -> list[dict]:
    capsys.readouterr()
    main(["check", "--no-cache", "--format", "json", "--exit-zero", *map(str, paths)])
    return json.loads(capsys.readouterr().out)["findings"]


def _parser(*flags: str) -> str:
    adds = "".join(f"p.add_argument('{f}')\n" for f in flags)
    return f"import argparse\np = argparse.ArgumentParser()\n{adds}p.parse_args()\n"


def test_a_relative_program_is_looked_up_in_the_scripts_own_sub_project(tmp_path, capsys):
    """huggingface/distil-whisper: training/flax (its own setup.py) has scripts that run `python
    run_pseudo_labelling.py`, a program of the flax project; training/run_pseudo_labelling.py is the PyTorch
    project's, with other flags (29 false PK201 against it). A program in the script's own project is still found
    and judged, and `../x.py` still climbs."""
    root = _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "training/run_pseudo_labelling.py": _parser("--model_name_or_path"),
            "training/flax/setup.py": "from setuptools import setup\nsetup(name='distil_whisper')\n",
            "training/flax/run_distillation.py": _parser("--model_name_or_path", "--wandb_dir"),
            "training/flax/scripts/pseudo.sh": "#!/bin/bash\npython run_pseudo_labelling.py --model_name_or_path m --wandb_dir /tmp\n",
            "training/flax/scripts/distil.sh": "#!/bin/bash\npython run_distillation.py --model_name_or_path m --wandb_dirr /tmp\n",
            "training/flax/scripts/climb.sh": "#!/bin/bash\npython ../../run_pseudo_labelling.py --wandb_dir /tmp\n",
        },
    )
    scripts = root / "training" / "flax" / "scripts"
    found = _findings(capsys, scripts / "pseudo.sh", scripts / "distil.sh", scripts / "climb.sh")
    got = sorted((Path(f["path"]).name, f["message"].split()[0]) for f in found if f["code"] == "PK201")
    assert got == [("climb.sh", "--wandb_dir"), ("distil.sh", "--wandb_dirr")]


def test_a_repeated_flag_the_program_rejects_is_no_last_one_wins(tmp_path, capsys):
    """wdndev/tiny-llm-zh script/dpo_demo.sh: `--adam_beta1 0.9 ... --adam_beta1 0.95` to a program whose
    HfArgumentParser has no such field: it stops at start (PK201), nothing "wins" (a false PK103). A repeated flag
    the program defines stays PK103."""
    root = _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "train/dpo_train.py": _parser("--beta"),
            "script/dpo_demo.sh": "#!/bin/bash\npython train/dpo_train.py --beta 0.2 --adam_beta1 0.9 --adam_beta1 0.95\n"
            "python train/dpo_train.py --beta 0.2 --beta 0.3\n",
        },
    )
    found = _findings(capsys, root / "script" / "dpo_demo.sh")
    got = sorted((f["code"], f["line"], f["message"].split()[0]) for f in found if f["code"] in ("PK103", "PK201"))
    assert got == [("PK103", 3, "--beta"), ("PK201", 2, "--adam_beta1")]
