"""Which files a run reads: the checkout, and nothing outside it unless the user says so.

A launch can name any path (`--config /proc/self/environ`, `~/.netrc`, a checked-in symlink to one,
a nested `deepspeed_config_file`, Hydra's `--config-path /`); reading it would put that file's lines
into code frames and `inspect` output, which a CI log shows to a pull request's author (the audit's
R02/R03). So a config file or a sourced script is read only when its real path (symlinks resolved) is
inside a *checkout*:

- the checkout of the script being checked: the nearest directory above it holding `.git`, else the
  script's own directory;
- the checkout of every path named on the command line (`packlint check DIR`: DIR's repository, else
  DIR itself);
- every `--code-base DIR` given on the command line (the user named it: a stack's own config directory
  there is read, verl's `trainer/config/` for one). A `code-base` in a repository's configuration file
  does not widen the scope.

A file outside is named, not read: its values are unknown, with the reason (never a "missing" error).
`--allow-outside` (a command-line option only: a repository's own configuration must not widen what
it may read) turns the check off for the run. The state is per process and inherited by forked
workers, as `--no-cache` is.
"""

from __future__ import annotations

import os

from packlint.caches import memo

_ROOTS: list[str] = []  # real paths of the checkouts of the paths named on the command line
_CODE_BASES: list[str] = []  # real paths of the --code-base directories named on the command line
_ALLOW = [False]
_CHECKOUT_MEMO: dict[str, str] = memo()
_MAX_UP = 40

OUTSIDE_HINT = "--allow-outside reads it"
_NEVER = ("/proc/", "/sys/", "/dev/")  # the kernel's files and devices: never read, --allow-outside or not


def allow_outside(on: bool = True) -> None:
    """`--allow-outside`: every file a launch names may be read in this process."""
    _ALLOW[0] = on


def outside_allowed() -> bool:
    return _ALLOW[0]


def checkout_of(path: str) -> str:
    """The real path of the checkout holding `path`: the nearest directory at or above it that holds
    `.git`, else the directory itself (`path` when it is a directory, else its parent)."""
    real = os.path.realpath(path)
    start = real if os.path.isdir(real) else os.path.dirname(real)
    found = _CHECKOUT_MEMO.get(start)
    if found is not None:
        return found
    d = start
    found = start
    for _ in range(_MAX_UP):
        if os.path.exists(os.path.join(d, ".git")):
            found = d
            break
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    if len(_CHECKOUT_MEMO) > 4096:
        _CHECKOUT_MEMO.clear()
    _CHECKOUT_MEMO[start] = found
    return found


def named_top(path: str) -> str | None:
    """The outermost directory named on the command line (`packlint check DIR`: DIR, or its repository) that holds
    `path`, or None. In a tree without `.git` (a downloaded archive, a copy) it stands for the checkout: the user
    named it as the tree to check."""
    real = os.path.realpath(path)
    held = [r for r in _ROOTS if _under(real, r)]
    return min(held, key=len) if held else None


def named_among(dirs: list[str]) -> str | None:
    """The entry of `dirs` (a script's directory, then its parents) that is the directory named on the command line
    holding the script (named_top of dirs[0]), or None."""
    top = named_top(dirs[0]) if dirs else None
    return next((d for d in dirs if top is not None and os.path.realpath(d) == top), None)


def named_code_bases(dirs: list[str]) -> None:
    """The `--code-base` directories of the command line (absolute): read like the checkout."""
    _CODE_BASES[:] = [os.path.realpath(d) for d in dirs if os.path.isdir(d)]


def set_checked(paths: list[str]) -> None:
    """The paths named on the command line (`-` and missing paths are skipped)."""
    roots: list[str] = []
    for p in paths:
        if p == "-" or not os.path.exists(p):
            continue
        root = checkout_of(p)
        if root not in roots:
            roots.append(root)
    _ROOTS[:] = roots


def _under(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def outside(path: str, near: str | None = None, *, quote: bool = False) -> str | None:
    """None when `path` may be read; else the reason it is not read (`outside the checkout <root>`).
    `near`: the script (or its directory) that names the file; its checkout is allowed too. `quote`:
    may a report print the file's lines (a code frame)? Only inside the checkout, --allow-outside or not."""
    real = os.path.realpath(path)
    if real.startswith(_NEVER) and not real.startswith("/dev/shm/"):
        return f"a file of {real.split(os.sep)[1] and '/' + real.split(os.sep)[1]}: never read"
    if _ALLOW[0] and not quote:
        return None
    roots = list(_ROOTS)
    if any(_under(real, r) for r in _CODE_BASES):
        return None
    if near:
        roots.append(checkout_of(near))
    elif not roots:
        roots.append(checkout_of(os.getcwd()))
    if any(_under(real, r) for r in roots):
        return None
    where = roots[-1] if near else roots[0]
    link = " (through a symbolic link)" if real != os.path.abspath(path) else ""
    return f"outside the checkout {where}{link}: not read ({OUTSIDE_HINT})"
