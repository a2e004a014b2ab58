"""Reading one program: its import closure (env reads) and its flag schema.

The import closure starts at the program file and follows every `import` (at any depth, inside
functions too) through the module search path the program would have: the program's directory, the
`sys.path` edits the code makes (`sys.path.append(os.path.dirname(__file__) + '/..')`), the launch's
PYTHONPATH, then the code-base roots. Modules not found on disk (torch, transformers...) are listed as
unresolved: their env reads are not seen.

The schema comes from packlint.codebase.argparse_reader, which follows the program's calls down to
`parse_args`. Results are cached (packlint.codebase.cache).
"""

from __future__ import annotations

import os

from packlint.caches import IN_RUN, memo, once_per_run, run_memo
from packlint.codebase import cache
from packlint.codebase.filefacts import (
    SourceFile,
    cache_key_digest,
    concrete_path,
    env_reads_of,
    extract_file_facts,
    read_source,
)
from packlint.codebase.model import CodeFacts, ProgramResolution, SkippedFile
from packlint.codebase.options import CodeOptions

READER_VERSION = 1
_CODE_DIGEST: list[str] = []


def reader_sources() -> list[str]:
    """Every source file of this package, its sub-packages (argparse_reader/) included, in a fixed order."""
    here = os.path.dirname(os.path.abspath(__file__))
    files: list[str] = []
    for root, dirs, names in os.walk(here):
        dirs.sort()
        files.extend(os.path.join(root, name) for name in sorted(names) if name.endswith(".py"))
    return files


def reader_digest() -> str:
    """A digest of this package's own source: a changed reader never trusts facts an older one cached."""
    if not _CODE_DIGEST:
        import hashlib

        h = hashlib.sha1(str(READER_VERSION).encode())
        for path in reader_sources():
            try:
                with open(path, "rb") as fh:
                    h.update(fh.read())
            except OSError:
                pass
        _CODE_DIGEST.append(h.hexdigest())
    return _CODE_DIGEST[0]


MAX_FILES = 20000  # files of one program's import walk; past it the facts say so (a skipped entry)


# The programs of a tree import the same files through the same search paths (MindSpeed-LLM: 23 programs, 4,203
# file visits for 393 files): each program's index read every file again (to digest it) and looked every
# module up again on disk. For one check run (caches.run_memo: the tree does not change under a run, and the
# entries carry their reads for the result cache): (search path, module) -> file, and path -> the file's bytes
# and digest (a copy without its syntax tree is handed out: the trees stay bounded by filefacts' run memo),
# bounded by the bytes held.
_RUN_FOUND = run_memo()
_RUN_TARGETS = run_memo()  # an import statement's files and what it left unresolved (Closure._targets)
_RUN_SOURCES = run_memo()
_RUN_SOURCE_BYTES = [0]
MAX_RUN_SOURCE_BYTES = 64 * 1024 * 1024


_SEARCH_IDS: dict[tuple[str, ...], int] = {}


def _search_id(search: list[str]) -> int:
    """A number for a search path (a long one hashed once, not at every look-up)."""
    return _SEARCH_IDS.setdefault(tuple(search), len(_SEARCH_IDS))


def _run_source(path: str) -> SourceFile | None:
    """read_source, once per path and run."""
    if not _RUN_SOURCES:
        _RUN_SOURCE_BYTES[0] = 0  # (a new run: caches.clear_run_memos emptied the memo)
    if not IN_RUN[0] or _RUN_SOURCE_BYTES[0] >= MAX_RUN_SOURCE_BYTES:
        return read_source(path)
    if path in _RUN_SOURCES:
        kept = _RUN_SOURCES[path]
        return kept.fresh() if kept is not None else None
    src = read_source(path)
    _RUN_SOURCES[path] = src.fresh() if src is not None else None
    _RUN_SOURCE_BYTES[0] += len(src.data) if src is not None else 0
    return src


class ModuleIndex:
    """Module name -> file over a search path, and parsed files by path (read once per session)."""

    def __init__(
        self, search: list[str], blocked: dict[str, str] | None = None, fallback: frozenset = frozenset()
    ) -> None:
        self.search = list(dict.fromkeys(os.path.abspath(s) for s in search if s))
        # top-level packages not taken from the code-base roots (`fallback`): a release the program's own project
        # pins instead (subprojects.pinned_away)
        self.blocked = dict(blocked or {})
        self._fallback = fallback
        self._search_id = _search_id(self.search)
        self.sources: dict[str, SourceFile | None] = {}
        self._found: dict[str, str | None] = {}

    def add_path(self, path: str, front: bool = False) -> None:
        path = os.path.abspath(path)
        if path in self.search:
            return
        if front:
            self.search.insert(0, path)
        else:
            self.search.append(path)
        self._search_id = _search_id(self.search)
        self._found = {k: v for k, v in self._found.items() if v is not None}

    def source(self, path: str) -> SourceFile | None:
        if path not in self.sources:
            self.sources[path] = _run_source(path)
        return self.sources[path]

    def find(self, module: str, base: str | None = None) -> str | None:
        """The file of `module` (a package's __init__.py), searched under `base` only when given."""
        key = module if base is None else f"{base}::{module}"
        if key in self._found:
            return self._found[key]
        run_key = (-1 if base is not None else self._search_id, key, tuple(self.blocked))
        if IN_RUN[0] and run_key in _RUN_FOUND:
            self._found[key] = _RUN_FOUND[run_key]
            return self._found[key]
        rel = module.replace(".", "/")
        found = None
        shadowed = self.blocked and module.split(".", 1)[0] in self.blocked
        for d in [base] if base is not None else self.search:
            if shadowed and d in self._fallback:
                continue
            for cand in (rel + "/__init__.py", rel + ".py"):  # a package wins over a module, as in Python
                f = os.path.join(d, cand)
                if os.path.isfile(f):
                    found = os.path.abspath(f)
                    break
            if found:
                break
            if base is None and os.path.isdir(os.path.join(d, rel)) and "." not in module:
                pass  # a namespace package: its submodules are found by their own names
        self._found[key] = found
        if IN_RUN[0]:
            _RUN_FOUND[run_key] = found
        return found

    def is_namespace(self, module: str) -> str | None:
        rel = module.replace(".", "/")
        for d in self.search:
            if os.path.isdir(os.path.join(d, rel)):
                return os.path.join(d, rel)
        return None

    def module_name(self, file: str) -> str | None:
        """The dotted name `file` has on the search path (for relative imports)."""
        file = os.path.abspath(file)
        for d in self.search:
            if file.startswith(d + os.sep):
                rel = os.path.relpath(file, d)[:-3].replace(os.sep, ".")
                return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel
        return None

    def resolve_relative(self, file: str, level: int, module: str) -> str:
        """The directory-based target of `from ..x import y` in `file`, as a path (no .py)."""
        d = os.path.dirname(os.path.abspath(file))
        for _ in range(level - 1):
            d = os.path.dirname(d)
        return os.path.join(d, module.replace(".", "/")) if module else d


def _file_of_path(base: str) -> str | None:
    for cand in (os.path.join(base, "__init__.py"), base + ".py"):
        if os.path.isfile(cand):
            return os.path.abspath(cand)
    return None


LOOK_AHEAD = 8  # files of the walk's queue made while another worker makes the next one (Closure._meanwhile)


class Closure:
    """The import closure of a program, with per-file facts (content-hash cached)."""

    def __init__(self, index: ModuleIndex, options: CodeOptions) -> None:
        self.index = index
        self.options = options
        self.facts: dict[str, dict] = {}
        self.order: list[str] = []
        self.unresolved: set[str] = set()
        self.skipped: list[SkippedFile] = []
        self.cache_base = cache.cache_dir(options.cache_dir) if options.use_cache else None

    def file_facts(self, path: str, queue: list[str] | None = None) -> dict | None:
        """The file's facts (`queue`: the files the walk reads next; while another worker makes this file's facts,
        this one makes theirs instead of waiting idle)."""
        src = self.index.source(path)
        if src is None:
            return None
        if src.unread is not None:  # (exists, not read: never cached, its facts are unknown)
            return {"error": src.unread}
        key = cache_key_digest([reader_digest(), src.digest])
        if queue and self.cache_base and not dict.__contains__(FILE_MEMO, key) and cache.busy(key, "files"):
            self._meanwhile(queue)  # (before this file's look-up: what they read is not this entry's input)
        memo = FILE_MEMO.get(key)  # (keyed by content: never stale)
        if memo is not None:
            return memo
        if len(FILE_MEMO) >= MAX_FILE_MEMO:
            FILE_MEMO.clear()
        hit = self._stored(key) if self.cache_base else None
        if hit is None:
            with cache.building("files", key, self.cache_base) as waited:  # (workers: one parses, others wait)
                hit = self._stored(key) if waited else None
                if hit is None:
                    hit = extract_file_facts(src)
                    if self.cache_base:
                        cache.store(self.cache_base, "files", key, hit)
        FILE_MEMO[key] = hit
        return hit

    def _meanwhile(self, queue: list[str]) -> None:
        """Make the facts of the next files of the walk that no worker is making (at most LOOK_AHEAD): they are
        kept by content (FILE_MEMO, the cache directory), so the walk's order and what it finds do not change."""
        for path in queue[:LOOK_AHEAD]:
            src = self.index.source(path)
            if src is None or src.unread is not None:
                continue
            key = cache_key_digest([reader_digest(), src.digest])
            if dict.__contains__(FILE_MEMO, key) or cache.busy(key, "files"):
                continue
            self.file_facts(path)

    def _stored(self, key: str) -> dict | None:
        hit = cache.load(self.cache_base, "files", key)  # type: ignore[arg-type]
        return hit if hit is not None and cache.valid_file_facts(hit) else None  # (another shape: a miss)

    def walk(self, start: str) -> None:
        queue = [os.path.abspath(start)]
        seen = set(queue)
        while queue:
            if len(self.order) >= MAX_FILES:
                # bounded in files, not in time: the facts must not depend on how loaded the machine is
                self.skipped.append(
                    SkippedFile(
                        queue[0],
                        f"the import walk stopped after {MAX_FILES} files ({len(queue)} more not read): "
                        "their flags and env reads are not known",
                    )
                )
                break
            path = queue.pop(0)
            facts = self.file_facts(path, queue)
            if facts is None:
                continue
            self.facts[path] = facts
            self.order.append(path)
            if "error" in facts:
                self.skipped.append(SkippedFile(path, facts["error"]))
                continue
            for expr in facts.get("syspath", []):
                p = concrete_path(expr, path)
                if p is not None and os.path.isdir(p):
                    self.index.add_path(p)
            for level, module, names, _line in facts.get("imports", []):
                for target in self._targets(path, level, module, names):
                    if target not in seen:
                        seen.add(target)
                        queue.append(target)

    def _targets(self, file: str, level: int, module: str, names: list[str]) -> list[str]:
        """The files an import statement runs, once per run for the same import (an absolute one under the same
        search path, a relative one in the same file): the programs of a tree import the same modules."""
        if not IN_RUN[0]:
            found, unresolved = self._find_targets(file, level, module, names)
            if unresolved is not None:
                self.unresolved.add(unresolved)
            return found
        index = self.index
        key = (
            ("r", file, level, module, *names) if level else ("a", index._search_id, *index.blocked, "", module, *names)
        )
        hit = _RUN_TARGETS.get(key)
        if hit is None:
            hit = _RUN_TARGETS[key] = self._find_targets(file, level, module, names)
        if hit[1] is not None:
            self.unresolved.add(hit[1])
        return list(hit[0])

    def _find_targets(self, file: str, level: int, module: str, names: list[str]) -> tuple[list[str], str | None]:
        """(the files, the top-level package left unresolved or None)."""
        out = []
        if level:
            base = self.index.resolve_relative(file, level, module)
            f = _file_of_path(base)
            if f:
                out.append(f)
            for n in names:
                sub = _file_of_path(os.path.join(base, n))
                if sub:
                    out.append(sub)
            return out, None
        parts = module.split(".")
        found_any = False
        for i in range(1, len(parts) + 1):  # importing a.b.c runs a/__init__ and a/b/__init__ too
            f = self.index.find(".".join(parts[:i]))
            if f:
                out.append(f)
                found_any = True
        for n in names:
            if n == "*":
                continue
            f = self.index.find(module + "." + n)
            if f:
                out.append(f)
        return out, (parts[0] if not found_any and not (names and out) else None)

    def env_reads(self):
        wrappers: dict[str, int] = {}
        for facts in self.facts.values():
            for name, idx in facts.get("wrappers", []):
                wrappers.setdefault(name, idx)
        out = []
        for path in self.order:
            reads = env_reads_of(self.facts[path], path, wrappers)
            for row, level, module, name in self.facts[path].get("env_refs", []):
                value = self._constant(path, level, module, name)
                if value is not None and 0 <= row < len(reads):
                    reads[row].name, reads[row].computed = value, False
            out.extend(reads)
        return out

    def _constant(self, file: str, level: int, module: str, name: str) -> str | None:
        """The string a module-level `name = "..."` of the module `from module import name` names, when that
        module is in the closure (`from nemo.constants import NEMO_ENV_VARNAME_VERSION`)."""
        if level:
            target = _file_of_path(self.index.resolve_relative(file, level, module))
        else:
            target = self.index.find(module) if module else None
        facts = self.facts.get(target) if target else None
        value = (facts or {}).get("consts", {}).get(name)
        return value if isinstance(value, str) else None


def initial_search(
    program_file: str, roots: list[str], pythonpath: list[str], subprojects: list[str] | None = None
) -> list[str]:
    """sys.path as the program starts: its own directory, PYTHONPATH, the packages the checkout's
    sub-projects install (packlint.codebase.subprojects: `examples/NLU/src` of a `examples/NLU/setup.py`),
    then the code-base roots (a fallback for code that relies on an install or a `cd`), then a root's `src/`
    (a src-layout project installed with `pip install -e .`: open-r1's `src/open_r1/sft.py` imports
    `open_r1.configs`)."""
    src = [os.path.join(r, "src") for r in roots if os.path.isdir(os.path.join(r, "src"))]
    own = [os.path.dirname(os.path.abspath(program_file))]
    return own + list(pythonpath) + list(subprojects or []) + list(roots) + src


def _manifest_ok(manifest: dict) -> bool:
    import hashlib
    import stat

    from packlint.codebase.filefacts import MAX_SOURCE_BYTES
    from packlint.safe_io import read_regular

    for path, (mtime, size, digest) in manifest.items():
        try:
            st = os.stat(path)
        except OSError:
            return False
        if not stat.S_ISREG(st.st_mode):  # (a FIFO or device now: never opened)
            return False
        if st.st_mtime_ns == mtime and st.st_size == size:
            continue
        data = read_regular(path, MAX_SOURCE_BYTES)
        if data is None or hashlib.sha1(data).hexdigest() != digest:
            return False
    return True


def _stored_program(base: str, key: str) -> CodeFacts | None:
    """The program's facts from the cache directory's entry, or None (no entry, another version, its files changed)."""
    hit = cache.load(base, "programs", key)
    if hit is None or hit.get("version") != reader_digest():
        return None
    return _cached_program(hit)


def _cached_program(hit: dict) -> CodeFacts | None:
    """The CodeFacts of a `programs` entry, or None when its files changed or it has another shape
    than this code writes (it must come back unchanged through from_json -> to_json)."""
    try:
        manifest = hit.get("manifest")
        if type(manifest) is not dict or not all(
            type(v) is list and len(v) == 3 and type(v[0]) is int and type(v[1]) is int and type(v[2]) is str
            for v in manifest.values()
        ):
            return None
        if not _manifest_ok(manifest):
            return None
        raw = hit.get("facts")
        if type(raw) is not dict:
            return None
        facts = CodeFacts.from_json(raw)
        if facts.to_json() != raw:
            return None
        return facts
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError):
        return None


def read_program(
    program_file: str,
    roots: list[str],
    pythonpath: list[str],
    options: CodeOptions,
    resolution: ProgramResolution | None = None,
) -> CodeFacts:
    program_file = os.path.abspath(program_file)
    if resolution is None:
        resolution = ProgramResolution(
            program_file,
            program_file,
            "absolute",
            f"{program_file} read directly",
            os.path.dirname(program_file),
            list(roots),
            list(pythonpath),
        )
    from packlint.codebase.subprojects import pinned_away, subproject_paths

    subprojects = subproject_paths(program_file, roots)
    blocked = pinned_away(program_file, roots)
    key = cache_key_digest([reader_digest(), program_file, list(roots), list(pythonpath), subprojects, blocked])
    stamp = _stamp(program_file)
    memo = PROGRAM_MEMO.get(key) if IN_RUN[0] else None
    if memo is not None and memo[0] == stamp:  # (read once per run, --no-cache or not: issue 31)
        return _with_resolution(memo[1], resolution)
    base = cache.cache_dir(options.cache_dir) if options.use_cache else None
    cached = _stored_program(base, key) if base else None
    if cached is None:
        # (forked workers: one builds, the others wait or put their script aside: check_workers._analyse_deferring)
        with cache.building("programs", key, base, os.path.basename(program_file)) as waited:
            cached = _stored_program(base, key) if base and waited else None
            if cached is None:
                facts, manifest = build_facts(
                    program_file, roots, pythonpath, options, resolution, subprojects, blocked
                )
                if base:
                    entry = {"version": reader_digest(), "manifest": manifest, "facts": facts.to_json()}
                    cache.store(base, "programs", key, entry)
    if cached is not None:
        facts = cached
    if IN_RUN[0]:
        PROGRAM_MEMO[key] = (stamp, facts)
    return _with_resolution(facts, resolution)


# The programs read in this run (key: the cache key), whatever --no-cache says: the cache saves work
# between runs, this memo within one (a repository's scripts launch the same few programs). Used only
# while a run is on (caches.IN_RUN, set by checking.check_paths), cleared by codebase.resolve.clear_run_memos
# at the start of each run (the tree may change between runs).
PROGRAM_MEMO: dict[str, tuple[tuple[int, int] | None, CodeFacts]] = memo()
# one file's facts by content digest, for this run (cleared with PROGRAM_MEMO)
FILE_MEMO: dict[str, dict] = memo()
MAX_FILE_MEMO = 50_000


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def _with_resolution(facts: CodeFacts, resolution: ProgramResolution) -> CodeFacts:
    import copy

    out = copy.copy(facts)
    out.resolution = resolution
    return out


# A package the program imports that is not on its import path but vendored in the tree (issue 18,
# 7a): `third_party/Megatron-LM/megatron/...` beside a root `pretrain_gpt.py`. The marker file says the
# directory holds that package's parser; the walk is bounded (directories and depth).
_VENDORED_MARKERS = {"megatron": ("training/arguments.py", "arguments.py")}
_VENDORED_MAX_DIRS = 3000
_VENDORED_MAX_DEPTH = 5


def _find_vendored(package: str, bases: list[str]) -> str | None:
    """The directory that holds `package` (with its parser file) under one of `bases`, or None; once per run (each
    program of a tree that imports an unresolved `megatron` walks the same tree)."""
    found: str | None = once_per_run(_VENDORED, (package, *bases), lambda: _walk_for_vendored(package, bases))
    return found


_VENDORED: dict[tuple[str, ...], str | None] = run_memo()


def _walk_for_vendored(package: str, bases: list[str]) -> str | None:
    markers = _VENDORED_MARKERS.get(package, ())
    seen = 0
    for base in bases:
        base = os.path.abspath(base)
        depth0 = base.rstrip(os.sep).count(os.sep)
        for dirpath, dirnames, _files in os.walk(base):
            seen += 1
            if seen > _VENDORED_MAX_DIRS:
                return None
            dirnames[:] = sorted(
                d for d in dirnames if not d.startswith(".") and d not in ("__pycache__", "node_modules")
            )
            if dirpath.count(os.sep) - depth0 >= _VENDORED_MAX_DEPTH:
                dirnames[:] = []
            if package in dirnames and any(os.path.isfile(os.path.join(dirpath, package, m)) for m in markers):
                return dirpath
    return None


def _vendored_schema(program_file: str, closure, index: ModuleIndex, roots: list[str], resolution):
    """The schema of a program whose parser package is imported but not on its import path, read from
    the copy the tree vendors (None when there is none). A note says where it was read from."""
    from packlint.codebase.argparse_reader import read_schema

    for package in sorted(closure.unresolved):
        if package not in _VENDORED_MARKERS or package in index.blocked:
            continue
        bases = [b for b in [resolution.root, *roots] if b] or [os.path.dirname(program_file)]
        where = _find_vendored(package, list(dict.fromkeys(bases)))
        if where is None:
            continue
        index.add_path(where)
        schema = read_schema(program_file, index)
        if schema is not None:
            schema.notes.append(
                f"the program imports `{package}`, which is not on its import path; its parser was read from "
                f"the copy the tree vendors at {where} (issue 18: the release the tree vendors)"
            )
            return schema
    return None


def _startup(program_file: str, index: ModuleIndex, files: list[str]) -> dict | None:
    """The program's startup checks (issue 18); a reader bug costs the checks, never the check run."""
    from packlint.codebase.startup_checks import extract_startup

    try:
        return extract_startup(program_file, index, files)
    except (RecursionError, ValueError, TypeError, AttributeError, KeyError, IndexError):
        return None


def build_facts(
    program_file: str,
    roots: list[str],
    pythonpath: list[str],
    options: CodeOptions,
    resolution: ProgramResolution,
    subprojects: list[str] | None = None,
    blocked: dict[str, str] | None = None,
) -> tuple[CodeFacts, dict]:
    """Read the program from source (no cache of the whole): closure, env reads, schema."""
    from packlint.codebase.argparse_reader import read_schema

    search = [os.path.abspath(s) for s in initial_search(program_file, roots, pythonpath, subprojects) if s]
    own = 1 + len(pythonpath) + len(subprojects or [])  # (the roots and their src/ follow: initial_search)
    index = ModuleIndex(search, blocked, frozenset(search[own:]) - frozenset(search[:own]))
    closure = Closure(index, options)
    closure.walk(program_file)
    schema = read_schema(program_file, index)
    if schema is None and closure.unresolved:
        schema = _vendored_schema(program_file, closure, index, roots, resolution)
    skipped = list(closure.skipped)
    for path, src in index.sources.items():
        if src is not None and src.error and not any(s.file == path for s in skipped):
            skipped.append(SkippedFile(path, src.error))
    import sys

    stdlib: frozenset[str] = getattr(sys, "stdlib_module_names", frozenset())
    unresolved = sorted(m for m in closure.unresolved if m not in stdlib and m != "__future__")
    facts = CodeFacts(resolution, schema, closure.env_reads(), list(closure.order), unresolved, skipped)
    facts.startup = _startup(program_file, index, closure.order)
    manifest = {}
    for path, src in index.sources.items():
        if src is None:
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        manifest[path] = [st.st_mtime_ns, st.st_size, src.digest]
    return facts, manifest
