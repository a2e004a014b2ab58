"""What the rules over the launched code cost (issue 10, rules side), as whole processes.

    python benchmarks/codebase_rules_bench.py [--runs 7] [--checkout DIR]

1. A Megatron-LM launch whose code is not at hand: `packlint check` with the snapshot checks (PK201/
   PK202 against rules/megatron_flags.json) against `--no-code-base` (no code reading, no snapshots).
2. In-process: loading the snapshot file and building one program's schema from it.
3. With `--checkout DIR` (a Megatron-LM checkout): the dead-variable scan of PK203 (`code_reads`
   falling back to a text search of the code base), grep and the pure-Python fallback.

Medians of `--runs` child processes, spawn to reap; the first (cold) run is reported apart. A
measurement, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = """#!/bin/bash
GPT_ARGS="--num-layers 24 --hidden-size 1024 --num-attention-heads 16 --seq-length 2048
  --max-position-embeddings 2048 --micro-batch-size 4 --global-batch-size 256 --lr 0.00015
  --train-iters 500000 --lr-decay-style cosine --bf16 --use-flash-atn"
torchrun --nproc_per_node 8 /opt/megatron/pretrain_gpt.py $GPT_ARGS --data-path /data/x_text_document
"""


def timed(cmd: list[str], env: dict, runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return times[0], statistics.median(times[1:] or times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--checkout", help="a Megatron-LM checkout for the dead-variable scan")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "gpt.sh"
        script.write_text(SCRIPT)
        env["PACKLINT_CACHE_DIR"] = str(Path(tmp) / "cache")
        base = [sys.executable, "-m", "packlint", "check", "--exit-zero", str(script)]
        cold_s, warm_s = timed(base, env, args.runs)
        cold_n, warm_n = timed(base[:4] + ["--no-code-base"] + base[4:], env, args.runs)
        print(f"check, Megatron program without code (snapshots): cold {cold_s * 1000:.0f} ms, "
              f"median {warm_s * 1000:.0f} ms")
        print(f"check, --no-code-base:                        cold {cold_n * 1000:.0f} ms, "
              f"median {warm_n * 1000:.0f} ms  (ratio {warm_s / warm_n:.2f}x)")

    sys.path.insert(0, str(ROOT))
    from packlint.codebase import snapshots

    t = time.perf_counter()
    data = snapshots.load_data()
    t_load = time.perf_counter() - t
    t = time.perf_counter()
    snap = snapshots.Snapshot("pretrain_gpt.py", data, None)
    t_build = time.perf_counter() - t
    print(f"snapshot file: {snapshots.data_path().stat().st_size / 1024:.0f} KiB, load {t_load * 1000:.1f} ms, "
          f"pretrain_gpt.py schema ({len(snap.schema.flags)} flags) {t_build * 1000:.1f} ms")

    if args.checkout:
        from packlint.conditions.functions import codebase as code_functions

        root = os.path.abspath(args.checkout)
        t = time.perf_counter()
        code_functions._quoted_anywhere([root], "SOME_UNREAD_VARIABLE")
        t_grep = time.perf_counter() - t
        t = time.perf_counter()
        code_functions._quoted_names(root)
        t_py = time.perf_counter() - t
        print(f"dead-variable scan of {root}: grep {t_grep * 1000:.0f} ms, Python fallback {t_py * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
