"""The guard's settings: the mode (fail or warn), where the JSON report goes, whether to measure.

Read from the environment in the launched processes (`packlint run --guard` sets them):
PACKLINT_GUARD=fail|warn (unset or anything else: fail), PACKLINT_GUARD_REPORT=path,
PACKLINT_GUARD_MEASURE=1, PACKLINT_GUARD_SEPARATOR=token ids (comma-separated) or `none`.
No torch here: sitecustomize imports this module in every Python process of the launch.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MODES = ("fail", "warn")
EXIT_GUARD = 3  # the process's exit status when the guard stops a run (docs/guard.md)
ENV_MODE = "PACKLINT_GUARD"
ENV_REPORT = "PACKLINT_GUARD_REPORT"
ENV_MEASURE = "PACKLINT_GUARD_MEASURE"
ENV_SEPARATOR = "PACKLINT_GUARD_SEPARATOR"


@dataclass
class GuardSettings:
    mode: str = "fail"
    report: str | None = None
    measure: bool = False
    separators: tuple[int, ...] | None = None  # None: the model config's eos_token_id; (): none

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"guard mode must be one of {', '.join(MODES)}, not {self.mode!r}")

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> GuardSettings:
        env = dict(os.environ) if env is None else env
        mode = env.get(ENV_MODE, "fail").strip().lower()
        sep = env.get(ENV_SEPARATOR)
        return cls(
            mode=mode if mode in MODES else "fail",
            report=env.get(ENV_REPORT) or None,
            measure=env.get(ENV_MEASURE, "").strip().lower() in ("1", "true", "yes", "on"),
            separators=parse_separators(sep) if sep is not None else None,
        )


def parse_separators(text: str) -> tuple[int, ...]:
    """`none` or `` -> (); `2` or `2,151643` -> the ids; a word that is not an integer is ignored."""
    out = []
    for word in text.replace(" ", ",").split(","):
        if word.strip().lstrip("-").isdigit():
            out.append(int(word))
    return tuple(out)


def rank() -> int:
    """This process's global rank: torch.distributed's when it is initialised, else RANK from the launcher
    (torchrun, deepspeed, accelerate), else 0."""
    import sys

    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:  # noqa: BLE001 - a half-initialised process group is not the guard's concern
        pass
    for name in ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0
