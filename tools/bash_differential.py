"""Bash differential (issue 26): every value packlint claims as known agrees with bash.

For each shell script of a checkout, `packlint inspect --format json` gives the launches with their
command lines and environments; bash then runs the same script in a bubblewrap sandbox (no network,
the checkout read-only, a private /tmp, a clean environment: `PATH` only) with the launchers replaced
by stubs that log their argv and environment and exit 0. Every command line bash ran through a stub is
matched to packlint's launches of the same launcher; a word or an exported variable packlint claims as
known (a string in `command`, an env entry with a `value` and no `evidence`) must be what bash gave.

    python tools/bash_differential.py CHECKOUT [CHECKOUT ...] [--json OUT] [--limit N] [--show N]

Nothing runs outside the sandbox; a script gets 5 s. Needs `bwrap` (Debian: bubblewrap). Outside the
5-minute test suite; its results are recorded in docs/accuracy.md.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

# the launchers packlint models, replaced by the logging stub (bash itself is not: `bash -c` must run)
STUBBED = [
    "python",
    "python3",
    "torchrun",
    "deepspeed",
    "accelerate",
    "srun",
    "sbatch",
    "salloc",
    "mpirun",
    "mpiexec",
    "llamafactory-cli",
    "trl",
    "swift",
    "axolotl",
    "xtuner",
    "ray",
    "horovodrun",
    "composer",
    "tune",
    "litgpt",
    "nemo-run",
    "uv",
    "pip",
    "pip3",
    "conda",
    "nvidia-smi",
    "scontrol",
]
STUB = """#!/bin/bash
n="$PL_LOG/$(date +%s%N).$$"
env -0 > "$n.env.part" && mv "$n.env.part" "$n.env"
printf '%s\\0' "$(basename "$0")" "$@" > "$n.argv.part" && mv "$n.argv.part" "$n.argv"
exit 0
"""
PATTERNS = ("**/*.sh", "**/*.slurm", "**/*.sbatch", "**/*.bash")


def scripts_of(checkout: str) -> list[str]:
    out: set[str] = set()
    for pat in PATTERNS:
        out.update(p for p in glob.glob(os.path.join(checkout, pat), recursive=True) if os.path.isfile(p))
    return sorted(os.path.relpath(p, checkout) for p in out if "/.git/" not in p)


def packlint_model(checkout: str, script: str) -> dict | None:
    proc = subprocess.run(
        [sys.executable, "-m", "packlint", "inspect", "--format", "json", "--no-code-base", script],
        cwd=checkout, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": os.environ.get("PACKLINT_TREE", os.getcwd())},
    )  # fmt: skip
    if proc.returncode != 0:
        return None
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None


def job_env(checkout: str, script: str) -> list[str]:
    """`NAME=VALUE` for what Slurm sets from a job script's `#SBATCH` header: packlint reads the script
    as the job sbatch runs (packlint.launchers.sbatch_header_env), so bash gets the same environment."""
    from packlint.launchers import sbatch_header_env

    try:
        with open(os.path.join(checkout, script), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return []
    if "#SBATCH" not in text:
        return []
    return [f"{k}={v}" for k, v in sbatch_header_env(text).items()]


def bash_run(checkout: str, script: str, stubs: str) -> list[tuple[list[str], dict[str, str]]]:
    """The stub invocations of one sandboxed bash run: (argv, env) each, in order."""
    log = tempfile.mkdtemp(prefix="pl-diff-log-")
    try:
        cmd = [
            "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", log, log, "--ro-bind", stubs, stubs, "--ro-bind", checkout, checkout,
            "--unshare-all", "--die-with-parent", "--chdir", checkout,
            "/usr/bin/env", "-i", f"PATH={stubs}:/usr/bin:/bin", f"PL_LOG={log}", *job_env(checkout, script),
            "/bin/bash", script,
        ]  # fmt: skip
        try:
            subprocess.run(cmd, capture_output=True, timeout=5, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pass
        out = []
        for argv_file in sorted(glob.glob(os.path.join(log, "*.argv"))):
            with open(argv_file, "rb") as fh:
                argv = [w.decode("utf-8", "replace") for w in fh.read().split(b"\0")[:-1]]
            env: dict[str, str] = {}
            env_file = argv_file[: -len(".argv")] + ".env"
            if not os.path.exists(env_file):
                continue  # (a stub killed before it logged: bash ended while it ran in the background)
            if os.path.exists(env_file):
                with open(env_file, "rb") as fh:
                    for item in fh.read().split(b"\0"):
                        k, sep, v = item.decode("utf-8", "replace").partition("=")
                        if sep and k not in ("PL_LOG", "PATH", "PWD", "SHLVL", "_", "OLDPWD"):
                            env[k] = v
            out.append((argv, env))
        return out
    finally:
        shutil.rmtree(log, ignore_errors=True)


def _candidates(model: dict) -> list[tuple[list, dict]]:
    out = []
    for launch in model.get("launches", []):
        for v in launch.get("variants", []):
            out.append((v.get("command") or [], v.get("env") or {}))
    return out


def compare(argv: list[str], env: dict[str, str], candidates: list[tuple[list, dict]]) -> tuple[bool, str] | None:
    """(agrees, what differs) against the packlint launches of the same launcher; None: none to compare."""
    same = [
        (c, e)
        for c, e in candidates
        if c and isinstance(c[0], str) and os.path.basename(c[0]) == argv[0] and _same_program(c, argv)
    ]
    if not same:
        return None
    first_diff = ""
    for command, penv in same:
        why = _differs(argv, env, command, penv)
        if why is None:
            return True, ""
        first_diff = first_diff or why
    return False, first_diff


def _same_program(command: list, argv: list[str]) -> bool:
    """The launch runs the same program (`python train.py` is not `python -c ...` of the same script)."""
    if len(command) < 2 or len(argv) < 2 or not isinstance(command[1], str):
        return True
    return command[1] == argv[1]


def _differs(argv: list[str], env: dict[str, str], command: list, penv: dict) -> str | None:
    for i, word in enumerate(command[1:], 1):
        if not isinstance(word, str):
            break  # an unknown word may be any number of words: nothing after it is claimed
        if i >= len(argv):
            return f"packlint has word {i} {word!r}; bash ends at {len(argv)} words"
        if word != argv[i]:
            return f"word {i}: packlint {word!r}, bash {argv[i]!r}"
    else:
        if len(argv) != len(command):
            return f"packlint has {len(command)} words, bash {len(argv)}"
    for name, entry in penv.items():
        if not isinstance(entry, dict) or "evidence" in entry or entry.get("source") not in ("script", "prefix"):
            continue
        value = entry.get("value")
        if isinstance(value, str) and entry.get("exported") and env.get(name) != value:
            return f"${name}: packlint {value!r}, bash {env.get(name)!r}"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkouts", nargs="+")
    ap.add_argument("--json", help="write every comparison here")
    ap.add_argument("--limit", type=int, default=0, help="at most this many scripts per checkout")
    ap.add_argument("--show", type=int, default=20, help="print this many disagreements")
    args = ap.parse_args(argv)
    if shutil.which("bwrap") is None:
        print("bwrap is not installed (Debian: apt-get install bubblewrap)", file=sys.stderr)
        return 2
    stubs = tempfile.mkdtemp(prefix="pl-diff-stubs-")
    for name in STUBBED:
        path = os.path.join(stubs, name)
        with open(path, "w") as fh:
            fh.write(STUB)
        os.chmod(path, 0o755)
    rows = []
    totals = {"scripts": 0, "runs": 0, "agree": 0, "disagree": 0, "unmatched": 0}
    try:
        for checkout in args.checkouts:
            checkout = os.path.abspath(checkout)
            scripts = scripts_of(checkout)[: args.limit or None]
            for script in scripts:
                totals["scripts"] += 1
                model = packlint_model(checkout, script)
                if model is None:
                    continue
                for run_argv, env in bash_run(checkout, script, stubs):
                    totals["runs"] += 1
                    verdict = compare(run_argv, env, _candidates(model))
                    key = "unmatched" if verdict is None else "agree" if verdict[0] else "disagree"
                    totals[key] += 1
                    rows.append({"checkout": os.path.basename(checkout), "script": script, "argv": run_argv,
                                 "verdict": key, "why": verdict[1] if verdict else ""})  # fmt: skip
    finally:
        shutil.rmtree(stubs, ignore_errors=True)
    print(json.dumps(totals))
    for r in [r for r in rows if r["verdict"] == "disagree"][: args.show]:
        print(f"{r['checkout']}/{r['script']}: {r['why']}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"totals": totals, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
