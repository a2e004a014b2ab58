"""The releases of a stack that a launch's flag schema stands for (issue 28): a schema expanded from
HfArgumentParser dataclasses whose classes came from the stack snapshots (rules/stack_schemas.json)
carries, on each field that only some releases define, the releases that do (`FlagSpec.releases`).
Where the checkout says which release it runs (a vendored copy's version file, an exact pin in its
requirement files: packlint.configs.versions.tree_version), the fields of other releases are taken
out of the schema, and each remembers why ("`--max_seq_length` is in trl 0.12.2-0.19.1; the checkout
pins trl==0.24.0"): PK201 then says the flag was removed. With the release unknown every release's
fields stay, so a flag is unknown only when no release has it."""

from __future__ import annotations

import os
from typing import Any

# snapshot stack -> (packlint.configs.versions stack name, distribution)
_VERSION_NAMES = {
    "transformers": ("hf-trainer", "transformers"),
    "trl": ("trl", "trl"),
    "llamafactory": ("llamafactory", "llamafactory"),
    "axolotl": ("axolotl", "axolotl"),
    "openrlhf": ("openrlhf", "openrlhf"),
    "swift": ("swift", "ms-swift"),
}


def _parts(releases: str) -> list[tuple[str, int]]:
    out = []
    for part in releases.split(";"):
        st, _, mask = part.partition(":")
        if mask.isdigit():
            out.append((st, int(mask)))
    return out


def release_in_tree(vname: str, dist: str | None, schema: Any, script: str | None) -> dict[str, str]:
    """The release of a stack the checkout says the launch runs (packlint.configs.versions.tree_version):
    looked up from the launched program's own directory first (its package's setup.py or requirements
    pin what it runs: R1-V's `src/r1-v/setup.py` beside `src/r1-v/src/open_r1/sft.py`), then from the
    script's; `{}` when neither says."""
    from packlint.configs.versions import tree_version

    dirs = []
    origin = getattr(schema, "parser_origin", None) if schema is not None else None
    if isinstance(origin, str) and os.path.isabs(origin):
        dirs.append(os.path.dirname(origin.rsplit(":", 1)[0]))
    if script:
        dirs.append(os.path.dirname(os.path.abspath(script)))
    for d in dirs:
        tv = tree_version(vname, dist, d)
        if tv.get("value"):
            return tv
    return {}


def versioned_schema(schema: Any, script: str | None) -> Any:
    """The schema for the releases the checkout runs (itself when nothing is known or nothing differs)."""
    specs = [s for s in schema.specs() if getattr(s, "releases", None)]
    if not specs or not script:
        return schema
    from packlint.codebase import stack_schemas

    known: dict[str, dict[str, str]] = {}
    for st in {st for s in specs for st, _ in _parts(s.releases)}:
        vname, dist = _VERSION_NAMES.get(st, (st, st))
        tv = release_in_tree(vname, dist, schema, script)
        v = tv.get("value")
        if v and tv.get("disputed"):
            continue  # the checkout's pins disagree (a package's setup.py, the root's freeze): no release is known
        if v and stack_schemas.release_mask(st, v) is not None and lacked_class(schema, st, v) is None:
            known[st] = tv
    if not known:
        return schema
    keep: dict[str, Any] = {}
    removed: dict[str, str] = {}
    for opt, spec in schema.flags.items():
        why = _absent(spec, known) if getattr(spec, "releases", None) else None
        if why is None:
            keep[opt] = spec
        else:
            removed[opt] = why
    if not removed:
        return schema
    from packlint.codebase.model import FlagSchema

    out = FlagSchema(
        keep,
        schema.allow_abbrev,
        schema.conflict_handler,
        schema.closed,
        list(schema.open_reasons),
        schema.parser_origin,
        list(schema.notes),
        schema.kind,
        schema.positionals,
    )
    out.__dict__["removed"] = removed
    return out


def lacked_class(schema: Any, stack: str, version: str) -> str | None:
    """A snapshot class the schema's fields come from that the release `version` of `stack` does not have
    (4D-LLM: environment.yaml pins trl==0.8.6, the code builds `TrlParser((GRPOConfig, ...))`, and GRPOConfig
    came in trl 0.14). The code contradicts the pin: the pin is not the release that runs, so it decides
    nothing (at the pin the import itself fails, before any parser exists)."""
    from packlint.codebase import stack_schemas

    want = stack_schemas.release_mask(stack, version)
    if want is None:
        return None
    names = set()
    for spec in schema.specs():
        g = getattr(spec, "generated_from", None) or ""
        if " " in g:
            names.add(g.split(" ", 1)[1].split(".", 1)[0])
    for name in sorted(names):
        found = stack_schemas.find_class(name)
        mask = found[1].get("mask") if found is not None and found[0] == stack else None
        if isinstance(mask, int) and not want & mask:
            return name
    return None


def _absent(spec: Any, known: dict[str, dict[str, str]]) -> str | None:
    """Why the flag is not in the releases the checkout runs, or None when it may be."""
    from packlint.codebase import stack_schemas

    texts = []
    for st, mask in _parts(spec.releases):
        if st not in known:
            return None
        want = stack_schemas.release_mask(st, known[st]["value"])
        if want is None or want & mask:
            return None
        gone = stack_schemas.first_missing_after(st, mask)
        newest_has = gone is None
        if gone is not None and stack_schemas._key(known[st]["value"]) >= stack_schemas._key(gone):
            texts.append(f"is gone from {st} {gone} on (it is in {stack_schemas.range_text(st, mask)})")
        elif newest_has:
            texts.append(f"was added after this release (it is in {stack_schemas.range_text(st, mask)})")
        else:
            texts.append(f"is only in {stack_schemas.range_text(st, mask)}")
        texts[-1] += f", and the checkout runs {st} {known[st]['value']}: {known[st]['source']}"
    return "; ".join(texts) or None


def removed_text(schema: Any, name: str) -> str | None:
    """Why a flag the checkout's release lacks is absent (for PK201's message), or None."""
    removed = getattr(schema, "__dict__", {}).get("removed") or {}
    return removed.get(name.split("=", 1)[0])


def snapshot_assumption(schema: Any, script: str | None) -> str | None:
    """The assumption an unknown-flag verdict over a schema built from the stack snapshots makes: the
    releases of the stacks its dataclasses came from that the checkout does not name (None: every
    such stack's release is known, or no field came from a snapshot)."""
    memo = schema.__dict__.setdefault("_assumption", {})
    if script in memo:
        found: str | None = memo[script]
        return found
    from packlint.codebase import stack_schemas

    stacks = set()
    for spec in schema.specs():
        g = getattr(spec, "generated_from", None) or ""
        head = g.split(" ", 1)[0]
        if " " in g and head in _VERSION_NAMES:
            stacks.add(head)
    unknown = []
    if stacks and script:
        for st in sorted(stacks):
            vname, dist = _VERSION_NAMES[st]
            tv = release_in_tree(vname, dist, schema, script)
            v = tv.get("value")
            lacked = lacked_class(schema, st, v) if v else None
            if v and tv.get("disputed"):
                # the checkout's pins disagree: the nearest one is taken, which is an assumption
                unknown.append(f"{st} {v}, the nearest of the checkout's pins ({tv['disputed']})")
            elif not v:
                unknown.append(stack_schemas.assumption(st))
            elif stack_schemas.release_mask(st, v) is None:
                rels = stack_schemas.releases(st)
                span = f"{rels[0]} to {rels[-1]}" if rels else "none"
                unknown.append(
                    f"{st} {v}, which the checkout pins, has the fields of a release packlint has a snapshot of "
                    f"({span}); it has no snapshot of {v} itself"
                )
            elif lacked is not None:
                unknown.append(
                    f"{st}'s release is one packlint has a snapshot of that has {lacked}: the checkout pins {st} {v}, "
                    f"which has no {lacked}, and the code imports it, so the pin is not the release that runs"
                )
            elif stack_schemas.between(st, v):
                unknown.append(stack_schemas.between_assumption(st, v))
    memo[script] = "; ".join(unknown) or None
    return memo[script]


def outside_pin(schema: Any, script: str | None) -> str | None:
    """Why a flag no snapshot defines may still be the program's: a stack its dataclasses or flags came from is pinned
    by the checkout at a release outside packlint's snapshots (None: every such stack's release is one they cover,
    or not pinned)."""
    memo = schema.__dict__.setdefault("_outside", {})
    if script in memo:
        found: str | None = memo[script]
        return found
    from packlint.codebase import stack_schemas

    out = None
    stacks = {g.split(" ", 1)[0] for s in schema.specs() if " " in (g := getattr(s, "generated_from", None) or "")}
    for st in sorted(stacks & set(_VERSION_NAMES)):
        vname, dist = _VERSION_NAMES[st]
        v = release_in_tree(vname, dist, schema, script).get("value") if script else None
        rels = stack_schemas.releases(st)
        if v and rels and stack_schemas.release_mask(st, v) is None:
            out = f"the checkout pins {st} {v}, a release outside packlint's snapshots ({rels[0]} to {rels[-1]})"
            break
    memo[script] = out
    return out


def older_field(schema: Any, script: str | None, flag: str) -> str | None:
    """Why an unknown flag may be a field of the release the checkout pins, older than every snapshot: the stack's
    releases before the snapshots had a field of that name (stack_schemas.json `older_names`, names only), or None.
    HLTCHKUST/cqr4cqa pins transformers 4.4.2, whose TrainingArguments has `sharded_ddp`."""
    from packlint.codebase import stack_schemas

    name = flag.split("=", 1)[0].lstrip("-").replace("-", "_")
    older = ((stack_schemas.data() or {}).get("older_names") or {}) if name else {}
    stacks = {g.split(" ", 1)[0] for s in schema.specs() if " " in (g := getattr(s, "generated_from", None) or "")}
    for st in sorted(stacks & set(_VERSION_NAMES) & set(older)):
        vname, dist = _VERSION_NAMES[st]
        v = release_in_tree(vname, dist, schema, script).get("value") if script else None
        rels, known = stack_schemas.releases(st), older[st]
        old = v and rels and stack_schemas._key(v) < stack_schemas._key(rels[0])
        if old and name in (known.get("names") or ()):
            return (
                f"the checkout pins {st} {v}, older than packlint's snapshots, and {st} {known.get('from')} to "
                f"{known.get('to')} have a field {name}"
            )
    return None


def field_premise(schema: Any, spec: Any, script: str | None) -> tuple[str, str] | str | None:
    """What a verdict on a flag's value rests on when its definition (type, nargs, choices) came from a stack
    snapshot: None where the checkout pins a release packlint has (or the field is the code's own); an assumption
    (evidence.ASSUMED, why) where no release is known or the pins disagree; a reason text (no verdict) where the
    checkout pins a release outside the snapshots (baaivision/DenseFusion's transformers==4.31.0, whose `report_to`
    was a list before every snapshot made it one string)."""
    g = getattr(spec, "generated_from", None) or ""
    st = g.split(" ", 1)[0]
    if " " not in g or st not in _VERSION_NAMES or schema is None:
        return None
    from packlint import evidence
    from packlint.codebase import stack_schemas

    vname, dist = _VERSION_NAMES[st]
    tv = release_in_tree(vname, dist, schema, script)
    v = tv.get("value")
    if not v:
        return (evidence.ASSUMED, stack_schemas.assumption(st))
    if tv.get("disputed"):
        return (evidence.ASSUMED, f"{st} {v}, the nearest of the checkout's pins ({tv['disputed']})")
    if stack_schemas.release_mask(st, v) is None:
        rels = stack_schemas.releases(st)
        span = f"{rels[0]} to {rels[-1]}" if rels else "none"
        return f"the checkout pins {st} {v}, a release outside packlint's snapshots ({span}): its fields are not known"
    between = stack_schemas.between(st, v)
    if between:
        return (evidence.ASSUMED, f"{st} {v} defines the field as {between[0]} and {between[1]} do")
    return None


def _f_flag_assumed(ctx: Any, node: Any, a: list[Any]) -> Any:
    """The assumption PK201 rests on where the schema's dataclasses came from the stack snapshots."""
    from packlint.conditions.functions.codebase_common import _schema_view
    from packlint.conditions.functions.core import _is_unk
    from packlint.conditions.tree import Unk

    if _is_unk(a[0]):
        return a[0]
    schema = _schema_view(ctx)[0]
    if schema is not None and removed_text(schema, a[0]) is not None:
        return Unk("the release the checkout runs lacks the flag", "absent")  # a verdict on a known release
    text = snapshot_assumption(schema, ctx.model.get("script")) if schema is not None else None
    if not text:
        return Unk("no snapshot release assumed", "absent")
    from packlint import evidence

    evidence.note(ctx, (evidence.ASSUMED, text))  # (the finding's premise: `packlint inspect`, JSON)
    from packlint.conditions.functions.codebase_common import machine_made_program

    evidence.note(ctx, machine_made_program(ctx))
    return text


def _abbreviated(schema: Any, name: str) -> list[str]:
    """The flags a `--prefix` abbreviates where the parser takes abbreviations (argparse's allow_abbrev, on
    unless the program turns it off; HfArgumentParser keeps it), in the order the parser defines them."""
    flag = name.split("=", 1)[0]
    if schema is None or not getattr(schema, "allow_abbrev", False) or not flag.startswith("--"):
        return []
    return [k for k in schema.flags if k.startswith(flag) and k != flag]


def _f_flag_rejection(ctx: Any, node: Any, a: list[Any]) -> Any:
    """How the program's parser stops on a flag it does not define: argparse's 'unrecognized
    arguments', or HfArgumentParser's ValueError (hf_argparser.py parse_args_into_dataclasses)."""
    from packlint.conditions.functions.codebase_common import _schema_view
    from packlint.conditions.functions.core import _is_unk

    if _is_unk(a[0]):
        return a[0]
    schema = _schema_view(ctx)[0]
    matches = _abbreviated(schema, a[0])
    if len(matches) > 1:  # (allow_abbrev: a prefix of several flags; ramanathanlab/Megatron-DeepSpeed `--vocab`)
        return f"argparse exits with 'ambiguous option: {a[0].split('=', 1)[0]} could match {', '.join(matches)}'"
    if schema is not None and schema.kind == "hf":
        return (
            f"HfArgumentParser raises 'Some specified arguments are not used by the HfArgumentParser: [{a[0]!r}, ...]'"
        )
    return f"argparse exits with 'unrecognized arguments: {a[0]}'"


def _functions() -> dict[str, Any]:
    from packlint.conditions.tree import STR, Function

    return {
        "flag_rejection": Function(
            (STR,),
            (),
            STR,
            _f_flag_rejection,
            "how the program's parser stops on an undefined flag (argparse or HfArgumentParser), for messages",
        ),
        "flag_assumed": Function(
            (STR,),
            (),
            STR,
            _f_flag_assumed,
            "the assumption an unknown-flag verdict rests on where the program's dataclasses came from the stack "
            "snapshots and the checkout names no release (absent otherwise)",
        ),
    }


STACK_KEY_FUNCTIONS = _functions()
