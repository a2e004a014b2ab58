"""Measure `packlint check --fix` on the generated corpus (benchmarks/corpus.py): how long the fix loop
takes next to a plain check, how many fixes it applies, and whether every fixed script still passes
`bash -n` and is left alone by a second `--fix`.

    python benchmarks/fix_bench.py              # 300 scripts (the corpus of benchmarks/run.py)
    python benchmarks/fix_bench.py --size 60    # smaller

CPU seconds (the process and its children, `bash -n` included) are printed beside wall seconds: the
machine may be shared, and CPU time says what packlint itself costs.

Why whole processes: what a user feels is `packlint check --fix .` from a shell. The corpus is copied
first (fixing writes files); shared config files it sources are never edited (checked here too).
A measurement, not a test: it prints what it saw and exits 0 unless a fixed script breaks.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402


def timed(argv: list[str], cwd: Path) -> tuple[float, float, subprocess.CompletedProcess]:
    """(wall seconds, CPU seconds of the process and its children, e.g. `bash -n`), the result."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PACKLINT_JOBS": os.environ.get("PACKLINT_JOBS", "1")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "packlint", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=corpus.DEFAULT_SIZE)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="packlint-fix-bench-") as tmp:
        work = Path(tmp)
        corpus.generate(work / "c", corpus.Params(size=args.size))
        scripts = work / "c" / "scripts"
        before = {p: p.read_bytes() for p in scripts.rglob("*") if p.is_file()}
        rows = {}
        for name, argv in (("check", ["check", "--isolated", "-q", "scripts"]),
                           ("check json", ["check", "--isolated", "--output-format", "json", "scripts"]),
                           ("diff (safe)", ["check", "--isolated", "--diff", "scripts"]),
                           ("diff --unsafe-fixes", ["check", "--isolated", "--diff", "--unsafe-fixes", "scripts"]),
                           ("fix --unsafe-fixes", ["check", "--isolated", "-q", "--fix", "--unsafe-fixes", "scripts"]),
                           ("fix again", ["check", "--isolated", "-q", "--fix", "--unsafe-fixes", "scripts"])):
            seconds, cpu, proc = timed(argv, work / "c")
            note = [ln for ln in proc.stderr.splitlines() if "fix" in ln][-1:] or [""]
            rows[name] = {"seconds": round(seconds, 2), "cpu": round(cpu, 2), "exit": proc.returncode,
                          "note": note[0]}
            if name == "check json":
                findings = json.loads(proc.stdout)["findings"]
                rows[name]["findings"] = len(findings)
                rows[name]["with a fix"] = sum(1 for f in findings if f["fix"])
        changed = [p for p, data in before.items() if p.read_bytes() != data]
        configs_changed = [p for p in changed if "configs" in p.parts]
        broken = [p for p in changed if subprocess.run(["bash", "-n", str(p)], capture_output=True,
                                                       check=False).returncode != 0]
        for name, row in rows.items():
            print(f"{name:22} {row['seconds']:7.2f} s wall {row['cpu']:7.2f} s CPU  exit {row['exit']}  {row['note']}"
                  + (f"  ({row['findings']} findings, {row['with a fix']} with a fix)" if "findings" in row else ""))
        print(f"files changed: {len(changed)} of {len(before)}; sourced config files changed: "
              f"{len(configs_changed)}; changed files bash -n rejects: {len(broken)}")
        for p in broken:
            print(f"  BROKEN: {p.relative_to(work)}")
        return 1 if broken or configs_changed or "applied 0 fixes" not in rows["fix again"]["note"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
