"""Built-in functions over the code a launch runs (issue 10): its environment reads and its flag
schema (the program's parser, or a shipped Megatron-LM release snapshot)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from packlint import evidence
from packlint.conditions.functions.codebase_common import (
    REMAINDER_ROOM,
    _code,
    _code_label,
    _in_remainder,
    _record_flag,
    _schema_view,
    _show_path,
)
from packlint.conditions.functions.codebase_env import (
    _compile_two_regexes,
    _f_code_read_at,
    _f_code_read_before,
    _f_code_reads,
    _f_env_close_read,
    _f_script_expands,
    _f_unread_export_count,
    _f_unread_exports,
)
from packlint.conditions.functions.core import (
    _entry_value,
    _f_flag_distinct_in_script,
    _is_unk,
    _occurrences,
    _unread_source,
    python_int,
    repeat_occurrences,
)
from packlint.conditions.functions.flag_values import (
    _flag_problem,
    _value_words,
    emptied_names,
    unset_value_after,
)
from packlint.conditions.functions.stack_keys import field_premise, outside_pin
from packlint.conditions.tree import BOOL, INT, STR, Builtin, EvalContext, Function, Unk
from packlint.model_view import flag_occurrences, launch_argv, launches, program, variants

if TYPE_CHECKING:
    from packlint.model_types import FlagEntryJSON

# Issue 10: conditions over the code a launch runs (packlint.codebase). The facts come from the check's
# code session through EvalContext.code_facts(); when the program's source is not at hand and it is one
# of Megatron-LM's root programs, its flags are checked against the shipped release snapshots
# (packlint.codebase.snapshots). Nothing here reads code itself.


def _f_code_searched(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    return _code(ctx) is not None


def _f_code_known(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    facts = _code(ctx)
    return facts is not None and facts.known


def _f_megatron_semantics(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """True; where the launched code is not at hand, a Megatron rule's assert and defaults are upstream Megatron-LM's,
    an assumption its findings name (dailiuyao/tmp-file: `cd /home/.../Megatron-LM; ... pretrain_bert.py`)."""
    facts = _code(ctx)
    if facts is None or not facts.known:
        from packlint.conditions.functions.codebase_common import megatron_fork

        why = megatron_fork(ctx)
        if why is not None:  # (a fork's program without its code: upstream's semantics may not be its)
            return Unk(f"not upstream Megatron-LM ({why}) and its code is not at hand", "unknown")
        from packlint import evidence

        evidence.note(ctx, (evidence.ASSUMED, evidence.UPSTREAM_MEGATRON))
    return True


def _f_code_program(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    facts = _code(ctx)
    if facts is None:
        return Unk("code reading is off or the launch runs no program", "absent")
    return _code_label(facts) if facts.known else (facts.resolution.program or "?")


def _f_code_detail(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    facts = _code(ctx)
    if facts is None:
        return Unk("code reading is off or the launch runs no program", "absent")
    return facts.resolution.detail or facts.resolution.how


def _f_flags_checked(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    from packlint.codebase.argparse_reader.argparse_calls import NO_COMMAND_LINE

    schema = _schema_view(ctx)[0]
    return schema is not None and not any(NO_COMMAND_LINE in r for r in schema.open_reasons)


def _f_flags_closed(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    schema = _schema_view(ctx)[0]
    if schema is None:
        return Unk("no flag schema for this program", "absent")
    return bool(schema.closed)


def _f_flags_source(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    schema, what, _ = _schema_view(ctx)
    return what if schema is not None else Unk("no flag schema for this program", "absent")


def _f_flag_defined(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    schema = _schema_view(ctx)[0]
    if schema is None:
        return Unk("no flag schema for this program", "absent")
    if not a[0].startswith("-"):
        return True
    if schema.lookup(a[0]) is not None:
        return True
    name = a[0].split("=", 1)[0]
    if getattr(schema, "allow_abbrev", False) and name.startswith("--"):
        hits = [s for k, s in schema.flags.items() if k.startswith(name)]
        if len({id(s) for s in hits}) > 1 and any(getattr(s, "releases", None) for s in hits):
            # a prefix of several flags of different releases (feiyu12138/llava `--half`: halfpool, and 4.x's
            # half_precision_backend): argparse takes it, or calls it ambiguous, by the release that runs
            return Unk(f"{name} abbreviates flags of different releases: the release decides", "unknown")
        older = outside_pin(schema, ctx.model.get("script")) if len({id(s) for s in hits}) > 1 else None
        if older is not None and any(getattr(s, "generated_from", None) for s in hits):
            # Yimi81/Diffusion-Factory pins transformers==4.35.2, older than every snapshot: `--lr_scheduler`
            # abbreviates lr_scheduler_type and the snapshots' lr_scheduler_kwargs (added in 4.36): which fields the
            # pinned release has decides whether the prefix is ambiguous
            return Unk(f"{name} abbreviates several flags, and {older}: its fields decide", "unknown")
    short = name[:1] == "-" and name[1:2] not in ("-", "")
    # a single-dash option abbreviates a longer single-dash one too (argparse's _get_option_tuples: `-r` for `-rl`)
    longer = [k for k in schema.flags if len(k) > len(name) and k.startswith(name)] if short else []
    if longer and getattr(schema, "allow_abbrev", False):
        return True
    if getattr(schema, "positional_room", 0) == REMAINDER_ROOM and _in_remainder(ctx, schema, a[0]):
        return Unk(f"{a[0]} comes after the words the program's REMAINDER positional takes: it is passed on", "unknown")
    older = outside_pin(schema, ctx.model.get("script")) if not _program_read(ctx) else None
    if older is not None and not schema.close_names(a[0], 1, 0.75):
        # the stack's own program (its code not in the checkout), pinned at a release the snapshots do not cover, given
        # a name unlike any of their flags (openrlhf 0.8.9's `--flash_attn`, renamed in 0.8.10): that release's own
        # flag, for all packlint knows. (A program of the checkout built on a stack's dataclasses keeps its verdict on
        # its premise: a name in no release is its own mistake, Chain-of-Spot's `--mm_projector_lr`.)
        return Unk(older, "unknown")
    from packlint.conditions.functions.stack_keys import older_field

    gone = older_field(schema, ctx.model.get("script"), a[0])
    if gone is not None:
        return Unk(gone, "unknown")
    _record_flag(ctx, a[0])  # the words that give it (a command that may not run: machine)
    return False


def _program_read(ctx: EvalContext) -> bool:
    facts = _code(ctx)
    return facts is not None and bool(facts.known)


def _f_flag_suggestion(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """' (did you mean --x?)' from the schema, '' when nothing is close."""
    if _is_unk(a[0]):
        return a[0]
    schema, _, snap = _schema_view(ctx)
    if schema is None:
        return ""
    close = schema.close_names(a[0], 1, 0.75)
    from packlint.conditions.functions.stack_keys import removed_text

    gone = removed_text(schema, a[0])
    if gone is not None:
        return f" ({a[0]} {gone}{'; did you mean ' + close[0] + '?' if close else ''})"
    if snap is not None and snap.pinned is not None:
        from packlint.codebase.snapshots import snapshot_for

        full = snapshot_for(program(ctx.launch, ctx.variant), None)
        rel = full.flag_releases.get(a[0]) if full is not None else None
        if full is not None and rel:  # a flag of other releases: that says more than a similar name
            return f" (it exists in Megatron-LM {full.range_text(rel)})"
    return f" (did you mean {close[0]}?)" if close else ""


def _f_flag_close_match(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The one flag of the schema close to this name (a fix may rename to it); absent when none or
    several are close, so no fix guesses between them."""
    if _is_unk(a[0]):
        return a[0]
    schema = _schema_view(ctx)[0]
    if schema is None:
        return Unk("no flag schema for this program", "absent")
    close = schema.close_names(a[0], 2, 0.75)
    return close[0] if len(close) == 1 else Unk("no single close flag", "absent")


def _f_flag_releases(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The snapshot releases a flag is valid in, when not all of those considered; absent otherwise."""
    if _is_unk(a[0]):
        return a[0]
    snap = _schema_view(ctx)[2]
    rel = snap.flag_releases.get(a[0]) if snap is not None else None
    if not rel or len(rel) == len(snap.considered):
        return Unk(f"{a[0]} is valid in every release considered", "absent")
    return snap.range_text(rel)


def _f_flag_removed(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    snap = _schema_view(ctx)[2]
    return snap is not None and snap.removed_after(a[0]) is not None


def _spec_of(ctx: EvalContext, name: str) -> Any:
    """The schema's spec of a flag (`name` may be undecided), or Unk when there is none."""
    if _is_unk(name):
        return name
    schema = _schema_view(ctx)[0]
    spec = schema.lookup(name) if schema is not None else None
    return spec if spec is not None else Unk(f"{name} is not in the schema", "absent")


def _f_flag_spec(field_name: str) -> Callable[[EvalContext, Builtin, list[Any]], Any]:
    def impl(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
        spec = _spec_of(ctx, a[0])
        if isinstance(spec, Unk):
            return spec
        v = getattr(spec, field_name)
        if field_name == "origin":
            return v if spec.origin_file else Unk("no origin", "absent")
        return "|".join(v) if isinstance(v, tuple) else ("" if v is None else str(v))

    return impl


def _launch_files(ctx: EvalContext) -> tuple[str, ...]:
    """The files that wrote this launch: the script, and every file that assigned one of its variables
    or wrote one of its flags (sourced files among them)."""
    memo = ctx.memo.get("launch_files")
    if memo is None:
        seen: dict[str, None] = {}
        for f in (ctx.model.get("script"), ctx.launch.get("file")):
            if isinstance(f, str):
                seen[f] = None
        for table in (ctx.variant.get("env", {}), ctx.variant.get("unexported", {})):
            for entry in table.values():
                file = entry.get("file") if isinstance(entry, dict) else None
                if isinstance(file, str):
                    seen[file] = None
        memo = ctx.memo["launch_files"] = tuple(seen)
    return memo


def _f_flag_problem(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """What is wrong with the values a flag is given, by its spec in the schema; absent when nothing is."""
    spec = _spec_of(ctx, a[0])
    if isinstance(spec, Unk):
        return spec
    unk = None
    after_unknown = _after_first_unknown_option(ctx, a[0])
    for k, occ in enumerate(flag_occurrences(ctx.variant, "flags", a[0])):
        if not isinstance(occ, dict):  # (a model not of the declared shape)
            continue  # type: ignore[unreachable]
        why = after_unknown[k] if k < len(after_unknown) else None
        if why is not None:
            unk = Unk(why, "unknown")
            continue
        if _value_words(occ) is None and spec.takes_value and _unread_source(ctx) is not None:
            # a file the script sources could not be read: the value may be set there
            unk = Unk(f"the value of {a[0]} may come from {_unread_source(ctx)}", "unknown")
            continue
        schema = _schema_view(ctx)[0]
        p = _flag_problem(spec, occ, a[0], _launch_files(ctx), _positional_room(schema))
        if isinstance(p, str):
            premise = field_premise(schema, spec, ctx.model.get("script"))
            if isinstance(premise, str):  # a pinned release packlint has no snapshot of: no verdict
                return Unk(premise, "unknown")
            evidence.note(ctx, premise)  # (None: nothing assumed)
            _record_flag(ctx, a[0])
            ctx.memo.setdefault("flag_problem_at", {})[a[0]] = k  # (report_at flag:NAME:problem)
            return p
        if isinstance(p, Unk) and spec.nargs in (None, "+") and _value_words(occ) is None:
            gone = unset_value_after(occ, a[0], _launch_files(ctx), ctx.variant.get("vanished") or [])
            if gone is not None:  # (the environment the script runs in may set it: the machine's)
                evidence.note(ctx, (evidence.MACHINE, f"${gone}, which the script never sets, gave no word"))
                _record_flag(ctx, a[0])
                ctx.memo.setdefault("flag_problem_at", {})[a[0]] = k
                return "needs a value but none follows it: argparse exits with " + (
                    "'expected one argument'" if spec.nargs is None else "'expected at least one argument'"
                )
            empty = unset_value_after(occ, a[0], _launch_files(ctx), emptied_names(ctx.variant))
            if empty is not None:  # (`SOURCE=""` then `--source $SOURCE`: no word, from the checkout alone)
                _record_flag(ctx, a[0])
                ctx.memo.setdefault("flag_problem_at", {})[a[0]] = k
                return f"needs a value but none follows it: the script sets ${empty} to the empty string, so bash " + (
                    "drops the word and argparse exits with 'expected one argument'"
                    if spec.nargs is None
                    else "drops the word and argparse exits with 'expected at least one argument'"
                )
        if isinstance(p, Unk):
            unk = p
    return unk if unk is not None else Unk(f"{a[0]}'s values are fine", "absent")


def _positional_room(schema: Any) -> int:
    """How many words the program's positional arguments take (0: it has none; -1: any number)."""
    if schema is not None and not getattr(schema, "closed", True) and getattr(schema, "kind", "") != "hf":
        # an open argparse parser may gain positionals during the parse (princeton-nlp/TRIME's fairseq: the task
        # picked by a first parse_known_args registers `data`) or hand stray words back (parse_known_args)
        return -1
    if schema is None or not getattr(schema, "positionals", False):
        return 0
    return int(getattr(schema, "positional_room", -1))


def _after_first_unknown_option(ctx: EvalContext, name: str) -> list[str | None]:
    """For each occurrence of `name` in the argv (in order): why its value cannot be judged, or None.
    A parser that keeps unknown words (`parse_known_args`, an open schema) hands what follows the
    first option it does not define to other code, which may read the later words any way it likes."""
    schema = _schema_view(ctx)[0]
    if schema is None or schema.closed:
        return []
    memo = ctx.memo.get("first_unknown_option")
    if memo is None:
        memo = ctx.memo["first_unknown_option"] = _first_unknown_option(ctx, schema)
    argv, first = memo
    if first is None:
        return []
    out: list[str | None] = []
    for i, w in enumerate(argv):
        if w == "--":
            break
        if isinstance(w, str) and (w == name or w.startswith(name + "=")):
            out.append(
                None
                if i < first
                else f"it follows {argv[first]}, an option the parser does not define and keeps for other code "
                f"({'; '.join(schema.open_reasons[:1]) or 'an open parser'})"
            )
    return out


def _first_unknown_option(ctx: EvalContext, schema: Any) -> tuple[list[Any], int | None]:
    argv = launch_argv(ctx.launch, ctx.variant) or []
    for i, w in enumerate(argv):
        if w == "--":
            break
        if isinstance(w, str) and w.startswith("--") and len(w) > 2 and schema.lookup(w) is None:
            return argv, i
    return argv, None


# argparse actions that keep every occurrence: giving such a flag twice is no repeat
_ACCUMULATING = frozenset(("append", "append_const", "extend", "count"))
# transformers.hf_argparser.string_to_bool (transformers 5.24, hf_argparser.py:36): case-insensitive
_HF_BOOL = {"yes": True, "true": True, "t": True, "y": True, "1": True}
_HF_BOOL.update({"no": False, "false": False, "f": False, "n": False, "0": False})


def _f_flag_repeat_distinct(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """How many different values the script's own occurrences of a flag give the program, read as
    the program's parser reads them: an accumulating action (`append`, `extend`, `count`) keeps
    every occurrence (no repeat: 1); values compare after the flag's type (`1` and `01` are one int;
    HfArgumentParser's bools: `True`, `true`, `1`, `yes` are one value). Undecided where the action is
    unknown: no schema, a flag the schema lacks, a custom action. Hydra overrides (no leading dash)
    compare as OmegaConf reads them (flag_distinct_in_script)."""
    name = a[0]
    if _is_unk(name):
        return name
    override = _branch_override(ctx, name)
    if override is not None:
        return override
    if not name.startswith("-"):
        return _f_flag_distinct_in_script(ctx, node, a)
    string = _string_override(ctx, name)
    if string is not None:
        return string
    occs = repeat_occurrences(_occurrences(ctx, "flags", name))
    if len(occs) < 2:
        return len(occs)
    schema = _schema_view(ctx)[0]
    if schema is None:
        return Unk(
            f"the program's parser is not known: whether a repeated {name} replaces or accumulates depends on "
            "its action",
            "unknown",
        )
    spec = schema.lookup(name)
    hf = schema.kind == "hf"
    if spec is None and not hf:
        return Unk(f"{name} is not in the program's parser: its action is unknown", "unknown")
    if spec is not None:
        if spec.action in _ACCUMULATING:
            return 1
        if spec.action.startswith("custom") or spec.nargs == "custom":
            return Unk(f"{name} has a custom action ({spec.action}): packlint cannot tell how it repeats", "unknown")
        if not spec.takes_value:
            return 1  # a switch: every occurrence sets the same constant (a value after it is PK202's)
    exit_at = _argparse_exit_before(ctx, schema, occs[-1])
    if exit_at is not None:
        return Unk(f"argparse exits before the last {name} is read: {exit_at}", "unknown")
    if spec is not None and isinstance(
        _flag_problem(spec, occs[-1], name, _launch_files(ctx), _positional_room(schema)), str
    ):
        return Unk(f"argparse exits at the last {name} (PK202): no occurrence wins", "unknown")
    from packlint.conditions.functions.core import _repeat_value

    vals = [_occurrence_value(spec, o, name, ctx, schema) for o in occs]
    # (a value from a variable the script never sets is the environment's)
    vals = [_repeat_value(o, name) if isinstance(v, str) and v == "" else v for o, v in zip(occs, vals, strict=True)]
    unknown = [v for v in vals if isinstance(v, Unk)]
    known = [v for v in vals if not isinstance(v, Unk)]
    typ = spec.type if spec is not None else None
    norm: set[Any] = set()
    bool_words = bool(known) and all(v.strip().lower() in _HF_BOOL for v in known)
    for v in known:
        if typ == "int" and python_int(v) is not None:
            norm.add(python_int(v))
        elif typ == "float" and _as_float(v) is not None:
            norm.add(_as_float(v))
        elif bool_words and (hf and typ in (None, "bool", "custom:string_to_bool")):
            norm.add(_HF_BOOL[v.strip().lower()])
        elif typ == "bool" and not hf:
            norm.add(v != "")  # argparse's type=bool: any non-empty text is True
        else:
            norm.add(v)
    one_bool = bool_words and len({_HF_BOOL[v.strip().lower()] for v in known}) == 1
    if one_bool and len(norm) > 1 and ((hf and spec is None) or (typ or "").startswith("custom")):
        # the field's type is not known (an HfArgumentParser field packlint did not expand, a custom
        # converter): `True` and `true` may be one bool
        return Unk(f"the values of {name} may be one bool spelt differently", "unknown")
    if unknown and len(norm) < 2:
        return unknown[0]
    return len(norm)


def _string_override(ctx: EvalContext, name: str) -> Unk | None:
    """The last occurrence comes from a parameter string the command expands after its own occurrence
    (Khadgar123/ThinkStream: `extra_args="... --save_strategy steps ..."` set per phase, appended after the base
    `--save_strategy epoch`, "NB: this OVERRIDES the global --save_strategy"): an override by design, as a caller's
    "$@" is; a repeat written twice in one place, or a string's value a later word replaces, is still reported."""
    file, first = ctx.launch.get("file"), ctx.launch.get("line") or 0
    last = ctx.launch.get("end_line") or first
    if not first:
        return None
    occs = repeat_occurrences(flag_occurrences(ctx.variant, "flags", name))

    def written_here(o: Any) -> bool:
        return o.get("file") == file and first <= (o.get("line") or 0) <= last

    # the string comes last (its value wins): appended to override; a string's value a later word replaces
    # (`ARGS=(--seq-length 4096 ...)` then `"${ARGS[@]}" --seq-length 8192`) is lost, and reported
    if len(occs) > 1 and not written_here(occs[-1]) and any(written_here(o) for o in occs[:-1]):
        why = f"{name} is given in the command and again by a parameter string appended after it: an override"
        return Unk(why, "unknown")
    return None


def _branch_override(ctx: EvalContext, name: str) -> Unk | None:
    """The later occurrences come from a branch packlint could not decide, and another path of the same launch gives
    the flag fewer times: the branch adds its value over the base one on purpose (EDAS-jd/EDAS's verl scripts:
    `case "${DEVICE}" in npu) TRAINER+=(trainer.n_gpus_per_node=16)` over the base array's 8), as a caller's
    "$@" does; not a repeat."""
    if not ctx.variant.get("when"):
        return None
    inside = _set_in_branch(ctx, name)
    if inside is not None:
        return inside
    here = len(repeat_occurrences(flag_occurrences(ctx.variant, "flags", name)))
    if here < 2:
        return None
    for other in variants(ctx.launch):
        if other is ctx.variant:
            continue
        n = len(repeat_occurrences(flag_occurrences(other, "flags", name)))
        if 0 < n < here:
            why = f"{name} is given again only on some branches: the branch overrides the base value on purpose"
            return Unk(why, "unknown")
    return None


def _set_in_branch(ctx: EvalContext, name: str) -> Unk | None:
    """The launch runs inside a branch packlint could not decide, and the flag's later occurrences, written in that
    branch, set it over a value given before the branch began (verl's run_ppo_trainer_megatron.sh: `common_params=(...
    global_profiler.tool=nsys ...)`, then `elif [ "$device_name" == "npu" ]; then python3 -m verl.trainer.main_ppo
    "${common_params[@]}" ... global_profiler.tool=npu`): the branch's own value, as `x=1; if c; then x=2; fi`."""
    import re

    starts = []
    for w in ctx.variant.get("when") or []:
        m = re.match(r"(.+?):(\d+): ", str(w))
        if m:
            starts.append((m.group(1), int(m.group(2))))
    if not starts:
        return None
    occs = repeat_occurrences(flag_occurrences(ctx.variant, "flags", name))
    for file, line in starts:
        after = [o for o in occs if o.get("file") == file and (o.get("line") or 0) > line]
        before = [o for o in occs if o not in after]
        if after and before and occs[-1] is after[-1] and len({str(o.get("value")) for o in after}) == 1:
            why = f"{name} is set inside the branch at line {line} over the value given before it: the branch's own"
            return Unk(why, "unknown")
    return None


def _occurrence_value(spec: Any, occ: FlagEntryJSON, name: str, ctx: EvalContext, schema: Any) -> Any:
    """_parsed_value, but unknown for an occurrence of a flag that takes a value and is written with an
    expansion after it that is empty here (`--finetune ${MODEL_PATH}`, a variable the script never sets):
    the caller's value, or none at all (argparse exits), never the switch's `true` (OpenGVLab/VideoMamba)."""
    if spec is not None and spec.takes_value and _value_words(occ) is None:
        p = _flag_problem(spec, occ, name, _launch_files(ctx), _positional_room(schema))
        if isinstance(p, Unk):
            return p
    return _parsed_value(spec, occ, name)


def _parsed_value(spec: Any, occ: FlagEntryJSON, name: str) -> Any:
    """The value argparse gives one occurrence of a flag: a one-value flag takes the first word after it
    (`nargs=N`: N words); the words past them are the parser's positionals' (OpenGVLab/InternVideo's
    `--mask_type t_consist ${IMAGE_PATH} ${OUTPUT_DIR} ${MODEL_PATH}`: the value is `t_consist`)."""
    words = _value_words(occ)
    nargs = spec.nargs if spec is not None else "custom"
    n = 1 if nargs is None else nargs if isinstance(nargs, int) and not isinstance(nargs, bool) else 0
    if not n or not spec.takes_value or words is None or "unknown" in occ or len(words) <= n:
        return _entry_value(occ, name)
    return _entry_value({**occ, "value": words[:n]}, name)


def _parsed_values(ctx: EvalContext, name: str) -> list[Any]:
    """The value argparse gives each of the script's occurrences of a flag (_parsed_value), in order."""
    schema = _schema_view(ctx)[0]
    spec = schema.lookup(name) if schema is not None and name.startswith("-") else None
    occs = repeat_occurrences(_occurrences(ctx, "flags", name))
    return [_parsed_value(spec, o, name) for o in occs]


def _f_flag_parsed_values(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    return ", ".join("?" if isinstance(v, Unk) else repr(v) for v in _parsed_values(ctx, a[0]))


def _f_flag_parsed(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    vals = _parsed_values(ctx, a[0])
    return vals[-1] if vals else Unk(f"{a[0]} is not given by the script", "absent")


def _argparse_exit_before(ctx: EvalContext, schema: Any, last: FlagEntryJSON) -> str | None:
    """The first flag occurrence before `last` at which argparse exits (a flag that needs a value
    given none, a switch given one, PK202's problems): past it no occurrence "wins". None: none."""
    end = (last.get("file"), last.get("line") or 0, last.get("column") or 0)
    room = _positional_room(schema)
    files = _launch_files(ctx)
    for fname, occs in ctx.variant.get("flags", {}).items():
        spec = schema.lookup(fname) if fname.startswith("-") else None
        if spec is None or spec.action.startswith("custom") or spec.nargs == "custom":
            continue
        for occ in occs:
            if not isinstance(occ, dict) or (occ.get("file"), occ.get("line") or 0, occ.get("column") or 0) >= end:
                continue
            if occ.get("file") != end[0]:
                continue
            problem = _flag_problem(spec, occ, fname, files, room)
            if isinstance(problem, str):
                return f"{fname} at line {occ.get('line')} {problem}"
    return None


def _as_float(v: str) -> float | None:
    try:
        return float(v)
    except ValueError:
        return None


def _budget_spent(ctx: EvalContext) -> str | None:
    """Why the program's parser was read only in part: packlint's budget for reading it ran out (any
    program, audit R13), or None."""
    facts = _code(ctx)
    schema = facts.schema if facts is not None and facts.known else None
    if schema is None:
        return None
    spent = next((r for r in schema.open_reasons if r.startswith("packlint's budget")), None)
    return None if spent is None else f"{spent} (so an unknown flag is not reported)"


def _program_not_read(facts: Any) -> str | None:
    """Why the launched program's own file was not read (too large, not a regular file), or None."""
    if facts is None or not facts.known or not facts.resolution.file:
        return None
    import os

    target = os.path.abspath(facts.resolution.file)
    for skipped in facts.skipped or []:
        if skipped.reason.startswith("not read:") and os.path.abspath(skipped.file) == target:
            return f"{_show_path(skipped.file)} was {skipped.reason}; its flags and env reads are unknown"
    return None


def _f_flags_unchecked(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """Why the flags of a Megatron-LM-style program were not checked, for one info (PK206): a fork
    whose code is not at hand (the upstream snapshots do not apply; said at the first such launch of
    the script), or code found whose parser packlint could not resolve. Absent otherwise."""
    from packlint.conditions.functions.codebase_common import fork_named, megatron_fork, megatron_style

    program_ = program(ctx.launch, ctx.variant)
    facts = _code(ctx)
    unread = _program_not_read(facts)
    if unread is not None:  # (any program: a 1 GiB train.py is named, not read, R11)
        return unread
    # (a launch without flags has none to check; with flags, PK201 has read the code facts already)
    spent = _budget_spent(ctx) if ctx.variant.get("flags") else None
    if spent is not None:
        return spent
    flags = list(ctx.variant.get("flags") or {})
    if not megatron_style(program_, flags):
        return Unk("not a Megatron-LM-style launch", "absent")
    if facts is not None and facts.known:
        if facts.schema is not None or not megatron_style(program_, []):  # (a root program's parser only)
            return Unk("the flags were checked", "absent")
        return (
            f"packlint found the code of {_code_label(facts)} but not its argparse parser (an import it could not "
            "resolve, and no vendored copy of it in the tree)"
        )
    why = megatron_fork(ctx)
    if why is None:
        return Unk("upstream: the snapshots apply", "absent")
    script = ctx.model.get("script")
    for launch in launches(ctx.model):  # once per script: at its first launch of a fork program
        other = launch.get("program")
        vs = launch.get("variants") or []
        oflags = list(vs[0].get("flags") or {}) if vs else []
        if megatron_style(other, oflags) and fork_named(other, oflags, script):
            if launch.get("id") != ctx.launch.get("id"):
                return Unk("said at an earlier launch", "absent")
            break
    shown = program_ or "its program"
    return (
        f"{shown} is not upstream Megatron-LM of a release packlint holds ({why}) and its code was not found, so "
        "the Megatron-LM release snapshots, startup checks and defaults do not apply: the rules decided from them "
        "are undecided"
    )


CODEBASE_FUNCTIONS: dict[str, Function] = {
    "code_searched": Function(
        (),
        (),
        BOOL,
        _f_code_searched,
        "packlint looked for the code the launch runs (code reading on, a program given)",
    ),
    "code_known": Function((), (), BOOL, _f_code_known, "the source of the launch's program was found and read"),
    "megatron_semantics": Function(
        (),
        (),
        BOOL,
        _f_megatron_semantics,
        "true; names the assumption that the program is upstream Megatron-LM when its code is not at hand",
    ),
    "code_program": Function(
        (), (), STR, _f_code_program, "the program file (relative to its code base) or, when not found, as written"
    ),
    "code_detail": Function(
        (), (), STR, _f_code_detail, "how the program was found, or where packlint looked (for messages)"
    ),
    "code_reads": Function(
        (STR,),
        (),
        BOOL,
        _f_code_reads,
        "a module of the launched code base reads the environment variable "
        "(undecided where a computed name may be it; absent without code)",
    ),
    "code_read_at": Function((STR,), (), STR, _f_code_read_at, "file:line of the first read of the variable"),
    "flags_checked": Function(
        (), (), BOOL, _f_flags_checked, "a flag schema is at hand: the program's parser, or a Megatron-LM snapshot"
    ),
    "flags_closed": Function(
        (),
        (),
        BOOL,
        _f_flags_closed,
        "the parser rejects flags it does not define (no parse_known_args, nothing unresolved)",
    ),
    "flags_source": Function((), (), STR, _f_flags_source, "what the flags were checked against (for messages)"),
    "flag_defined": Function(
        (STR,), (), BOOL, _f_flag_defined, "the program's parser defines the flag (argparse's prefix matching included)"
    ),
    "flag_suggestion": Function((STR,), (), STR, _f_flag_suggestion, "' (did you mean --x?)' from the schema, or ''"),
    "flag_close_match": Function(
        (STR,), (), STR, _f_flag_close_match, "the one flag of the schema close to this name (absent: none or several)"
    ),
    "flag_releases": Function(
        (STR,), (), STR, _f_flag_releases, "Megatron-LM snapshots: the releases the flag is valid in, when not all"
    ),
    "flag_removed": Function(
        (STR,), (), BOOL, _f_flag_removed, "Megatron-LM snapshots: the flag is gone from the newest release considered"
    ),
    "flag_type": Function((STR,), (), STR, _f_flag_spec("type"), "the flag's type in the schema"),
    "flag_action": Function((STR,), (), STR, _f_flag_spec("action"), "the flag's argparse action"),
    "flag_origin": Function((STR,), (), STR, _f_flag_spec("origin"), "file:line where the flag is defined"),
    "flag_problem": Function(
        (STR,),
        (),
        STR,
        _f_flag_problem,
        "what argparse rejects in the flag's values (type, choices, a value for a "
        "store_true flag, several words for a one-value flag); absent when nothing",
    ),
    "flag_repeat_distinct": Function(
        (STR,),
        (),
        INT,
        _f_flag_repeat_distinct,
        "how many different values the script's occurrences give the flag, as its parser reads them "
        "(append/extend/count keep every value: 1; HfArgumentParser bools; undecided where the action is unknown)",
    ),
    "flag_parsed_values": Function(
        (STR,),
        (),
        STR,
        _f_flag_parsed_values,
        "the values the script's occurrences of the flag get, as its parser reads them (a one-value flag: the "
        "first word after it; the rest are the positionals'), quoted and joined",
    ),
    "flag_parsed": Function(
        (STR,),
        (),
        STR,
        _f_flag_parsed,
        "the value the last of the script's occurrences of the flag gets, as its parser reads it",
    ),
    "flags_unchecked": Function(
        (),
        (),
        STR,
        _f_flags_unchecked,
        "why a Megatron-LM-style program's flags were not checked (a fork without its code, a parser not "
        "resolved); absent when they were or the program is not one",
    ),
    "code_read_before": Function(
        (STR,),
        (),
        STR,
        _f_code_read_before,
        "the commit (git history of the code base) that last added or removed a quoted mention of the "
        "variable in a Python file, when the code no longer reads it; absent otherwise",
    ),
    "env_close_read": Function(
        (STR,),
        (),
        STR,
        _f_env_close_read,
        "the one variable the launched code reads whose name is close to this one (a likely misspelling); "
        "absent when none",
    ),
    "unread_exports": Function(
        (STR, STR),
        (),
        STR,
        _f_unread_exports,
        "the exported variables no Python module of the launched code reads, outside the two regexes "
        "(library, judged elsewhere), not expanded by the script, not a close misspelling: 'A, B and 3 more'",
        literal=(0, 1),
        compile_static=_compile_two_regexes,
    ),
    "unread_export_count": Function(
        (STR, STR),
        (),
        INT,
        _f_unread_export_count,
        "how many exported variables unread_exports lists",
        literal=(0, 1),
        compile_static=_compile_two_regexes,
    ),
    "script_expands": Function(
        (STR,), (), BOOL, _f_script_expands, "the script text itself expands the variable ($NAME)"
    ),
}
