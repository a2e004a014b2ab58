"""The packages a checkout installs from its sub-projects, as import-path entries (issue 26/28, third holdout).

A repository often holds a project of its own below its root, installed with `pip install -e .` from
there or by a `./sub` line of a requirements file: microsoft/LoRA's `examples/NLU/setup.py` installs a
transformers 4.4.2 from `examples/NLU/src` (`package_dir={"": "src"}`), alibaba/ROLL's
`mcore_adapter/pyproject.toml` installs `mcore_adapter` from `mcore_adapter/src` (`where = ["src"]`,
requirements: `./mcore_adapter`), aws-neuron/neuronx-nemo-megatron's `nemo/setup.py` installs the package
`nemo/nemo`. The program imports them by their installed names; without these entries packlint reads the
stack's snapshots (or nothing) instead of the code the launch runs.

The entries, nearest to the program first: each directory from the program's up to (not including) the
checkout root that holds a packaging file (setup.py, pyproject.toml, setup.cfg) gives the package
directories it declares (`package_dir`, `find_packages(where)`, `[tool.setuptools.packages.find]
where`, poetry's `from`), else its `src/` (a src layout) and itself; then the local directories the
root's requirements files install (`./sub`, `-e ./sub`). Bounded: 16 directories climbed, packaging
files read up to 256 KiB, 8 requirements files of up to 256 KiB, 32 entries.
"""

from __future__ import annotations

import itertools
import os
import re

from packlint.caches import IN_RUN, once_per_run, run_memo

PACKAGING = ("setup.py", "pyproject.toml", "setup.cfg")
MAX_CLIMB = 16
MAX_BYTES = 256 * 1024
MAX_REQ_FILES = 8
MAX_ENTRIES = 32

_DECLARED = (
    re.compile(r"""package_dir\s*=\s*\{\s*(?:''|"")\s*:\s*['"]([^'"]+)['"]"""),  # setup.py
    re.compile(r"""find_(?:namespace_)?packages\(\s*(?:where\s*=\s*)?['"]([^'"]+)['"]"""),  # setup.py
    re.compile(r"""^\s*where\s*=\s*\[?\s*['"]?([\w./-]+)""", re.M),  # pyproject / setup.cfg
    re.compile(r"""package-dir\s*=\s*\{\s*(?:''|"")\s*=\s*['"]([^'"]+)['"]"""),  # pyproject (setuptools)
    re.compile(r"""\bfrom\s*=\s*['"]([^'"]+)['"]"""),  # pyproject (poetry: {include = "x", from = "src"})
    re.compile(r"""^\s*package_dir\s*=\s*\n?\s*=\s*([\w./-]+)""", re.M),  # setup.cfg
)


def _read(path: str) -> str | None:
    from packlint.safe_io import read_regular

    data = read_regular(path, MAX_BYTES)
    return None if data is None else data.decode("utf-8", "replace")


def package_dirs(d: str) -> list[str]:
    """The directories the packaging files of `d` install packages from (empty when `d` has none); once per run
    (every launch's stack look-up asks it of the checkout and its sub-projects)."""
    return list(once_per_run(_PACKAGE_DIRS, d, lambda: _package_dirs(d)))


_PACKAGE_DIRS: dict[str, list[str]] = run_memo()


def _package_dirs(d: str) -> list[str]:
    texts = [t for t in (_read(os.path.join(d, f)) for f in PACKAGING if os.path.isfile(os.path.join(d, f))) if t]
    if not texts:
        return []
    declared: list[str] = []
    for text in texts:
        for rx in _DECLARED:
            for m in rx.finditer(text):
                rel = m.group(1).strip().strip("/")
                if rel in ("", ".") or rel.startswith("..") or os.path.isabs(rel):
                    continue
                cand = os.path.normpath(os.path.join(d, rel))
                if os.path.isdir(cand) and cand not in declared:
                    declared.append(cand)
    if declared:
        return declared
    src = os.path.join(d, "src")
    return ([src] if os.path.isdir(src) else []) + [d]


_REQ_LOCAL = re.compile(r"^\s*(?:-e\s+|--editable\s+)?(?:file:)?(\.{1,2}/[^\s;#\[]*|[\w.-]+/)\s*(?:[#;\[].*)?$")


def requirement_dirs(root: str) -> list[str]:
    """The local directories the requirements files of `root` install (`./mcore_adapter`, `-e ./sub`)."""
    out: list[str] = []
    try:
        names = sorted(n for n in os.listdir(root) if n.startswith("requirements") and n.endswith(".txt"))
    except OSError:
        return out
    for name in names[:MAX_REQ_FILES]:
        text = _read(os.path.join(root, name)) or ""
        for line in text.splitlines():
            m = _REQ_LOCAL.match(line)
            if m is None:
                continue
            d = os.path.normpath(os.path.join(root, m.group(1)))
            if d != root and d.startswith(root + os.sep) and os.path.isdir(d) and d not in out:
                out.append(d)
    return out


def subproject_paths(program_file: str, roots: list[str]) -> list[str]:
    """Import-path entries for the packages the checkout installs from its own (sub-)projects, nearest to
    the program first (see the module's doc). `roots`: the code-base roots and the checkout's root."""
    start = os.path.dirname(os.path.abspath(program_file))  # (every launch of a program asks: once per run)
    return list(once_per_run(_SUBPROJECTS, (start, *roots), lambda: _subproject_paths(start, roots)))


_SUBPROJECTS: dict[tuple[str, ...], list[str]] = run_memo()


def _subproject_paths(start: str, roots: list[str]) -> list[str]:
    absroots = [os.path.abspath(r) for r in roots if r]
    top = next((r for r in absroots if start == r or start.startswith(r + os.sep)), None)
    out: list[str] = []
    if top is None:
        return out
    d = start
    for _ in range(MAX_CLIMB):  # (the root itself is on the path already, with its src/: initial_search)
        if d == top:
            break
        out.extend(p for p in package_dirs(d) if p not in out)
        d = os.path.dirname(d)
    for sub in requirement_dirs(top):
        out.extend(p for p in package_dirs(sub) if p not in out)
    return out[:MAX_ENTRIES]


MAX_CHILDREN = 500
_CHILDREN: dict[str, tuple[str, ...]] = run_memo()  # (a run does not change the tree)


def _child_projects(root: str) -> tuple[str, ...]:
    """The folders directly under `root` (not hidden) holding a packaging file, sorted."""
    found = _CHILDREN.get(root) if IN_RUN[0] else None
    if found is not None:
        return found
    try:
        with os.scandir(root) as it:
            entries = list(itertools.islice(it, MAX_CHILDREN))
    except OSError:
        entries = []
    out = [
        e.path
        for e in entries
        if not e.name.startswith(".")
        and e.is_dir(follow_symlinks=False)
        and any(os.path.isfile(os.path.join(e.path, f)) for f in PACKAGING)
    ]
    found = tuple(sorted(out))
    if IN_RUN[0]:
        _CHILDREN[root] = found
    return found


def subprojects_holding(root: str, package: str) -> list[str]:
    """The import-path entries of the checkout's sub-projects (folders directly under `root` with a packaging
    file, installed with `pip install -e <folder>`: MetaStone-AI/MetaStone-S1's verl/ holds verl/verl/..., its
    README says `pip install -e verl`) that hold the top-level package `package`. A launch importing it from
    outside that folder runs that copy when it is the only one; several leave it to the machine (which one
    was installed), which the callers treat as undecided."""
    if not package.isidentifier():
        return []
    out: list[str] = []
    root = os.path.abspath(root)
    # (the checkout itself, installed with `pip install -e .` from a src layout: NJUxlj/AGroup-DPO's src/m_trainer)
    for sub in (root, *_child_projects(root)):
        for base in package_dirs(sub):
            if os.path.isdir(os.path.join(base, package)) and base not in out:
                out.append(base)
    return out


# a stack's distribution where its name is not the stack's (configs.versions.PACKAGE_DIRS names the stacks)
_DISTS = {"hf-trainer": "transformers", "swift": "ms-swift", "megatron-swift": "ms-swift"}


def pinned_away(program_file: str, roots: list[str]) -> dict[str, str]:
    """Stack packages a code-base root above the program holds (`trl/` of a TRL fork) that the program's own project
    pins to another release, or to a release where the copy says none (williamium3000/trl-projects:
    `projects/opsd/environment.yml` pins trl==0.26.0 beside the launched `projects/opsd/grpo_train.py`; the root's
    trl/ is 1.2.0.dev0): the program runs the pinned release, installed, not the root's copy, which reaches its
    import path only through an install the project replaces. {module: why}; the pin must be nearer the program
    than the root (its own sub-project's)."""
    start = os.path.dirname(os.path.abspath(program_file))  # (every launch of a program asks: once per run)
    return dict(once_per_run(_PINNED_AWAY, (start, *roots), lambda: _pinned_away(start, roots)))


_PINNED_AWAY: dict[tuple[str, ...], dict[str, str]] = run_memo()


def _pinned_away(start: str, roots: list[str]) -> dict[str, str]:
    from packlint.configs.versions import PACKAGE_DIRS, _version_under, pinned_in_tree

    out: dict[str, str] = {}
    for root in dict.fromkeys(os.path.abspath(r) for r in roots if r):
        if not start.startswith(root + os.sep):
            continue
        for stack, dirs in PACKAGE_DIRS.items():
            for pkg in dirs:
                module = pkg[4:] if pkg.startswith("src/") else pkg
                if "/" in module or module in out or not os.path.isdir(os.path.join(root, pkg)):
                    continue
                copy = _version_under(stack, [root])
                pin = pinned_in_tree(_DISTS.get(stack, stack), start)
                if pin is None or (copy is not None and pin[0] == copy[0]):
                    continue
                where = os.path.dirname(os.path.abspath(pin[1]))
                if where != root and where.startswith(root + os.sep):
                    out[module] = (
                        f"{os.path.relpath(pin[1], root)} pins {_DISTS.get(stack, stack)}=={pin[0]}, not the "
                        f"checkout's own {module}/" + (f" ({copy[0]})" if copy is not None else "")
                    )
    return out
