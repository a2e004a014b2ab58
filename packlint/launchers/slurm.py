"""Commands whose work runs elsewhere or later: Slurm's `sbatch` (job scripts, `--wrap`, `--export`,
`#SBATCH` headers) and remote shells (`ssh HOST 'cmd'`, `pdsh -w H cmd`)."""

from __future__ import annotations

import re

from packlint.launchers.split import Option, basename, launcher_name, split_options
from packlint.launchers.tables import LAUNCHERS, LauncherSpec
from packlint.values import Known, Value


def command_string(fields: list[Value]) -> tuple[LauncherSpec, int, list[Value]] | None:
    """`ssh HOST 'cmd'`, `pdsh -w H cmd ...`, `sbatch --wrap 'cmd'`: (spec, end of the launcher's own
    words, the words of the command string). None when this is no such launch."""
    name = launcher_name(fields)
    spec = LAUNCHERS.get(name or "")
    if spec is None or not spec.command_string:
        return None
    options, k, _ = split_options(spec, fields, spec.words)
    if name == "sbatch":
        wrap = next((o for o in options if o.name == "--wrap" and o.args), None)
        return (spec, len(fields), wrap.args[:1]) if wrap is not None else None
    if k >= len(fields):
        return None  # `ssh host` alone: an interactive login
    return spec, k, list(fields[k:])


def job_script(fields: list[Value]) -> tuple[list[Option], int] | None:
    """`sbatch [options] job.sh [args]`: the options and the index of the job script (None: read from
    stdin, or not sbatch)."""
    if basename(fields[0]) != "sbatch":
        return None
    options, k, _ = split_options(LAUNCHERS["sbatch"], fields, 1)
    if any(o.name == "--wrap" for o in options):
        return None
    return options, k


def export_option(options: list[Option]) -> tuple[bool, dict[str, Value | None]] | None:
    """Slurm's `--export=`: (whether the submitting environment is passed on, variables it adds; a
    value None passes NAME through). `NONE` drops the environment, `ALL,X=1` adds X, `X=1` alone
    passes only X. None: no (readable) --export, the default ALL."""
    opt = next((o for o in reversed(options) if o.name == "--export" and o.args), None)
    if opt is None or not isinstance(opt.args[0], Known):
        return None
    inherit = False
    added: dict[str, Value | None] = {}
    for item in opt.args[0].text.split(","):
        if item in ("ALL", "NIL"):
            inherit = True
        elif item == "NONE":
            inherit = False
        elif "=" in item:
            k, _, v = item.partition("=")
            added[k] = Known(v, opt.args[0].span)
        elif item:
            added[item] = None
    return inherit, added


def has_sbatch_headers(text: str) -> bool:
    """Whether the script is a Slurm job script: an `#SBATCH` line before its first command."""
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#SBATCH"):
            return True
        if s and not s.startswith("#"):
            return False
    return False


def sbatch_header_env(text: str) -> dict[str, str]:
    """What Slurm sets in a job from the script's `#SBATCH` headers (read until the first command, as
    sbatch does): node, task and GPU counts, only where the header gives one exact number."""
    opts: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if not s or (s.startswith("#") and not s.startswith("#SBATCH")):
            continue
        if not s.startswith("#SBATCH"):
            break  # the first command: sbatch reads no further (and most scripts never compile the pattern)
        m = re.match(r"^#SBATCH\s+(.*)$", s)
        if m is None:
            break
        words = m.group(1).split("#")[0].split()
        i = 0
        while i < len(words):
            w = words[i]
            if w.startswith("--") and "=" in w:
                k, _, v = w.partition("=")
                opts[k] = v
            elif w.startswith("-") and i + 1 < len(words) and not words[i + 1].startswith("-"):
                opts[w] = words[i + 1]
                i += 1
            elif re.fullmatch(r"-[A-Za-z]\S+", w):
                opts[w[:2]] = w[2:]
            i += 1
    env: dict[str, str] = {}

    def number(*names: str) -> int | None:
        for n in names:
            v = opts.get(n)
            if v is not None:
                m = re.fullmatch(r"(?:[\w-]+:)?(\d{1,9})", v)  # (bounded: int() of 4,000 digits fails)
                return int(m.group(1)) if m else None
        return None

    nodes = number("--nodes", "-N")
    per_node = number("--ntasks-per-node")
    tasks = number("--ntasks", "-n")
    gpus_node = number("--gpus-per-node")
    gres = opts.get("--gres")
    if gpus_node is None and gres:
        m = re.fullmatch(r"gpu(?::[\w-]+)?:(\d{1,9})", gres)
        gpus_node = int(m.group(1)) if m else None
    if nodes is not None:
        env["SLURM_NNODES"] = env["SLURM_JOB_NUM_NODES"] = str(nodes)
    if per_node is not None:
        env["SLURM_NTASKS_PER_NODE"] = str(per_node)
    if tasks is None and nodes is not None and per_node is not None:
        tasks = nodes * per_node
    if tasks is not None:
        env["SLURM_NTASKS"] = env["SLURM_NPROCS"] = str(tasks)
    if gpus_node is not None:
        env["SLURM_GPUS_ON_NODE"] = str(gpus_node)
        if "--gpus-per-node" in opts:
            env["SLURM_GPUS_PER_NODE"] = str(gpus_node)
    return env
