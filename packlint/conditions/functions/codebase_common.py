"""What the code facts of a launch are, shared by the code-base condition modules: the facts
themselves (`_code`), the pinned Megatron-LM release, how a program file is shown in a message, and
the launch script's text (read once), and the flag schema of the launch (the program's parser or a
Megatron-LM release snapshot)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from packlint.caches import memo
from packlint.conditions.tree import EvalContext
from packlint.model_view import flag_occurrences, launch_argv, program


def _code(ctx: EvalContext) -> Any:
    try:
        return ctx.code_facts()
    except Exception:  # a reader bug must not take the check down: the rules then see no code
        return None


def machine_made_program(ctx: EvalContext) -> Any:
    """The premise that the launched code is made on the machine, or None: the program (`-m verl.trainer.main_ppo`,
    `src/train.py`) lies in a directory the checkout's `.gitignore` ignores and the checkout lacks (dhrubo326/BiG-RAG
    deleted its modified verl/ and ignores `verl/`: the machine's copy runs, not a release). A verdict from the
    stack's snapshots then rests on the machine."""
    import os

    memo = ctx.memo
    if "machine_program" in memo:
        return memo["machine_program"]
    memo["machine_program"] = None
    prog = program(ctx.launch, ctx.variant)
    script = ctx.model.get("script")
    facts = _code(ctx)
    if not isinstance(prog, str) or not isinstance(script, str) or "$" in prog or (facts is not None and facts.known):
        return None
    module = prog[3:].strip().split(" ", 1)[0] if prog.startswith("-m ") else None
    path = module.replace(".", "/") + ".py" if module else prog  # (the module's file: `verl/` ignores what is in it)
    from packlint.codebase.resolve import script_checkout_dirs
    from packlint.configs.elsewhere import _ignored_by_checkout

    dirs = script_checkout_dirs(script)
    if not path or not dirs or any(os.path.exists(os.path.join(d, path)) for d in dirs):
        return None
    outside = _machine_pythonpath(ctx, dirs[-1])
    if outside is not None:
        from packlint import evidence

        # johnhaofu/compiler-reward-agent-rl: `export PYTHONPATH=/root/autodl-tmp/verl-agent:$PYTHONPATH`, a fork
        memo["machine_program"] = (
            evidence.MACHINE,
            f"the launch's PYTHONPATH puts {outside}, a folder of the machine, before the installed packages: the "
            "launched code may be its copy",
        )
        return memo["machine_program"]
    found = _ignored_by_checkout(path, dirs, dirs[-1])
    if found is not None:
        memo["machine_program"] = (found[0], f"{found[1]} (the launched code is the machine's copy)")
    return memo["machine_program"]


def _machine_pythonpath(ctx: EvalContext, root: str) -> str | None:
    """The first absolute folder outside the checkout on the launch's PYTHONPATH (as the script sets it)."""
    entry = (ctx.variant.get("env") or {}).get("PYTHONPATH")
    text = entry.get("value") if isinstance(entry, Mapping) else None
    for part in text.split(":") if isinstance(text, str) else ():
        if part.startswith("/") and not (part + "/").startswith(root.rstrip("/") + "/"):
            return part
    return None


def _pinned_megatron(ctx: EvalContext) -> str | None:
    session = getattr(ctx._code, "__self__", None)
    return getattr(getattr(session, "options", None), "megatron_version", None)


def _schema_view(ctx: EvalContext) -> tuple[Any, str, Any]:
    """(FlagSchema or None, what it was read from (for messages), Snapshot or None)."""
    view = ctx.memo.get("schema_view")
    if view is None:
        view = ctx.memo["schema_view"] = _read_schema_view(ctx)
    elif view[0] is not None and view[2] is None:
        _code(ctx)  # (a schema read from the code: what finding the code rests on is this rule's premise too)
    if view[2] is not None:  # upstream's release snapshot stands for code the checkout does not hold (issue 26)
        from packlint import evidence

        evidence.note(ctx, (evidence.ASSUMED, f"{evidence.UPSTREAM_MEGATRON}, {view[2].describe}"))
    return view


_PARSER_PATCH = re.compile(r"parse_args|add_\w+_args|sys\.modules")


def _parser_patched(facts: Any) -> bool:
    """The parser packlint read is Megatron's (a file of a `megatron` package) and the launched code patches it at
    import (`parse_args`, an `_add_*_args` group, or a module in sys.modules: codebase.startup_checks.find_patches),
    not only the validation. A program's own parser (MindSpeed-LLM's convert_ckpt_v2.py) is not Megatron's."""
    origin = str(getattr(facts.schema, "parser_origin", None) or "").replace("\\", "/")
    if "/megatron/" not in "/" + origin:
        return False
    startup = getattr(facts, "startup", None) or {}
    return any(_PARSER_PATCH.search(str(p.get("what", ""))) for p in startup.get("patches") or [])


def _read_schema_view(ctx: EvalContext) -> tuple[Any, str, Any]:
    facts = _code(ctx)
    if facts is not None and facts.known:
        if facts.schema is None:
            return None, "", None
        from packlint.conditions.functions.stack_keys import versioned_schema

        if _parser_patched(facts):
            # MindSpeed-LLM's megatron_adaptor wraps the vendored Megatron's parse_args (its own flags and
            # choices): the parser packlint read is not the one that runs, so the flags are unknown
            return None, "", None
        schema = versioned_schema(facts.schema, ctx.model.get("script"))
        return schema, _code_label(facts, "the parser of "), None
    from packlint.codebase.snapshots import snapshot_for

    program_ = program(ctx.launch, ctx.variant)
    if program_ and "openrlhf" in program_:  # issue 28: OpenRLHF's programs from the release snapshots
        from packlint.codebase import stack_schemas
        from packlint.conditions.functions.stack_keys import versioned_schema

        module = stack_schemas.argparse_program(program_)
        if module is not None and facts is not None and not facts.known:
            schema = versioned_schema(stack_schemas.argparse_schema(module), ctx.model.get("script"))
            if not stack_schemas.argparse_covers_all(module):
                # a release whose parser packlint could not read whole (0.10's train_ppo_ray): a flag of no
                # release read may be that release's, and that release's flags are not known
                return None, "", None
            rels = stack_schemas.releases("openrlhf")
            return schema, f"OpenRLHF's {module} in releases {rels[0]} to {rels[-1]} (its code was not found)", None
    snap = snapshot_for(program_, _pinned_megatron(ctx))
    if snap is None:
        return None, "", None
    if megatron_fork(ctx) is not None:
        # the upstream snapshots apply to upstream code only: a fork without its code is undecided
        return None, "", None
    return snap.schema, snap.describe + " (its code base was not found)", snap


def _code_label(facts: Any, prefix: str = "") -> str:
    """The program file as a reader can find it: relative to the working directory when under it or
    one level up, else absolute."""
    res = facts.resolution
    return f"{prefix}{_show_path(res.file) if res.file else (res.program or '?')}"


def _show_path(path: str) -> str:
    import os

    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("../..") else rel


_LINES_MEMO: dict[str, list[str]] = memo()


def _script_text(path: str) -> str:
    if path not in _LINES_MEMO:
        from packlint.safe_io import read_regular
        from packlint.source import MAX_SCRIPT_BYTES

        data = read_regular(path, MAX_SCRIPT_BYTES)
        _LINES_MEMO[path] = [data.decode("utf-8", "replace") if data is not None else ""]
    return _LINES_MEMO[path][0]


def megatron_fork(ctx: EvalContext) -> str | None:
    """Why the launch's Megatron-style program is not upstream Megatron-LM of a snapshot release, when its
    code is not at hand (issue 26 item 4), or None: its path or its checkout names a fork
    (`snapshots.fork_evidence`), or it passes flags no release of the snapshots defined (`--deepspeed`,
    `--zero-stage`: Megatron-DeepSpeed; `--data-impl`: a Megatron-LM older than the snapshots). Upstream's
    snapshots, startup checks and defaults are then not the launched code's: the rules decided from them
    are undecided, and PK206 says so once per script. With the code at hand the code decides (None)."""
    memo = ctx.memo
    if "megatron_fork" not in memo:
        memo["megatron_fork"] = _megatron_fork(ctx)
    why: str | None = memo["megatron_fork"]
    return why


def _megatron_fork(ctx: EvalContext) -> str | None:
    facts = _code(ctx)
    if facts is not None and facts.known:
        return None
    return fork_named(program(ctx.launch, ctx.variant), list(ctx.variant.get("flags") or {}), ctx.model.get("script"))


# packages that replace Megatron-LM's functions when imported (MindSpeed's and ModelLink's `megatron_adaptor`:
# attention, arguments, datasets on Ascend NPUs): a program importing one runs their code, not the Megatron read
_ADAPTOR_PACKAGES = ("mindspeed", "mindspeed_llm", "modellink")


def patched_by_adaptor(facts: Any) -> str | None:
    """Why a program whose code is at hand still does not run upstream Megatron-LM's code: its import closure
    imports a package that patches Megatron at import (VITA-MLLM/Long-VITA's long_vita_modellink/
    pretrain_long_vita.py: `from modellink import megatron_adaptor`) and packlint did not read it; None otherwise."""
    tops = {str(m).split(".", 1)[0] for m in getattr(facts, "unresolved_imports", None) or ()}
    hit = next((p for p in _ADAPTOR_PACKAGES if p in tops), None)
    if hit is None:
        return None
    return f"the program imports {hit}, which patches Megatron-LM's code when imported, and its code is not at hand"


# the flags that make a launch Megatron-style when its program is not one of Megatron-LM's root programs
_MEGATRON_MARKS = (
    "--num-layers",
    "--tensor-model-parallel-size",
    "--pipeline-model-parallel-size",
    "--micro-batch-size",
)


def megatron_style(program_: str | None, flags: list[str]) -> bool:
    """The launch runs one of Megatron-LM's root programs, or passes at least two of its defining flags."""
    from packlint.codebase.snapshots import ROOT_PROGRAMS

    if program_ and program_.replace("\\", "/").rsplit("/", 1)[-1] in ROOT_PROGRAMS:
        return True
    return sum(1 for f in _MEGATRON_MARKS if f in flags) >= 2


def fork_named(program_: str | None, flags: list[str], script: str | None) -> str | None:
    """`megatron_fork` from the names alone (the program's path, the script's checkout, the flags)."""
    from packlint.codebase.snapshots import (
        ROOT_PROGRAMS,
        foreign_flags,
        fork_evidence,
        release_span,
        undefined_flags,
        upstream_named,
    )

    if program_ and program_.replace("\\", "/").rsplit("/", 1)[-1] in ROOT_PROGRAMS:
        why = fork_evidence(program_, script)
        if why is not None:
            return why
    if upstream_named(program_, script):
        # the path says upstream: a flag of no release is a mistake (PK201), not a fork's; several such flags are one
        # code base's, not several typos (allenai/OLMoE's copies of megablocks' scripts run `third_party/Megatron-LM/
        # pretrain_gpt.py`, megablocks' fork: `--moe-num-experts`, `--moe-top-k`, `--DDP-impl`)
        several = undefined_flags(flags)
        if len(several) < 2:
            return None
        shown = ", ".join(several[:3]) + (f" and {len(several) - 3} more" if len(several) > 3 else "")
        span = release_span()
        return f"it passes {shown}, which no Megatron-LM release from {span} defines (an older one, or a fork)"
    # with the program's path unknown (`${DIR}/pretrain_gpt.py`, DIR=`pwd`), no snapshot checks the flags and no
    # PK201 calls a near name a typo: it counts too
    foreign = foreign_flags(flags, close_too=program_ is None)
    if not foreign:
        return None
    shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
    return f"it passes {shown}, which no Megatron-LM release from {release_span()} defines"


# FlagSchema.positional_room of a parser with a REMAINDER positional (argparse_calls.REMAINDER_ROOM)
REMAINDER_ROOM = -2


def _in_remainder(ctx: EvalContext, schema: Any, name: str) -> bool:
    """Whether every occurrence of option `name` comes after the first positional word of the launch's
    arguments: with a `nargs=REMAINDER` positional (`xla_spawn.py --num_cores 8 train.py --lr 1`, microsoft/LMOps),
    argparse gives that word and every word after it, options included, to the positionals."""
    argv = launch_argv(ctx.launch, ctx.variant) or []
    start, skip = None, 0
    for i, w in enumerate(argv):
        if skip:
            skip -= 1
            continue
        if not isinstance(w, str):
            key = w.get("key") if isinstance(w, dict) else None
            if isinstance(key, str) and key.startswith("-") and schema.lookup(key) is not None:
                continue  # `--nproc_per_node=$1`: one option word with its value, whatever $1 is
            start = i  # a word packlint cannot know (`$ARGS`): the positionals may start here
            break
        if w.startswith("-") and len(w) > 1:
            spec = schema.lookup(w.split("=", 1)[0])
            if spec is None:
                continue  # an unknown option: argparse sets it aside (and rejects it), the next word is a positional
            if "=" not in w and getattr(spec, "takes_value", False):
                if _paired_after_empty_word(ctx, w):
                    # `--nproc_per_node $SLURM_NTASKS_PER_NODE $MULTI_NODE train.py`: the words the caller's
                    # variables give are not known, so where the positionals start is not either
                    start = i
                    break
                nargs = getattr(spec, "nargs", None)
                skip = nargs if isinstance(nargs, int) and not isinstance(nargs, bool) else 1 if nargs is None else 0
                if skip == 0:  # an option of several words (`+`, `*`): where it stops is argparse's to say
                    start = i + 1
                    break
            continue
        start = i
        break
    if start is None:
        return False
    # an occurrence before the positionals (surely before them, when where they start is undecided) is the parser's
    return all(not (isinstance(w, str) and w.split("=", 1)[0] == name) for w in argv[:start])


def _paired_after_empty_word(ctx: EvalContext, name: str) -> bool:
    """An occurrence of option `name` whose value packlint paired with a word written after an expansion that gave
    no word here (flag_values._value_after_empty_expansion)."""
    from packlint.conditions.functions.flag_values import _value_after_empty_expansion

    return any(
        isinstance(occ, dict) and _value_after_empty_expansion(occ, name) is not None
        for occ in flag_occurrences(ctx.variant, "flags", name)
    )


def _record_flag(ctx: EvalContext, name: str) -> None:
    """Note the evidence of the occurrences of flag `name` as premises of the rule being evaluated."""
    from packlint import evidence

    for occ in flag_occurrences(ctx.variant, "flags", name):
        if isinstance(occ, dict):
            evidence.record(ctx, occ)


def empty_expansion_after(occ: Mapping[str, Any]) -> bool:
    """The occurrence's flag is written followed by an unquoted `$...` word (an expansion that was empty)."""
    import re

    path, line, col = occ.get("file"), occ.get("line"), occ.get("column")
    if not isinstance(path, str) or not isinstance(line, int) or not isinstance(col, int):
        return False
    lines = _script_text(path).splitlines()
    if not 0 < line <= len(lines):
        return False
    rest = lines[line - 1][col - 1 :]
    return re.match(r"--?[\w-]+(?:[ \t]+|[ \t]*\\$)\$(?!\()", rest) is not None or (
        rest.rstrip().endswith("\\")
        and line < len(lines)
        and re.match(r"[ \t]*\$(?!\()", lines[line]) is not None
        and re.fullmatch(r"--?[\w-]+[ \t]*\\", rest.strip()) is not None
    )
