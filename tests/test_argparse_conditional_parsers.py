"""Which parser parses the command line (issue 26): a second parser reached only under a condition packlint cannot
decide does not make another parser's flags errors.

sagerpascal/deepspeed-llm eval/gen_model_answers.py: argparse defines `--model-id` (required) and parses at the
top; `load_model(model_id)` imports finetune_conversation/quantized_inference.load_model inside the function,
which calls HfArgumentParser(ScriptArguments).parse_args_into_dataclasses() only when `model_id is None` (never:
the flag is required). A parser that surely parses keeps its errors."""

from __future__ import annotations

import json
from pathlib import Path

from packlint.cli import main

GEN_ANSWERS = '''\
"""Generate answers with local models.

Usage:
python3 gen_model_answer.py --model-path lmsys/fastchat-t5-3b-v1.0 --model-id fastchat-t5-3b-v1.0
"""
import argparse
import json


def load_model(model_id: str, load_only_tokenizer: bool = False):
    if model_id.startswith("/cluster/data"):
        from finetune_conversation.inference_finetuned import load_model
        return load_model(model_id, load_only_tokenizer)
    else:
        from finetune_conversation.quantized_inference import load_model
        return load_model(model_id, load_only_tokenizer)


def run_eval(model_id, question_file, answer_file):
    model, tokenizer = load_model(model_id)
    return model


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-path", type=str, required=True)
    parser.add_argument("--model-id", type=str, required=True, help="A custom name for the model.")
    parser.add_argument("--bench-name", type=str, default="mt_bench")
    parser.add_argument("--num-gpus-total", type=int, default=1)
    args = parser.parse_args()
    run_eval(model_id=args.model_id, question_file="q.jsonl", answer_file="a.jsonl")
'''

QUANTIZED = """\
from dataclasses import dataclass, field
from typing import Optional

from transformers import HfArgumentParser


@dataclass
class ScriptArguments:
    model_name: Optional[str] = field(default="meta-llama/Llama-2-7b-hf")
    adapter_path: Optional[str] = field(default=None)
    load_in_4bit: Optional[bool] = field(default=True)
    max_new_tokens: Optional[int] = field(default=256)


def load_model(model_id: str = None, load_only_tokenizer: bool = False):
    if model_id is not None:
        name = model_id
    else:
{PARSE}
        name = args.model_name
    return name, None
"""

FINETUNED = "def load_model(model_id, load_only_tokenizer=False):\n    return model_id, None\n"

PARSE_IN_BRANCH = (
    "        parser = HfArgumentParser(ScriptArguments)\n        args = parser.parse_args_into_dataclasses()[0]"
)


def _checkout(tmp_path: Path, quantized: str, script: str) -> Path:
    root = tmp_path / "deepspeed-llm"
    (root / ".git").mkdir(parents=True)
    (root / "eval").mkdir()
    (root / "eval" / "__init__.py").write_text("")
    (root / "eval" / "gen_model_answers.py").write_text(GEN_ANSWERS)
    (root / "finetune_conversation").mkdir()
    (root / "finetune_conversation" / "__init__.py").write_text("")
    (root / "finetune_conversation" / "quantized_inference.py").write_text(quantized)
    (root / "finetune_conversation" / "inference_finetuned.py").write_text(FINETUNED)
    path = root / "eval" / "01_gen_answers_HF.sh"
    path.write_text(f"#!/bin/bash\ncd ..\nexport PYTHONPATH=$PWD\n{script}\n")
    return path


def _found(capsys, path: Path) -> list[tuple[str, str, str]]:
    capsys.readouterr()
    main(["check", "--isolated", "--no-cache", "--format", "json", "--exit-zero", str(path)])
    findings = json.loads(capsys.readouterr().out)["findings"]
    return [(f["code"], f["severity"], f["message"].split()[0]) for f in findings if f["code"] in ("PK201", "PK202")]


LAUNCH = "python eval/gen_model_answers.py --model-path meta-llama/Llama-2-7b-chat-hf --model-id {mid}{extra}"


def test_a_helper_parser_in_a_branch_not_shown_taken_does_not_judge_the_flags(tmp_path, capsys):
    quantized = QUANTIZED.replace("{PARSE}", PARSE_IN_BRANCH)
    path = _checkout(tmp_path, quantized, LAUNCH.format(mid="llama-2-7b-chat", extra=""))
    assert _found(capsys, path) == []


def test_the_parser_that_surely_runs_keeps_its_errors(tmp_path, capsys):
    quantized = QUANTIZED.replace("{PARSE}", PARSE_IN_BRANCH)
    path = _checkout(tmp_path, quantized, LAUNCH.format(mid="x", extra=" --num-gpu-total 2 --bench-name mt"))
    assert _found(capsys, path) == [("PK201", "error", "--num-gpu-total")]


def test_a_helper_parser_that_surely_runs_rejects_the_entrys_flags(tmp_path, capsys):
    # the control: the helper is called, and parses the whole command line, on every run (no condition):
    # HfArgumentParser rejects --model-id as it does today
    quantized = QUANTIZED.replace(
        "    if model_id is not None:\n        name = model_id\n    else:\n{PARSE}\n        name = args.model_name\n",
        "    parser = HfArgumentParser(ScriptArguments)\n    args = parser.parse_args_into_dataclasses()[0]\n"
        "    name = model_id or args.model_name\n",
    )
    assert "parse_args_into_dataclasses" in quantized and "{PARSE}" not in quantized
    path = _checkout(tmp_path, quantized, LAUNCH.format(mid="x", extra=""))
    entry = (path.parent / "gen_model_answers.py").read_text()
    entry = entry.replace('    if model_id.startswith("/cluster/data"):', "    if False:")  # always the quantized one
    (path.parent / "gen_model_answers.py").write_text(entry)
    got = _found(capsys, path)
    assert ("PK201", "error", "--model-id") in got and ("PK201", "error", "--model-path") in got, got


def test_parsers_each_under_a_condition_leave_the_flags_undecided(tmp_path, capsys):
    # neither parser is shown to run: which one parses the command line is not known from the code
    entry = GEN_ANSWERS.replace(
        "    args = parser.parse_args()\n",
        "    if os.environ.get('USE_ARGPARSE'):\n        args = parser.parse_args()\n",
    ).replace("import json\n", "import json\nimport os\n")
    quantized = QUANTIZED.replace("{PARSE}", PARSE_IN_BRANCH)
    path = _checkout(tmp_path, quantized, LAUNCH.format(mid="x", extra=" --num-gpu-total 2"))
    (path.parent / "gen_model_answers.py").write_text(entry)
    assert _found(capsys, path) == []


OPEN_LM_PARAMS = """\
import argparse


def maybe_load_config(parser, args):
    config_parser = argparse.ArgumentParser()
    config_parser.add_argument("--config", type=str)
    cargs, unknown_args = config_parser.parse_known_args(args)
    if not cargs.config:
        return None
    return {"global_batch_size": 1}


def parse_args(args):
    parser = argparse.ArgumentParser()
    parser.add_argument("--global-batch-size", type=int, default=64)
    config = maybe_load_config(parser, args)
    if config is not None:
        args = argparse.Namespace(**config)
    else:
        args = parser.parse_args(args)
    return args
"""


def test_a_pre_parser_that_surely_runs_leaves_the_conditional_strict_parser_the_judge(tmp_path, capsys):
    """mlfoundations/open_lm open_lm/params.py: a `--config` pre-parser (parse_known_args, always run) and the full
    parser, run strictly unless a config is given. The pre-parser judges nothing: the strict parser still rejects
    `--batch-size` (scripts/train_example.sh, a true PK201 the conditional-parser rule had silenced)."""
    (tmp_path / ".git").mkdir()
    pkg = tmp_path / "open_lm"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "params.py").write_text(OPEN_LM_PARAMS)
    (pkg / "main.py").write_text(
        "import sys\nfrom open_lm.params import parse_args\n\n\nif __name__ == '__main__':\n    parse_args(sys.argv[1:])\n"
    )
    script = tmp_path / "scripts" / "train_example.sh"
    script.parent.mkdir()
    script.write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 8 -m open_lm.main --batch-size 8 --global-batch-size 64\n"
    )
    assert _found(capsys, script) == [("PK201", "error", "--batch-size")]
