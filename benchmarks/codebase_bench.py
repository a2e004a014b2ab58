"""Cost of reading the launched code: `packlint check` of one script inside a Megatron-LM checkout.

    python benchmarks/codebase_bench.py                       # extracts Megatron-LM main from /work/.mirror
    python benchmarks/codebase_bench.py --checkout DIR --script examples/gpt3/train_gpt3_175b_distributed.sh

Three numbers, each a whole `packlint check SCRIPT` process timed from spawn to exit (what a user feels):

- baseline: `--no-code-base`, the cold start without any code-base reading;
- cold read: code read from source, with an empty cache directory (PACKLINT_CACHE_DIR);
- warm: the cache filled by the cold run (the per-program manifest: only `stat` calls).

The target (issue 10): warm <= 1.2x baseline. Until the rule table has rules that ask for the code
(PK2xx), `check` reads no code, so the benchmark sets PACKLINT_EAGER_CODE=1, which makes `check` read
every launch's code exactly as a rule asking for it would; it says so in the report. A measurement,
not a test: a miss prints MISS and exits 0.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIRROR = Path("/work/.mirror/NVIDIA+Megatron-LM/repo")
DEFAULT_SCRIPT = "examples/gpt3/train_gpt3_175b_distributed.sh"


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, int, str]:
    t = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    return time.perf_counter() - t, proc.returncode, proc.stderr


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkout", help="a Megatron-LM checkout (default: main extracted from the mirror)")
    ap.add_argument("--rev", default="main", help="revision to extract from the mirror (default main)")
    ap.add_argument("--script", default=DEFAULT_SCRIPT, help="the script, relative to the checkout")
    ap.add_argument("--runs", type=int, default=15, help="runs of the baseline and warm cases (median)")
    ap.add_argument("--cold-runs", type=int, default=3, help="runs of the cold case (each with an empty cache)")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="packlint-codebase-bench-"))
    try:
        checkout = Path(args.checkout) if args.checkout else None
        if checkout is None:
            if not MIRROR.exists():
                print(f"no --checkout and no mirror at {MIRROR}", file=sys.stderr)
                return 2
            checkout = tmp / "Megatron-LM"
            checkout.mkdir()
            archive = subprocess.run(["git", "--git-dir", str(MIRROR), "archive", args.rev], capture_output=True,
                                     check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(checkout)], input=archive, check=True)
            (checkout / ".git").mkdir()  # a checkout: the script's repository root
        script = checkout / args.script
        exe = [sys.executable, "-m", "packlint", "check", str(script), "--exit-zero", "--isolated"]
        env = dict(os.environ, PACKLINT_EAGER_CODE="1", PACKLINT_JOBS="1")

        def cache_env(name: str) -> dict[str, str]:
            return dict(env, PACKLINT_CACHE_DIR=str(tmp / name))

        # warm up the OS file cache and the interpreter's .pyc files
        timed(exe + ["--no-code-base"], cache_env("warmup"))
        timed(exe, cache_env("warmup"))

        base, warm, cold = [], [], []
        for i in range(args.cold_runs):
            t, rc, err = timed(exe, cache_env(f"cold{i}"))
            if rc not in (0, 1):
                print(f"packlint check failed ({rc}): {err.strip()[-500:]}", file=sys.stderr)
                return 2
            cold.append(t)
        for _ in range(args.runs):  # interleaved, so load on the machine hits both alike
            base.append(timed(exe + ["--no-code-base"], cache_env("cold0"))[0])
            warm.append(timed(exe, cache_env("cold0"))[0])
        cached = any((tmp / "cold0").rglob("*.json"))
        mb, mw, mc = statistics.median(base), statistics.median(warm), statistics.median(cold)
        print(f"script: {script.relative_to(checkout)} in {checkout}")
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")
        print("code read by: PACKLINT_EAGER_CODE=1 (every launch's program, as a rule asking would)"
              + ("" if cached else " -- WARNING: nothing was cached, no code was read"))
        print(f"baseline (--no-code-base), median of {args.runs}: {mb * 1000:8.1f} ms")
        print(f"cold read (empty cache), median of {args.cold_runs}:  {mc * 1000:8.1f} ms")
        print(f"warm (cache filled), median of {args.runs}:      {mw * 1000:8.1f} ms")
        ratio = mw / mb
        print(f"warm / baseline = {ratio:.2f}x (target <= 1.20x): {'ok' if ratio <= 1.2 else 'MISS'}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
