"""The HF probe against an independent float64 reference, cell by cell (issue 30's Done-when).

    python benchmarks/probe_reference_matrix.py                 # the whole matrix
    python benchmarks/probe_reference_matrix.py --models llama,jamba@0.002 --attn sdpa

Cells: models (dense llama/qwen2, mistral with a 4-token sliding window, MoE qwen2_moe, conv lfm2,
hybrids falcon_h1/jamba/qwen3_next at init 0.02 and 0.002, the Qwen2.5-VL wrapper) x collator modes
(position_ids, position_ids+mask, block4d, concat) x attention (eager, sdpa) x use_cache (False,
True) x dtype (bfloat16 at seed 0, float32 at seed 1), plus the hybrids at init 0.002 over seeds 2-4
(bfloat16, sdpa, position_ids). The reference (tests/oracle/probe_reference.py) shares no code with
the probe. Writes benchmarks/out/probe_reference_matrix.json and .md; exit 1 when the probe says
PROVEN where the reference leaks (or differs), or when a cell disagrees.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from oracle.probe_cells import run_cells  # noqa: E402
from oracle.probe_reference import MODELS, MODES  # noqa: E402

HYBRIDS_LOW_INIT = ("falcon_h1@0.002", "jamba@0.002", "qwen3_next@0.002")


def plan(models: list[str], attns: list[str]) -> list[tuple]:
    out = []
    for m in models:
        for attn in attns:
            for dtype, seed in (("bfloat16", 0), ("float32", 1)):
                out.append((m, MODES, attn, dtype, seed))
        if m in HYBRIDS_LOW_INIT and "sdpa" in attns:
            out.extend((m, ("position_ids",), "sdpa", "bfloat16", seed) for seed in (2, 3, 4))
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--attn", default="eager,sdpa")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "probe_reference_matrix"))
    a = ap.parse_args()
    import torch

    torch.set_num_threads(1)
    cells = []
    t0 = time.perf_counter()
    for model, modes, attn, dtype, seed in plan(a.models.split(","), a.attn.split(",")):
        got = run_cells(model, modes, attn, dtype, seed)
        cells.extend(got)
        bad = [c for c in got if not c.agrees]
        print(f"{model:18} {attn:5} {dtype:8} seed {seed}: {len(got) - len(bad)}/{len(got)} agree", flush=True)
    took = time.perf_counter() - t0
    agree = sum(c.agrees for c in cells)
    unsafe = [c for c in cells if c.unsafe]
    by = Counter((c.reference, c.probe) for c in cells)
    lines = [
        f"# HF probe vs float64 reference: {agree}/{len(cells)} cells agree, {len(unsafe)} PROVEN where the "
        f"reference does not ({took:.0f} s)",
        "",
        "| reference \\ probe | " + " | ".join(["proven", "leak", "differs", "undecided"]) + " |",
        "|---|---:|---:|---:|---:|",
    ]
    for ref in ("proven", "leak", "differs"):
        lines.append(
            f"| {ref} | " + " | ".join(str(by[(ref, p)]) for p in ("proven", "leak", "differs", "undecided")) + " |"
        )
    lines += [
        "",
        "| model | mode | attn | use_cache | dtype | seed | probe | reference | probe leak | reference leak |",
    ]
    lines.append("|---|---|---|---|---|---:|---|---|---:|---:|")
    for c in cells:
        pl = "" if c.probe_leak is None else f"{c.probe_leak:.3g}"
        mark = "" if c.agrees else " **(disagrees)**"
        lines.append(
            f"| {c.model} | {c.mode} | {c.attn} | {c.use_cache} | {c.dtype} | {c.seed} | {c.probe}{mark} | "
            f"{c.reference} | {pl} | {c.reference_leak:.3g} |"
        )
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    out.with_suffix(".json").write_text(json.dumps([c.__dict__ for c in cells], indent=1))
    print(lines[0])
    print("\n".join(lines[2:7]))
    return 1 if unsafe or agree != len(cells) else 0


if __name__ == "__main__":
    sys.exit(main())
