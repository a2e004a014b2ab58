"""PK208 on axolotl's bool / int / float fields: packlint's reading of pydantic's lax mode, checked against the
installed pydantic on a model built from the snapshot's own fields (rules/stack_schemas.json). packlint must
never call a value bad that pydantic takes; the values real configs get wrong must be caught."""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from packlint.codebase import stack_schemas
from packlint.codebase.pydantic_models import scalar_kind
from packlint.conditions.functions.stack_config_values import pydantic_rejects

_TYPES = {"bool": bool, "int": int, "float": float}
# scalars as PyYAML's safe_load gives them (axolotl reads its YAML so): `1e-5` and `.5e3` are strings there
_VALUES: list[Any] = [
    True,
    False,
    0,
    1,
    2,
    -1,
    10**20,
    0.0,
    1.0,
    1.5,
    3.0,
    -2.5,
    1e20,
    math.inf,
    -math.inf,
    math.nan,
    "yes",
    "No",
    "ON",
    "off",
    "t",
    "F",
    "y",
    "n",
    "true",
    "True",
    "FALSE",
    "maybe",
    "two",
    "auto",
    "none",
    "",
    " ",
    "0",
    "1",
    "2",
    "-5",
    "+3",
    " 3",
    "3 ",
    "03",
    "3_000",
    "1__0",
    "_1",
    "3.",
    ".0",
    "1.0",
    "3.0",
    "3.00",
    "3.01",
    "3.5",
    "1e3",
    "1E3",
    "1e-5",
    "2e-5",
    "5e0",
    "1.0e2",
    "inf",
    "-inf",
    "Infinity",
    "nan",
    "NaN",
    "0x10",
    "0o7",
    "0b1",
    "1,5",
    "１２",
    "true ",
    "\u00a01",
    "9" * 400,
    "-" + "9" * 400,
    "1_000_000",
]


def _model(kind: str) -> type[pydantic.BaseModel]:
    members = [_TYPES[k] for k in kind.removeprefix("pyd:").split("|")]
    ann: Any = members[0]
    for m in members[1:]:
        ann = ann | m
    model: type[pydantic.BaseModel] = pydantic.create_model("M", v=(ann | None, None))
    return model


def _pydantic_rejects(model: type[pydantic.BaseModel], value: Any) -> bool:
    try:
        model(v=value)
    except pydantic.ValidationError:
        return True
    return False


def _snapshot_kinds() -> set[str]:
    fields = stack_schemas.class_fields("AxolotlInputConfig", ("axolotl",)) or {}
    return {r[1] for rows in fields.values() for r in rows if str(r[1]).startswith("pyd:")}


KINDS = sorted(_snapshot_kinds() | {"pyd:bool", "pyd:int", "pyd:float", "pyd:float|int"})


@pytest.mark.parametrize("kind", KINDS)
def test_never_rejects_what_pydantic_takes(kind: str) -> None:
    model = _model(kind)
    wrong = [v for v in _VALUES if pydantic_rejects(kind, v) and not _pydantic_rejects(model, v)]
    assert not wrong, wrong


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=8), st.integers(), st.floats(), st.booleans()))
def test_never_rejects_what_pydantic_takes_fuzzed(value: Any) -> None:
    for kind in ("pyd:bool", "pyd:int", "pyd:float"):
        if pydantic_rejects(kind, value):
            assert _pydantic_rejects(_model(kind), value), (kind, value)


def test_the_mistakes_of_real_configs_are_caught() -> None:
    bad = {
        "pyd:int": ["two", 2.5, "1e4", "1e3", "3.5", "auto", "", "0x10", math.inf],
        "pyd:bool": ["maybe", "auto", "2", 2, 0.5, "enabled", "true "],
        "pyd:float": ["two", "auto", "1,5", ""],
    }
    for kind, values in bad.items():
        model = _model(kind)
        for v in values:
            assert _pydantic_rejects(model, v), (kind, v)  # (the oracle agrees these are bad)
            assert pydantic_rejects(kind, v), (kind, v)
    assert not pydantic_rejects("pyd:float|int", "1e4")  # (a union takes what any member takes)


def test_the_snapshot_types_axolotl_fields() -> None:
    """The snapshot (tools/stack_schemas.py over axolotl's releases) holds the pydantic scalar types."""
    fields = stack_schemas.class_fields("AxolotlInputConfig", ("axolotl",)) or {}
    assert {r[1] for r in fields["micro_batch_size"]} == {"pyd:int"}
    assert {r[1] for r in fields["sample_packing"]} == {"pyd:bool"}
    assert {r[1] for r in fields["num_epochs"]} == {"pyd:float"}
    assert {r[1] for r in fields["learning_rate"]} == {"any"}  # (str | float: any string)
    assert {r[1] for r in fields["eval_sample_packing"]} == {"any"}  # (a before-validator rewrites it)


@pytest.mark.parametrize(
    ("annotation", "kind"),
    [
        ("int | None", "pyd:int"),
        ("Optional[bool]", "pyd:bool"),
        ("float", "pyd:float"),
        ("int | float | None", "pyd:float|int"),
        ("Union[int, float]", "pyd:float|int"),
        ("str | float", None),
        ("StrictInt | None", None),
        ("Annotated[int, Field(ge=1)]", None),
        ("conint(ge=1)", None),
        ("Literal['auto'] | bool", None),
        ("'int | None'", "pyd:int"),
    ],
)
def test_scalar_kind_of_annotations(annotation: str, kind: str | None) -> None:
    assert scalar_kind(ast.parse(annotation, mode="eval").body) == kind


def test_a_pretraining_config_is_axolotl_s_in_a_directory_walk(tmp_path: Path) -> None:
    """axolotl's pretraining configs stream `pretraining_dataset:` and have no `datasets:` (its examples/qwen2/
    adamw-pretrain-fsdp2.yaml): still axolotl configs, found by a directory walk and judged."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "pretrain.yaml").write_text(
        "base_model: HuggingFaceTB/SmolLM2-135M\npretraining_dataset:\n  - path: allenai/c4\n    name: en\n"
        "    type: pretrain\nsequence_len: 2048\nsample_packing: true\nmicro_batch_size: two\nmax_steps: 1000\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.run(
        [sys.executable, "-m", "packlint", "check", "--no-cache", "--output-format", "json", "--select", "PK208", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    found = json.loads(proc.stdout)["findings"]
    assert [f["message"].split(":")[0] for f in found] == ["micro_batch_size"], proc.stdout + proc.stderr


_VALIDATORS = """
from pydantic import BaseModel, model_validator

RENAMED = ["old_a", "old_b"]


class Checks:
    @model_validator(mode="before")
    @classmethod
    def check_deprecated(cls, data):
        found = [f for f in ["unsloth_lora_mlp", "unsloth_rope"] if data.get(f)]
        if found:
            raise ValueError(f"{found} have been removed")
        return data

    @model_validator(mode="before")
    @classmethod
    def check_gone(cls, data):
        if data.get("max_packed_sequence_len"):
            raise ValueError("max_packed_sequence_len is no longer supported")
        if "dpo_beta" in data:
            raise ValueError("dpo_beta is now rl_beta")
        return data

    @model_validator(mode="before")
    @classmethod
    def check_polora(cls, data):
        if data.get("optimizer") != "polora":
            return data
        if data.get("relora_steps"):
            raise ValueError("relora does not work with polora")
        return data

    @model_validator(mode="after")
    def check_after(self):
        if self.sample_packing:
            raise ValueError("after: the fields are parsed by then")
        return self

    @model_validator(mode="before")
    @classmethod
    def check_both(cls, data):
        if data.get("lora_r") and data.get("adapter") is None:
            raise ValueError("lora_r needs an adapter")
        return data


class Config(BaseModel, Checks):
    sample_packing: bool | None = None
"""


def test_keys_a_before_validator_raises_on() -> None:
    """Only a test at a before-validator's top level, on the key alone, before any early return."""
    from packlint.codebase.pydantic_models import raised_keys

    found = raised_keys([ast.parse(_VALIDATORS)])
    assert found == {
        "unsloth_lora_mlp": "check_deprecated",
        "unsloth_rope": "check_deprecated",
        "max_packed_sequence_len": "check_gone",
        "dpo_beta": "check_gone",
    }
