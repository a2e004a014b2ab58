"""The per-script result cache of `packlint check` (issue 31): a script whose check read nothing that has changed since
gets its findings replayed instead of analysed, as ruff's cache does.

What counts as read. While a cached run is on, the file-system calls of the process are recorded (`record`):
`os.stat`/`os.lstat` (and through them `os.path.exists/isfile/isdir/realpath`, pathlib's `stat/exists/is_file/resolve`,
`shutil.which`), `os.open` and `open()` for reading, `os.listdir` and `os.scandir` (`os.walk`, `glob`, pathlib's
`iterdir`), `os.access`, `os.readlink`. Each path keeps its signature as first seen: (mode, size, mtime_ns, inode,
device), `[]` when it did not exist (a file that was absent is an input too: creating it is a change) or `[-errno]`. A
listed directory records its own signature (its mtime moves when an entry is added, removed or renamed) and, for
`scandir`, each entry's (what `DirEntry.stat` would say). Nothing has to declare what it reads: the script, `source`d
files, config files, the launched code, the stack-file look-ups and the climbs to a checkout root are all seen. Paths in
packlint's cache directory and under /proc, /sys and /dev are not inputs.

Each script's own inputs (0.3.2). What a script's analysis reads is its input set (`begin_job`/`end_job`), with what the
run read outside any script (the rule table: `_COMMON`); the discovery of the files and each file's settings are not
shared (`aside`: the settings are in the key). Memos inside a run let the second script that launches a program reuse
what the first one read without reading it: their entries carry the reads they were computed from (`caches.Memo`,
`_Recorder`), and a hit adds them to the current script's set. One edited file makes only the scripts that read it,
themselves or through a memo, miss. External programs: `grep -r` over a code base is recorded as the tree it searches
(`depends_on_tree`: every script that searches a tree for an environment variable depends on all its files), `git log`
as the repository's HEAD and refs (`depends_on_git`), `bash -n` reads the script's bytes and the `bash` on PATH (in the
key). What cannot be recorded marks the rest of the process's work as not cacheable (`caches.taint`): a search or a
regular expression that ran out of its time budget.

The key (`result_key.job_key`): packlint's version and Python, the working directory, the script's path and how it is
shown, its settings (`Settings.to_json`), the enabled rules, the assumed environment and arguments, the paths named on
the command line and `--allow-outside`, PATH, HOME, TMPDIR and the PACKLINT_* variables. Not cached: `--no-cache`,
`--inherit-env` (the findings would depend on, and could quote, the caller's environment), stdin, `run` and `--fix`
passes (they need the launch model).

Safety: entries are JSON data under `<cache>/results/v3/` (caches.py: 0700 directories, 0600 files, written atomically,
the directory's size bound, `packlint clean`); one is read only as a regular file owned by the user under the kind's
size limit, and used only when every field has the type this module writes (anything else is a miss, never an error). A
file modified within RACY_NS of the run's start could change again unseen on a coarse-clock file system: such a run
writes nothing.
"""

from __future__ import annotations

import builtins
import io
import os
from typing import Any

from packlint.result_reads import Reads as _Reads
from packlint.result_reads import grouped, touches

FORMAT = 3
RACY_NS = 2_000_000_000
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_SKIP_PREFIXES = ["/proc/", "/sys/", "/dev/"]

_ON = [False]
_IMPORT_DIRS: set[str] = set()  # the import path's directories (listings of them are not inputs: _new)
_START_NS = [0]
_CWD = [""]
# (kind: "s" stat | "l" lstat | "d" listed, absolute path) -> its row in _ROWS; None: not an input (_new)
_IDX: dict[tuple[str, str], int | None] = {}
_ROWS: list[tuple[str, str, list[int]]] = []  # (kind, path, signature as first seen), in the order first seen


_COMMON = _Reads()  # the rows read outside any script (settings, the rule table): every script's input
_CUR: list[_Reads] = [_COMMON]  # the rows the current script read, itself or through a memo (caches.Memo)
_OPEN: list[_Reads] = []  # the rows read since each memo lookup that missed, still open (_Recorder)
_ORIG: dict[str, Any] = {}
# a recorded path's stat result (or its error's errno and message) as first seen in this run (_stat_again)
_STATS: dict[tuple[str, str], os.stat_result | tuple[int, str]] = {}
_TREES: dict[tuple[str, ...], frozenset[int]] = {}


# ------------------------------------------------------------------------------------------ recording


def _sig(st: os.stat_result) -> list[int]:
    """A file's signature; a directory's only says what it is (a stat of one asks whether it is there; its
    entries are an input only when it is listed: kind "d", `_listing`)."""
    if st.st_mode & 0o170000 == 0o040000:
        return [st.st_mode, 0, 0, st.st_ino, st.st_dev]
    return [st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]


def _listing(st: os.stat_result) -> list[int]:
    return [st.st_mode, st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]


def _err(exc: OSError) -> list[int]:
    import errno

    return [] if exc.errno in (errno.ENOENT, errno.ENOTDIR) else [-(exc.errno or 1)]


def _key(kind: str, path: Any) -> tuple[str, str] | None:
    """(kind, absolute path), or None for a file descriptor or something that is not a path."""
    if type(path) is not str:
        if isinstance(path, int):
            return None
        try:
            path = os.fsdecode(os.fspath(path))
        except TypeError:
            return None
    if not path.startswith("/"):
        path = os.path.join(_CWD[0], path)
    return kind, path


def _new(key: tuple[str, str]) -> bool:
    """A path not seen before that is an input (one that is not is remembered as None: skipped)."""
    path = key[1]
    for prefix in _SKIP_PREFIXES:
        if path.startswith(prefix):
            _IDX[key] = None
            return False
    if path == _SKIP_PREFIXES[-1][:-1]:  # (the cache directory itself: listed when it is kept bounded)
        _IDX[key] = None
        return False
    if key[0] == "d" and path in _IMPORT_DIRS and path != _CWD[0] and not _checked_root(path):
        # a listing of an import-path entry (importlib.metadata's search for distributions): the key holds the
        # import path and its site-packages' signatures; a checkout on PYTHONPATH gains a file (`.hypothesis/`)
        # for reasons that change no finding
        _IDX[key] = None
        return False
    return True


def _checked_root(path: str) -> bool:
    """A checkout named on the command line (its layout is an input even when it is on the import path)."""
    from packlint.scope import _ROOTS

    return any(path == r or r.startswith(path.rstrip("/") + "/") for r in _ROOTS)


def probe(kind: str, path: str) -> list[int]:
    """The signature of `path` now (the unrecorded calls): kind "s" (stat), "l" (lstat), "d" (a listing)."""
    fn = _ORIG.get("lstat" if kind == "l" else "stat") or (os.lstat if kind == "l" else os.stat)
    try:
        return (_listing if kind == "d" else _sig)(fn(path))
    except OSError as exc:
        return _err(exc)
    except ValueError:
        return [-1]


def _use(i: int) -> None:
    """Row i was read: by the current script, and while each open memo lookup is computed."""
    _CUR[0].add(i)
    for c in _OPEN:
        c.add(i)


def _add(key: tuple[str, str], sig: list[int]) -> None:
    _IDX[key] = i = len(_ROWS)
    _ROWS.append((key[0], key[1], sig))
    _use(i)


def _note(kind: str, path: Any) -> None:
    key = _key(kind, path)
    if key is None:
        return
    i = _IDX.get(key, -1)
    if i is not None:
        if i >= 0:
            _use(i)
        elif _new(key):
            _add(key, probe(kind, key[1]))


def _stat(path, *, dir_fd=None, follow_symlinks=True):
    orig = _ORIG["stat"]
    if not _ON[0] or dir_fd is not None:
        return orig(path, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
    kind = "s" if follow_symlinks else "l"
    key = (kind, path) if type(path) is str and path[:1] == "/" else _key(kind, path)  # (the common case first)
    i = _IDX.get(key, -1) if key is not None else None
    if i is None:
        return orig(path, follow_symlinks=follow_symlinks)
    if i >= 0:
        _use(i)
        return _stat_again(key, path, follow_symlinks)  # type: ignore[arg-type]
    if not _new(key):  # type: ignore[arg-type]
        return orig(path, follow_symlinks=follow_symlinks)
    try:
        st = orig(path, follow_symlinks=follow_symlinks)
    except OSError as exc:
        _add(key, _err(exc))  # type: ignore[arg-type]
        _STATS[key] = (exc.errno or 0, exc.strerror or "")  # type: ignore[index]
        raise
    _add(key, _sig(st))  # type: ignore[arg-type]
    _STATS[key] = st  # type: ignore[index]
    return st


def _stat_again(key: tuple[str, str], path: Any, follow_symlinks: bool) -> os.stat_result:
    """A recorded path's stat again: the answer it had, without asking the system (a run reads its tree as first seen;
    a check reads the same paths tens of thousands of times: the import path's candidates, the climbs to a root)."""
    st = _STATS.get(key)
    if st is None:
        st = _STATS[key] = _ORIG["stat"](path, follow_symlinks=follow_symlinks)
    elif type(st) is tuple:  # (an error; a stat_result is a tuple's subclass)
        raise OSError(st[0], st[1], path)
    return st  # type: ignore[return-value]


def _lstat(path, *, dir_fd=None):
    if not _ON[0] or dir_fd is not None:
        return _ORIG["lstat"](path, dir_fd=dir_fd)
    return _stat(path, follow_symlinks=False)


def _os_open(path, flags, mode=0o777, *, dir_fd=None):
    if _ON[0] and dir_fd is None and not flags & _WRITE_FLAGS:
        _note("l" if flags & _NOFOLLOW else "s", path)
    return _ORIG["os_open"](path, flags, mode, dir_fd=dir_fd)


def _open(file, mode="r", *args, **kwargs):
    if _ON[0] and type(mode) is str and not any(c in mode for c in "wax+"):
        _note("s", file)
    return _ORIG["open"](file, mode, *args, **kwargs)


def _listdir(path="."):
    if _ON[0]:
        _note("d", path)
    return _ORIG["listdir"](path)


class _Scan:
    """os.scandir's iterator. The listing (the directory's own signature) says which entries there are and
    of what type; an entry's own signature is an input only when its caller asks for it (`_Entry`): a walk
    of a tree that only reads names does not make a script depend on every file's size and time."""

    def __init__(self, it) -> None:
        self._it = it

    def __iter__(self):
        return self

    def __next__(self):
        return _Entry(next(self._it))

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self._it.close()

    def close(self) -> None:
        self._it.close()


class _Entry:
    """A DirEntry whose `stat()`, and whose type through a symbolic link, are recorded reads."""

    __slots__ = ("_e", "name", "path")

    def __init__(self, e: os.DirEntry) -> None:
        self._e, self.name, self.path = e, e.name, e.path

    def __fspath__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return repr(self._e)

    def inode(self) -> int:
        return self._e.inode()

    def is_symlink(self) -> bool:
        return self._e.is_symlink()

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        if follow_symlinks and _ON[0] and self._e.is_symlink():
            _note("s", self.path)
        return self._e.is_dir(follow_symlinks=follow_symlinks)

    def is_file(self, *, follow_symlinks: bool = True) -> bool:
        if follow_symlinks and _ON[0] and self._e.is_symlink():
            _note("s", self.path)
        return self._e.is_file(follow_symlinks=follow_symlinks)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        if _ON[0]:
            _note("s" if follow_symlinks else "l", self.path)
        return self._e.stat(follow_symlinks=follow_symlinks)


def _scandir(path="."):
    it = _ORIG["scandir"](path)
    if not _ON[0] or isinstance(path, int):
        return it
    _note("d", path)
    return _Scan(it)


def _access(path, mode, *, dir_fd=None, effective_ids=False, follow_symlinks=True):
    if _ON[0] and dir_fd is None:
        _note("s" if follow_symlinks else "l", path)
    return _ORIG["access"](path, mode, dir_fd=dir_fd, effective_ids=effective_ids, follow_symlinks=follow_symlinks)


def _readlink(path, *, dir_fd=None):
    if _ON[0] and dir_fd is None:
        _note("l", path)
    return _ORIG["readlink"](path, dir_fd=dir_fd)


_PATCHES = {
    "stat": (os, "stat", _stat),
    "lstat": (os, "lstat", _lstat),
    "os_open": (os, "open", _os_open),
    "listdir": (os, "listdir", _listdir),
    "scandir": (os, "scandir", _scandir),
    "access": (os, "access", _access),
    "readlink": (os, "readlink", _readlink),
}


class _Recorder:
    """What caches.Memo asks while a run records: a lookup that missed opens a set of the rows read from
    then on; the store closes it (the entry's reads); a hit adds an entry's reads to the current script's."""

    def open(self) -> set[int]:
        c = _Reads()
        _OPEN.append(c)
        return c

    def close(self, c: set[int] | None) -> frozenset[int]:
        for n, o in enumerate(_OPEN):
            if o is c:
                del _OPEN[n]
                return o.flat()
        # stored without a lookup of this script before it: everything the script read so far (sound)
        return _CUR[0].flat()

    def used(self, deps: frozenset[int] | None) -> None:
        if deps:  # (the check of _Reads.merge first, inline: a memo hit is the commonest call of a recording run)
            key = id(deps)
            merged = _CUR[0].merged
            if key not in merged:
                merged[key] = deps
            for c in _OPEN:
                if key not in c.merged:
                    c.merged[key] = deps


def start(cache_dir: str) -> None:
    """Record the file-system reads of this process (and of the workers it forks) from now on."""
    import sys
    import time

    from packlint import caches

    _IMPORT_DIRS.clear()
    _IMPORT_DIRS.update(os.path.abspath(p) for p in sys.path if p)

    if not _ORIG:
        for name, (mod, attr, repl) in _PATCHES.items():
            _ORIG[name] = getattr(mod, attr)
            setattr(mod, attr, repl)
        _ORIG["open"] = builtins.open
        builtins.open = io.open = _open
    _IDX.clear()
    _ROWS.clear()
    _STATS.clear()
    _COMMON.clear()
    _COMMON.merged.clear()
    _CUR[0] = _COMMON
    _OPEN.clear()
    _TREES.clear()
    from packlint.result_key import _RUN_PARTS

    _RUN_PARTS.clear()
    _CWD[0] = os.getcwd()
    _SKIP_PREFIXES[3:] = [os.path.join(os.path.abspath(cache_dir), "")]
    _START_NS[0] = time.time_ns()
    caches.clear_memos()  # (no entry without the reads it was computed from)
    caches.RECORDER[0] = _Recorder()
    _ON[0] = True


def stop() -> None:
    """Stop recording and put the file-system functions back."""
    from packlint import caches

    _ON[0] = False
    caches.RECORDER[0] = None
    _STATS.clear()
    if _ORIG:
        for name, (mod, attr, _repl) in _PATCHES.items():
            setattr(mod, attr, _ORIG[name])
        builtins.open = io.open = _ORIG["open"]
        _ORIG.clear()


def recording() -> bool:
    return _ON[0]


class aside:
    """`with aside() as reads:` reads that are not every script's input: the discovery of the files to check
    (decided again by every run; a script's outcome does not depend on its siblings), one file's settings."""

    def __enter__(self) -> set[int]:
        self._was = _CUR[0]
        _CUR[0] = _Reads()
        return _CUR[0]

    def __exit__(self, *exc: Any) -> None:
        _CUR[0] = self._was


def begin_job() -> None:
    """A script's analysis starts: its reads from here on are its own."""
    _CUR[0] = _Reads()
    _OPEN.clear()


def end_job() -> _Reads:
    """The script's input set (its reads, the reads of the memo entries it used, the run's common reads)."""
    from packlint.caches import _MEMOS

    done = _CUR[0].absorb(_COMMON)
    _CUR[0] = _COMMON
    _OPEN.clear()
    for m in _MEMOS:
        if m.pending:
            m.pending.clear()
    return done


def depends_on_tree(roots: list[str] | tuple[str, ...], suffix: str) -> None:
    """An external program (`grep -r`) reads every `suffix` file under `roots`: record that tree."""
    if not _ON[0]:
        return
    key = tuple(roots) + (suffix,)
    if key in _TREES:
        _Recorder().used(_TREES[key])
        return
    rec = _Recorder()
    c = rec.open()
    for root in roots:
        for dirpath, _dirs, files in os.walk(root):  # (recorded: each directory, each entry)
            for name in files:
                if name.endswith(suffix):
                    _note("s", os.path.join(dirpath, name))
    _TREES[key] = rec.close(c)


def depends_on_git(top: str) -> None:
    """`git log` in the repository at `top` reads its history: HEAD, the branch it names, packed-refs."""
    if not _ON[0]:
        return
    git = os.path.join(top, ".git")
    if not os.path.isdir(git):  # a worktree or submodule (.git is a file): the history is elsewhere
        from packlint.caches import taint

        taint()
        return
    for name in ("HEAD", "packed-refs"):
        _note("s", os.path.join(git, name))
    try:
        with _ORIG["open"](os.path.join(git, "HEAD"), "rb") as fh:
            head = fh.read(512).decode("utf-8", "replace").strip()
    except OSError:
        return
    if head.startswith("ref: refs/") and ".." not in head:
        _note("s", os.path.join(git, head[5:]))


# ------------------------------------------------------------------------------------------ entries
#
# `results/v3/index-<0-f>.json`: {job key: bundle}, sharded by the key's first digit (a one-script check
# reads one small file, however many scripts the cache knows); `results/v3/<bundle>.json`: one run's rows,
# the read sets of the memo entries its scripts used (each once, as runs of rows: a program's code is
# thousands of rows shared by every script that launches it), and the outcomes of the scripts it analysed,
# each with its own rows as runs and the numbers of the groups it used ({"inputs": rows, "groups": [[first,
# count, ...], ...], "entries": {job key: {"o": outcome, "r": [first, count, ...], "g": [group, ...]}}}).
# One write per run (hundreds of entry files cost ~1.4 ms each); an entry of an older bundle stays in use
# until its script is analysed again.

MAX_INDEX = 50_000  # job keys remembered (the oldest forgotten first), in 16 shards by the key's first digit


def _shard(key: str) -> str:
    return "index-" + key[0]


def _index(base: str, shard: str) -> dict:
    loaded = _load(base, shard, "index")
    jobs = loaded.get("jobs") if loaded else None
    return jobs if type(jobs) is dict else {}


def _path(base: str, name: str) -> str:
    return os.path.join(base, "results", f"v{FORMAT}", name + ".json")


def _load(base: str, name: str, limit_kind: str) -> dict | None:
    import json

    from packlint.caches import LIMITS
    from packlint.safe_io import read_cache_file

    was = _ON[0]
    _ON[0] = False  # (packlint's own entries are not inputs)
    try:
        data = read_cache_file(_path(base, name), LIMITS[limit_kind])
    finally:
        _ON[0] = was
    if data is None:
        return None
    try:
        value = json.loads(data)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) and value.get("key") == name else None


def _store(base: str, name: str, value: dict | None, limit_kind: str, text: str | None = None) -> bool:
    """Write the entry `name`: `value` with its key, or `text`, that JSON already made (Store.save's bundle)."""
    import json

    from packlint.caches import LIMITS, make_dirs, wrote_entry
    from packlint.errors import PacklintError
    from packlint.safe_io import atomic_write

    path = _path(base, name)
    was = _ON[0]
    _ON[0] = False  # (writing is not reading)
    try:
        if text is None:
            assert value is not None
            value["key"] = name
            text = json.dumps(value, separators=(",", ":"))
        data = text.encode("utf-8", "surrogateescape")
        if len(data) > LIMITS[limit_kind]:
            return False
        make_dirs(os.path.dirname(path))
        atomic_write(path, data, what="cache entry", replace_any=True, fsync=False)
        wrote_entry()
        return True
    except (OSError, PacklintError, ValueError, TypeError, RecursionError, UnicodeError):
        return False
    finally:
        _ON[0] = was


class Store:
    """One run's use of the cache: look jobs up, then write what the jobs that ran found."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.index: dict[str, dict] = {}  # shard -> {job key: bundle}
        self.bundles: dict[str, dict | None] = {}  # bundle -> its entries, None: missing or changed inputs
        self.found: dict[str, tuple | None] = {}
        self.probed: dict[tuple[str, str], list[int]] = {}  # (kind, path) -> its signature now, as first probed

    def lookup(self, key: str) -> tuple | None:
        """The outcome `checking._analyse` would give, or None (a miss)."""
        if key not in self.found:
            self.found[key] = self._lookup(key)
        return self.found[key]

    def _lookup(self, key: str) -> tuple | None:
        shard = _shard(key)
        if shard not in self.index:
            self.index[shard] = _index(self.base, shard)
        name = self.index[shard].get(key)
        if type(name) is not str or len(name) != 40 or not name.isalnum():
            return None
        if name not in self.bundles:
            self.bundles[name] = self._bundle(name)
        bundle = self.bundles[name]
        if bundle is None:
            return None
        try:
            entry = bundle["entries"][key]
            own, refs = entry["r"], entry["g"]
            if type(refs) is not list or not bundle["ok_runs"](own):
                return None
            group_ok = bundle["group_ok"]
            if not all(group_ok(n) for n in refs):
                return None
            from packlint.result_codec import decode_outcome

            return decode_outcome(entry["o"])
        except (KeyError, TypeError, ValueError, IndexError, AttributeError):
            return None

    def replay_all(self, files: list[str], options: Any, resolver: Any, result: Any) -> list[tuple] | None:
        """(job, outcome) for every file when each one is a hit (as checking._plan_jobs would make the
        jobs, without a rule table: `result.rules` loads it when a report asks); None at the first miss,
        or when a file's settings need the table (severity overrides) or do not load."""
        from packlint.checking import _Job
        from packlint.errors import PacklintError
        from packlint.result_key import job_key

        out: list[tuple] = []
        tables: dict[tuple, None] = {tuple(str(p) for p in options.cli.rule_files): None}
        excluded = 0
        for path in files:
            try:
                settings = resolver.settings_for(path)
            except PacklintError:
                return None
            if settings.severity:
                return None
            tables[settings.table_key()] = None
            if options.apply_exclude and settings.excluded(path):
                excluded += 1
                continue
            if result.doc_url is None:
                result.doc_url = settings.doc_url
            env = {} if options.real_env else dict(settings.env)
            job = _Job(path, path, None, env, options.inherit_env, list(options.script_args), tuple(settings.known_env),
                       None, settings, None)  # fmt: skip
            outcome = self.lookup(job_key(job, options.cli))
            if outcome is None:
                return None
            out.append((job, outcome))
        result.excluded += excluded
        from packlint.result_codec import LazyRules

        result.rules = LazyRules(list(tables))
        return out

    def report(self, hit: int, analysed: int, stored: int) -> None:
        if os.environ.get("PACKLINT_CACHE_REPORT") == "1":
            import sys

            print(f"packlint: result cache: {hit} hit, {analysed} analysed, {stored} stored", file=sys.stderr)

    def _bundle(self, name: str) -> dict | None:
        """A bundle's entries and a check of its rows (each run of rows checked once, when an entry needs it)."""
        bundle = _load(self.base, name, "results")
        entries = bundle.get("entries") if bundle else None
        rows = bundle.get("inputs") if bundle else None
        groups = bundle.get("groups") if bundle else None
        if type(entries) is not dict or type(rows) is not list or not all(_row_shape(r) for r in rows):
            return None
        if type(groups) is not list:
            return None
        known: dict[tuple[int, int], bool] = {}  # a run of rows -> all unchanged (scripts share most runs)
        seen = self.probed  # (the bundles of a run's workers share rows: each path probed once per lookup run)
        same: list[bool | None] = [None] * len(rows)  # a row -> unchanged (runs of scripts overlap: once a row)

        def ok(first: int, count: int) -> bool:
            hit = known.get((first, count))
            if hit is None:
                if type(first) is not int or type(count) is not int or not 0 <= first <= first + count <= len(rows):
                    raise ValueError("not a run of rows")
                was = _ON[0]
                _ON[0] = False
                try:
                    hit = True
                    for i in range(first, first + count):
                        row_ok = same[i]
                        if row_ok is None:
                            kind, path, sig = rows[i]
                            now = seen.get((kind, path))
                            if now is None:
                                now = seen[kind, path] = probe(kind, path)
                            row_ok = same[i] = now == sig
                        if not row_ok:
                            hit = False
                            break
                    known[first, count] = hit
                finally:
                    _ON[0] = was
            return hit

        def ok_runs(spans: Any) -> bool:
            if type(spans) is not list or len(spans) % 2:
                raise ValueError("not a list of runs")
            return all(ok(spans[n], spans[n + 1]) for n in range(0, len(spans), 2))

        groups_ok: dict[int, bool] = {}  # a group -> all its rows unchanged (checked once, for every entry using it)

        def group_ok(n: Any) -> bool:
            hit = groups_ok.get(n)
            if hit is None:
                if type(n) is not int or not 0 <= n < len(groups):
                    raise ValueError("not a group")
                hit = groups_ok[n] = ok_runs(groups[n])
            return hit

        return {"entries": entries, "ok_runs": ok_runs, "group_ok": group_ok}

    def save(self, done: list[tuple[str, tuple, set[int]]], lock: Any = None) -> int:
        """Write the outcomes `done` (job key, outcome, its input set) in one bundle with the rows they read,
        and index them; the number stored. An outcome is not stored when one of its inputs changed within
        RACY_NS of the run's start (it could change again unseen). `lock`: held while the index is read and
        written (the forked workers of a run each save their own bundle: check_workers._flush)."""
        import json

        from packlint.result_codec import encode_outcome
        from packlint.result_key import _digest

        racy = _START_NS[0] - RACY_NS
        bad = {i for i, (_k, _p, s) in enumerate(_ROWS) if len(s) == 5 and s[2] >= racy}
        touched: dict[int, bool] = {}
        done = [d for d in done if not (bad and touches(d[2], bad, touched))]
        if not done:
            return 0
        rows = [list(r) for r in _ROWS]  # (numbered as read: a memo's reads are runs of consecutive rows)
        groups: list[list[int]] = []  # (each distinct read set once, as runs: scripts share a program's)
        numbered: dict[frozenset[int], int] = {}
        entries = {}
        for k, outcome, used in done:
            own, refs = grouped(used, numbered, groups)
            entries[k] = {"o": encode_outcome(outcome), "r": own, "g": refs}
        # (the rows once as JSON, for the bundle's name and its text: the largest part, 20,000 rows and more)
        inputs = json.dumps(rows, separators=(",", ":"))
        keys = json.dumps(sorted(entries), separators=(",", ":"))
        name = _digest(f"[{inputs},{keys}]".encode("utf-8", "surrogateescape"))
        groups_, entries_, key_ = (json.dumps(v, separators=(",", ":")) for v in (groups, entries, name))
        text = f'{{"inputs":{inputs},"groups":{groups_},"entries":{entries_},"key":{key_}}}'  # (json.dumps of the dict)
        if not _store(self.base, name, None, "results", text):
            return 0
        if lock is not None:
            with lock:
                return self._index_entries(entries, name)
        return self._index_entries(entries, name)

    def _index_entries(self, entries: dict, name: str) -> int:
        stored = 0
        for shard in sorted({_shard(key) for key in entries}):
            index = _index(self.base, shard)  # (again: another run may have written it since)
            mine = [key for key in entries if _shard(key) == shard]
            for key in mine:
                index.pop(key, None)
                index[key] = name
            while len(index) > MAX_INDEX // 16:
                del index[next(iter(index))]
            stored += len(mine) if _store(self.base, shard, {"jobs": index}, "index") else 0
        return stored


def _row_shape(r: Any) -> bool:
    return type(r) is list and len(r) == 3 and r[0] in ("s", "l", "d") and type(r[1]) is str and type(r[2]) is list
