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
from pathlib import Path

import pytest

from packlint.cli import main
from tests.check_helpers import GIT, git


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "h3-cache"))


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
            '    --optimizer $OPT --max_steps $STEPS\n    --learning_rate 1e-5\n    $@\n"\n'
            "python train.py \\\n    $ALL_ARGS_TOGETHER\n",
            "mezo.sh": "#!/bin/bash\nLR=${LR:-1e-6}\n"
            'STEPS=100 bash run_fewshot.sh --learning_rate $LR --optimizer "sgd" \\\n'
            "    $@\n",
            "call_fn.sh": '#!/bin/bash\nrun() {\n  python train.py --optimizer adam "$@"\n}\nrun --optimizer sgd\n',
        },
    )
    git(root, "init", "-q")
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
    git(root, "init", "-q")
    found = _codes(_findings(capsys, root / "call_own.sh", root / "call_twice.sh", root / "call_after.sh"), "PK103")
    got = sorted((Path(f["path"]).name, f["message"].split(" is given")[0]) for f in found)
    # (reported where the last occurrence is written)
    assert got == [("after.sh", "--optimizer"), ("call_twice.sh", "--optimizer"), ("own.sh", "--max_steps")]


# ------------------------------------------------------------------------------------------------ PK203


def _commit(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def _history(root: Path, old: dict[str, str]) -> None:
    """A checkout whose history once had `old` (files that read the names), deleted since."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    _tree(root, old)
    _commit(root, "old readers")
    for rel in old:
        (root / rel).unlink()
    _commit(root, "readers removed")


@pytest.mark.skipif(GIT is None, reason="git is needed for the history")
def test_pk203_a_name_the_chain_expands_or_reassigns_is_used(tmp_path, capsys):
    # FlagOpen/FlagPerf operation/helper: main.sh exports, the child `bash run.sh` expands the names in
    # a function (sed into host.yaml); yyht/openrlhf_async_pipline: the callee re-assigns the caller's
    # export and passes it as a flag
    root = tmp_path / "FlagPerf"
    _history(
        root,
        {
            "operation/old_cfg.py": 'import os\nV = os.environ["VENDOR"]\nS = os.getenv("SSH_PORT")\n'
            'T = os.environ.get("top_p")\n'
        },
    )
    _tree(
        root,
        {
            "operation/run.py": "import yaml\ncfg = yaml.safe_load(open('configs/host.yaml'))\nprint(cfg)\n",
            "operation/ev.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--top_p', type=float)\n"
            "p.parse_args()\n",
            "operation/helper/main.sh": '#!/bin/bash\nVENDOR="nvidia"\nSSH_PORT="22"\nexport VENDOR\nexport SSH_PORT\n'
            "bash run.sh\n",
            "operation/helper/run.sh": "#!/bin/bash\nmodify_config() {\n"
            '    sed -i "s|^VENDOR:.*$|VENDOR: \\"$VENDOR\\"|" ../configs/host.yaml\n'
            '    sed -i "s|^SSH_PORT:.*$|SSH_PORT: \\"$SSH_PORT\\"|" ../configs/host.yaml\n}\n'
            'VENDOR="$VENDOR"\nmodify_config\ncd .. && python3 run.py\n',
            "operation/test_eval.sh": "#!/bin/bash\nexport top_p=1.0\nsh eval.sh\n",
            "operation/eval.sh": "#!/bin/bash\ntop_p=${TOP_P:-1}\npython3 ev.py --top_p ${top_p}\n",
            # the true one beside them: nothing expands it, the code read it once
            "operation/stale.sh": "#!/bin/bash\nexport SSH_PORT=22\npython3 run.py\n",
        },
    )
    _commit(root, "scripts")
    found = _codes(
        _findings(
            capsys,
            root / "operation/helper/main.sh",
            root / "operation/test_eval.sh",
            root / "operation/stale.sh",
        ),
        "PK203",
    )
    assert [(Path(f["path"]).name, f["line"]) for f in found] == [("stale.sh", 2)]


@pytest.mark.skipif(GIT is None, reason="git is needed for the history")
def test_pk203_an_unread_package_or_another_directorys_history_decides_nothing(tmp_path, capsys):
    # mlcommons/training retired_benchmarks/transformer/tensorflow/run_and_time.sh: the script installs
    # mlperf_compliance (which reads COMPLIANCE_FILE at import), and the old read is another benchmark's;
    # aws-neuron/neuronx-nemo-megatron: the program imports the checkout's own sub-project nemo/nemo/
    root = tmp_path / "training"
    _history(
        root,
        {
            "mixture_of_experts/logger.py": 'import os\nF = os.getenv("COMPLIANCE_FILE")\n',
            "transformer/old_log.py": 'import os\nG = os.getenv("GONE_SWITCH")\n',
            "nemo/examples/old.py": 'import os\nB = os.getenv("NEMO_SWITCH")\n',
            "skills/old.py": 'import os\nC = os.getenv("SKILL_SWITCH")\n',
        },
    )
    _tree(
        root,
        {
            "transformer/process_data.py": "import argparse\nfrom mlperf_compliance import mlperf_log\n"
            "p = argparse.ArgumentParser()\np.add_argument('--data_dir')\np.parse_args()\n",
            "transformer/run_and_time.sh": '#!/bin/bash\nset -e\nexport COMPLIANCE_FILE="/tmp/c_${SEED}.log"\n'
            "export MLPERF_COMPLIANCE_PKG=${MLPERF_COMPLIANCE_PKG:-mlperf_compliance}\n"
            "pip3 install ${MLPERF_COMPLIANCE_PKG}\npython3 process_data.py --data_dir /data\n",
            "transformer/other.sh": "#!/bin/bash\nexport COMPLIANCE_FILE=/tmp/c.log\nexport GONE_SWITCH=1\n"
            "python3 process_nothing.py\n",
            "transformer/process_nothing.py": "import argparse\np = argparse.ArgumentParser()\np.parse_args()\n",
            "nemo/setup.py": "from setuptools import setup, find_packages\n"
            "setup(name='nemo', packages=find_packages())\n",
            "nemo/nemo/__init__.py": "",
            "nemo/nemo/core.py": "import os\n",
            "nemo/examples/train.py": "from nemo.core import os\nimport argparse\n"
            "argparse.ArgumentParser().parse_args()\n",
            "nemo/examples/train.sh": "#!/bin/bash\nexport NEMO_SWITCH=1\npython3 train.py\n",
            # NVIDIA/NeMo-Skills: nemo_skills/mcp is a subpackage, not the `mcp` library the program imports
            "skills/__init__.py": "",
            "skills/mcp/__init__.py": "",
            "skills/run.py": "import argparse\nimport mcp\nargparse.ArgumentParser().parse_args()\n",
            "skills/run.sh": "#!/bin/bash\nexport SKILL_SWITCH=1\npython3 run.py\n",
        },
    )
    _commit(root, "scripts")
    found = _codes(
        _findings(
            capsys,
            root / "transformer/run_and_time.sh",
            root / "transformer/other.sh",
            root / "nemo/examples/train.sh",
            root / "skills/run.sh",
        ),
        "PK203",
    )
    # COMPLIANCE_FILE in other.sh: read only in another top-level directory's history; GONE_SWITCH:
    # read in this one's, and nothing installed or unread: the true finding stays
    # NEMO_SWITCH: the sub-project's package nemo/nemo is on the import path and read (packlint.codebase.subprojects),
    # none of it reads the name, and the program's own directory's history did: the finding stands
    got = sorted((Path(f["path"]).name, f["message"].split(" ")[0]) for f in found)
    assert got == [("other.sh", "GONE_SWITCH"), ("run.sh", "SKILL_SWITCH"), ("train.sh", "NEMO_SWITCH")]


# ------------------------------------------------------------------------------------------ PK601, PK602


def test_pk601_a_file_under_an_earlier_commands_output_dir_is_made_at_run_time(tmp_path, capsys):
    # OFA-Sys/OFA run_scripts/caption/evaluate_caption.sh: evaluate.py writes {results_path}/test_predict.json,
    # then coco_eval.py scores it
    root = _tree(
        tmp_path,
        {
            "run_scripts/caption/evaluate_caption.sh": "#!/usr/bin/env bash\nuser_dir=../../ofa_module\n"
            "result_path=../../results/caption\nselected_cols=1,4,2\nsplit='test'\n"
            "python3 ../../evaluate.py \\\n    ${data} \\\n    --path=${path} \\\n    --user-dir=${user_dir} \\\n"
            "    --task=caption \\\n    --batch-size=16 \\\n    --results-path=${result_path} \\\n"
            "    --beam=5\n\n"
            "python coco_eval.py ../../results/caption/test_predict.json ../../dataset/test_caption_coco_format.json\n",
            "run_scripts/caption/coco_eval.py": "import json, sys\nres = json.load(open(sys.argv[1]))\n",
            "evaluate.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('data', nargs='?')\n"
            "p.add_argument('--results-path')\np.parse_known_args()\n",
            "dataset/test_caption_coco_format.json": "{}\n",
            # the true one beside it: the deepspeed JSON nobody writes
            "run_scripts/caption/train.sh": "#!/usr/bin/env bash\nmkdir -p ../../checkpoints\n"
            "deepspeed ../../train.py --output_dir ../../checkpoints --deepspeed ../../configs/ds_zero2.json\n",
            "run_scripts/caption/made.sh": "#!/usr/bin/env bash\nOUT=../../runs/ds\nmkdir -p $OUT\n"
            "python3 ../../make_ds.py -o $OUT\n"
            "deepspeed ../../train.py --output_dir ../../checkpoints --deepspeed ../../runs/ds/zero2.json\n",
            # mkdir makes the directory, not the file: still missing
            "run_scripts/caption/mkdir_only.sh": "#!/usr/bin/env bash\nmkdir -p ../../cfgs\n"
            "deepspeed ../../train.py --output_dir ../../checkpoints --deepspeed ../../cfgs/zero2.json\n",
            "train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--output_dir')\n"
            "p.add_argument('--deepspeed')\np.parse_args()\n",
        },
    )
    found = _findings(capsys, root / "run_scripts/caption")
    got = sorted((Path(f["path"]).name, f["code"]) for f in found if f["code"] in ("PK601", "PK602"))
    assert got == [("mkdir_only.sh", "PK601"), ("train.sh", "PK601")]


def test_pk602_a_json_data_set_given_to_the_checkouts_own_script_is_no_config(tmp_path, capsys):
    # microsoft/LoRA examples/NLG/create_datasets.sh: a JSON list converted by src/format_converting_dart.py
    root = _tree(
        tmp_path,
        {
            "examples/NLG/src/format_converting_dart.py": "import json, sys\n"
            "with open(sys.argv[1]) as f:\n    rows = json.load(f)\nfor r in rows:\n    print(r)\n",
            "examples/NLG/data/dart/dart-v1.1.1-full-dev.json": '[{"tripleset": [["a", "b", "c"]]}]\n',
            "examples/NLG/create_datasets.sh": '#!/bin/bash\necho "creating dart"\n'
            "python src/format_converting_dart.py data/dart/dart-v1.1.1-full-dev.json \\\n"
            "    data/dart/valid_formatted.jsonl\n",
            # under a config flag too: a program of no known stack loads its `--config` itself, and whether a list is
            # what it wants is its own business (the ninth holdout: reasoning-gym's eval.py iterates a JSON list)
            "examples/NLG/train.sh": "#!/bin/bash\n"
            "python src/format_converting_dart.py --config data/dart/dart-v1.1.1-full-dev.json\n",
        },
    )
    git(root, "init", "-q")
    found = _findings(capsys, root / "examples/NLG/create_datasets.sh")
    assert [f for f in found if f["code"] in ("PK601", "PK602")] == []
    found = _findings(capsys, root / "examples/NLG/train.sh")
    assert [f for f in found if f["code"] in ("PK601", "PK602")] == []


# ------------------------------------------------------------------------------------------------ PK310


def test_pk310_use_checkpoint_args_takes_the_sizes_from_the_checkpoint(tmp_path, capsys):
    # LLM360/crystalcoder-train finetune/Megatron-LM/rank_cmd_phase2.sh: `--load ${CKPT}_save
    # --use-checkpoint-args` and no --tensor-model-parallel-size (TP is the checkpoint's)
    head = "#!/bin/bash\nTP=$5\nCKPT=checkpoints/meg/phase2_tp${TP}_pp1_dev\n"
    model = (
        "--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 2048 --max-position-embeddings 2048"
    )
    root = _tree(
        tmp_path,
        {
            "ckpt_args.sh": head
            + "torchrun --nproc_per_node 8 pretrain_gpt.py --load ${CKPT}_save --use-checkpoint-args \\\n"
            "    --sequence-parallel --micro-batch-size 1 --global-batch-size 64 --train-iters 10 --lr 1e-4 --bf16\n",
            # the architecture comes from the checkpoint too: no head count is assumed from a default
            "ckpt_heads.sh": head
            + "torchrun --nproc_per_node 8 pretrain_gpt.py --load ${CKPT}_save --use-checkpoint-args \\\n"
            "    --tensor-model-parallel-size 8 --micro-batch-size 1 --global-batch-size 64 --bf16\n",
            "no_ckpt_args.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py "
            + model
            + " \\\n    --sequence-parallel --micro-batch-size 1 --global-batch-size 64 --train-iters 10 \\\n"
            "    --lr 1e-4 --bf16\n",
        },
    )
    found = _findings(capsys, root / "ckpt_args.sh", root / "ckpt_heads.sh", root / "no_ckpt_args.sh")
    loud = sorted(
        (Path(f["path"]).name, f["code"])
        for f in found
        if f["severity"] in ("error", "warning") and f["code"][2] == "3"
    )
    assert loud == [("no_ckpt_args.sh", "PK310")]
