"""The launch model's JSON shape, declared in one place: what `packlint inspect --format json` prints
and what the rules, the probe and the reporters read (docs/launch-model.md describes it in prose).

TypedDicts cost nothing at run time. `json_schema()` turns them into the published JSON Schema
(docs/launch-model.schema.json; `python -m packlint.model_types` prints it, and tests fail when the
committed file is stale or when an inspect fixture's output does not validate).

Objects are open (extra keys allowed) where other stages add fields (a launch, a variant, the
model); the entries a rule reads (LOCATION, SETTING, ...) are closed.
"""

import sys
from typing import Any, Literal, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:  # pragma: no cover
    from typing_extensions import NotRequired, TypedDict

SCHEMA_ID = "https://github.com/packlint/packlint/blob/main/docs/launch-model.schema.json"


class LocationJSON(TypedDict):
    file: str
    line: int
    column: int
    end_line: int
    end_column: int


class UnknownJSON(TypedDict):
    unknown: str
    # a word whose `--name=` / `key=` part is written and only the value is unknown: the flag it sets
    key: NotRequired[str]
    # one of the script's own arguments, which an input guard says the caller gives (`[ $# -lt 1 ]`)
    caller: NotRequired[bool]


class EvidenceJSON(TypedDict):
    """EVIDENCE (packlint.evidence): how a value is known when not from the checkout alone: `assumed`
    (packlint took something to be so: `because` names the assumption, e.g. "the script run without
    arguments, so $2 is unset") or `machine` (it depends on the machine the script runs on: a PATH
    lookup, a cluster variable, a file made at set-up). An entry without it is known from the checkout
    (its location says where). A finding lists the evidence of what its condition read as its
    `premises` (`packlint check --format json`), and its severity is capped by them."""

    kind: Literal["assumed", "machine"]
    because: str


class EnvEntryJSON(TypedDict, total=False):
    """ENV_ENTRY: a variable the launch inherits (or a shell variable); `values`/`alternatives` when
    it differs between variants."""

    value: str | None
    unknown: str
    items: list[str | UnknownJSON]
    exported: bool
    source: str
    file: str | None
    line: int | None
    column: int | None
    end_line: int | None
    end_column: int | None
    value_location: LocationJSON | None
    exported_at: LocationJSON
    values: list[Any]
    alternatives: list[dict[str, Any]]
    when: list[str]
    evidence: EvidenceJSON


class FlagEntryJSON(TypedDict, total=False):
    """FLAG_ENTRY: one occurrence of a program flag or launcher option."""

    value: str | bool | list[str] | None
    unknown: str
    source: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    value_location: LocationJSON | None
    values: list[Any]
    alternatives: list[dict[str, Any]]
    when: list[str]
    evidence: EvidenceJSON
    then_unknown: str
    # the innermost branch body (`case` arm, `if` body) a repeated flag was written in, with what chose it
    branch: str


class SizeJSON(TypedDict, total=False):
    """A parallel size (`parallel.tp`, ...): value, range or unknown, with its source."""

    value: int | None
    range: list[int]
    unknown: str
    multiple_of: int
    source: str
    not_in_script: bool
    not_divisible: bool
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    values: list[Any]
    alternatives: list[dict[str, Any]]
    evidence: EvidenceJSON  # a count set in a platform's fallback branch (interpret/fallbacks.py)


class ValueJSON(TypedDict, total=False):
    value: str
    unknown: str
    values: list[Any]
    alternatives: list[dict[str, Any]]


class SettingJSON(TypedDict, total=False):
    """SETTING: one merged configuration value (issue 20) as the stack's loader types it, and where it
    was set (a config file's key, or the override/flag word in the script)."""

    value: Any
    unknown: str
    source: Literal["file", "override", "flag"]
    interpolation: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    key_at: LocationJSON  # a flag-form key (`--dataset_path "$P"`): where the key's own word is written


class ConfigFileJSON(TypedDict, total=False):
    """A config file the launch names (or a file named inside one)."""

    role: str
    path: str
    format: Literal["yaml", "json", "toml"]
    file: str
    named_at: LocationJSON | None
    missing: bool
    unknown: str
    not_read: str  # why the file was not read (outside the checkout, not a regular file): values unknown
    foreign: bool  # outside the checkout, read because of --allow-outside
    error: str
    error_at: LocationJSON
    evidence: EvidenceJSON
    data: bool  # a JSON word a program of no stack takes (as data, maybe): never read as a config


class StackVersionJSON(TypedDict, total=False):
    value: str
    source: str
    unknown: str


class IgnoredFlagJSON(TypedDict):
    """A `--flag` the stack does not read as an override once it has read its file (LLaMA-Factory:
    `llamafactory-cli train x.yaml --key v` takes only `key=value`), where it was given."""

    name: str
    file: NotRequired[str]
    line: NotRequired[int]
    column: NotRequired[int]
    end_line: NotRequired[int]
    end_column: NotRequired[int]


class ConfigJSON(TypedDict):
    """The launch's configuration: its stack, the stack's version, the files read, the merged settings
    (dotted keys), the sections of nested files (`deepspeed`, `accelerate`)."""

    stack: str | None
    stack_version: StackVersionJSON
    files: list[ConfigFileJSON]
    settings: dict[str, SettingJSON]
    sections: NotRequired[dict[str, dict[str, SettingJSON]]]
    unknown_sections: NotRequired[dict[str, str]]
    incomplete: NotRequired[str]
    notes: NotRequired[list[str]]
    ignored_flags: NotRequired[list[IgnoredFlagJSON]]
    not_shown: NotRequired[str]  # `inspect`: keys of a file outside the checkout left out
    # 'keys': a program that is not the stack's own was given a file whose keys look like the stack's
    recognised_by: NotRequired[str]


class VariantJSON(TypedDict):
    when: list[str]
    env: dict[str, EnvEntryJSON]
    unexported: dict[str, EnvEntryJSON]
    exported_after: dict[str, EnvEntryJSON]
    flags: dict[str, list[FlagEntryJSON]]
    launcher_flags: dict[str, list[FlagEntryJSON]]
    world_size: ValueJSON | None
    parallel: dict[str, SizeJSON] | None
    argv: list[str | UnknownJSON]
    command: list[str | UnknownJSON]
    config: NotRequired[ConfigJSON]
    caller_args: NotRequired[bool]  # the command passes the script's arguments on ("$@"): issue 27
    # variables the script never sets whose lone unquoted `$NAME` words gave no word: the environment may give words
    vanished: NotRequired[list[str]]


class CodeResolutionJSON(TypedDict):
    """`code` of a launch (`packlint inspect --code-base`): how its program was matched to a source
    file (packlint.codebase.model.ProgramResolution)."""

    program: str | None
    file: str | None
    found: bool
    how: str
    detail: str
    root: str | None
    roots: list[str]
    pythonpath: list[str]


class LaunchJSON(TypedDict):
    id: int
    launcher: str | None
    launchers: list[str]
    program: str | None
    programs: NotRequired[list[str]]
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    context: list[str]
    when: list[str]
    env: dict[str, EnvEntryJSON]
    unexported: dict[str, EnvEntryJSON]
    exported_after: dict[str, EnvEntryJSON]
    flags: dict[str, list[FlagEntryJSON]]
    launcher_flags: dict[str, list[FlagEntryJSON]]
    world_size: ValueJSON | None
    parallel: dict[str, SizeJSON | None]
    argv: list[str | UnknownJSON] | None
    command: list[str | UnknownJSON] | None
    variants: list[VariantJSON]
    config: NotRequired[ConfigJSON | None]
    code: NotRequired[CodeResolutionJSON]
    code_version: NotRequired[str | None]


class DiagnosticJSON(TypedDict, total=False):
    severity: Literal["error", "warning", "info"]
    code: str
    message: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    related: list[dict[str, Any]]
    evidence: EvidenceJSON


class ScriptModelJSON(TypedDict):
    version: int
    script: str
    args: list[str]
    launches: list[LaunchJSON]
    diagnostics: list[DiagnosticJSON]
    # read by the rules where another stage fills them (none in `packlint inspect` today): the version
    # of the code the script runs, and the other script files it reads (sourced files)
    code_version: NotRequired[str | None]
    files: NotRequired[list[str]]


# the objects other stages extend with fields of their own (code-base resolution, probes)
OPEN = {"ScriptModelJSON", "LaunchJSON", "VariantJSON", "DiagnosticJSON", "EnvEntryJSON", "FlagEntryJSON", "SizeJSON"}


# ---------------------------------------------------------------------------------------------- schema


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ScriptModelJSON, generated from the TypedDicts above."""
    defs: dict[str, dict[str, Any]] = {}
    root = _schema_of(ScriptModelJSON, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "packlint launch model (packlint inspect --format json)",
        **root,
        "$defs": dict(sorted(defs.items())),
    }


def _schema_of(tp: Any, defs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    import types
    import typing

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return {}
    if tp is type(None):
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_schema_of(a, defs) for a in args]}
    if origin is list:
        return {"type": "array", "items": _schema_of(args[0], defs)}
    if origin is dict:
        return {"type": "object", "additionalProperties": _schema_of(args[1], defs)}
    if isinstance(tp, type) and hasattr(tp, "__required_keys__"):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # (recursion guard)
            hints = typing.get_type_hints(tp)
            props = {}
            for key, hint in hints.items():
                if typing.get_origin(hint) is NotRequired:
                    hint = typing.get_args(hint)[0]
                props[key] = _schema_of(hint, defs)
            required = sorted(k for k in tp.__required_keys__ if k in props)
            schema: dict[str, Any] = {"type": "object", "properties": props}
            if tp.__doc__:
                schema["description"] = " ".join(tp.__doc__.split())
            if required:
                schema["required"] = required
            schema["additionalProperties"] = name in OPEN
            defs[name] = schema
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON Schema for {tp!r}")


def schema_text() -> str:
    import json

    return json.dumps(json_schema(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":  # pragma: no cover
    sys.stdout.write(schema_text())
