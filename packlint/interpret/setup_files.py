"""Why a sourced file the checkout does not hold is not the checkout's mistake (issue 26: premises of
packlint.evidence, so that PK106 is at most an info on them):

- the checkout's own set-up writes it: TensorFlow's `configure.py` writes `tools/python_bin_path.sh`
  (`open(os.path.join(ROOT, 'tools', 'python_bin_path.sh'), 'w')`), which its CI scripts then source; a set-up
  script does the same with `echo ... > env.sh`;
- the sourcing file is a byte copy of another file of the checkout, beside which the sourced file exists
  (mlcommons' result records keep `config_*.sh` copies of the implementation's `scripts/config_*.sh`, which source
  `$(dirname ${BASH_SOURCE[0]})/config_common.sh`): the copy is a record, the one run is its twin.

Each search reads the checkout's one listing (configs.elsewhere.listed), bounded, once per root, name and run."""

from __future__ import annotations

import os
import re

from packlint import evidence
from packlint.caches import run_memo

MAX_READ_FILES = 4000  # program and script files of the checkout read looking for a writer
MAX_FILE_BYTES = 1 << 20
_WRITERS: dict[tuple[str, str], str | None] = run_memo()
_TWINS: dict[tuple[str, str], tuple[str, ...]] = run_memo()
_PROGRAMS = (".py", ".sh", ".bash")
# Python writing a file, near the name (configure.py's `with open(\n os.path.join(ROOT, 'tools', 'x.sh'),\n 'w')`):
# open() given a write mode, Path.write_text/write_bytes
_PY_WRITES = re.compile(rb"""\bopen\s*\((?s:.)*['"][wa]b?\+?['"]|\.write_text\s*\(|\.write_bytes\s*\(""")


def written_by_checkout(root: str, text: str) -> tuple[str, str] | None:
    """A program or script of the checkout that writes the file `text` names (by its file name, quoted in a Python
    program that writes files, or the target of a shell redirection): a file made at set-up."""
    name = os.path.basename(text.rstrip("/"))
    if not name or name in (".", ".."):
        return None
    key = (root, name)
    if key not in _WRITERS:
        _WRITERS[key] = _writer(root, name)
    found = _WRITERS[key]
    if found is None:
        return None
    return (evidence.MACHINE, f"{found} of the checkout writes {name}: a file made at set-up")


def _writer(root: str, name: str) -> str | None:
    from packlint.configs.elsewhere import listed

    quoted = re.compile(rb"""['"](?:[^'"\n]*/)?""" + re.escape(name.encode()) + rb"""['"]""")
    target = re.escape(name.encode()) + rb"""(?![\w.-])"""
    redirect = re.compile(rb""">>?[ \t]*['"]?[^\s;|&<>'"]*(?<![\w.-])""" + target)
    needle = name.encode()
    read = 0
    for rel in listed(root):
        if not rel.endswith(_PROGRAMS):
            continue
        read += 1
        if read > MAX_READ_FILES:
            return None
        data = _bytes(os.path.join(root, rel))
        if data is None or needle not in data:
            continue
        if rel.endswith(".py"):
            if any(_PY_WRITES.search(_around(data, m.start())) for m in quoted.finditer(data)):
                return rel
        elif redirect.search(data):
            return rel
    return None


def _around(data: bytes, at: int) -> bytes:
    """The lines from two before to two after the one `at` is on."""
    start = at
    for _ in range(3):
        start = data.rfind(b"\n", 0, start) if start > 0 else -1
        if start < 0:
            break
    end = at
    for _ in range(3):
        end = data.find(b"\n", end + 1)
        if end < 0:
            end = len(data)
            break
    return data[max(start, 0) : end]


def _bytes(path: str) -> bytes | None:
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as f:
            return f.read(MAX_FILE_BYTES)
    except OSError:
        return None


def record_copy(root: str, sourcing: str, target: str) -> tuple[str, str] | None:
    """`sourcing` (the file whose `source` line names `target`, missing) is a byte copy of another file of the
    checkout beside which `target` exists: a copy kept for the record, its twin the one run."""
    here = os.path.dirname(os.path.abspath(sourcing))
    # the path as bash would see it from the file's folder: absolute (`$(dirname $0)/x.sh` made absolute), or relative
    # to the checkout root (`$(dirname ${BASH_SOURCE[0]})` run from there) or to the folder itself
    places = [target] if os.path.isabs(target) else [os.path.join(root, target), os.path.join(here, target)]
    rels = {os.path.relpath(os.path.normpath(p), here) for p in places}
    base = os.path.basename(sourcing)
    key = (root, base)
    if key not in _TWINS:
        from packlint.configs.elsewhere import listed

        _TWINS[key] = tuple(f for f in listed(root) if f == base or f.endswith("/" + base))
    mine = _bytes(sourcing)
    if mine is None:
        return None
    for twin in _TWINS[key]:
        path = os.path.join(root, twin)
        if os.path.abspath(path) == os.path.abspath(sourcing):
            continue
        rel = next((r for r in sorted(rels) if os.path.exists(os.path.join(os.path.dirname(path), r))), None)
        if rel is not None and _bytes(path) == mine:
            return (
                evidence.MACHINE,
                f"this file is a byte copy of {twin}, beside which {rel} exists: which copy is run is the machine's",
            )
    return None
