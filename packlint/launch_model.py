"""Stage 3: the launch model — for every launch, the environment it inherits and the flags it gets.

This is the only thing rules and the probe see, and exactly what `packlint inspect` prints. Each launch
has one *variant* per feasible path through undecidable branches; variants are fully concrete, so
settings that change together stay together. The merged top-level view is for people.
"""

from __future__ import annotations

import bisect
import os
import re
from typing import Any

from packlint import evidence
from packlint import launchers as L
from packlint.interpret import Diagnostic, LaunchInstance, interpret_file
from packlint.launchers.processes import JSONSpan, env_layout
from packlint.records import factory, record
from packlint.values import ARGS_ORIGIN, Condition, Known, Span, Unknown, Value, Variable

MODEL_VERSION = 1
_HYDRA = re.compile(r"^[+~]{0,2}[A-Za-z_][\w.\-/@]*=")
_HYDRA_DELETE = re.compile(r"^~[A-Za-z_][\w.\-/@]*$")
_NUMBER = re.compile(r"^-(\d|\.\d)")


class FlagOccurrence:
    """One occurrence of a program flag or launcher option (hand-written: made for every flag)."""

    __slots__ = ("name", "args", "span", "style", "caller", "passed", "then_unknown", "token_origin", "branch")

    def __init__(
        self, name: str, args: list[Value], span: Span | None, style: str = "separate", caller: bool | str = False
    ) -> None:
        self.caller = caller is True  # the flag token came from the script's arguments
        # the flag token came from the positional arguments a caller the analysis followed passed in
        # (`bash train.sh --lr 1e-4` reaching the callee's "$@"): an override given on purpose
        self.passed = caller == "passed"
        self.name = name
        self.args = args  # [] for a store-true flag
        self.span = span  # where the flag token was written
        self.style = style  # separate | equals | hydra
        # why the word after its values is not known: its values were ended there, but that word may be one
        # of them (`--wave a "$UNSET/x" b`: bash gives argparse three values)
        self.then_unknown: str | None = None
        # what the flag word itself rests on (a word after one that gave no field: commands._unset_word)
        self.token_origin: str | None = None
        # the innermost branch body the flag was written in (`case` arm, `if` body; mark_branches), for a repeat
        self.branch: str | None = None

    def __repr__(self) -> str:
        return f"FlagOccurrence({self.name!r}, {self.args!r})"

    def to_json(self) -> dict:
        d: dict = {}
        unknown = next((a for a in self.args if isinstance(a, Unknown)), None)
        if unknown is not None:
            d["unknown"] = unknown.reason
        elif not self.args:
            d["value"] = True
        elif len(self.args) == 1:
            d["value"] = self.args[0].text
        else:
            d["value"] = [a.text for a in self.args]
        d.update(_loc(self.span))
        if self.caller:
            d["source"] = "caller"  # passed in through the script's arguments ("$@", "$1" ...)
        elif self.passed:
            d["source"] = "passed"  # passed in by a caller script or function call the analysis followed
        if self.branch is not None:
            d["branch"] = self.branch
        vspan = self.args[0].span if len(self.args) == 1 else None
        d["value_location"] = vspan.to_json() if vspan is not None and vspan != self.span else None
        premise = evidence.of_values(self.args) or evidence.from_origin(self.token_origin)
        premise = premise if unknown is None else None
        if premise is not None:
            d["evidence"] = evidence.to_json(premise)
        if self.then_unknown is not None:
            d["then_unknown"] = self.then_unknown
        return d


def _from_caller(a: Known) -> bool | str:
    """True: the word is the script's own argument; "passed": a caller the analysis followed passed it."""
    return True if a.origin == "caller" else "passed" if a.origin == ARGS_ORIGIN else False


def mark_passed(flags: dict[str, list[FlagOccurrence]], passed: tuple[str, ...]) -> None:
    """Occurrences whose words a caller passed in, where a join lost the words' origin: the callee's
    `ARGS="... $@"` split again (princeton-nlp/MeZO run_fewshot.sh). The last occurrences of a flag that
    the caller's arguments give with the same value, one per time the caller gives it."""
    if not passed:
        return
    given: dict[str, list[list[str]]] = {}
    for i, w in enumerate(passed):
        name, eq, val = w.partition("=")
        if eq and (w.startswith("-") or _HYDRA.match(w)):
            given.setdefault(name, []).append([val])
        elif w.startswith("-"):
            given.setdefault(w, []).append(list(passed[i + 1 : i + 2]))
    for name, occs in flags.items():
        left = list(given.get(name, ()))
        for occ in reversed(occs):
            if occ.caller:
                continue
            texts = [a.text for a in occ.args if isinstance(a, Known)]
            match = next((k for k, v in enumerate(left) if v[: len(texts)] == texts), None)
            if match is None or len(texts) != len(occ.args):
                if occ.passed:
                    continue
                break
            occ.passed = True
            left.pop(match)


_SHORT_EQUALS = re.compile(r"-[A-Za-z][\w-]*=")


def _equals_occurrence(a: Known) -> FlagOccurrence:
    """`--name=value`: the value at its own location when the word is written literally (`--mbs=2`), resting on
    what the word's text after `=` rests on (evidence.part_origin)."""
    t = a.text
    name, _, val = t.partition("=")
    vspan = a.span
    if a.span is not None and a.span.line == a.span.end_line and a.span.end_column - a.span.column == len(t):
        vspan = Span(a.span.file, a.span.line, a.span.column + len(name) + 1, a.span.line, a.span.end_column)
    value = Known(val, vspan, evidence.part_origin(a.origin, len(name) + 1, len(t)))
    return FlagOccurrence(name, [value], a.span, "equals", _from_caller(a))


def _hydra_occurrence(a: Known) -> FlagOccurrence:
    """`key=value` (a Hydra/dotlist override): its value resting on what the word's text after `=` rests on
    (`trainer.num_nodes="$NNODES"`, NNODES never set: the environment's)."""
    name, _, val = a.text.partition("=")
    value = Known(val, a.span, evidence.part_origin(a.origin, len(name) + 1, len(a.text)))
    return FlagOccurrence(name, [value], a.span, "hydra", _from_caller(a))


def _take_value(current: FlagOccurrence, a: Value) -> None:
    current.args.append(a)
    if isinstance(a, Known) and a.origin == ARGS_ORIGIN and not current.caller:
        # `--percentage $percentage` with percentage=$3, a caller the analysis followed passing it: the callee's
        # parameter, a per-run value given on purpose (PK103 counts it with the caller's words)
        current.passed = True


def parse_program_flags(args: list[Value]) -> tuple[dict[str, list[FlagOccurrence]], list[Value]]:
    """Megatron/argparse style: `--name value`, `--name=value`, store-true, multi-valued, Hydra. A `--`
    word ends the options as in argparse: it and everything after it are positionals."""
    flags: dict[str, list[FlagOccurrence]] = {}
    positionals: list[Value] = []
    current: FlagOccurrence | None = None
    for i, a in enumerate(args):
        if isinstance(a, Known) and a.text == "--":
            # argparse: `--` ends the options; every later word is positional (often a command that a
            # wrapper runs), never a flag and never a value of the flag before it
            positionals.extend(args[i:])
            break
        option = L.unknown_option(a)
        if option is not None and isinstance(a, Unknown):  # `--name=<unknown>` (only an Unknown has one)
            flags.setdefault(option, []).append(FlagOccurrence(option, [Unknown(a.reason, a.span)], a.span, "equals"))
            current = None
            continue
        key = override_key(a) if current is None or current.args else None
        if key is not None and isinstance(a, Unknown):
            # `trainer.experiment_name=grpo_$(date +%m%d)`: the override's key is written, only its value is
            # unknown, so only that key is unknown (issue 27)
            current = None
            flags.setdefault(key, []).append(FlagOccurrence(key, [Unknown(a.reason, a.span)], a.span, "hydra"))
            continue
        if isinstance(a, Known):
            t = a.text
            if t.startswith("-") and len(t) > 1 and not _NUMBER.match(t):
                if "=" in t and (t.startswith("--") or _SHORT_EQUALS.match(t)):  # (`-v=IGV`: argparse splits it too)
                    occ = _equals_occurrence(a)
                    flags.setdefault(occ.name, []).append(occ)
                    current = None
                    continue
                current = FlagOccurrence(t, [], a.span, "separate", _from_caller(a))
                current.token_origin = a.origin
                flags.setdefault(t, []).append(current)
                continue
            if (current is None or current.args) and _HYDRA_DELETE.match(t):
                current = None
                flags.setdefault(t, []).append(FlagOccurrence(t, [], a.span, "hydra", _from_caller(a)))
                continue
            if current is None and _HYDRA.match(t):
                occ = _hydra_occurrence(a)
                flags.setdefault(occ.name, []).append(occ)
                continue
        if current is not None and current.args and not isinstance(a, Known):
            # `--micro-batch-size 1 $EXTRA`: the unknown word is not taken as a second value, but it may be one
            # (a flag of nargs=N): the occurrence says so
            current.then_unknown = getattr(a, "reason", None) or "a word packlint does not know"
            current = None
            positionals.append(a)
            continue
        if current is not None and current.args and isinstance(a, Known) and _HYDRA.match(a.text):
            current = None
            occ = _hydra_occurrence(a)
            flags.setdefault(occ.name, []).append(occ)
            continue
        if current is not None:
            _take_value(current, a)
        else:
            positionals.append(a)
    return flags, positionals


def override_key(v: Value) -> str | None:
    """The key of a Hydra/dotlist override `key=...` whose value is partly unknown (the word is unknown,
    its `key=` part is written in the script), else None."""
    if isinstance(v, Unknown) and v.parts and v.parts[0][0]:
        m = _HYDRA.match(v.parts[0][0])
        if m is not None:
            return m.group(0)[:-1]
    return None


def _loc(span: Span | None) -> dict:
    if span is None:
        return {"file": None, "line": None, "column": None, "end_line": None, "end_column": None}
    return span.to_json()


def _env_entry(name: str, var: Variable) -> dict:
    v = var.scalar()
    d: dict = {}
    if var.items is not None:
        d["items"] = [_value_json(i) for i in var.items if i is not None]
    if var.items is None or var.exported:  # an unexported array shows its items only
        if v is None:
            d["value"] = None
        elif isinstance(v, Known):
            d["value"] = v.text
        else:
            d["unknown"] = v.reason
    d["exported"] = var.exported
    d["source"] = var.source
    d.update(_loc(var.assigned_at or var.exported_at))
    vspan = v.span if v is not None else None
    d["value_location"] = vspan.to_json() if vspan is not None and vspan != var.assigned_at else None
    if var.exported_at is not None and var.exported_at != var.assigned_at:
        d["exported_at"] = var.exported_at.to_json()
    premise = evidence.from_origin(v.origin) if isinstance(v, Known) else None
    if premise is not None:
        d["evidence"] = evidence.to_json(premise)
    return d


CALLER_REASON = "given by the caller"  # (packlint.interpret.guards: an argument the caller must give)


def _value_json(v: Value) -> object:
    if isinstance(v, Known):
        return v.text
    key = L.unknown_option(v) or override_key(v)
    if key is not None:  # `--lr=$(...)`, `trainer.experiment_name=run_$(date)`: the flag it sets is known
        return {"unknown": v.reason, "key": key}
    if CALLER_REASON in v.reason:  # one of the script's own arguments (an input guard asks for it)
        return {"unknown": v.reason, "caller": True}
    return {"unknown": v.reason}


@record
class Variant:
    when: tuple[Condition, ...]
    env: dict[str, dict]
    unexported: dict[str, dict]
    exported_after: dict[str, dict]
    flags: dict[str, list[FlagOccurrence]]
    launcher_flags: dict[str, list[FlagOccurrence]]
    world_size: Value | None
    argv: list[Value]
    command: list[Value]
    program: str | None
    launchers: list[str]
    positionals: list[Value] = factory(list)
    parallel: dict | None = None
    config: dict | None = None  # the launch's configuration (packlint.configs), None: no stack, no file
    caller_args: bool = False  # the command passes the script's own arguments on (`"$@"`): issue 27
    vanished: tuple[str, ...] = ()  # unset variables whose lone `$NAME` words gave no word (LaunchInstance.vanished)

    def to_json(self) -> dict:
        d: dict[str, Any] = {
            "when": [c.describe() for c in self.when],
            "env": self.env,
            "unexported": self.unexported,
            "exported_after": self.exported_after,
            "flags": {k: [o.to_json() for o in v] for k, v in self.flags.items()},
            "launcher_flags": {k: [o.to_json() for o in v] for k, v in self.launcher_flags.items()},
            "world_size": None
            if self.world_size is None
            else (
                {"value": self.world_size.text}
                if isinstance(self.world_size, Known)
                else {"unknown": self.world_size.reason}
            ),
            "parallel": self.parallel,
            "argv": [_value_json(v) for v in self.argv],
            "command": [_value_json(v) for v in self.command],
        }
        if self.config is not None:
            d["config"] = self.config
        if self.caller_args:
            d["caller_args"] = True
        if self.vanished:
            d["vanished"] = list(self.vanished)
        return d


@record
class Launch:
    span: Span
    context: tuple[str, ...]
    variants: list[Variant]

    def to_json(self, index: int) -> dict:
        jv = [v.to_json() for v in self.variants]
        first = self.variants[0]
        others = [set(v.when) for v in self.variants[1:]]
        shared_when = [c.describe() for c in first.when if all(c in o for o in others)]
        programs = {v.program for v in self.variants}
        d = {
            "id": index,
            "launcher": first.launchers[-1] if first.launchers else None,
            "launchers": first.launchers,
            "program": first.program if len(programs) == 1 else None,
            **self.span.to_json(),
            "context": list(self.context),
            "when": shared_when,
            "env": _merge_maps([j["env"] for j in jv], jv),
            "unexported": _merge_maps([j["unexported"] for j in jv], jv),
            "exported_after": _merge_maps([j["exported_after"] for j in jv], jv),
            "flags": _merge_maps([j["flags"] for j in jv], jv, occurrences=True),
            "launcher_flags": _merge_maps([j["launcher_flags"] for j in jv], jv, occurrences=True),
            "world_size": _merge_single([j["world_size"] for j in jv], jv),
            "parallel": {k: _merge_single([(j["parallel"] or {}).get(k) for j in jv], jv) for k in PARALLEL_KEYS},
            "argv": jv[0]["argv"] if all(j["argv"] == jv[0]["argv"] for j in jv) else None,
            "command": jv[0]["command"] if all(j["command"] == jv[0]["command"] for j in jv) else None,
            "variants": jv,
        }
        if len(programs) > 1:
            d["programs"] = sorted(p for p in programs if p)
        configs = [j.get("config") for j in jv]
        if any(c is not None for c in configs):
            # the launch's configuration when every variant has the same; else each variant has its own
            d["config"] = configs[0] if all(c == configs[0] for c in configs) else None
        return d


def _merge_single(values: list, jv: list[dict]):
    if len(values) == 1 or all(v == values[0] for v in values):
        return values[0]
    return {
        "values": [None if v is None else v.get("value", v.get("unknown")) for v in values],
        "alternatives": [dict(v or {"value": None}, when=j["when"]) for v, j in zip(values, jv, strict=False)],
    }


def _merge_maps(maps: list[dict], jv: list[dict], *, occurrences: bool = False) -> dict:
    """Merge per-variant maps (env, or flags when `occurrences`): a name whose entry is the same in
    every variant keeps it; otherwise it gets `values` and `alternatives`, each with its `when`
    (for flags, the alternative is the last occurrence, the one argparse keeps)."""
    if len(maps) == 1:
        return maps[0]  # one variant: nothing to merge (the common case)
    names = list(dict.fromkeys(k for m in maps for k in m))
    out = {}
    for name in names:
        entries = [m.get(name) for m in maps]
        if all(e == entries[0] for e in entries):
            out[name] = entries[0]
            continue
        alternatives, values = [], []
        for e, j in zip(entries, jv, strict=False):
            if occurrences:
                e = e[-1] if e else None
            alt = dict(e) if e is not None else {"value": None}
            alt["when"] = j["when"]
            if alt in alternatives:
                continue
            alternatives.append(alt)
            values.append(alt.get("value") if "unknown" not in alt else {"unknown": alt["unknown"]})
        merged = {"values": values, "alternatives": alternatives}
        out[name] = [merged] if occurrences else merged
    return out


class ConfigContext:
    """What reading a launch's config files needs: the script's directory, the version pins, and the
    script's text (read on first use: only to tell a missing file from one the script writes)."""

    __slots__ = ("script_dir", "pins", "path", "_text")

    def __init__(
        self, script_dir: str | None, pins: dict[str, str] | None = None, path: str | None = None, text=None
    ) -> None:
        self.script_dir, self.pins, self.path, self._text = script_dir, pins, path, text

    def script_text(self) -> str:
        if self._text is None:
            from packlint.errors import PacklintError
            from packlint.safe_io import read_bounded

            try:  # a regular file only (never blocks on a FIFO), at most 8 MiB
                self._text = read_bounded(self.path or "", 8 * 1024 * 1024, "script")
            except (OSError, PacklintError):
                self._text = b""
        data = self._text
        return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


def build_variant(
    inst: LaunchInstance, export_events, memo: dict | None = None, cfg_ctx: ConfigContext | None = None
) -> Variant:
    parts = L.split_launch(inst.fields)
    flags, positionals = parse_program_flags(parts.program_args)
    mark_passed(flags, inst.passed)
    launcher_flags: dict[str, list[FlagOccurrence]] = {}
    for _owner, opt in parts.launcher_options:
        launcher_flags.setdefault(opt.name, []).append(FlagOccurrence(opt.name, opt.args, opt.name_value.span))
    memo = {} if memo is None else memo

    def entry(k: str, v: Variable) -> dict:
        # the same Variable object recurs in many launches and variants: build its JSON once
        key = (k, id(v))
        found = memo.get(key)
        if found is None:
            found = memo[key] = _env_entry(k, v)
        return found

    env = {k: entry(k, v) for k, v in sorted(inst.env.items())}
    unexported = {
        k: entry(k, v) for k, v in sorted(inst.unexported.items()) if v.value is not None or v.items is not None
    }
    exported_after = {}
    for name, events in export_events.items():
        if name in inst.env:
            continue
        k = bisect.bisect_right(events, inst.seq, key=lambda e: e[0])
        if k < len(events):  # the first export of `name` after this launch
            _, span, var = events[k]
            exported_after[name] = {**entry(name, var), **_loc(span)}
    layout = L.process_layout(parts.launchers, parts.launcher_options)
    config = None
    if cfg_ctx is not None:
        from packlint.configs import launch_config

        launch_file = inst.span.file if inst.span is not None else None
        if (
            launch_file
            and cfg_ctx.path
            and os.path.abspath(launch_file) != os.path.abspath(cfg_ctx.path)
            and os.path.isfile(launch_file)
        ):  # a launch in a script this one runs or sources: its own text
            cfg_ctx = ConfigContext(cfg_ctx.script_dir, cfg_ctx.pins, launch_file, None)

        config = launch_config(
            parts.program,
            parts.launchers,
            flags,
            launcher_flags,
            positionals,
            cfg_ctx.script_dir,
            cfg_ctx.pins,
            cfg_ctx,
            _pythonpath(env),
        )
    world_size = L.world_size(parts.launchers, parts.launcher_options)
    better = _better_layout(layout, parts, flags, config, env)
    if better is not None:
        layout = better
        world = layout.world
        world_size = Known(str(world.hi)) if world.known else Unknown(world.unknown or "unknown")
    return Variant(
        inst.when,
        env,
        unexported,
        exported_after,
        flags,
        launcher_flags,
        world_size,
        parts.program_args,
        inst.command if inst.command is not None else parts.command,
        parts.program,
        parts.launchers,
        positionals,
        parallel_sizes(layout, flags, positionals),
        config,
        _passes_caller_args(inst, cfg_ctx),
        inst.vanished,
    )


def _passes_caller_args(inst: LaunchInstance, cfg_ctx: ConfigContext | None) -> bool:
    """Whether the launch passes on the script's own arguments (`"$@"`, `${@:2}`, `$*`: none as shipped,
    any flag from a caller), or got words from them."""
    if inst.caller_args:
        return True
    if any(isinstance(f, Unknown) and CALLER_REASON in f.reason for f in inst.fields):
        return True
    return any(isinstance(f, Known) and f.origin == "caller" for f in inst.fields)


def _pythonpath(env: dict) -> tuple[str, ...]:
    """The launch's PYTHONPATH entries (a known value only): which vendored copy of a stack it imports."""
    value = (env.get("PYTHONPATH") or {}).get("value")
    return tuple(p for p in value.split(":") if p) if isinstance(value, str) else ()


def _better_layout(layout, parts, flags: dict, config: dict | None, env: dict):
    """A layout the launcher's options do not give, from (in order) the launcher's config file, the
    program's own worker flags (a Ray driver), the framework's environment, the launcher's environment."""
    better = _layout_from_launcher_config(layout, config)
    if better is None and not layout.world.known:
        better = L.program_layout(parts.program, flags, config)
    if better is None and not layout.world.known and parts.launchers:
        better = env_layout(parts.launchers[-1], env)
    if better is None and not layout.world.known:
        better = L.layout_from_env(layout, env)
    return better


def _layout_from_launcher_config(layout, config: dict | None):
    """`accelerate launch --config_file acc.yaml` without --num_processes: accelerate copies the file's
    `num_processes` (the total, over all machines) into its arguments (commands/launch.py
    _validate_launch_command, on a LOCAL_MACHINE config). The layout with that world size, or None."""
    if layout.launcher != "accelerate launch" or layout.world.known or layout.world.span is not None:
        return None
    acc = ((config or {}).get("sections") or {}).get("accelerate")
    if not acc:
        return None
    env = acc.get("compute_environment")
    if env is not None and env.get("value") != "LOCAL_MACHINE":
        return None
    n = acc.get("num_processes")
    if n is None or "value" not in n or type(n["value"]) is not int or n["value"] < 1:
        return None
    world = L.Count(n["value"], n["value"], None, "accelerate config num_processes", JSONSpan(dict(n)))
    return L.ProcessLayout(layout.launcher, layout.nodes, layout.per_node, world)


# ---------------------------------------------------------------------------------------------- parallel sizes
# Megatron's parallel sizes as the program reads them: argparse flags and Megatron-Bridge's Hydra
# overrides (`model.tensor_model_parallel_size=2`) are two spellings of one setting. The defaults are
# Megatron-LM's argparse defaults (megatron/training/arguments.py, identical from core 0.4 to main);
# `megatron_default` is the one place a code-base flag schema will supply them instead.

PARALLEL_FLAGS: dict[str, tuple[tuple[str, ...], int | None]] = {
    "tp": (("--tensor-model-parallel-size", "model.tensor_model_parallel_size"), 1),
    "pp": (("--pipeline-model-parallel-size", "model.pipeline_model_parallel_size"), 1),
    "cp": (("--context-parallel-size", "model.context_parallel_size"), 1),
    "ep": (("--expert-model-parallel-size", "model.expert_model_parallel_size"), 1),
    "vpp": (
        (
            "--num-virtual-stages-per-pipeline-rank",
            "--virtual-pipeline-model-parallel-size",
            "model.virtual_pipeline_model_parallel_size",
        ),
        None,
    ),
}
PARALLEL_KEYS = ("nodes", "procs_per_node", "world", "tp", "pp", "cp", "ep", "vpp", "dp")


# the Megatron flag that reads the model's arguments from the checkpoint at startup (load_args_from_checkpoint;
# its parallel sizes: forced in older releases and forks, with --use-mp-args-from-checkpoint-args in newer ones)
FROM_CHECKPOINT_FLAGS = ("--use-checkpoint-args",)


def megatron_default(flag_names: tuple[str, ...], table_default: int | None) -> int | None:
    """The value the program uses when none of `flag_names` is given. Today: Megatron-LM's default,
    kept as data above; a code-base flag schema (when the launched code is read) will answer here."""
    return table_default


def _size_from_flags(key: str, flags: dict[str, list[FlagOccurrence]], hidden: Unknown | None) -> dict:
    names, default = PARALLEL_FLAGS[key]
    given = [(o, n) for n in names for o in flags.get(n, [])]
    if given:
        occ, name = max(given, key=lambda p: (p[0].span.line, p[0].span.column) if p[0].span else (0, 0))
        d: dict = {"source": name}
        v = occ.args[0] if len(occ.args) == 1 else None
        if v is None or not isinstance(v, Known):
            d["unknown"] = f"{name} is {v.reason}" if isinstance(v, Unknown) else f"{name} has no single value"
        elif re.fullmatch(r"\s*\d+\s*", v.text) is None:
            d["unknown"] = f"{name} {v.text!r} is not an integer"  # the program rejects it (not this rule's job)
        elif len(v.text.strip()) > 18:  # (int() of 4,300 digits raises; products of these stay small)
            d["unknown"] = f"{name} is too large a number to track"
        else:
            d["value"] = int(v.text)
        span = v.span if isinstance(v, (Known, Unknown)) and v.span is not None else occ.span
        d.update(_loc(span))
        return d
    if hidden is not None:
        return {"unknown": f"{names[0]} may be given by {hidden.reason}", "source": "unknown arguments"}
    ckpt = next((f for f in FROM_CHECKPOINT_FLAGS if f in flags), None)
    if ckpt is not None:
        # megatron/training/initialize.py: load_args_from_checkpoint runs before validate_args and sets
        # the parallel sizes the checkpoint was saved with (checkpointing.py `_set_arg(..., force=True)`)
        why = f"{names[0]} is not given, and {ckpt} takes it from the checkpoint --load names"
        return {"unknown": why, "source": ckpt}
    if any(not f.startswith("-") and "." in f for f in flags):
        # Hydra overrides (Megatron-Bridge): what is not overridden comes from the recipe, not argparse
        return {"unknown": f"not overridden: the recipe's config decides {names[-1]}", "source": "recipe"}
    value = megatron_default(names, default)
    return {"value": value, "source": f"default ({names[0]} not given)"}


def parallel_sizes(layout, flags: dict[str, list[FlagOccurrence]], positionals: list[Value]) -> dict:
    """World size from the launcher; TP/PP/CP/EP/VPP from the flags (Megatron's defaults when absent);
    DP = world / (TP x PP x CP). Each entry: `value` (or `range`, or `unknown`), `source`, location."""
    hidden = None
    for p in positionals:
        if isinstance(p, Known) and p.text == "--":
            break  # after `--`: positional words, never a flag
        if isinstance(p, Unknown):
            hidden = p
            break
    out = {
        "nodes": layout.nodes.to_json(),
        "procs_per_node": layout.per_node.to_json(),
        "world": layout.world.to_json(),
    }
    for key in ("tp", "pp", "cp", "ep", "vpp"):
        out[key] = _size_from_flags(key, flags, hidden)
    vpp = out["vpp"]
    if vpp.get("value") == 1:
        vpp["value"] = None  # Megatron: a virtual size of 1 means no interleaving
    layers_per_vstage = flags.get("--num-layers-per-virtual-pipeline-stage")
    if vpp.get("value") is None and "unknown" not in vpp and layers_per_vstage:
        vpp.clear()
        vpp.update(
            {
                "unknown": "derived from --num-layers-per-virtual-pipeline-stage",
                "source": "--num-layers-per-virtual-pipeline-stage",
            }
        )
    world = layout.world
    model = [out[k] for k in ("tp", "pp", "cp")]
    dp: dict[str, object]
    if not world.known:
        dp = {"unknown": f"the world size is unknown: {world.unknown}"}
        if world.not_in_script:
            dp["not_in_script"] = True
    elif world.lo != world.hi:
        dp = {"unknown": f"the world size is an elastic range {world.lo}..{world.hi}"}
    elif any("value" not in m for m in model):
        dp = {"unknown": next(m["unknown"] for m in model if "value" not in m)}
    else:
        product = model[0]["value"] * model[1]["value"] * model[2]["value"]
        if product <= 0 or world.lo % product:
            dp = {
                "unknown": f"the world size {world.lo} is not divisible by TP x PP x CP = {product}",
                "not_divisible": True,
            }  # PK301's finding; no "could not decide" for DP rules
        else:
            dp = {"value": world.lo // product}
            # (what the world size rests on, the data-parallel size does: `--nproc_per_node ${1:-8}`)
            premises = [p for p in [world.premise, *(evidence.of_entry(m) for m in model)] if p is not None]
            if premises:
                dp["evidence"] = evidence.to_json(max(premises, key=lambda p: p[0] == evidence.MACHINE))
    dp["source"] = "world / (tp x pp x cp)"
    out["dp"] = dp
    return out


@record
class ScriptModel:
    script: str
    args: list[str]
    launches: list[Launch]
    diagnostics: list[Diagnostic]
    notes: list[str] = factory(list)

    def to_json(self) -> dict:
        return {
            "version": MODEL_VERSION,
            "script": self.script,
            "args": self.args,
            "launches": [launch.to_json(i) for i, launch in enumerate(self.launches)],
            "diagnostics": [d.to_json() for d in self.diagnostics],
        }


def _exports_by_name(export_events) -> dict[str, list[tuple]]:
    """Export events (in execution order) grouped by variable, so each launch finds the first export
    after it by bisection instead of scanning every export of the script."""
    by_name: dict[str, list[tuple]] = {}
    for seq, name, span, var in export_events:
        by_name.setdefault(name, []).append((seq, span, var))
    for events in by_name.values():
        events.sort(key=lambda e: e[0])
    return by_name


def group_launches(
    instances: list[LaunchInstance], export_events, cfg_ctx: ConfigContext | None = None
) -> list[Launch]:
    """One launch per (source location, call/loop context); its variants deduplicated."""
    order: list[tuple] = []
    groups: dict[tuple, list[LaunchInstance]] = {}
    for inst in instances:
        key = (inst.span, inst.context)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(inst)
    launches = []
    memo: dict = {}
    export_events = _exports_by_name(export_events)
    for key in order:
        variants: list[Variant] = []
        seen: dict[tuple, Variant] = {}
        for inst in groups[key]:
            sig = (
                tuple(sorted((k, id(x)) for k, x in inst.env.items())),
                tuple(sorted((k, id(x)) for k, x in inst.unexported.items())),
                tuple((type(f).__name__, f.text if isinstance(f, Known) else f.reason, f.span) for f in inst.fields),
            )
            if sig in seen:
                prev = seen[sig]
                prev.when = tuple(c for c in prev.when if c in set(inst.when))
                continue
            v = build_variant(inst, export_events, memo, cfg_ctx)
            seen[sig] = v
            variants.append(v)
        launches.append(Launch(key[0], key[1], variants))
    return launches


def build_script_model(
    path,
    *,
    env=None,
    inherit_env=False,
    args=(),
    known_env=(),
    text=None,
    display_path=None,
    stack_versions: dict[str, str] | None = None,
) -> ScriptModel:
    from packlint.source import display_path as shown

    path = str(path)
    display = display_path or (shown(__import__("pathlib").Path(path)) if text is None else path)
    caller_env: dict[str, str] = {}
    if inherit_env:
        caller_env.update(os.environ)
    caller_env.update(env or {})
    interp, ps = interpret_file(path, display, text=text, env=caller_env, args=list(args), known_env=tuple(known_env))
    script_dir = os.path.dirname(os.path.abspath(path)) if path not in ("-", "<stdin>") else None
    cfg_ctx = ConfigContext(script_dir, stack_versions, path, text)
    launches = group_launches(interp.launches, interp.export_events, cfg_ctx)
    if interp.branch_regions:
        mark_branches(launches, interp.branch_regions)
    return ScriptModel(display, list(args), launches, interp.diagnostics, ps.source.notes)


def mark_branches(launches: list[Launch], regions: dict[Span, str]) -> None:
    """Each repeated flag's occurrences get the innermost branch body they were written in (`FlagOccurrence.branch`):
    a value set in a `case` arm or an `if` body over one given outside it is that branch's own (PK103). An
    occurrence outside every region is told by bisection over the regions' union (a long script repeats thousands
    of flags outside its hundreds of branches)."""
    import bisect

    by_file: dict[str, list[tuple[tuple[int, int], tuple[int, int], str]]] = {}
    for r, label in regions.items():
        by_file.setdefault(r.file, []).append(((r.line, r.column), (r.end_line, r.end_column), label))
    cover: dict[str, tuple[list[tuple[int, int]], list[tuple[int, int]]]] = {}
    for file, rs in by_file.items():
        starts: list[tuple[int, int]] = []
        ends: list[tuple[int, int]] = []
        for r_start, r_end, _label in sorted(rs):
            if ends and r_start <= ends[-1]:
                ends[-1] = max(ends[-1], r_end)
            else:
                starts.append(r_start)
                ends.append(r_end)
        cover[file] = (starts, ends)
    for launch in launches:
        for variant in launch.variants:
            for occs in variant.flags.values():
                if len(occs) < 2:
                    continue
                for occ in occs:
                    s = occ.span
                    if s is None or s.file not in cover:
                        continue
                    start, end = (s.line, s.column), (s.end_line, s.end_column)
                    starts, ends = cover[s.file]
                    k = bisect.bisect_right(starts, start) - 1
                    if k < 0 or ends[k] < end:
                        continue  # (inside no branch body)
                    best = None
                    for r_start, r_end, label in by_file[s.file]:
                        if r_start <= start and end <= r_end and (best is None or best <= r_start):
                            best, occ.branch = r_start, label
