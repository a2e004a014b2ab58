"""Mechanisms behind false findings the fifth holdout's HF half (h-holdout-i, h-holdout-j) found, each in the
shape of the repository it stands for, with the true finding of the same shape kept."""

from __future__ import annotations

from pathlib import Path

from check_helpers import check_findings as _findings
from check_helpers import write_tree as _tree

_FORK_MODEL_ARGS = """from dataclasses import dataclass, field
from typing import Optional


@dataclass
class ModelArguments:
    model_name_or_path: Optional[str] = field(default=None)
    sequence_parallel_size: int = field(default=1, metadata={"help": "Number of GPUs to process one sequence."})
    sequence_parallel_mode: str = field(default="zigzag-ring")
"""
_LF_YAML = """model_name_or_path: Qwen/Qwen2.5-7B
stage: sft
do_train: true
finetuning_type: full
dataset: alpaca_en_demo
template: qwen
cutoff_len: 2048
{key}: 8
output_dir: out
"""


def test_the_stack_a_launch_cds_into_is_the_one_that_reads_its_yaml(tmp_path, capsys):
    """Wyyyb/CriticCoT: a monorepo with a 360-LLaMA-Factory-sp fork beside its scripts; each launch does
    `cd /data/yubo/CriticCoT/360-LLaMA-Factory-sp/` (the author's machine) then `llamafactory-cli train
    ../darth_scripts/x.yaml`. The fork defines sequence_parallel_size: upstream was assumed (10 false PK207).
    The working directory's tail names the checkout's folder: its code is read, under a premise named in the
    evidence (a warning), and a relative `cd` needs none."""
    root = _tree(
        tmp_path / "CriticCoT",
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "360-LLaMA-Factory-sp/src/llamafactory/__init__.py": "",
            "360-LLaMA-Factory-sp/src/llamafactory/extras/env.py": 'VERSION = "0.9.1"\n',
            "360-LLaMA-Factory-sp/src/llamafactory/hparams/__init__.py": "",
            "360-LLaMA-Factory-sp/src/llamafactory/hparams/model_args.py": _FORK_MODEL_ARGS,
            "darth_scripts/sp.yaml": _LF_YAML.format(key="sequence_parallel_size"),
            "darth_scripts/typo.yaml": _LF_YAML.format(key="sequence_paralel_size"),
            "darth_scripts/sp.sh": "#!/bin/bash\ncd /data/yubo/CriticCoT/360-LLaMA-Factory-sp/\n"
            "FORCE_TORCHRUN=1 llamafactory-cli train ../darth_scripts/sp.yaml\n",
            "darth_scripts/hw.sh": "#!/bin/bash\ncd /mnt/hwfile/someone/360-LLaMA-Factory-sp\n"
            "FORCE_TORCHRUN=1 llamafactory-cli train ../darth_scripts/sp.yaml\n",
            "darth_scripts/rel.sh": "#!/bin/bash\ncd ../360-LLaMA-Factory-sp\n"
            "llamafactory-cli train ../darth_scripts/typo.yaml\n",
            "darth_scripts/typo.sh": "#!/bin/bash\ncd /data/yubo/CriticCoT/360-LLaMA-Factory-sp/\n"
            "llamafactory-cli train ../darth_scripts/typo.yaml\n",
            "darth_scripts/flags.sh": "#!/bin/bash\ncd /data/yubo/CriticCoT/360-LLaMA-Factory-sp/\n"
            "llamafactory-cli train --stage sft --model_name_or_path m --do_train --dataset d --template qwen "
            "--finetuning_type lora --output_dir o --sequence_parallel_size eight\n",
            "darth_scripts/after.sh": "#!/bin/bash\ncd ../360-LLaMA-Factory-sp && llamafactory-cli train "
            "../darth_scripts/sp.yaml && cd /elsewhere/other\n",
            "darth_scripts/own.sh": '#!/bin/bash\ncd "$(dirname "$0")/../360-LLaMA-Factory-sp" || exit\n'
            "llamafactory-cli train ../darth_scripts/sp.yaml\n",
        },
    )
    d = root / "darth_scripts"
    ok = [d / n for n in ("sp.sh", "hw.sh", "own.sh", "after.sh")]
    assert [f for f in _findings(capsys, *ok) if f["code"] == "PK207"] == []
    (typo,) = [f for f in _findings(capsys, d / "typo.sh") if f["code"] == "PK207"]
    assert typo["severity"] == "warning" and "llamafactory 0.9.1" in typo["message"]
    assert "did you mean sequence_parallel_size" in typo["message"]
    assert [p["because"] for p in typo["premises"]] == [
        "the launch runs in /data/yubo/CriticCoT/360-LLaMA-Factory-sp/ (the `cd` at line 2), taken to be the "
        "checkout's 360-LLaMA-Factory-sp/, the folder its path ends with"
    ]
    (value,) = [f for f in _findings(capsys, d / "flags.sh") if f["code"] in ("PK207", "PK208")]
    assert (value["code"], value["severity"], value["evidence"]) == ("PK208", "warning", "assumed")
    assert value["premises"] == typo["premises"]
    (rel,) = [f for f in _findings(capsys, d / "rel.sh") if f["code"] == "PK207"]
    assert rel["severity"] == "error" and rel["premises"] == [] and "llamafactory 0.9.1" in rel["message"]


def test_a_cd_to_a_place_the_checkout_does_not_hold_leaves_the_search_as_it_was(tmp_path):
    from packlint.conditions.functions.stack_config_workdir import resolve_cd

    root = tmp_path / "repo"
    (root / "lf").mkdir(parents=True)
    (root / "exp").mkdir()
    r, e = str(root), str(root / "exp")
    assert resolve_cd("/opt/LLaMA-Factory", e, r, 3) is None
    assert resolve_cd("$LF_HOME", e, r, 3) is None
    assert resolve_cd("../lf", e, r, 3) == (str(root / "lf"), None)
    assert resolve_cd(str(root / "lf"), e, r, 3) == (str(root / "lf"), None)
    mapped = resolve_cd("/home/me/repo/lf/", e, r, 7)
    assert mapped is not None and mapped[0] == str(root / "lf") and "the `cd` at line 7" in (mapped[1] or "")


_COUNT_PY = """import argparse
import yaml


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", type=str, required=True)
    parser.add_argument("--dataset", type=str, default=None)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    from llamafactory.data.template import TEMPLATES

    print(yaml.safe_load(open(args.config)), args.dataset, args.workers, TEMPLATES)


if __name__ == "__main__":
    main()
"""


def test_flags_after_a_llamafactory_yaml_are_the_reading_programs(tmp_path, capsys):
    """SachinKonan/LLaMA-Factory-AutoReviewer sbatch/count_tokens.sbatch: `python scripts/run_tokenization_and_
    count_overctx.py --config x.yaml --dataset d --workers 4`, the script's own argparse program, reads a
    LLaMA-Factory YAML: PK405 (LLaMA-Factory's read_args takes the rest as OmegaConf pairs) fired because of the
    YAML's keys (2 false errors). The program that reads the file decides: llamafactory-cli, and a program whose
    code reaches llamafactory, still fire."""
    root = _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "configs/x.yaml": _LF_YAML.format(key="neat_packing").replace(": 8\n", ": true\n"),
            "scripts/count.py": _COUNT_PY,
            "scripts/train_lf.py": "from llamafactory.train.tuner import run_exp\n\nif __name__ == '__main__':\n"
            "    run_exp()\n",
            "sbatch/count.sbatch": "#!/bin/bash\npython scripts/count.py \\\n    --config configs/x.yaml \\\n"
            "    --dataset d \\\n    --workers 4\n",
            "sbatch/cli.sh": "#!/bin/bash\nllamafactory-cli train configs/x.yaml --learning_rate 1e-5\n",
            "sbatch/own.sh": "#!/bin/bash\npython scripts/train_lf.py configs/x.yaml --learning_rate 1e-5\n",
        },
    )
    s = root / "sbatch"
    assert [f for f in _findings(capsys, s / "count.sbatch") if f["code"] == "PK405"] == []
    for script in ("cli.sh", "own.sh"):
        found = [f for f in _findings(capsys, s / script) if f["code"] == "PK405"]
        assert [(f["line"], f["message"].split()[0], f["severity"]) for f in found] == [
            (2, "--learning_rate", "error")
        ], script


_CONFIG_PARSER = """import argparse


class ConfigArgumentParser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        self.config_parser = argparse.ArgumentParser(add_help=False)
        self.config_parser.add_argument(
            "-c",
            "--config",
            default=None,
            metavar="FILE",
            help="where to load YAML configuration",
        )
        self.option_names = []
        super().__init__(
            *args,
            parents=[self.config_parser],
            formatter_class=argparse.RawDescriptionHelpFormatter,
            **kwargs,
        )

    def add_argument(self, *args, **kwargs):
        arg = super().add_argument(*args, **kwargs)
        self.option_names.append(arg.dest)
        return arg

    def parse_args(self, args=None):
        res, remaining_argv = self.config_parser.parse_known_args(args)
        return vars(super().parse_args(remaining_argv))


class OpenParser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        from some_lib import shared_parents

        super().__init__(*args, parents=shared_parents(), **kwargs)
        self.add_argument("--seed", type=int)
"""


def test_the_flags_an_argumentparser_subclass_adds_in_its_init_are_the_parsers(tmp_path, capsys):
    """NJU-LHRS/LHRS-Bot: `parser = ConfigArgumentParser()` (lhrs/CustomTrainer/utils/config_parser.py), whose
    __init__ passes `parents=[self.config_parser]` holding `-c/--config`: `-c` was "not a flag" (3 false PK201
    errors). Its __init__ is run on the parser: `-c` is defined, a misspelt flag is still one; a parent list
    packlint cannot read leaves the parser open (no verdict), never closed."""
    root = _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "lhrs/__init__.py": "",
            "lhrs/CustomTrainer/__init__.py": "",
            "lhrs/CustomTrainer/utils/__init__.py": "",
            "lhrs/CustomTrainer/utils/config_parser.py": _CONFIG_PARSER,
            "main_pretrain_stage1.py": "from lhrs.CustomTrainer.utils.config_parser import ConfigArgumentParser\n\n"
            "parser = ConfigArgumentParser()\nparser.add_argument('--batch-size', type=int)\n"
            "parser.add_argument('--use-checkpoint', action='store_true')\nconfig = parser.parse_args()\n",
            "main_open.py": "from lhrs.CustomTrainer.utils.config_parser import OpenParser\n\n"
            "parser = OpenParser()\nparser.add_argument('--batch-size', type=int)\nparser.parse_args()\n",
            "Config/multi_modal_stage1.yaml": "lr: 0.0001\n",
            "Script/train_stage1.sh": "SCRIPT_PATH=../main_pretrain_stage1.py\nCONFIG_PATH=../Config/multi_modal_stage1.yaml\n"
            "deepspeed \\\n    --num_node=1 \\\n    --num_gpus=8 \\\n    $SCRIPT_PATH \\\n    -c \\\n    $CONFIG_PATH \\\n"
            "    --batch-size 8 \\\n    --use-checkpoint\n",
            "Script/typo.sh": "deepspeed --num_gpus=8 ../main_pretrain_stage1.py --config x.yaml --bach-size 8\n",
            "Script/open.sh": "deepspeed --num_gpus=8 ../main_open.py -c x.yaml --seed 1 --anything 3\n",
        },
    )
    s = root / "Script"
    assert [f for f in _findings(capsys, s / "train_stage1.sh", s / "open.sh") if f["code"] == "PK201"] == []
    found = [f for f in _findings(capsys, s / "typo.sh") if f["code"] == "PK201"]
    assert [f["message"].split()[0] for f in found] == ["--bach-size"]


def test_pins_are_read_in_each_form_a_checkout_writes_them(tmp_path):
    """Ice-Moon-28/Mini-R1: pyproject.toml's `"trl (==0.15.0)"` (PEP 508's parenthesized form, Poetry 2's
    default) was not read, so the messages said the checkout does not say which trl. Each form a checkout pins
    in is read by packaging's PEP 508 parser; a range is no release; a lock decides what a range leaves open."""
    from packlint.configs.versions import pinned_in_tree

    def pin(name: str, files: dict[str, str], dist: str = "trl") -> tuple[str, str] | None:
        root = _tree(tmp_path / name, {".git/HEAD": "ref: refs/heads/main\n", **files})
        found = pinned_in_tree(dist, str(root))
        return None if found is None else (found[0], Path(found[1]).name)

    poetry2 = (
        '[project]\nname = "mini-r1"\ndependencies = [\n    "transformers (==4.48.1)",\n    "trl (==0.15.0)",\n]\n'
    )
    assert pin("poetry2", {"pyproject.toml": poetry2}) == ("0.15.0", "pyproject.toml")
    assert pin("poetry2b", {"pyproject.toml": poetry2}, "transformers") == ("4.48.1", "pyproject.toml")
    marker = '[project]\nname = "x"\ndependencies = ["trl[vllm] (==0.16.0) ; python_version >= \'3.10\'"]\n'
    assert pin("marker", {"pyproject.toml": marker}) == ("0.16.0", "pyproject.toml")
    assert pin("req", {"requirements.txt": "-e .\n# trl==9.9\nTRL==0.19.1  # pinned\n"}) == (
        "0.19.1",
        "requirements.txt",
    )
    setup = 'from setuptools import setup\nsetup(name="x", install_requires=["torch>=2", "trl==0.14.0"])\n'
    assert pin("setup", {"setup.py": setup}) == ("0.14.0", "setup.py")
    env = "name: x\ndependencies:\n  - python=3.10\n  - pip:\n    - trl==0.17.0\n"
    assert pin("env", {"environment.yml": env}) == ("0.17.0", "environment.yml")
    ranged = '[project]\nname = "x"\ndependencies = ["trl (>=0.15.0,<0.16.0)"]\n'
    assert pin("range", {"pyproject.toml": ranged}) is None
    assert pin("wild", {"requirements.txt": "trl==0.15.*\n"}) is None
    uv = 'version = 1\n[[package]]\nname = "trl"\nversion = "0.15.2"\nsource = { registry = "https://pypi.org/simple" }\n'
    assert pin("uv", {"pyproject.toml": ranged, "uv.lock": uv}) == ("0.15.2", "uv.lock")
    poetry_lock = (
        '[[package]]\nname = "trl"\nversion = "0.15.1"\ndescription = "x"\n\n[metadata]\nlock-version = "2.1"\n'
    )
    assert pin("plock", {"pyproject.toml": ranged, "poetry.lock": poetry_lock}) == ("0.15.1", "poetry.lock")
    poetry1 = (
        '[tool.poetry.dependencies]\npython = ">=3.9,<3.11"\ntransformers = "4.31.0"\ntrl = "0.4.7"\npeft = "^0.4"\n'
    )
    assert pin("poetry1", {"pyproject.toml": poetry1}) == ("0.4.7", "pyproject.toml")
    assert pin("poetry1b", {"pyproject.toml": poetry1}, "peft") is None
    poetry1t = '[tool.poetry.dependencies]\ntrl = { version = "==0.4.8", extras = ["x"] }\n'
    assert pin("poetry1t", {"pyproject.toml": poetry1t}) == ("0.4.8", "pyproject.toml")
    forked = uv + '[[package]]\nname = "trl"\nversion = "0.16.0"\n'
    assert pin("forked", {"uv.lock": forked}) is None
    assert pin("both", {"requirements.txt": "trl==0.15.0\n", "uv.lock": uv}) == ("0.15.0", "requirements.txt")


def test_pk202_points_at_the_occurrence_it_judged(tmp_path, capsys):
    """Wyyyb/CriticCoT train.sh: `--flash_attn` bare on line 12 and `--flash_attn fa2` on line 34 (argparse
    type=str): PK202 said the bare one needs a value but pointed at `fa2` (the last occurrence's value). It points
    at the bare flag; a rejected value is still pointed at itself."""
    root = _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "train.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--flash_attn', type=str)\n"
            "p.add_argument('--model')\np.add_argument('--epochs', type=int)\np.parse_args()\n",
            "run.sh": "python train.py \\\n    --flash_attn \\\n    --model m \\\n    --flash_attn fa2\n",
            "bad.sh": "python train.py --epochs 1 --model m \\\n    --epochs three\n",
            "first.sh": "python train.py --epochs three \\\n    --epochs 1\n",
        },
    )
    scripts = [root / n for n in ("run.sh", "bad.sh", "first.sh")]
    found = [f for f in _findings(capsys, *scripts) if f["code"] == "PK202"]
    got = sorted((Path(f["path"]).name, f["line"], f["column"], f["message"].split(":")[0]) for f in found)
    assert got == [
        ("bad.sh", 2, 14, "--epochs 'three' is not an integer"),
        ("first.sh", 1, 26, "--epochs 'three' is not an integer"),
        ("run.sh", 2, 5, "--flash_attn needs a value but none follows it"),
    ], got
