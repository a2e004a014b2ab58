"""The directory a launch runs in, when its script `cd`s before it (see
packlint/conditions/functions/stack_config_workdir.py for why): read from the launch's own location in the launch
model (file, line, column), so that the program lookup (codebase/resolve.py) and the stack config search use the
same working directory."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from packlint import caches

_CD = re.compile(
    r"""(?:^|[;&|(]\s*|\b(?:then|do|else)\s+|\{\s+|\s['"])(?:builtin\s+)?(?:cd|pushd)\s+(?:-[LPe@]+\s+|--\s+)*"""
    r"""["']?([^\s;&|"'()]+)"""
)
# `$(dirname "$0")`, `$(dirname "${BASH_SOURCE[0]}")`: the script's own directory
_SCRIPT_DIR = re.compile(
    r"""\$\(\s*dirname\s+"?(?:\$\(\s*(?:readlink\s+-[fe]|realpath)\s+"?)?"""
    r"""\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?(?:\s*\)"?)?\s*\)"""
)
MAX_LINES_BACK = 400
MAX_SCRIPT = 1024 * 1024


def _checkout(script_dir: str) -> str | None:
    from packlint.configs.versions import _roots

    roots = _roots(script_dir)
    return roots[-1] if roots and os.path.exists(os.path.join(roots[-1], ".git")) else None


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolve_cd(target: str, script_dir: str, root: str, line: int) -> tuple[str, str | None] | None:
    """(the folder of the checkout a `cd target` enters, the premise that mapping needs or None), or None
    when it names no folder of the checkout packlint can tell."""
    if "$" in target or "`" in target or target.startswith(("~", "-")):
        return None
    if not os.path.isabs(target):
        for base in (script_dir, root):
            d = os.path.normpath(os.path.join(base, target))
            if _inside(d, root) and os.path.isdir(d):
                return d, None
        return None
    d = os.path.normpath(target)
    if _inside(d, root):
        return (d, None) if os.path.isdir(d) else None
    parts = [p for p in d.split(os.sep) if p and p not in (".", "..")]
    name = os.path.basename(root)
    # the tail after the checkout's own name first (`/data/me/<checkout>/<folder>`), then the longest tail
    anchored = [i + 1 for i, p in enumerate(parts) if p == name and i + 1 < len(parts)]
    for i in anchored[-1:] + list(range(1, len(parts))):
        tail = os.path.join(*parts[i:])
        mapped = os.path.normpath(os.path.join(root, tail))
        if _inside(mapped, root) and os.path.isdir(mapped):
            premise = (
                f"the launch runs in {d}/ (the `cd` at line {line}), taken to be the checkout's {tail}/, the folder "
                "its path ends with"
            )
            return mapped, premise
    return None


_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
MAX_CD_CHAIN = 8  # relative `cd`s composed, at most


def launch_variables(launch: Mapping[str, Any]) -> dict[str, str]:
    """The shell variables with a known value at a launch (its environment and the script's unexported ones)."""
    out: dict[str, str] = {}
    for key in ("env", "unexported"):
        for name, entry in (launch.get(key) or {}).items():
            if isinstance(entry, Mapping) and isinstance(entry.get("value"), str) and "evidence" not in entry:
                out[name] = entry["value"]
    return out


def _substitute(target: str, variables: Mapping[str, str]) -> str | None:
    """`$D`/`${D}` in a `cd` target replaced by the script's known values (None: one is not known)."""
    if "$" not in target:
        return target
    out = _VAR.sub(lambda m: variables.get(m.group(1) or m.group(2), "\0"), target)
    return None if "\0" in out or "$" in out else out


def find_workdir(
    path: Any, line: Any, column: Any = None, variables: Mapping[str, str] | None = None
) -> tuple[str | None, str | None]:
    """(the folder of the checkout a launch at `path`:`line` runs in, the premise that needs) from the nearest
    `cd` or `pushd` before it in its file; (None, None) when there is none or it cannot be told. A relative `cd`
    goes on from the one before it (`cd "$LONGCHAT_DIR"` then `cd longeval`: zengxyyu/HiCI), and a `$VAR` in a
    target is the value the script gives it (`variables`, the launch's known shell variables)."""
    if not isinstance(path, str) or not isinstance(line, int) or line < 1:
        return None, None
    # (the code session and the stack-config rules ask for every launch: the script read once per launch and run)
    key = (path, line, column, tuple(sorted((variables or {}).items())))
    if caches.IN_RUN[0] and key in _MEMO:
        found: tuple[str | None, str | None] = _MEMO[key]
        return found
    found = _find_workdir(path, line, column, variables)
    if caches.IN_RUN[0]:
        _MEMO[key] = found
    return found


_MEMO = caches.run_memo()


def _find_workdir(
    path: str, line: int, column: Any, variables: Mapping[str, str] | None
) -> tuple[str | None, str | None]:
    from packlint.safe_io import read_regular

    path = os.path.abspath(path)
    script_dir = os.path.dirname(path)
    root = _checkout(script_dir)
    data = read_regular(path, MAX_SCRIPT) if root else None
    if data is None or root is None:
        return None, None
    lines = data.decode("utf-8", "replace").splitlines()[:line]
    if isinstance(column, int) and column >= 1 and len(lines) == line:
        lines[-1] = lines[-1][: column - 1]  # (`llamafactory-cli train x.yaml && cd ..`: after the launch)
    found = _workdir_before(lines, len(lines), script_dir, root, variables or {}, 0)
    return found if found is not None else (None, None)


def _workdir_before(
    lines: list[str], end: int, script_dir: str, root: str, variables: Mapping[str, str], depth: int
) -> tuple[str | None, str | None] | None:
    """The folder the nearest `cd` among lines[:end] (the last of them cut at the launch) enters: (folder,
    premise); (None, None) where it cannot be told; None where no `cd` comes before."""
    dir_cd = "cd" in script_dir or "pushd" in script_dir  # (its folder put in for `$(dirname $0)` could read as one)
    for i in range(end - 1, max(end - 1 - MAX_LINES_BACK, -1), -1):
        text = lines[i].split("#", 1)[0]
        if "cd" not in text and "pushd" not in text and not (dir_cd and "$(" in text):
            continue  # (no `cd` can match: the regular expressions below are most of a launch's look-up)
        text = _SCRIPT_DIR.sub(lambda _: script_dir.replace("\\", "/"), text)
        matches = list(_CD.finditer(text))
        if not matches:
            continue
        target = _substitute(matches[-1].group(1), variables)
        if target is None:
            return None, None
        if not os.path.isabs(target) and depth < MAX_CD_CHAIN:
            cut = lines[:i] + [text[: matches[-1].start()]]
            before = _workdir_before(cut, i + 1, script_dir, root, variables, depth + 1)
            if before is not None:
                if before[0] is None:
                    return None, None
                d = os.path.normpath(os.path.join(before[0], target))
                return (d, before[1]) if _inside(d, root) and os.path.isdir(d) else (None, None)
        found = resolve_cd(target, script_dir, root, i + 1)
        if found is None and os.path.isabs(target) and not target.startswith(("/dev", "/proc", "/sys")):
            # (another machine's folder no folder of the checkout ends like: what runs from there is the machine's;
            # a program found in the checkout by the same relative path rests on that: HaoranLuo/text2sql-grpo)
            return None, (
                f"the launch runs in {target}/ (the `cd` at line {i + 1}), a folder outside the checkout, taken to "
                "hold the checkout's files"
            )
        relative = not os.path.isabs(target) and not target.startswith(("~", "-")) and not _SUBST.search(target)
        if found is None and relative:
            # (a relative folder neither the script's folder nor the checkout's root has: one the job's set-up makes,
            # GQA's `cd ./playground/data/eval/gqa/data` before `python eval/eval.py`, GQA's own evaluator put there;
            # a program the checkout holds by the same relative path is not the one that runs)
            return None, f"the launch runs in {target}/ (the `cd` at line {i + 1}), {SETUP_FOLDER}"
        return found if found is not None else (None, None)
    return None


_SUBST = re.compile(r"[$`]")
SETUP_FOLDER = "a folder the checkout does not have (made at set-up), taken to hold the checkout's files"
