"""How a value of the launch model is known, and what that allows a finding to say (issue 26).

Every stage speaks this one vocabulary:

- **checkout**: read from the script, a config file, or the launched code in the checkout (its
  location says where). The default: an entry without an `evidence` field is known from the checkout.
- **assumed**: packlint took something to be so that the checkout does not say, and names it in words
  ("the script run without arguments", "the stack's current release").
- **machine**: the value depends on the machine the script runs on (a PATH lookup, a cluster
  variable, a file made at set-up or mounted in a container).
- unknown values are not premises of a finding: a rule over an unknown value is undecided
  (packlint.conditions' `Unk`), never fired.

The interpreter marks a value it assumed through its origin (`values.Known.origin`, "assumed:..." or
"machine:..."), the launch model writes it as an entry's `evidence` ({"kind", "because"}), the
conditions record the evidence of every entry they read as a *premise* of the rule being evaluated
(`record`), and the engine caps each finding by its premises (`cap`): error or warning only on
premises known from the checkout; an assumption caps at warning and the message names it; the
machine caps at info.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

CHECKOUT, ASSUMED, MACHINE = "checkout", "assumed", "machine"

# what each basis allows, at most (the severity order of packlint.findings.SEVERITY_RANK)
CEILING = {CHECKOUT: "error", ASSUMED: "warning", MACHINE: "info"}
_RANK = {CHECKOUT: 0, ASSUMED: 1, MACHINE: 2}
_SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}

# the assumptions and machine dependences the stages name (one wording each, used everywhere)
NO_ARGUMENTS = "the script run without arguments"
OWN_DIRECTORY = "the script run from its own directory"
CURRENT_RELEASE = "the stack's current release"
UPSTREAM_MEGATRON = (
    "the launched program is upstream Megatron-LM (its code is not in the checkout; a fork's may differ)"
)

# a premise: (kind, because): hashable, so findings that carry them stay hashable
Premise = tuple[str, str]


def origin_of(kind: str, because: str) -> str:
    """The `values.Known.origin` text for a value the interpreter assumed ("assumed:...", "machine:...")."""
    return f"{kind}:{because}"


# a value joined from parts of which only some rest on something (`"--nproc_per_node 8 --nnodes $NNODES"` with
# NNODES=${WORLD_SIZE:-1}): "marks:" + JSON [[start, end, origin], ...] over its text. Word splitting gives each
# field the origin of the part it came from (interpret.words); read whole, the value rests on its weakest mark.
MARKS = "marks:"


def marks(origin: str | None) -> tuple[tuple[int, int, str], ...]:
    """The (start, end, origin) ranges of a marked value's origin (() for any other origin)."""
    if not origin or not origin.startswith(MARKS):
        return ()
    return _parsed_marks(origin)


@lru_cache(maxsize=512)
def _parsed_marks(origin: str) -> tuple[tuple[int, int, str], ...]:
    # (a marked value is split into its fields, each asking for its part's mark: parsed once per origin text)
    try:
        found = json.loads(origin[len(MARKS) :])
    except ValueError:
        return ()
    if not isinstance(found, list):
        return ()
    return tuple(
        (m[0], m[1], str(m[2])) for m in found if isinstance(m, list) and len(m) == 3 and isinstance(m[0], int)
    )


def part_marks(origin: str | None, at: int, length: int) -> list[tuple[int, int, str]]:
    """The marks a part carrying `origin` gives a value it is joined into at offset `at`: its own marks shifted, or
    one mark over its text."""
    found = marks(origin)
    if found:
        return [(at + a, at + b, o) for a, b, o in found]
    return [(at, at + length, origin)] if origin and length else []


def marked(ranges: list[tuple[int, int, str]]) -> str | None:
    """The marked origin over these ranges (None: no range)."""
    return MARKS + json.dumps(ranges, separators=(",", ":")) if ranges else None


def whole_origin(origin: str | None) -> str | None:
    """The origin a value stands on when read whole: a marked value's weakest mark."""
    if origin and origin.startswith(MARKS):
        return weakest(str(o) for _a, _b, o in marks(origin))
    return origin


def weakest(origins: Iterable[str]) -> str | None:
    """The origin of the weakest knowledge among some (the machine's before an assumption, and both before a
    caller's word, which is no premise), the first of equals."""
    found = list(origins)
    found.sort(key=lambda o: 0 if o.startswith((MACHINE + ":", "cluster-default:")) else 1 if ":" in o else 2)
    return found[0] if found else None


def part_origin(origin: str | None, start: int, end: int) -> str | None:
    """The evidence origin of the text [start, end) of a value with this origin (`--nnodes=$NNODES`: the value
    after `=`): a marked value's mark over it; any other evidence origin whole; None otherwise."""
    if origin and origin.startswith(MARKS):
        return weakest(str(o) for a, b, o in marks(origin) if a < end and start < b)
    if origin and origin.startswith((ASSUMED + ":", MACHINE + ":", "unset:", "cluster-default:")):
        return origin
    return None


UNSET = " is unset: the script never sets it"  # (the premise of a value read from a variable the script never sets)


def unset_variable(entry: Any) -> str | None:
    """`$NAME` when a flag entry's value is the empty string read from a variable the script never sets (its value
    the environment's: a job spec's, a cluster's), else None."""
    ev = entry.get("evidence") if isinstance(entry, dict) and entry.get("value") == "" else None
    because = ev.get("because") if isinstance(ev, dict) else None
    return because[: -len(UNSET)] if isinstance(because, str) and because.endswith(UNSET) else None


def from_origin(origin: str | None) -> Premise | None:
    """The premise an interpreter value's origin stands for (None: known from the script)."""
    origin = whole_origin(origin)
    if not origin:
        return None
    kind, sep, because = origin.partition(":")
    if sep and kind in (ASSUMED, MACHINE):
        return (kind, because)
    if sep and kind == "unset":  # a variable the script never sets, read as empty (interpret.parameters)
        return (ASSUMED, f"${because}{UNSET}")
    if sep and kind == "cluster-default":  # `${SLURM_NNODES:-1}`: the fallback of a cluster variable
        return (MACHINE, f"${because} is the cluster's: the script's fallback is taken")
    return None


def of_values(values: Iterable[Any]) -> Premise | None:
    """The first premise among interpreter values (`values.Known` with an evidence origin)."""
    for v in values:
        premise = from_origin(getattr(v, "origin", None))
        if premise is not None:
            return premise
    return None


def is_evidence_origin(origin: str | None) -> bool:
    return bool(origin) and origin.startswith((ASSUMED + ":", MACHINE + ":"))  # type: ignore[union-attr]


def to_json(premise: Premise) -> dict[str, str]:
    """EVIDENCE (docs/launch-model.md): {"kind": "assumed" | "machine", "because": "..."}."""
    return {"kind": premise[0], "because": premise[1]}


def of_entry(entry: Mapping[str, Any] | None) -> Premise | None:
    """The premise an entry of the launch model (ENV_ENTRY, FLAG_ENTRY, DIAGNOSTIC, a config file)
    stands on, from its `evidence` field; None: known from the checkout."""
    if not entry:
        return None
    ev = entry.get("evidence")
    if not isinstance(ev, Mapping):
        return None
    kind, because = ev.get("kind"), ev.get("because")
    if kind in (ASSUMED, MACHINE) and isinstance(because, str):
        return (kind, because)
    return None


def shared(entries: Iterable[Any]) -> Premise | None:
    """The premise every one of `entries` (flag entries of one command line) stands on, or None: a premise of the
    command line as a whole (`<placeholder>` words bash reads as redirections: the command runs only if a file
    exists), which a finding about what the command line lacks rests on too."""
    premise: Premise | None = None
    for n, entry in enumerate(entries):
        p = of_entry(entry) if isinstance(entry, Mapping) else None
        if p is None or (n and p != premise):
            return None
        premise = p
    return premise


def record(ctx: Any, entry: Mapping[str, Any] | None) -> None:
    """Note the evidence of an entry a condition read as a premise of the rule being evaluated
    (`ctx`: packlint.conditions.tree.EvalContext). Entries known from the checkout add nothing."""
    if entry is None or "evidence" not in entry:
        return
    premise = of_entry(entry)
    if premise is not None:
        ctx.premises.append(premise)


def note(ctx: Any, premise: Premise | None) -> None:
    """Note a premise a condition function derived itself (not read from an entry)."""
    if premise is not None:
        ctx.premises.append(premise)


def unique(premises: Iterable[Premise]) -> tuple[Premise, ...]:
    """The premises once each, in the order first met."""
    out: list[Premise] = []
    for p in premises:
        if p not in out:
            out.append(p)
    return tuple(out)


def basis(premises: Iterable[Premise]) -> str:
    """The weakest kind of knowledge a finding stands on: checkout < assumed < machine."""
    worst = CHECKOUT
    for kind, _ in premises:
        if _RANK.get(kind, 0) > _RANK[worst]:
            worst = kind
    return worst


def cap(severity: str, premises: Iterable[Premise]) -> str:
    """The severity a finding may have on these premises: at most warning on an assumption, at most
    info on the machine."""
    ceiling = CEILING[basis(premises)]
    return ceiling if _SEVERITY_RANK[severity] > _SEVERITY_RANK[ceiling] else severity


def suffix(premises: Iterable[Premise]) -> str:
    """The words a finding's message gains to name what it rests on besides the checkout."""
    ps = unique(premises)
    assumed = _joined([b for k, b in ps if k == ASSUMED])
    machine = _joined([b for k, b in ps if k == MACHINE])
    parts = []
    if assumed:
        parts.append("assuming " + "; ".join(assumed))
    if machine:
        parts.append("depends on the machine: " + "; ".join(machine))
    return f" ({'; '.join(parts)})" if parts else ""


def _joined(becauses: list[str]) -> list[str]:
    """ "X, so A" and "X, so B" said once: "X, so A and B"."""
    heads: dict[str, list[str]] = {}
    for b in becauses:
        head, sep, tail = b.partition(", so ")
        heads.setdefault(head if sep else b, []).append(tail if sep else "")
    out = []
    for head, tails in heads.items():
        said = [t for t in tails if t]
        out.append(f"{head}, so {' and '.join(said)}" if said else head)
    return out


# a branch decision that tests the machine (engine: a finding that holds only under it depends on the machine):
# a PATH lookup (`command -v npu-smi`, `which nvidia-smi`, `type -P x`, `hash x`), what a device or host tool reports
# (`nvidia-smi -L`, `npu-smi info`, `$(hostname)`), or a test on an absolute path (`[ -d /usr/local/Ascend ]`)
_PATH_LOOKUP = re.compile(r"(?:^|[\s;&|!({`])(?:command\s+-[vV]|which|type(?:\s+-[aftpP]+)*|hash)\s+([\w.+-]+)")
_DEVICE_TOOL = re.compile(r"(?:^|[\s;&|!({`])(nvidia-smi|npu-smi|rocm-smi|hl-smi|xpu-smi|lspci|nproc|hostname|uname)\b")
_ABSOLUTE_TEST = re.compile(r"(?:^|[\s;&|!(\[])-[edfrxsLh]\s+[\"']?(/(?!tmp\b)[\w./+-]*)")


def condition_premise(decision: str) -> Premise | None:
    """The machine premise of a branch decision as the launch model words it ("`command -v npu-smi` is false"),
    or None when the checkout decides it (AIGCodeOS/aigcode_zeta_optimizer: NPUS_PER_NODE from whichever device
    tool is on PATH, 1 without one)."""
    m = _PATH_LOOKUP.search(decision)
    if m is not None:
        return (MACHINE, f"whether {m.group(1)} is on PATH is the machine's")
    m = _DEVICE_TOOL.search(decision)
    if m is not None:
        return (MACHINE, f"what {m.group(1)} reports is the machine's")
    m = _ABSOLUTE_TEST.search(decision)
    if m is not None:
        return (MACHINE, f"whether {m.group(1)} exists is the machine's")
    return None
