"""Built-in functions over the launch model: the launch's environment and shell variables, the
program's and the launcher's flags, the launcher and program, and the value helpers (int, matches,
quote). The helpers that read an ENV_ENTRY / FLAG_ENTRY are shared with the other function modules."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from packlint import evidence
from packlint.conditions.tree import BOOL, INT, MAX_INT_BITS, STR, Builtin, EvalContext, Function, Unk
from packlint.model_view import (
    diagnostics,
    entry_location,
    env_entry,
    flag_occurrences,
    launch_argv,
    launches,
    shell_entry,
    variants,
    world_size,
)
from packlint.regex import Undecided
from packlint.regex_guard import rule_pattern

if TYPE_CHECKING:
    from packlint.model_types import EnvEntryJSON, FlagEntryJSON, LocationJSON, SettingJSON, SizeJSON

    # what _entry_value reads: an ENV_ENTRY, a FLAG_ENTRY, a SETTING or a size (value or unknown + LOCATION)
    EntryJSON = EnvEntryJSON | FlagEntryJSON | SettingJSON | SizeJSON


def python_int(text: str) -> int | None:
    """What Python's `int(text)` returns, or None where it raises (the gates are read with `int()`)."""
    try:
        return int(text)
    except (ValueError, TypeError):
        return None


def _is_unk(*vals: Any) -> bool:
    return any(isinstance(v, Unk) for v in vals)


def _entry_value(entry: EntryJSON | None, what: str, loc_fallback: LocationJSON | None = None) -> Any:
    """The text of an ENV_ENTRY / FLAG_ENTRY (as a str), or Unk."""
    if entry is None:
        return Unk(f"{what} is not set", "absent")
    loc = _loc_of(entry) or loc_fallback
    if "unknown" in entry:
        return Unk(f"{what} is {entry['unknown']}", "unknown", loc)
    value = entry.get("value")
    if value is None:
        return Unk(f"{what} is not set", "absent", loc)
    if value is True:
        return "true"
    if isinstance(value, list):
        if any(isinstance(v, dict) for v in value):
            unk = next(v for v in value if isinstance(v, dict))
            return Unk(f"{what} is {unk.get('unknown', 'unknown')}", "unknown", loc)
        return " ".join(value)
    return str(value)


_loc_of = entry_location  # (the name the function modules import)


def _name_arg(v: Any) -> str | None:
    return None if isinstance(v, Unk) else v


def _f_env(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    name = _name_arg(a[0])
    if name is None:
        return a[0]
    entry = env_entry(ctx.variant, name)
    if entry is None:
        hidden = _unread_source(ctx)
        if hidden is not None:
            return Unk(f"{name} is not set in the script, but {hidden} may set it", "unknown")
    evidence.record(ctx, entry)
    return _entry_value(entry, name)


def _unread_source(ctx: EvalContext) -> str | None:
    """A `source`d file packlint could not read before this launch: anything may be set in it."""
    launch_file, launch_line = ctx.launch.get("file"), ctx.launch.get("line") or 0
    for d in diagnostics(ctx.model):
        if d.get("code") not in ("source-not-found", "source-unknown", "source-unreadable", "export-unknown"):
            continue
        if d.get("file") != launch_file or (d.get("line") or 0) < launch_line:
            if d.get("code") == "export-unknown":
                return f"the export with a name packlint cannot know at {d.get('file')}:{d.get('line')}"
            msg = d.get("message", "")
            what = msg.split(": ", 1)[1].split(" (", 1)[0] if ": " in msg else "a file"
            return f"the file sourced at {d.get('file')}:{d.get('line')} ({what}) could not be read and"
    return None


def _free_unknowns(ctx: EvalContext) -> str | None:
    """An argument packlint cannot know that is not a flag's value: it may hold any flags."""
    memo = ctx.memo
    if "free_unknowns" not in memo:
        memo["free_unknowns"] = _read_free_unknowns(ctx)
    return memo["free_unknowns"]


def _read_free_unknowns(ctx: EvalContext) -> str | None:
    argv = launch_argv(ctx.launch, ctx.variant) or []
    flags = ctx.variant.get("flags", {})
    for i, item in enumerate(argv):
        if item == "--":
            break  # argparse: the words after `--` are positional, never flags
        if not isinstance(item, dict) or "key" in item or item.get("caller"):
            # known text; a flag whose name is known (`--lr=$(...)`): only that flag is unknown; one of
            # the caller's arguments: the launch is judged as shipped (findings say `as-shipped`)
            continue
        prev = argv[i - 1] if i > 0 else None
        if (
            isinstance(prev, str)
            and prev.startswith("-")
            and "=" not in prev
            and any(isinstance(o, dict) and "unknown" in o for o in flags.get(prev, []))
            and not _a_switch(ctx, prev)
        ):
            continue  # the value of `prev`
        return item.get("unknown", "an unknown argument")
    return None


def _a_switch(ctx: EvalContext, flag: str) -> bool:
    """The program's schema says `flag` takes no value (`--fp16 ${GLM_ARGS}`: the unknown word after a switch is
    no value of it, and may hold any flags: yuguo-Jack/GLM-Pretrain-in-Megatron-DeepSpeed's sizes in GLM_ARGS)."""
    from packlint.conditions.functions.codebase_common import _schema_view

    schema = _schema_view(ctx)[0]
    spec = schema.lookup(flag) if schema is not None else None
    return spec is not None and getattr(spec, "takes_value", True) is False


def _f_shell(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    name = _name_arg(a[0])
    if name is None:
        return a[0]
    entry = shell_entry(ctx.variant, name)
    evidence.record(ctx, entry)
    return _entry_value(entry, name)


def _f_in_env(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    entry = ctx.variant.get("env", {}).get(a[0])
    if entry is not None and entry.get("source") == "branches":
        return Unk(f"whether {a[0]} is exported depends on branches packlint followed as one", "unknown")
    return entry is not None


def _f_assigned(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    entry = env_entry(ctx.variant, a[0])
    if entry is not None and entry.get("source") == "branches":
        return Unk(f"whether {a[0]} is set depends on branches packlint followed as one", "unknown")
    if entry is not None and entry.get("source", "script") in ("script", "prefix"):
        return True
    return a[0] in ctx.variant.get("unexported", {})


def _f_exported(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    entry = env_entry(ctx.variant, a[0])
    if entry is not None and entry.get("source") == "branches":
        return Unk(f"whether {a[0]} is exported depends on branches packlint followed as one", "unknown")
    return entry is not None and entry.get("source", "script") in ("script", "prefix")


def _f_unexported(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    return a[0] in ctx.variant.get("unexported", {}) and a[0] not in ctx.variant.get("env", {})


def _f_exported_after(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    return a[0] if _is_unk(a[0]) else a[0] in ctx.variant.get("exported_after", {})


def _f_later_launch_env(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    me = ctx.launch.get("id", -1)
    for launch in launches(ctx.model):
        if launch.get("id", -1) > me and any(a[0] in v.get("env", {}) for v in variants(launch)):
            return True
    return False


def _f_source(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    entry = env_entry(ctx.variant, a[0])
    if entry is None:
        return Unk(f"{a[0]} is not set", "absent")
    return entry.get("source", "script")


def _occurrences(ctx: EvalContext, key: str, name: str) -> list[FlagEntryJSON]:
    """The occurrences of a flag, each noted as a premise where it was assumed (packlint.evidence)."""
    out = [o for o in flag_occurrences(ctx.variant, key, name) if o is not None and o.get("value", "") is not None]
    for o in out:
        if "evidence" in o:
            evidence.record(ctx, o)
    return out


def repeat_occurrences(occs: list[FlagEntryJSON]) -> list[FlagEntryJSON]:
    """The occurrences of a flag that compete as a repeat (PK103). Not those the script's own caller
    passes in ("$@", source "caller"); and where a caller the analysis followed hands the flag to the
    callee's "$@" after the callee's own occurrences (source "passed": `bash train.sh --lr 1e-4` into
    `python train.py --lr 1e-6 "$@"`), that is the callee's override interface, the last one winning by
    design: the caller's words compete only among themselves, and the callee's among themselves. So with
    several levels of callers (`top.sh` passes `--do_eval True` to `mid.sh`'s "$@", which passes its own
    `--do_eval False` and that "$@" to `run.sh`'s: imanjundi/mod-gen-eval), each file's passed words compete
    among themselves. Likewise a value written in a branch's body (a `case` arm, an `if` body: `case $VARIANT in
    rb64) OVERRIDE="rollout_batch_size=64" ;;` appended after a base array) over one given outside it is that
    branch's own, the per-variant override the branch exists for (xudongwu-0/SafeSelfPlay's sweep, microsoft/
    DeBERTa's `parameters`, EDAS's npu arm): the branch's words compete only among themselves."""
    occs = [o for o in occs if o.get("source") != "caller"]
    if occs and occs[-1].get("source") == "passed":
        groups: dict[Any, list[FlagEntryJSON]] = {None: []}
        for o in occs:
            groups.setdefault(o.get("file") if o.get("source") == "passed" else None, []).append(o)
        occs = next((g for g in groups.values() if len(g) > 1), groups[occs[-1].get("file")])
    branch = occs[-1].get("branch") if occs else None
    if branch is not None and any(o.get("branch") != branch for o in occs):
        return [o for o in occs if o.get("branch") == branch]
    return occs


def _f_has_flag(ctx: EvalContext, node: Builtin, a: list[Any], key: str = "flags") -> Any:
    if _is_unk(a[0]):
        return a[0]
    if _occurrences(ctx, key, a[0]):
        return True
    if key == "flags":
        hidden = _free_unknowns(ctx)
        if hidden is not None:
            return Unk(f"the program's arguments include {hidden}, which may contain {a[0]}", "unknown")
    return False


def _f_flag(ctx: EvalContext, node: Builtin, a: list[Any], key: str = "flags") -> Any:
    if _is_unk(a[0]):
        return a[0]
    occ = _occurrences(ctx, key, a[0])
    return _entry_value(occ[-1] if occ else None, a[0])


def _f_flag_distinct_in_script(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """Distinct values among the occurrences written in the script (not those the caller passes in
    through "$@": overriding a default that way is the intended idiom)."""
    return _f_flag_distinct(ctx, node, a, script_only=True)


def _f_flag_count(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    return a[0] if _is_unk(a[0]) else len(_occurrences(ctx, "flags", a[0]))


def _f_flag_distinct(ctx: EvalContext, node: Builtin, a: list[Any], script_only: bool = False) -> Any:
    if _is_unk(a[0]):
        return a[0]
    occurrences = _occurrences(ctx, "flags", a[0])
    if script_only:
        occurrences = repeat_occurrences(occurrences)
        if not occurrences:
            return 0
    if len(occurrences) == 1:  # most flags: one value, or none counted, or the unknown one
        o = occurrences[0]
        if script_only and o.get("source") == "caller":
            return 0
        v = _entry_value(o, a[0])
        return v if isinstance(v, Unk) else 1
    vals = [_repeat_value(o, a[0]) for o in occurrences if not (script_only and o.get("source") == "caller")]
    known = {_same_value(a[0], v) for v in vals if not isinstance(v, Unk)}
    unknown = [v for v in vals if isinstance(v, Unk)]
    if unknown and len(known) < 2:
        return unknown[0]
    return len(known)


def _repeat_value(entry: Any, name: str) -> Any:
    """An occurrence's value as a repeat compares it: from a variable the script never sets, the environment's
    (AI-Hypercomputer/gpu-recipes: `trainer.num_nodes="$NNODES"`, NNODES set by the Helm chart's job, then
    `trainer.num_nodes=16`), not the empty string."""
    from packlint.evidence import unset_variable

    var = unset_variable(entry)
    if var is not None:
        return Unk(f"{name} is {var}, which the script never sets (the environment's)", "unknown")
    return _entry_value(entry, name)


_HYDRA_BOOLEANS = {"true": "true", "false": "false"}


def _same_value(name: str, value: Any) -> Any:
    """The value as the program reads it: a Hydra/OmegaConf override (`key=value`, no leading dash)
    reads `True`, `true` and `TRUE` as one boolean."""
    if isinstance(value, str) and not name.startswith("-"):
        return _HYDRA_BOOLEANS.get(value.lower(), value)
    return value


def _f_flag_values(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    vals = [_entry_value(o, a[0]) for o in _occurrences(ctx, "flags", a[0])]
    return ", ".join("?" if isinstance(v, Unk) else repr(v) for v in vals)


def _f_int(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    v = a[0]
    if isinstance(v, Unk):
        if v.kind == "absent" and len(a) > 1:
            return a[1]
        return v
    if len(v) > _MAX_INT_CHARS:
        return Unk(f"a value of {len(v):,} characters is too long to read as an integer", "unknown")
    n = python_int(v)
    if n is None:
        return Unk(f"{v!r} is not an integer", "invalid")
    if n.bit_length() > MAX_INT_BITS:
        return Unk(f"an integer of more than {MAX_INT_BITS} bits: too large to track", "unknown")
    return n


def _f_is_int(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    if len(a[0]) > _MAX_INT_CHARS:
        return Unk(f"a value of {len(a[0]):,} characters is too long to read as an integer", "unknown")
    return python_int(a[0]) is not None


# Python's int() refuses strings of more than 4,300 digits (and the bound keeps conversion linear);
# values longer than this are undecided for int() and is_int().
_MAX_INT_CHARS = 4000


def _f_matches(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    try:  # (a BoundedRegex: compiled once, matched within regex_guard's bounds)
        return node.static.search(a[0]) is not None
    except Undecided:  # too long a subject, or a pattern that ran out of time: undecided
        why = f"the value could not be matched against {node.static.pattern!r} within packlint's limits"
        return Unk(why, "unknown")


def _f_quote(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    v = a[0]
    if isinstance(v, Unk):
        return "unset" if v.kind == "absent" else "unknown"
    return repr(v)


def _f_world_size(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    ws = world_size(ctx.launch, ctx.variant) or {"unknown": "no world size in the model"}
    if "unknown" in ws:
        return Unk(f"the world size is {ws['unknown']}", "unknown")
    n = python_int(str(ws.get("value")))
    return Unk(f"the world size {ws.get('value')!r} is not an integer", "invalid") if n is None else n


def _f_launcher(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    return ctx.launch.get("launcher") or Unk("no launcher", "absent")


# what puts a launch on nodes a scheduler handed out: its launchers, the variables a job has, the launcher's
# multi-node options
_SCHEDULERS = frozenset(("srun", "salloc", "sbatch", "mpirun", "mpiexec", "qsub", "bsub", "jsrun", "aprun", "flux"))
_JOB_VARS = ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NUM_NODES", "SLURM_NNODES", "PBS_JOBID", "LSB_JOBID")
_NODE_OPTIONS = (
    "--nnodes",
    "--node_rank",
    "--node-rank",
    "--hostfile",
    "--num_machines",
    "--machine_rank",
    "--num_nodes",
)


def _f_on_nodes(ctx: EvalContext, node: Builtin, a: list[Any]) -> bool:
    """The launch runs on nodes a job got (a scheduler launcher, a batch job's variables, a multi-node
    launcher option), not as a plain local run: where an exit at start costs the queue wait."""
    if _SCHEDULERS & set(ctx.launch.get("launchers") or ()):
        return True
    env = ctx.variant.get("env", ctx.launch.get("env")) or {}
    if any(name in env for name in _JOB_VARS):
        return True
    flags = ctx.variant.get("launcher_flags", ctx.launch.get("launcher_flags")) or {}
    return any(opt in flags and not _one_node(opt, flags[opt]) for opt in _NODE_OPTIONS)


def _one_node(opt: str, occs: Any) -> bool:
    """`--num_machines 1` / `--nnodes 1` (and rank 0 beside it): a multi-node option that says one machine, a local
    run (seunghyukoh/diffusion-vs-ar's `accelerate launch --multi_gpu --num_machines 1`)."""
    last = occs[-1] if isinstance(occs, list) and occs else None
    value = last.get("value") if isinstance(last, dict) else None
    return value == ("0" if opt in ("--node_rank", "--node-rank", "--machine_rank") else "1")


def _f_program(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    return ctx.launch.get("program") or Unk("no program", "absent")


def _f_launch_undecided(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """Why packlint cannot follow this launch's settings ('' when it can): the program it starts is not
    known, or a word it cannot know may carry any flag (issue 27: never silently clean)."""
    program = ctx.variant.get("program", ctx.launch.get("program"))
    argv = launch_argv(ctx.launch, ctx.variant) or []
    if not program:
        command = ctx.variant.get("command") or ctx.launch.get("command") or []
        unknown = next((w for w in command if isinstance(w, dict)), None)
        if unknown is not None:
            return f"the program it starts is unknown ({unknown.get('unknown', 'unknown')})"
        return ""
    hidden = _free_unknowns(ctx)
    if hidden is not None and argv:
        return f"an argument packlint cannot know may carry any flag ({hidden}), so rules on its settings are undecided"
    return ""


def _f_bash_rejects(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    return ctx.bash_rejects()


def _f_item(field_name: str) -> Callable[[EvalContext, Builtin, list[Any]], Any]:
    def impl(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
        item: Mapping[str, Any] = ctx.item or {}
        if "evidence" in item:  # a diagnostic that stands on an assumption or on the machine
            evidence.record(ctx, item)
        v = item.get(field_name)
        return v if v is not None else Unk(f"no {field_name}", "absent")

    return impl


def _compile_regex(args: list[Any]) -> Any:
    # a bad pattern, or one whose matching time can grow exponentially, fails the table's load with the
    # rule's position; compiled again on first use (the table cache reads every rule's patterns at each
    # start, and the long ones (`library_env`) cost milliseconds that most checks never need)
    return rule_pattern(args[1])


CORE_FUNCTIONS: dict[str, Function] = {
    "env": Function(
        (STR,), (), STR, _f_env, "the value the launched process sees for an environment variable (absent when unset)"
    ),
    "shell": Function((STR,), (), STR, _f_shell, "the value of a shell variable at the launch, exported or not"),
    "in_env": Function(
        (STR,), (), BOOL, _f_in_env, "the launched process has the variable (exported, prefix, caller or cluster)"
    ),
    "exported": Function(
        (STR,),
        (),
        BOOL,
        _f_exported,
        "the script itself exports the variable to the launch (export or prefix assignment)",
    ),
    "assigned": Function(
        (STR,), (), BOOL, _f_assigned, "the script (or a file it sources) assigns the variable, exported or not"
    ),
    "unexported": Function(
        (STR,), (), BOOL, _f_unexported, "the variable is set in the shell at the launch but not exported"
    ),
    "exported_after": Function(
        (STR,), (), BOOL, _f_exported_after, "the variable is first exported after the launch ran"
    ),
    "later_launch_env": Function(
        (STR,), (), BOOL, _f_later_launch_env, "a later launch in the script has the variable in its environment"
    ),
    "env_source": Function(
        (STR,), (), STR, _f_source, "where the launch's value comes from: script, caller, prefix or cluster"
    ),
    "has_flag": Function((STR,), (), BOOL, _f_has_flag, "the program is given the flag"),
    "flag": Function(
        (STR,),
        (),
        STR,
        _f_flag,
        "the flag's effective (last) value; 'true' for a store-true flag; absent when not given",
    ),
    "flag_count": Function((STR,), (), INT, _f_flag_count, "how many times the flag is given"),
    "flag_distinct": Function((STR,), (), INT, _f_flag_distinct, "how many different values the flag is given"),
    "flag_distinct_in_script": Function(
        (STR,),
        (),
        INT,
        _f_flag_distinct_in_script,
        "how many different values the script itself gives the flag "
        '(not counting the caller\'s arguments forwarded with "$@")',
    ),
    "flag_values": Function((STR,), (), STR, _f_flag_values, "every value the flag is given, in order (for messages)"),
    "has_launcher_flag": Function(
        (STR,),
        (),
        BOOL,
        lambda c, n, a: _f_has_flag(c, n, a, "launcher_flags"),
        "the launcher (torchrun, deepspeed, ...) is given the option",
    ),
    "launcher_flag": Function(
        (STR,), (), STR, lambda c, n, a: _f_flag(c, n, a, "launcher_flags"), "the launcher option's effective value"
    ),
    "world_size": Function((), (), INT, _f_world_size, "the number of processes the launcher starts"),
    "launcher": Function((), (), STR, _f_launcher, "the outermost launcher (torchrun, deepspeed, ...)"),
    "program": Function((), (), STR, _f_program, "the training entry point"),
    "on_nodes": Function(
        (), (), BOOL, _f_on_nodes, "the launch runs on nodes a job got (a scheduler, a batch job, a multi-node option)"
    ),
    "launch_undecided": Function(
        (),
        (),
        STR,
        _f_launch_undecided,
        "why packlint cannot follow the launch's settings ('' when it can): the program it starts is unknown, "
        "or a word it cannot know may carry any flag",
    ),
    "int": Function(
        (STR,),
        (INT,),
        INT,
        _f_int,
        "Python int() of a value; the optional second argument is used when the value is absent",
    ),
    "is_int": Function((STR,), (), BOOL, _f_is_int, "Python int() accepts the value"),
    "matches": Function(
        (STR, STR),
        (),
        BOOL,
        _f_matches,
        "the value matches the regex (re.search)",
        literal=(1,),
        compile_static=_compile_regex,
    ),
    "known": Function(
        (STR,),
        (),
        BOOL,
        lambda c, n, a: not isinstance(a[0], Unk),
        "the value is known (not unknown, invalid or absent); never undecided",
    ),
    "certainly": Function(
        (BOOL,),
        (),
        BOOL,
        lambda c, n, a: a[0] is True,
        "the condition holds for certain (an undecided one is false): for a rule's prerequisites, never its verdict",
    ),
    "quote": Function((STR,), (), STR, _f_quote, "the value in quotes, or `unset` / `unknown` (for messages)"),
    "bash_rejects": Function(
        (), (), BOOL, _f_bash_rejects, "`bash -n` rejects the script (true when bash is not available)"
    ),
    "diag_code": Function((), (), STR, _f_item("code"), "for_each diagnostics: the diagnostic's code"),
    "diag_message": Function((), (), STR, _f_item("message"), "for_each diagnostics: its message"),
}
