"""The transformers-program rules (PK530, PK531; catalogue rows 9 and 11) on the paths the fixtures do not
take: an unknown transformers (one info), values the program computes (silent), a class of the program's
own that shadows the library's (silent), and a cross-check of the collator against the real transformers."""

from __future__ import annotations

from pathlib import Path

import pytest

from packlint.api import inspect_script
from packlint.codebase import CodeOptions, CodeSession
from packlint.conditions.functions import hf_code
from packlint.engine import check_model
from packlint.rule_table import load_table

TABLE = load_table(use_cache=False)

TRAIN = """
from transformers import AutoModelForCausalLM, DataCollatorWithFlattening, HfArgumentParser, Trainer
from transformers import TrainingArguments

args, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B", attn_implementation=ATTN)
Trainer(model=model, args=args, data_collator=DataCollatorWithFlattening()).train()
"""


def check(tmp: Path, files: dict[str, str], script: str = "python train.py --output_dir out\n") -> list:
    for rel, text in files.items():
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
    (tmp / ".git").mkdir(exist_ok=True)
    path = tmp / "run.sh"
    data = ("#!/bin/bash\n" + script).encode()
    path.write_bytes(data)
    model = inspect_script(str(path), text=data, display_path=str(path))
    session = CodeSession(str(path), CodeOptions(use_cache=False))
    return [f for f in check_model(model, TABLE.rules, script_text=data, code=session.facts) if f.code in ("PK530", "PK531")]


def test_unknown_transformers_is_one_info(tmp_path, monkeypatch):
    monkeypatch.setattr(hf_code, "_transformers_dir", lambda ctx: None)
    monkeypatch.setattr("packlint.configs.versions.installed_version", lambda dist: None)
    found = check(tmp_path, {"train.py": TRAIN.replace("ATTN", "'sdpa'")})
    assert [(f.code, f.severity) for f in found] == [("PK530", "info")]
    assert "version is unknown here: if it is before 4.53.1" in found[0].message


def test_old_transformers_from_its_code(tmp_path):
    files = {"train.py": TRAIN.replace("ATTN", "'sdpa'"), "transformers/__init__.py": '__version__ = "4.53.0"\n',
             "transformers/masking_utils.py": "def create_causal_mask(*a, **k):\n    pass\n"}
    found = check(tmp_path, files)
    assert [(f.code, f.severity) for f in found] == [("PK530", "error")]
    assert "transformers 4.53.0 has no per-sample mask" in found[0].message


@pytest.mark.parametrize("attn", ["ATTN_FROM_ENV", "'flash_attention_2'", "'kernels-community/flash-attn3'"])
def test_computed_or_flash_attention_is_silent(tmp_path, attn):
    files = {"train.py": "import os\nATTN_FROM_ENV = os.environ['ATTN']\n" + TRAIN.replace("ATTN", attn),
             "transformers/__init__.py": '__version__ = "4.52.4"\n'}
    assert check(tmp_path, files) == []


def test_hidden_flag_keeps_the_attention_unknown(tmp_path):
    train = TRAIN.replace("ATTN", "model_args.attn_implementation").replace(
        "args, = HfArgumentParser(TrainingArguments)", "model_args, args = HfArgumentParser((M, TrainingArguments))"
    )
    train = "from dataclasses import dataclass\n\n@dataclass\nclass M:\n    attn_implementation: str = 'sdpa'\n" + train
    files = {"train.py": train, "transformers/__init__.py": '__version__ = "4.52.4"\n'}
    # the default (sdpa) decides when nothing else can give the flag ...
    assert [f.code for f in check(tmp_path, files)] == ["PK530"]
    # ... an unknown word that may hold --attn_implementation keeps it silent
    assert check(tmp_path, files, 'python train.py --output_dir out $(cat extra_args.txt)\n') == []
    # ... and the flag's word wins over the default
    assert check(tmp_path, files, "python train.py --attn_implementation flash_attention_2 --output_dir out\n") == []


def test_own_class_of_the_same_name_is_not_the_library_one(tmp_path):
    train = TRAIN.replace("ATTN", "'sdpa'").replace(
        "from transformers import AutoModelForCausalLM, DataCollatorWithFlattening,", "from transformers import AutoModelForCausalLM,"
    )
    train += "\n\nclass DataCollatorWithFlattening:\n    pass\n"
    files = {"train.py": train, "transformers/__init__.py": '__version__ = "4.52.4"\n'}
    assert check(tmp_path, files) == []


@pytest.mark.parametrize(
    "model,fires",
    [("xlm-roberta-base", True), ("sentence-transformers/all-mpnet-base-v2", True), ("camembert-base", True),
     ("BAAI/bge-m3", False), ("google-bert/bert-base-uncased", False), ("microsoft/deberta-v3-base", False)],
)
def test_roberta_family_from_the_name(tmp_path, model, fires):
    train = TRAIN.replace("AutoModelForCausalLM", "AutoModelForMaskedLM").replace("Qwen/Qwen2.5-0.5B", model)
    found = check(tmp_path, {"train.py": train.replace("ATTN", "'flash_attention_2'")})
    assert [f.code for f in found] == (["PK531"] if fires else [])


def test_esm_only_with_absolute_positions(tmp_path):
    train = TRAIN.replace("Qwen/Qwen2.5-0.5B", "ckpt").replace("ATTN", "'flash_attention_2'")
    rotary = '{"model_type": "esm", "position_embedding_type": "rotary"}'
    assert check(tmp_path, {"train.py": train, "ckpt/config.json": rotary}) == []
    (tmp_path / "ckpt/config.json").write_text('{"model_type": "esm", "position_embedding_type": "absolute"}')
    assert [f.code for f in check(tmp_path, {})] == ["PK531"]


def test_the_real_collator_numbers_positions_as_the_rule_says():
    """Cross-check against the installed transformers: the default collator starts every sample at 0 (what
    PK531 reports), position_ids_start=2 at 2; and its masking_utils has the packed-sequence detection
    that transformers_packed_masks() reads."""
    transformers = pytest.importorskip("transformers")
    import inspect

    from transformers import DataCollatorWithFlattening

    feats = [{"input_ids": [5, 6, 7]}, {"input_ids": [8, 9]}]
    assert DataCollatorWithFlattening(return_tensors="np")(feats)["position_ids"].tolist() == [[0, 1, 2, 0, 1]]
    if "position_ids_start" in inspect.signature(DataCollatorWithFlattening.__init__).parameters:
        batch = DataCollatorWithFlattening(return_tensors="np", position_ids_start=2)(feats)
        assert batch["position_ids"].tolist() == [[2, 3, 4, 2, 3]]
    import transformers.masking_utils as mu

    assert hasattr(mu, "find_packed_sequence_indices"), transformers.__version__


# ----------------------------------------------------------------------------------------------------------
# The rules about old releases (a bug fixed since) with the stack's version unknown: one info per launch
# that says what was assumed, never an error (docs/stack-rules.md "Versions").

OLD_RELEASE_RULES = ["PK403", "PK410", "PK420", "PK426", "PK452", "PK520"]
VERSION_FILES = ("__init__.py", "version.py", "env.py", "pyproject.toml", "version.txt", "package_info.py")


@pytest.mark.parametrize("code", OLD_RELEASE_RULES)
def test_old_release_rule_with_unknown_version_is_one_info(code, tmp_path):
    from test_rules_examples import run_example

    rule = next(r for r in TABLE.rules if r.code == code)
    bad = next(e for e in rule.examples if e.kind == "bad")
    kept = {k: v for k, v in (bad.code or {}).items() if not k.endswith(VERSION_FILES)}
    assert kept != (bad.code or {}) or code in ("PK420", "PK426"), "the bad example names its version"
    (tmp_path / ".git").mkdir()
    findings = run_example(type(bad)(bad.kind, bad.script, bad.env, bad.args, bad.title, kept), tmp_path)
    mine = [f for f in findings if f.code == code]
    assert [f.severity for f in mine] == ["info"], [(f.code, f.severity, f.message) for f in findings]
    assert "version is unknown here" in mine[0].message or "not at hand" in mine[0].message
    assert not [f for f in findings if f.code in OLD_RELEASE_RULES and f.severity != "info"]


@pytest.mark.parametrize("code", OLD_RELEASE_RULES)
def test_old_release_rule_with_known_version(code, tmp_path):
    """The bad example (an old version) is an error; the good one (a fixed version) says nothing."""
    from test_rules_examples import run_example

    rule = next(r for r in TABLE.rules if r.code == code)
    for ex in rule.examples:
        where = tmp_path / ex.kind
        where.mkdir()
        mine = [f.severity for f in run_example(ex, where) if f.code == code]
        assert mine == (["error"] if ex.kind == "bad" else []), (ex.kind, mine)


def test_match_group_reads_a_number_from_a_path():
    import re

    from packlint.conditions.functions.text import _compile, _f_match_group
    from packlint.conditions.tree import Unk

    class Node:
        static = _compile([None, "pad_seq_to_mult([0-9]+)_"])

    path = "/data/packed/meta-llama--Llama-3.1-8B_pad_seq_to_mult4_sft_3f9a/training_8192.idx.parquet"
    assert _f_match_group(None, Node, [path]) == "4"
    assert isinstance(_f_match_group(None, Node, ["/data/packs/train.idx.parquet"]), Unk)
    assert isinstance(_f_match_group(None, Node, ["x" * 5000]), Unk)
    with pytest.raises(re.error):
        _compile([None, "pad_seq_to_mult[0-9]+"])  # no group
    with pytest.raises(re.error):
        _compile([None, "(a+)+$"])  # exponential


@pytest.mark.parametrize("max_length,mbs,ga", [(4096, 2, 8), (32768, 1, 1)])
def test_swift_packing_token_slots_match_the_product(tmp_path, max_length, mbs, ga):
    """PK433's number is max_length x per_device_train_batch_size x GA, read from a YAML the flags override."""
    files = {"sft.yaml": f"model: Qwen/Qwen2.5-7B-Instruct\npacking: true\nattn_impl: flash_attn\nmax_length: {max_length}\n"
             f"per_device_train_batch_size: 64\ngradient_accumulation_steps: {ga}\n"}
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    (tmp_path / ".git").mkdir()
    script = tmp_path / "run.sh"
    data = f"#!/bin/bash\nswift sft sft.yaml --per_device_train_batch_size {mbs}\n".encode()
    script.write_bytes(data)
    model = inspect_script(str(script), text=data, display_path=str(script))
    found = [f for f in check_model(model, TABLE.rules, script_text=data) if f.code == "PK433"]
    assert [f.severity for f in found] == ["info"]
    assert f"holds {max_length * mbs * ga} token slots per data-parallel rank" in found[0].message


def test_trl_padding_free_collator_in_a_hand_written_program(tmp_path):
    """TRL's DataCollatorForLanguageModeling(padding_free=True) packs the same way; transformers' collator of
    that name (no padding_free) does not count."""
    trl = TRAIN.replace("DataCollatorWithFlattening, ", "").replace(
        "data_collator=DataCollatorWithFlattening()", "data_collator=DataCollatorForLanguageModeling(pad_token_id=0, padding_free=True)"
    ).replace("ATTN", "'sdpa'")
    trl = "from trl.trainer.sft_trainer import DataCollatorForLanguageModeling\n" + trl
    files = {"train.py": trl, "transformers/__init__.py": '__version__ = "4.52.4"\n'}
    found = check(tmp_path, files)
    assert [f.code for f in found] == ["PK530"] and "DataCollatorForLanguageModeling(padding_free=True)" in found[0].message
    plain = trl.replace(", padding_free=True", "")
    (tmp_path / "train.py").write_text(plain)
    assert check(tmp_path, {}) == []
