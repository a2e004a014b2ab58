"""packlint's runtime probe: build the packed batch as the training stack would, run one real
attention forward, and prove (or refute with a number) that attention is block-diagonal causal.

Importing this package imports neither torch nor its own submodules: names are resolved on first
use (PEP 562), so `packlint probe --help` and settings_from_variant stay cheap.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "Check": "runtime_probe.report",
    "ProbeReport": "runtime_probe.report",
    "render_text": "runtime_probe.report",
    "ProbeSettings": "runtime_probe.settings",
    "ProbeUsageError": "runtime_probe.settings",
    "settings_from_variant": "runtime_probe.settings",
    "run_probe": "runtime_probe.probe",
    "NoBackend": "runtime_probe.probe",
    "TorchMissing": "runtime_probe.probe",
    "ModelProbeResult": "runtime_probe.launches",
    "ProbeTarget": "runtime_probe.launches",
    "probe_model": "runtime_probe.launches",
    "select_targets": "runtime_probe.launches",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'runtime_probe' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
