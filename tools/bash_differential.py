"""Bash differential on public checkouts (issue 26): every value packlint claims as known agrees with bash.

For each shell script of a checkout (`*.sh`, `*.bash`, `*.slurm`, `*.sbatch`):

1. packlint's model: `packlint.api.inspect_script(script)` from the checkout's root, no arguments and no
   caller environment (the script as shipped), the same JSON `packlint inspect --format json` prints.
2. bash's run: `bash SCRIPT` in a bubblewrap sandbox: the whole file system read-only, the checkout
   read-only, a private tmpfs `/tmp` with a fake `HOME=/tmp/home`, `--unshare-all` (no network, own pid,
   ipc, uts, user namespaces), `--die-with-parent`, a clean environment (`PATH`, `HOME`, `BASH_ENV` and
   the recorder's variables; plus what Slurm sets from an `#SBATCH` header, which packlint models too),
   an address-space limit (RLIMIT_AS 4 GiB) and a 5 s wall-clock limit. The launchers are replaced by
   the in-suite oracle's recorder (tests/oracle/recorder.py, extended here by EXTRA_RECORDED): it logs
   argv, environment, file and line (a DEBUG trap from tests/oracle/bash_setup.sh) and exits 0; the
   submitters (sbatch, ssh, pdsh, ray, gantry) run what they would hand on. Commands that would fail
   or hang in the sandbox are harmless stubs that exit 0 (STUBS below).
3. The comparison is the in-suite oracle's (tests/oracle/harness.py `compare`): every launch bash made
   is located in packlint's model by file and line; a variant of it must agree at every word and
   every environment value packlint claims as known (an unknown word stands for any number of words).
   Every problem is put in a category (CATEGORIES) and each compared value counted.

    python tools/bash_differential.py CHECKOUT [CHECKOUT ...] [--out DIR] [--limit N] [--timeout S]

Writes DIR/summary.json (totals and per-checkout counts), DIR/disagreements.jsonl (one line per
problem: checkout, script, category, text) and DIR/scripts.jsonl (one line per script). Scripts run
one at a time (the CPU load stays at one core). Nothing runs outside the sandbox. Needs `bwrap`
(Debian: bubblewrap). Outside the 5-minute test suite; its results are recorded in docs/accuracy.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TREE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TREE / "tests"))
# the packlint under test: this tree, or another one (PACKLINT_TREE=/path/to/a/checkout of packlint)
sys.path.insert(0, os.environ.get("PACKLINT_TREE") or str(TREE))

from oracle import harness as H  # noqa: E402

# Launchers the oracle does not record but public scripts call: recorded too (a launch packlint does
# not model is then counted as `unmodelled-launch`, never as a value disagreement).
EXTRA_RECORDED = ("trl", "xtuner", "axolotl", "horovodrun", "litgpt", "ray-job")
# Commands that would hang, wait on the network or the machine in the sandbox: exit 0, print nothing
# (nvidia-smi and scontrol print the oracle's plausible lines: H.STUBS).
STUBS = (
    "sleep",
    "wget",
    "curl",
    "pip",
    "pip3",
    "huggingface-cli",
    "squeue",
    "sinfo",
    "docker",
    "apt-get",
    "sudo",
    "nc",
    "aws",
    "gsutil",
    "azcopy",
    "hdfs",
)
PATTERNS = ("*.sh", "*.bash", "*.slurm", "*.sbatch")
MAX_SCRIPT_BYTES = 1 << 20

# problem text (tests/oracle/harness.py) -> category
CATEGORIES = (
    ("packlint has no launch there", "unmodelled-launch"),
    ("packlint says it always runs, bash never ran it", "not-run"),
    ("argv[0]", "argv-launcher"),
    ("bash has extra words", "argv-extra-words"),
    ("argv[", "argv-word"),
    ("packlint says unset", "env-unset"),
    ("bash did not export it", "env-not-exported"),
    ("packlint's env lacks it", "env-missing"),
    ("set but not exported", "env-export"),
    ("not concrete", "env-not-concrete"),
    ("env ", "env-value"),
)
# categories that are a value packlint claims as known and bash contradicts
VALUE_CATEGORIES = {
    "argv-launcher",
    "argv-extra-words",
    "argv-word",
    "env-unset",
    "env-not-exported",
    "env-value",
    "env-export",
}


def category(text: str) -> str:
    for needle, cat in CATEGORIES:
        if needle in text:
            return cat
    return "other"


def scripts_of(checkout: Path) -> list[str]:
    out: set[str] = set()
    for pat in PATTERNS:
        for p in checkout.rglob(pat):
            if ".git" in p.parts or not p.is_file() or p.is_symlink():
                continue
            if p.stat().st_size <= MAX_SCRIPT_BYTES:
                out.add(str(p.relative_to(checkout)))
    return sorted(out)


def install(bindir: Path) -> None:
    H.install_recorders(bindir)
    body = (H.ORACLE_DIR / "recorder.py").read_text()
    for name in EXTRA_RECORDED:
        p = bindir / name
        p.write_text(f"#!{sys.executable}\n{body}")
        p.chmod(0o755)
    for name in STUBS:
        p = bindir / name
        p.write_text("#!/bin/sh\nexit 0\n")
        p.chmod(0o755)


def job_env(text: str) -> dict[str, str]:
    """What Slurm sets in a job from the script's `#SBATCH` header (packlint models the script as the
    job sbatch runs: packlint.launchers.sbatch_header_env), so bash gets the same environment."""
    from packlint.launchers import sbatch_header_env

    return sbatch_header_env(text) if "#SBATCH" in text else {}


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    os.setsid()


def bash_run(checkout: Path, script: str, bindir: Path, work: Path, timeout: float) -> H.BashRun:
    """Run `bash SCRIPT` from the checkout's root in the sandbox; the oracle's records of it."""
    record = work / "records.jsonl"
    record.unlink(missing_ok=True)
    text = (checkout / script).read_text(encoding="utf-8", errors="replace")
    env = {
        "PATH": f"{bindir}:/usr/bin:/bin",
        "HOME": "/tmp/home",
        "BASH_ENV": str(H.ORACLE_DIR / "bash_setup.sh"),
        "__PL_RECORD": str(record),
        **job_env(text),
    }
    cmd = [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--dir",
        "/tmp/home",
        "--bind",
        str(work),
        str(work),
        "--ro-bind",
        str(bindir),
        str(bindir),
        "--ro-bind",
        str(checkout),
        str(checkout),
        "--unshare-all",
        "--die-with-parent",
        "--chdir",
        str(checkout),
        "--clearenv",
    ]
    for k, v in env.items():
        cmd += ["--setenv", k, v]
    cmd += ["/bin/bash", script]
    rc = 0
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout, preexec_fn=_limits)
        rc, err = proc.returncode, proc.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, err = 124, (e.stderr or b"").decode("utf-8", "replace")
    records = []
    if record.exists():
        for raw in record.read_bytes().splitlines():
            try:
                records.append(json.loads(raw.decode("utf-8", "surrogateescape")))
            except ValueError:
                continue  # (a record cut off by the time limit)
    return H.BashRun(checkout, checkout / script, rc, "", err[-2000:], records, env)


class _Slow(Exception):
    pass


def packlint_model(checkout: Path, script: str) -> dict | str:
    """packlint's launch model of SCRIPT, run from the checkout's root; a string says why there is none."""
    from packlint.api import inspect_script

    def alarm(*_: object) -> None:
        raise _Slow()

    os.chdir(checkout)
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(60)
    try:
        return inspect_script(script)
    except _Slow:
        return "packlint took over 60 s"
    except Exception as e:  # noqa: BLE001 - a packlint failure is a result of the differential
        return f"packlint failed: {type(e).__name__}: {e}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def known_values(variant: dict) -> int:
    """How many values a variant claims as known: each known word (argv[0] by its name) and each
    environment entry with a concrete value (a cluster variable, set by Slurm per task, is not one)."""
    words = sum(1 for w in H.strip_wrappers(variant.get("command") or []) if isinstance(w, str))
    env = sum(
        1
        for name, e in (variant.get("env") or {}).items()
        if isinstance(e, dict) and "value" in e and e.get("source") != "cluster" and not H.is_noise(name)
    )
    return words + env


def _located(model: dict, rec: dict, root: Path) -> list[dict]:
    """packlint's launches at the record's place that run the same launcher (a line may hold two
    commands: `python -c "import x" && torchrun train.py`; the first is no launch packlint models)."""
    launches = model.get("launches") or []
    here = [launch for launch in launches if H._contains(launch, rec.get("file") or "", rec.get("line") or 0, root)]
    return [launch for launch in here if rec["name"] in H._launch_names(launch)]


def _category(text: str, model: dict, run: H.BashRun) -> str:
    """A problem's category; a record whose line holds only launches of other launchers is a launch
    packlint does not model (`unmodelled-launch`), whatever the comparator made of it."""
    cat = category(text)
    if text.startswith("bash record ") and cat in VALUE_CATEGORIES:
        n = int(text.split()[2])
        if n < len(run.records) and not _located(model, run.records[n], run.root):
            return "unmodelled-launch"
    return cat


def count_values(model: dict, run: H.BashRun) -> tuple[int, int]:
    """(values compared, values that disagree) over the records located at a packlint launch: the
    variant that agrees with bash, else the one with the fewest problems (each problem one value)."""
    compared = wrong = 0
    for rec in run.records:
        best: tuple[int, int] | None = None
        for launch in _located(model, rec, run.root):
            for v in H.variants_of(launch):
                n = known_values(v)
                bad = len([p for p in H.variant_problems(v, rec, run.base_env) if category(p) in VALUE_CATEGORIES])
                if best is None or (bad, -n) < (best[1], -best[0]):
                    best = (n, min(bad, n))
        if best is not None:
            compared += best[0]
            wrong += best[1]
    return compared, wrong


def one_script(checkout: Path, script: str, bindir: Path, work: Path, timeout: float) -> dict:
    row: dict = {"checkout": checkout.name, "script": script}
    model = packlint_model(checkout, script)
    if isinstance(model, str):
        row["packlint_error"] = model
        return row
    t = time.monotonic()
    run = bash_run(checkout, script, bindir, work, timeout)
    row.update(
        rc=run.rc,
        bash_s=round(time.monotonic() - t, 2),
        records=len(run.records),
        launches=len(model.get("launches") or []),
    )
    problems = H.compare(model, run)
    row["problems"] = [{"category": _category(p, model, run), "text": p[:600]} for p in problems]
    row["values_compared"], row["values_wrong"] = count_values(model, run)
    return row


def summarise(rows: list[dict]) -> dict:
    total: dict = {
        "scripts": len(rows),
        "checkouts": len({r["checkout"] for r in rows}),
        "bash_timeouts": 0,
        "packlint_errors": 0,
        "bash_launches": 0,
        "scripts_with_launches": 0,
        "values_compared": 0,
        "values_wrong": 0,
        "problems": {},
    }
    for r in rows:
        if "packlint_error" in r:
            total["packlint_errors"] += 1
            continue
        total["bash_timeouts"] += r["rc"] == 124
        total["bash_launches"] += r["records"]
        total["scripts_with_launches"] += r["records"] > 0
        total["values_compared"] += r["values_compared"]
        total["values_wrong"] += r["values_wrong"]
        for p in r["problems"]:
            total["problems"][p["category"]] = total["problems"].get(p["category"], 0) + 1
    if total["values_compared"]:
        total["agreement"] = round(1 - total["values_wrong"] / total["values_compared"], 5)
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkouts", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("bash-differential"))
    ap.add_argument("--limit", type=int, default=0, help="at most this many scripts per checkout")
    ap.add_argument("--timeout", type=float, default=5.0, help="seconds bash gets per script")
    ap.add_argument("--only", type=Path, help="a scripts.jsonl or disagreements.jsonl: run only its scripts")
    args = ap.parse_args(argv)
    if shutil.which("bwrap") is None:
        print("bwrap is not installed (Debian: apt-get install bubblewrap)", file=sys.stderr)
        return 2
    H.HARNESS_VARS.add("HOME")  # the sandbox's fake HOME: compared only where packlint claims a value
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out.resolve()
    rows: list[dict] = []
    only = None
    if args.only is not None:
        with open(args.only) as fh:
            only = {(r["checkout"], r["script"]) for r in map(json.loads, fh)}
    with tempfile.TemporaryDirectory(prefix="pl-bashdiff-") as tmp:
        bindir, work = Path(tmp) / "bin", Path(tmp) / "work"
        install(bindir)
        work.mkdir()
        with open(out / "scripts.jsonl", "w") as sj, open(out / "disagreements.jsonl", "w") as dj:
            for checkout in (c.resolve() for c in args.checkouts):
                for script in scripts_of(checkout)[: args.limit or None]:
                    if only is not None and (checkout.name, script) not in only:
                        continue
                    row = one_script(checkout, script, bindir, work, args.timeout)
                    rows.append(row)
                    sj.write(json.dumps(row) + "\n")
                    for p in row.get("problems", []):
                        dj.write(json.dumps({"checkout": row["checkout"], "script": script, **p}) + "\n")
                    sj.flush()
                    dj.flush()
    total = summarise(rows)
    per = {c: summarise([r for r in rows if r["checkout"] == c]) for c in sorted({r["checkout"] for r in rows})}
    (out / "summary.json").write_text(json.dumps({"total": total, "checkouts": per}, indent=1))
    print(json.dumps(total, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
