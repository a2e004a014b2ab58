"""packlint's runtime probe: build the packed batch as the training stack would, run one real
attention forward, and prove (or refute with a number) that attention is block-diagonal causal.

Importing this package does not import torch; `run_probe` does, when called.
"""

from runtime_probe.launches import ModelProbeResult, ProbeTarget, probe_model, select_targets
from runtime_probe.probe import NoBackend, TorchMissing, run_probe
from runtime_probe.report import Check, ProbeReport, render_text
from runtime_probe.settings import ProbeSettings, ProbeUsageError, settings_from_variant

__all__ = [
    "Check", "ModelProbeResult", "NoBackend", "ProbeReport", "ProbeSettings", "ProbeTarget", "ProbeUsageError",
    "TorchMissing", "probe_model", "render_text", "run_probe", "select_targets", "settings_from_variant",
]
