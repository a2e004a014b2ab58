"""Configuration keys the launch's stack does not define (issue 28, PK207): a LLaMA-Factory YAML key
or `key=value` override, a key of a `trl sft|dpo|... --config` YAML (or its `--flag`), a verl Hydra
override without `+`. Each stack stops such a job at start:

- LLaMA-Factory: `HfArgumentParser.parse_dict(args, allow_extra_keys=False)` raises "Some keys are not
  used by the HfArgumentParser" (llamafactory/hparams/parser.py `_parse_args`; extra keys pass only
  with ALLOW_EXTRA_ARGS=1);
- the TRL CLI: `parse_args_and_config(return_remaining_strings=True)` hands the keys its dataclasses
  lack to `accelerate launch` (trl/cli/commands/training.py; trl/cli.py before 1.0), whose argparse
  exits with "unrecognized arguments" unless it is one of its own options;
- verl: Hydra composes the trainer config in struct mode: `a.b.c=1` for a key the config lacks stops
  with "Could not override 'a.b.c'... Key 'c' is not in struct" (`+a.b.c=1` adds it).

The keys come from the code in the checkout when it is there (verl's config directory composed by
packlint.configs.hydra), else from the release snapshots (rules/stack_schemas.json); with the release unknown, a key
is unknown only when no snapshot release has it."""

from __future__ import annotations

import os
from typing import Any

from packlint import evidence
from packlint.caches import memo
from packlint.codebase.hf_fields import no_flag
from packlint.conditions.functions.core import _is_unk
from packlint.conditions.functions.stack_code import by_keys_premise
from packlint.conditions.functions.stack_code import close_matches as _close_matches
from packlint.conditions.functions.stack_vendored import (
    _listed_roots,
    _local_fields,
    _Open,
    _vendored_classes,
    _vendored_dir,
    _vendored_quoted,
)
from packlint.conditions.tree import Builtin, EvalContext, Unk
from packlint.model_view import launchers, variant_config
from packlint.regex import LazyRegex

_LF_ROOTS = tuple(f"{n}Arguments" for n in ("Model", "Data", "Training", "Seq2SeqTraining", "Finetuning", "Generating"))
_TRL_COMMANDS = {
    "sft": ("SFTConfig",),
    "dpo": ("DPOConfig",),
    "grpo": ("GRPOConfig", "GRPOScriptArguments"),
    "kto": ("KTOConfig",),
    "reward": ("RewardConfig",),
    "rloo": ("RLOOConfig", "RLOOScriptArguments"),
    "ppo": ("PPOConfig",),
    "orpo": ("ORPOConfig",),
}
_TRL_COMMON = ("ScriptArguments", "ModelConfig", "DatasetMixtureConfig")
# `swift sft|pt|rlhf`: the pipeline's args_class in each major release (2.x SftArguments/PtArguments,
# 3.x TrainArguments for sft and pt, 4.x SftArguments/PretrainArguments; RLHFArguments throughout)
_SWIFT_COMMANDS = {
    "sft": ("SftArguments", "TrainArguments"),
    "pt": ("PtArguments", "PretrainArguments", "TrainArguments"),
    "rlhf": ("RLHFArguments",),
}
_ON = ("1", "true", "y", "yes")


def _env_on(ctx: EvalContext, name: str) -> bool | None:
    e = (ctx.variant.get("env") or {}).get(name)
    v = e.get("value") if isinstance(e, dict) else None
    return False if e is None else None if not isinstance(v, str) else v.strip().lower() in _ON


def stack_key_items(ctx: EvalContext) -> list[str]:
    """The keys of the launch's configuration its stack does not define, or whose value it rejects
    (for_each = stack_keys: PK207 and PK208)."""
    from packlint.conditions.functions.stack_config_values import value_problems

    return sorted(set(_problems(ctx)) | set(value_problems(ctx)))


def _problems(ctx: EvalContext) -> dict[str, str]:
    from packlint.conditions.functions.stack_readers import program_keys

    memo = ctx.memo
    if "stack_key_problems" not in memo:
        try:
            memo["stack_key_problems"] = _without_null_ignored(ctx, _read_problems(ctx))
        except (OSError, ValueError, KeyError, TypeError):  # a malformed snapshot or model: no finding
            memo["stack_key_problems"] = {}
        memo["stack_key_problems"] = program_keys(ctx, memo["stack_key_problems"])
        if _standalone(ctx) and memo["stack_key_problems"]:
            from packlint.conditions.functions.stack_readers import without_own_reads

            script = str(ctx.model.get("script") or "")
            memo["stack_key_problems"] = without_own_reads(script, memo["stack_key_problems"])
    found: dict[str, str] = memo["stack_key_problems"]
    return found


def _without_null_ignored(ctx: EvalContext, found: dict[str, str]) -> dict[str, str]:
    """A key the stack ignores whose value is null (a template's empty `debug:`) changes nothing when it
    is dropped: no finding. (A stack that rejects an unknown key rejects it whatever its value.)"""
    if not found:
        return found
    cfg: Any = variant_config(ctx.variant) or {}
    settings = cfg.get("settings") or {}
    ignored = ctx.memo.get("stack_key_ignored", set())
    out = {}
    for key, text in found.items():
        s = settings.get(key) or {}
        if (cfg.get("stack") == "axolotl" or key in ignored) and "value" in s and s["value"] is None:
            continue
        out[key] = text
    return out


def _read_problems(ctx: EvalContext) -> dict[str, str]:
    cfg = variant_config(ctx.variant)
    if not cfg:
        return {}
    stack = cfg.get("stack")
    if stack == "verl":
        return _verl(ctx, cfg)
    if stack == "megatron-bridge":
        from packlint.conditions.functions.bridge_config_keys import bridge_problems

        found, ignored, assumed = bridge_problems(ctx, cfg, _script_dir(ctx))
        ctx.memo.setdefault("stack_key_ignored", set()).update(ignored)
        if assumed:
            ctx.memo.setdefault("stack_key_sources", {}).update(dict.fromkeys(found, "snapshot"))
        return found
    if stack == "llamafactory":
        if any(_env_on(ctx, v) is not False for v in ("ALLOW_EXTRA_ARGS", "USE_MCA", "USE_MEGATRON_BRIDGE")):
            return {}  # extra keys allowed, or mcore_adapter's / Megatron-Bridge's arguments (or unknown)
        if _standalone(ctx):
            # a YAML checked on its own: the environment of its run is unknown, and `USE_MCA=1` /
            # `USE_MEGATRON_BRIDGE=1` make LLaMA-Factory parse it with other argument classes
            # (examples/megatron*/ set tensor_model_parallel_size, which its own classes lack)
            return {}
        return _dataclass_keys(ctx, cfg, "llamafactory", _LF_ROOTS, ())
    if stack == "axolotl":
        settings = cfg.get("settings") or {}
        if any(k == "plugins" or k.startswith("plugins.") for k in settings):
            return {}  # plugins add their own arguments to the schema (merge_input_args)
        return _dataclass_keys(ctx, cfg, "axolotl", ("AxolotlInputConfig",), ())
    if stack == "swift":
        chain = launchers(ctx.launch, ctx.variant)
        words = (chain[-1] if chain else "").split()
        command = words[1] if len(words) > 1 and words[0] == "swift" else None
        if command not in _SWIFT_COMMANDS or _standalone(ctx):
            # (a YAML checked on its own: `swift sft|rlhf` or `megatron sft|rlhf` (Megatron-SWIFT's own
            # arguments) may read it, packlint cannot tell which)
            return {}
        # `--config x.yaml` is taken by the CLI itself (swift/cli/main.py prepare_config_args, 3.10 to 4.0)
        found = _dataclass_keys(ctx, cfg, "swift", _SWIFT_COMMANDS[command], ("ENV", "config"))
        if found and _swift_ignores(cfg):  # (a flag without its value still stops argparse)
            for k, text in found.items():
                if text.endswith(_STOPS["swift"]):
                    found[k] = text[: -len(_STOPS["swift"])] + _SWIFT_IGNORED
                    ctx.memo.setdefault("stack_key_ignored", set()).add(k)
        return found
    if stack == "trl":
        chain = launchers(ctx.launch, ctx.variant)
        words = (chain[-1] if chain else "").split()
        command = words[1] if len(words) > 1 and words[0] == "trl" else None
        if command not in _TRL_COMMANDS:
            return _trl_parser_config(ctx, cfg)
        if _standalone(ctx):
            # a TRL recipe checked on its own: the program that reads it is unknown (open-r1 style programs
            # parse it with TrlParser over their own dataclasses), so its keys are not judged here
            return {}
        return _dataclass_keys(ctx, cfg, "trl", _TRL_COMMANDS[command] + _TRL_COMMON, ("env", "config"))
    return {}


def _standalone(ctx: EvalContext) -> bool:
    """The launch is the one packlint made for a config file checked on its own (`packlint check x.yaml`:
    packlint.configs.standalone), not one a script runs."""
    return str(ctx.model.get("script") or "").lower().endswith((".yaml", ".yml", ".json"))


def _swift_ignores(cfg: Any) -> bool:
    """`--ignore_args_error true`: ms-swift logs the leftover arguments and goes on (swift/llm/base.py)."""
    s = (cfg.get("settings") or {}).get("ignore_args_error") or {}
    v = s.get("value")
    return v is True or (isinstance(v, str) and v.strip().lower() in _ON + ("t",))


def _trl_parser_config(ctx: EvalContext, cfg: Any) -> dict[str, str]:
    """A Python program that parses with TrlParser.parse_args_and_config given `--config x.yaml`: a YAML
    key no dataclass field has is left over (trl/scripts/utils.py set_defaults_with_config). From TRL 0.19
    it raises "Unknown arguments from config file" unless the program passes fail_with_unknown_args=False;
    before 0.19 parse_args_and_config drops the leftovers without a word. Either way of ignoring it, the
    run trains without the key (a warning); with TRL's release unknown, the verdict names both."""
    from packlint.codebase.argparse_reader.argparse_calls import TRL_CONFIG_NOTE
    from packlint.conditions.functions.codebase_common import _schema_view

    schema = _schema_view(ctx)[0]
    note = next((n for n in (getattr(schema, "notes", None) or []) if n.startswith(TRL_CONFIG_NOTE)), None)
    if schema is None or not schema.closed or note is None:
        return {}
    dests = {spec.dest for spec in schema.specs()}
    ignored = note[len(TRL_CONFIG_NOTE) :].startswith("ignored")
    release = None if ignored else _trl_release(ctx)
    out: dict[str, str] = {}
    for key, s in (cfg.get("settings") or {}).items():
        top = key.split(".", 1)[0]
        if s.get("source") != "file" or "unknown" in s or top in dests or top == "env" or top in out:
            continue
        close = _close_matches(top, sorted(dests), n=1, cutoff=0.8)
        mean = f" (did you mean {close[0]}?)" if close else ""
        what = _TRL_RAISES
        if ignored:
            what = "the program parses with fail_with_unknown_args=False, so the run trains without it"
        elif release is None:  # (not applied in any release: a warning, whichever the checkout runs)
            what = f"from TRL 0.19 {_TRL_RAISES}; earlier releases drop it silently and the run trains without it"
        elif release[0] is False:
            what = f"TrlParser before 0.19 ({release[1]}) drops it without a word, so the run trains without it"
        out[key] = f"{top} is not a field of the program's TrlParser dataclasses{mean}: {what}"
        from packlint.conditions.functions.stack_keys import snapshot_assumption

        if snapshot_assumption(schema, ctx.model.get("script")):
            ctx.memo.setdefault("stack_key_sources", {})[key] = "snapshot"
        if ignored or release is None or release[0] is False:
            ctx.memo.setdefault("stack_key_ignored", set()).add(key)
    return out


_TRL_RAISES = "TrlParser.parse_args_and_config raises 'Unknown arguments from config file' as the job starts"


def _trl_release(ctx: EvalContext) -> tuple[bool, str] | None:
    """(whether the TRL release the checkout runs rejects a leftover `--config` key, where that release is
    said): parse_args_and_config raises from v0.19.0 (trl/scripts/utils.py, `fail_with_unknown_args`);
    None when the checkout does not say its release (a vendored copy's version file, an exact pin)."""
    from packlint.conditions.functions.codebase_common import _schema_view
    from packlint.conditions.functions.stack_keys import release_in_tree
    from packlint.rule_table import version_in_range

    tv = release_in_tree("trl", "trl", _schema_view(ctx)[0], ctx.model.get("script"))
    value = tv.get("value")
    if not value:
        return None
    rejects = version_in_range([(">=", (0, 19))], str(value))
    if rejects is None:
        return None
    return rejects, f"trl {value}, {tv.get('source') or 'the checkout'}"


def _script_dir(ctx: EvalContext) -> str | None:
    script = ctx.model.get("script")
    return os.path.dirname(os.path.abspath(script)) if isinstance(script, str) else None


def _at(ctx: EvalContext) -> tuple[str | None, str | None]:
    """(the script's directory, the launch's working directory when its script `cd`s into a folder of the
    checkout): where the stack's own code is looked for."""
    from packlint.conditions.functions.stack_config_workdir import launch_workdir

    return _script_dir(ctx), _program_dir(ctx) or launch_workdir(ctx)[0]


def _program_dir(ctx: EvalContext) -> str | None:
    """The folder of the launched program when a stack's package is beside it: Python puts that folder first on the
    import path, so the copy there is the one the program imports (lesliegaga/Agent_Foundation_Models: `deepspeed
    LLaMA-Factory/src/train.py` from the checkout's root runs LLaMA-Factory/src/llamafactory)."""
    from packlint.conditions.functions.codebase_common import _code
    from packlint.configs.versions import PACKAGE_DIRS

    program = str(ctx.launch.get("program") or "")
    facts = _code(ctx) if program.endswith(".py") else None  # (a file launched, not a stack's CLI or a module)
    file = facts.resolution.file if facts is not None and facts.resolution is not None else None
    if not isinstance(file, str) or not file.endswith(".py") or not os.path.isabs(file):
        return None
    d = os.path.dirname(file)
    key = ("stack_program_dir", d)  # (asked by every look-up of the stack's code and version of the launch)
    if key not in ctx.memo:
        pkgs = {p for dirs in PACKAGE_DIRS.values() for p in dirs if "/" not in p}
        ctx.memo[key] = d if any(os.path.isdir(os.path.join(d, p)) for p in pkgs) else None
    found: str | None = ctx.memo[key]
    return found


def _known_versions(ctx: EvalContext, stacks: tuple[str, ...]) -> dict[str, dict[str, str]]:
    from packlint.codebase import stack_schemas
    from packlint.conditions.functions.stack_keys import _VERSION_NAMES
    from packlint.configs.versions import tree_version

    out = {}
    for st in stacks:
        vname, dist = _VERSION_NAMES.get(st, (st, st))
        tv = tree_version(vname, dist, *_at(ctx))
        if tv.get("value") and stack_schemas.release_mask(st, tv["value"]) is not None:
            out[st] = tv
    return out


def _dataclass_keys(
    ctx: EvalContext, cfg: Any, stack: str, roots: tuple[str, ...], extra: tuple[str, ...]
) -> dict[str, str]:
    from packlint.codebase import stack_schemas

    fields: dict[str, list[Any]] = {}
    local = _vendored_classes(stack, *_at(ctx))
    if local and stack == "llamafactory":
        listed = _listed_roots(_vendored_dir(stack, *_at(ctx)))
        if listed is None:
            return {}  # (its parser's lists of argument classes are not read whole: the schema is open)
        more = tuple(r for r in listed if r not in roots)
        if any(r not in local and stack_schemas.class_fields(r, (stack, "transformers")) is None for r in more):
            return {}  # (a class it parses with that packlint did not read: its keys are not known)
        roots = roots + more
    if stack == "axolotl" and not any(r in local for r in roots) and _vendored_dir(stack, *_at(ctx)):
        # the checkout vendors an axolotl whose config model is not there (0.3.0 and older read the YAML into a
        # DictDefault: any key is taken, `cfg.debug` read where the code wants it): the snapshots' model is not
        # the one that runs, so no key is judged against it
        return {}
    for root in roots:
        try:
            found = (
                _local_fields(root, local, stack, 0)
                if local
                else stack_schemas.class_fields(root, (stack, "transformers"))
            )
        except _Open:
            return {}  # a base of the vendored classes packlint did not read: the schema is open
        for f, rows in (found or {}).items():
            fields.setdefault(f, []).extend(rows)
    if not fields:
        return {}
    known = _known_versions(ctx, (stack, "transformers"))
    accelerate = (stack_schemas.data() or {}).get("stacks", {}).get("accelerate", {}).get("options", {})
    live = [f for f, rows in fields.items() if any(_defined(r, known) for r in rows)]  # (a suggestion must exist)
    names = live + list(extra) + (list(accelerate) if stack == "trl" else [])
    out: dict[str, str] = {}
    snap_quoted = ((stack_schemas.data() or {}).get("stacks", {}).get(stack) or {}).get("quoted") or ()
    quoted = _vendored_quoted(stack, *_at(ctx)) | frozenset(snap_quoted)
    premise = _workdir_premise(ctx, stack) if local else None
    seen: set[str] = set()
    sources = ("file",) if stack == "axolotl" else ("file", "override", "flag")
    for key, s in (cfg.get("settings") or {}).items():
        if s.get("source") not in sources or "unknown" in s:
            continue
        top = key.split(".", 1)[0]
        if top in extra or top in seen or (stack == "trl" and top in accelerate) or top in quoted:
            continue  # (a key the vendored stack's code names itself may be taken by a road packlint does not model)
        seen.add(top)
        rows = fields.get(top) or []
        if not rows and s.get("source") == "flag" and (any(f.startswith(top) for f in fields) or no_flag(top, fields)):
            continue  # argparse takes a prefix of an option (allow_abbrev): `--lora_alp` is `--lora_alpha`
        if rows and any(_defined(r, known) for r in rows):
            if s.get("source") == "flag" and _bare(ctx, top) and _needs_value(rows, known):
                out[key] = (
                    f"--{top} is given no value, and its field takes one (HfArgumentParser makes it a one-value "
                    "option): argparse exits with 'expected one argument' as the job starts"
                )
            continue
        if not rows and _fork_program(ctx) and not _close_matches(top, [n for n in names if n != top], 1, 0.8):
            continue  # a program of the checkout's fork whose code is not here: a key of the fork's own (below)
        out[key] = _message(stack, top, rows, known, names, s.get("source") == "flag") + _STOPS[stack]
        if stack == "axolotl" and s.get("value"):  # (a key given a truthy value: one a validator may raise on)
            out[key] = _raised(ctx, top, known, out[key])
        if stack not in known and not local:  # (the vendored code decides without assuming a release)
            ctx.memo.setdefault("stack_key_sources", {})[key] = "snapshot"
        elif premise is not None:  # the vendored code found where the launch `cd`s, by its path's tail
            ctx.memo.setdefault("stack_key_sources", {})[key] = "snapshot"
            ctx.memo.setdefault("stack_key_assumption", {})[key] = premise
        elif not local and stack_schemas.between(stack, known[stack]["value"]):
            # a pinned release between two snapshots: judged by the two around it, an assumption named
            ctx.memo.setdefault("stack_key_sources", {})[key] = "snapshot"
            text = stack_schemas.between_assumption(stack, known[stack]["value"])
            ctx.memo.setdefault("stack_key_assumption", {})[key] = text
    return out


def _raised(ctx: EvalContext, top: str, known: dict[str, dict[str, str]], text: str) -> str:
    """axolotl drops a key its model lacks, except one a before-validator raises on when it is given (0.19's
    `check_deprecated_unsloth_fields`: "`unsloth_lora_mlp` has been removed"): with every release the run may
    be raising, the job stops (recorded in the memo: not ignored); with only some, the message says so."""
    from packlint.codebase import stack_schemas
    from packlint.codebase.pydantic_models import RAISED

    rows = (stack_schemas.class_fields(RAISED, ("axolotl",)) or {}).get(top) or []
    if not rows:
        return text
    mask = 0
    for r in rows:
        mask |= r[4]
    names = stack_schemas.releases("axolotl")
    where = [rel for i, rel in enumerate(names) if mask >> i & 1]
    check = rows[0][3]
    want = stack_schemas.release_mask("axolotl", known["axolotl"]["value"]) if "axolotl" in known else None
    if want is not None and want & mask == want:
        ctx.memo.setdefault("stack_key_raised", set()).add(top)
        return (
            f"{text.split(':', 1)[0]}: axolotl {known['axolotl']['value']}'s model validator {check} raises "
            f"ValueError when it is given, so validation stops the job as it starts (axolotl {where[0]} and later)"
        )
    return f"{text}; axolotl {where[0]} and later raise on it instead ({check} stops the job)"


def _fork_program(ctx: EvalContext) -> bool:
    """The launch runs the stack by a path to its program (`deepspeed src/train.py --stage sft`, not
    `llamafactory-cli`) that is not in the checkout: the repository that holds it may be a fork with fields of
    its own (Qihoo360/Light-R1 runs 360-LLaMA-Factory's `--sequence_parallel_size`). A key no release defines
    and no close spelling explains is then undecided; a misspelling stays reported."""
    from packlint.model_view import program

    prog = (program(ctx.launch, ctx.variant) or "").strip()
    if not prog.endswith(".py"):
        return False
    try:
        facts = ctx.code_facts()
    except Exception:  # a reader bug must not take the check down
        return False
    res = getattr(facts, "resolution", None)
    return res is not None and not getattr(res, "found", True) and getattr(res, "how", "") == "not-found"


_SWIFT_IGNORED = (
    ": with --ignore_args_error true ms-swift only logs 'remaining_argv' and trains without what the flag meant"
)


def _bare(ctx: EvalContext, name: str) -> bool:
    """The last `--name` (or `--name-with-dashes`) of the launch is given no value word (`--x true` and
    `--x=true` have one; the settings read both as True)."""
    flags = ctx.variant.get("flags") or {}
    occs = (flags.get(f"--{name}") or []) + (flags.get(f"--{name.replace('_', '-')}") or []) if "_" in name else []
    occs = occs or flags.get(f"--{name}") or []
    last = occs[-1] if occs else None
    if not (isinstance(last, dict) and last.get("value") is True and last.get("value_location") is None):
        return False
    # `--learning_rate $learning_rate` with the variable never set (Kwai-YuanQi/MM-RLHF's swift.sh, a template):
    # the word vanished from an empty expansion: whether a value was meant is the caller's (as PK202 reads it)
    from packlint.conditions.functions.codebase_common import empty_expansion_after

    return not empty_expansion_after(last)


def _needs_value(rows: Any, known: dict[str, dict[str, str]]) -> bool:
    """Every typing of the field (in the releases that may run) takes a value: not a plain bool
    (`nargs='?'`); `bool | None = None` takes exactly one (hf_fields `bool1`)."""
    live = [r for r in rows if _defined(r, known)]
    return bool(live) and all(r[1] != "bool" for r in live)


_STOPS = {
    "llamafactory": ": LLaMA-Factory's HfArgumentParser.parse_dict raises 'Some keys are not used by the "
    "HfArgumentParser' as the job starts (ALLOW_EXTRA_ARGS=1 lets extra keys through)",
    "axolotl": ": axolotl validates its config with a pydantic model that ignores keys it does not define "
    "(model_dump drops them), so the run trains as if the key were not there",
    "swift": ": ms-swift's parse_args leaves it over and the pipeline raises ValueError('remaining_argv: [...]') "
    "as the job starts (unless --ignore_args_error true: then it is logged and the run goes on without it)",
    "trl": ": the TRL CLI hands a key its dataclasses lack to accelerate launch, which is no option of it "
    "either and exits with 'unrecognized arguments' as the job starts",
}


# the argument files of a stack's package, relative to the package directory
def _workdir_premise(ctx: EvalContext, stack: str) -> str | None:
    """The premise under which the stack's code read is the one that runs: the launch `cd`s into a path of
    another machine mapped to a folder of the checkout that holds the stack (None when no such mapping)."""
    from packlint.conditions.functions.stack_config_workdir import launch_workdir

    workdir, premise = launch_workdir(ctx)
    found = _vendored_dir(stack, None, workdir) if premise and workdir else None
    return premise if found is not None and found == _vendored_dir(stack, *_at(ctx)) else None


def _defined(row: Any, known: dict[str, dict[str, str]]) -> bool:
    from packlint.codebase import stack_schemas

    st, mask = row[0], row[4]
    if st is None or st not in known:  # the checkout's own code, or a release not known
        return True
    want = stack_schemas.release_mask(st, known[st]["value"])
    return want is None or bool(want & mask)


def _message(stack: str, top: str, rows: Any, known: dict[str, dict[str, str]], names: list[str], flag: bool) -> str:
    from packlint.codebase import stack_schemas

    close = _close_matches(top, [n for n in names if n != top], n=1, cutoff=0.8)
    mean = f"; did you mean {close[0]}?" if close else ""
    label = {"llamafactory": "LLaMA-Factory", "trl": "TRL", "axolotl": "axolotl's config", "swift": "ms-swift"}.get(
        stack, stack
    )
    shown = f"--{top}" if flag else top
    if rows:  # a field of other releases than the one the checkout runs
        st = rows[0][0]
        mask = 0
        for r in rows:
            mask |= r[4] if r[0] == st else 0
        gone = stack_schemas.first_missing_after(st, mask)
        where = f"{st} {known[st]['value']} ({known[st]['source']})"
        when = f"was removed in {st} {gone}" if gone else f"is only in {stack_schemas.range_text(st, mask)}"
        return f"{shown} {when} and the checkout runs {where}{mean}"
    ver = ", ".join(f"{st} {v['value']}: {v['source']}" for st, v in known.items())
    return f"{shown} is not a key of {label}{f' ({ver})' if ver else ''}{mean}"


def _verl(ctx: EvalContext, cfg: Any) -> dict[str, str]:
    flags = ctx.variant.get("flags") or {}
    program = str(ctx.variant.get("program") or ctx.launch.get("program") or "")
    if not program.endswith("verl.trainer.main_ppo"):
        return {}
    name: Any = "ppo_trainer"
    for f in ("--config-name", "-cn"):
        occs = flags.get(f) or []
        if occs:
            v = occs[-1].get("value")
            name = v.rsplit(".", 1)[0] if isinstance(v, str) and v.endswith((".yaml", ".yml")) else v
    if any(f in flags for f in ("--config-path", "-cp", "--config-dir")):
        return {}  # a config of the repository's own: composed by packlint.configs.hydra when at hand
    declared = None
    if name == "ppo_trainer":  # no --config-name: the program's own @hydra.main may name another (configs.hydra)
        main = next((f for f in cfg.get("files") or [] if f.get("role") == "main"), None) or {}
        base = os.path.basename(str(main.get("path") or ""))
        if base.endswith(".yaml") and base != "ppo_trainer.yaml":
            name = declared = base[: -len(".yaml")]
    keys = _verl_keys(ctx, cfg, name if isinstance(name, str) else "", program if declared else None)
    if keys is None:
        return {}
    present, what = keys
    pinned_between = _verl_between(ctx) if not what.startswith("verl's") else None
    elsewhere = _runs_elsewhere(ctx) if what.startswith("verl's") and " config (" in what else None
    if what.startswith("verl's") and _absent_verl_source(ctx, flags):
        return {}  # the job runs a copy of verl's source the checkout lacks, not a release
    tops = {k.split(".", 1)[0] for k in present}
    if what.startswith("verl's") and any(f[:1].isalpha() and "." not in f and f not in tops for f in flags):
        return {}  # a top-level key or group no snapshot has (`model_engine=megatron`): a release the snapshots lack
    # `actor@actor_rollout_ref.actor=megatron_actor`: a config-group option put at a package (verl's own option, or one
    # found through hydra.searchpath): the keys under that package are the option's, which packlint does not compose
    chosen = [f.lstrip("+~").split("@", 1)[1] for f in flags if "@" in f and not f.startswith(("-", "hydra."))]
    out: dict[str, str] = {}
    for flag in flags:
        if flag.startswith(("+", "~", "-", "hydra.")) or "." not in flag or "/" in flag or "@" in flag:
            continue
        if flag in present or any(flag.startswith(pkg + ".") for pkg in chosen if pkg):
            continue
        parent = flag.rsplit(".", 1)[0]
        if not any(k.startswith(parent + ".") for k in present):
            continue  # under a node whose children packlint does not know (an empty mapping, null)
        close = _close_matches(flag, [k for k in present if k.startswith(parent + ".")], n=1, cutoff=0.8)
        mean = f" (did you mean {close[0]}?)" if close else ""
        if what.startswith("verl's") and " in any release " in what:
            ctx.memo.setdefault("stack_key_sources", {})[flag] = "snapshot"
        elif pinned_between is not None:  # (a pinned release packlint has no snapshot of: the two around it judge)
            ctx.memo.setdefault("stack_key_sources", {})[flag] = "snapshot"
            ctx.memo.setdefault("stack_key_assumption", {})[flag] = pinned_between
        if elsewhere is not None:  # `-m verl...` run from a folder of the machine: its verl, not the checkout's
            ctx.memo.setdefault("stack_key_machine", {})[flag] = elsewhere
        out[flag] = (
            f"{flag} is not a key of {what}{mean}: Hydra stops with 'Could not override '{flag}'' (the key is not "
            "in the struct config) as the job starts; `+key=value` adds a new key"
        )
    return out


def _runs_elsewhere(ctx: EvalContext) -> str | None:
    """Why a `python -m verl...` launch may import another verl than the checkout's: it runs in a folder outside the
    checkout (`cd /your_local_path_to/Video-o3/RL`, Shi-qingyu/videoreward-verl's scripts/ref: another project's
    verl), which comes first on `-m`'s import path; None where it runs in the checkout or where that is not said."""
    from packlint.conditions.functions.stack_config_workdir import launch_workdir

    workdir, premise = launch_workdir(ctx)
    if workdir is not None or premise is None or "outside the checkout" not in premise:
        return None
    return premise.split(", taken to", 1)[0] + ", whose own verl `-m` imports first"


def _verl_between(ctx: EvalContext) -> str | None:
    """The assumption a verl pin between two snapshot releases is judged under (as the dataclass stacks name it)."""
    from packlint.codebase import stack_schemas

    v = _known_versions(ctx, ("verl",)).get("verl", {}).get("value")
    return stack_schemas.between_assumption("verl", v) if v and stack_schemas.between("verl", v) else None


_VERL_SOURCE = LazyRegex(r"(?:^|/)verl/(?:utils|trainer|workers|models|single_controller|third_party|experimental)/")


def _absent_verl_source(ctx: EvalContext, flags: dict[str, Any]) -> bool:
    """A value names a file inside verl's own source (`custom_reward_function.path=verl/verl/utils/reward_score/
    ttrl_math/__init__.py`) that the checkout lacks: the job runs a copy of verl the checkout does not hold
    (TongLiu-github/opd2 committed thunlp/OPD's scripts without its verl/ tree, whose config adds the keys)."""
    script = ctx.model.get("script")
    base = os.path.dirname(os.path.abspath(script)) if isinstance(script, str) else None
    from packlint.configs.versions import _roots

    roots = _roots(base)
    for occs in flags.values():
        for occ in occs or ():
            v = occ.get("value") if isinstance(occ, dict) else None
            # (an absolute path names the machine's copy; a relative one, a copy beside the script or above it)
            absent = isinstance(v, str) and (
                os.path.isabs(v) or not any(os.path.exists(os.path.join(r, v)) for r in roots)
            )
            if absent and _VERL_SOURCE.search(str(v)):
                return True
    return False


def _verl_keys(ctx: EvalContext, cfg: Any, name: str, declared_by: str | None = None) -> tuple[set[str], str] | None:
    """The keys of the verl trainer config the launch composes, and what they were read from: the
    checkout's own verl config directory composed without the overrides, else the snapshots. `declared_by`:
    the program whose own `@hydra.main(config_name=...)` names `name` (hkust-nlp/Laser's vendored verl)."""
    files = cfg.get("files") or []
    main = next((f for f in files if f.get("role") == "main"), None)
    tied = main is not None and main.get("candidates")
    if main is not None and main.get("own_name") == "unknown":
        return None  # the program names its own config by an expression: which keys it has is not known
    if main is not None and (not main.get("unknown") or tied):
        if cfg.get("incomplete") not in (None, main.get("unknown")) or (name != "ppo_trainer" and not declared_by):
            return None  # the composition is partial, or a config packlint composes only with the flags
        from packlint.codebase import launch_pythonpath

        own = _vendored_verl(_script_dir(ctx), tuple(launch_pythonpath(ctx.launch, ctx.variant)), declared_by)
        if not own:
            return None
        what = f"verl's {name} config ({main.get('path')})"
        if tied and len(tied) > 1:  # several copies equally near the script: judged only when every one lacks it
            what = f"verl's {name} config in any of the checkout's copies ({', '.join(tied)})"
        elif tied:
            # a sibling sub-project's only copy (Light-R1's evaluation code vendors a verl; its training scripts run
            # another): which verl the launch runs is not known from the tree, so its keys are undecided
            return None
        return {p for k in own for p in _prefixes(k)}, what
    from packlint.codebase import stack_schemas

    snap = stack_schemas.verl_config_keys(name)
    if snap is None:
        return None
    table, rels = snap
    known = _known_versions(ctx, ("verl",))
    if str(known.get("verl", {}).get("source", "")).startswith("the vendored"):
        # the checkout vendors the verl that runs (HuskyKingdom/openvla-oft-yhs's SimpleVLA-RL/verl, its version file
        # 0.1, its ppo_trainer.yaml extended with data.task_suite_name ...) and its config was not composed: that copy's
        # own config decides the keys, not the release's snapshot
        return None
    want = stack_schemas.release_mask("verl", known["verl"]["value"]) if "verl" in known else None
    if want:
        keys = {k for k, m in table.items() if m & want}
        what = f"verl {known['verl']['value']}'s {name} config ({known['verl']['source']})"
    else:
        keys = set(table)
        what = f"verl's {name} config in any release packlint has a snapshot of ({rels[0]} to {rels[-1]})"
    return {p for k in keys for p in _prefixes(k)}, what


_VENDORED: dict[tuple[str | None, tuple[str, ...], str | None], set[str]] = memo()


def _vendored_verl(script_dir: str | None, pythonpath: tuple[str, ...] = (), program: str | None = None) -> set[str]:
    """The keys of the checkout's verl/trainer/config/ppo_trainer.yaml, composed as Hydra does (no
    overrides); where several vendored copies are equally near the script, the keys of any of them (a
    key is missing only when every copy lacks it); empty when one cannot be composed."""
    memo_key = (script_dir, pythonpath, program)
    if memo_key not in _VENDORED:
        from packlint.configs import _search_dirs, table
        from packlint.configs.hydra import compose_hydra, compose_keys

        entry = next((e for e in table()["program"] if e.get("stack") == "verl"), None)
        target: dict[str, Any] = {}
        incomplete: list[str] = []
        tied: list[str] = []
        cfg: dict[str, Any] = {"files": [], "settings": target}
        if entry is not None:
            spec, dirs = entry.get("file", {}), _search_dirs(script_dir)
            compose_hydra(cfg, spec, {}, dirs, target, incomplete, program, tied, pythonpath)
        ok = entry is not None and not incomplete and not any(f.get("unknown") for f in cfg["files"])
        keys = set(target) if ok else set()
        if entry is not None and tied:
            if program is not None:
                keys = set()  # (copies equally near, each with its own program: not judged)
            else:
                each = [compose_keys(d, str(entry.get("file", {}).get("default_name") or "ppo_trainer")) for d in tied]
                keys = set().union(*each) if all(k is not None for k in each) else set()  # type: ignore[arg-type]
        _VENDORED[memo_key] = keys
    return _VENDORED[memo_key]


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _f_stack_key_assumed(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The assumption a PK207 verdict rests on (the stack's release unknown: the snapshots stand for it)."""
    if _is_unk(a[0]):
        return a[0]
    if a[0] not in _problems(ctx):
        return Unk(f"{a[0]} is a key of the stack", "absent")
    stack = dict(variant_config(ctx.variant) or {}).get("stack")
    if ctx.memo.get("stack_key_sources", {}).get(a[0]) != "snapshot" or not isinstance(stack, str):
        return Unk("the keys come from the checkout, or from the release it runs", "absent")
    from packlint.conditions.functions.codebase_common import machine_made_program

    text = ctx.memo.get("stack_key_assumption", {}).get(a[0]) or _snapshot_text(ctx, stack)
    evidence.note(ctx, (evidence.ASSUMED, text))  # (the finding's premise: `packlint inspect`, JSON)
    evidence.note(ctx, machine_made_program(ctx))  # (a git-ignored copy of the stack: the machine's)
    return text


def _snapshot_text(ctx: EvalContext, stack: Any) -> str:
    from packlint.codebase import stack_schemas
    from packlint.conditions.functions.codebase_common import _schema_view
    from packlint.conditions.functions.stack_keys import snapshot_assumption

    schema = _schema_view(ctx)[0]
    text = snapshot_assumption(schema, ctx.model.get("script")) if schema is not None else None
    return text or (stack_schemas.assumption(stack) if isinstance(stack, str) else "")


def _f_stack_key_ignored(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The stack ignores the key (it trains without it) rather than stopping: axolotl, a TrlParser
    program with fail_with_unknown_args=False."""
    if _is_unk(a[0]):
        return a[0]
    if a[0] not in _problems(ctx):
        return Unk(f"{a[0]} is a key of the stack", "absent")
    cfg: Any = variant_config(ctx.variant) or {}
    stack = cfg.get("stack")
    if stack == "axolotl":
        return a[0].split(".", 1)[0] not in ctx.memo.get("stack_key_raised", set())
    return a[0] in ctx.memo.get("stack_key_ignored", set())


def _f_stack_key_problem(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    text = _problems(ctx).get(a[0])
    if text is not None:  # (a file only its keys tie to the stack: what the program does with it, stack_code)
        premise = by_keys_premise(ctx)
        if isinstance(premise, Unk):
            return premise
        evidence.note(ctx, premise)
        machine = ctx.memo.get("stack_key_machine", {}).get(a[0])
        if machine is not None:
            evidence.note(ctx, (evidence.MACHINE, machine))
    return text if text is not None else Unk(f"{a[0]} is a key of the stack", "absent")


def _functions() -> dict[str, Any]:
    from packlint.conditions.tree import BOOL, STR, Function

    return {
        "stack_key_problem": Function(
            (STR,),
            (),
            STR,
            _f_stack_key_problem,
            "why the stack does not take this configuration key (LLaMA-Factory, the TRL CLI, verl's Hydra "
            "overrides; snapshots in rules/stack_schemas.json); absent when it does",
        ),
        "stack_key_ignored": Function(
            (STR,),
            (),
            BOOL,
            _f_stack_key_ignored,
            "the stack ignores the key and trains without it (axolotl; a TrlParser program with "
            "fail_with_unknown_args=False) rather than stopping",
        ),
        "stack_key_assumed": Function(
            (STR,),
            (),
            STR,
            _f_stack_key_assumed,
            "the assumption stack_key_problem rests on (the stack's release unknown, its snapshots standing for "
            "it); absent when the keys come from the checkout or the release it runs",
        ),
    }


STACK_CONFIG_KEY_FUNCTIONS = _functions()
