"""Precision of the stack rule packs (issue 21) on the stacks' own examples: run `packlint check` over a
stack checkout's example scripts, and over each example config file launched the way the stack's docs
launch it (a one-line wrapper script written beside the checkout's root), then count the findings of the
stack rules (PK4xx/PK5xx) per rule and print every one of them for reading.

    python tools/stack_precision.py CHECKOUT STACK [--list]

STACK picks the launch form of config files: llamafactory (`llamafactory-cli train CFG`), trl
(`trl sft --config CFG`), axolotl (`axolotl train CFG`), nemo-rl (`python examples/run_X.py --config CFG`),
torchtitan (`torchrun -m torchtitan.train --job.config_file CFG`), xtuner (`xtuner train CFG`); any
other STACK checks the example shell scripts only. The checkout is not modified except for the wrapper
scripts under CHECKOUT/.pl_wrap/ (removed afterwards). Nothing is executed."""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
from collections import Counter

CONFIG_FORMS = {
    "llamafactory": (
        ["examples/**/*.yaml"],
        "llamafactory-cli train {cfg}",
        ["examples/accelerate/", "examples/deepspeed/"],
    ),
    "trl": (["examples/cli_configs/*.yaml"], "trl sft --config {cfg}", []),
    "axolotl": (
        ["examples/**/*.yml", "examples/**/*.yaml"],
        "axolotl train {cfg}",
        ["deepspeed_configs/", "accelerate"],
    ),
    "nemo-rl": (["examples/configs/*.yaml"], "uv run python examples/{runner} --config {cfg}", []),
    "xtuner": (["xtuner/configs/**/*.py"], "NPROC_PER_NODE=8 xtuner train {cfg}", ["__init__.py", "/_base_/"]),
    "torchtitan": (
        ["torchtitan/**/train_configs/*.toml"],
        "torchrun --nproc_per_node 8 -m torchtitan.train --job.config_file {cfg}",
        [],
    ),
}
SCRIPT_GLOBS = ["examples/**/*.sh", "internvl_chat/shell/**/*.sh", "scripts/**/*.sh", "run_train.sh"]


def _nemo_rl_runner(cfg: str) -> str:
    base = os.path.basename(cfg)
    for algo in ("grpo", "sft", "dpo", "distillation", "rm", "vlm_grpo"):
        if base.startswith(algo):
            return f"run_{algo}.py"
    return "run_grpo.py"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("checkout")
    ap.add_argument("stack")
    ap.add_argument("--list", action="store_true", help="print every stack-rule finding")
    ap.add_argument("--infos", action="store_true", help="count the stack rules' infos too (PK433, PK477, PK478, ...)")
    args = ap.parse_args(argv)
    root = os.path.abspath(args.checkout)
    scripts = sorted({p for g in SCRIPT_GLOBS for p in glob.glob(os.path.join(root, g), recursive=True)})
    wrap_dir = os.path.join(root, ".pl_wrap")
    shutil.rmtree(wrap_dir, ignore_errors=True)
    wrappers: dict[str, str] = {}
    form = CONFIG_FORMS.get(args.stack)
    if form is not None:
        os.makedirs(wrap_dir)
        globs, command, skip = form
        cfgs = sorted({p for g in globs for p in glob.glob(os.path.join(root, g), recursive=True)})
        for i, cfg in enumerate(cfgs):
            rel = os.path.relpath(cfg, root)
            if any(s in rel for s in skip):
                continue
            line = command.format(cfg=rel, runner=_nemo_rl_runner(rel))
            # the wrapper sits in the checkout root's .pl_wrap/: `cd` to the root as the docs do
            path = os.path.join(wrap_dir, f"w{i:04d}.sh")
            with open(path, "w") as fh:
                fh.write(f"#!/bin/bash\ncd {root}\n{line}\n")
            wrappers[path] = rel
    targets = scripts + sorted(wrappers)
    counts: Counter = Counter()
    fired: list[tuple[str, str, str]] = []
    env = dict(os.environ)
    for start in range(0, len(targets), 200):
        batch = targets[start : start + 200]
        proc = subprocess.run(
            [sys.executable, "-m", "packlint", "check", "--format", "json", "--no-cache", *batch],
            capture_output=True,
            text=True,
            cwd=root,
            env=env,
        )
        if proc.returncode not in (0, 1):
            print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
            return 2
        try:
            data = json.loads(proc.stdout)
        except json.JSONDecodeError:
            print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
            return 2
        findings = data.get("findings", [])
        for f in findings:
            code = f.get("code", "")
            if not (code.startswith("PK4") or code.startswith("PK5")):
                continue
            if f.get("severity") == "info" and not args.infos:
                continue
            file = os.path.join(root, f.get("path") or "")
            where = wrappers.get(file, os.path.relpath(file, root))
            if file in wrappers and f.get("line") != 3:  # a finding inside the config file itself
                where = os.path.relpath(file, root)
            counts[code] += 1
            fired.append((code, where, f.get("message", "")))
    shutil.rmtree(wrap_dir, ignore_errors=True)
    print(
        f"{args.checkout}: {len(scripts)} scripts, {len(wrappers)} config files; "
        f"stack-rule findings: {sum(counts.values())}"
    )
    for code, n in sorted(counts.items()):
        print(f"  {code}: {n}")
    if args.list:
        for code, where, msg in sorted(fired):
            print(f"{code} {where}: {msg[:220]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
