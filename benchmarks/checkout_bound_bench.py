"""A checkout without a VCS marker: per-file time and findings, against the same tree as a clone.

    python benchmarks/checkout_bound_bench.py                 # Megatron-LM main from /work/.mirror
    python benchmarks/checkout_bound_bench.py --glob 'examples/**/*.sh' --unrelated-files 40000

Issue 18 (part 5): an extracted release or a container's /workspace has no `.git`; the code search must
stop at the project root (pyproject.toml, setup.py, ...) instead of climbing into the parent directories.
The same tree is laid out three ways under one temp directory:

- `clone/Megatron-LM`: with a `.git` marker (what a clone looks like to packlint);
- `plain/Megatron-LM`: no marker, directly under the temp directory's own folder;
- `unrelated/.../Megatron-LM`: no marker, deep inside a large unrelated tree of Python files (the
  files a climb past the project root would search).

Each script is checked by a whole `packlint check --format json` process (what a user feels), with a
cache warmed by one pass over the same tree first (`--cold` skips the warm-up). Reported: the slowest
file and the median per layout, and whether every file's findings (paths made relative to the checkout)
are identical to the clone's. A measurement, not a test: a miss prints MISS and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MIRROR = Path("/work/.mirror/NVIDIA+Megatron-LM/repo")
ROOT = Path(__file__).resolve().parent.parent
PER_FILE_TARGET_S = 1.0


def extract(rev: str, dest: Path) -> None:
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(MIRROR), "archive", rev], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout, check=True)


def unrelated_tree(base: Path, files: int) -> Path:
    """A large tree of Python files with no project marker, and the folder deep inside it where the
    checkout goes."""
    per_dir = 200
    for i in range(0, files, per_dir):
        d = base / f"pkg{i // per_dir:04d}"
        d.mkdir(parents=True)
        for j in range(min(per_dir, files - i)):
            (d / f"m{j}.py").write_text(f"import os\nX = os.environ.get('UNRELATED_{i + j}')\nNAME = 'v{j}'\n")
    deep = base / "team" / "projects" / "llm"
    deep.mkdir(parents=True)
    return deep


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def check(packlint: list[str], script: Path, cwd: Path, env: dict[str, str]) -> tuple[float, float, list[dict]]:
    """(wall seconds, CPU seconds, findings) of one `packlint check` process."""
    cpu = _children_cpu()
    t = time.perf_counter()
    proc = subprocess.run(
        [*packlint, "check", "--format", "json", "--exit-zero", "--severity", "info", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - t
    cpu = _children_cpu() - cpu
    try:
        findings = json.loads(proc.stdout)["findings"]
    except (ValueError, KeyError):
        findings = [{"crash": proc.stderr[-400:]}]
    return took, cpu, findings


def normalised(findings: list[dict], checkout: Path) -> list[tuple]:
    """Findings with every path and message made relative to the checkout (the layouts differ only there)."""
    root = str(checkout)

    def clean(text: str) -> str:
        return text.replace(root + "/", "").replace(root, ".")

    out = []
    for f in findings:
        related = tuple(
            (clean(r.get("path", "")), r.get("line"), clean(r.get("message", ""))) for r in f.get("related", [])
        )
        out.append((f.get("code"), clean(f.get("path", "")), f.get("line"), clean(f.get("message", "")), related))
    return sorted(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rev", default="HEAD", help="revision of the Megatron-LM mirror (default HEAD)")
    ap.add_argument("--glob", default="examples/**/*.sh", help="scripts to check, relative to the checkout")
    ap.add_argument("--limit", type=int, default=60, help="at most this many scripts (sorted; default 60)")
    ap.add_argument("--unrelated-files", type=int, default=20000, help="Python files in the unrelated tree")
    ap.add_argument("--cold", action="store_true", help="no warm-up pass (the first file reads the code)")
    ap.add_argument("--packlint-path", default=str(ROOT), help="the packlint source tree to measure")
    args = ap.parse_args(argv)
    if not MIRROR.exists():
        print(f"no mirror at {MIRROR}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="packlint-checkout-bench-"))
    try:
        layouts = {
            "clone": tmp / "clone" / "Megatron-LM",
            "plain": tmp / "plain" / "Megatron-LM",
            "unrelated": unrelated_tree(tmp / "unrelated", args.unrelated_files) / "Megatron-LM",
        }
        for dest in layouts.values():
            extract(args.rev, dest)
        (layouts["clone"] / ".git").mkdir()
        scripts = sorted(p.relative_to(layouts["clone"]) for p in layouts["clone"].glob(args.glob))[: args.limit]
        packlint = [sys.executable, "-m", "packlint"]
        results: dict[str, dict[str, tuple[float, float, list]]] = {}
        for name, dest in layouts.items():
            # as after `pip install`: Python may write .pyc files (PYTHONDONTWRITEBYTECODE=1 would make
            # every process compile packlint from source, as benchmarks/run.py notes)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env.update(PYTHONPATH=args.packlint_path, PACKLINT_CACHE_DIR=str(tmp / f"cache-{name}"))
            if not args.cold:
                for s in scripts:
                    check(packlint, dest / s, dest, env)
            results[name] = {}
            for s in scripts:
                took, cpu, findings = check(packlint, dest / s, dest, env)
                results[name][str(s)] = (took, cpu, normalised(findings, dest))
        print(
            f"{len(scripts)} scripts of Megatron-LM {args.rev} ({args.glob}), packlint from {args.packlint_path}, "
            f"{'cold' if args.cold else 'warm'} cache, unrelated tree of {args.unrelated_files} .py files"
        )
        print("  (wall: spawn to exit, inflated on a loaded machine; CPU: the child's user + system time)")
        for name in layouts:
            times = [t for t, _, _ in results[name].values()]
            cpus = [c for _, c, _ in results[name].values()]
            slowest = max(results[name].items(), key=lambda kv: kv[1][1])
            differ = [s for s in results[name] if results[name][s][2] != results["clone"][s][2]]
            verdict = "ok" if max(cpus) <= PER_FILE_TARGET_S else "MISS"
            listed = ": " + ", ".join(differ[:5]) if differ else ""
            print(
                f"  {name:9s} wall median {statistics.median(times):.2f} s, max {max(times):.2f} s; "
                f"CPU median {statistics.median(cpus):.2f} s, max {slowest[1][1]:.2f} s ({slowest[0]}) "
                f"[{verdict} <= {PER_FILE_TARGET_S:g} s]; "
                f"findings differ from the clone in {len(differ)} files{listed}"
            )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
