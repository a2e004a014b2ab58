"""Per-launcher knowledge, kept as data (like ShellCheck's per-command checks): which commands start a
training process, which of their options take a value, where the program starts, and how the world
size follows from their options.
"""

from __future__ import annotations

import os
import re

from packlint.records import factory, record
from packlint.values import Known, Unknown, Value

# Variables a cluster's scheduler or launcher sets in every job (Slurm, PMI/PMIx, Open MPI, PyTorch
# elastic, PAI-DLC/Volcano/Kubeflow's WORLD_SIZE = node count, LSF, PBS). A `${SLURM_NNODES:-1}` fallback
# in a script is what runs on a laptop, not on the cluster: process counts taken from it are unknown.
CLUSTER_VARIABLE = re.compile(
    r"^(SLURM_\w+|PMI_\w+|PMIX_\w+|OMPI_COMM_WORLD_\w+|OMPI_\w+|PET_\w+|MLP_\w+|"
    r"WORLD_SIZE|KUBERNETES_\w+|LSB_\w+|PBS_\w+)$"
)

# Commands that run another command after their own options; the extra env they set is handled by the
# interpreter (`env A=1 cmd`). value: options that take an argument (others are flags), and how many
# leading positional arguments belong to the wrapper itself (`timeout 10 cmd`).
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "nohup": (frozenset(), 0),
    "exec": (frozenset({"-a"}), 0),
    "time": (frozenset({"-f", "--format", "-o", "--output"}), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "numactl": (
        frozenset(
            {"-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind", "--membind", "--preferred", "--interleave"}
        ),
        0,
    ),
    "taskset": (frozenset(), 1),
    "command": (frozenset(), 0),
    "builtin": (frozenset(), 0),
    "xargs": (frozenset({"-n", "-P", "-I", "-d", "-a", "-L", "-s", "-E"}), 0),
    "setsid": (frozenset(), 0),
    "ionice": (frozenset({"-c", "--class", "-n", "--classdata", "-p", "--pid", "-P", "--pgid", "-u", "--uid"}), 0),
    "chrt": (frozenset(), 1),  # chrt [options] PRIORITY command
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), 1),  # flock [opts] FILE cmd
    "nsys": (frozenset({"*"}), 0),  # nsys profile [options with values] command
    "ncu": (frozenset({"*"}), 0),
    "sudo": (frozenset({"-u", "--user", "-g", "--group", "-C", "-D", "-h", "-p", "-r", "-t", "-U"}), 0),
}


@record(eq=True)
class ContainerSpec:
    """A container runner (`docker run IMAGE CMD...`): the command runs inside, with the environment
    the runner gives it — docker and podman pass only `-e` variables, apptainer and singularity pass
    the whole host environment unless told to clean it."""

    flag_options: frozenset[str]  # options without a value (others take one)
    env_options: frozenset[str]  # `-e NAME=VALUE` / `--env NAME=VALUE` / `-e NAME`
    inherits_env: bool  # the host's exported environment reaches the command
    clean_env_flags: frozenset[str] = frozenset()
    subcommands: tuple[str, ...] = ()  # `docker run`, `apptainer exec`


CONTAINERS: dict[str, ContainerSpec] = {
    "docker": ContainerSpec(
        frozenset(
            {
                "-d",
                "--detach",
                "-i",
                "--interactive",
                "-t",
                "--tty",
                "--rm",
                "--privileged",
                "--init",
                "-P",
                "--publish-all",
                "--read-only",
                "--no-healthcheck",
                "--oom-kill-disable",
                "--sig-proxy",
                "-it",
                "-ti",
                "-itd",
                "-dit",
            }
        ),
        frozenset({"-e", "--env"}),
        inherits_env=False,
        subcommands=("run",),
    ),
    "apptainer": ContainerSpec(
        frozenset(
            {
                "--nv",
                "--nvccli",
                "--rocm",
                "-e",
                "--cleanenv",
                "-C",
                "--containall",
                "-c",
                "--contain",
                "--writable",
                "--writable-tmpfs",
                "--fakeroot",
                "-f",
                "--no-home",
                "--no-mount",
                "-u",
                "--userns",
                "--no-privs",
                "--compat",
                "--no-init",
                "--no-eval",
                "--no-https",
            }
        ),
        frozenset({"--env"}),
        inherits_env=True,
        clean_env_flags=frozenset({"-e", "--cleanenv", "-C", "--containall", "--compat"}),
        subcommands=("exec", "run"),
    ),
}
CONTAINERS["podman"] = CONTAINERS["docker"]
CONTAINERS["singularity"] = CONTAINERS["apptainer"]
CONTAINERS["nvidia-docker"] = CONTAINERS["docker"]


def split_container(fields: list[Value]):
    """(spec, options, index of the command inside) for `docker run ... IMAGE CMD`, else None."""
    name = basename(fields[0]) if fields else None
    spec = CONTAINERS.get(name or "")
    if spec is None or len(fields) < 3 or not isinstance(fields[1], Known) or fields[1].text not in spec.subcommands:
        return None
    options: list[Option] = []
    i = 2
    while i < len(fields):
        f = fields[i]
        if not isinstance(f, Known) or not f.text.startswith("-") or f.text == "-":
            break
        t = f.text
        if t.startswith("--") and "=" in t:
            n, _, v = t.partition("=")
            options.append(Option(n, f, [Known(v, f.span)]))
            i += 1
        elif t in spec.flag_options or (
            t.startswith("-") and not t.startswith("--") and len(t) > 2 and all(c in "dit" for c in t[1:])
        ):
            options.append(Option(t, f, []))
            i += 1
        else:
            options.append(Option(t, f, fields[i + 1 : i + 2]))
            i += 2
    if i + 1 >= len(fields):
        return None  # no image, or no command after it
    return spec, options, i + 1


@record(eq=True)
class SizeOption:
    """A launcher option that gives a process count: its spellings, the launcher's default when it is
    absent (None: not knowable from the script) and why it cannot be known then."""

    names: tuple[str, ...]
    default: str | None = None
    why_unknown: str = ""


@record(eq=True)
class ProcessCount:
    """How a launcher's options give its process count: `total` when given, else nodes x per node."""

    nodes: SizeOption | None = None
    per_node: SizeOption | None = None
    total: SizeOption | None = None


@record(eq=True)
class LauncherSpec:
    """How a launcher's own command line reads."""

    name: str
    flag_options: frozenset[str] = frozenset()  # options that take no value
    two_value_options: frozenset[str] = frozenset()  # `--mca key value`
    value_short_options: frozenset[str] | None = None  # if set, short options NOT listed take no value
    runs_command: bool = False  # srun/mpirun: what follows is a whole command (maybe another launcher)
    module_flags: frozenset[str] = frozenset()  # `-m`/`--module`: the program is a module name
    processes: ProcessCount | None = None  # how many processes it starts (see process_layout)
    # --- forms added for issue 11 (see docs/launch-forms.md)
    words: int = 1  # words of the launcher's name (`conda run` = 2, `lightning run model` = 3)
    needs_launch: bool = False  # an environment runner: a launch only when what it runs is one
    value_options: frozenset[str] | None = None  # if set, ONLY these take a value (unknown ones are flags)
    positionals: int = 0  # leading positional words that are the launcher's own (`ssh HOST`)
    remote: bool = False  # the command runs elsewhere, with that machine's environment
    command_string: bool = False  # what follows is one shell command string (`ssh host 'a && b'`)
    program_is_tool: bool = False  # `swift sft --model ...`: the launcher is the program, its flags follow


# Slurm's short options that take a value, common to srun and sbatch (each adds its own below)
SLURM_VALUE_SHORT_OPTIONS = frozenset(
    {
        "-N",
        "-n",
        "-c",
        "-p",
        "-J",
        "-t",
        "-o",
        "-e",
        "-w",
        "-x",
        "-A",
        "-G",
        "-C",
        "-D",
        "-d",
        "-i",
        "-L",
        "-m",
        "-q",
        "-S",
    }
)

LAUNCHERS: dict[str, LauncherSpec] = {
    "torchrun": LauncherSpec(
        "torchrun",
        flag_options=frozenset(
            {
                "--standalone",
                "--no-python",
                "--no_python",
                "--run-path",
                "--run_path",
                "-m",
                "--module",
                "--use-env",
                "--use_env",
            }
        ),
        module_flags=frozenset({"-m", "--module"}),
        processes=ProcessCount(
            nodes=SizeOption(("--nnodes",), "1"), per_node=SizeOption(("--nproc-per-node", "--nproc_per_node"), "1")
        ),
    ),
    "deepspeed": LauncherSpec(
        "deepspeed",
        flag_options=frozenset(
            {
                "--no_python",
                "--no-python",
                "--module",
                "--no_local_rank",
                "--no-local-rank",
                "--no_ssh_check",
                "--force_multi",
                "--save_pid",
                "--bind_cores_to_rank",
                "--no_ssh",
                "--elastic_training",
            }
        ),
        module_flags=frozenset({"--module"}),
        processes=ProcessCount(
            nodes=SizeOption(("--num_nodes", "--num-nodes"), None, "deepspeed uses every host of the hostfile"),
            per_node=SizeOption(
                ("--num_gpus", "--num-gpus"), None, "deepspeed starts one process per GPU of each node"
            ),
        ),
    ),
    "accelerate launch": LauncherSpec(
        "accelerate launch",
        flag_options=frozenset(
            {
                "--cpu",
                "--multi_gpu",
                "--multi-gpu",
                "--tpu",
                "--use_deepspeed",
                "--use-deepspeed",
                "--use_fsdp",
                "--use-fsdp",
                "--use_megatron_lm",
                "--use_xpu",
                "-m",
                "--module",
                "--no_python",
                "--no-python",
                "--debug",
                "-q",
                "--quiet",
                "--same_network",
                "--downcast_bf16",
                "--enable_cpu_affinity",
                "--dynamo_use_fullgraph",
                "--dynamo_use_dynamic",
                "--tpu_use_cluster",
                "--tpu_use_sudo",
                "--monitor_interval",
            }
        ),
        module_flags=frozenset({"-m", "--module"}),
        processes=ProcessCount(
            total=SizeOption(("--num_processes", "--num-processes"), None, "taken from the accelerate config"),
            nodes=SizeOption(("--num_machines", "--num-machines"), None, "taken from the accelerate config"),
        ),
    ),
    "srun": LauncherSpec(
        "srun",
        flag_options=frozenset(
            {
                "--exclusive",
                "--pty",
                "-u",
                "--unbuffered",
                "-O",
                "--overcommit",
                "-l",
                "--label",
                "-K",
                "--kill-on-bad-exit",
                "--no-kill",
                "-k",
                "-Q",
                "--quiet",
                "-v",
                "--verbose",
                "-X",
                "--disable-status",
                "-Z",
                "--no-allocate",
                "--overlap",
                "--whole",
                "--exact",
                "--spread-job",
                "--multi-prog",
                # pyxis container options that take no value
                "--container-writable",
                "--container-readonly",
                "--container-remap-root",
                "--no-container-remap-root",
                "--container-mount-home",
                "--no-container-mount-home",
                "--no-container-entrypoint",
                "--container-entrypoint",
                "--no-container-env-override",
            }
        ),
        value_short_options=SLURM_VALUE_SHORT_OPTIONS | {"-r", "-T", "-W", "-B"},
        runs_command=True,
        processes=ProcessCount(
            total=SizeOption(("--ntasks", "-n"), None, "the task count comes from the Slurm allocation"),
            nodes=SizeOption(("--nodes", "-N"), None, "the node count comes from the Slurm allocation"),
            per_node=SizeOption(("--ntasks-per-node",), "1"),
        ),
    ),
    "mpirun": LauncherSpec(
        "mpirun",
        flag_options=frozenset(
            {
                "--allow-run-as-root",
                "--oversubscribe",
                "-oversubscribe",
                "--tag-output",
                "-tag-output",
                "--report-bindings",
                "-report-bindings",
                "--display-map",
                "-display-map",
                "-v",
                "--verbose",
                "-q",
                "--quiet",
                "--noprefix",
                "-nooversubscribe",
                "--nooversubscribe",
                "-bind-to-core",
                "-bind-to-socket",
                "-l",
                "-prepend-rank",
                "--prepend-rank",
                "-ppn-auto",
            }
        ),
        two_value_options=frozenset({"--mca", "-mca", "-gmca", "--gmca"}),
        runs_command=True,
        processes=ProcessCount(
            total=SizeOption(
                ("-np", "-n", "--np", "--n"), None, "mpirun starts one process per slot of the allocation"
            ),
            per_node=SizeOption(("-npernode", "--npernode", "-ppn"), None, "one process per slot of each node"),
        ),
    ),
}
LAUNCHERS["mpiexec"] = LAUNCHERS["mpirun"]


def _runner(name: str, values: str, flags: str = "", **kw) -> LauncherSpec:
    """An environment runner (`conda run -n env CMD`): runs CMD in a prepared environment; the
    script's exported environment reaches CMD. Only options listed in `values` take a value."""
    return LauncherSpec(
        name,
        flag_options=frozenset(flags.split()),
        value_options=frozenset(values.split()),
        runs_command=True,
        needs_launch=True,
        words=len(name.split()),
        **kw,
    )


# One entry per launcher form; each reads its own options and says where the command or program is.
LAUNCHERS.update(
    {
        # environment runners: the command after their options runs with the script's environment
        "uv run": _runner(
            "uv run",
            "--with --with-editable --with-requirements --python -p --project --directory "
            "--env-file --extra --group --only-group --no-group --package --index --default-index "
            "--index-url --extra-index-url --find-links -f --config-file --cache-dir --color "
            "--index-strategy --keyring-provider --resolution --prerelease --exclude-newer "
            "--link-mode --refresh-package --reinstall-package --upgrade-package -P --python-preference "
            "--allow-insecure-host",
        ),
        "conda run": _runner("conda run", "-n --name -p --prefix --cwd"),
        "micromamba run": _runner(
            "micromamba run", "-n --name -p --prefix -r --root-prefix -a --attach --cwd --label -e --env"
        ),
        "mamba run": _runner("mamba run", "-n --name -p --prefix --cwd"),
        "pixi run": _runner(
            "pixi run",
            "-e --environment --manifest-path --color -v --pypi-keyring-provider "
            "--concurrent-downloads --concurrent-solves --tls-root-certs",
        ),
        "poetry run": _runner("poetry run", "-C --directory -P --project"),
        "pipenv run": _runner("pipenv run", "--python --pypi-mirror"),
        "hatch run": _runner("hatch run", "-e --env"),
        # Slurm batch submission: `sbatch --wrap "CMD"` (job scripts on stdin or in a file: interpret/nested_code.py)
        "sbatch": LauncherSpec(
            "sbatch",
            runs_command=True,
            command_string=True,
            flag_options=frozenset(
                {
                    "-H",
                    "--hold",
                    "-Q",
                    "--quiet",
                    "-W",
                    "--wait",
                    "--parsable",
                    "--exclusive",
                    "--requeue",
                    "--no-requeue",
                    "-O",
                    "--overcommit",
                    "-v",
                    "--verbose",
                    "--test-only",
                    "--spread-job",
                    "--contiguous",
                    "--use-min-nodes",
                    "-k",
                    "--no-kill",
                    "-h",
                    "--help",
                }
            ),
            value_short_options=SLURM_VALUE_SHORT_OPTIONS | {"-a", "-b", "-F", "-M"},
        ),
        # remote shells: the command string runs on another machine, with that machine's environment
        "ssh": LauncherSpec(
            "ssh",
            runs_command=True,
            remote=True,
            command_string=True,
            positionals=1,
            value_options=frozenset(
                {
                    "-p",
                    "-i",
                    "-l",
                    "-o",
                    "-F",
                    "-J",
                    "-L",
                    "-R",
                    "-D",
                    "-W",
                    "-b",
                    "-c",
                    "-E",
                    "-e",
                    "-I",
                    "-m",
                    "-O",
                    "-Q",
                    "-S",
                    "-w",
                    "-B",
                }
            ),
        ),
        "pdsh": LauncherSpec(
            "pdsh",
            runs_command=True,
            remote=True,
            command_string=True,
            value_options=frozenset({"-w", "-x", "-R", "-l", "-t", "-u", "-f", "-g", "-X", "-e", "-F", "-o", "-N"}),
        ),
        # Ray: `ray job submit [opts] -- CMD` runs CMD on the cluster (its runtime environment, not ours)
        "ray job submit": LauncherSpec(
            "ray job submit",
            runs_command=True,
            remote=True,
            words=3,
            value_options=frozenset(
                {
                    "--address",
                    "--job-id",
                    "--submission-id",
                    "--runtime-env",
                    "--runtime-env-json",
                    "--working-dir",
                    "--metadata-json",
                    "--entrypoint-num-cpus",
                    "--entrypoint-num-gpus",
                    "--entrypoint-memory",
                    "--entrypoint-resources",
                    "--log-style",
                    "--log-color",
                    "--headers",
                    "--verify",
                }
            ),
        ),
        # launchers that start a Python program (`*.py`) after their own options
        "composer": LauncherSpec(
            "composer",
            module_flags=frozenset({"-m", "--module"}),
            flag_options=frozenset({"--stdout", "-v", "--verbose", "-m", "--module", "--no_python", "--no-python"}),
            processes=ProcessCount(total=SizeOption(("-n", "--nproc"), None, "composer starts one process per GPU")),
        ),
        "colossalai run": LauncherSpec(
            "colossalai run", words=2, flag_options=frozenset({"-m", "--module"}), module_flags=frozenset({"-m"})
        ),
        "lightning run model": LauncherSpec("lightning run model", words=3),
        # `tune run [torchrun options] RECIPE --config CFG key=value`: the recipe is the program
        "tune run": LauncherSpec("tune run", words=2, flag_options=frozenset({"--standalone"})),
        # tools that are the program themselves: their flags are the training settings
        "llamafactory-cli train": LauncherSpec("llamafactory-cli train", words=2, program_is_tool=True),
        "swift sft": LauncherSpec("swift sft", words=2, program_is_tool=True),
        "swift pt": LauncherSpec("swift pt", words=2, program_is_tool=True),
        "swift rlhf": LauncherSpec("swift rlhf", words=2, program_is_tool=True),
        "megatron sft": LauncherSpec("megatron sft", words=2, program_is_tool=True),
        "megatron pt": LauncherSpec("megatron pt", words=2, program_is_tool=True),
        "megatron rlhf": LauncherSpec("megatron rlhf", words=2, program_is_tool=True),
    }
)
# multi-word launcher names by their first word
_BY_FIRST_WORD: dict[str, list[str]] = {}
for _name in LAUNCHERS:
    if " " in _name:
        _BY_FIRST_WORD.setdefault(_name.split()[0], []).append(_name)
TORCH_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?$")
PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "--check-hash-based-pycs"})


@record
class Option:
    """One option of a launcher (or flag of the program): its token and argument values."""

    name: str
    name_value: Value
    args: list[Value] = factory(list)


@record
class LaunchParts:
    launchers: list[str]  # outermost first, e.g. ["srun", "torchrun"]
    launcher_options: list[tuple[str, Option]]  # (launcher name, option)
    program: str | None  # "train.py" / "-m pkg.mod" / None when unknown
    program_value: Value | None
    program_args: list[Value]
    command: list[Value]  # everything from the outermost launcher on


def basename(value: Value) -> str | None:
    if not isinstance(value, Known):
        return None
    return os.path.basename(value.text)


def launcher_name(fields: list[Value]) -> str | None:
    """The launcher this command starts with, or None when it is not a training launch."""
    if not fields:
        return None
    name = basename(fields[0])
    if name is None:
        return None
    if name in LAUNCHERS or name == "torchrun":
        spec = LAUNCHERS.get(name)
        if spec is not None and spec.needs_launch and not _runs_launch(spec, fields):
            return None
        return name
    for multi in _BY_FIRST_WORD.get(name, ()):
        want = multi.split()[1:]
        got = [f.text if isinstance(f, Known) else None for f in fields[1 : 1 + len(want)]]
        if got == want:
            spec = LAUNCHERS[multi]
            if spec.needs_launch and not _runs_launch(spec, fields):
                return None
            return multi
    if _PYTHON.match(name):
        return "python" if _python_runs_program(fields[1:]) else None
    return None


def _runs_launch(spec: LauncherSpec, fields: list[Value]) -> bool:
    """An environment runner is a launch only when it runs one (`conda run -n x pip list` is not)."""
    _, k, _ = _split_options(spec, fields, spec.words)
    if k >= len(fields):
        return False
    inner = fields[k]
    if isinstance(inner, Known) and inner.text.endswith(".py"):
        return True
    return launcher_name(fields[k:]) is not None or (
        isinstance(inner, Known)
        and os.path.basename(inner.text) in ("bash", "sh")
        and any(is_shell_c(f) for f in fields[k + 1 : k + 3])
    )


def _python_runs_program(args: list[Value]) -> bool:
    """`python train.py` or `python -m mod` launch something; `python -c`, `--version`, `-m pip` don't."""
    i = 0
    while i < len(args):
        a = args[i]
        if not isinstance(a, Known):
            return True
        t = a.text
        if t == "-c" or t in ("-V", "--version", "-h", "--help"):
            return False
        if t == "-m":
            mod = args[i + 1] if i + 1 < len(args) else None
            return not (
                isinstance(mod, Known)
                and mod.text.split(".")[0] in ("pip", "venv", "ensurepip", "json", "http", "pytest")
            )
        if t in PYTHON_VALUE_OPTIONS:
            i += 2
            continue
        if t.startswith("-") and t != "-":
            i += 1
            continue
        return True
    return False


def _takes_value(spec: LauncherSpec, opt: str) -> bool:
    if opt in spec.flag_options:
        return False
    if spec.value_options is not None:
        return opt in spec.value_options
    if spec.value_short_options is not None and len(opt) == 2 and opt[0] == "-" and opt[1] != "-":
        return opt in spec.value_short_options
    return True


def _is_option(v: Value) -> bool:
    return (isinstance(v, Known) and v.text.startswith("-") and len(v.text) > 1) or unknown_option(v) is not None


def unknown_option(v: Value) -> str | None:
    """`--master_port="$P"` with P unknown: the word is unknown, but its `--name=` part is not."""
    if isinstance(v, Unknown) and v.parts and v.parts[0][0]:
        m = re.match(r"(--?[A-Za-z][\w.-]*)=", v.parts[0][0])
        if m:
            return m.group(1)
    return None


def _ends_options(v: Value) -> bool:
    """A word no launcher option takes as its value: another option (argparse never takes `--x` as a
    value), `--`, or the `*.py` program. `--nproc_per_node $UNSET train.py` leaves the option empty
    (bash drops the unquoted empty word) instead of swallowing the program."""
    if not isinstance(v, Known):
        return unknown_option(v) is not None
    t = v.text
    if t.startswith("-") and len(t) > 1 and not re.fullmatch(r"-\d+(\.\d+)?", t):
        return True
    return t.endswith(".py")


def _split_options(spec: LauncherSpec, fields: list[Value], start: int) -> tuple[list[Option], int, bool]:
    """Read the launcher's options from fields[start:]; return them, the index of the first non-option,
    and whether a module flag (`-m`) was seen."""
    options: list[Option] = []
    module = False
    i = start
    n = len(fields)
    while i < n:
        f = fields[i]
        if not _is_option(f):
            break
        name = unknown_option(f)
        if name is not None and isinstance(f, Unknown):  # (a name implies an Unknown word)
            options.append(Option(name, f, [Unknown(f.reason, f.span)]))
            i += 1
            continue
        assert isinstance(f, Known)  # an option that is not a partly-unknown word is known text
        text = f.text
        if text == "--":
            i += 1
            break
        if "=" in text and text.startswith("--"):
            name, _, val = text.partition("=")
            options.append(Option(name, f, [Known(val, f.span)]))
            i += 1
            continue
        if text in spec.module_flags:
            module = True
            options.append(Option(text, f, []))
            i += 1
            continue
        if text in spec.two_value_options:
            options.append(Option(text, f, fields[i + 1 : i + 3]))
            i += 3
            continue
        if _takes_value(spec, text) and i + 1 < n and not _ends_options(fields[i + 1]):
            if spec.value_short_options is not None and len(text) > 2 and text[1] != "-":
                # srun -N2 style: the value is glued to a short option
                options.append(Option(text[:2], f, [Known(text[2:], f.span)]))
                i += 1
                continue
            options.append(Option(text, f, [fields[i + 1]]))
            i += 2
            continue
        if _takes_value(spec, text) and text not in spec.module_flags:
            # its value is missing (an unset variable bash dropped): what the launcher does is unknown
            options.append(
                Option(text, f, [Unknown(f"{text} is given no value (an empty unquoted expansion vanishes)", f.span)])
            )
            i += 1
            continue
        options.append(Option(text, f, []))
        i += 1
    if spec.positionals and i < n:
        options.append(Option("<positional>", fields[i], list(fields[i : i + spec.positionals])))
        i += spec.positionals
    return options, i, module


def split_launch(fields: list[Value]) -> LaunchParts:
    """Separate the launchers' own options from the training program and its arguments."""
    launchers: list[str] = []
    launcher_options: list[tuple[str, Option]] = []
    i = 0
    command = list(fields)
    while i < len(fields):
        name = launcher_name(fields[i:])
        if name is None:
            break
        if name == "python":
            python = basename(fields[i]) or name  # (a launcher name comes from a known word)
            j = i + 1
            module = None
            while j < len(fields) and isinstance(fields[j], Known) and _is_option(fields[j]):
                t = fields[j].text or ""  # (a Known word: never None)
                if t == "-m":
                    module = fields[j + 1] if j + 1 < len(fields) else None
                    j += 2
                    break
                launcher_options.append(
                    (python, Option(t, fields[j], [fields[j + 1]] if t in PYTHON_VALUE_OPTIONS else []))
                )
                j += 2 if t in PYTHON_VALUE_OPTIONS else 1
            if module is not None:
                if isinstance(module, Known) and module.text in TORCH_MODULES:
                    launchers.append(f"{python} -m {module.text}")
                    spec = LAUNCHERS["torchrun"]
                    opts, k, is_mod = _split_options(spec, fields, j)
                    launcher_options.extend((launchers[-1], o) for o in opts)
                    return _program_at(launchers, launcher_options, fields, k, is_mod, command)
                launchers.append(python)
                return LaunchParts(launchers, launcher_options, _module_name(module), module, fields[j:], command)
            launchers.append(python)
            return _program_at(launchers, launcher_options, fields, j, False, command)
        spec = LAUNCHERS[name]
        launchers.append(name)
        if spec.program_is_tool:
            # `swift sft --model ...`: the tool is the program; everything after its name is its flags
            return LaunchParts(launchers, launcher_options, name, fields[i], fields[i + spec.words :], command)
        start = i + (2 if name == "accelerate launch" else spec.words)
        opts, k, is_mod = _split_options(spec, fields, start)
        launcher_options.extend((name, o) for o in opts)
        if spec.runs_command:
            if k < len(fields) and launcher_name(fields[k:]) is not None:
                i = k
                continue
            return _program_at(launchers, launcher_options, fields, k, False, command)
        return _program_at(launchers, launcher_options, fields, k, is_mod, command)
    return LaunchParts(launchers, launcher_options, None, None, fields[i:], command)


def is_shell_c(v: Value) -> bool:
    """`-c`, or short options bundled with it (`bash -lc`, `bash -ec '...'`)."""
    return (
        isinstance(v, Known)
        and re.fullmatch(r"-[a-zA-Z]*c[a-zA-Z]*", v.text) is not None
        and not v.text.startswith("--")
    )


def inner_shell_command(fields: list[Value]) -> int | None:
    """Index of `bash -c ...` run by a launcher that runs a command (`srun ... bash -c "..."`)."""
    name = launcher_name(fields)
    spec = LAUNCHERS.get(name) if name else None
    i = 0
    while spec is not None and spec.runs_command:
        _, k, _ = _split_options(spec, fields, i + 1)
        if k >= len(fields):
            return None
        head = basename(fields[k])
        if head in ("bash", "sh") and any(is_shell_c(f) for f in fields[k + 1 : k + 3]):
            return k
        name = launcher_name(fields[k:])
        spec = LAUNCHERS.get(name) if name else None
        i = k
    return None


def _module_name(v: Value) -> str | None:
    return f"-m {v.text}" if isinstance(v, Known) else None


def _program_at(launchers, launcher_options, fields, k, is_module, command) -> LaunchParts:
    if k >= len(fields):
        return LaunchParts(launchers, launcher_options, None, None, [], command)
    prog = fields[k]
    name = None
    if isinstance(prog, Known):
        name = f"-m {prog.text}" if is_module else prog.text
    return LaunchParts(launchers, launcher_options, name, prog, fields[k + 1 :], command)


# ---------------------------------------------------------------------------------------------- process counts


class Count:
    """A process count with its provenance: `lo`/`hi` (equal unless the launcher was given a range such
    as torchrun's elastic `--nnodes 1:4` or srun's `-N 2-4`), or `unknown` (why); `source` says which
    option (or default) it came from, `span` where it was written."""

    __slots__ = ("lo", "hi", "unknown", "source", "span", "not_in_script")

    def __init__(
        self,
        lo: int | None = None,
        hi: int | None = None,
        unknown: str | None = None,
        source: str = "",
        span=None,
        not_in_script: bool = False,
    ) -> None:
        self.lo, self.hi, self.unknown, self.source, self.span = lo, hi, unknown, source, span
        # unknown because the script does not say (a hostfile, the accelerate config, the allocation),
        # not because it says something packlint cannot evaluate: nothing to pass with --env
        self.not_in_script = not_in_script

    @property
    def known(self) -> bool:
        return self.unknown is None

    def times(self, other: Count, source: str) -> Count:
        if not self.known:
            return self if self.span is not None or other.known or other.span is None else other
        if not other.known:
            return other
        assert self.lo is not None and self.hi is not None and other.lo is not None and other.hi is not None
        return Count(self.lo * other.lo, self.hi * other.hi, None, source)

    def to_json(self) -> dict:
        d: dict = {}
        if self.unknown is not None:
            d["unknown"] = self.unknown
            if self.not_in_script:
                d["not_in_script"] = True
        elif self.lo == self.hi:
            d["value"] = self.lo
        else:
            d["range"] = [self.lo, self.hi]
        d["source"] = self.source
        if self.span is not None:
            d.update(self.span.to_json())
        return d


@record
class ProcessLayout:
    """Nodes, processes per node and world size of one launch (each a Count)."""

    launcher: str | None
    nodes: Count
    per_node: Count
    world: Count


_COUNT = re.compile(r"\s*(\d+)\s*(?:[:-]\s*(\d+))?\s*")


def _read_count(owner: str, size: SizeOption | None, opts: dict[str, Option]) -> Count:
    if size is None:
        return Count(unknown=f"{owner} has no such option", source=owner)
    opt = next((opts[a] for a in size.names if a in opts), None)
    if opt is None or not opt.args:
        if size.default is None:
            return Count(unknown=size.why_unknown or f"{size.names[0]} not given", source=owner, not_in_script=True)
        return Count(int(size.default), int(size.default), None, f"{owner} default ({size.names[0]} not given)")
    v = opt.args[0]
    where = f"{owner} {opt.name}"
    if not isinstance(v, Known):
        return Count(unknown=f"{opt.name} is unknown ({v.reason})", source=where, span=v.span)
    if v.origin and v.origin.startswith("cluster-default:"):
        name = v.origin.split(":", 1)[1]
        return Count(
            unknown=f"{opt.name} comes from ${name}, which the cluster sets at run time "
            f"(the script's fallback is {v.text!r}; pass --env {name}=N to decide)",
            source=where,
            span=v.span,
        )
    m = _COUNT.fullmatch(v.text)
    if not m:
        return Count(unknown=f"{opt.name} {v.text!r} is not a number", source=where, span=v.span)
    lo = int(m.group(1))
    hi = int(m.group(2) or m.group(1))
    return Count(min(lo, hi), max(lo, hi), None, where, v.span)


def process_layout(launchers: list[str], launcher_options: list[tuple[str, Option]]) -> ProcessLayout:
    """Nodes x processes per node = world size, from the innermost launcher that starts several
    processes (torchrun: --nnodes x --nproc-per-node; srun: --ntasks, else --nodes x --ntasks-per-node;
    plain `python` under srun: srun's counts; plain `python` alone: 1)."""
    for name in reversed(launchers):
        key = "torchrun" if " -m torch." in name else name
        spec = LAUNCHERS.get(key)
        if spec is None or spec.processes is None:
            continue
        opts: dict[str, Option] = {}
        for owner, opt in launcher_options:
            if owner == name:
                opts[opt.name] = opt  # last wins
        pc = spec.processes
        nodes = _read_count(name, pc.nodes, opts)
        per_node = _read_count(name, pc.per_node, opts)
        total = _read_count(name, pc.total, opts) if pc.total is not None else None
        if total is not None and (total.known or total.span is not None):
            world = total  # given explicitly (or given but unknown)
        else:
            world = nodes.times(per_node, f"{name}: nodes x processes per node")
            if not world.known and total is not None and not nodes.known and nodes.span is None:
                world = total  # neither given: the allocation decides; say so
        return ProcessLayout(name, nodes, per_node, world)
    if launchers and _PYTHON.match(launchers[-1]):
        # one process here; but a script with a plain `python train.py` is often itself started once
        # per rank (`srun bash train.sh`, an sbatch wrapper, a platform's launcher)
        why = (
            f"a plain {launchers[-1]} launch starts one process, but the script itself may be "
            "started once per rank (srun, mpirun, a job platform)"
        )
        one = Count(unknown=why, source=launchers[-1], not_in_script=True)
        return ProcessLayout(launchers[-1], one, one, one)
    none = Count(unknown="no launcher option gives the number of processes")
    return ProcessLayout(None, none, none, none)


def world_size(launchers: list[str], launcher_options: list[tuple[str, Option]]) -> Value | None:
    """The number of processes as a shell value (the upper end of an elastic range); a plain
    `python` launch counts as 1 here."""
    if (
        launchers
        and _PYTHON.match(launchers[-1])
        and all(LAUNCHERS.get(n) is None or LAUNCHERS[n].processes is None for n in launchers if " -m torch." not in n)
    ):
        return Known("1")
    world = process_layout(launchers, launcher_options).world
    if world.known:
        return Known(str(world.hi))
    return Unknown(world.unknown or "unknown", world.span)


# ------------------------------------------------------------------------------- Slurm and remote shells


def command_string(fields: list[Value]) -> tuple[LauncherSpec, int, list[Value]] | None:
    """`ssh HOST 'cmd'`, `pdsh -w H cmd ...`, `sbatch --wrap 'cmd'`: (spec, end of the launcher's own
    words, the words of the command string). None when this is no such launch."""
    name = launcher_name(fields)
    spec = LAUNCHERS.get(name or "")
    if spec is None or not spec.command_string:
        return None
    options, k, _ = _split_options(spec, fields, spec.words)
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
    options, k, _ = _split_options(LAUNCHERS["sbatch"], fields, 1)
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


_SBATCH_LINE = re.compile(r"^#SBATCH\s+(.*)$")


def sbatch_header_env(text: str) -> dict[str, str]:
    """What Slurm sets in a job from the script's `#SBATCH` headers (read until the first command, as
    sbatch does): node, task and GPU counts, only where the header gives one exact number."""
    opts: dict[str, str] = {}
    for line in text.splitlines():
        s = line.strip()
        if not s or (s.startswith("#") and not s.startswith("#SBATCH")):
            continue
        m = _SBATCH_LINE.match(s)
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
                m = re.fullmatch(r"(?:[\w-]+:)?(\d+)", v)
                return int(m.group(1)) if m else None
        return None

    nodes = number("--nodes", "-N")
    per_node = number("--ntasks-per-node")
    tasks = number("--ntasks", "-n")
    gpus_node = number("--gpus-per-node")
    gres = opts.get("--gres")
    if gpus_node is None and gres:
        m = re.fullmatch(r"gpu(?::[\w-]+)?:(\d+)", gres)
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
