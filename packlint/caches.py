"""Where packlint's caches live, whether they are on, how big they may grow, and how to remove them.

Four caches, all JSON data under one directory (docs/security.md, "The caches"):
- `rules-<key>.json`: the compiled rule table (packlint.rule_table, packlint.rule_cache);
- `stacks-<mtime>-<size>.json`: the parsed stacks table (packlint.configs);
- `codebase/v<N>/{files,programs}/..`: facts about the launched Python code (packlint.codebase.cache);
- `results/v<N>/..`: `packlint check`'s findings per script and the input sets they were computed from
  (packlint.result_cache).

The directory: `$PACKLINT_CACHE_DIR`, else `$XDG_CACHE_HOME/packlint` (an absolute XDG_CACHE_HOME
only, as the XDG specification says), else `~/.cache/packlint`. Every directory packlint creates in
it is 0700 (each level, not only the last: R29); entries are 0600 (safe_io.atomic_write).

Off: `--no-cache` (`disable()`, for this process and its forked workers) or `PACKLINT_NO_CACHE` set to
anything but "" or "0": nothing is read or written, for every cache alike (R19). What one run learns is
still remembered within that run (issue 31).

Size: each kind of entry has a size limit on read (`LIMITS`); the whole directory is kept under
`MAX_TOTAL_BYTES` (or `$PACKLINT_CACHE_MAX_MB`): the first time a process writes an entry it sums the
sizes of packlint's entries and removes the oldest (by modification time) until they fit in 80% of it.
`packlint clean` removes every entry (`clean()`), never a file packlint did not name.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

from packlint.regex import LazyRegex

MiB = 1024 * 1024
LIMITS = {
    "rules": 8 * MiB,
    "stacks": 1 * MiB,
    "files": 2 * MiB,
    "programs": 8 * MiB,
    "results": 16 * MiB,  # one run's input set (~100 bytes a path read) and its scripts' findings
    "index": 8 * MiB,  # which run holds a script's findings (a 16th of the scripts, ~100 bytes each)
}
MAX_TOTAL_BYTES = 256 * MiB
FACTS_DIR = "codebase"
RESULTS_DIR = "results"
# the names packlint gives its entries (and its temp files while writing one): nothing else is removed
_ENTRY = LazyRegex(
    r"^\.?(?:rules-[0-9a-f]+|stacks-\d+-\d+|[0-9a-f]{40}|index-[0-9a-f])\.json(?:\.[A-Za-z0-9_]+\.tmp)?$"
)

_OFF = [False]
TAINTED = [False]  # this process's later results depend on something the result cache cannot record
_EVICTED = [False]
IN_RUN = [False]  # a check run is on (checking.check_paths): in-run memos may be used
_RUN_MEMOS: list[Memo] = []


# The result cache's recorder while a run records its reads (packlint.result_cache), else None. A Memo entry
# made while it records keeps what was read while it was computed (from the lookup that missed to the store),
# and a later hit adds those reads to the current script's input set: one edited file then makes only the
# scripts that read it, themselves or through a memo, analysed again.
RECORDER: list[Any] = [None]
_MEMOS: list[Memo] = []


class Memo(dict):
    """A dict memo whose entries carry the reads they were computed from (RECORDER). A lookup that misses
    (`get`, `in`, `[]`) opens a collection of the reads that follow; the store closes it; an entry stored
    without a lookup before it gets every read of the current script so far (more than it needs: sound).
    What was read before the lookup is read again by every caller that reaches it (the same code runs
    before it), so it is that caller's own read."""

    __slots__ = ("deps", "pending")

    def __init__(self, keep: bool = True) -> None:
        super().__init__()
        self.deps: dict = {}
        self.pending: dict = {}
        if keep:  # (a module's memo; one made for one run is not kept: checking._plan_jobs)
            _MEMOS.append(self)

    def _used(self, key: Any) -> None:
        RECORDER[0].used(self.deps.get(key))

    def _missed(self, key: Any) -> None:
        if key not in self.pending:
            self.pending[key] = RECORDER[0].open()

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            if RECORDER[0] is not None:
                self._used(key)
            return dict.__getitem__(self, key)
        if RECORDER[0] is not None:
            self._missed(key)
        return default

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            if RECORDER[0] is not None:
                self._used(key)
            return True
        if RECORDER[0] is not None:
            self._missed(key)
        return False

    def __getitem__(self, key: Any) -> Any:
        try:
            value = dict.__getitem__(self, key)
        except KeyError:
            if RECORDER[0] is not None:
                self._missed(key)
            raise
        if RECORDER[0] is not None:
            self._used(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        dict.__setitem__(self, key, value)
        if RECORDER[0] is not None:
            self.deps[key] = RECORDER[0].close(self.pending.pop(key, None))

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key in self:
            return dict.__getitem__(self, key)
        self[key] = default
        return default

    def __delitem__(self, key: Any) -> None:
        dict.__delitem__(self, key)
        self.deps.pop(key, None)

    def pop(self, key: Any, *default: Any) -> Any:
        self.deps.pop(key, None)
        return dict.pop(self, key, *default)

    def clear(self) -> None:
        dict.clear(self)
        self.deps.clear()
        self.pending.clear()


def memo() -> Memo:
    """A memo kept for the process (its entries are keyed or checked so that they stay true: a content
    digest, a signature), whose entries carry their reads for the result cache (Memo)."""
    return Memo()


def run_memo() -> Memo:
    """A dict that remembers what one check run learnt about the tree (the tree does not change under a
    run): read and write it only while IN_RUN[0]; `clear_run_memos` empties it when the next run starts,
    so a long-lived process (the editor server) sees a tree that changed."""
    m = Memo()
    _RUN_MEMOS.append(m)
    return m


def once_per_run(memo: dict, key: Any, make: Any) -> Any:
    """`memo[key]`, made by `make()` the first time in this check run (`run_memo`); outside a run, made each time."""
    if IN_RUN[0] and key in memo:
        return dict.__getitem__(memo, key)
    value = make()
    if IN_RUN[0]:
        memo[key] = value
    return value


def clear_run_memos() -> None:
    for m in _RUN_MEMOS:
        m.clear()


def clear_memos() -> None:
    """Every Memo emptied (a recording run starts: no entry without its reads)."""
    for m in _MEMOS:
        m.clear()


def taint() -> None:
    """Something a result now depends on is not a file (a search or a regular expression out of time):
    what this process checks from now on is not stored in the result cache (packlint.result_cache)."""
    TAINTED[0] = True


def disable(off: bool = True) -> None:
    """`--no-cache`: no cache is read or written in this process (nor in its forked workers)."""
    _OFF[0] = off


def disabled() -> bool:
    return _OFF[0] or os.environ.get("PACKLINT_NO_CACHE", "") not in ("", "0")


def location() -> Path:
    """The cache directory, whether or not caching is on (`packlint clean` uses it)."""
    base = os.environ.get("PACKLINT_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "packlint"
    return Path.home() / ".cache" / "packlint"


def root() -> Path | None:
    """The cache directory, or None when caching is off."""
    return None if disabled() else location()


def facts_dir(explicit: str | None = None) -> str | None:
    """The code-base facts cache's directory (an explicit one: `CodeOptions.cache_dir`), or None (off)."""
    if disabled():
        return None
    return explicit or str(location() / FACTS_DIR)


def make_dirs(path: str | os.PathLike[str]) -> None:
    """Create `path` and every missing parent, each 0700 (os.makedirs' mode applies to the last only)."""
    missing: list[str] = []
    p = os.path.abspath(path)
    while not os.path.isdir(p):
        missing.append(p)
        parent = os.path.dirname(p)
        if parent == p:
            break
        p = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass


def wrote_entry() -> None:
    """Called after an entry is written: the first time in a process, keep the directory bounded."""
    if _EVICTED[0]:
        return
    _EVICTED[0] = True
    base = root()
    if base is not None:
        try:
            evict(base, max_total())
        except OSError:
            pass


def max_total() -> int:
    raw = os.environ.get("PACKLINT_CACHE_MAX_MB", "")
    if raw.isdigit():
        return int(raw) * MiB
    return MAX_TOTAL_BYTES


def _entries(base: Path, temps: bool = False) -> list[tuple[float, int, str]]:
    """(mtime, size, path) of every regular file under `base` whose name packlint gives its entries
    (links are not followed, nor listed); `temps`: another process's entries being written too."""
    out: list[tuple[float, int, str]] = []
    for dirpath, _dirnames, filenames in os.walk(base, followlinks=False):
        for name in filenames:
            if not _ENTRY.match(name) or (name.endswith(".tmp") and not temps):
                continue
            path = os.path.join(dirpath, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                out.append((st.st_mtime, st.st_size, path))
    return out


def evict(base: Path, limit: int) -> list[str]:
    """Remove the oldest entries until the rest fit in 80% of `limit` (nothing when they fit in it)."""
    entries = _entries(base)
    total = sum(size for _, size, _ in entries)
    removed: list[str] = []
    if total <= limit:
        return removed
    for _, size, path in sorted(entries):
        if total <= limit * 0.8:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
        removed.append(path)
    return removed


_KINDS = {"rules": "rule table", "stacks": "stacks table", "results": "check results"}


def clean(base: Path | None = None) -> tuple[int, int, list[str]]:
    """Remove every packlint cache entry under `base` (default: the cache directory): (files, bytes,
    the kinds removed). Directories left empty are removed; anything else is left alone."""
    base = base or location()
    files = size = 0
    kinds: set[str] = set()
    for _, n, path in _entries(base, temps=True):
        try:
            os.unlink(path)
        except OSError:
            continue
        files += 1
        size += n
        name = os.path.basename(path)
        kind = name.lstrip(".").split("-", 1)[0]
        if os.sep + RESULTS_DIR + os.sep in path[len(str(base)) :]:
            kind = "results"
        kinds.add(_KINDS.get(kind, "code-base facts"))
    for sub in (FACTS_DIR, RESULTS_DIR):
        for dirpath, _dirs, _files in os.walk(base / sub, topdown=False):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass
    return files, size, sorted(kinds)
