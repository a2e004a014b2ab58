"""The built-in functions of the condition language, by domain: the launch model (core), derived
sizes and settings (derived), the launched code base (codebase). Importing this package fills the
FUNCTIONS registry of packlint.conditions.tree, in the order the reference documents them."""

from __future__ import annotations

from packlint.conditions.functions.codebase import CODEBASE_FUNCTIONS
from packlint.conditions.functions.core import CORE_FUNCTIONS
from packlint.conditions.functions.deepspeed import DEEPSPEED_FUNCTIONS
from packlint.conditions.functions.derived import DERIVED_FUNCTIONS
from packlint.conditions.functions.hf_code import HF_CODE_FUNCTIONS
from packlint.conditions.functions.patches import PATCH_FUNCTIONS
from packlint.conditions.functions.required_flags import REQUIRED_FLAG_FUNCTIONS
from packlint.conditions.functions.stack import STACK_FUNCTIONS
from packlint.conditions.functions.stack_code import STACK_CODE_FUNCTIONS
from packlint.conditions.functions.stack_config_keys import STACK_CONFIG_KEY_FUNCTIONS
from packlint.conditions.functions.stack_config_values import STACK_CONFIG_VALUE_FUNCTIONS
from packlint.conditions.functions.stack_keys import STACK_KEY_FUNCTIONS
from packlint.conditions.functions.stack_source import STACK_SOURCE_FUNCTIONS
from packlint.conditions.functions.startup import STARTUP_FUNCTIONS
from packlint.conditions.functions.text import TEXT_FUNCTIONS
from packlint.conditions.tree import FUNCTIONS

FUNCTIONS.update(CORE_FUNCTIONS)
FUNCTIONS.update(DERIVED_FUNCTIONS)
FUNCTIONS.update(STACK_FUNCTIONS)
FUNCTIONS.update(STACK_CODE_FUNCTIONS)
FUNCTIONS.update(DEEPSPEED_FUNCTIONS)
FUNCTIONS.update(CODEBASE_FUNCTIONS)
FUNCTIONS.update(REQUIRED_FLAG_FUNCTIONS)
FUNCTIONS.update(STACK_KEY_FUNCTIONS)
FUNCTIONS.update(STACK_CONFIG_KEY_FUNCTIONS)
FUNCTIONS.update(STACK_CONFIG_VALUE_FUNCTIONS)
FUNCTIONS.update(STARTUP_FUNCTIONS)
FUNCTIONS.update(STACK_SOURCE_FUNCTIONS)
FUNCTIONS.update(HF_CODE_FUNCTIONS)
FUNCTIONS.update(PATCH_FUNCTIONS)
FUNCTIONS.update(TEXT_FUNCTIONS)

__all__ = [
    "CODEBASE_FUNCTIONS",
    "CORE_FUNCTIONS",
    "DEEPSPEED_FUNCTIONS",
    "DERIVED_FUNCTIONS",
    "FUNCTIONS",
    "HF_CODE_FUNCTIONS",
    "PATCH_FUNCTIONS",
    "REQUIRED_FLAG_FUNCTIONS",
    "STACK_CONFIG_KEY_FUNCTIONS",
    "STACK_CODE_FUNCTIONS",
    "STACK_CONFIG_VALUE_FUNCTIONS",
    "STACK_FUNCTIONS",
    "STACK_KEY_FUNCTIONS",
    "STARTUP_FUNCTIONS",
    "STACK_SOURCE_FUNCTIONS",
    "TEXT_FUNCTIONS",
]
