"""Issue 28 item 3 (axolotl): which fields of a pydantic config schema have choices pydantic enforces
before anything can rewrite the value (packlint/codebase/pydantic_models.py, through hf_fields.read_models).
The sources are in the shape of axolotl's src/axolotl/utils/schemas/ (enums.py, mixins of validation.py,
the config model deriving them)."""

from __future__ import annotations

from packlint.codebase.hf_fields import read_models

ENUMS = b'''
from enum import Enum

import torch


class RLType(str, Enum):
    """RL trainer type configuration subset"""

    DPO = "dpo"
    GRPO = "grpo"
    KTO = "kto"


class TorchAOQuantDType(Enum):
    int4 = torch.int4
    nvfp4 = "nvfp4"


class Lenient(str, Enum):
    A = "a"

    @classmethod
    def _missing_(cls, value):
        return cls.A


LEGACY_ATTN_FLAG_TO_IMPL = {
    "xformers_attention": "xformers",
    "sdp_attention": "sdpa",
}
'''

PEFT = b"""
from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator


class LoraConfig(BaseModel):
    adapter: Literal["lora", "qlora", "llama-adapter"] | None = Field(default=None)
    merge_method: Literal["legacy", "memory_efficient"] | None = None
    lora_dropout: Literal["a", "b"] | None = None

    @model_validator(mode="before")
    @classmethod
    def validate_lora_dropout(cls, data):
        if data.get("adapter") is not None and data.get("lora_dropout") is None:
            data["lora_dropout"] = "a"
        return data

    @field_validator("merge_method")
    @classmethod
    def after_only(cls, v):
        return v
"""

CONFIG = b"""
from typing import Literal, Optional

from pydantic import BaseModel, Field, field_validator, model_validator

from axolotl.utils.schemas.enums import LEGACY_ATTN_FLAG_TO_IMPL, Lenient, RLType, TorchAOQuantDType
from axolotl.utils.schemas.peft import LoraConfig
from axolotl.utils.schemas.validation import ValidationMixin


class SFTDataset(BaseModel):
    train_on_eos: Literal["all", "turn", "last"] | None = None
    type: Literal["alpaca", "sharegpt"] | None = None

    @model_validator(mode="before")
    @classmethod
    def legacy(cls, data):
        return handle_unknown(data)


class AxolotlInputConfig(LoraConfig, ValidationMixin, BaseModel):
    rl: RLType | None = None
    torch_compile_mode: Optional[Literal["default", "reduce-overhead", "max-autotune"]] = None
    bf16: Literal["auto"] | bool | None = None
    excess_length_strategy: Literal["drop", "truncate"] | str | None = None
    quant: TorchAOQuantDType | None = None
    lenient: Lenient | None = None
    xformers_attention: Literal["x", "y"] | None = None
    attn_implementation: Literal["eager", "sdpa"] | None = None
    image_resize_algorithm: Literal["bilinear", "bicubic"] | None = None
    type: Literal["causal", "seq2seq"] | None = None

    @model_validator(mode="before")
    @classmethod
    def normalize_attn_implementation(cls, data):
        if not isinstance(data, dict):
            return data
        if data.get("rl") == "kto" and data.get("bf16"):
            pass
        for flag in LEGACY_ATTN_FLAG_TO_IMPL:
            data.pop(flag, None)
        return data

    @field_validator("image_resize_algorithm", mode="before")
    @classmethod
    def convert(cls, v):
        return v.lower()
"""

VALIDATION = b"""
from pydantic import model_validator


class TrainingValidationMixin:
    @model_validator(mode="before")
    @classmethod
    def check_merge(cls, data):
        if data.get("merge_method") == "legacy":
            cls._set_impl(data)
        return data

    @classmethod
    def _set_impl(cls, data):
        data.setdefault("attn_implementation", "eager")


class ValidationMixin(TrainingValidationMixin):
    pass
"""


def _models(extra: dict[str, bytes] | None = None) -> dict[str, dict]:
    files = {
        "axolotl/utils/schemas/enums.py": ENUMS,
        "axolotl/utils/schemas/peft.py": PEFT,
        "axolotl/utils/schemas/config.py": CONFIG,
        "axolotl/utils/schemas/validation.py": VALIDATION,
    }
    files.update(extra or {})
    return read_models(files)


def _typed(classes: dict[str, dict], cname: str) -> dict[str, object]:
    return {f: (spec[1] if spec[0] == "lit" else spec[0]) for f, spec in classes[cname]["fields"].items()}


def test_pure_literal_and_string_enum_fields_get_their_choices() -> None:
    top = _typed(_models(), "AxolotlInputConfig")
    assert top["rl"] == ["dpo", "grpo", "kto"]  # (read by a before-validator, never written)
    assert top["torch_compile_mode"] == ["default", "reduce-overhead", "max-autotune"]
    lora = _typed(_models(), "LoraConfig")
    assert lora["adapter"] == ["lora", "qlora", "llama-adapter"]


def test_a_union_with_another_type_takes_other_values() -> None:
    top = _typed(_models(), "AxolotlInputConfig")
    assert top["bf16"] == "any"  # Literal["auto"] | bool
    assert top["excess_length_strategy"] == "any"  # Literal[...] | str takes any string


def test_an_enum_pydantic_may_not_match_by_its_string_values_is_open() -> None:
    top = _typed(_models(), "AxolotlInputConfig")
    assert top["quant"] == "any"  # a member whose value is no string constant (torch.int4)
    assert top["lenient"] == "any"  # `_missing_` maps other values to a member


def test_a_key_a_before_validator_writes_is_undecided() -> None:
    top = _typed(_models(), "AxolotlInputConfig")
    lora = _typed(_models(), "LoraConfig")
    assert lora["lora_dropout"] == "any"  # data["lora_dropout"] = ... in a model_validator(mode="before")
    assert top["image_resize_algorithm"] == "any"  # field_validator(..., mode="before")
    assert lora["merge_method"] == ["legacy", "memory_efficient"]  # a field_validator after: the choices hold
    # a key popped in a loop over a module constant of another file, and one a helper method writes
    assert top["xformers_attention"] == "any"
    assert top["attn_implementation"] == "any"


def test_a_nested_models_validator_does_not_touch_the_top_level_keys() -> None:
    classes = _models()
    # SFTDataset hands its dict to a function packlint has not read: every one of its own fields is open,
    # the config model's `type` (a key of another dict) keeps its choices
    assert _typed(classes, "SFTDataset") == {"train_on_eos": "any", "type": "any"}
    assert _typed(classes, "AxolotlInputConfig")["type"] == ["causal", "seq2seq"]


def test_a_write_packlint_cannot_name_opens_every_field_of_the_model() -> None:
    extra = b"""
from pydantic import model_validator


class ValidationMixin:
    @model_validator(mode="before")
    @classmethod
    def rename(cls, data):
        for key in list(data):
            data[key.lower()] = data.pop(key)
        return data
"""
    classes = _models({"axolotl/utils/schemas/validation.py": extra})
    assert all(v == "any" for v in _typed(classes, "AxolotlInputConfig").values())
    assert all(v == "any" for v in _typed(classes, "LoraConfig").values())


def test_a_cycle_or_a_broken_file_is_read_without_a_traceback() -> None:
    broken = {
        "axolotl/utils/schemas/a.py": (
            b"from pydantic import BaseModel\nclass A(B, BaseModel):\n    x: 'Literal[\"a\"]'\n"
        ),
        "axolotl/utils/schemas/b.py": b"class B(A):\n    y: int = 1\n",
        "axolotl/utils/schemas/c.py": b"class C(:\n",
    }
    classes = read_models(broken)
    assert classes["A"]["fields"]["x"] == ["lit", ["a"], ""]
