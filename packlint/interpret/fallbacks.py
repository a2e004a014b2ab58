"""Values a script sets only while its environment leaves a variable unset (issue 26).

`if [ -z "$GPUS_PER_NODE" ]; then GPUS_PER_NODE=8; NNODES=1; fi` after `GPUS_PER_NODE=${NPROC_PER_NODE}`,
and `[ -z "$MODEL" ] && MODEL=...`, are the shapes of `${X:-default}`: the branch runs only when the
variable is unset, which packlint takes to be so because the script never sets it. The values set in
the branch hold on that premise, as a `${SLURM_NNODES:-1}` fallback does (packlint.evidence): the
machine's when the variable is one a cluster or launch platform sets, else an assumption about the
caller. The branch is still taken (a launch is still found); findings on its values are capped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from packlint import evidence
from packlint import launchers as L
from packlint.interpret.bash_tables import BASH_DYNAMIC
from packlint.interpret.syntax import text_of
from packlint.interpret.world import World
from packlint.parse import RAW_EXPANSION, ParsedScript
from packlint.values import Known

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter

# what launch platforms (PAI-DLC, Volcano, torchrun's agents, MPI wrappers) set for a job besides the
# schedulers' own variables (launchers.CLUSTER_VARIABLE)
PLATFORM_VARIABLE = re.compile(
    r"^(NPROC_PER_NODE|NNODES|NODE_RANK|NODE_COUNT|NUM_NODES|MASTER_ADDR|MASTER_PORT|RANK|LOCAL_RANK|"
    r"LOCAL_WORLD_SIZE|GROUP_RANK)$"
)
_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_MASK = re.compile(r"\$" + RAW_EXPANSION + r"(\d+)")
_TESTS = ("test_command",)


def env_origin(name: str, line: int) -> str:
    """The origin of a value that holds only while the environment leaves $name unset."""
    if L.CLUSTER_VARIABLE.match(name) or PLATFORM_VARIABLE.match(name):
        return evidence.origin_of(
            evidence.MACHINE, f"the platform leaves ${name} unset, so the script's fallback (line {line}) is taken"
        )
    return evidence.origin_of(
        evidence.ASSUMED, f"the caller leaves ${name} unset, so the script's fallback (line {line}) is taken"
    )


def _names(node: Node, ps: ParsedScript) -> list[str]:
    text = text_of(node)
    if RAW_EXPANSION in text:
        text = _MASK.sub(
            lambda m: ps.raw_expansions[int(m.group(1))] if int(m.group(1)) < len(ps.raw_expansions) else "", text
        )
    return [m.group(1) for m in _REF.finditer(text)]


def test_origin(nodes: list[Node] | None, world: World, ps: ParsedScript) -> str | None:
    """The premise a condition made of tests (`[ -z "$X" ]`, `[[ ... ]]`, `test`) rests on when it reads a
    variable the script never set, or one holding such a variable's value (`X=${NPROC_PER_NODE}`)."""
    if not nodes or any(n.type not in _TESTS for n in nodes):
        return None
    for n in nodes:
        line = n.start_point[0] + 1
        for name in _names(n, ps):
            var = world.vars.get(name)
            if var is None:
                if name not in BASH_DYNAMIC and not world.unread_source:
                    return env_origin(name, line)
                continue
            v = var.scalar()
            origin = v.origin if isinstance(v, Known) else None
            if not origin:
                continue
            if origin.startswith("unset:"):
                return env_origin(origin[len("unset:") :], line)
            if origin.startswith("cluster-default:"):
                return env_origin(origin[len("cluster-default:") :], line)
            if evidence.is_evidence_origin(origin):
                return origin
    return None


@contextmanager
def premise(interp: Interpreter, origin: str | None) -> Iterator[None]:
    """Run a branch whose values hold on `origin` (the innermost premise already in force stays)."""
    if origin is None or interp.branch_origin is not None:
        yield
        return
    interp.branch_origin = origin
    try:
        yield
    finally:
        interp.branch_origin = None


def carry(interp: Interpreter, value: Known) -> Known:
    """A value assigned in such a branch, with the branch's premise (unless it has its own)."""
    origin = interp.branch_origin
    if origin is None or evidence.is_evidence_origin(value.origin):
        return value
    return Known(value.text, value.span, origin)
