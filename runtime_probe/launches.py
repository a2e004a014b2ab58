"""Pick what to probe in a whole launch model: the launches that look like training, and of each,
the variants whose probe settings differ. Works on the launch model's values only (the JSON of
the launch model JSON in docs/launch-model.md), never on the shell parser."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from runtime_probe.report import ProbeReport
from runtime_probe.settings import (
    GATE_BMR,
    GATE_PACKED_DATA,
    PACKING_FLAGS,
    ProbeSettings,
    ProbeUsageError,
    settings_from_variant,
)

MAX_PROBES = 8
_TRAINING_FLAGS = ("--micro-batch-size",) + PACKING_FLAGS


def _parts(launch: dict) -> list[dict]:
    return [launch] + list(launch.get("variants") or [])


def has_training_flags(launch: dict) -> bool:
    """Passes --micro-batch-size or an online packing flag: a Megatron training entry point."""
    return any(set(part.get("flags") or {}) & set(_TRAINING_FLAGS) for part in _parts(launch))


def has_gate_env(launch: dict) -> bool:
    """Sees a packing gate. Weaker evidence: every later command inherits an exported gate."""
    return any(
        (set(part.get("env") or {}) | set(part.get("unexported") or {})) & {GATE_BMR, GATE_PACKED_DATA}
        for part in _parts(launch)
    )


@dataclass
class ProbeTarget:
    launch: int
    variant: int
    variants: int
    where: str
    when: list[str]
    settings: ProbeSettings

    def label(self) -> str:
        s = f"launch {self.launch} ({self.where})"
        if self.variants > 1:
            s += f", variant {self.variant + 1} of {self.variants}"
            if self.when:
                s += " when " + "; ".join(self.when)
        return s


def select_targets(model: dict, **overrides: Any) -> tuple[list[ProbeTarget], list[str]]:
    """(what to probe, notes on what was left out). Raises ProbeUsageError if nothing looks like training."""
    launches = model.get("launches") or []
    notes: list[str] = []
    # launches with training flags; only if none has any, those that merely see a gate (a helper
    # command run after `export OFFLINE_PACKED_DATA=1` inherits it but trains nothing)
    training = [ln for ln in launches if has_training_flags(ln)] or [ln for ln in launches if has_gate_env(ln)]
    if not training:
        raise ProbeUsageError(
            f"{model.get('script', 'script')}: no launch looks like training "
            f"({len(launches)} launch(es); none sets {GATE_BMR}/{GATE_PACKED_DATA} or passes "
            "--micro-batch-size); give the settings with --bmr/--packed-data/--mbs instead"
        )
    skipped = [ln.get("id") for ln in launches if ln not in training]
    if skipped:
        notes.append(f"not probed (no --micro-batch-size or packing flag; not a training launch): launch(es) {skipped}")
    targets: list[ProbeTarget] = []
    seen: dict[tuple, str] = {}
    for ln in training:
        variants = list(ln.get("variants") or []) or [ln]
        launched = f"{ln.get('launcher') or '?'} {ln.get('program') or ''}"
        where = f"{ln.get('file', '?')}:{ln.get('line', '?')}, {launched}".rstrip()
        for i, var in enumerate(variants):
            s = settings_from_variant(var, **overrides)
            key = s.key()
            t = ProbeTarget(ln.get("id", 0), i, len(variants), where, list(var.get("when") or []), s)
            if key in seen:
                notes.append(f"{t.label()}: same probe settings as {seen[key]}; not probed twice")
                continue
            seen[key] = t.label()
            targets.append(t)
    if len(targets) > MAX_PROBES:
        notes.append(f"{len(targets)} distinct configurations; probed the first {MAX_PROBES}")
        targets = targets[:MAX_PROBES]
    return targets, notes


@dataclass
class ModelProbeResult:
    """The probes of one script: one report per distinct configuration."""

    script: str | None
    probes: list[tuple[ProbeTarget, ProbeReport]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.ok for _, r in self.probes)

    @property
    def exit_code(self) -> int:
        return max((r.exit_code for _, r in self.probes), default=0)

    def to_json(self) -> dict:
        return {
            "version": 1,
            "script": self.script,
            "ok": self.ok,
            "exit_code": self.exit_code,
            "notes": self.notes,
            "probes": [
                {
                    "launch": t.launch,
                    "variant": t.variant,
                    "variants": t.variants,
                    "where": t.where,
                    "when": t.when,
                    "report": r.to_json(),
                }
                for t, r in self.probes
            ],
        }

    def render_text(self) -> str:
        parts = []
        for t, r in self.probes:
            parts.append(f"== {t.label()}\n{r.render_text()}")
        parts.extend(f"note: {n}" for n in self.notes)
        return "\n\n".join(parts)


def probe_model(model: dict, **overrides: Any) -> ModelProbeResult:
    """Probe every distinct training configuration of a launch model (what `packlint run --probe`
    calls after the static check). Raises ProbeUsageError for nothing-to-probe, no torch, no kernel."""
    from runtime_probe.probe import run_probe

    targets, notes = select_targets(model, **overrides)
    result = ModelProbeResult(model.get("script"), notes=notes)
    for t in targets:
        result.probes.append((t, run_probe(t.settings)))
    return result
