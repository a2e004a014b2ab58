"""The built-in rule table as compiled when the release was cut (tools/release.py), shipped in the package beside the
rule files: `packlint/_rules/compiled-<key>.json`. A check whose cache holds no compiled table (a CI runner's first
check, the first check after an install, `--no-cache`) decodes it instead of parsing, validating and compiling the rule
files (~0.1 s with pydantic's import, before any script is read).

It is used only where its key is the key of what is installed beside it: the rule files' names and bytes, the contents
of the modules that compile and encode them, the table cache's format and packlint's version. A checkout edited since
the release (another rule, another condition function) has another key: its rules are compiled, as without this file;
the next release writes the file again (`tools/release.py`; `--check` says when it is out of date). Nothing in the file
can run code: it is rule_cache's JSON data, decoded as the cache directory's table is."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

PREFIX = "compiled-"


def key(blobs: list[tuple[str, bytes, bool]], version: str) -> str:
    """The content key of the built-in table compiled from `blobs` (rule_table.load_table's) by this packlint."""
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - other Pythons
        from hashlib import blake2b

    from packlint.rule_cache import DATA_VERSION, FORMAT
    from packlint.rule_table import CACHE_FORMAT, compiler_modules

    h = blake2b(f"{CACHE_FORMAT}:{FORMAT}:{DATA_VERSION}:{version}".encode())
    for name, data, _builtin in blobs:
        h.update(f"\0{os.path.basename(name)}\0{len(data)}\0".encode())
        h.update(data)
    here = Path(__file__).resolve().parent
    from packlint.safe_io import read_regular

    for path in compiler_modules():
        data = read_regular(path, 1 << 22) or b""
        h.update(f"\0{os.path.relpath(path, here)}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()[:32]


def shipped_table(blobs: list[tuple[str, bytes, bool]], fallback: Any = None, home: Path | None = None) -> Any:
    """The shipped table for the built-in rule files `blobs`, or None (a checkout, another key, or a file that does not
    decode). Only from the installed package's own `_rules` folder (`home`: the package's folder)."""
    if not blobs:
        return None
    folder = Path(blobs[0][0]).parent
    if folder != (home or Path(__file__).resolve().parent) / "_rules":
        return None
    from packlint import __version__

    path = folder / f"{PREFIX}{key(blobs, __version__)}.json"
    from packlint.caches import LIMITS
    from packlint.safe_io import read_regular

    data = read_regular(path, LIMITS["rules"])  # (the package's own file, as its modules: whoever installed it)
    if data is None:
        return None
    from packlint.rule_cache import CacheFormatError, loads
    from packlint.rule_table import RuleTable

    try:
        table = loads(data, fallback)
    except CacheFormatError:
        return None
    return table if isinstance(table, RuleTable) else None


def shipped_file(rules_dir: Path, version: str) -> tuple[Path, str]:
    """The file the release at `version` ships for the rule files of `rules_dir`, and its content."""
    from packlint.rule_cache import dumps
    from packlint.rule_table import compile_table
    from packlint.safe_io import CONFIG_LIMIT, read_bounded

    blobs = [(str(p), read_bounded(p, CONFIG_LIMIT, "rule file"), True) for p in sorted(rules_dir.glob("*.toml"))]
    return rules_dir / f"{PREFIX}{key(blobs, version)}.json", dumps(compile_table(blobs))


def stale_files(rules_dir: Path, keep: Path) -> list[Path]:
    """Tables of earlier releases in `rules_dir` (the release removes them)."""
    return sorted(p for p in rules_dir.glob(f"{PREFIX}*.json") if p != keep)
