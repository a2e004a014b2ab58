"""The probe's verdict as a plain value: checks with pass/fail, the leakage figure, the work saved.

No torch here: a report is data (lists, ints, floats, strings), so it can be rendered, compared and
serialised by callers that never import the probe's kernels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

PASS, FAIL, SKIP, INFO = "pass", "fail", "skip", "info"
EXIT_LEAK, EXIT_DIFFERS, EXIT_UNDECIDED = 1, 3, 4
EXIT_BY_VERDICT = {"leak": EXIT_LEAK, "differs": EXIT_DIFFERS, "undecided": EXIT_UNDECIDED}
# which of several probes' exit codes a whole script's result takes: the most serious finding first
_EXIT_ORDER = (EXIT_LEAK, EXIT_DIFFERS, EXIT_UNDECIDED, 2, 0)


def worst_exit(codes: list[int]) -> int:
    """The exit status of several probes: a leak before a difference before undecided before usage."""
    present = set(codes)
    return next((c for c in _EXIT_ORDER if c in present), max(codes, default=0))


@dataclass
class Check:
    """One thing the probe verified. `status` is pass/fail, skip (could not run, says why) or info."""

    name: str
    status: str
    detail: str
    value: Any = None

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "detail": self.detail, "value": _jsonable(self.value)}


@dataclass
class ProbeReport:
    """Everything one probe found. `ok` is False as soon as one check failed."""

    settings: dict
    verdict: str = "failed"  # proven | failed | not-packed; HF probe: leak | differs | undecided
    backend: str | None = None
    backend_detail: str | None = None
    device: str | None = None
    dtype: str | None = None
    gates: dict = field(default_factory=dict)
    pipeline: list[str] = field(default_factory=list)  # what the re-enacted code did, step by step
    shapes: dict = field(default_factory=dict)
    tokens: int | None = None  # tokens the kernel sees (real + sequence-parallel padding)
    padding: int = 0
    lengths: list[int] = field(default_factory=list)  # the true sub-sample lengths
    cu_seqlens: list[int] | None = None  # what reaches the kernel (None: not packed)
    max_seqlen: int | None = None
    plain_causal: bool = False  # packed sub-samples reach attention without any cu_seqlens
    checks: list[Check] = field(default_factory=list)
    leakage: dict | None = None
    work: dict | None = None
    notes: list[str] = field(default_factory=list)
    timings_s: dict = field(default_factory=dict)
    headline: str | None = None  # the HF probe's first line (its verdict, with the numbers)
    assumptions: list[str] = field(default_factory=list)  # what the verdict assumes (dtype, use_cache, ...)
    versions: dict = field(default_factory=dict)  # the stack the probe ran: torch, transformers, megatron-core

    @property
    def ok(self) -> bool:
        return not any(c.status == FAIL for c in self.checks) and self.verdict not in ("differs", "undecided")

    @property
    def exit_code(self) -> int:
        """0 proven / not packed, 1 samples see each other (or a failed check), 3 packed differs from
        alone without cross-sample leakage, 4 cannot decide (no exact rerun). 2 is a usage error."""
        if self.verdict in EXIT_BY_VERDICT:
            return EXIT_BY_VERDICT[self.verdict]
        return 0 if self.ok else 1

    def add(self, name: str, status: str, detail: str, value: Any = None) -> Check:
        c = Check(name, status, detail, value)
        self.checks.append(c)
        return c

    def to_json(self) -> dict:
        return {
            "version": 1,
            "ok": self.ok,
            "verdict": self.verdict,
            "exit_code": self.exit_code,
            "backend": self.backend,
            "backend_detail": self.backend_detail,
            "device": self.device,
            "dtype": self.dtype,
            "gates": self.gates,
            "pipeline": self.pipeline,
            "shapes": self.shapes,
            "tokens": self.tokens,
            "padding": self.padding,
            "lengths": self.lengths,
            "cu_seqlens": self.cu_seqlens,
            "max_seqlen": self.max_seqlen,
            "plain_causal": self.plain_causal,
            "checks": [c.to_json() for c in self.checks],
            "leakage": _jsonable(self.leakage),
            "work": _jsonable(self.work),
            "notes": self.notes,
            "timings_s": {k: round(v, 4) for k, v in self.timings_s.items()},
            "headline": self.headline,
            "assumptions": self.assumptions,
            "versions": self.versions,
            "settings": _jsonable(self.settings),
        }

    def render_text(self) -> str:
        return render_text(self)


def check_packed_vs_alone(
    r: ProbeReport, out: Any, bounds: list[tuple[int, int]], alone: Any, tolerance: float, where: str = ""
) -> float:
    """Check (i), shared by the HF and the Megatron-Core model modes: each sample's rows of the packed
    output `out` ([T, ...]) against `alone(i)`, the sample run on its own. The tolerance is
    `tolerance` (the dtype's) times the largest |output| seen alone (at least 1). Adds the check to
    `r` and returns the scaled tolerance."""
    errs, scale = [], 1.0
    for i, (a, b) in enumerate(bounds):
        y = alone(i)
        scale = max(scale, float(y.abs().max()))
        errs.append(float((out[a:b] - y).abs().max()))
    tol = tolerance * scale
    worst = max(range(len(errs)), key=lambda i: errs[i])
    ok = errs[worst] <= tol
    r.add(
        "(i) packed == each sample alone",
        PASS if ok else FAIL,
        f"max |logits packed - alone| = {errs[worst]:.3g} over {len(errs)} samples{where} (tolerance {tol:.2g} "
        f"for {r.dtype})" + ("" if ok else f"; worst: sample {worst} [{bounds[worst][0]}, {bounds[worst][1]})"),
        {"max_error": errs[worst], "tolerance": tol, "per_sample": errs},
    )
    return tol


def _jsonable(v: Any) -> Any:
    """Floats that JSON cannot hold (nan, inf) become strings; everything else passes through."""
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    return v


def _short_list(xs: list[int], limit: int = 12) -> str:
    if len(xs) <= limit:
        return "[" + ", ".join(map(str, xs)) + "]"
    head = ", ".join(map(str, xs[: limit // 2]))
    tail = ", ".join(map(str, xs[-limit // 2 :]))
    return f"[{head}, ... {len(xs) - limit} more ..., {tail}]"


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        if x == 0.0:
            return "0"
        if not math.isfinite(x):
            return str(x)
        return f"{x:.3g}"
    return str(x)


def _raw(value: Any) -> str:
    """A gate's value as the process sees it: unset is "unset", a set value is quoted."""
    return "unset" if value is None else repr(value)


_MARK = {PASS: "PASS", FAIL: "FAIL", SKIP: "skip", INFO: "info"}


def _assumption_lines(r: ProbeReport) -> list[str]:
    """What the verdict assumes, and the stack it ran (HF probe)."""
    out = [f"  assumes:  {a}" for a in r.assumptions]
    if r.versions:
        out.append("  stack:    " + ", ".join(f"{k} {v}" for k, v in r.versions.items()))
    return out


def _matrix_lines(r: ProbeReport) -> list[str]:
    """The sample x sample leakage matrix as a text heatmap (HF probe)."""
    if r.leakage is None or not r.leakage.get("matrix"):
        return []
    from runtime_probe.leak_plot import text_heatmap

    out = [f"  matrix:   leakage, changed sample x moved sample ({r.leakage.get('matrix_dtype')}):"]
    out.extend("    " + line for line in text_heatmap(r.leakage["matrix"], r.leakage.get("bound") or 0.0))
    return out


def render_text(r: ProbeReport) -> str:
    """A human-readable verdict, most important line first."""
    out: list[str] = []
    if r.headline:
        head = r.headline
    elif r.verdict == "proven":
        head = "PROVEN: attention is block-diagonal causal, zero cross-sample leakage"
    elif r.verdict == "leak":
        lk = r.leakage or {}
        err = next((c.value for c in r.checks if c.name.startswith("(i)") and isinstance(c.value, dict)), {})
        head = (
            f"LEAK: packed samples see each other: max |packed - alone| = {_fmt(err.get('max_error'))}, "
            f"leakage {_fmt(lk.get('abs'))}"
        )
    elif r.verdict == "not-packed":
        head = "NOT PACKED: no packing configured; nothing to prove"
    else:
        failed = [c.name for c in r.checks if c.status == FAIL]
        head = "FAILED: " + ", ".join(failed) if failed else "FAILED"
    out.append(head)
    out.extend(_assumption_lines(r))
    gates = ", ".join(
        f"{k}={_raw(v.get('raw'))}" + ("" if v.get("on") is None else (" (on)" if v.get("on") else " (off)"))
        for k, v in r.gates.items()
        if isinstance(v, dict) and "raw" in v
    )
    if gates:
        out.append(f"  gates:    {gates}")
    if r.backend:
        detail = f" [{r.backend_detail}]" if r.backend_detail else ""
        out.append(f"  kernel:   {r.backend} on {r.device}, {r.dtype}{detail}")
    if r.lengths:
        out.append(
            f"  row:      {len(r.lengths)} sub-samples, {sum(r.lengths)} tokens"
            + (f" + {r.padding} sequence-parallel padding" if r.padding else "")
            + f", lengths {_short_list(r.lengths)}"
        )
    if r.shapes:
        out.append(
            "  shapes:   "
            + ", ".join(f"{k} {list(v) if isinstance(v, (list, tuple)) else v}" for k, v in r.shapes.items())
        )
    if r.cu_seqlens is not None:
        out.append(f"  cu_seqlens: {_short_list(r.cu_seqlens)} (int32), max_seqlen {r.max_seqlen}")
    elif r.plain_causal:
        out.append(
            f"  cu_seqlens: none reach the kernel (packed_seq_params = None): plain causal over {r.tokens} tokens"
        )
    if r.pipeline:
        out.append("  re-enacted:")
        out.extend(f"    - {s}" for s in r.pipeline)
    out.append("  checks:")
    for c in r.checks:
        out.append(f"    {_MARK.get(c.status, c.status):4}  {c.name}: {c.detail}")
    if r.leakage is not None:
        lk = r.leakage
        rel = lk["rel"]
        rel_s = (
            f"{rel:.3g}x"
            if isinstance(rel, float) and math.isfinite(rel) and rel >= 10
            else (f"{rel:.2%}" if isinstance(rel, float) and math.isfinite(rel) else str(rel))
        )
        out.append(
            f"  leakage:  {_fmt(lk['abs'])} absolute, {rel_s} of the mean |output| "
            f"({_fmt(lk['mean_abs_output'])}), over {len(lk.get('per_perturbed', []))} perturbed sub-samples"
        )
    out.extend(_matrix_lines(r))
    if r.work is not None:
        w = r.work
        out.append(
            f"  work:     packed sum(Li^2) = {w['packed']:,} vs unpacked-causal T^2 = {w['unpacked']:,} "
            f"({w['unpacked'] / w['packed']:.1f}x): packing saves {w['saved_fraction']:.1%} of the attention "
            f"work; with the boundaries lost, that {w['cross_fraction']:.1%} is attention across samples "
            "(the leak)"
        )
    for n in r.notes:
        out.append(f"  note:     {n}")
    if r.timings_s:
        out.append("  time:     " + ", ".join(f"{k} {v:.2f}s" for k, v in r.timings_s.items()))
    return "\n".join(out)
