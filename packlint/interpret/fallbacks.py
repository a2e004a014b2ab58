"""Values a script sets only while its environment leaves a variable unset (issue 26).

`if [ -z "$GPUS_PER_NODE" ]; then GPUS_PER_NODE=8; NNODES=1; fi` after `GPUS_PER_NODE=${NPROC_PER_NODE}`,
and `[ -z "$MODEL" ] && MODEL=...`, are the shapes of `${X:-default}`: the branch runs only when the
variable is unset, which packlint takes to be so because the script never sets it. Where the variable
is one a cluster or launch platform sets, the values set in the branch hold on the machine (as a
`${SLURM_NNODES:-1}` fallback does: packlint.evidence); the script's own variables' fallbacks stand as
shipped, as `${NNODES:-1}`'s do, unless the default is plainly a placeholder (`${MODEL:-"Path to your
model"}`: an assumption about the caller). The branch is still taken; findings on its values are capped.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from packlint import evidence
from packlint import launchers as L
from packlint.interpret.syntax import text_of
from packlint.interpret.world import World
from packlint.parse import RAW_EXPANSION, ParsedScript
from packlint.values import Known

if TYPE_CHECKING:
    from tree_sitter import Node

    from packlint.interpret.run import Interpreter

# what launch platforms (PAI-DLC, Kubeflow's PyTorchJob, torchrun's elastic agent) set for a job besides the
# schedulers' own variables (launchers.CLUSTER_VARIABLE). Names scripts commonly own (NNODES, NODE_RANK)
# are not here: their `${NNODES:-1}` default stands as shipped (interpret/tree_callers.py).
PLATFORM_VARIABLE = re.compile(
    r"^(NPROC_PER_NODE|LOCAL_WORLD_SIZE|GROUP_RANK|RANK|LOCAL_RANK|MASTER_ADDR|MASTER_PORT)$"
)
# a default that cannot be the value meant: "Path to your model", /path/to/your/ckpt, <MODEL_PATH>, CHANGE_ME
PLACEHOLDER = re.compile(r"(?i)(\byour\b|(^|/)path/to/|^<[^<>]+>$|\bchange[_ ]?me\b|\bTODO\b|\bFIXME\b|^x{3,}$)")
_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")
_MASK = re.compile(r"\$" + RAW_EXPANSION + r"(\d+)")
_TESTS = ("test_command",)


def env_origin(name: str, line: int) -> str | None:
    """The origin of a value that holds only while the platform leaves $name unset (None: a variable of
    the script's own, whose fallback stands as shipped, as `${NNODES:-1}`'s does)."""
    if L.CLUSTER_VARIABLE.match(name) or PLATFORM_VARIABLE.match(name):
        return evidence.origin_of(
            evidence.MACHINE, f"the platform leaves ${name} unset, so the script's fallback (line {line}) is taken"
        )
    return None


def placeholder_origin(name: str, default: str, line: int) -> str | None:
    """The origin of the default of `${name:-default}` when the default is plainly a placeholder the
    caller is meant to replace (`${MODEL:-"Path to your model"}`); None: the default stands as shipped."""
    if not PLACEHOLDER.search(default):
        return None
    return evidence.origin_of(
        evidence.ASSUMED, f"the caller leaves ${name} unset, so its placeholder default (line {line}) is taken"
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
                found = env_origin(name, line) if not world.unread_source else None
                if found is not None:
                    return found
                continue
            v = var.scalar()
            origin = evidence.whole_origin(v.origin) if isinstance(v, Known) else None
            if not origin:
                continue
            if origin.startswith(("unset:", "cluster-default:")):
                found = env_origin(origin.partition(":")[2], line)
                if found is not None:
                    return found
                continue
            if origin.startswith(evidence.MACHINE + ":"):
                return origin
            # (a branch decided by an assumption, `MODE=${1:-sft}; if [[ $MODE == sft ]]`, is not marked here:
            # the values it sets stand as the script's own)
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
