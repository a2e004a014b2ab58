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
MAX_READ_BYTES = 64 << 20
MAX_TWINS = 64  # files of the sourcing file's name compared with it (read only where the sizes agree)
_WRITTEN: dict[str, dict[str, str]] = run_memo()
_TWINS: dict[tuple[str, str], tuple[str, ...]] = run_memo()
_PROGRAMS = (".py", ".sh", ".bash")
# Python writing a file, near the name (configure.py's `with open(\n os.path.join(ROOT, 'tools', 'x.sh'),\n 'w')`):
# open() given a write mode, Path.write_text/write_bytes
_PY_WRITES = re.compile(rb"""\bopen\s*\((?s:.)*['"][wa]b?\+?['"]|\.write_text\s*\(|\.write_bytes\s*\(""")


def written_by_checkout(root: str, text: str) -> tuple[str, str] | None:
    """A program or script of the checkout that writes the file `text` names (by its file name, quoted beside a
    Python write, or the target of a shell redirection): a file made at set-up."""
    name = os.path.basename(text.rstrip("/"))
    if not name or name in (".", ".."):
        return None
    found = _written_names(root).get(name)
    if found is None:
        return None
    return (evidence.MACHINE, f"{found} of the checkout writes {name}: a file made at set-up")


_WRITE_AT = re.compile(rb"""\bopen\s*\(|\.write_text\s*\(|\.write_bytes\s*\(""")
_QUOTED = re.compile(rb"""['"]([^'"\s]{1,200})['"]""")
_REDIRECT = re.compile(rb"""(?<![<>&\d])\d?>>?[ \t]*['"]?([^\s;|&<>'"()]+)""")


def _written_names(root: str) -> dict[str, str]:
    """file name -> the first program of the checkout that writes a file of that name, from one pass over its
    programs and scripts (bounded: MAX_READ_FILES files, MAX_READ_BYTES in all), once per root and run."""
    hit = _WRITTEN.get(root)
    if hit is not None:
        return hit
    from packlint.configs.elsewhere import listed

    out: dict[str, str] = {}
    read, budget = 0, MAX_READ_BYTES
    for rel in listed(root):
        if not rel.endswith(_PROGRAMS):
            continue
        read += 1
        data = _bytes(os.path.join(root, rel)) if read <= MAX_READ_FILES and budget > 0 else None
        if data is None:
            continue
        budget -= len(data)
        if rel.endswith(".py"):
            for m in _WRITE_AT.finditer(data):
                window = _around(data, m.start())
                if _PY_WRITES.search(window):
                    for q in _QUOTED.finditer(window):
                        out.setdefault(os.path.basename(q.group(1).decode("utf-8", "replace")), rel)
        else:
            for m in _REDIRECT.finditer(data):
                out.setdefault(os.path.basename(m.group(1).decode("utf-8", "replace")), rel)
    _WRITTEN[root] = out
    return out


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


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return -1


def _bytes(path: str) -> bytes | None:
    from packlint.safe_io import read_regular

    return read_regular(path, MAX_FILE_BYTES)


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

        _TWINS[key] = tuple(f for f in listed(root) if f == base or f.endswith("/" + base))[:MAX_TWINS]
    mine = _bytes(sourcing)
    if mine is None:
        return None
    for twin in _TWINS[key]:
        path = os.path.join(root, twin)
        if os.path.abspath(path) == os.path.abspath(sourcing):
            continue
        rel = next((r for r in sorted(rels) if os.path.exists(os.path.join(os.path.dirname(path), r))), None)
        if rel is not None and _size(path) == len(mine) and _bytes(path) == mine:
            return (
                evidence.MACHINE,
                f"this file is a byte copy of {twin}, beside which {rel} exists: which copy is run is the machine's",
            )
    return None
