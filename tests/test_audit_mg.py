"""Mechanisms behind false findings of the h-audit-mg precision audit (issue 26; docs/accuracy.md, the
section "Issue 26, Megatron/DeepSpeed/multimodal half (h-audit-mg)"), each in the shape the real
repository uses."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from packlint.cli import main


def _check_json(capsys, *argv) -> list[dict]:
    capsys.readouterr()
    main(["check", "--isolated", "--format", "json", "--exit-zero", *argv])
    return json.loads(capsys.readouterr().out)["findings"]


# LLaVA-style HF Trainer program (NVlabs/Eagle `Eagle/train.py`): HfArgumentParser over its dataclasses
_HF_TRAIN = """\
from dataclasses import dataclass, field
from typing import Optional

import transformers


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default="facebook/opt-125m")
    vision_tower: Optional[str] = field(default=None)


@dataclass
class DataArguments:
    data_path: str = field(default=None)
    image_folder: Optional[str] = field(default=None)


@dataclass
class TrainingArguments(transformers.TrainingArguments):
    model_max_length: int = field(default=512)


def train():
    parser = transformers.HfArgumentParser((ModelArguments, DataArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()


if __name__ == "__main__":
    train()
"""

_ZERO2 = {
    "fp16": {"enabled": "auto"},
    "bf16": {"enabled": "auto"},
    "train_micro_batch_size_per_gpu": "auto",
    "train_batch_size": "auto",
    "gradient_accumulation_steps": "auto",
    "zero_optimization": {"stage": 2, "overlap_comm": False, "contiguous_gradients": True},
}


def test_a_deepspeed_config_checked_on_its_own_is_not_judged_by_a_train_py_of_the_checkout(
    tmp_path, monkeypatch, capsys
):
    """NVlabs/Eagle: `Eagle/scripts/zero2.json` is named by the scripts as `./scripts/zero2.json` (run from
    `Eagle/`), so a directory check also checks it on its own, as `deepspeed train.py --deepspeed
    --deepspeed_config zero2.json`. That `train.py` is a stand-in for the user's program; the checkout's
    own `Eagle/train.py` (an HF Trainer program, whose `--deepspeed` takes a path) must not judge the
    flags packlint wrote itself (it did: PK202 `--deepspeed needs a value`, PK201 `--deepspeed_config`)."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "Eagle-repo" / "Eagle"
    (root / "scripts").mkdir(parents=True)
    (tmp_path / "Eagle-repo" / ".git").mkdir()  # the checkout's root (a VCS marker)
    monkeypatch.chdir(tmp_path)
    (root / "setup.py").write_text("from setuptools import setup\n\nsetup(name='eagle')\n")
    (root / "train.py").write_text(_HF_TRAIN)
    (root / "scripts" / "zero2.json").write_text(json.dumps(_ZERO2, indent=4))
    (root / "scripts" / "finetune.sh").write_text(
        "#!/bin/bash\n"
        "deepspeed train.py \\\n"
        "    --deepspeed ./scripts/zero2.json \\\n"
        "    --model_name_or_path lmsys/vicuna-7b-v1.5 \\\n"
        "    --bf16 True \\\n"
        "    --output_dir ./checkpoints/x \\\n"
        "    --per_device_train_batch_size 4\n"
    )
    found = _check_json(capsys, str(tmp_path / "Eagle-repo"))
    judged = [f for f in found if f["path"].endswith("zero2.json") and f["severity"] in ("error", "warning")]
    assert judged == []
    assert not [f for f in found if f["code"] in ("PK201", "PK202")]
    # the script's own launch is still checked against the same program: a misspelt flag is found
    script = root / "scripts" / "finetune.sh"
    script.write_text(script.read_text().replace("--bf16 True", "--bf16 True --per_device_batch_size 2"))
    found = _check_json(capsys, str(script))
    assert [f["code"] for f in found if f["severity"] != "info"] == ["PK201"]


def test_a_deepspeed_config_on_its_own_still_gets_its_config_checks(tmp_path, monkeypatch, capsys):
    """The stand-in reads no code, and the checks of the file itself still run: a broken JSON is one
    error at the file (the made-up launch is no excuse to say nothing)."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "train.py").write_text(_HF_TRAIN)
    bad = tmp_path / "ds_config.json"
    bad.write_text('{\n  "train_micro_batch_size_per_gpu": 4,\n  "zero_optimization": {"stage": 2,}\n}\n')
    found = _check_json(capsys, str(bad))
    assert [f["severity"] for f in found if f["path"].endswith("ds_config.json")] == ["error"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_lightning_variables_are_a_runtime_s_not_dead(tmp_path, monkeypatch, capsys):
    """IDEA-CCNL/Fengshenbang-LM: the Lightning scripts `export PL_DEEPSPEED_CONFIG_PATH=$config_json` and
    run `--strategy deepspeed_stage_2`: PyTorch Lightning's DeepSpeedStrategy reads that variable
    (DEEPSPEED_ENV_VAR). The repository's own strategy module once named it too, so the history made it
    a PK203 warning ("no module reads it any more"). Lightning's PL_ variables are a runtime's, like
    WANDB_; a misspelt variable of the code's own is still found."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "fengshen"
    (repo / "strategies").mkdir(parents=True)

    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True, capture_output=True
        )

    git("init", "-q", ".")
    (repo / "strategies" / "megatron_deepspeed.py").write_text(
        'import os\n\n\nclass DeepSpeedStrategy:\n    DEEPSPEED_ENV_VAR = "PL_DEEPSPEED_CONFIG_PATH"\n\n'
        '    def config(self):\n        return os.environ.get("PL_DEEPSPEED_CONFIG_PATH")\n'
    )
    (repo / "finetune.py").write_text(
        "import argparse\nimport os\n\nimport pytorch_lightning as pl\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--strategy', default='ddp')\n"
        "args = parser.parse_args()\nTAG = os.environ.get('FS_RUN_TAG')\n"
        "trainer = pl.Trainer(strategy=args.strategy)\n"
    )
    git("add", ".")
    git("commit", "-qm", "one")
    (repo / "strategies" / "megatron_deepspeed.py").unlink()
    git("commit", "-qam", "two")
    (repo / "run.sh").write_text(
        "#!/bin/bash\n"
        "config_json=./ds_config.json\n"
        "export PL_DEEPSPEED_CONFIG_PATH=$config_json\n"
        "export PL_GLOBAL_SEED=42\n"
        "export FS_RUN_TAGG=a\n"
        "python finetune.py --strategy deepspeed_stage_2\n"
    )
    found = _check_json(capsys, str(repo / "run.sh"))
    assert [(f["code"], f["line"]) for f in found if f["severity"] != "info"] == [("PK203", 5)]
    assert not [f for f in found if "PL_" in f["message"]]


def test_a_glob_is_the_files_it_matches_not_a_missing_file(tmp_path, monkeypatch, capsys):
    """Yuliang-Liu/Monkey's vendored CenterNet2 `dev/run_inference_tests.sh`: `CFG_LIST=(
    ./configs/quick_schedules/*inference_acc_test.yaml )`, then `--config-file "$cfg"` for each item. bash
    expands the pattern against the file system (an array item, a command argument, a `for` list, an
    unquoted expansion; never an assignment's value), so the value is the files it matches when the
    script runs, not the pattern: no "config file not found" (PK601 said so, twice). A plain path that
    is missing is still found, and `X=*.yaml` stays text until an unquoted `$X` is expanded."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "CenterNet2"
    (root / ".git").mkdir(parents=True)
    (root / "configs" / "quick_schedules").mkdir(parents=True)
    (root / "configs" / "quick_schedules" / "mask_rcnn_R_50_FPN_inference_acc_test.yaml").write_text("MODEL: {}\n")
    (root / "tools").mkdir()
    (root / "tools" / "train_net.py").write_text(
        "import argparse\n\np = argparse.ArgumentParser()\np.add_argument('--config-file', default='')\n"
        "p.add_argument('--eval-only', action='store_true')\np.add_argument('--num-gpus', type=int, default=1)\n"
        "p.add_argument('opts', nargs=argparse.REMAINDER)\nargs = p.parse_args()\n"
    )
    (root / "dev").mkdir()
    script = root / "dev" / "run_inference_tests.sh"
    script.write_text(
        "#!/bin/bash -e\n"
        'BIN="python tools/train_net.py"\n'
        'CFG_LIST=( "${@:1}" )\n'
        "if [ ${#CFG_LIST[@]} -eq 0 ]; then\n"
        "  CFG_LIST=( ./configs/quick_schedules/*inference_acc_test.yaml )\n"
        "fi\n"
        'for cfg in "${CFG_LIST[@]}"; do\n'
        '    $BIN --eval-only --num-gpus 2 --config-file "$cfg" OUTPUT_DIR out\n'
        "done\n"
    )
    other = root / "dev" / "run_instant_tests.sh"
    other.write_text(
        "#!/bin/bash\n"
        'BIN="python tools/train_net.py"\n'
        "ONE=./configs/quick_schedules/*inference_acc_test.yaml\n"
        "$BIN --config-file $ONE\n"
        "$BIN --config-file ./configs/quick_schedules/missing_test.yaml\n"
    )
    monkeypatch.chdir(root)
    found = _check_json(capsys, str(script), str(other))
    assert [(f["path"].split("/")[-1], f["code"], f["line"]) for f in found if f["severity"] != "info"] == [
        ("run_instant_tests.sh", "PK601", 5)
    ]


def test_a_file_the_checkout_ignores_is_made_at_set_up(tmp_path, monkeypatch, capsys):
    """OpenGVLab/InternVideo's `tools/data/gym/download_videos.sh` runs `python download_ytdl.py
    ../../../data/gym/annotations/annotation.json ...`; `download_annotations.sh` beside it fetches that
    file, and the project's `.gitignore` ignores `/data`: no checkout ever holds it. That is the
    machine's (made at set-up), so PK601 is at most an info naming the .gitignore; a missing file that
    nothing ignores stays a warning."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "Open-Set-Action-Recognition"
    (root / ".git").mkdir(parents=True)
    (root / ".gitignore").write_text("*.pyc\n/data\nwork_dirs/\n")
    gym = root / "tools" / "data" / "gym"
    gym.mkdir(parents=True)
    (gym / "download_ytdl.py").write_text(
        "import argparse\n\np = argparse.ArgumentParser()\np.add_argument('input')\np.add_argument('output_dir')\n"
        "args = p.parse_args()\n"
    )
    script = gym / "download_videos.sh"
    script.write_text(
        "#!/usr/bin/env bash\n"
        'DATA_DIR="../../../data/gym"\n'
        'ANNO_DIR="../../../data/gym/annotations"\n'
        "python download_ytdl.py ${ANNO_DIR}/annotation.json ${DATA_DIR}/videos\n"
        "python download_ytdl.py ../../../configs/gym.json ${DATA_DIR}/videos\n"
    )
    monkeypatch.chdir(tmp_path)
    found = [f for f in _check_json(capsys, str(script)) if f["code"] == "PK601"]
    assert [(f["line"], f["severity"]) for f in found] == [(4, "info"), (5, "warning")]
    assert ".gitignore ignores" in json.dumps(found[0]["premises"])


def test_a_repeated_flag_s_value_is_what_argparse_gives_it(tmp_path, monkeypatch, capsys):
    """OpenGVLab/InternVideo's VideoMAE `vis.sh`: `--mask_type t_consist` twice, the second followed by
    the three positional arguments `run_mae_vis.py` defines. argparse gives --mask_type `t_consist` both
    times: no repeat with different values (PK103 compared 't_consist' with 't_consist IMG OUT MODEL').
    Two different values are still a repeat."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "VideoMAE"
    (root / ".git").mkdir(parents=True)
    (root / "run_mae_vis.py").write_text(
        "import argparse\n\n\ndef get_args():\n    parser = argparse.ArgumentParser('MAE visualization')\n"
        "    parser.add_argument('img_path', type=str)\n    parser.add_argument('save_path', type=str)\n"
        "    parser.add_argument('model_path', type=str)\n"
        "    parser.add_argument('--mask_type', default='random', choices=['random', 't_consist'], type=str)\n"
        "    parser.add_argument('--mask_ratio', default=0.75, type=float)\n"
        "    parser.add_argument('--decoder_depth', default=4, type=int)\n"
        "    return parser.parse_args()\n\n\nargs = get_args()\n"
    )
    script = root / "vis.sh"
    script.write_text(
        "OUTPUT_DIR='/data/out/vis'\nIMAGE_PATH='/data/k400/a.mp4'\nMODEL_PATH='/data/ckpt/checkpoint-2399.pth'\n"
        "python3 run_mae_vis.py \\\n"
        "    --mask_ratio 0.9 \\\n"
        "    --mask_type t_consist \\\n"
        "    --decoder_depth 4 \\\n"
        "    --mask_type t_consist \\\n"
        "    ${IMAGE_PATH} ${OUTPUT_DIR} ${MODEL_PATH}\n"
        "python3 run_mae_vis.py --decoder_depth 4 --decoder_depth 8 ${IMAGE_PATH} ${OUTPUT_DIR} ${MODEL_PATH}\n"
    )
    found = _check_json(capsys, str(script))
    assert [(f["code"], f["line"]) for f in found if f["severity"] != "info"] == [("PK103", 10)]
    # the values argparse gives, not the positionals after them
    assert "different values ('4', '8'); the last one wins, '8'" in found[-1]["message"]


def test_pathname_expansion_happens_where_bash_does_it(tmp_path):
    """Where bash expands a pattern against the file system and where it leaves the text: a command's
    argument, an unquoted expansion in one, and an array item are the files they match (unknown); an
    assignment's value (plain or exported), a quoted word, an escaped `*` and `let`'s arithmetic keep
    their text. A bracket list alone (`[0,1]`, Hydra's) is kept as text (documented limit)."""
    from packlint.api import inspect_script

    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\n"
        "X=data/*.json\n"
        "export Y=*.yaml\n"
        "let N=2*3\n"
        "A=( shards/part_?.bin )\n"
        'torchrun --nproc_per_node $N train.py --data $X --other "$Y" --quoted "a*b" --lit c*d \\\n'
        "    --esc a\\*b --shards ${A[0]} --devices=[0,1] --prefix $X/x\n"
    )
    flags = inspect_script(str(script))["launches"][0]["variants"][0]["flags"]

    def value(name):
        (occ,) = flags[name]
        return occ.get("value", "<unknown>")

    assert value("--other") == "*.yaml"
    assert value("--quoted") == "a*b"
    assert value("--esc") == "a*b"
    assert value("--devices") == "[0,1]"
    for name in ("--data", "--lit", "--shards", "--prefix"):
        assert value(name) == "<unknown>", name
        assert "pathname expansion" in str(flags[name][0].get("unknown")), name
    assert (
        inspect_script(str(script))["launches"][0]["variants"][0]["launcher_flags"]["--nproc_per_node"][0]["value"]
        == "6"
    )


def test_a_relative_program_path_keeps_its_directory(tmp_path, monkeypatch, capsys):
    """salesforce/LAVIS vendors UniFormer's `exp/upernet_global_small/run.sh`, which runs mmseg's
    `tools/train.py` (of UniFormer's own checkout: not in LAVIS). The longest-suffix search dropped `tools/`
    and took LAVIS's top-level `train.py`, whose parser has no `--launcher` nor `--work-dir` (two PK201
    errors). A relative path keeps its directory; the same program under `tools/` is still found, and a
    container path still maps by its tail."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "LAVIS"
    (root / ".git").mkdir(parents=True)
    (root / "train.py").write_text(
        "import argparse\n\np = argparse.ArgumentParser()\np.add_argument('--cfg-path', required=True)\n"
        "p.add_argument('--options', nargs='+')\nargs = p.parse_args()\n"
    )
    exp = root / "lavis" / "common" / "annotator" / "uniformer" / "exp" / "upernet_global_small"
    exp.mkdir(parents=True)
    (exp / "config.py").write_text("model = dict()\n")
    script = exp / "run.sh"
    script.write_text(
        "#!/usr/bin/env bash\n"
        "work_path=$(dirname $0)\n"
        'PYTHONPATH="$(dirname $0)/../../":$PYTHONPATH \\\n'
        "python -m torch.distributed.launch --nproc_per_node=8 \\\n"
        "    tools/train.py ${work_path}/config.py \\\n"
        "    --launcher pytorch \\\n"
        "    --work-dir ${work_path}/ckpt\n"
        "python /workspace/LAVIS/train.py --cfg-path x.yaml --launcher pytorch\n"
    )
    found = _check_json(capsys, str(script))
    assert [(f["code"], f["line"]) for f in found if f["severity"] != "info"] == [("PK201", 8)]
    # the same relative program where it is: checked against it
    (root / "tools").mkdir()
    (root / "tools" / "train.py").write_text(
        "import argparse\n\np = argparse.ArgumentParser()\np.add_argument('config')\n"
        "p.add_argument('--launcher', default='none')\np.add_argument('--work-dir')\nargs = p.parse_args()\n"
    )
    script.write_text(script.read_text().replace("--work-dir", "--work-dirs"))
    found = _check_json(capsys, str(script))
    assert [(f["code"], f["line"]) for f in found if f["severity"] != "info"] == [("PK201", 7), ("PK201", 8)]


_DEIT_MAIN = """\
import argparse


def get_args_parser():
    parser = argparse.ArgumentParser('DeiT training and evaluation script', add_help=False)
    parser.add_argument('--batch-size', default=64, type=int)
    parser.add_argument('--epochs', default=300, type=int)
    parser.add_argument('--model', default='deit_base_patch16_224', type=str, metavar='MODEL')
    parser.add_argument('--drop-path', type=float, default=0.1, metavar='PCT')
    parser.add_argument('--lr', type=float, default=5e-4, metavar='LR')
    parser.add_argument('--data-path', default='/datasets01/imagenet_full_size/061417/', type=str)
    parser.add_argument('--output_dir', default='')
    parser.add_argument('--dist-eval', action='store_true', default=False)
    return parser


def main(args):
    pass


if __name__ == '__main__':
    parser = argparse.ArgumentParser('DeiT training and evaluation script', parents=[get_args_parser()])
    args = parser.parse_args()
    main(args)
"""


def test_a_parser_made_with_parents_has_their_flags(tmp_path, monkeypatch, capsys):
    """Sense-X/UniFormer's `image_classification/main.py` (DeiT's): `ArgumentParser(...,
    parents=[get_args_parser()])`. argparse copies the parent's arguments into the parser, so every flag of
    the 121 `exp/*/run.sh` scripts is defined (157 PK201 errors said none was: the reader saw a parser with
    `-h` only). A flag no parser defines is still found; an `--epoch` abbreviation of `--epochs` is fine."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "UniFormer" / "image_classification"
    (tmp_path / "UniFormer" / ".git").mkdir(parents=True)
    (root / "exp" / "uniformer_base").mkdir(parents=True)
    (root / "main.py").write_text(_DEIT_MAIN)
    script = root / "exp" / "uniformer_base" / "run.sh"
    script.write_text(
        "work_path=$(dirname $0)\n"
        "PYTHONPATH=$PYTHONPATH:../../ \\\n"
        "python -m torch.distributed.launch --nproc_per_node=8 --use_env main.py \\\n"
        "    --data-path your_path_to_data \\\n"
        "    --model uniformer_base \\\n"
        "    --batch-size 128 \\\n"
        "    --drop-path 0.3 \\\n"
        "    --epoch 300 \\\n"
        "    --lr 4e-4 \\\n"
        "    --dist-eval \\\n"
        "    --output_dir ${work_path}/ckpt \\\n"
        "    --warmup-epoch 5 \\\n"
        "    2>&1 | tee -a ${work_path}/log.txt\n"
    )
    found = _check_json(capsys, str(script))
    assert [(f["code"], f["line"]) for f in found if f["severity"] != "info"] == [("PK201", 12)]
    assert "--warmup-epoch" in next(f["message"] for f in found if f["code"] == "PK201")


def test_a_python_lazyconfig_is_not_a_bridge_yaml(tmp_path, monkeypatch, capsys):
    """hustvl/Vim's `det/scripts/ft_vim_tiny_vimdet.sh`: detectron2's `tools/lazyconfig_train_net.py
    --config-file projects/ViTDet/configs/COCO/x.py train.output_dir=...`. A stack told by the flag alone
    (Megatron-Bridge's `--config-file`) reads a YAML; the `.py` LazyConfig was read as one and called
    invalid (PK602 "the file's top level is not a mapping"). A YAML given the same way is still read."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    det = tmp_path / "Vim" / "det"
    (tmp_path / "Vim" / ".git").mkdir(parents=True)
    cfgs = det / "projects" / "ViTDet" / "configs" / "COCO"
    cfgs.mkdir(parents=True)
    (cfgs / "cascade_mask_rcnn_vimdet_t_100ep_adj1.py").write_text(
        "from functools import partial\n\nfrom .cascade_mask_rcnn_vimdet_b_100ep import dataloader, train\n\n"
        "train.max_iter = 184375\n"
    )
    (cfgs / "broken.yaml").write_text("model: [unclosed\n")
    (det / "scripts").mkdir()
    script = det / "scripts" / "ft_vim_tiny_vimdet.sh"
    script.write_text(
        "#!/bin/bash\n"
        "DET_CONFIG_NAME=cascade_mask_rcnn_vimdet_t_100ep_adj1\n"
        "DET_CONFIG=projects/ViTDet/configs/COCO/$DET_CONFIG_NAME.py\n"
        "python3 tools/lazyconfig_train_net.py \\\n"
        ' --num-gpus 4 --num-machines 1 --machine-rank 0 --dist-url "tcp://127.13.44.12:60900" \\\n'
        " --config-file ${DET_CONFIG} \\\n"
        " train.output_dir=work_dirs/$DET_CONFIG_NAME dataloader.train.num_workers=128\n"
        "python3 tools/run.py --config-file projects/ViTDet/configs/COCO/broken.yaml\n"
    )
    monkeypatch.chdir(det)
    found = _check_json(capsys, str(script))
    assert [(f["code"], f["path"].rsplit("/", 1)[-1]) for f in found if f["severity"] != "info"] == [
        ("PK602", "broken.yaml")
    ]


_XLA_SPAWN = """\
import sys
from argparse import REMAINDER, ArgumentParser


def parse_args():
    parser = ArgumentParser(description="PyTorch TPU distributed training launch helper utility")
    parser.add_argument("--num_cores", type=int, default=1, help="Number of TPU cores to use (1 or 8).")
    parser.add_argument("training_script", type=str, help="The full path to the single TPU training program")
    parser.add_argument("training_script_args", nargs=REMAINDER)
    return parser.parse_args()


if __name__ == "__main__":
    args = parse_args()
"""


@pytest.mark.parametrize(
    "args",
    [
        "--num_cores 8 finetune_trainer.py --learning_rate 3e-5 --do_train --n_val 1000",
        "--num_cors 8 finetune_trainer.py --learning_rate 3e-5",
        "--tpu_cores 8 --num_cores 8 finetune_trainer.py --lr 1",
    ],
)
def test_a_remainder_positional_takes_the_options_after_it(tmp_path, capsys, args):
    """microsoft/LMOps `dpkd/.../seq2seq/*_tpu.sh`: `python xla_spawn.py --num_cores 8 finetune_trainer.py --flags`:
    xla_spawn.py's `training_script_args` (nargs=REMAINDER) takes every word from the script's name on, options
    included, so only the options before it are xla_spawn.py's (32 false PK201). argparse is the oracle."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "xla_spawn.py").write_text(_XLA_SPAWN)
    script = tmp_path / "run_tpu.sh"
    script.write_text(f"#!/bin/bash\npython xla_spawn.py {args}\n")
    real = subprocess.run(
        ["python3", str(tmp_path / "xla_spawn.py"), *args.split()], capture_output=True, text=True, timeout=60
    )
    rejected = set(real.stderr.split("unrecognized arguments:", 1)[1].split()) if real.returncode else set()
    reported = {f["message"].split()[0] for f in _check_json(capsys, "--no-cache", str(script)) if f["code"] == "PK201"}
    assert reported == rejected, (reported, real.stderr)


def test_an_option_with_an_unknown_glued_value_is_one_word_before_the_remainder(tmp_path, capsys):
    """NVIDIA/DeepLearningExamples Efficientdet `python -u -m bind_launch --nproc_per_node=${NUM_PROC} validate.py ...`
    with NUM_PROC=$1: whatever $1 is, `--nproc_per_node=...` is one option word, so the positionals (and the
    REMAINDER) start at validate.py as with a known value (11 false PK201). argparse is the oracle (with NUM_PROC=8)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "xla_spawn.py").write_text(_XLA_SPAWN)
    script = tmp_path / "validate.sh"
    script.write_text("#!/bin/bash\nN=$1\npython -u xla_spawn.py --num_cores=${N} validate.py /data --model d0 --amp\n")
    argv = ["--num_cores=8", "validate.py", "/data", "--model", "d0", "--amp"]
    real = subprocess.run(
        ["python3", str(tmp_path / "xla_spawn.py"), *argv], capture_output=True, text=True, timeout=60
    )
    assert real.returncode == 0, real.stderr
    assert [f for f in _check_json(capsys, "--no-cache", str(script)) if f["code"] == "PK201"] == []
    # an unknown word that is not an option's glued value still leaves where the positionals start unknown
    script.write_text("#!/bin/bash\npython -u xla_spawn.py $1 validate.py --model d0\n")
    assert [f for f in _check_json(capsys, "--no-cache", str(script)) if f["code"] == "PK201"] == []


_FINETRAINERS_ARGS = """\
import argparse
from enum import Enum


class ParallelBackendEnum(str, Enum):
    ACCELERATE = "accelerate"
    PTD = "ptd"


class Plain(Enum):
    A = "a"


parser = argparse.ArgumentParser()
parser.add_argument(
    "--parallel_backend",
    type=str,
    default=ParallelBackendEnum.ACCELERATE,
    choices=[ParallelBackendEnum.ACCELERATE, ParallelBackendEnum.PTD],
)
parser.add_argument("--plain", type=str, choices=[Plain.A])
parser.parse_args()
"""


@pytest.mark.parametrize("words", ["--parallel_backend ptd", "--parallel_backend PTD", "--parallel_backend accelerate"])
def test_choices_of_str_enum_members_are_their_values(tmp_path, capsys, words):
    """a-r-r-o-w/finetrainers args.py: `choices=[ParallelBackendEnum.ACCELERATE, ParallelBackendEnum.PTD]` with a
    `(str, Enum)`: argparse tests `'ptd' in choices`, which a str Enum member passes for its value (13 false
    PK202 said the choices were ACCELERATE, PTD). argparse is the oracle."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "train.py").write_text(_FINETRAINERS_ARGS)
    script = tmp_path / "train.sh"
    script.write_text(f"#!/bin/bash\ntorchrun --nproc_per_node 2 train.py {words}\n")
    real = subprocess.run(["python3", str(tmp_path / "train.py"), *words.split()], capture_output=True, timeout=60)
    reported = [f for f in _check_json(capsys, "--no-cache", str(script)) if f["code"] == "PK202"]
    assert bool(reported) == (real.returncode != 0), (reported, real.stderr)
    # a plain Enum's members equal no word (what they accept depends on `type`): no verdict
    script.write_text("#!/bin/bash\ntorchrun --nproc_per_node 2 train.py --plain a\n")
    assert [f for f in _check_json(capsys, "--no-cache", str(script)) if f["code"] == "PK202"] == []


_UNALIGNED = (
    "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --unaligned-linear \\\n"
    "  --num-layers 4 --hidden-size 1600 --num-attention-heads 25 --group-query-attention --num-query-groups 5 \\\n"
    "  --seq-length 1024 --max-position-embeddings 1024 --micro-batch-size 1\n"
)


def test_a_checkout_that_patches_transformer_config_decides_its_checks(tmp_path, capsys):
    """Ascend/MindSpeed tests_extend/system_tests/feature_tests/unaligned_{pp,tpsp}.sh: 25 heads and 5 query groups on
    TP 2 with `--unaligned-linear`. The checkout is the plugin that runs inside a Megatron-LM checkout and registers
    its own `TransformerConfig.__post_init__` (raising only without --unaligned-linear): upstream's divisibility
    checks are not the code that runs (2 false PK303, 2 false PK304). Without the patch they stand."""
    for patched in (True, False):
        root = tmp_path / ("plugin" if patched else "plain")
        (root / ".git").mkdir(parents=True)
        feature = root / "mindspeed" / "features_manager" / "megatron_basic.py"
        feature.parent.mkdir(parents=True)
        target = "megatron.core.transformer.transformer_config.TransformerConfig.__post_init__"
        feature.write_text(
            f"def register_patches(patch_manager, args):\n    patch_manager.register_patch(\n        '{target}',\n"
            "        transformer_config_post_init_wrapper)\n"
            if patched
            else "def register_patches(patch_manager, args):\n    pass\n"
        )
        script = root / "tests_extend" / "unaligned_tpsp.sh"
        script.parent.mkdir(parents=True)
        script.write_text(_UNALIGNED)
        codes = {f["code"] for f in _check_json(capsys, "--no-cache", str(script))}
        assert bool(codes & {"PK303", "PK304"}) == (not patched), (patched, codes)


def test_an_unknown_word_after_a_switch_may_give_the_sizes(tmp_path, capsys):
    """yuguo-Jack/GLM-Pretrain-in-Megatron-DeepSpeed scripts/finetune/grid-record.sh: `source $1` (a model file that
    sets GLM_ARGS with the tensor and pipeline sizes), then `... --fp16 ${GLM_ARGS} ...`. --fp16 is a switch, so the
    unknown word is no value of it and may hold any flag: TP and PP are unknown, not their defaults (a false PK302).
    Without the unknown word the defaults stand and PK302 fires (a warning: pretrain_gpt.py is not in the checkout, so
    its defaults and the calculator's assert are upstream Megatron-LM's, an assumption it names)."""
    (tmp_path / ".git").mkdir()
    script = tmp_path / "grid-record.sh"
    for head, extra, want in (("source $1 # model\n", " ${GLM_ARGS}", False), ("", "", True)):
        script.write_text(
            f"#!/bin/bash\n{head}"
            "deepspeed --num_nodes 1 --num_gpus 8 pretrain_gpt.py --num-layers 2 --hidden-size 64 --num-attention-heads 4 \\\n"
            f"  --seq-length 128 --max-position-embeddings 128 --micro-batch-size 8 --global-batch-size 8 --fp16{extra}\n"
        )
        errors = [
            f
            for f in _check_json(capsys, "--no-cache", str(script))
            if f["code"] == "PK302" and f["severity"] in ("error", "warning")
        ]
        assert bool(errors) == want, (extra, errors)
