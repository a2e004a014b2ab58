"""How many processes a launch starts: nodes x processes per node = world size, read from the
options of the innermost launcher that starts several (the `processes` of its table entry)."""

from __future__ import annotations

import re

from packlint.launchers.split import Option
from packlint.launchers.tables import LAUNCHERS, PYTHON_NAME, SAME_PROCESS, SizeOption
from packlint.records import record
from packlint.values import Known, Unknown, Value


class Count:
    """A process count with its provenance: `lo`/`hi` (equal unless the launcher was given a range such
    as torchrun's elastic `--nnodes 1:4` or srun's `-N 2-4`), or `unknown` (why); `source` says which
    option (or default) it came from, `span` where it was written."""

    __slots__ = ("lo", "hi", "unknown", "source", "span", "not_in_script")

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

    @property
    def known(self) -> bool:
        return self.unknown is None

    def times(self, other: Count, source: str) -> Count:
        if not self.known:
            return self if self.span is not None or other.known or other.span is None else other
        if not other.known:
            return other
        assert self.lo is not None and self.hi is not None and other.lo is not None and other.hi is not None
        return Count(self.lo * other.lo, self.hi * other.hi, None, source)

    def to_json(self) -> dict:
        d: dict = {}
        if self.unknown is not None:
            d["unknown"] = self.unknown
            if self.not_in_script:
                d["not_in_script"] = True
        elif self.lo == self.hi:
            d["value"] = self.lo
        else:
            d["range"] = [self.lo, self.hi]
        d["source"] = self.source
        if self.span is not None:
            d.update(self.span.to_json())
        return d


@record
class ProcessLayout:
    """Nodes, processes per node and world size of one launch (each a Count)."""

    launcher: str | None
    nodes: Count
    per_node: Count
    world: Count


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
    if v.origin and v.origin.startswith("cluster-default:"):
        name = v.origin.split(":", 1)[1]
        return Count(
            unknown=f"{opt.name} comes from ${name}, which the cluster sets at run time "
            f"(the script's fallback is {v.text!r}; pass --env {name}=N to decide)",
            source=where,
            span=v.span,
        )
    m = _COUNT.fullmatch(v.text)
    if not m:
        return Count(unknown=f"{opt.name} {v.text!r} is not a number", source=where, span=v.span)
    lo = int(m.group(1))
    hi = int(m.group(2) or m.group(1))
    return Count(min(lo, hi), max(lo, hi), None, where, v.span)


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
