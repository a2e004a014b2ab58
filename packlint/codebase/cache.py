"""The on-disk cache of code-base facts, in the user cache dir (platformdirs), or PACKLINT_CACHE_DIR.

Two kinds of entries, both JSON:
- `files/<sha1 of content>.json`: one file's facts (imports, env reads, sys.path edits). Keyed by
  content, so an unchanged file is never read with `ast` again, whatever its path.
- `programs/<sha1 of program, roots, PYTHONPATH>.json`: a program's whole CodeFacts plus a manifest of
  every file it was built from with (mtime_ns, size, sha1). A warm check only stats those files;
  a file whose mtime changed is hashed, and only a changed hash rebuilds the facts.
A broken or unwritable cache is ignored (never an error).
"""

from __future__ import annotations

import json
import os

CACHE_VERSION = 2  # 2: FlagSchema.kind


def cache_dir(explicit: str | None = None) -> str:
    if explicit:
        return explicit
    env = os.environ.get("PACKLINT_CACHE_DIR")
    if env:
        return env
    try:
        from platformdirs import user_cache_dir

        return os.path.join(user_cache_dir("packlint", appauthor=False), "codebase")
    except ImportError:  # platformdirs missing: the XDG default
        return os.path.join(os.path.expanduser("~/.cache"), "packlint", "codebase")


def _path(base: str, kind: str, key: str) -> str:
    return os.path.join(base, f"v{CACHE_VERSION}", kind, key[:2], key + ".json")


def load(base: str, kind: str, key: str) -> dict | None:
    try:
        with open(_path(base, kind, key), "rb") as fh:
            return json.loads(fh.read())
    except (OSError, ValueError):
        return None


def store(base: str, kind: str, key: str, value: dict) -> None:
    path = _path(base, kind, key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(value, fh, separators=(",", ":"))
        os.replace(tmp, path)
    except OSError:
        pass
