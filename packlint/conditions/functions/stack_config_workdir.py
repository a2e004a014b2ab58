"""The directory a launch runs in, when its script `cd`s before it: where the stack's own code is looked
for first (a checkout holding several copies of LLaMA-Factory, Wyyyb/CriticCoT: `cd
/data/yubo/CriticCoT/360-LLaMA-Factory-sp/` then `llamafactory-cli train ../darth_scripts/x.yaml` runs the
360 fork's code, which its folder of the checkout holds).

A relative `cd` is taken from the script's directory, else the checkout's root (as a relative config path
is). An absolute one inside the checkout is that folder. An absolute one elsewhere (a path of the author's
machine) is mapped to a folder of the checkout by its tail (`<checkout-name>/<folder>` or `<folder>`):
that mapping is a premise, named in the evidence of any finding that rests on it (at most a warning).
A `cd` to a computed or unknown place leaves the working directory unknown: the script's own directory
and its parents are searched, as before."""

from __future__ import annotations

import itertools
import os
from typing import Any

from packlint.codebase.workdir import MAX_LINES_BACK, MAX_SCRIPT, find_workdir, launch_variables, resolve_cd

__all__ = ["MAX_LINES_BACK", "MAX_SCRIPT", "holds_python", "launch_workdir", "resolve_cd"]


def launch_workdir(ctx: Any) -> tuple[str | None, str | None]:
    """(the folder of the checkout the launch runs in, the premise that needs) from the nearest `cd` or
    `pushd` before the launch in its file; (None, None) when there is none or it cannot be told."""
    memo = ctx.memo.setdefault("launch_workdir", {})
    key = (ctx.launch.get("file"), ctx.launch.get("line"))
    if key not in memo:
        memo[key] = find_workdir(
            ctx.launch.get("file"), ctx.launch.get("line"), ctx.launch.get("column"), launch_variables(ctx.launch)
        )
    found: tuple[str | None, str | None] = memo[key]
    return found


def holds_python(d: str) -> bool:
    """A package directory (a Python file in it or in one of its subfolders), not a folder of configs
    named after the stack."""
    try:
        with os.scandir(d) as it:
            entries = list(itertools.islice(it, 500))
    except OSError:
        return True  # (unreadable: kept as vendored, the cautious side)
    if any(e.name.endswith(".py") and e.is_file() for e in entries):
        return True
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            try:
                with os.scandir(e.path) as sub:
                    if any(s.name.endswith(".py") for s in itertools.islice(sub, 500)):
                        return True
            except OSError:
                return True
    return False
