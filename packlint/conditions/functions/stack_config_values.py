"""Values of known configuration keys that the launch's stack rejects at start (issue 28 item 3, PK208):
a value outside the choices of a field, given in a stack's config file, a dotlist override or a flag.

What each stack does with a YAML value decides whether it is checked at all (docs/stack-keys.md):

- LLaMA-Factory reads the YAML (PyYAML up to 0.9.3, OmegaConf from 0.9.4) into a dict and calls
  `HfArgumentParser.parse_dict`, which builds each dataclass with `dtype(**inputs)`: no type or choice
  check. A `Literal` field of its own classes takes any value there. transformers' TrainingArguments
  `__post_init__` then converts its Enum fields (`IntervalStrategy(self.eval_strategy)`,
  `SaveStrategy`, `HubStrategy`, `SchedulerType`, `OptimizerNames`): a value outside the Enum raises
  `ValueError: ... is not a valid SchedulerType` as the job starts. So only those fields are judged
  in a file, and `save_strategy: no` (a YAML 1.1 boolean, False) is one such value.
- TRL's `--config`: TrlParser sets the YAML values as argparse defaults (`set_defaults_with_config`);
  argparse never checks a default against `choices`, and a non-string default keeps its type; the
  dataclass is built, and TrainingArguments' `__post_init__` converts the same Enum fields (TRL 0.8 to
  0.12 rebuild TrainingArguments from the merged values: the same conversion).
- ms-swift turns the YAML into command-line words (`swift/cli/main.py parse_yaml_args`: `--k str(v)`),
  so argparse checks every `Literal`/Enum field's choices ("invalid choice") and exits.
- A flag (`--optim adamw`, any of these stacks) goes through argparse: every field with choices.
- axolotl validates the whole YAML (read by PyYAML) with a pydantic model at start: a field whose
  annotation is a pure string `Literal[...]` or string Enum (optionally `| None`) that no
  before-validator rewrites rejects any other value, a boolean or a number included (ValidationError).
  Only those fields are judged (packlint/codebase/pydantic_models.py decides which, per release).

A value packlint does not know (an interpolation, `${...}`, a variable) is never judged. With the
stack's release known (packlint.configs.versions) the choices are that release's; with it unknown a
string is bad only when no snapshot release accepts it (a warning naming the assumption). A value of
another type (a boolean, a number) is no member of any release's string Enum: an error whatever the
release.
"""

from __future__ import annotations

import math
from typing import Any

from packlint.conditions.functions.core import _is_unk
from packlint.conditions.tree import Builtin, EvalContext, Unk
from packlint.model_view import launchers, variant_config

# transformers TrainingArguments.__post_init__ converts these fields through their Enum at start
# (transformers 5.24.0 training_args.py:1558-1563; 4.41.2 to 4.57 the same, evaluation_strategy copied into
# eval_strategy first): field -> the Enum named in the ValueError
ENUM_CONVERTED = {
    "eval_strategy": "IntervalStrategy",
    "evaluation_strategy": "IntervalStrategy",
    "logging_strategy": "IntervalStrategy",
    "save_strategy": "SaveStrategy",
    "hub_strategy": "HubStrategy",
    "lr_scheduler_type": "SchedulerType",
    "optim": "OptimizerNames",
}

# LLaMA-Factory's own Literal fields that its code checks, unconditionally, before the model is loaded (a YAML
# value reaches them unchecked through parse_dict); its other Literal fields are compared where they are used
# (`mix_strategy` only with several datasets, `pref_loss` by `==`): not judged (docs/stack-keys.md)
LF_CHECKED = {
    "finetuning_type": "FinetuningArguments.__post_init__ asserts it is one of them ('Invalid fine-tuning method.') "
    "as the job starts",
    "stage": "run_exp dispatches on it and raises ValueError('Unknown task: ...') before the model is loaded",
}

_WHY_ENUM = (
    "transformers' TrainingArguments.__post_init__ raises ValueError ('{v} is not a valid {enum}') as the job starts"
)
_WHY_ARGPARSE = "argparse exits with 'invalid choice' as the job starts"
_WHY_SWIFT = (
    "ms-swift passes the YAML to argparse as command-line words, which exits with 'invalid choice' as the job starts"
)


def value_problems(ctx: EvalContext) -> dict[str, tuple[str, str | None]]:
    """setting key -> (why its value is rejected, the assumption the verdict rests on or None)."""
    memo = ctx.memo
    if "stack_value_problems" not in memo:
        try:
            memo["stack_value_problems"] = _read(ctx)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):  # a malformed snapshot or model
            memo["stack_value_problems"] = {}
    found: dict[str, tuple[str, str | None]] = memo["stack_value_problems"]
    return found


def _command(ctx: EvalContext, head: str) -> str | None:
    chain = launchers(ctx.launch, ctx.variant)
    words = (chain[-1] if chain else "").split()
    return words[1] if len(words) > 1 and words[0] == head else None


def _read(ctx: EvalContext) -> dict[str, tuple[str, str | None]]:
    from packlint.conditions.functions import stack_config_keys as keys

    cfg = variant_config(ctx.variant)
    if not cfg:
        return {}
    stack = cfg.get("stack")
    if stack == "llamafactory":
        # (USE_MEGATRON_BRIDGE=1 parses with the same TrainingArguments: parser.py `_TRAIN_MBRIDGE_ARGS`; USE_MCA=1
        # with mcore_adapter's, whose classes packlint has not read)
        if keys._env_on(ctx, "USE_MCA") is not False:
            return {}
        if keys._standalone(ctx):
            # a YAML checked on its own: its environment (USE_MCA) and even its program are unknown; judged as
            # `llamafactory-cli train` reads it (a warning naming that), only when `stage` is one of its stages
            if not _lf_stage(ctx, cfg):
                return {}
            return _judge(ctx, cfg, "llamafactory", keys._LF_ROOTS, "enum", _LF_ALONE)
        return _judge(ctx, cfg, "llamafactory", keys._LF_ROOTS, "enum")
    if stack == "trl":
        command = _command(ctx, "trl")
        if command in keys._TRL_COMMANDS and keys._standalone(ctx):
            # a TRL recipe checked on its own: the program that reads it is unknown (PK207 does not judge its
            # keys), but any HfArgumentParser/TrlParser program whose config extends TrainingArguments converts
            # these fields: judged under that assumption (a warning)
            return _judge(ctx, cfg, "trl", ("TrainingArguments",), "enum", _RECIPE)
        if command in keys._TRL_COMMANDS:
            return _judge(ctx, cfg, "trl", keys._TRL_COMMANDS[command] + keys._TRL_COMMON, "enum")
        if command is None:
            return _trl_program(ctx, cfg)
        return {}
    if stack == "axolotl":
        return _axolotl(ctx, cfg)
    if stack == "swift":
        command = _command(ctx, "swift")
        if command in keys._SWIFT_COMMANDS and not keys._standalone(ctx):
            return _judge(ctx, cfg, "swift", keys._SWIFT_COMMANDS[command], "argv")
    return {}


_WHY_PYDANTIC = (
    "axolotl validates the YAML with its pydantic model (AxolotlInputConfig) as the job starts, and a ValidationError "
    "stops it before training"
)


def _axolotl(ctx: EvalContext, cfg: Any) -> dict[str, tuple[str, str | None]]:
    """A YAML value of a field whose annotation is a pure string Literal/Enum that no before-validator
    rewrites (the snapshot's "lit" rows, tools/stack_schemas.py): pydantic rejects any other value. Not
    judged with `plugins:` (a plugin's model joins the schema with its own validators) nor against an
    axolotl the checkout vendors (its own models, not read here). With the release unknown, only a key
    every snapshot release types with choices, and a value none of them takes."""
    from packlint.codebase import stack_schemas
    from packlint.conditions.functions import stack_config_keys as keys

    settings = cfg.get("settings") or {}
    if any(k == "plugins" or k.startswith("plugins.") for k in settings):
        return {}
    if keys._vendored_dir("axolotl", *keys._at(ctx)):
        return {}
    fields = stack_schemas.class_fields("AxolotlInputConfig", ("axolotl",)) or {}
    known = keys._known_versions(ctx, ("axolotl",))
    # the snapshot releases the run may be: all of them, or the pinned one (the two around it when it has no
    # snapshot, each of which must type the field with choices: the one between may not define it at all)
    want = (1 << len(stack_schemas.releases("axolotl"))) - 1
    if "axolotl" in known:
        want = stack_schemas.release_mask("axolotl", known["axolotl"]["value"]) or want
    out: dict[str, tuple[str, str | None]] = {}
    for key, s in settings.items():
        if not isinstance(s, dict) or s.get("source") != "file" or "." in key or not _judgeable(s):
            continue
        rows = [r for r in fields.get(key) or [] if keys._defined(r, known)]
        value = s["value"]
        if rows and all(str(r[1]).startswith("pyd:") for r in rows) and _mask(rows) & want == want:
            if all(pydantic_rejects(r[1], value) for r in rows):  # (bad for every typing the field has)
                kinds = sorted({k for r in rows for k in r[1][4:].split("|")})
                out[key] = (_pydantic_message(key, value, kinds), _assumed(rows, known, value, ""))
            continue
        if not rows or any(r[1] != "lit" or not r[2] for r in rows):
            continue  # not a field of this release (PK207's), or a typing that takes other values
        if _mask(rows) & want != want:
            continue  # a release without the field (or without its choices) ignores the key
        choices = sorted({str(c) for r in rows for c in r[2]})
        if isinstance(value, str) and value in choices:
            continue
        why = _message(key, value, value, choices, "axolotl", "file", "pydantic")
        out[key] = (why, _assumed(rows, known, value, value))
    return out


# pydantic v2 lax mode (pydantic-core): the strings a bool field takes, in any case
_PYD_BOOL_WORDS = ("0", "off", "f", "false", "n", "no", "1", "on", "t", "true", "y", "yes")


def _rejects_one(kind: str, value: Any) -> bool:
    """Whether pydantic's lax mode rejects a YAML scalar for a plain bool / int / float field. Never
    says "rejects" where pydantic takes the value (tests/test_stack_keys_pydantic.py checks this against
    the installed pydantic); a few strings pydantic rejects are let pass ('3.' for an int)."""
    if kind == "bool":
        if isinstance(value, str):
            return value.lower() not in _PYD_BOOL_WORDS
        return not isinstance(value, bool) and value not in (0, 1)
    if isinstance(value, bool):
        return False  # (lax mode: True is 1 and 1.0)
    if kind == "float":
        if isinstance(value, str):
            return not _parses(float)(value)
        return not isinstance(value, int | float)
    if isinstance(value, int):  # kind "int"
        return False
    if isinstance(value, float):
        return not value.is_integer()
    if not isinstance(value, str):
        return True
    if value.strip().lstrip("+-").replace("_", "").isdecimal():
        return False  # (an integer of any length: pydantic reads big ones that float() makes inf)
    if not _parses(float)(value):
        return True
    number = float(value)
    return "e" in value.lower() or not math.isfinite(number) or not number.is_integer()


def pydantic_rejects(kind: str, value: Any) -> bool:
    """A snapshot row's "pyd:int|float" typing (a union: pydantic takes what any member takes)."""
    return all(_rejects_one(k, value) for k in kind.removeprefix("pyd:").split("|"))


def _pydantic_message(key: str, value: Any, kinds: list[str]) -> str:
    what = " or ".join({"bool": "a boolean", "int": "an integer", "float": "a number"}[k] for k in kinds)
    shown = f"{key}: {_yaml_text(value)}"
    hint = ""
    if "bool" in kinds and isinstance(value, str):
        hint = " (pydantic takes true/false, yes/no, on/off, 1/0)"
    elif "int" in kinds and isinstance(value, str) and "e" in value.lower():
        hint = " (pydantic reads no exponent for an integer: write it out)"
    return f"{shown}: {key} takes {what}, which {_yaml_text(value)!r} is not{hint}: {_WHY_PYDANTIC}"


def _mask(rows: list[Any]) -> int:
    m = 0
    for r in rows:
        m |= r[4]
    return m


def _fields(ctx: EvalContext, stack: str, roots: tuple[str, ...]) -> dict[str, list[Any]]:
    """field -> rows (stack, type, choices, marks, mask) of the launch's argument classes (the vendored
    code, else the snapshots); empty when a base is not read (the schema is open)."""
    from packlint.codebase import stack_schemas
    from packlint.conditions.functions import stack_config_keys as keys

    local = keys._vendored_classes(stack, *keys._at(ctx))
    fields: dict[str, list[Any]] = {}
    for root in roots:
        try:
            found = (
                keys._local_fields(root, local, stack, 0)
                if local
                else stack_schemas.class_fields(root, (stack, "transformers"))
            )
        except keys._Open:
            return {}
        for f, rows in (found or {}).items():
            fields.setdefault(f, []).extend(rows)
    return fields


def _judgeable(s: Any) -> bool:
    """A scalar value packlint read as written (no interpolation, variable or list)."""
    if not isinstance(s, dict) or "unknown" in s or "value" not in s:
        return False
    v = s["value"]
    if isinstance(v, str):
        # (`'<num-labels>'`: a template's placeholder the author means to be replaced, not the run's value)
        placeholder = v.startswith("<") and v.endswith(">")
        return "$" not in v and "{" not in v and "%" not in v and not placeholder
    return isinstance(v, bool | int | float)


_LF_ALONE = (
    "the YAML is checked on its own: assumed to be run by `llamafactory-cli train` without USE_MCA=1 (mcore_adapter's "
    "arguments)"
)


def _lf_stage(ctx: EvalContext, cfg: Any) -> bool:
    """The YAML's `stage` is one of LLaMA-Factory's stages (another framework's YAML with `stage` and
    `model_name_or_path`, PaddleFormers' `stage: SFT`, is not LLaMA-Factory's)."""
    s = (cfg.get("settings") or {}).get("stage") or {}
    rows = _fields(ctx, "llamafactory", ("FinetuningArguments",)).get("stage") or []
    choices = {str(c) for r in rows for c in (r[2] or [])}
    return isinstance(s.get("value"), str) and s["value"] in choices


_RECIPE = (
    "the recipe is checked on its own: assumed to be read by a TrlParser/HfArgumentParser program whose config "
    "class extends transformers' TrainingArguments"
)


def _judge(
    ctx: EvalContext, cfg: Any, stack: str, roots: tuple[str, ...], mode: str, assume: str | None = None
) -> dict[str, tuple[str, str | None]]:
    """mode 'enum': a file or override value is judged only for the Enum fields TrainingArguments converts,
    a flag for every field with choices; 'argv': every value reaches argparse as a word (ms-swift)."""
    from packlint.conditions.functions import stack_config_keys as keys

    settings = cfg.get("settings") or {}
    if not any(_judgeable(s) for s in settings.values()):
        return {}
    fields = _fields(ctx, stack, roots)
    if not fields:
        return {}
    # (the stack's code read where the launch `cd`s, by its path's tail: stack_config_workdir)
    premise = keys._workdir_premise(ctx, stack) if keys._vendored_classes(stack, *keys._at(ctx)) else None
    assume = "; ".join(a for a in (assume, premise) if a) or None
    known = keys._known_versions(ctx, (stack, "transformers"))
    out: dict[str, tuple[str, str | None]] = {}
    for key, s in settings.items():
        source = s.get("source") if isinstance(s, dict) else None
        if source not in ("file", "override", "flag") or not _judgeable(s) or "." in key:
            continue
        if source == "flag" and isinstance(s["value"], bool):
            continue  # a bare flag (PK207 says when it needs a value)
        rows = [r for r in fields.get(key) or [] if keys._defined(r, known)]
        typed = mode == "argv" or source == "flag" or (source == "file" and _trl_converts(stack, known, s["value"]))
        if rows and typed and all(r[1] in _PARSERS for r in rows):
            word = str(s["value"])
            if all(not _PARSERS[r[1]](word) for r in rows):  # (bad for every typing the field has)
                types = sorted({_TYPE_WORDS[r[1]] for r in rows})
                why = _type_message(key, word, types, source, mode)
                assumed = _assumed(rows, known, word, word)
                out[key] = (why, "; ".join(a for a in (premise, assumed) if a) or None)
            continue
        # (a vendored fork's own field: its __post_init__ may assert another list than its Literal, as
        # EriChen0615/LLaMA-Factory asserts "oft" too: only the releases' fields, whose assert is the Literal)
        own = stack == "llamafactory" and source != "flag" and key in LF_CHECKED and all(r[0] for r in rows)
        if source != "flag" and mode == "enum" and key not in ENUM_CONVERTED and not own:
            continue
        if not rows or any(r[1] != "lit" or not r[2] for r in rows):
            continue  # not a key of this release (PK207's), or some typing takes any value
        if mode == "enum" and source != "flag" and not own and any(r[0] != "transformers" for r in rows):
            continue  # a class of the stack redefines the field: its own __post_init__ decides
        value = s["value"]
        word = _word(value, mode == "argv" or source == "flag")
        choices = sorted({str(c) for r in rows for c in r[2]})
        if word in choices:
            continue
        assumed = _assumed(rows, known, value, word)
        if assume:
            assumed = f"{assume}; {assumed}" if assumed else assume
        out[key] = (_message(key, value, word, choices, stack, source, "lf" if own else mode), assumed)
    return out


def _parses(kind: type) -> Any:
    def check(word: str) -> bool:
        try:
            kind(word)
        except ValueError:
            return False
        return True

    return check


_BOOL_WORDS = ("yes", "true", "t", "y", "1", "no", "false", "f", "n", "0")
# how argparse reads a word for a field HfArgumentParser types int / float / bool (transformers
# hf_argparser.py: `type=int`, `type=float`, `type=string_to_bool`, which takes the words above in any case)
_PARSERS = {
    "int": _parses(int),
    "float": _parses(float),
    "bool": lambda w: w.lower() in _BOOL_WORDS,
    "bool1": lambda w: w.lower() in _BOOL_WORDS,
}
_TYPE_WORDS = {"int": "an int", "float": "a float", "bool": "a boolean", "bool1": "a boolean"}


def _trl_converts(stack: str, known: dict[str, dict[str, str]], value: Any) -> bool:
    """TRL 0.9.6 and later make a recipe's values argparse defaults (set_defaults_with_config), and argparse
    reads a *string* default with the field's type (`int('1e4')` fails); 0.8 to 0.9.4 set the values on the
    parsed dataclasses unread. So a string is judged only with the release known to be 0.9.6 or later."""
    if stack != "trl" or not isinstance(value, str) or "trl" not in known:
        return False
    from packlint.codebase.stack_schemas import _key

    return _key(known["trl"]["value"]) >= (0, 9, 6)


def _type_message(key: str, word: str, types: list[str], source: str, mode: str) -> str:
    shown = f"--{key} {word}" if source == "flag" else f"{key}: {word}"
    how = " or ".join(types)
    said = {"an int": "'invalid int value'", "a float": "'invalid float value'", "a boolean": "'Truthy value expected'"}
    what = " / ".join(said[t] for t in types)
    where = ""
    if source != "flag":
        where = (
            "ms-swift passes the YAML to argparse as command-line words, and "
            if mode == "argv"
            else "TrlParser makes the YAML value an argparse default, which argparse reads with the field's type, and "
        )
    return f"{shown}: {key} takes {how}, which '{word}' is not: {where}argparse exits with {what} as the job starts"


def _word(value: Any, argv: bool) -> Any:
    """The value as the stack's code meets it: a word of the command line (str(v)) or the YAML value."""
    if not argv:
        return value
    return str(value)


def _assumed(rows: list[Any], known: dict[str, dict[str, str]], value: Any, word: Any) -> str | None:
    """The release assumption the verdict rests on: none for a value of another type (no release's string
    choices take a boolean or a number), nor when the rows' stack release is known."""
    from packlint.codebase import stack_schemas

    if not isinstance(word, str):
        return None
    stacks = {r[0] for r in rows if r[0] is not None}
    unknown = sorted(st for st in stacks if st not in known)
    return stack_schemas.assumption(unknown[0]) if unknown else None


def _message(key: str, value: Any, word: Any, choices: list[str], stack: str, source: str, mode: str) -> str:
    from packlint.conditions.functions.stack_config_keys import _close_matches

    shown = f"--{key} {word}" if source == "flag" else f"{key}: {_yaml_text(value)}"
    close = _close_matches(str(word), choices, n=1, cutoff=0.6) if isinstance(word, str) else []
    mean = f"; did you mean {close[0]}?" if close else ""
    listed = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
    note = ""
    if isinstance(value, bool) and mode == "pydantic":
        note = " (a YAML boolean, which no choice is: leave the key out, or give null, for none)"
    elif isinstance(value, bool) and source != "flag":
        note = f" (YAML reads an unquoted {'yes/on/true' if value else 'no/off/false'} as a boolean: quote it)"
    if source == "flag":
        why = _WHY_ARGPARSE
    elif mode == "argv":
        why = _WHY_SWIFT
    elif mode == "pydantic":
        why = _WHY_PYDANTIC
    elif mode == "lf":
        why = LF_CHECKED[key]
    else:
        why = _WHY_ENUM.format(v=word, enum=ENUM_CONVERTED.get(key, "Enum"))
    return f"{shown} is not one of {key}'s values ({listed}){note}{mean}: {why}"


def _yaml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "false" if not value else "true"
    return str(value)


def _trl_program(ctx: EvalContext, cfg: Any) -> dict[str, tuple[str, str | None]]:
    """A Python program parsing with TrlParser given `--config x.yaml`: a YAML value of an Enum field
    TrainingArguments converts, outside the choices of the program's own parser (read from its code)."""
    from packlint.codebase.argparse_reader.argparse_calls import TRL_CONFIG_NOTE
    from packlint.conditions.functions import stack_config_keys as keys
    from packlint.conditions.functions.codebase_common import _schema_view
    from packlint.conditions.functions.stack_keys import snapshot_assumption

    schema = _schema_view(ctx)[0]
    notes = getattr(schema, "notes", None) or []
    if schema is None or not schema.closed or not any(n.startswith(TRL_CONFIG_NOTE) for n in notes):
        return {}
    specs = {spec.dest: spec for spec in schema.specs()}
    out: dict[str, tuple[str, str | None]] = {}
    known = keys._known_versions(ctx, ("trl",))
    for key, s in (cfg.get("settings") or {}).items():
        if s.get("source") != "file" or not _judgeable(s):
            continue
        spec = specs.get(key)
        kind = {"int": "int", "float": "float", "custom:string_to_bool": "bool"}.get(spec.type) if spec else None
        if kind is not None and spec is not None and spec.choices is None and _trl_converts("trl", known, s["value"]):
            if not _PARSERS[kind](s["value"]):
                why = _type_message(key, s["value"], [_TYPE_WORDS[kind]], "file", "enum")
                out[key] = (why, snapshot_assumption(schema, ctx.model.get("script")))
            continue
        if key not in ENUM_CONVERTED:
            continue
        if spec is None or not spec.choices or spec.choices_note:
            continue
        value = s["value"]
        if value in spec.choices:
            continue
        assumed = snapshot_assumption(schema, ctx.model.get("script")) if isinstance(value, str) else None
        out[key] = (_message(key, value, value, sorted(spec.choices), "trl", "file", "enum"), assumed)
    return out


def _f_stack_value_problem(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    found = value_problems(ctx).get(a[0])
    if found is None:
        return Unk(f"{a[0]}'s value is one the stack takes", "absent")
    from packlint import evidence

    cfg: Any = variant_config(ctx.variant)
    settings: dict[str, Any] = dict((cfg or {}).get("settings") or {})
    evidence.record(ctx, settings.get(a[0]))  # (a value resting on an assumption: its premise)
    return found[0]


def _f_stack_value_assumed(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    found = value_problems(ctx).get(a[0])
    if found is None or found[1] is None:
        return Unk("the choices come from the checkout, or from the release it runs", "absent")
    from packlint import evidence

    evidence.note(ctx, (evidence.ASSUMED, found[1]))  # (the finding's premise, as PK207's: `premises` in JSON)
    return found[1]


def _functions() -> dict[str, Any]:
    from packlint.conditions.tree import STR, Function

    return {
        "stack_value_problem": Function(
            (STR,),
            (),
            STR,
            _f_stack_value_problem,
            "why the stack rejects this configuration key's value at start (a value outside the choices of an "
            "Enum field TrainingArguments converts, or of any field argparse reads); absent when it takes it",
        ),
        "stack_value_assumed": Function(
            (STR,),
            (),
            STR,
            _f_stack_value_assumed,
            "the assumption stack_value_problem rests on (the stack's release unknown, its snapshots standing for "
            "it); absent when the choices come from the checkout or the release it runs",
        ),
    }


STACK_CONFIG_VALUE_FUNCTIONS = _functions()
