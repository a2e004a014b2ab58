"""Why a config file the checkout does not hold may still be there when the job runs (issue 26): the
machine's, not the checkout's, to decide. A premise of packlint.evidence ("machine"), so that PK601
"config file missing" is at most an info on it:

- an absolute path outside the checkout (`/root/ld/ld_project/LLaMA-Factory/examples/x.yaml`): a file of
  the machine the author ran on;
- a relative path that a directory of the checkout holds (`configs/deepspeed/ds_zero2.json` under
  `jz/`): the script is run from that directory, which the checkout does not say;
- a path the checkout's `.gitignore` ignores (`/data`): made on the machine when the job is set up;
- a path under a git submodule of the checkout's `.gitmodules` whose directory is empty or absent
  (`benchmarks/MCP-Universe/...` in TIGER-AI-Lab/verl-tool): fetched by `git submodule update --init`;
- a relative path for a stack launch whose README works inside a clone of that stack made at set-up
  (`cd LLaMA-Factory`): the clone's file (`stack_clone_premise`).

The checkout is listed once per root, bounded (MAX_FILES files, .git and the like skipped)."""

from __future__ import annotations

import os
import re

from packlint import evidence
from packlint.caches import memo

MAX_FILES = 20_000
_SKIP = {".git", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache"}
_LISTED: dict[str, tuple[str, ...]] = memo()


def checkout_root(dirs: list[str]) -> str | None:
    """The directory of `dirs` (the script's, up to its checkout root) that holds `.git`: only one at or
    above the script's own directory (`dirs[0]`), never another tree the current directory is in; in a tree
    without `.git`, the directory named on the command line that holds the script."""
    if not dirs:
        return None
    first = os.path.abspath(dirs[0]).rstrip("/") + "/"
    found = next(
        (
            d
            for d in dirs
            if os.path.exists(os.path.join(d, ".git")) and first.startswith(os.path.abspath(d).rstrip("/") + "/")
        ),
        None,
    )
    if found is None:
        # no `.git` above the script: the tree named on the command line is its checkout (scope.named_top)
        from packlint.scope import named_among

        found = named_among(dirs)
    return found


def missing_premise(path_text: str, dirs: list[str]) -> evidence.Premise | None:
    """Why a config file not found beside the script, up to its checkout root or in the working
    directory depends on the machine; None: the checkout decides (it is missing)."""
    root = checkout_root(dirs)
    if root is None:
        return None
    ignored = _ignored_by_checkout(path_text, dirs, root) or submodule_premise(path_text, dirs, root)
    if ignored is not None:
        return ignored
    if os.path.isabs(path_text):
        norm = os.path.normpath(path_text)
        if not norm.startswith(root.rstrip("/") + "/"):
            return (
                evidence.MACHINE,
                f"{path_text} is an absolute path outside the checkout, on the machine it runs on",
            )
        return None
    rel = os.path.normpath(path_text)
    if rel.startswith(".."):
        return None
    holder = _holder(root, rel)
    if holder is not None:
        run_dir = holder[: -len(rel)].rstrip("/")
        return (evidence.MACHINE, f"the checkout holds it as {holder}: it is there when the job runs from {run_dir}/")
    return None


def _ignored_by_checkout(path_text: str, dirs: list[str], root: str) -> evidence.Premise | None:
    """A path the checkout's `.gitignore` ignores (`/data`, `checkpoints/`): a file made on the machine
    when the job is set up (downloaded, generated), which a checkout never holds (OpenGVLab/InternVideo's
    `../../../data/gym/annotations/annotation.json`, fetched by the `download_annotations.sh` beside it)."""
    from packlint.discover import checkout_ignores

    for d in dirs if not os.path.isabs(path_text) else [root]:
        where = os.path.normpath(os.path.join(d, path_text))
        by = checkout_ignores(where, root)
        if by is not None:
            shown = os.path.relpath(by, root)
            return (evidence.MACHINE, f"the checkout's {shown} ignores {path_text}: a file made when the job is set up")
    return None


def submodule_premise(path_text: str, dirs: list[str], root: str) -> evidence.Premise | None:
    """A path under a git submodule of the checkout that is not checked out here (its directory empty or
    absent): `git submodule update --init` (or a `--recursive` clone) makes it at set-up."""
    from packlint.discover import empty_ancestor, unfetched_submodule

    bases = dirs if not os.path.isabs(path_text) else [root]
    where = [os.path.normpath(os.path.join(d, path_text)) for d in bases]
    sub = next((s for w in where if (s := unfetched_submodule(w, root)) is not None), None)
    if sub is not None:
        return (
            evidence.MACHINE,
            f"{path_text} is under the git submodule {sub}, not checked out here: "
            "`git submodule update --init` fetches it at set-up",
        )
    empty = next((e for w in where if (e := empty_ancestor(w, root)) is not None), None)
    if empty is not None:
        return (
            evidence.MACHINE,
            f"{path_text} is under {empty}/, an empty directory in this checkout (git leaves a submodule or a "
            "repository added inside this one empty): what it holds is made at set-up",
        )
    return None


def listed(root: str) -> tuple[str, ...]:
    """The checkout's files, relative to its root (bounded: MAX_FILES; linked folders and _SKIP not entered), once per
    root and run: every search of the checkout's files reads this one listing."""
    files = _LISTED.get(root)
    if files is None:
        files = _LISTED[root] = _list(root)
    return files


def _holder(root: str, rel: str) -> str | None:
    files = listed(root)
    suffix = "/" + rel
    return next((f for f in files if f.endswith(suffix)), None)


def _list(root: str) -> tuple[str, ...]:
    out: list[str] = []
    for here, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if d not in _SKIP and not os.path.islink(os.path.join(here, d))]
        rel_here = os.path.relpath(here, root)
        for n in names:
            out.append(n if rel_here == "." else f"{rel_here}/{n}")
            if len(out) >= MAX_FILES:
                return tuple(sorted(out))
    return tuple(sorted(out))


# `cd LLaMA-Factory`, `git clone https://github.com/hiyouga/LLaMA-Factory.git [DIR]` in the checkout's README
_README_CD = re.compile(r"(?m)^[ \t>$]*cd[ \t]+([\w.-]+)(?:/[\w./-]*)?[ \t]*(?:&&.*)?$")
_README_CLONE = re.compile(
    r"(?m)\bgit[ \t]+clone[ \t]+(?:-[-\w=]+(?:[ \t]+[^\s/-][^\s/]*)?[ \t]+)*"  # options, a value each at most
    r"\S*?/([\w.-]+?)(?:\.git)?/?(?:[ \t]+([\w.-]+))?[ \t]*$"  # the URL's last part, then the directory if given
)
_README_BYTES = 1_000_000


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def stack_clone_premise(path_text: str, dirs: list[str], stack_names: tuple[str, ...]) -> evidence.Premise | None:
    """A relative path the checkout does not hold, for a launch of a stack (LLaMA-Factory's `llamafactory-cli`)
    whose README works inside a clone of that stack made at set-up (`git clone .../LLaMA-Factory`, `cd
    LLaMA-Factory`: cuiIRISA/finetune-qwen2-vl-7b-LLaMA-Factory copies its configs into the clone, and
    `deepspeed: examples/deepspeed/ds_z0_config.json` is the clone's file). The job starts in that directory, the
    machine's: None where the checkout holds that directory or is the stack itself."""
    root = checkout_root(dirs)
    wanted = {_norm(s) for s in stack_names if s}
    if root is None or not wanted or os.path.isabs(path_text) or os.path.normpath(path_text).startswith(".."):
        return None
    from packlint.safe_io import read_regular

    try:
        names = sorted(n for n in os.listdir(root) if n.lower().startswith("readme"))
    except OSError:
        return None
    for name in names:
        data = read_regular(os.path.join(root, name), _README_BYTES)
        text = data.decode("utf-8", "replace") if data is not None else ""
        said = [(m.group(0).strip(), m.group(1)) for m in _README_CD.finditer(text)]
        said += [(m.group(0).strip(), m.group(2) or m.group(1)) for m in _README_CLONE.finditer(text)]
        for command, clone in said:
            if _norm(clone) in wanted and not os.path.isdir(os.path.join(root, clone)) and not _is_stack(root, wanted):
                return (
                    evidence.MACHINE,
                    f"the checkout's {name} runs the stack in {clone}/ (`{command[:80]}`), a clone made at set-up: "
                    f"{path_text} may be that directory's",
                )
    return None


def _is_stack(root: str, wanted: set[str]) -> bool:
    """The checkout is the stack's own source (a fork: `src/llamafactory/`): its missing file is missing."""
    for base in (root, os.path.join(root, "src")):
        try:
            if any(_norm(n) in wanted and os.path.isdir(os.path.join(base, n)) for n in os.listdir(base)):
                return True
        except OSError:
            continue
    return False
