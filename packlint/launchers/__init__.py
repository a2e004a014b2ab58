"""Per-launcher knowledge, kept as data (like ShellCheck's per-command checks): which commands start a
training process, which of their options take a value, where the program starts, and how the world
size follows from their options.

- `tables.py`: the tables, one entry per launcher form grouped by family, and the shape of an entry;
- `split.py`: a launcher's own options (generic, driven by its entry); a launch command -> launchers,
  their options, the program and its arguments; containers;
- `processes.py`: nodes x processes per node = world size;
- `slurm.py`: sbatch job scripts, `--wrap`, `--export`, `#SBATCH` headers; `ssh`/`pdsh` command strings.
"""

from packlint.launchers.processes import (
    Count,
    ProcessLayout,
    layout_from_env,
    process_layout,
    program_layout,
    world_size,
)
from packlint.launchers.slurm import command_string, export_option, has_sbatch_headers, job_script, sbatch_header_env
from packlint.launchers.split import (
    LaunchParts,
    Option,
    basename,
    inner_shell_command,
    is_shell_c,
    launcher_name,
    split_container,
    split_launch,
    split_options,
    unknown_option,
)
from packlint.launchers.tables import (
    CLUSTER_VARIABLE,
    CONTAINERS,
    LAUNCHERS,
    WRAPPERS,
    ContainerSpec,
    LauncherSpec,
    ProcessCount,
    SizeOption,
)

_split_options = split_options  # the name interpret/ calls it by

__all__ = [
    "CLUSTER_VARIABLE",
    "CONTAINERS",
    "LAUNCHERS",
    "WRAPPERS",
    "ContainerSpec",
    "Count",
    "LaunchParts",
    "LauncherSpec",
    "Option",
    "ProcessCount",
    "ProcessLayout",
    "SizeOption",
    "_split_options",
    "basename",
    "command_string",
    "export_option",
    "inner_shell_command",
    "is_shell_c",
    "job_script",
    "launcher_name",
    "layout_from_env",
    "process_layout",
    "program_layout",
    "sbatch_header_env",
    "has_sbatch_headers",
    "split_container",
    "split_launch",
    "split_options",
    "unknown_option",
    "world_size",
]
