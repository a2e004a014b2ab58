"""Helpers the holdout test files share: a checkout written from a dict, and `packlint check`'s JSON findings."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from packlint.cli import main


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Write each relative path's text under `root` (directories made as needed); return `root`."""
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def check_findings(capsys, *paths: Path) -> list[dict]:
    """The findings of `packlint check --no-cache --format json` on the paths."""
    capsys.readouterr()
    main(["check", "--no-cache", "--format", "json", "--exit-zero", *map(str, paths)])
    return json.loads(capsys.readouterr().out)["findings"]


def hf_program(field: str = "model_name_or_path") -> str:
    """A training program that parses one dataclass field and TrainingArguments with HfArgumentParser."""
    return (
        "from dataclasses import dataclass\nfrom transformers import HfArgumentParser, TrainingArguments\n\n\n"
        f"@dataclass\nclass A:\n    {field}: str = 'm'\n\n\n"
        "HfArgumentParser((A, TrainingArguments)).parse_args_into_dataclasses()\n"
    )


GIT = shutil.which("git")


def git(repo: Path, *args: str) -> None:
    """Run git in `repo` with a fixed identity and no signing (tests that build a history)."""
    assert GIT is not None
    subprocess.run(
        [GIT, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def argparse_program(*options: str) -> str:
    """A program whose argparse parser defines `options` and parses the command line."""
    adds = "".join(f"p.add_argument({o!r})\n" for o in options)
    return f"import argparse\np = argparse.ArgumentParser()\n{adds}p.parse_args()\n"
