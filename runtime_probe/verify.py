"""The two proofs: (i) packed output equals each sub-sample attended alone, (ii) perturbing one
sub-sample changes no other sub-sample's output (the leakage figure, exactly 0 for a correct kernel).

Both work on any per-token function of the row (a bare attention kernel on q/k/v, or a whole
Megatron TransformerLayer on hidden states): `inputs` are tensors whose first dimension is tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch


@dataclass
class Verification:
    max_error: float = 0.0  # (i) worst |packed - alone| over the real tokens
    tolerance: float = 0.0
    worst_subsample: int | None = None
    per_subsample_error: list[float] = field(default_factory=list)
    leakage: float | None = None  # (ii) worst change outside the perturbed sub-sample
    mean_abs_output: float = 0.0
    per_perturbed: list[dict] = field(default_factory=list)
    output: torch.Tensor | None = None

    @property
    def rel_leakage(self) -> float | None:
        if self.leakage is None:
            return None
        return self.leakage / self.mean_abs_output if self.mean_abs_output > 0 else float("inf")

    @property
    def error_ok(self) -> bool:
        return math.isfinite(self.max_error) and self.max_error <= self.tolerance


def _max_abs(x: torch.Tensor) -> float:
    """max |x| as a Python float; NaN anywhere (an uninitialised row) counts as infinite error."""
    if x.numel() == 0:
        return 0.0
    if not bool(torch.isfinite(x).all()):
        return float("inf")
    return float(x.abs().max().item())


def compare_with_alone(
    packed_out: torch.Tensor,
    inputs: Sequence[torch.Tensor],
    bounds: list[tuple[int, int]],
    alone: Callable,
    tolerance: float,
    v: Verification,
) -> None:
    """(i): for each true sub-sample [a, b), run it alone and compare. The tolerance scales with the
    output's magnitude, so it means the same for a bare kernel and a full layer."""
    errs = []
    scale = 1.0
    for a, b in bounds:
        ref = alone(*[x[a:b] for x in inputs])
        scale = max(scale, _max_abs(ref.float()) if ref.numel() else 1.0)
        errs.append(_max_abs(packed_out[a:b].float() - ref.float()))
    v.per_subsample_error = errs
    v.max_error = max(errs) if errs else 0.0
    v.worst_subsample = int(max(range(len(errs)), key=lambda i: errs[i])) if errs else None
    v.tolerance = tolerance * (scale if math.isfinite(scale) else 1.0)


def measure_leakage(
    packed: Callable,
    inputs: Sequence[torch.Tensor],
    packed_out: torch.Tensor,
    bounds: list[tuple[int, int]],
    generator: torch.Generator,
    v: Verification,
    perturb: Sequence[int] | None = None,
) -> None:
    """(ii): replace sub-sample s's inputs with fresh noise, rerun the packed row, and take the
    largest change in every other real sub-sample's output. The last sub-sample is never perturbed:
    under causal attention nothing comes after it, so perturbing it can never show a leak."""
    real_end = bounds[-1][1]
    reals = packed_out[:real_end].float()
    v.mean_abs_output = float(reals.abs().mean().item()) if torch.isfinite(reals).all() else float("nan")
    targets = list(range(len(bounds) - 1)) if perturb is None else list(perturb)
    worst = 0.0
    for s in targets:
        a, b = bounds[s]
        moved = []
        for x in inputs:
            y = x.clone()
            noise = torch.randn(y[a:b].shape, generator=generator, dtype=torch.float32, device="cpu")
            y[a:b] = noise.to(device=y.device, dtype=y.dtype)
            moved.append(y)
        out2 = packed(*moved)
        diff = (out2[:real_end].float() - reals).abs()
        if diff.dim() > 1:
            diff = diff.reshape(real_end, -1).amax(dim=1)
        diff = torch.nan_to_num(diff, nan=float("inf"))
        diff[a:b] = 0.0  # its own output is supposed to change
        change = float(diff.max().item())
        victim = int(diff.argmax().item())
        victim_sub = next(i for i, (x0, x1) in enumerate(bounds) if x0 <= victim < x1) if change > 0 else None
        v.per_perturbed.append(
            {
                "perturbed": s,
                "max_change": change,
                "worst_token": victim if change > 0 else None,
                "worst_subsample": victim_sub,
            }
        )
        worst = max(worst, change)
    v.leakage = worst
