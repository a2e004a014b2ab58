"""Mechanisms behind false findings the fourth holdout (h-holdout-g, h-holdout-h: repositories nobody here had
used) found, each in the shape of the repository it stands for, with the true finding of the same shape kept."""

from __future__ import annotations

from pathlib import Path

from check_helpers import check_findings as _findings
from check_helpers import write_tree as _tree


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


DEBERTA_RUN = """import argparse


class LoadTaskAction(argparse.Action):
    def __call__(self, parser, args, values, option_string=None):
        setattr(args, self.dest, values)
        task = get_task(values)
        group = parser.add_argument_group(title="Task")
        task.add_arguments(group)


class SplitAction(argparse.Action):
    def __call__(self, parser, args, values, option_string=None):
        setattr(args, self.dest, values.split(","))


def get_task(name):
    return None


p = argparse.ArgumentParser()
p.add_argument("--task_name", action=@ACTION@)
p.add_argument("--model_config")
p.parse_known_args()
p.parse_args()
"""


def test_an_action_that_adds_flags_during_the_parse_opens_the_schema(tmp_path, capsys):
    """microsoft/DeBERTa apps/run.py: `--task_name`'s LoadTaskAction calls the task's add_arguments while the command
    line is parsed, and run.py parses twice: the task's flags (--max_ngram, ...) are accepted (17 false PK201). An
    Action that only stores a value changes nothing: the flag stays PK201."""
    for action, want in (("LoadTaskAction", []), ("SplitAction", ["--max_ngram"])):
        root = _tree(
            tmp_path / action,
            {
                ".git/HEAD": "ref: refs/heads/main\n",
                "DeBERTa/apps/run.py": DEBERTA_RUN.replace("@ACTION@", action),
                "experiments/mlm.sh": "#!/bin/bash\npython DeBERTa/apps/run.py --model_config c.json --task_name MLM --max_ngram 3\n",
            },
        )
        found = _findings(capsys, root / "experiments" / "mlm.sh")
        assert [f["message"].split()[0] for f in found if f["code"] == "PK201"] == want, action


TRIME_TRAIN = """import argparse

from tasks import TASKS

p = argparse.ArgumentParser()
p.add_argument("--task", default="translation")
p.add_argument("--lr", type=float)
known, _ = p.parse_known_args()
TASKS[known.task].add_args(p)
args = p.parse_args()
"""
TRIME_TASKS = """import importlib

TASKS = {name: importlib.import_module("tasks." + name) for name in ("language_modeling",)}
"""


def test_an_open_parser_may_take_a_stray_word_as_a_positional(tmp_path, capsys):
    """princeton-nlp/TRIME (vendored fairseq): `python train.py --task language_modeling data-bin/wikitext-103 ...`:
    the task picked by a first parse_known_args registers the positional `data` (7 false PK202 '--task takes one value
    but is given 2 words'). A closed parser with no positional still rejects the stray word."""
    root = _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "train.py": TRIME_TRAIN,
            "tasks/__init__.py": TRIME_TASKS,
            "closed.py": "import argparse\np = argparse.ArgumentParser()\np.add_argument('--task')\np.parse_args()\n",
            "train_scripts/wiki103.sh": "#!/bin/bash\npython train.py --task language_modeling data-bin/wikitext-103 --lr 0.1\n"
            "python closed.py --task language_modeling data-bin/wikitext-103\n",
        },
    )
    found = _findings(capsys, root / "train_scripts" / "wiki103.sh")
    assert [(f["code"], f["line"]) for f in found if f["code"] == "PK202"] == [("PK202", 3)]


def test_one_defect_found_in_two_variants_with_different_premises_is_one_finding():
    """OpsAgent-RL (the fourth holdout): one PK201 printed twice at one line, an error from the checkout and a
    warning 'assuming $1 is unset' from another variant of the launch. It is one defect: reported once, as the
    strongest claim (the checkout's error) makes it."""
    from packlint import evidence
    from packlint.engine_script import group_findings
    from packlint.findings import Finding, Location

    loc = Location("run.sh", 3, 5, 3, 14)
    base = "--lr_rate is not a flag of the program: argparse exits"
    premises = ((evidence.ASSUMED, "$1 is unset: the script run without arguments"),)
    warn = Finding(
        "PK201", "unknown-flag", "warning", base + evidence.suffix(premises), loc, evidence="assumed", premises=premises
    )
    err = Finding("PK201", "unknown-flag", "error", base, loc)
    (one,) = group_findings([warn, err])
    assert (one.severity, one.message, one.evidence, one.premises) == ("error", base, "checkout", ())


def test_an_abbreviation_of_flags_of_different_releases_is_the_releases_to_decide(tmp_path, capsys):
    """feiyu12138/llava: `--half True` to a program whose ModelArguments has `halfpool` beside transformers'
    TrainingArguments: with transformers 5.x argparse takes it as --halfpool, with 4.x (half_precision_backend) it
    calls it ambiguous. The release is not known from the tree: undecided, not 'not a flag'. A word no flag starts
    with stays PK201."""
    root = _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "llava/train/train.py": "from dataclasses import dataclass, field\n"
            "from transformers import HfArgumentParser, TrainingArguments\n\n\n@dataclass\nclass ModelArguments:\n"
            "    halfpool: bool = field(default=False)\n\n\n"
            "HfArgumentParser((ModelArguments, TrainingArguments)).parse_args_into_dataclasses()\n",
            "scripts/pretrain.sh": "#!/bin/bash\ndeepspeed llava/train/train.py --output_dir o --half True --hlafpool True\n",
        },
    )
    found = _findings(capsys, root / "scripts" / "pretrain.sh")
    assert [f["message"].split()[0] for f in found if f["code"] == "PK201"] == ["--hlafpool"]


def test_a_file_word_of_a_program_the_checkout_lacks_is_the_machines(tmp_path, capsys):
    """huawei-noah/Pretrained-Language-Model NEZHA-TensorFlow/scripts/run_reading.sh: `python ../cmrc2018_evaluate.py
    ../data/cmrc/new_cmrc2018_dev.json ../output/p.json`: the evaluation script and the data set are fetched at set-up
    (the README says so); neither is in the checkout: an info naming it, not a warning. The same word given to a
    program of the checkout stays a warning."""
    root = _tree(
        tmp_path,
        {
            ".git/HEAD": "ref: refs/heads/main\n",
            "NEZHA/run_squad.py": _parser("--predict_file"),
            "NEZHA/scripts/run_reading.sh": "#!/bin/bash\npython ../cmrc2018_evaluate.py ../data/cmrc/dev.json ../output/p.json\n"
            "python ../run_squad.py ../data/cmrc/dev.json\n",
        },
    )
    found = [f for f in _findings(capsys, root / "NEZHA" / "scripts" / "run_reading.sh") if f["code"] == "PK601"]
    assert [(f["line"], f["severity"]) for f in found] == [(2, "info"), (3, "warning")], found


def test_a_program_that_edits_sys_argv_leaves_its_parsers_open(tmp_path, capsys):
    """TencentARC/ST-LLM stllm/train/train_hf.py: an argparse parser takes --cfg-path, the program deletes it from
    sys.argv and appends its YAML's keys, then HfArgumentParser parses: no parser sees the command line as the script
    wrote it (a false PK201 --cfg-path). A program that only reads sys.argv keeps its verdicts."""
    edit = "i = sys.argv.index('--cfg-path')\ndel sys.argv[i:i + 2]\n"
    for body, want in ((edit, []), ("", ["--cfg-path"])):
        root = _tree(
            tmp_path / str(bool(body)),
            {
                ".git/HEAD": "ref: refs/heads/main\n",
                "train_hf.py": "import sys\nfrom dataclasses import dataclass\nfrom transformers import HfArgumentParser\n\n\n"
                f"@dataclass\nclass DataArguments:\n    data_path: str = ''\n\n\n{body}"
                "HfArgumentParser(DataArguments).parse_args_into_dataclasses()\n",
                "train.sh": "#!/bin/bash\ndeepspeed train_hf.py --cfg-path cfg.yaml\n",
            },
        )
        found = _findings(capsys, root / "train.sh")
        assert [f["message"].split()[0] for f in found if f["code"] == "PK201"] == want, body


def test_a_stack_flag_followed_by_an_empty_expansion_is_not_bare(tmp_path, capsys):
    """Kwai-YuanQi/MM-RLHF scripts/swift.sh (a template): `swift rlhf ... --learning_rate $learning_rate ...` with
    the variable never set: the word vanished from an empty expansion, whether a value was meant is the caller's (3
    false PK207 errors 'given no value'). A flag written bare stays an error."""
    script = tmp_path / "swift.sh"
    (tmp_path / ".git").mkdir()
    script.write_text(
        "#!/bin/bash\nswift rlhf --rlhf_type dpo --model m --learning_rate $learning_rate --output_dir o\n"
        "swift rlhf --rlhf_type dpo --model m --learning_rate --output_dir o\n"
    )
    found = [f for f in _findings(capsys, script) if f["code"] == "PK207"]
    assert [(f["line"], f["severity"]) for f in found] == [(3, "error")]


def test_the_tree_version_search_reaches_a_checkout_root_nine_folders_up(tmp_path):
    """BradleyWang0416/LLaMA-Factory: YAMLs nine folders below the checkout root that holds the fork's
    src/llamafactory: the search for the stack's copy and version stopped after eight folders (4 false PK207)."""
    from packlint.configs.versions import _roots

    deep = tmp_path.joinpath(*[f"d{i}" for i in range(9)])
    deep.mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    assert _roots(str(deep))[-1] == str(tmp_path)
