"""Built-in functions over the environment reads of the code a launch runs (issue 10): whether the
code reads a variable, where, whether it used to (git history), a close misspelling, and the exports
nothing reads (PK203, PK205)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from packlint.caches import memo, once_per_run, run_memo
from packlint.conditions.functions.codebase_common import _code, _script_text, _show_path
from packlint.conditions.functions.core import _is_unk
from packlint.conditions.tree import Builtin, EvalContext, Unk


def _f_code_reads(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """True / False from the code's reads. The reads found in the program's import closure decide
    first; a read with a computed name makes the names starting with its known prefix undecidable (a
    name computed from nothing known, an empty prefix, e.g. Megatron's YAML loader resolving `${NAME}`
    from a config file, is not counted: it would make every variable undecidable). A name the closure
    does not read still counts as read when a Python file anywhere under the code base's roots quotes
    it: modules imported dynamically (registries, importlib) escape any static closure, and a
    variable is only called dead when no module of the code base reads it."""
    if _is_unk(a[0]):
        return a[0]
    return _reads(ctx, a[0])


def _reads(ctx: EvalContext, name: str) -> Any:
    """code_reads for one name (memoised per launch: PK203 and PK205 both ask)."""
    memo = ctx.memo.setdefault("code_reads", {})
    if name not in memo:
        memo[name] = _read_reads(ctx, name)
    return memo[name]


def _read_reads(ctx: EvalContext, name: str) -> Any:
    a = [name]
    facts = _code(ctx)
    if facts is None or not facts.known:
        return Unk("the code base of the launch was not found", "absent")
    hit = None
    for r in facts.env_reads:
        if not r.computed and r.name == a[0]:
            return True
        if r.computed and r.name and a[0].startswith(r.name) and hit is None:
            hit = r
    if hit is not None:
        return Unk(
            f"the code reads environment variables named {hit.name}... (a computed name) at "
            f"{_show_path(hit.file)}:{hit.line}, which may be {a[0]}",
            "unknown",
        )
    roots = _code_roots(facts)
    if _quoted_anywhere(roots, a[0]) or _interpolated_anywhere(_named_config_dirs(ctx), a[0]):
        return True
    unread = _unread_package(ctx, facts) or _library_of(ctx, facts, a[0])
    return Unk(f"{unread}: it may read {a[0]}", "unknown") if unread else False


def _library_of(ctx: EvalContext, facts: Any, name: str) -> str | None:
    """A package outside the checkout the code imports that may read `name`: one whose name the variable starts
    with (libraries name their variables after themselves: `nnUNet_preprocessed` for nnunet, which reads it at
    import), or any, where a README beside the script or the program tells users to `export NAME=` (intel/
    neural-compressor's 3dunet example: nnunet's RESULTS_FOLDER). packlint reads none of them."""
    import os

    outside, squeezed = _outside_imports(ctx, facts)
    if not outside:
        return None
    head = re.sub(r"[^a-z0-9]", "", name.split("_", 1)[0].lower())
    lib = squeezed.get(head) if head else None
    if lib is not None:
        return f"the code imports {lib}, a package packlint did not read whose name the variable's starts with"
    script, program = ctx.model.get("script"), facts.resolution.file
    folders = {os.path.dirname(os.path.abspath(p)) for p in (script, program) if isinstance(p, str)}
    for d in sorted(folders):
        for readme in ("README.md", "README.rst", "README.txt", "README"):
            if _told_to_export(os.path.join(d, readme), name):
                return (
                    f"{_show_path(os.path.join(d, readme))} tells users to export {name}, and the code imports "
                    f"packages packlint did not read ({', '.join(sorted(set(outside))[:3])})"
                )
    return None


_EXPORTED_MEMO: dict[str, frozenset[str]] = memo()
_TOLD = re.compile(r"(?m)\bexport[ \t]+([A-Za-z_][A-Za-z0-9_]*)=")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _told_to_export(path: str, name: str) -> bool:
    """The text at `path` has `export NAME=` (at a word's start): the names a README exports, found once per file
    (a search of a long README per variable and launch was 4% of a cold check of MindSpeed-LLM)."""
    if not _IDENTIFIER.fullmatch(name):
        return re.search(r"(?m)\bexport[ \t]+" + re.escape(name) + r"=", _script_text(path)) is not None
    names = _EXPORTED_MEMO.get(path)
    if names is None:
        names = _EXPORTED_MEMO[path] = frozenset(_TOLD.findall(_script_text(path)))
    return name in names


def _outside_imports(ctx: EvalContext, facts: Any) -> tuple[list[str], dict[str, str]]:
    """The top-level packages outside the standard library the code imports and packlint did not read, and each by
    its name squeezed to [a-z0-9] (the first): once per launch, not once per variable asked about."""
    import sys

    key = ("outside_imports", id(facts))
    found = ctx.memo.get(key)
    if found is None:
        outside = [t for m in facts.unresolved_imports if (t := m.split(".", 1)[0]) not in sys.stdlib_module_names]
        squeezed: dict[str, str] = {}
        for m in outside:
            squeezed.setdefault(re.sub(r"[^a-z0-9]", "", m.lower()), m)
        found = ctx.memo[key] = (outside, squeezed)
    return found


def _code_roots(facts: Any) -> list[str]:
    import os

    res = facts.resolution
    roots = [res.root] if res.root else []
    roots += [p for p in (res.pythonpath or []) if p]
    if not roots and res.file:
        roots = [os.path.dirname(res.file)]
    out: list[str] = []
    top = os.path.abspath(res.root) if res.root else None
    for r in roots:
        r = os.path.abspath(r)
        if r == "/" or (top is not None and top.startswith(r.rstrip("/") + "/")):
            continue  # a directory above the checkout is the machine's, not the code base (never searched)
        if os.path.isdir(r) and not any(r == o or r.startswith(o.rstrip("/") + "/") for o in out):
            out = [o for o in out if not o.startswith(r.rstrip("/") + "/")] + [r]
    return out


_MENTION_MEMO: dict[tuple[tuple[str, ...], str], bool] = memo()


def _quoted_anywhere(roots: list[str], name: str) -> bool:
    """A Python file under `roots` holds the string literal `name` ('NAME' or "NAME"). grep where it
    exists (a fraction of a second on Megatron-LM's 70 MB), else one Python text scan per root."""
    key = (tuple(roots), name)
    from packlint.result_cache import depends_on_tree

    depends_on_tree(roots, ".py")  # (grep reads them: the result cache's inputs, memo or not)
    if key in _MENTION_MEMO:
        return _MENTION_MEMO[key]
    if not roots:
        return False
    import subprocess

    from packlint.codebase.search_budget import SEARCHES
    from packlint.tools import find_program, tool_env

    found = None
    grep = find_program("grep")
    timeout = SEARCHES.timeout(60)
    if timeout is None:  # the run's search budget is spent: unknown, taken as quoted (nothing is said)
        return True
    if grep is not None:
        try:
            with SEARCHES.spend():
                proc = subprocess.run(
                    [grep, "-rlF", "--include=*.py", "-m", "1", "-e", f'"{name}"', "-e", f"'{name}'", "--", *roots],
                    capture_output=True,
                    timeout=timeout,
                    env=tool_env(),
                    stdin=subprocess.DEVNULL,
                )
            if proc.returncode in (0, 1):
                found = proc.returncode == 0
        except (OSError, subprocess.SubprocessError):
            found = None
    if found is None:
        found = any(name in _quoted_names(root) for root in roots)
    _MENTION_MEMO[key] = found
    return found


def _named_config_dirs(ctx: EvalContext) -> list[str]:
    """The folders of the config files the launch's words name (`-c configs/grpo.yaml`), where what they include
    lies too (ChatLearn's grpo.yaml pulls in base.yaml beside it): found beside the script or from its checkout."""
    import os

    from packlint.model_view import launch_argv

    words = [w for w in launch_argv(ctx.launch, ctx.variant) or () if isinstance(w, str)]
    words = [w.split("=", 1)[-1] for w in words]
    script = str(ctx.model.get("script") or "")
    bases = [os.path.dirname(os.path.abspath(script))] if script else []
    top = _git_top(bases[0]) if bases else None
    bases += [top] if top else []
    out: list[str] = []
    for w in words:
        if not w.lower().endswith((".yaml", ".yml", ".json", ".toml")):
            continue
        for path in [w] if os.path.isabs(w) else [os.path.join(b, w) for b in bases]:
            d = os.path.dirname(os.path.normpath(path))
            if os.path.isfile(path) and d not in out and d != top:
                out.append(d)
                break
    return out


_INTERP_MEMO: dict[tuple[tuple[str, ...], str], bool] = memo()
_CONFIG_GLOBS = ("--include=*.yaml", "--include=*.yml", "--include=*.json", "--include=*.toml")


def _interpolated_anywhere(roots: list[str], name: str) -> bool:
    """A config file under `roots` interpolates the variable: `${NAME}`, `${NAME:default}` (ChatLearn's YAML:
    Pai-Megatron-Patch's grpo base.yaml `${patch_tokenizer_type:NullTokenizer}`), `${oc.env:NAME}` / `${env:NAME}`
    (OmegaConf): a program that loads the file reads it. The files grep would search, read here (_config_texts), or
    grep itself; without grep, not searched."""
    key = (tuple(roots), name)
    if key in _INTERP_MEMO:
        return _INTERP_MEMO[key]
    if not roots:
        return False
    import subprocess

    from packlint.codebase.search_budget import SEARCHES
    from packlint.result_cache import depends_on_tree
    from packlint.tools import find_program, tool_env

    for suffix in (".yaml", ".yml", ".json", ".toml"):
        depends_on_tree(roots, suffix)
    grep, timeout = find_program("grep"), SEARCHES.timeout(60)
    if timeout is None:  # the run's search budget is spent: taken as read (nothing is said)
        return True
    texts = (f"${{{name}}}", f"${{{name}:", f"env:{name}}}", f"env:{name},")
    held = _config_texts(tuple(roots)) if grep is not None else None
    if held is not None:  # (what grep would search, read once per run: no grep per variable)
        needles = [os.fsencode(t) for t in texts]
        found = any(n in data for data in held for n in needles)
        _INTERP_MEMO[key] = found
        return found
    found = False
    if grep is not None:
        patterns = [w for t in texts for w in ("-e", t)]
        try:
            with SEARCHES.spend():
                proc = subprocess.run(
                    [grep, "-rlF", *_CONFIG_GLOBS, "-m", "1", *patterns, "--", *roots],
                    capture_output=True,
                    timeout=timeout,
                    env=tool_env(),
                    stdin=subprocess.DEVNULL,
                )
            found = proc.returncode == 0
        except (OSError, subprocess.SubprocessError):
            found = False
    _INTERP_MEMO[key] = found
    return found


_CONFIG_TEXTS: dict[tuple[str, ...], tuple[bytes, ...] | None] = run_memo()
MAX_CONFIG_SCAN_BYTES = 16 * 1024 * 1024  # (all the config files under a launch's named folders)
MAX_CONFIG_HELD_BYTES = 64 * 1024 * 1024  # (all those held for the run, every launch's folders together)
MAX_CONFIG_SCAN_FILES = 5000  # (folders and config files met; more: grep reads them)
_CONFIG_HELD = [0]


def _config_texts(roots: tuple[str, ...]) -> tuple[bytes, ...] | None:
    """The bytes of every file `grep -rlF --include=*.yaml ... -- ROOTS` searches (a name ending in .yaml, .yml, .json
    or .toml; symbolic links met while recursing skipped, as grep -r does), once per run; None where the answer is
    grep's to give (a folder or file that cannot be read, a file that is not a regular one, more than
    MAX_CONFIG_SCAN_BYTES or MAX_CONFIG_SCAN_FILES in all, past MAX_CONFIG_HELD_BYTES for the run): the launches of a
    repository name the same few folders, and a grep per variable was most of the child processes of a cold check
    (40 of MindSpeed-LLM's 90)."""
    if not _CONFIG_TEXTS:
        _CONFIG_HELD[0] = 0  # (a new run: caches.clear_run_memos emptied the memo)
    return once_per_run(_CONFIG_TEXTS, roots, lambda: _read_config_texts(roots))


def _read_config_texts(roots: tuple[str, ...]) -> tuple[bytes, ...] | None:
    from packlint.safe_io import read_regular

    out: list[bytes] = []
    failed: list[OSError] = []
    left = min(MAX_CONFIG_SCAN_BYTES, MAX_CONFIG_HELD_BYTES - _CONFIG_HELD[0])
    looked = 0  # (folders and files: a tree of empty folders is bounded too)
    for root in roots:
        for folder, _dirs, files in os.walk(root, onerror=failed.append):
            looked += 1
            for name in files:
                path = os.path.join(folder, name)
                if not name.endswith((".yaml", ".yml", ".json", ".toml")) or os.path.islink(path):
                    continue
                looked += 1
                data = read_regular(path, left) if looked <= MAX_CONFIG_SCAN_FILES else None
                if data is None:
                    return None
                left -= len(data)
                out.append(data)
            if looked > MAX_CONFIG_SCAN_FILES:
                return None
    if failed:
        return None
    _CONFIG_HELD[0] += sum(map(len, out))
    return tuple(out)


_QUOTED_MEMO: dict[str, frozenset[str]] = memo()
_QUOTED_PATTERN = rb"""['"]([A-Za-z_][A-Za-z0-9_]{1,127})['"]"""  # compiled when grep is missing
_MAX_TREE_FILES = 20000


def python_texts(root: str, limit: int = _MAX_TREE_FILES) -> Iterator[bytes | None]:
    """The text of each Python file under `root` (hidden folders, __pycache__ and node_modules skipped; a file
    read_regular refuses is left out), then None once if more than `limit` files were met: the rest is not read."""
    import os

    from packlint.codebase.filefacts import MAX_SOURCE_BYTES
    from packlint.safe_io import read_regular

    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and d not in ("__pycache__", "node_modules")]
        for fn in filenames:
            if not fn.endswith(".py"):
                continue
            seen += 1
            if seen > limit:
                yield None
                return
            data = read_regular(os.path.join(dirpath, fn), MAX_SOURCE_BYTES)
            if data is not None:
                yield data


def _quoted_names(root: str) -> frozenset[str]:
    """Every identifier-like string literal in the Python files under `root` (one pass per root and
    process; a text scan, no parsing)."""
    if root in _QUOTED_MEMO:
        return _QUOTED_MEMO[root]
    quoted_re = re.compile(_QUOTED_PATTERN)
    names: set[bytes] = set()
    for data in python_texts(root):
        if data is None:
            break
        names.update(quoted_re.findall(data))
    result = frozenset(n.decode("ascii", "replace") for n in names)
    _QUOTED_MEMO[root] = result
    return result


def _f_code_read_at(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    if _is_unk(a[0]):
        return a[0]
    facts = _code(ctx)
    reads = facts.reads_of(a[0]) if facts is not None and facts.known else []
    if not reads:
        return Unk(f"{a[0]} is not read", "absent")
    r = reads[0]
    return f"{_show_path(r.file)}:{r.line}"


def _close_read(ctx: EvalContext, name: str) -> str | None:
    """The one variable the launched code reads whose name is close to `name` (a likely misspelling):
    difflib ratio >= 0.85, not a name that differs only in its digits (`GPU_0` / `GPU_1`). None when
    none or several are close."""
    facts = _code(ctx)
    if facts is None or not facts.known or len(name) < 5:
        return None
    import difflib

    names = [n for n in facts.env_names() if n != name]
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.85)
    shape = re.sub(r"\d+", "#", name)
    close = [c for c in close if re.sub(r"\d+", "#", c) != shape]
    if any(c in (ctx.variant.get("env") or {}) for c in close):
        # the launch sets the name the code reads too (LinYuOu/mm-math-reason: SYSTEM_PROMPT_RL and SYSTEM_PROMPT_SFT_RL
        # beside `export SYSTEM_PROMPT="${SYSTEM_PROMPT_SFT_RL}"`): a sibling, not a misspelling
        return None
    return close[0] if len(close) == 1 else None


# PK203 (b): the code base used to read a variable (git history at hand). `git log -G` over the code
# files, with everything that could run repository-configured programs turned off (no pager, no
# textconv, no external diff, no fsmonitor, no hooks; git log runs no hooks anyway), bounded in time
# per call and per process. A failure or a timeout is "unknown": no finding. Kept for one run: a commit between two
# runs of a long-lived process (the editor server) changes the answer.
_HISTORY_MEMO: dict[tuple[str, ...], str | None] = run_memo()
_HISTORY_CALL_S = 3.0


_TOP_MEMO: dict[str, str | None] = run_memo()


def _git_top(path: str) -> str | None:
    """The nearest folder at or above `path` (12 levels at most) holding `.git`; once per folder and run (asked per
    launch and variable: 4,000 of a cold MindSpeed-LLM check's file-system calls)."""
    top: str | None = once_per_run(_TOP_MEMO, path, lambda: _find_git_top(path))
    return top


def _find_git_top(path: str) -> str | None:
    import os

    d = os.path.abspath(path)
    for _ in range(12):
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


def _read_before(ctx: EvalContext, name: str) -> str | None:
    """'abc1234 (2025-03-02)': the newest commit whose diff of a Python file adds or removes the quoted
    name, when the code base is a git checkout and the code does not read the name now; None when
    not (or when git is missing, refuses the repository, or runs out of time)."""
    facts = _code(ctx)
    if facts is None or not facts.known:
        return None
    import os

    root = facts.resolution.root or (os.path.dirname(facts.resolution.file) if facts.resolution.file else None)
    top = _git_top(root) if root else None
    if top is None or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return None
    specs = _history_pathspecs(facts, top)
    key = (top, name, *specs)
    from packlint.result_cache import depends_on_git

    depends_on_git(top)  # (git log reads the history: the result cache's inputs, memo or not)
    if key in _HISTORY_MEMO:
        return _HISTORY_MEMO[key]
    from packlint.codebase.search_budget import SEARCHES
    from packlint.tools import find_program

    if SEARCHES.timeout(_HISTORY_CALL_S) is None:  # the run's search budget is spent: unknown
        return None
    git = find_program("git")
    if git is None:
        _HISTORY_MEMO[key] = None
        return None
    args = ["log", "--no-show-signature", "--no-textconv", "--no-ext-diff", "--no-color", "--no-mailmap"]
    args += ["--format=%h (%cs)", "-n", "1", "-G", f"[\"']{name}[\"']", "--", *specs]
    proc = _git_search(git, top, args)
    out = proc.stdout.decode("utf-8", "replace").strip() if proc is not None and proc.returncode == 0 else ""
    hit = out.splitlines()[0] if out else None
    if hit is not None:
        # the newest change added the mention, or another file still has it (ssmisya/AdaReasoner: a launcher
        # config of tool_server/ quotes C_INCLUDE_PATH; the closure does not read it): nothing was removed.
        # `git grep` exits 1 when no file quotes it; anything else (found, an error, no budget) claims no removal
        grep = _git_search(git, top, ["grep", "-q", "-I", "-E", f"[\"']{name}[\"']", "--", *specs])
        if grep is None or grep.returncode != 1:
            hit = None
    _HISTORY_MEMO[key] = hit
    return hit


def _git_search(git: str, top: str, args: list[str]) -> Any:
    """One bounded git call over the checkout (the run's search budget, repository-configured programs off):
    the finished process, or None when the budget is spent, git fails to start or runs out of time."""
    import subprocess

    from packlint.codebase.search_budget import SEARCHES
    from packlint.tools import git_argv, git_env

    timeout = SEARCHES.timeout(_HISTORY_CALL_S)
    if timeout is None:
        return None
    try:
        with SEARCHES.spend():
            return subprocess.run(
                git_argv(git, top, args), capture_output=True, timeout=timeout, env=git_env(), stdin=subprocess.DEVNULL
            )
    except (OSError, subprocess.SubprocessError):
        return None


def _history_pathspecs(facts: Any, top: str) -> list[str]:
    """The part of the repository whose history counts as the launched code's: the top-level directories
    of the checkout that hold the program's import closure (mlcommons/training's benchmarks are
    directories of their own: another benchmark's old read is no read of this one's). The whole
    checkout's Python files when a closure file sits at the top."""
    import os

    dirs: set[str] = set()
    for f in [facts.resolution.file, *facts.files]:
        if not isinstance(f, str) or not f:
            continue
        rel = os.path.relpath(os.path.abspath(f), top)
        if rel.startswith(".."):
            continue
        head, sep, _ = rel.partition(os.sep)
        if not sep:
            return ["*.py"]
        dirs.add(head)
    return [f"{d}/*.py" for d in sorted(dirs)] or ["*.py"]


_COMMENT_LINE = re.compile(r"(?m)^[ \t]*#.*$")
_INSTALL = re.compile(r"\bpip3?\s+install\b|\buv\s+pip\s+install\b|\bconda\s+install\b")


_UNCOMMENTED_MEMO: dict[str, str] = memo()


def _uncommented(path: str) -> str:
    """The script's text without its comment lines, once per file."""
    text = _UNCOMMENTED_MEMO.get(path)
    if text is None:
        text = _UNCOMMENTED_MEMO[path] = _COMMENT_LINE.sub("", _script_text(path))
    return text


def _unread_package(ctx: EvalContext, facts: Any) -> str | None:
    """An import of the launched code that packlint did not read and that may read any variable, with
    why: a package the launch's scripts install themselves (`pip3 install ${PKG:-mlperf_compliance}`),
    or a package of the checkout outside the roots packlint searched (neuronx-nemo-megatron's
    sub-project `nemo/nemo/`). "No module reads it" is then undecided. (Libraries packlint knows, whose
    variables rules/runtime_env.toml lists, are not counted: they are neither.)"""
    memo = ctx.memo.get(("unread_package",))
    if memo is not None:
        return memo or None
    import os

    names = [m for m in facts.unresolved_imports if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", m)]
    found = ""
    installed = _installed_import(tuple(_chain_files(ctx)), tuple(names)) if names else None
    if installed is not None:
        found = f"the code imports {installed}, which the launch's scripts install and packlint did not read"
    root = facts.resolution.root or (os.path.dirname(facts.resolution.file) if facts.resolution.file else None)
    top = _git_top(root) if root and not found else None
    if top is not None:
        for m in names:
            hit = _checkout_package(top, m)
            if hit is not None:
                where = os.path.relpath(os.path.dirname(hit), top)
                found = f"the code imports {m}, a package of the checkout ({where}) that packlint did not read"
                break
    ctx.memo[("unread_package",)] = found
    return found or None


_INSTALLED_MEMO: dict[tuple[tuple[str, ...], tuple[str, ...]], str | None] = run_memo()


def _installed_import(files: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    """The first of `names` (imports packlint did not read) that the scripts `files` install (a `pip install` there, and
    the name spelt as a word); once per run for the same scripts and names (the launches of a script share both, and
    each name is a search of every script: 4% of a cold Megatron-LM check)."""
    found: str | None = once_per_run(_INSTALLED_MEMO, (files, names), lambda: _first_installed(files, names))
    return found


def _first_installed(files: tuple[str, ...], names: tuple[str, ...]) -> str | None:
    # (comment lines left out: RoboVLMs' `# pip3 install lightning==2.2.5` installs nothing)
    texts = [_uncommented(f) for f in files]
    if any("install" in t and _INSTALL.search(t) for t in texts):  # (the word first: the pattern is tried everywhere)
        for m in names:
            spelt = re.compile(r"(?<![\w.-])" + re.escape(m).replace("_", "[-_]") + r"(?![\w-])", re.IGNORECASE)
            if any(spelt.search(t) for t in texts):
                return m
    return None


_PACKAGE_MEMO: dict[tuple[str, str], str | None] = run_memo()


def _checkout_package(top: str, name: str) -> str | None:
    """`top/X/[src/]name/__init__.py` of a sub-project X of the checkout (_sub_project), or None; once per
    checkout, name and run (the launches of a repository import the same packages: a glob of the checkout's
    top directory per launch and name was a third of a cold check of MindSpeed-LLM)."""
    from packlint import caches

    key = (top, name)
    if caches.IN_RUN[0] and key in _PACKAGE_MEMO:
        return _PACKAGE_MEMO[key]
    import glob

    # one or two folders down: OpenGVLab/VKnowU's src/qwen-vl-utils/src/qwen_vl_utils (a src-layout sub-project in src/)
    pats = tuple(f"{glob.escape(top)}/{mid}/{name}/__init__.py" for mid in ("*", "*/src", "*/*", "*/*/src"))
    hit = next((h for p in pats for h in glob.glob(p) if _sub_project(top, h)), None)
    if caches.IN_RUN[0]:
        _PACKAGE_MEMO[key] = hit
    return hit


def _sub_project(top: str, init: str) -> bool:
    """`top/X/[src/]N/__init__.py` is the top-level package N of a sub-project X of the checkout (X holds a
    setup.py, pyproject.toml or setup.cfg and is no package itself), not the subpackage X.N of a package
    X (NeMo-Skills' nemo_skills/mcp is not the `mcp` library)."""
    import os

    sub = os.path.dirname(os.path.dirname(init))  # the folder holding the package N
    if os.path.basename(sub) == "src":
        sub = os.path.dirname(sub)
    between = os.path.relpath(sub, top).split(os.sep)
    if between[0] in ("", ".", "..") or len(between) > 2:
        return False
    # neither the sub-project nor a folder above it (up to the checkout's top) is a package
    if any(os.path.exists(os.path.join(top, *between[: i + 1], "__init__.py")) for i in range(len(between))):
        return False
    return any(os.path.isfile(os.path.join(sub, f)) for f in ("setup.py", "pyproject.toml", "setup.cfg"))


def _f_code_read_before(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The commit that last added or removed a quoted mention of the variable in the code base's
    Python files (git history), when the code no longer mentions it; absent otherwise."""
    if _is_unk(a[0]):
        return a[0]
    if _reads(ctx, a[0]) is not False:
        return Unk(f"the code reads {a[0]}", "absent")
    hit = _read_before(ctx, a[0])
    return hit if hit is not None else Unk(f"no older revision of the code mentions {a[0]}", "absent")


def _f_env_close_read(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The variable the launched code reads that `name` is most likely a misspelling of; absent when
    no single name read by the code is close."""
    if _is_unk(a[0]):
        return a[0]
    close = _close_read(ctx, a[0])
    return close if close is not None else Unk(f"no variable the code reads is close to {a[0]}", "absent")


def _matches(pattern: Any, name: str) -> bool:
    """The rule's pattern matches the name; a match not decided within the bounds counts as one (the
    name is then left out: nothing is said about it)."""
    from packlint.regex import Undecided

    try:
        return pattern.search(name) is not None
    except Undecided:
        return True


def _unread_exports(ctx: EvalContext, static: Any) -> list[str]:
    """Exported variables (set by the script) that no Python module of the code base reads or quotes,
    that match no runtime/library prefix, that the script does not expand itself and that are not a
    likely misspelling of a name the code reads (those are PK203's)."""
    memo = ctx.memo.get("unread_exports")
    if memo is not None:
        return memo
    library, judged = static
    out: list[str] = []
    facts = _code(ctx)
    if facts is not None and facts.known:
        for name, entry in ctx.variant.get("env", {}).items():
            if not isinstance(entry, dict) or entry.get("source", "script") not in ("script", "prefix"):
                continue
            if _matches(library, name) or _matches(judged, name) or _script_expands(ctx, name):
                continue
            if _reads(ctx, name) is not False or _close_read(ctx, name) is not None:
                continue
            if _read_before(ctx, name) is not None:
                continue  # PK203: the code base used to read it
            out.append(name)
    ctx.memo["unread_exports"] = out
    return out


def _f_unread_exports(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """'A, B and 3 more': the exports no Python module of the launched code reads (see _unread_exports);
    absent when none (or the code is not known)."""
    names = _unread_exports(ctx, node.static)
    if not names:
        return Unk("every exported variable is read, used or a runtime's", "absent")
    shown = names[:6]
    text = ", ".join(shown[:-1]) + (" and " if len(shown) > 1 else "") + shown[-1]
    if len(names) > len(shown):
        text = ", ".join(shown) + f" and {len(names) - len(shown)} more"
    return text


def _f_unread_export_count(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    return len(_unread_exports(ctx, node.static))


def _compile_two_regexes(args: list[Any]) -> Any:
    from packlint.regex_guard import rule_pattern

    return (rule_pattern(args[0]), rule_pattern(args[1]))


_EXPANDS_MEMO: dict[tuple[str, str], bool] = {}


def _f_script_expands(ctx: EvalContext, node: Builtin, a: list[Any]) -> Any:
    """The script text expands the variable itself (`$NAME`, `${NAME...}`): an export then may serve
    the script's own commands, not the program."""
    if _is_unk(a[0]):
        return a[0]
    return _script_expands(ctx, a[0])


_LEAVES = frozenset((str, int, float, bool, type(None)))


def _chain_files(ctx: EvalContext) -> list[str]:
    """The scripts of the launch's chain: the script checked, and every other shell file a span of the
    launch points into (a file it sources, the child `bash run.sh` or `./test.sh` that makes the launch,
    the file whose function sets a flag). A name any of them expands is used by the chain."""
    memo = ctx.memo.get(("chain_files",))
    if memo is not None:
        return memo
    path = ctx.model.get("script")
    out: list[str] = [path] if isinstance(path, str) else []
    out += [f for f in ctx.model.get("files", []) if isinstance(f, str)]
    stack: list[Any] = [ctx.launch]
    push, nodes, leaves = stack.append, (dict, list), _LEAVES
    children: Any
    while stack and len(out) < 64:
        node = stack.pop()
        if isinstance(node, dict):
            f = node.get("file")
            if isinstance(f, str) and f not in out and not f.endswith((".py", ".yaml", ".yml", ".json", ".toml")):
                out.append(f)
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        for v in children:  # (a loop, not a generator: this walk of every launch was 5% of a cold check)
            if type(v) not in leaves and isinstance(v, nodes):  # (most are words and numbers: one look)
                push(v)
    ctx.memo[("chain_files",)] = out
    return out


def _script_expands(ctx: EvalContext, name: str) -> bool:
    a = [name]  # noqa: F841 (kept: the loop below reads a[0])
    for f in _chain_files(ctx):
        key = (f, a[0])
        if key not in _EXPANDS_MEMO:
            text = _script_text(f)
            _EXPANDS_MEMO[key] = re.search(r"\$\{?[#!]?" + re.escape(a[0]) + r"\b", text) is not None
        if _EXPANDS_MEMO[key]:
            return True
    return False
