"""Which files `packlint check PATH...` reads: named files as given; directories searched recursively
for `*.sh`, `*.bash` and files whose shebang names bash or sh. Sorted and deterministic; skips VCS and
dependency folders, virtualenvs and symlink loops."""

from __future__ import annotations

import os

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
    }
)
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
    if os.path.splitext(name)[1].lower() in NON_SCRIPT_SUFFIXES:
        return False
    return has_shell_shebang(path)


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


def _walk(root: str, errors: list[DiscoveryError]) -> list[str]:
    out: list[str] = []
    visited: set[tuple[int, int]] = set()

    def visit(d: str) -> None:
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
        subdirs = []
        for e in entries:
            path = os.path.join(d, e.name) if d != "." else e.name
            try:
                if e.is_dir():
                    if e.name in SKIP_DIRS or _is_virtualenv(path):
                        continue
                    subdirs.append(path)
                elif e.is_file() and is_script(path):
                    out.append(path)
            except OSError:
                continue
        for sd in subdirs:
            visit(sd)

    visit(root)
    return sorted(out)
