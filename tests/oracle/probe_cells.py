"""Cell-by-cell comparison of the HF probe with the independent float64 reference
(tests/oracle/probe_reference.py): one probe run per (model, mode, attention, dtype, seed) reports
both use_cache settings (`--use-cache both`), so it gives two cells; the reference builds its own
model and rows. Used by tests/test_probe_reference.py (a fast subset) and
benchmarks/probe_reference_matrix.py (the whole matrix)."""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from oracle.probe_reference import MODELS, RefModel, reference_cells


@dataclass
class Cell:
    model: str
    mode: str
    attn: str
    use_cache: bool
    dtype: str
    seed: int
    probe: str
    reference: str
    probe_leak: float | None
    reference_leak: float

    @property
    def agrees(self) -> bool:
        return self.probe == self.reference

    @property
    def unsafe(self) -> bool:
        """The one answer the probe must never give wrongly: PROVEN where the reference leaks."""
        return self.probe == "proven" and self.reference != "proven"


def probe_settings(ref: RefModel, mode: str, attn: str, dtype: str, seed: int, workdir: Path):
    from runtime_probe.hf_settings import HFProbeSettings

    s = HFProbeSettings(stack="transformers", mode=mode, attn_implementation=attn, device="cpu", dtype=dtype, seed=seed)
    s.use_cache = "both"
    s.lengths = [7, 5, 10, 6]
    if ref.probe_config is None:
        s.model_type = ref.model_type
    else:
        d = workdir / ref.name.replace("@", "-")
        d.mkdir(exist_ok=True)
        (d / "config.json").write_text(json.dumps(ref.probe_config))
        s.model_path = str(d)
    return s


def probe_verdicts(report) -> dict[bool, tuple[str, float | None]]:
    """The probe's verdict per use_cache setting, from its report's `use_cache=...` checks."""
    out = {}
    for c in report.checks:
        if c.name.startswith("use_cache="):
            uc = c.name.startswith("use_cache=True")
            out[uc] = (str(c.value), None)
    judged = report.leakage or {}
    if judged.get("use_cache") in out:
        out[judged["use_cache"]] = (out[judged["use_cache"]][0], judged.get("abs"))
    return out


def run_cells(model: str, modes, attn: str, dtype: str, seed: int) -> list[Cell]:
    from runtime_probe.hf_probe import run_hf_probe

    ref = MODELS[model]
    truth = reference_cells(ref, attn, seed, modes=modes)
    cells = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            report = run_hf_probe(probe_settings(ref, mode, attn, dtype, seed, Path(tmp)))
            got = probe_verdicts(report)
            for uc in (False, True):
                verdict, leak = got.get(uc, ("missing", None))
                t = truth[(mode, uc)]
                cells.append(Cell(model, mode, attn, uc, dtype, seed, verdict, t["verdict"], leak, t["leak"]))
            # the headline never says PROVEN where either setting leaks in the reference
            if any(truth[(mode, uc)]["verdict"] != "proven" for uc in (False, True)):
                assert report.verdict != "proven", (model, mode, attn, dtype, seed, report.headline)
    return cells
