"""The pre-commit hook's entry point: `packlint check` on the staged files that are launch scripts.

pre-commit selects files by identify's tags, and those cannot say what `packlint check DIR` checks:
identify reads a shebang only for executable files, and knows no `.sbatch`/`.slurm`. So the hook
takes every staged text file (`types: [text]` in .pre-commit-hooks.yaml) and keeps the ones
`packlint check DIR` would pick (packlint.discover.is_script: `*.sh`, `*.bash`, a bash/sh shebang);
the hook and `packlint check .` therefore cover the same files by construction. Staged config files of
a known stack (a LLaMA-Factory/axolotl/TRL/ms-swift YAML, a DeepSpeed JSON, a torchtitan TOML,
recognised by their keys) are checked too, as `packlint check x.yaml` checks them.
"""

from __future__ import annotations

import sys

from packlint.discover import STDIN, is_script


def select_argv(argv: list[str]) -> list[str] | None:
    """`check` + the hook's options + the staged files that are scripts; None when no file is left.
    pre-commit appends the file names after the hook's `args`, so they are the trailing positionals."""
    from packlint.cli import build_parser

    try:
        args = build_parser("check").parse_args(["check", *argv])
    except SystemExit:
        return ["check", *argv]  # let `packlint check` report the usage error itself
    paths = list(args.paths)
    if not paths or argv[len(argv) - len(paths) :] != paths:
        return ["check", *argv]  # unusual order: check everything as given rather than guess
    scripts = [p for p in paths if p == STDIN or is_script(p) or _is_stack_config(p)]
    if not scripts:
        return None
    return ["check", *argv[: len(argv) - len(paths)], *scripts]


def _is_stack_config(path: str) -> bool:
    """A staged YAML/JSON/TOML that is a config file of a stack packlint knows (by its keys): checked
    as the launch its stack's command makes (issue 20). Other config files are left alone: the test a
    directory walk uses (packlint.configs.standalone.is_stack_config), so the hook and `packlint check .`
    check the same files."""
    from packlint.configs.standalone import is_stack_config

    return is_stack_config(path)


def main(argv: list[str] | None = None) -> int:
    selected = select_argv(list(sys.argv[1:] if argv is None else argv))
    if selected is None:
        return 0
    from packlint.cli import main as packlint_main

    return packlint_main(selected)


def entry() -> None:
    """The console script: `main`, then the process ends at once (packlint.cli.entry says why)."""
    from packlint.cli import exit_now

    exit_now(main())


if __name__ == "__main__":
    entry()
