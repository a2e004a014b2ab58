"""Which files `packlint check PATH...` reads: named files as given; directories searched recursively
for `*.sh`, `*.bash`, files whose shebang names bash or sh, and the config files of a stack packlint
recognises by their keys (a LLaMA-Factory or TRL YAML, a DeepSpeed JSON: configs/standalone.py; any other
YAML/JSON/TOML is skipped silently, and so is a TRL recipe the checkout's own launches read: one a launch
script names, or any in a checkout with its own TrlParser program, configs/standalone.read_by_the_checkout).
The pre-commit hook keeps the staged files by the same two tests.
Sorted and deterministic; skips VCS and dependency folders, virtualenvs, symlink loops, and what the
checkout's `.gitignore` files ignore (git's rules, through pathspec: from the checkout's root down; a
directory named on the command line is walked even when it is ignored itself; a file git tracks is never
ignored, as in git)."""

from __future__ import annotations

import os
import re

from packlint.regex import LazyRegex

STDIN = "-"
SCRIPT_SUFFIXES = (".sh", ".bash")
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".bzr",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "site-packages",
        ".eggs",
    }
)
# never read for a shebang: they are not shell scripts even when executable
NON_SCRIPT_SUFFIXES = frozenset(
    {
        ".py",
        ".pyc",
        ".json",
        ".toml",
        ".yaml",
        ".yml",
        ".md",
        ".txt",
        ".rst",
        ".cfg",
        ".ini",
        ".csv",
        ".png",
        ".jpg",
        ".gz",
        ".zip",
        ".tar",
        ".so",
        ".o",
        ".pt",
        ".bin",
        ".safetensors",
        ".ipynb",
        ".html",
        ".js",
        ".c",
        ".h",
        ".mk",
        # templates a program renders into scripts (Jinja2, configure/CMake `.in`): not bash's input even
        # with a `#!/bin/bash` first line (aws-samples/awsome-distributed-training training-sub.template)
        ".template",
        ".tmpl",
        ".tpl",
        ".j2",
        ".jinja",
        ".jinja2",
        ".in",
    }
)
# make's own file names: a makefile that opens with `#!/bin/sh` (the FF planner's, vendored by ALFWorld)
# is make's input, not a script
NON_SCRIPT_NAMES = frozenset({"makefile", "gnumakefile"})
_SHEBANG = LazyRegex(rb"^#![ \t]*\S*/(?:env[ \t]+(?:-\S+[ \t]+)*)?(?:bash|sh)(?:[ \t]|\r?$)")


class DiscoveryError:
    __slots__ = ("path", "message")

    def __init__(self, path: str, message: str) -> None:
        self.path, self.message = path, message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DiscoveryError) and (self.path, self.message) == (other.path, other.message)

    def __repr__(self) -> str:
        return f"DiscoveryError({self.path!r}, {self.message!r})"


def has_shell_shebang(path: str) -> bool:
    from packlint.safe_io import read_head

    head = read_head(path, 256)  # (a regular file only: a FIFO in a checked tree never blocks)
    if head is None:
        return False
    first = head.split(b"\n", 1)[0]
    return bool(_SHEBANG.match(first))


def is_script(path: str) -> bool:
    name = os.path.basename(path)
    if name.endswith(SCRIPT_SUFFIXES):
        return True
    if os.path.splitext(name)[1].lower() in NON_SCRIPT_SUFFIXES or name.lower() in NON_SCRIPT_NAMES:
        return False
    return has_shell_shebang(path)


# job files of the batch systems, read as launch scripts by the scans that look for the checkout's launches
# (a config named by one, a script calling another) with or without a shebang
JOB_SUFFIXES = (".slurm", ".sbatch", ".slrm", ".job", ".pbs", ".lsf", ".qsub")


def is_launch_file(path: str) -> bool:
    """A file the checkout may launch from: what `check DIR` reads as a script (`*.sh`, `*.bash`, a shell
    shebang: SaeedNajafi/alignment-handbook's `recipes/*.slrm` start `#!/bin/bash`), or a batch system's job file.
    The scans that connect a config file, or a callee, to the launches that name it use this, so that a launch
    `check` analyses is never missing from them."""
    return os.path.basename(path).lower().endswith(JOB_SUFFIXES) or is_script(path)


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def discover(paths: list[str]) -> tuple[list[str], list[DiscoveryError]]:
    """The files to check, in order (stdin `-` kept where given), and the paths that could not be used."""
    found: list[str] = []
    errors: list[DiscoveryError] = []
    seen: set[object] = set()

    def add(p: str) -> None:
        # a file reached twice (named twice, or through a symlink in the tree) is checked once: the
        # same (device, inode) — one stat, where realpath would lstat every component of the path
        key: object = p
        if p != STDIN:
            try:
                st = os.stat(p)
                key = (st.st_dev, st.st_ino)
            except OSError:
                key = os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            found.append(p)

    for p in paths:
        if p == STDIN:
            add(p)
        elif os.path.isdir(p):
            for f in _walk(p, errors):
                add(f)
        elif os.path.exists(p):
            add(p)
        else:
            errors.append(DiscoveryError(p, "no such file or directory"))
    return found, errors


def _gitignore_spec(directory: str):
    """The GitIgnoreSpec of `directory`/.gitignore, or None (none there, unreadable, or a pattern pathspec
    cannot read: that file is then not applied)."""
    from packlint.safe_io import read_regular

    data = read_regular(os.path.join(directory, ".gitignore"), 1 << 20)  # (a FIFO or a huge file: none)
    if data is None:
        return None
    try:
        from pathspec import GitIgnoreSpec

        return GitIgnoreSpec.from_lines(data.decode("utf-8", "replace").splitlines())
    except Exception:
        return None


def _specs_above(root: str) -> tuple[tuple[str, object], ...]:
    """The `.gitignore` files of the directories above the walk's root, up to the checkout's root (the
    directory holding `.git`), outermost first; none outside a git checkout."""
    d = os.path.abspath(root)
    above = []
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            break
        parent = os.path.dirname(d)
        if parent == d:
            return ()
        above.append(parent)
        d = parent
    found = []
    for a in reversed(above):
        spec = _gitignore_spec(a)
        if spec is not None:
            found.append((a, spec))
    return tuple(found)


def _ignored(specs: tuple[tuple[str, object], ...], path: str, is_dir: bool) -> bool:
    """Git's rule: the deepest `.gitignore` with a pattern that matches `path` (absolute) decides, a
    `!pattern` re-including; patterns are relative to their file's directory."""
    for base, spec in reversed(specs):
        rel = path[len(base.rstrip(os.sep)) + 1 :] + ("/" if is_dir else "")
        decided = spec.check_file(rel).include  # type: ignore[attr-defined]
        if decided is not None:
            return bool(decided)
    return False


def checkout_ignores(path: str, root: str) -> str | None:
    """The `.gitignore` that makes git ignore `path` (absolute, inside the checkout `root`), by git's rule
    (the deepest file with a matching pattern decides); None when none does or `path` is outside."""
    path, root = os.path.abspath(path), os.path.abspath(root)
    if not path.startswith(root.rstrip(os.sep) + os.sep):
        return None
    chain = [root]
    for part in os.path.relpath(os.path.dirname(path), root).split(os.sep):
        if part not in ("", "."):
            chain.append(os.path.join(chain[-1], part))
    for base in reversed(chain):
        spec = _gitignore_spec(base) if os.path.isdir(base) else None
        if spec is None:
            continue
        decided = spec.check_file(os.path.relpath(path, base)).include
        if decided is not None:
            return os.path.join(base, ".gitignore") if decided else None
    return None


_SUBMODULE_PATH = LazyRegex(r"""^\s*path\s*=\s*["']?(.+?)["']?\s*$""", re.M)


_TRACKED: dict[str, tuple[frozenset[str], frozenset[str]] | None] = {}
_GIT_LS_TIMEOUT_S = 10.0


def _git_ls_files(top: str, args: list[str]) -> list[str] | None:
    """The NUL-separated entries of a hardened `git ls-files ARGS` in `top` (tools.git_argv: no program the
    repository configures runs), or None (no git, it failed or it timed out)."""
    import subprocess

    from packlint.tools import find_program, git_argv, git_env

    git = find_program("git")
    if git is None:
        return None
    try:
        proc = subprocess.run(
            git_argv(git, top, ["ls-files", *args]),
            capture_output=True,
            timeout=_GIT_LS_TIMEOUT_S,
            env=git_env(),
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return [e for e in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if e]


def _tracked(path: str) -> tuple[frozenset[str], frozenset[str]] | None:
    """(files, directories), absolute, that git tracks in the repository holding `path` (its index, read by
    a hardened `git ls-files`: tools.git_argv), or None (no repository, no git, or it failed). A `.gitignore`
    pattern never hides a file git tracks (princeton-nlp/MeZO ignores `*.sh` and commits its scripts with
    `git add -f`): only asked for where an ignore rule would drop a file or directory, once per repository."""
    top = os.path.abspath(path)
    for _ in range(64):
        if os.path.exists(os.path.join(top, ".git")):
            break
        parent = os.path.dirname(top)
        if parent == top:
            return None
        top = parent
    else:
        return None
    index = os.path.join(top, ".git", "index")
    try:
        st = os.stat(index)
    except OSError:  # (no index, or a worktree's or submodule's: elsewhere): none
        return None
    key = f"{top}\0{st.st_mtime_ns}\0{st.st_size}"  # (a long-lived process sees the index change)
    if key in _TRACKED:
        return _TRACKED[key]
    _TRACKED[key] = None
    listed = _git_ls_files(top, ["-z", "--cached", "--full-name"])
    if listed is None:
        return None
    files: set[str] = set()
    dirs: set[str] = set()
    for rel in listed:
        full = os.path.join(top, rel)
        files.add(full)
        d = os.path.dirname(full)
        while len(d) > len(top) and d not in dirs:
            dirs.add(d)
            d = os.path.dirname(d)
    _TRACKED[key] = (frozenset(files), frozenset(dirs))
    return _TRACKED[key]


def _hidden(specs: tuple[tuple[str, object], ...], path: str, is_dir: bool) -> bool:
    """Ignored by a `.gitignore` and not tracked by git (a tracked file, or a directory holding one, stays)."""
    if not _ignored(specs, path, is_dir):
        return False
    tracked = _tracked(path)
    return tracked is None or path not in tracked[1 if is_dir else 0]


_SUBMODULE_BLOCK = LazyRegex(r"""^\s*\[submodule\b[^\]]*\]""", re.M)
_SUBMODULE_URL = LazyRegex(r"""^\s*url\s*=\s*["']?(.+?)["']?\s*$""", re.M)


def submodule_of(path: str, root: str) -> tuple[str, str] | None:
    """(its path, its url) of the git submodule of the checkout's `.gitmodules` that `path` (absolute, inside
    `root`) lies under, fetched or not; None when none does."""
    from packlint.safe_io import read_regular

    path, root = os.path.abspath(path), os.path.abspath(root)
    if not path.startswith(root.rstrip(os.sep) + os.sep):
        return None
    data = read_regular(os.path.join(root, ".gitmodules"), 1 << 20)
    if data is None:
        return None
    rel = os.path.relpath(path, root)
    text = data.decode("utf-8", "replace")
    starts = [m.start() for m in _SUBMODULE_BLOCK.finditer(text)] + [len(text)]
    for a, b in zip(starts, starts[1:], strict=False):
        block = text[a:b]
        pm, um = _SUBMODULE_PATH.search(block), _SUBMODULE_URL.search(block)
        if pm is None or um is None:
            continue
        sub = os.path.normpath(pm.group(1).strip())
        if not sub.startswith("..") and not os.path.isabs(sub) and rel.startswith(sub + os.sep):
            return sub, um.group(1).strip()
    return None


_GITLINKS: dict[str, str | None] = {}


def gitlink_commit(root: str, sub: str) -> str | None:
    """The commit the checkout's index pins submodule `sub` (relative to `root`, the checkout's top) at: its
    gitlink, read by a hardened `git ls-files --stage` (tools.git_argv); None when there is none (no index, no
    git, not a gitlink)."""
    index = os.path.join(root, ".git", "index")
    try:
        st = os.stat(index)
    except OSError:
        return None
    key = f"{root}\0{sub}\0{st.st_mtime_ns}\0{st.st_size}"
    if key in _GITLINKS:
        return _GITLINKS[key]
    _GITLINKS[key] = None
    for entry in _git_ls_files(root, ["--stage", "-z", "--", sub]) or ():
        m = re.match(r"160000 ([0-9a-f]{40}) \d\t(.*)$", entry)
        if m and os.path.normpath(m.group(2)) == os.path.normpath(sub):
            _GITLINKS[key] = m.group(1)
    return _GITLINKS[key]


def unfetched_submodule(path: str, root: str) -> str | None:
    """The git submodule (a `path =` of the checkout's `.gitmodules`, relative to `root`) that `path`
    (absolute, inside `root`) lies under, when its directory is absent or empty: not checked out here
    (`git clone` without `--recursive`), made at set-up by `git submodule update --init`. None otherwise
    (a checked-out submodule decides like any directory)."""
    from packlint.safe_io import read_regular

    path, root = os.path.abspath(path), os.path.abspath(root)
    if not path.startswith(root.rstrip(os.sep) + os.sep):
        return None
    data = read_regular(os.path.join(root, ".gitmodules"), 1 << 20)
    if data is None:
        return None
    rel = os.path.relpath(path, root)
    for m in _SUBMODULE_PATH.finditer(data.decode("utf-8", "replace")):
        sub = os.path.normpath(m.group(1).strip())
        if sub.startswith("..") or os.path.isabs(sub) or not rel.startswith(sub + os.sep):
            continue
        where = os.path.join(root, sub)
        try:
            empty = not os.path.isdir(where) or not os.listdir(where)
        except OSError:
            empty = False
        if empty:
            return sub
    return None


def empty_ancestor(path: str, root: str) -> str | None:
    """The directory (relative to `root`) that `path` (absolute, inside `root`) would lie under when it is the
    nearest one that exists and it is empty: git never makes an empty directory but for a gitlink (a submodule
    without its `.gitmodules` entry, or a repository `git add`ed inside another: Aries-iai/HCC-STAR's
    LLaMA-Factory), so its content is made at set-up. None otherwise."""
    path, root = os.path.abspath(path), os.path.abspath(root)
    if not path.startswith(root.rstrip(os.sep) + os.sep):
        return None
    d = os.path.dirname(path)
    while d.startswith(root.rstrip(os.sep) + os.sep) and not os.path.isdir(d):
        d = os.path.dirname(d)
    if d == root or not d.startswith(root.rstrip(os.sep) + os.sep) or os.path.islink(d):
        return None
    try:
        with os.scandir(d) as entries:  # (one entry read at most: a directory of millions is not listed)
            empty = next(entries, None) is None
    except OSError:
        return None
    return os.path.relpath(d, root) if empty else None


def _walk(root: str, errors: list[DiscoveryError]) -> list[str]:
    from packlint.configs.standalone import CONFIG_SUFFIXES, is_stack_config

    out: list[str] = []
    visited: set[tuple[int, int]] = set()

    def visit(d: str, specs: tuple[tuple[str, object], ...]) -> None:
        try:
            st = os.stat(d)
        except OSError as exc:
            errors.append(DiscoveryError(d, exc.strerror or str(exc)))
            return
        key = (st.st_dev, st.st_ino)
        if key in visited:  # symlink loop or a directory reached twice
            return
        visited.add(key)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except OSError as exc:
            errors.append(DiscoveryError(d, exc.strerror or str(exc)))
            return
        absolute = os.path.abspath(d)
        if any(e.name == ".gitignore" for e in entries):
            spec = _gitignore_spec(d)
            if spec is not None:
                specs = (*specs, (absolute, spec))
        subdirs = []
        for e in entries:
            path = os.path.join(d, e.name) if d != "." else e.name
            name = e.name.lower()
            try:
                if e.is_dir():
                    if e.name in SKIP_DIRS or _is_virtualenv(path):
                        continue
                    if specs and _hidden(specs, os.path.join(absolute, e.name), True):
                        continue
                    subdirs.append(path)
                    continue
                if not e.is_file():
                    continue
                config = name.endswith(CONFIG_SUFFIXES)
                if (
                    not config
                    and not name.endswith(SCRIPT_SUFFIXES)
                    and os.path.splitext(name)[1] in NON_SCRIPT_SUFFIXES
                ):
                    continue  # (cheap tests first: the ignore rules, then the file's contents)
                if specs and _hidden(specs, os.path.join(absolute, e.name), False):
                    continue
                if is_stack_config(path) if config else is_script(path):
                    out.append(path)
            except OSError:
                continue
        for sd in subdirs:
            visit(sd, specs)

    above = _specs_above(root)
    if above and _ignored(above, os.path.abspath(root), True):
        # a directory named on the command line is walked even where the checkout ignores it (ripgrep,
        # ruff): only the .gitignore files inside it then apply
        above = ()
    visit(root, above)
    return sorted(out)
