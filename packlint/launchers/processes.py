"""How many processes a launch starts: nodes x processes per node = world size, read from the
options of the innermost launcher that starts several (the `processes` of its table entry)."""

from __future__ import annotations

import re

from packlint import evidence
from packlint.launchers.split import Option
from packlint.launchers.tables import LAUNCHERS, PROGRAM_PROCESSES, PYTHON_NAME, SAME_PROCESS, SizeOption
from packlint.records import record
from packlint.values import Known, Unknown, Value


class Count:
    """A process count with its provenance: `lo`/`hi` (equal unless the launcher was given a range such
    as torchrun's elastic `--nnodes 1:4` or srun's `-N 2-4`), or `unknown` (why); `source` says which
    option (or default) it came from, `span` where it was written."""

    __slots__ = ("lo", "hi", "unknown", "source", "span", "not_in_script", "multiple_of", "premise")

    def __init__(
        self,
        lo: int | None = None,
        hi: int | None = None,
        unknown: str | None = None,
        source: str = "",
        span=None,
        not_in_script: bool = False,
    ) -> None:
        self.lo, self.hi, self.unknown, self.source, self.span = lo, hi, unknown, source, span
        # unknown because the script does not say (a hostfile, the accelerate config, the allocation),
        # not because it says something packlint cannot evaluate: nothing to pass with --env
        self.not_in_script = not_in_script
        # an unknown count known to be a multiple of this: `deepspeed --num_gpus 8` with no hostfile
        # named runs 8 processes on each of its k hosts, 8·k in all (issue 27)
        self.multiple_of: int | None = None
        # what a known count rests on besides the checkout (packlint.evidence): a value set in the script's
        # fallback branch for a platform's variable (`if [ -z "$NPROC_PER_NODE" ]; then ...=8`)
        self.premise: tuple[str, str] | None = None

    @property
    def known(self) -> bool:
        return self.unknown is None

    def times(self, other: Count, source: str) -> Count:
        if not self.known or not other.known:
            if not self.known:
                out = self if self.span is not None or other.known or other.span is None else other
            else:
                out = other
            factor = self if self.known else other if other.known else None
            if factor is not None and factor.lo == factor.hi and factor.lo and factor.lo > 1:
                # the other factor is a count (at least 1): the product is a multiple of this one
                out = Count(out.lo, out.hi, out.unknown, out.source, out.span, out.not_in_script)
                out.multiple_of = factor.lo
            return out
        assert self.lo is not None and self.hi is not None and other.lo is not None and other.hi is not None
        product = Count(self.lo * other.lo, self.hi * other.hi, None, source)
        premises = [p for p in (self.premise, other.premise) if p is not None]
        if premises:  # the weaker basis of the two (machine over assumed)
            product.premise = max(premises, key=lambda p: p[0] == evidence.MACHINE)
        return product

    def to_json(self) -> dict:
        d: dict = {}
        if self.unknown is not None:
            d["unknown"] = self.unknown
            if self.not_in_script:
                d["not_in_script"] = True
            if self.multiple_of is not None:
                d["multiple_of"] = self.multiple_of
        elif self.lo == self.hi:
            d["value"] = self.lo
        else:
            d["range"] = [self.lo, self.hi]
        d["source"] = self.source
        if self.span is not None:
            d.update(self.span.to_json())
        if self.premise is not None and self.unknown is None:
            d["evidence"] = evidence.to_json(self.premise)
        return d


@record
class ProcessLayout:
    """Nodes, processes per node and world size of one launch (each a Count)."""

    launcher: str | None
    nodes: Count
    per_node: Count
    world: Count


MAX_COUNT_DIGITS = 9  # a process count of 10**9 or more is not a count; products stay small
_COUNT = re.compile(r"\s*(\d+)\s*(?:[:-]\s*(\d+))?\s*")


def _read_count(owner: str, size: SizeOption | None, opts: dict[str, Option]) -> Count:
    if size is None:
        return Count(unknown=f"{owner} has no such option", source=owner)
    opt = next((opts[a] for a in size.names if a in opts), None)
    if opt is None or not opt.args:
        if size.default is None:
            return Count(unknown=size.why_unknown or f"{size.names[0]} not given", source=owner, not_in_script=True)
        return Count(int(size.default), int(size.default), None, f"{owner} default ({size.names[0]} not given)")
    v = opt.args[0]
    where = f"{owner} {opt.name}"
    if not isinstance(v, Known):
        return Count(unknown=f"{opt.name} is unknown ({v.reason})", source=where, span=v.span)
    origin = evidence.whole_origin(v.origin)
    if origin and origin.startswith("cluster-default:"):
        name = origin.split(":", 1)[1]
        return Count(
            unknown=f"{opt.name} comes from ${name}, which the cluster sets at run time "
            f"(the script's fallback is {v.text!r}; pass --env {name}=N to decide)",
            source=where,
            span=v.span,
        )
    m = _COUNT.fullmatch(v.text)
    if not m:
        return Count(unknown=f"{opt.name} {v.text!r} is not a number", source=where, span=v.span)
    if max(len(m.group(1)), len(m.group(2) or "")) > MAX_COUNT_DIGITS:  # (never int() of unbounded digits)
        return Count(unknown=f"{opt.name} is too large a number to track", source=where, span=v.span)
    lo = int(m.group(1))
    hi = int(m.group(2) or m.group(1))
    count = Count(min(lo, hi), max(lo, hi), None, where, v.span)
    premise = evidence.from_origin(v.origin)
    if premise is not None:  # a platform's fallback (interpret/fallbacks.py), or an assumption (`${1:-8}`)
        count.premise = premise
    return count


def layout_from_env(layout: ProcessLayout, env: dict[str, dict]) -> ProcessLayout | None:
    """Counts a launcher reads from its environment when its options do not give them (srun in a job:
    `SLURM_NTASKS`, `SLURM_NNODES`, `SLURM_NTASKS_PER_NODE`, set from the job's `#SBATCH` headers, by
    `--env`, or by the script): the layout with them, or None when none applies."""
    spec = LAUNCHERS.get(layout.launcher or "")
    if spec is None or spec.processes is None or layout.world.known or layout.world.span is not None:
        return None
    pc = spec.processes

    def from_env(size: SizeOption | None, count: Count) -> Count:
        if size is None or count.span is not None or (count.known and not count.source.endswith("not given)")):
            return count
        for name in size.env:
            e = env.get(name)
            v = e.get("value") if e is not None else None
            if isinstance(v, str) and v.strip().isdigit() and len(v.strip()) <= MAX_COUNT_DIGITS and int(v) >= 1:
                assert e is not None
                where = JSONSpan(e) if e.get("line") is not None else None
                return Count(int(v), int(v), None, f"${name} ({e.get('source', 'script')})", where)
        return count

    nodes, per_node = from_env(pc.nodes, layout.nodes), from_env(pc.per_node, layout.per_node)
    total = from_env(pc.total, Count(unknown="not given")) if pc.total is not None else None
    if total is not None and total.known:
        world = total
    else:
        world = nodes.times(per_node, f"{layout.launcher}: nodes x processes per node")
    if not world.known:
        return None
    return ProcessLayout(layout.launcher, nodes, per_node, world)


def program_layout(program: str | None, flags: dict, config: dict | None) -> ProcessLayout | None:
    """The layout of a program that starts its own workers (PROGRAM_PROCESSES: OpenRLHF's Ray PPO actor,
    verl's trainer.nnodes x trainer.n_gpus_per_node), or None for any other program."""
    if not program:
        return None
    spec = next((p for p in PROGRAM_PROCESSES if re.search(p.program, program)), None)
    if spec is None:
        return None
    settings = (config or {}).get("settings") or {}

    def count(names: tuple[str, ...]) -> Count:
        for name in names:
            if spec.setting:
                e = settings.get(name)
                if e is None:
                    continue
                v = e.get("value")
                where = JSONSpan(e) if e.get("line") is not None else None
                if type(v) is int and 0 < v < 10**MAX_COUNT_DIGITS:
                    return Count(v, v, None, f"{name} ({spec.cite})", where)
                return Count(unknown=f"{name} is {e.get('unknown') or repr(v)}", source=name, span=where)
            occs = flags.get(name)
            if not occs:
                continue
            arg = occs[-1].args[0] if occs[-1].args else None
            span = occs[-1].span
            if isinstance(arg, Known) and arg.text.strip().isdigit() and len(arg.text.strip()) <= MAX_COUNT_DIGITS:
                return Count(int(arg.text), int(arg.text), None, f"{name} ({spec.cite})", arg.span or span)
            why = arg.reason if isinstance(arg, Unknown) else f"{arg.text if arg else ''!r}, not a count"
            return Count(unknown=f"{name} is {why}", source=name, span=span)
        why = f"{names[0]} is not given (the program's default decides)"
        return Count(unknown=why, source=names[0], not_in_script=True)

    nodes, per_node = count(spec.nodes), count(spec.per_node)
    world = nodes.times(per_node, f"{program}: {spec.nodes[0]} x {spec.per_node[0]}")
    return ProcessLayout(program, nodes, per_node, world)


def _same_process(launchers: list[str]) -> list[str]:
    """`coverage run X` runs X in its own process, as `python X` does: counted as `python`."""
    return ["python" if n in SAME_PROCESS else n for n in launchers]


def process_layout(launchers: list[str], launcher_options: list[tuple[str, Option]]) -> ProcessLayout:
    """Nodes x processes per node = world size, from the innermost launcher that starts several
    processes (torchrun: --nnodes x --nproc-per-node; srun: --ntasks, else --nodes x --ntasks-per-node;
    plain `python` under srun: srun's counts; plain `python` alone: 1)."""
    launchers = _same_process(launchers)
    for name in reversed(launchers):
        key = "torchrun" if " -m torch." in name else name
        spec = LAUNCHERS.get(key)
        if spec is None or spec.processes is None:
            continue
        opts: dict[str, Option] = {}
        for owner, opt in launcher_options:
            if owner == name:
                opts[opt.name] = opt  # last wins
        pc = spec.processes
        nodes = _read_count(name, pc.nodes, opts)
        per_node = _read_count(name, pc.per_node, opts)
        total = _read_count(name, pc.total, opts) if pc.total is not None else None
        if total is not None and (total.known or total.span is not None):
            world = total  # given explicitly (or given but unknown)
        else:
            world = nodes.times(per_node, f"{name}: nodes x processes per node")
            if not world.known and total is not None and not nodes.known and nodes.span is None:
                world = total  # neither given: the allocation decides; say so
        return ProcessLayout(name, nodes, per_node, world)
    if launchers and PYTHON_NAME.match(launchers[-1]):
        # one process here; but a script with a plain `python train.py` is often itself started once
        # per rank (`srun bash train.sh`, an sbatch wrapper, a platform's launcher)
        why = (
            f"a plain {launchers[-1]} launch starts one process, but the script itself may be "
            "started once per rank (srun, mpirun, a job platform)"
        )
        one = Count(unknown=why, source=launchers[-1], not_in_script=True)
        return ProcessLayout(launchers[-1], one, one, one)
    none = Count(unknown="no launcher option gives the number of processes")
    return ProcessLayout(None, none, none, none)


def world_size(launchers: list[str], launcher_options: list[tuple[str, Option]]) -> Value | None:
    """The number of processes as a shell value (the upper end of an elastic range); a plain
    `python` launch counts as 1 here."""
    launchers = _same_process(launchers)
    if (
        launchers
        and PYTHON_NAME.match(launchers[-1])
        and not any(" -m torch." in n for n in launchers)
        and all(LAUNCHERS.get(n) is None or LAUNCHERS[n].processes is None for n in launchers)
    ):
        return Known("1")
    world = process_layout(launchers, launcher_options).world
    if world.known:
        return Known(str(world.hi))
    return Unknown(world.unknown or "unknown", world.span)


# ---------------------------------------------------------------------------------------------- env layouts
# Framework command lines that start torchrun themselves, sized by environment variables the script sets.
# (launchers, nodes variable, per-node variable, switches that must be on, cite)
_ENV_LAYOUTS: tuple[tuple[frozenset[str], str, str, tuple[str, ...], str], ...] = (
    (
        frozenset({"swift sft", "swift pt", "swift rlhf", "megatron sft", "megatron pt", "megatron rlhf"}),
        "NNODES",
        "NPROC_PER_NODE",
        (),
        # torchrun when NPROC_PER_NODE or NNODES is set, given only those set (torchrun's default: 1)
        "modelscope/ms-swift@3602360a56:swift/cli/main.py:30-35 use_torchrun, :75-84 get_torchrun_args",
    ),
    (
        frozenset({"llamafactory-cli train"}),
        "NNODES",
        "NPROC_PER_NODE",
        ("FORCE_TORCHRUN", "USE_MCA", "USE_MEGATRON_BRIDGE"),
        # torchrun when forced (else when the machine has > 1 device: unknown here); NPROC_PER_NODE
        # defaults to the device count (unknown here), NNODES to 1
        "hiyouga/LLaMA-Factory@ff6d4d12ee:src/llamafactory/launcher.py:56-66",
    ),
)
_ENABLED = ("true", "y", "1")  # LLaMA-Factory's is_env_enabled (lower-cased)


def env_layout(launcher: str | None, env: dict[str, dict]) -> ProcessLayout | None:
    """The layout of a framework command line sized by the environment (ms-swift, LLaMA-Factory), from
    the launch's ENV_ENTRY map; None where the launcher is not one, or the script does not decide it
    (a variable it does not set is absent: the launch model's convention; one set to something packlint
    cannot know gives an unknown count)."""
    spec = next((s for s in _ENV_LAYOUTS if launcher in s[0]), None)
    if spec is None:
        return None
    _names, nodes_var, per_node_var, switches, cite = spec

    def text(name: str) -> tuple[str | None, str | None, dict | None]:
        e = env.get(name)
        if e is None:
            return None, None, None
        if "unknown" in e or not isinstance(e.get("value"), str):
            return None, f"${name} is {e.get('unknown', 'unknown')}", e
        return e["value"], None, e

    def count(name: str, default: int | None) -> Count:
        value, why, e = text(name)
        loc = JSONSpan(e.get("value_location") or e) if e is not None and e.get("line") is not None else None
        if value is None and why is None:
            if default is None:
                return Count(
                    unknown=f"{name} is not set: {launcher} starts one process per device of the machine",
                    source=f"${name} ({cite})",
                    not_in_script=True,
                )
            return Count(default, default, None, f"{name} not set: {default}")
        if why is not None or value is None:
            return Count(unknown=why or f"${name} is unknown", source=name, span=loc)
        v = value.strip()
        if not v.isdigit() or len(v) > MAX_COUNT_DIGITS or int(v) < 1:
            return Count(unknown=f"${name} {value!r} is not a process count", source=name, span=loc)
        return Count(int(v), int(v), None, f"${name}", loc)

    if switches:
        states = [text(s) for s in switches]
        if any(w is not None for _v, w, _e in states):
            return None  # a switch packlint cannot read: torchrun or not is unknown
        if not any(v is not None and v.strip().lower() in _ENABLED for v, _w, _e in states):
            return None  # not forced: torchrun only on a machine with several devices (unknown)
        per_node = count(per_node_var, None)
    else:
        if env.get(nodes_var) is None and env.get(per_node_var) is None:
            return None  # a single process, unless the caller sets them: not decided here
        per_node = count(per_node_var, 1)
    nodes = count(nodes_var, 1)
    world = nodes.times(per_node, f"{launcher}: ${nodes_var} x ${per_node_var}")
    return ProcessLayout(launcher, nodes, per_node, world)


class JSONSpan:
    """A location the launch model already holds as JSON (a config setting's, an ENV_ENTRY's value),
    kept where a Count keeps its span."""

    __slots__ = ("loc",)

    def __init__(self, where: dict) -> None:
        self.loc = {k: where[k] for k in ("file", "line", "column", "end_line", "end_column") if k in where}

    def to_json(self) -> dict:
        return dict(self.loc)
