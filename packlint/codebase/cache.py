"""The on-disk cache of code-base facts, in `<cache directory>/codebase` (packlint.caches).

Two kinds of entries, both JSON data (never code: docs/security.md):
- `files/<sha1 of content>.json`: one file's facts (imports, env reads, sys.path edits). Keyed by
  content, so an unchanged file is never read with `ast` again, whatever its path.
- `programs/<sha1 of program, roots, PYTHONPATH>.json`: a program's whole CodeFacts plus a manifest of
  every file it was built from with (mtime_ns, size, sha1). A warm check only stats those files;
  a file whose mtime changed is hashed, and only a changed hash rebuilds the facts.
A broken or unwritable cache is ignored (never an error). An entry is read only when it is a regular
file owned by the user (not a link, FIFO or device; packlint.safe_io.read_cache_file), and used only
when it has the shape this code writes (`valid_file_facts`; a program entry must survive
CodeFacts.from_json -> to_json unchanged): anything else is a miss, and the entry is written again.
Writes go through packlint.safe_io.atomic_write (mkstemp in the same directory, fsync, rename).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# 2: FlagSchema.kind; 3: CodeFacts.startup (the startup checks); 4: FlagSchema.positionals; 5: .positional_room;
# 6: positional_room -2 for a REMAINDER positional; 7: a str/int Enum member is its value (choices); 8: sub-project
# packages on the import path, parses of lists, constants imported from other modules; 9: a pre-parser does not
# silence a conditional strict parser; 10: a Union typed as HfArgumentParser keeps it; 11: an Action adding flags;
# 12: a program editing sys.argv; 13: an ArgumentParser subclass's own __init__ (its parents, its flags);
# 14: choices the code changes after add_argument are open; 15: a value set on one branch or in a loop is either;
# 17: a plain subclass of a dataclass re-annotating a field types it (HfArgumentParser's get_type_hints); 18: a parse
# call on a parser packlint cannot resolve opens the schema; 19: a parse in an `except` handler is conditional, and a
# parse of a file decides nothing about the command line; 20: a parse in a handler that catches SystemExit adds its
# parser's flags; 22: one folder per kind (the two-character sub-folders were ~230 directory creations of a cold check)
CACHE_VERSION = 22


def cache_dir(explicit: str | None = None) -> str | None:
    """`<cache directory>/codebase` (packlint.caches: the same directory as the other caches, XDG_CACHE_HOME
    honoured), an explicit directory, or None when caching is off (--no-cache, PACKLINT_NO_CACHE: R19)."""
    from packlint.caches import facts_dir

    return facts_dir(explicit)


def _path(base: str, kind: str, key: str) -> str:
    return os.path.join(base, f"v{CACHE_VERSION}", kind, key + ".json")


def load(base: str, kind: str, key: str) -> dict | None:
    """The entry as a dict, or None (missing, untrusted, not JSON, or not a JSON object)."""
    from packlint.caches import LIMITS
    from packlint.safe_io import read_cache_file

    data = read_cache_file(_path(base, kind, key), LIMITS.get(kind, LIMITS["files"]))  # (R20: in memory
    if data is None:  # a JSON document costs up to ~25x its size: the limit is per kind, a few MiB)
        return None
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def store(base: str, kind: str, key: str, value: dict) -> None:
    from packlint.caches import LIMITS, make_dirs, wrote_entry
    from packlint.errors import PacklintError
    from packlint.safe_io import atomic_write

    path = _path(base, kind, key)
    try:
        data = json.dumps(value, separators=(",", ":")).encode("utf-8")
        if len(data) > LIMITS.get(kind, LIMITS["files"]):
            return  # (it would never be read back)
        folder = os.path.dirname(path)
        if folder not in _MADE:  # (one look per folder and process, not one per entry)
            make_dirs(folder)
            _MADE.add(folder)
        # not fsync'ed (~5 ms each, hundreds in a cold check of a Megatron tree): an entry a power loss
        # leaves empty or short fails its JSON and shape checks on read, and is read as a miss
        atomic_write(path, data, what="cache entry", replace_any=True, fsync=False)
        wrote_entry()
    except (OSError, PacklintError, ValueError, TypeError, RecursionError):
        _MADE.discard(os.path.dirname(path))  # (the folder may be gone: `packlint clean` meanwhile)


_MADE: set[str] = set()  # the entry folders this process made or found (store)


# ------------------------------------------------------------------------------------ entry shapes

_STR_OR_NONE = (str, type(None))


def _rows(value: Any, shape: tuple) -> bool:
    """A list of rows, each a list of len(shape) items of the given types."""
    if type(value) is not list:
        return False
    for row in value:
        if type(row) is not list or len(row) != len(shape):
            return False
        for item, want in zip(row, shape, strict=True):
            if want is bool:
                if type(item) is not bool:
                    return False
            elif want is int:
                if type(item) is not int:
                    return False
            elif want == "names":
                if type(item) is not list or not all(type(n) is str for n in item):
                    return False
            elif not isinstance(item, want) or type(item) is bool:
                return False
    return True


def valid_file_facts(facts: Any) -> bool:
    """Whether a `files` entry has the shape filefacts.extract_file_facts returns."""
    if type(facts) is not dict:
        return False
    if set(facts) == {"error"}:
        return type(facts["error"]) is str
    if (
        not {"imports", "env", "calls", "wrappers", "syspath"}
        <= set(facts)
        <= {
            "imports",
            "env",
            "calls",
            "wrappers",
            "syspath",
            "consts",
            "env_refs",
        }
    ):
        return False
    consts = facts.get("consts", {})
    if type(consts) is not dict or not all(type(k) is str and type(v) is str for k, v in consts.items()):
        return False
    return (
        _rows(facts.get("env_refs", []), (int, int, str, str))
        and _rows(facts["imports"], (int, _STR_OR_NONE, "names", int))
        and _rows(facts["env"], (str, bool, int, str, _STR_OR_NONE, _STR_OR_NONE))
        and _rows(facts["calls"], (str, str, int, _STR_OR_NONE, _STR_OR_NONE))
        and _rows(facts["wrappers"], (str, int))
        and type(facts["syspath"]) is list
    )


# Locks the forked workers of one run share (check_workers._run_jobs_now sets them before it forks): a program, or one
# file's facts, is made by one worker while another that needs it waits, then reads the entry the first stored,
# instead of both reading the same closure at once (the largest scripts are handed out first, and they launch the same
# programs: 0.85 s of a 7 s cold check of MindSpeed-LLM with two workers). A key picks one of a few locks of its kind;
# a wait is bounded, after it the worker makes the entry itself, as it would without the locks. A file's lock is only
# taken inside a program's (never the other way round), and neither kind is taken twice by one process.
BUILD_LOCKS: dict[str, list[Any]] = {"programs": [], "files": []}
BUILD_WAIT_S = 60.0
_HOLDING = {"programs": False, "files": False}
# Deferring instead of waiting (check_workers._run_jobs_now's first pass): a worker whose script needs a program another
# worker is reading puts the script aside (`Busy`) and goes on with the next, which may launch another program; the
# scripts put aside are analysed after the others, when the programs are read. A few times per program and worker
# (the next scripts often launch the same program: each put aside costs the part of its analysis already made).
DEFER = [False]
MAX_DEFERRALS_PER_KEY = 4
_DEFERRED: dict[str, int] = {}


class Busy(BaseException):
    """Another worker is making the program this script needs (`DEFER`): the script is put aside. A BaseException, so
    that no `except Exception` on the way (a reader bug must not take a check down) takes it for a failed read.
    `hint`: the program's file name, which the next scripts that name it are put aside by before their analysis."""

    def __init__(self, key: str, hint: str | None) -> None:
        super().__init__(key)
        self.key, self.hint = key, hint


def _lock_of(kind: str, key: str) -> Any:
    locks = BUILD_LOCKS[kind]
    return locks[zlib.crc32(key.encode("utf-8", "surrogateescape")) % len(locks)] if locks else None


def busy(key: str, kind: str = "programs") -> bool:
    """Whether another worker is making the entry `key` of `kind` (a program, a file's facts) now."""
    lock = _lock_of(kind, key)
    if lock is None or not lock.acquire(False):
        return lock is not None
    lock.release()
    return False


def share_builds(make_lock: Any, n: int = 16) -> None:
    """Before the workers fork: `n` locks of each kind (`make_lock`: the fork context's Lock). Where the system has no
    shared semaphores, none: each worker reads what it needs."""
    try:
        for kind in BUILD_LOCKS:
            BUILD_LOCKS[kind] = [make_lock() for _ in range(n)]
    except (OSError, ImportError):
        unshare_builds()


def unshare_builds() -> None:
    for kind in BUILD_LOCKS:
        BUILD_LOCKS[kind] = []
    _DEFERRED.clear()


@contextmanager
def building(kind: str, key: str, base: str | None, hint: str | None = None) -> Iterator[bool]:
    """Hold the workers' lock for the entry `key` of `kind` while it is made; yields whether another worker held it
    (its entry may be stored now). Without the locks (one process), without a cache directory (`base`: nothing made
    is shared) or while this process already holds one of the kind, a no-op."""
    locks = BUILD_LOCKS[kind]
    if not locks or not base or _HOLDING[kind]:
        yield False
        return
    lock = _lock_of(kind, key)
    waited = not lock.acquire(False)
    if waited and DEFER[0] and kind == "programs" and not _HOLDING["files"]:
        n = _DEFERRED.get(key, 0)
        if n < MAX_DEFERRALS_PER_KEY:
            _DEFERRED[key] = n + 1
            raise Busy(key, hint)
    held = not waited or lock.acquire(True, BUILD_WAIT_S)
    if not held:  # (a worker that died holding it, or a very long read: this process waits for no lock again)
        unshare_builds()
    _HOLDING[kind] = True
    try:
        yield waited
    finally:
        _HOLDING[kind] = False
        if held:
            lock.release()
