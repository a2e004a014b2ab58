"""Issue 26, the third holdout's false findings (h-holdout-e/-f): each mechanism in the shape of the
repository it came from, with the true finding beside it kept.

- PK103: a flag a caller hands to the callee's "$@" (SkyRL's CI wrapper, MeZO's mezo.sh) is its override.
- PK203: a name expanded in a function of the same script or in another script of the chain is used; a
  name the callee re-assigns is a shell variable; an unread import in the closure leaves "nothing reads
  it" undecided (FlagPerf, neuronx-nemo-megatron, openrlhf_async_pipline, mlcommons/training).
- PK601: a file under a directory an earlier command of the script writes (OFA's evaluate scripts);
  PK602: a JSON data file given to the checkout's own script (microsoft/LoRA's NLG converters).
- PK310: `--use-checkpoint-args` takes TP from the checkpoint (LLM360/crystalcoder-train).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from packlint.cli import main

GIT = shutil.which("git")


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "h3-cache"))


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _git(repo: Path, *args: str) -> None:
    assert GIT is not None
    subprocess.run(
        [GIT, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def _findings(capsys, *paths: Path) -> list[dict]:
    capsys.readouterr()
    main(["check", "--no-cache", "--format", "json", "--exit-zero", *map(str, paths)])
    return json.loads(capsys.readouterr().out)["findings"]


def _codes(found: list[dict], code: str) -> list[dict]:
    return [f for f in found if f["code"] == code]


# ------------------------------------------------------------------------------------------------ PK103

TRAIN_PY = """import argparse

parser = argparse.ArgumentParser()
parser.add_argument("--learning_rate", type=float, default=1e-5)
parser.add_argument("--optimizer", type=str, default="adam")
parser.add_argument("--max_steps", type=int, default=100)
args = parser.parse_args()
"""


def test_pk103_a_callers_override_through_the_callees_args_is_no_repeat(tmp_path, capsys):
    # NovaSky-AI/SkyRL tests/train/gpu_e2e_test/sft_tulu3_megatron.sh -> the example's trailing "$@"
    # (Hydra overrides), and princeton-nlp/MeZO mezo.sh -> run_fewshot.sh (argparse; the callee joins
    # its "$@" into a string that it splits again)
    root = _tree(
        tmp_path,
        {
            "train.py": TRAIN_PY,
            "examples/sft/run_sft.sh": "#!/bin/bash\nset -x\n"
            "uv run --isolated -m skyrl.train.sft_trainer \\\n  num_steps=4166 \\\n  batch_size=24 \\\n"
            '  optimizer_config.lr=1e-5 \\\n  "$@"\n',
            "tests/e2e/sft_ci.sh": "#!/bin/bash\nset -euo pipefail\n"
            "# Notes on overrides vs the source script: fewer steps for CI\n"
            "bash examples/sft/run_sft.sh num_steps=100 batch_size=8\n",
            "run_fewshot.sh": '#!/bin/bash\nOPT=${OPT:-adam}\nSTEPS=${STEPS:-1000}\nALL_ARGS_TOGETHER="\n'
            "    --optimizer $OPT --max_steps $STEPS\n    --learning_rate 1e-5\n    $@\n\"\n"
            "python train.py \\\n    $ALL_ARGS_TOGETHER\n",
            "mezo.sh": '#!/bin/bash\nLR=${LR:-1e-6}\nSTEPS=100 bash run_fewshot.sh --learning_rate $LR --optimizer "sgd" \\\n'
            "    $@\n",
            "call_fn.sh": '#!/bin/bash\nrun() {\n  python train.py --optimizer adam "$@"\n}\nrun --optimizer sgd\n',
        },
    )
    _git(root, "init", "-q")
    found = _findings(capsys, root / "tests/e2e/sft_ci.sh", root / "mezo.sh", root / "call_fn.sh")
    assert _codes(found, "PK103") == []


def test_pk103_repeats_written_on_either_side_still_fire(tmp_path, capsys):
    root = _tree(
        tmp_path,
        {
            "train.py": TRAIN_PY,
            # the callee repeats the flag itself, before the caller's "$@"
            "own.sh": '#!/bin/bash\npython train.py --max_steps 10 --max_steps 20 "$@"\n',
            "call_own.sh": "#!/bin/bash\nbash own.sh --optimizer sgd\n",
            # the caller's own words repeat it
            "plain.sh": '#!/bin/bash\npython train.py --optimizer adam "$@"\n',
            "call_twice.sh": "#!/bin/bash\nbash plain.sh --optimizer sgd --optimizer adamw\n",
            # the callee's own word comes after the caller's: the caller's value never wins
            "after.sh": '#!/bin/bash\npython train.py "$@" --optimizer adam\n',
            "call_after.sh": "#!/bin/bash\nbash after.sh --optimizer sgd\n",
        },
    )
    _git(root, "init", "-q")
    found = _codes(_findings(capsys, root / "call_own.sh", root / "call_twice.sh", root / "call_after.sh"), "PK103")
    got = sorted((Path(f["path"]).name, f["message"].split(" is given")[0]) for f in found)
    # (reported where the last occurrence is written)
    assert got == [("after.sh", "--optimizer"), ("call_twice.sh", "--optimizer"), ("own.sh", "--max_steps")]
