"""The stacks table (packlint/configs/stacks.toml: which program belongs to which training stack) and its
cache: the parsed table kept as JSON in packlint's cache directory (`stacks-<mtime>-<size>.json`), so
that a start reads one small JSON file instead of parsing TOML. A cached table is input like any
other (docs/security.md, "The caches"): read through safe_io.read_cache_file (a regular file of this
user, at most caches.LIMITS["stacks"]), and used only when it has the shape stacks.toml parses to
(`valid_stacks_table`); anything else is a miss, parsed again and written again (R18)."""

from __future__ import annotations

import os
from typing import Any


def cached_table(path: str) -> dict:
    """The parsed table, from a JSON copy in packlint's cache directory when it is current (data only:
    nothing in a cache file can run code), else parsed from the TOML and written there."""
    import json

    from packlint.caches import root

    try:
        st = os.stat(path)
    except OSError:
        st = None
    cache_dir = root()  # (packlint.caches: off with --no-cache or PACKLINT_NO_CACHE)
    cache = None
    raw = None
    if cache_dir is not None and st is not None:
        cache = cache_dir / f"stacks-{st.st_mtime_ns}-{st.st_size}.json"
        # a regular file owned by this user only (never a FIFO, a device or a link: docs/security.md)
        from packlint.caches import LIMITS
        from packlint.safe_io import read_cache_file

        data = read_cache_file(cache, LIMITS["stacks"])
        try:
            raw = json.loads(data) if data is not None else None
        except (ValueError, RecursionError):
            raw = None
        if not valid_stacks_table(raw):  # (another shape: a miss, parsed and written again: R18)
            raw = None
    if raw is None:
        raw = _parse_toml(path)
        if cache is not None:
            from packlint.caches import make_dirs, wrote_entry
            from packlint.errors import PacklintError
            from packlint.safe_io import atomic_write

            try:
                make_dirs(cache.parent)
                atomic_write(cache, json.dumps(raw).encode(), what="stacks cache", replace_any=True)
                wrote_entry()
            except (OSError, PacklintError):
                pass
    return raw


_STR_LIST = "str-list"
# the stacks table's schema: every key an entry may have and its type (stacks.toml holds no other)
_PROGRAM_KEYS: dict[str, Any] = {
    **dict.fromkeys(("stack", "launcher", "yaml", "dist", "cite", "module", "program", "format"), str),
    **dict.fromkeys(("flag", "section"), str),
    **dict.fromkeys(("resolve", "inherit_defaults", "only_with_file"), bool),
    **dict.fromkeys(("overrides", "file_overrides"), _STR_LIST),
    **dict.fromkeys(("nested", "file"), dict),
}
_MAX_STACK_ENTRIES = 1000


def _plain(value: Any, depth: int = 0) -> bool:
    """JSON values of bounded depth (a dict's keys are strings)."""
    if isinstance(value, (str, bool, int, float)) or value is None:
        return True
    if depth > 4:
        return False
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


def _typed(value: Any, want: Any) -> bool:
    if want is _STR_LIST:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if want is dict:
        return isinstance(value, dict) and _plain(value)
    return type(value) is want


def valid_stacks_table(raw: Any) -> bool:
    """Whether a cached stacks table has the shape stacks.toml parses to (R18: a planted or damaged
    entry is a miss, never a KeyError on every script)."""
    if not isinstance(raw, dict) or set(raw) - {"program", "launcher_files", "generic"}:
        return False
    program, generic, files = raw.get("program"), raw.get("generic"), raw.get("launcher_files", {})
    if not isinstance(program, list) or not 0 < len(program) <= _MAX_STACK_ENTRIES:
        return False
    for entry in program:
        if not isinstance(entry, dict) or not isinstance(entry.get("stack"), str):
            return False
        if any(k not in _PROGRAM_KEYS or not _typed(v, _PROGRAM_KEYS[k]) for k, v in entry.items()):
            return False
    if not isinstance(generic, dict) or not _plain(generic):
        return False
    if not (_typed(generic.get("flags"), _STR_LIST) and _typed(generic.get("suffixes"), _STR_LIST)):
        return False
    return isinstance(files, dict) and all(isinstance(v, dict) and _plain(v) for v in files.values())


def _parse_toml(path: str) -> dict:
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    from packlint.safe_io import CONFIG_LIMIT, read_bounded

    return tomllib.loads(read_bounded(path, CONFIG_LIMIT, "stacks table").decode("utf-8"))
