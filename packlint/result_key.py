"""The result cache's key of one script's entry (packlint.result_cache): everything besides the files its check read
that decides its outcome. The rules it ran follow from its settings (selectors, rule files) and the rule files' contents
(inputs)."""

from __future__ import annotations

import os
from typing import Any

from packlint.result_cache import _CWD, _ORIG, FORMAT, probe

_ENV_IN_KEY = ("PATH", "HOME", "TMPDIR", "TEMP", "TMP")
_NOT_IN_KEY = ("PACKLINT_JOBS", "PACKLINT_CACHE_REPORT", "PACKLINT_CACHE_MAX_MB")
_RUN_PARTS: list[Any] = []  # what every key of this run shares, hashed (job_key)


def _run_parts(cli: Any) -> list[Any]:
    import sys

    from packlint import __version__
    from packlint.scope import _ROOTS, outside_allowed

    env = {
        k: v for k, v in os.environ.items() if k in _ENV_IN_KEY or (k.startswith("PACKLINT_") and k not in _NOT_IN_KEY)
    }
    from packlint.scope import _CODE_BASES

    where = [_CWD[0] or os.getcwd(), list(_ROOTS), list(_CODE_BASES), outside_allowed()]
    return [FORMAT, __version__, sys.version, sys.prefix, where, env, vars(cli), _own_code(), _import_path()]


def _own_code() -> list[Any]:
    """packlint's own modules and data: an edited checkout or a reinstall at another commit of the same version
    changes what a check finds, and the import system's reads are not recorded (posix, not os)."""
    import packlint

    base = os.path.dirname(os.path.abspath(packlint.__file__))
    scandir = _ORIG.get("scandir", os.scandir)  # (not recorded: the key holds them)
    out: list[Any] = []
    todo = [base]
    while todo and len(out) < 2000:
        d = todo.pop()
        try:
            with scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:  # (its data too: the rule files, the snapshots, the stacks table, read once a process)
            if e.name == "__pycache__" or e.name.startswith("."):
                continue
            if e.is_dir(follow_symlinks=e.name == "_rules"):
                todo.append(e.path)
            elif e.name.endswith((".py", ".toml", ".json")):
                out.append([os.path.relpath(e.path, base), probe("s", e.path)])
    return out


def _import_path() -> list[Any]:
    """`sys.path`, and the signature of its site-packages directories: installed stacks are located with
    importlib's finders (hydra.stack_roots, versions), whose reads are not recorded; a PYTHONPATH changes the
    list, a `pip install` or uninstall the directory (other entries, a checkout on PYTHONPATH, change with any
    file written in them: not a signature worth a miss)."""
    import sys

    return [[p, probe("d", p) if os.path.basename(p) in ("site-packages", "dist-packages") else None] for p in sys.path]


def job_key(job: Any, cli: Any) -> str:
    """The hex key of one job's entry: everything besides the files read that decides its result. The
    rules it ran follow from the settings (selectors, rule files) and the rule files' contents (inputs)."""
    import json

    if not _RUN_PARTS:  # (hashed once: packlint's own files and the import path are most of it, tens of KB)
        shared = json.dumps(_run_parts(cli), default=repr, sort_keys=True).encode("utf-8", "surrogateescape")
        _RUN_PARTS.append(_hasher(shared + b"\n"))
    parts = [job.path, job.display, job.settings.to_json(), sorted(job.env.items()), job.args, list(job.known_env)]
    h = _RUN_PARTS[0].copy()
    h.update(json.dumps(parts, default=repr, sort_keys=True).encode("utf-8", "surrogateescape"))
    return str(h.hexdigest())


def _hasher(data: bytes) -> Any:
    try:
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - other Pythons
        from hashlib import blake2b
    return blake2b(data, digest_size=20)


def _digest(data: bytes) -> str:
    """40 hex digits. CPython's own BLAKE2 (`hashlib` loads OpenSSL first: ~3 ms of a cold start)."""
    return str(_hasher(data).hexdigest())
