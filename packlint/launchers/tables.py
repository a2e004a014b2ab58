"""The launcher tables, as data, in one place: the shape of an entry (`LauncherSpec`, `ContainerSpec`,
`ProcessCount`), the wrappers and container runners a launch may sit in, and one `LauncherSpec` per
launcher form, grouped by family (PyTorch launchers, environment runners, cluster schedulers, remote
shells, framework command lines). The code that reads a command line with them is in split.py,
processes.py and slurm.py.
"""

from __future__ import annotations

import re

from packlint.records import record


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


@record(eq=True)
class SizeOption:
    """A launcher option that gives a process count: its spellings, the launcher's default when it is
    absent (None: not knowable from the script) and why it cannot be known then."""

    names: tuple[str, ...]
    default: str | None = None
    why_unknown: str = ""
    env: tuple[str, ...] = ()  # variables the launcher reads when the option is not given (srun: SLURM_NTASKS)


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
    # --- forms added for issue 18 (docs/launch-forms.md, "Launches people hide")
    options_until_dashdash: bool = False  # `gantry run [opts] -- CMD`: every word before `--` is its own
    env_options: frozenset[str] = frozenset()  # `gantry run --env NAME=VALUE`: sets NAME for the command


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


# PyTorch launchers: start the Python program (`*.py`, or `-m module`) after their own options
PYTHON_LAUNCHERS: dict[str, LauncherSpec] = {
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
}


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


# tools that run a Python program under them in the same process (`coverage run [-m] X`): the program
# and its flags are the launch's, as with `python`; `python -m coverage run X` reads the same way
PYTHON_RUNNERS: dict[str, LauncherSpec] = {
    "coverage run": LauncherSpec(
        "coverage run",
        words=2,
        module_flags=frozenset({"-m", "--module"}),
        flag_options=frozenset(
            {"-m", "--module", "-a", "--append", "--branch", "-p", "--parallel-mode", "-L", "--pylib", "--timid"}
        ),
        value_options=frozenset(
            {"--concurrency", "--context", "--data-file", "--include", "--omit", "--rcfile", "--source", "--debug"}
        ),
    ),
    # MindSpore's launcher: `msrun --worker_num=8 --local_worker_num=8 ... run_mindformer.py --config X`
    "msrun": LauncherSpec(
        "msrun",
        processes=ProcessCount(
            total=SizeOption(("--worker_num",), None, "msrun's --worker_num is not given"),
            per_node=SizeOption(("--local_worker_num",), None, "msrun's --local_worker_num is not given"),
        ),
    ),
}
MODULE_LAUNCHERS = {"coverage": "coverage run"}  # `python -m coverage run X` is `coverage run X`
SAME_PROCESS = frozenset({"coverage run"})  # runs the program in its own process: counted as `python`

# environment runners: the command after their options runs with the script's environment
ENVIRONMENT_RUNNERS: dict[str, LauncherSpec] = {
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
}

# cluster schedulers: what follows their options is a whole command (maybe another launcher)
CLUSTER_LAUNCHERS: dict[str, LauncherSpec] = {
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
            # srun's input environment (srun(1) INPUT ENVIRONMENT VARIABLES): in a job, the counts of
            # the job's #SBATCH headers (or an `--export`/`--env` pin) when srun's options give none
            total=SizeOption(
                ("--ntasks", "-n"),
                None,
                "the task count comes from the Slurm allocation",
                ("SLURM_NTASKS", "SLURM_NPROCS"),
            ),
            nodes=SizeOption(
                ("--nodes", "-N"),
                None,
                "the node count comes from the Slurm allocation",
                ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
            ),
            per_node=SizeOption(("--ntasks-per-node",), "1", "", ("SLURM_NTASKS_PER_NODE",)),
        ),
    ),
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
CLUSTER_LAUNCHERS["mpiexec"] = CLUSTER_LAUNCHERS["mpirun"]

# remote shells: the command string runs on another machine, with that machine's environment
REMOTE_SHELLS: dict[str, LauncherSpec] = {
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
}

# framework command lines
FRAMEWORK_CLIS: dict[str, LauncherSpec] = {
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
    # issue 20: tools whose config file and flags are the training settings (packlint/configs/stacks.toml)
    "trl sft": LauncherSpec("trl sft", words=2, program_is_tool=True),
    "trl dpo": LauncherSpec("trl dpo", words=2, program_is_tool=True),
    "trl grpo": LauncherSpec("trl grpo", words=2, program_is_tool=True),
    "trl kto": LauncherSpec("trl kto", words=2, program_is_tool=True),
    "trl reward": LauncherSpec("trl reward", words=2, program_is_tool=True),
    "axolotl train": LauncherSpec("axolotl train", words=2, program_is_tool=True),
    "axolotl preprocess": LauncherSpec("axolotl preprocess", words=2, program_is_tool=True),
    # issue 21: xtuner v0.1 takes a Python config (read by py_config_value, rules/stack_xtuner.toml)
    "xtuner train": LauncherSpec("xtuner train", words=2, program_is_tool=True),
    "megatron pt": LauncherSpec("megatron pt", words=2, program_is_tool=True),
    "megatron rlhf": LauncherSpec("megatron rlhf", words=2, program_is_tool=True),
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
}

# job submission tools: `gantry run [opts] -- CMD` (AI2's Beaker) runs CMD on the cluster, with the
# environment its `--env NAME=VALUE` options give (and the image's), not the script's
SUBMISSION_TOOLS: dict[str, LauncherSpec] = {
    "gantry run": LauncherSpec(
        "gantry run",
        words=2,
        runs_command=True,
        remote=True,
        options_until_dashdash=True,
        env_options=frozenset({"--env"}),
    ),
}


@record(eq=True)
class ProgramProcesses:
    """A training program that starts its own workers (a Ray driver): how many processes train the model
    it reports sizes for, from its own flags (or, `setting`, its merged configuration's keys)."""

    program: str  # regex searched in the launch's program (`-m openrlhf.cli.train_ppo_ray`, a path)
    nodes: tuple[str, ...]
    per_node: tuple[str, ...]
    setting: bool = False  # the names are configuration keys (Hydra), not flags
    groups: tuple[tuple[str, str, str], ...] = ()  # the other worker groups: (name, nodes flag, per-node flag)
    cite: str = ""


# issue 27: Ray job entry points, multiplied out (the actor's DeepSpeed world is what the batch rules check)
PROGRAM_PROCESSES: tuple[ProgramProcesses, ...] = (
    ProgramProcesses(
        r"openrlhf[./]cli[./]train_ppo_ray|(^|/)train_ppo_ray\.py$",
        ("--actor.num_nodes", "--actor_num_nodes"),  # v0.10.2+ dotted, before flat
        ("--actor.num_gpus_per_node", "--actor_num_gpus_per_node"),
        groups=(
            ("critic", "--critic_num_nodes", "--critic_num_gpus_per_node"),
            ("reference", "--ref_num_nodes", "--ref_num_gpus_per_node"),
            ("reward", "--reward_num_nodes", "--reward_num_gpus_per_node"),
            ("critic", "--critic.num_nodes", "--critic.num_gpus_per_node"),
            ("reference", "--ref.num_nodes", "--ref.num_gpus_per_node"),
            ("reward", "--reward.num_nodes", "--reward.num_gpus_per_node"),
        ),
        cite="OpenRLHF/OpenRLHF openrlhf/cli/train_ppo_ray.py _validate_args: "
        "actor_world_size = args.actor_num_nodes * args.actor_num_gpus_per_node",
    ),
    ProgramProcesses(
        r"verl[./]trainer[./]main_(ppo|generation)",
        ("trainer.nnodes",),
        ("trainer.n_gpus_per_node",),
        setting=True,
        cite="volcengine/verl@b178a3cd56:verl/utils/config.py:87 "
        "n_gpus = config.trainer.n_gpus_per_node * config.trainer.nnodes",
    ),
)


# One entry per launcher form; each reads its own options and says where the command or program is.
LAUNCHERS: dict[str, LauncherSpec] = {
    **PYTHON_LAUNCHERS,
    **PYTHON_RUNNERS,
    **SUBMISSION_TOOLS,
    **ENVIRONMENT_RUNNERS,
    **CLUSTER_LAUNCHERS,
    **REMOTE_SHELLS,
    **FRAMEWORK_CLIS,
}
# multi-word launcher names by their first word
BY_FIRST_WORD: dict[str, list[str]] = {}
for _name in LAUNCHERS:
    if " " in _name:
        BY_FIRST_WORD.setdefault(_name.split()[0], []).append(_name)
TORCH_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?$")
PYTHON_VALUE_OPTIONS = frozenset({"-W", "-X", "--check-hash-based-pycs"})
