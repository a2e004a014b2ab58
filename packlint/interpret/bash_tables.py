"""Fixed facts about bash and launch scripts the interpreter consults (names, commands, flags)."""

from __future__ import annotations

import re

from packlint.regex import LazyRegex

# Commands whose whole purpose is their exit status: their status stays unknown in && / || lists.
PREDICATES = {
    "grep",
    "egrep",
    "fgrep",
    "pgrep",
    "which",
    "type",
    "hash",
    "getent",
    "id",
    "compgen",
    "ping",
    "nc",
    "curl",
    "wget",
    "ls",
    "cmp",
    "diff",
    "pidof",
    "nvidia-smi",
}


BASH_DYNAMIC = {
    "RANDOM",
    "SECONDS",
    "HOSTNAME",
    "PWD",
    "OLDPWD",
    "PPID",
    "UID",
    "EUID",
    "BASHPID",
    "HOME",
    "USER",
    "SRANDOM",
    "EPOCHSECONDS",
    "EPOCHREALTIME",
    "SHLVL",
    "HOSTTYPE",
    "MACHTYPE",
    "OSTYPE",
    "BASH_VERSION",
    "IFS",
    "PATH",
    "LOGNAME",
    "SHELL",
    "TERM",
}


# (SCRIPT_DIR: `rel`, a folder below or above the script's own that a `cd` goes to first: `$(cd "$(dirname "$0")/.." &&
# pwd)`, the checkout root of a script in scripts/)
# the script's own path, `$0` / `${BASH_SOURCE[0]}`, or that path resolved: `$(readlink -f "$0")`, `$(realpath "$0")`
_SELF = (
    r"""(?:\$(?:\{?0\}?|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"""
    r"""|\$\(\s*(?:readlink\s+-[fe]|realpath)\s+"?\$(?:\{?0\}?|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?\s*\))"""
)
SCRIPT_DIR = LazyRegex(
    r"""^\$\(\s*(?:cd\s+(?:--\s+)?)?"?\$\(\s*dirname\s+(?:--\s+)?"?"""
    + _SELF
    + r""""?\s*\)(?P<rel>(?:/[\w.-]*)*)"?\s*"""
    r"""(?:[&12]?>\s*/dev/null\s*(?:2>&1\s*)?)?(?:(?:&&|;)\s*pwd(?:\s+-P)?\s*)?"""
    r"""(?:[&12]?>\s*/dev/null\s*(?:2>&1\s*)?)?\)$"""
    r"""|^\$\(\s*dirname\s+(?:--\s+)?"?""" + _SELF + r""""?\s*\)$"""
)


UNKNOWN_PART = "__PLPART"


CLEAR_ENV = "__PL_ENV_CLEARED"


# Commands that take `*.py` or training flags as plain data, never start training (PK903 ignores them).
NOT_LAUNCHERS = frozenset(
    {
        "echo",
        "printf",
        "cat",
        "ls",
        "cp",
        "mv",
        "rm",
        "mkdir",
        "grep",
        "egrep",
        "sed",
        "awk",
        "tee",
        "wget",
        "curl",
        "git",
        "chmod",
        "chown",
        "touch",
        "ln",
        "find",
        "tar",
        "head",
        "tail",
        "wc",
        "sort",
        "cut",
        "tr",
        "scp",
        "rsync",
        "pip",
        "pip3",
        "test",
        "[",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "stat",
        "diff",
        "sha256sum",
        "md5sum",
        "zip",
        "unzip",
        "du",
        "df",
        "file",
        "wait",
        "kill",
        "pkill",
        "pgrep",
        "ps",
        "sleep",
        "cd",
        "pushd",
        "popd",
        "true",
        "false",
        ":",
        "exit",
        "logger",
        "less",
        "more",
        "vim",
        "nano",
        "code",
        "open",
        "rg",
        "jq",
        "yq",
        "envsubst",
        "hostname",
        "date",
        "nvidia-smi",
        "ray",
        "docker",
        "kubectl",
        "gsutil",
        "aws",
        "hdfs",
        "ossutil",
        "coscmd",
        "huggingface-cli",
        "modelscope",
        "apt",
        "apt-get",
        "yum",
        "conda",
        "uv",
        "pytest",
        "ruff",
        "black",
        "isort",
        "flake8",
        "mypy",
        "pre-commit",
        "python-config",
    }
)


# Flags that only a training program takes (Megatron spellings): a command given one is a launch.
TRAINING_FLAGS = frozenset(
    {
        "--micro-batch-size",
        "--global-batch-size",
        "--tensor-model-parallel-size",
        "--pipeline-model-parallel-size",
        "--context-parallel-size",
        "--expert-model-parallel-size",
        "--seq-length",
        "--num-layers",
        "--hidden-size",
        "--num-attention-heads",
        "--train-iters",
        "--train-samples",
        "--lr-decay-style",
        "--tokenizer-type",
        "--data-path",
        "--sequence-parallel",
        "--use-distributed-optimizer",
        "--reset-position-ids",
        "--reset-attention-mask",
        "--micro_batch_size",
        "--per_device_train_batch_size",
        "--gradient_accumulation_steps",
        "--deepspeed",
    }
)


PACKING_GATE = re.compile(r"PACK")


# Launchers that hand their command to another shell (nested_code.run_submitted runs it there).
SUBMITTERS = frozenset({"sbatch", "ssh", "pdsh", "ray job submit", "gantry run"})


SRUN_TASK_ENV = (
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NODEID",
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "SLURM_NTASKS",
    "SLURM_NNODES",
    "SLURM_JOB_NODELIST",
    "SLURM_STEP_ID",
    "SLURM_JOB_NUM_NODES",
    "SLURM_GPUS_ON_NODE",
    "SLURM_CPUS_ON_NODE",
)


LAUNCH_WORD = LazyRegex(
    rb"(?<![\w./-])(?:[\w./-]*/)?(?:torchrun|deepspeed|accelerate|srun|sbatch|mpirun|mpiexec|python[\d.]*|"
    rb"uv|conda|micromamba|mamba|pixi|poetry|pipenv|hatch|pdsh|ray|llamafactory-cli|swift|megatron|tune|"
    rb"composer|colossalai|lightning|bash|sh|eval|source|\.)(?![\w-])"
)
