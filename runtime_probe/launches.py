"""Pick what to probe in a whole launch model: the launches that look like training, and of each,
the variants whose probe settings differ. Works on the launch model's values only (the JSON of
the launch model JSON in docs/launch-model.md), never on the shell parser."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from packlint.model_view import as_model, variants
from packlint.model_view import launches as model_launches
from runtime_probe.hf_settings import HFProbeSettings, NotProbed, Unknown, hf_settings_from_part
from runtime_probe.report import ProbeReport
from runtime_probe.settings import (
    GATE_BMR,
    GATE_PACKED_DATA,
    PACKING_FLAGS,
    ProbeSettings,
    ProbeUsageError,
    settings_from_variant,
)

if TYPE_CHECKING:
    from packlint.model_types import LaunchJSON, VariantJSON

MAX_PROBES = 8
_TRAINING_FLAGS = ("--micro-batch-size",) + PACKING_FLAGS


def _parts(launch: LaunchJSON) -> list[VariantJSON]:
    """The launch (its merged view) and each of its variants."""
    return [cast("VariantJSON", launch)] + list(launch.get("variants") or [])


def has_training_flags(launch: LaunchJSON) -> bool:
    """Passes --micro-batch-size or an online packing flag: a Megatron training entry point."""
    return any(set(part.get("flags") or {}) & set(_TRAINING_FLAGS) for part in _parts(launch))


def has_gate_env(launch: LaunchJSON) -> bool:
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
    settings: ProbeSettings | HFProbeSettings | Unknown

    def label(self) -> str:
        s = f"launch {self.launch} ({self.where})"
        if self.variants > 1:
            s += f", variant {self.variant + 1} of {self.variants}"
            if self.when:
                s += " when " + "; ".join(self.when)
        return s


# overrides that belong to the HF-stack probe only, and those both kinds of probe take
HF_ONLY = ("stack", "mode", "attn_implementation", "model_path", "model_type", "use_cache")
_HF_SHARED = ("device", "dtype", "seed", "lengths")


def _where(ln: LaunchJSON) -> str:
    launcher, program = ln.get("launcher") or "?", ln.get("program") or ""
    launched = launcher if program == launcher else f"{launcher} {program}"
    return f"{ln.get('file', '?')}:{ln.get('line', '?')}, {launched}".rstrip()


def select_hf_targets(doc: Mapping[str, Any], **overrides: Any) -> tuple[list[ProbeTarget], list[str], set[int]]:
    """The HF-stack launches (TRL, LLaMA-Factory, axolotl, ms-swift, OpenRLHF, verl): (targets, notes,
    ids of the launches that are HF-stack launches, probed or not). A launch whose packing mode or
    attention implementation is unknown is not probed: a note says what could not be decided."""
    hf_over = {k: v for k, v in overrides.items() if k in HF_ONLY + _HF_SHARED and v is not None}
    targets: list[ProbeTarget] = []
    notes: list[str] = []
    ids: set[int] = set()
    seen: dict[tuple, str] = {}
    for ln in model_launches(as_model(doc)):
        parts = variants(ln)
        for i, var in enumerate(parts):
            part = dict(ln, **var) if var is not ln else ln
            s = hf_settings_from_part(ln, part, **dict(hf_over))
            if s is None:
                continue
            ids.add(ln.get("id", 0))
            t = ProbeTarget(ln.get("id", 0), i, len(parts), _where(ln), list(var.get("when") or []), s)
            if isinstance(s, NotProbed):
                notes.append(f"{t.label()}: not probed: {s.why}")
                continue
            if isinstance(s, Unknown):
                notes.append(f"{t.label()}: not probed: could not decide {s.why}")
                continue
            key = s.key()
            if key in seen:
                notes.append(f"{t.label()}: same probe settings as {seen[key]}; not probed twice")
                continue
            seen[key] = t.label()
            targets.append(t)
    return targets, notes, ids


def select_targets(doc: Mapping[str, Any], **overrides: Any) -> tuple[list[ProbeTarget], list[str]]:
    """(what to probe, notes on what was left out). Raises ProbeUsageError if nothing looks like training."""
    model = as_model(doc)
    hf_targets, hf_notes, hf_ids = select_hf_targets(model, **overrides)
    overrides = {k: v for k, v in overrides.items() if k not in HF_ONLY}
    launches = [ln for ln in model_launches(model) if ln.get("id", 0) not in hf_ids]
    if hf_ids and not any(has_training_flags(ln) or has_gate_env(ln) for ln in launches):
        return hf_targets[:MAX_PROBES], hf_notes
    notes: list[str] = list(hf_notes)
    # launches with training flags; only if none has any, those that merely see a gate (a helper
    # command run after `export OFFLINE_PACKED_DATA=1` inherits it but trains nothing)
    training = [ln for ln in launches if has_training_flags(ln)] or [ln for ln in launches if has_gate_env(ln)]
    if not training:
        raise ProbeUsageError(
            f"{model.get('script', 'script')}: no launch looks like training "
            f"({len(launches)} launch(es); none sets {GATE_BMR}/{GATE_PACKED_DATA} or passes "
            "--micro-batch-size, and none passes an HF stack's packing switch: --packing, --padding_free, "
            "--neat_packing, --sample_packing, --packing_samples, use_remove_padding); give the settings "
            "with --bmr/--packed-data/--mbs or --stack/--hf-mode instead"
        )
    skipped = [ln.get("id") for ln in launches if ln not in training]
    if skipped:
        notes.append(f"not probed (no --micro-batch-size or packing flag; not a training launch): launch(es) {skipped}")
    targets: list[ProbeTarget] = list(hf_targets)
    seen: dict[tuple, str] = {}
    for ln in training:
        parts = variants(ln)
        where = _where(ln)
        for i, var in enumerate(parts):
            s = settings_from_variant(var, **overrides)
            key = s.key()
            t = ProbeTarget(ln.get("id", 0), i, len(parts), where, list(var.get("when") or []), s)
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
        from runtime_probe.report import worst_exit

        return worst_exit([r.exit_code for _, r in self.probes])

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


def probe_model(model: Mapping[str, Any], **overrides: Any) -> ModelProbeResult:
    """Probe every distinct training configuration of a launch model (what `packlint run --probe`
    calls after the static check). Raises ProbeUsageError for nothing-to-probe, no torch, no kernel."""
    targets, notes = select_targets(model, **overrides)
    result = ModelProbeResult(model.get("script"), notes=notes)
    for t in targets:
        result.probes.append((t, run_settings(t.settings)))
    return result


def run_settings(settings: Any) -> ProbeReport:
    """One probe of either kind: the Megatron/LLaVA pipeline (ProbeSettings) or an HF stack."""
    if isinstance(settings, HFProbeSettings):
        from runtime_probe.hf_probe import run_hf_probe

        return run_hf_probe(settings)
    from runtime_probe.gpt_settings import GPTProbeSettings

    if isinstance(settings, GPTProbeSettings):
        import time

        t = time.perf_counter()
        try:
            import torch  # noqa: F401 - timed here, so the report separates import cost from the forward
        except ImportError:
            from runtime_probe.probe import TorchMissing

            raise TorchMissing(
                "the probe needs torch: pip install 'packlint[probe] @ git+https://github.com/packlint/packlint'"
            ) from None
        took = time.perf_counter() - t
        from runtime_probe.megatron_model import run_gpt_probe

        report = run_gpt_probe(settings)
        report.timings_s = {"import torch": took, **report.timings_s}
        return report
    from runtime_probe.probe import run_probe

    return run_probe(settings)
