"""The bash oracle and the comparator.

`run_under_bash` copies the fixtures folder into a temp dir and runs one fixture there under real
bash (`env -i`, a minimal PATH, the sidecar's env, cwd = the copy), with every launcher replaced by
the recorder (recorder.py). `compare` checks a packlint launch model against those records:

- every recorded launch has a packlint launch at the same place (same file, recorded line inside
  `line..end_line`; a `bash -c` string is matched by the line of the `bash -c` command that ran it,
  or failing that by launcher name and order);
- for at least one variant of that launch, packlint's `command` agrees with the recorded argv at
  every position where packlint has a known string (an unknown element stands for any number of
  words), and packlint's `env` agrees with the recorded environment: every known value equal, every
  exported-with-unknown-value variable present, every variable bash exported present in packlint's
  env, nothing packlint calls `unexported` visible to the process;
- when bash ran to completion (exit status 0), every packlint launch with one variant and an empty
  `when` was executed by bash.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ORACLE_DIR = Path(__file__).resolve().parent
TESTS_DIR = ORACLE_DIR.parent
FIXTURES_DIR = TESTS_DIR / "fixtures" / "inspect"

# Names replaced by the recorder. Every launch in a fixture goes through one of these.
LAUNCHERS = ("torchrun", "python", "python3", "deepspeed", "accelerate", "srun", "mpirun", "mpiexec",
             # environment runners and training tools (issue 11): recorded like launchers
             "uv", "conda", "micromamba", "mamba", "pixi", "poetry", "pipenv", "hatch", "llamafactory-cli",
             "swift", "megatron", "tune", "composer", "colossalai", "lightning",
             # launches people hide (issue 18)
             "coverage", "msrun")
# Commands that hand a command to another shell: their stand-in does not record, it runs that command
# the way the real one would (recorder.py `submit`): sbatch runs --wrap / the job script (stdin or
# file) with the environment --export gives it; ssh, pdsh and `ray job submit` run the command with a
# fresh environment (the remote machine's: nothing the script exported reaches it).
SUBMITTERS = ("sbatch", "ssh", "pdsh", "ray", "gantry")

# Tools the fixtures call in command substitutions that are missing here: harmless stubs that print
# plausible output and exit 0 (packlint treats their output as unknown anyway).
# One printf (one write) with SIGPIPE ignored: `stub | head -n1` never fails under pipefail.
STUBS = {
    "nvidia-smi": "printf 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)\\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\\n'\n",
    "scontrol": "printf 'node001\\nnode002\\n'\n",
}

# Wrappers bash execs in front of the launcher (`env A=1 nohup torchrun ...`): the recorder only sees
# the launcher's own argv, so these are stripped from the front of packlint's `command`.
WRAPPERS = {"env", "nohup", "time", "exec", "stdbuf", "setsid", "numactl"}

# Environment noise that bash or the harness adds; never compared.
NOISE = {"PWD", "SHLVL", "_", "OLDPWD"}
# Set by the harness, not by the script: compared only where packlint claims a value.
HARNESS_VARS = {"PATH", "BASH_ENV"}


def is_noise(name: str) -> bool:
    return name in NOISE or name.startswith(("__PL_", "BASH_FUNC_"))  # exported functions: not settings


@dataclass
class Fixture:
    name: str
    path: Path
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    @property
    def expected_path(self) -> Path:
        return self.path.with_name(self.name + ".expected.json")


def discover_fixtures(root: Path = FIXTURES_DIR) -> list[Fixture]:
    """Every `*.sh` at the top level of the folder is a fixture; includes live in subfolders."""
    out = []
    for path in sorted(root.glob("*.sh")):
        name = path.name[:-3]
        fx = Fixture(name, path)
        sidecar = path.with_name(name + ".args.json")
        if sidecar.exists():
            data = json.loads(sidecar.read_text())
            fx.args = [str(a) for a in data.get("args", [])]
            fx.env = {str(k): str(v) for k, v in data.get("env", {}).items()}
        out.append(fx)
    return out


@dataclass
class BashRun:
    root: Path                       # the copy of the fixtures folder bash ran in (its cwd)
    script: Path
    rc: int
    stdout: str
    stderr: str
    records: list[dict]
    base_env: dict[str, str] = field(default_factory=dict)  # the environment bash started with

    @property
    def completed(self) -> bool:
        return self.rc == 0


def install_recorders(bindir: Path) -> None:
    bindir.mkdir(parents=True, exist_ok=True)
    body = (ORACLE_DIR / "recorder.py").read_text()
    for name in LAUNCHERS + SUBMITTERS:
        p = bindir / name
        p.write_text(f"#!{sys.executable}\n{body}")
        p.chmod(0o755)
    for name, text in STUBS.items():
        p = bindir / name
        p.write_text("#!/bin/sh\ntrap '' PIPE\n" + text + "exit 0\n")
        p.chmod(0o755)


def run_under_bash(fixture: Fixture, workdir: Path, *, script_root: Path = FIXTURES_DIR,
                   timeout: float = 60) -> BashRun:
    """Run `bash NAME.sh ARGS...` in a copy of `script_root` under `workdir`; return the records."""
    bash = shutil.which("bash")
    if bash is None:
        raise RuntimeError("bash not found")
    root = workdir / "root"
    shutil.copytree(script_root, root, ignore=shutil.ignore_patterns("*.expected.json"))
    bindir = workdir / "bin"
    install_recorders(bindir)
    record = workdir / "records.jsonl"
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "BASH_ENV": str(ORACLE_DIR / "bash_setup.sh"),
           "__PL_RECORD": str(record)}
    env.update(fixture.env)
    script = root / fixture.path.relative_to(script_root)
    proc = subprocess.run([bash, str(script.relative_to(root)), *fixture.args], cwd=root, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    records = []
    if record.exists():
        for raw in record.read_bytes().splitlines():
            if raw.strip():
                records.append(json.loads(raw.decode("utf-8", "surrogateescape")))
    return BashRun(root, script, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                   proc.stderr.decode("utf-8", "replace"), records, env)


# --------------------------------------------------------------------------------------- comparing

def _rel(path: str, root: Path) -> str:
    """A path packlint or bash reported, relative to the folder the script ran in."""
    if not path:
        return ""
    p = Path(path)
    if not p.is_absolute():
        p = root / p  # bash: BASH_SOURCE is as given to `bash`/`source`, relative to the cwd (root)
    return os.path.normpath(os.path.relpath(p, root))


def variants_of(launch: dict) -> list[dict]:
    vs = launch.get("variants") or []
    return vs if vs else [launch]


def _known(x) -> bool:
    return isinstance(x, str)


def _fmt(word) -> str:
    return repr(word) if isinstance(word, str) else json.dumps(word)


def strip_wrappers(command: list) -> list:
    """Drop `env [-i] [-u N] [N=V]...`, `nohup`, `time [-p]`, `exec` ... from the front."""
    cmd = list(command)
    while cmd and _known(cmd[0]) and os.path.basename(cmd[0]) in WRAPPERS:
        w = os.path.basename(cmd.pop(0))
        while cmd and _known(cmd[0]):
            if cmd[0].startswith("-"):
                opt = cmd.pop(0)
                if w == "env" and opt in ("-u", "--unset", "-C", "--chdir") and cmd:
                    cmd.pop(0)
                elif w == "numactl" and "=" not in opt and cmd and not str(cmd[0]).startswith("-") \
                        and os.path.basename(str(cmd[0])) not in LAUNCHERS:
                    cmd.pop(0)
            elif w == "env" and "=" in cmd[0] and not cmd[0].startswith("="):
                cmd.pop(0)
            else:
                break
    return cmd


def argv_problems(command: list, argv: list[str]) -> list[str]:
    """Positions where packlint's known words disagree with bash's argv (unknown = any words)."""
    cmd = strip_wrappers(command)
    if not cmd:
        return [f"packlint command is empty, bash ran {argv!r}"]
    # argv[0]: bash resolved the launcher on PATH; compare names.
    first = cmd[0]
    if _known(first) and os.path.basename(first) != argv[0]:
        return [f"argv[0]: packlint {first!r}, bash {argv[0]!r}"]
    pat, words = cmd[1:], argv[1:]
    m = len(words)
    # glob-style match, an unknown element matches zero or more words: forward reachable positions
    reach = {0}
    for i, p in enumerate(pat):
        if _known(p):
            nxt = {j + 1 for j in reach if j < m and words[j] == p}
        else:
            nxt = set(range(min(reach), m + 1))
        if not nxt:
            there = sorted({words[j] if j < m else "<end>" for j in reach})
            return [f"argv[{i + 1}]: packlint {_fmt(p)}, bash has {' or '.join(map(repr, there))} there "
                    f"(packlint {len(cmd)} words, bash {len(argv)} words)"]
        reach = nxt
    if m not in reach:
        return [f"bash has extra words after packlint's last: {words[max(reach):]!r} "
                f"(packlint {len(cmd)} words, bash {len(argv)} words)"]
    return []


def env_problems(variant: dict, env: dict[str, str], base_env: dict[str, str]) -> list[str]:
    problems = []
    penv = variant.get("env") or {}
    for name, entry in penv.items():
        if is_noise(name):
            continue
        if entry.get("source") == "cluster":
            continue  # set outside bash at run time (e.g. SLURM_PROCID for each srun task)
        if entry.get("source") == "branches":
            continue  # exported on some of the paths packlint joined only: its presence is not claimed
        if "unknown" in entry:
            if name not in env:
                problems.append(f"env {name}: packlint says exported (value unknown), bash did not export it")
        elif "value" in entry:
            val = entry["value"]
            if val is None:
                if name in env:
                    problems.append(f"env {name}: packlint says unset, bash has {env[name]!r}")
            elif not isinstance(val, str):
                problems.append(f"env {name}: variant entry is not concrete: {json.dumps(entry)}")
            elif name not in env:
                problems.append(f"env {name}: packlint says {val!r}, bash did not export it")
            elif env[name] != val:
                problems.append(f"env {name}: packlint says {val!r}, bash has {env[name]!r}")
        else:
            problems.append(f"env {name}: variant entry is not concrete: {json.dumps(entry)}")
    for name, val in env.items():
        if is_noise(name) or name in penv:
            continue
        if name in HARNESS_VARS and base_env.get(name) == val:
            continue
        problems.append(f"env {name}: bash exports {val!r}, packlint's env lacks it")
    for name in variant.get("unexported") or {}:
        if name in env and name not in penv and not is_noise(name):
            problems.append(f"env {name}: packlint says set but not exported, bash exported {env[name]!r}")
    return problems


def effective_env(rec: dict) -> dict[str, str]:
    """The environment the training processes get. The recorder stands in for the outermost launcher,
    so options by which that launcher sets its children's environment are applied here:
    `mpirun -x NAME=VALUE` / `-genv NAME VALUE` (`-x NAME` only forwards what is already there)."""
    env = dict(rec["env"])
    if rec["name"] == "srun":
        # `srun --export=NONE` drops the environment, `--export=ALL,X=1` adds X (Slurm semantics)
        for a in rec["argv"][1:]:
            if not a.startswith("-"):
                break
            if a.startswith("--export="):
                items = a.split("=", 1)[1].split(",")
                if "ALL" not in items:
                    env = {k: v for k, v in env.items() if is_noise(k) or k in HARNESS_VARS}
                for item in items:
                    if "=" in item:
                        k, v = item.split("=", 1)
                        env[k] = v
                    elif item not in ("ALL", "NONE") and item in rec["env"]:
                        env[item] = rec["env"][item]
    if rec["name"] in ("mpirun", "mpiexec"):
        argv = rec["argv"]
        i = 1
        while i < len(argv):
            a = argv[i]
            if a == "-x" and i + 1 < len(argv):
                if "=" in argv[i + 1]:
                    k, v = argv[i + 1].split("=", 1)
                    env[k] = v
                i += 2
            elif a == "-genv" and i + 2 < len(argv):
                env[argv[i + 1]] = argv[i + 2]
                i += 3
            elif a in LAUNCHERS:
                break  # the program's own arguments start here
            else:
                i += 1
    return env


def variant_problems(variant: dict, rec: dict, base_env: dict[str, str]) -> list[str]:
    return argv_problems(variant.get("command") or [], rec["argv"]) + \
        env_problems(variant, effective_env(rec), base_env)


def _contains(launch: dict, file: str, line: int, root: Path) -> bool:
    if not file or not line:
        return False
    if _rel(launch.get("file") or "", root) != _rel(file, root):
        return False
    start = launch.get("line") or 0
    end = launch.get("end_line") or start
    return start <= line <= end


def _launch_names(launch: dict) -> set[str]:
    names = {os.path.basename(x) for x in (launch.get("launchers") or []) if isinstance(x, str)}
    if isinstance(launch.get("launcher"), str):
        names.add(os.path.basename(launch["launcher"]))
    for v in variants_of(launch):
        cmd = strip_wrappers(v.get("command") or [])
        if cmd and _known(cmd[0]):
            names.add(os.path.basename(cmd[0]))
    return names


def _describe(launch: dict) -> str:
    return f"launch #{launch.get('id')} ({launch.get('launcher')} at {launch.get('file')}:{launch.get('line')})"


def compare(model: dict, run: BashRun, *, model_root: Path | None = None) -> list[str]:
    """All disagreements between packlint's model and what bash did; empty when they agree.

    `model_root`: the folder packlint's relative file names are relative to (default run.root).
    """
    root = run.root
    base_env = run.base_env
    mroot = model_root or root
    launches = model.get("launches") or []

    def model_file(f: str) -> str:
        return _rel(f if not f or os.path.isabs(f) else str(mroot / f), root)

    lfile = {id(l): model_file(l.get("file") or "") for l in launches}
    problems: list[str] = []
    matched: set[int] = set()
    by_order_used: set[int] = set()

    def at(file: str, line: int) -> list[dict]:
        if not file or not line:
            return []
        f = _rel(file, root)
        return [l for l in launches if lfile[id(l)] == f
                and (l.get("line") or 0) <= line <= (l.get("end_line") or l.get("line") or 0)]

    for n, rec in enumerate(run.records):
        where = f"bash record {n} ({rec['name']} at {_rel(rec['file'], root) or '<bash -c>'}:{rec['line']})"
        cands = at(rec["file"], rec["line"])
        # bash reports no usable location for a `bash -c` string, a function exported into a child
        # shell (file "environment") or an EXIT trap's command (line 1 of the trap string)
        placeless = not rec["file"] or rec["file"] == "environment" or rec["line"] == 1
        if not cands and placeless:
            cands = at(rec.get("parent_file", ""), rec.get("parent_line", 0))
            if not cands:  # last resort: by launcher name, nearest to the line that started the shell
                # (a job script fed to sbatch on stdin runs from the here-document after that line)
                parent = rec.get("parent_line", 0) or 0
                free = [l for l in launches if id(l) not in by_order_used and id(l) not in matched
                        and rec["name"] in _launch_names(l)]
                free.sort(key=lambda l: (abs((l.get("line") or 0) - parent), l.get("line") or 0))
                for l in free:
                    by_order_used.add(id(l))
                    cands = [l]
                    break
        if not cands:
            problems.append(f"{where}: bash ran {rec['argv']!r} but packlint has no launch there")
            continue
        best: list[str] | None = None
        ok = False
        for l in cands:
            for v in variants_of(l):
                p = variant_problems(v, rec, base_env)
                if not p:
                    ok = True
                    matched.add(id(l))
                    break
                if best is None or len(p) < len(best):
                    best = [f"{_describe(l)}: {x}" for x in p]
            if ok:
                break
        if not ok:
            for l in cands:
                matched.add(id(l))  # located, but wrong: don't also report it as never executed
            problems.append(f"{where}: no packlint variant agrees with bash: " + "; ".join(best or []))
    if run.completed:
        for l in launches:
            if id(l) in matched or id(l) in by_order_used:
                continue
            vs = l.get("variants") or []
            if len(vs) <= 1 and not (l.get("when") or []) and not (vs and vs[0].get("when")):
                problems.append(f"{_describe(l)}: packlint says it always runs, bash never ran it")
    return problems
