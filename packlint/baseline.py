"""Fingerprints that survive line shifts, and the baseline file built from them.

A finding's fingerprint hashes: its path relative to the repository root, its code, the
whitespace-normalised text of the line it points at, and its occurrence index among findings with the
same three (in line order). Lines added or removed elsewhere in the file do not change it; editing the
flagged line does (the finding is then new). SARIF's `partialFingerprints` carry the same value.

`packlint check --write-baseline FILE` records today's findings; `--baseline FILE` then hides the ones
recorded and reports only new ones (a finding recorded twice hides two occurrences, not more).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from packlint.errors import PacklintError
from packlint.findings import Finding

BASELINE_VERSION = 1
FINGERPRINT_KEY = "packlint/v1"


def repo_root(start: str | None = None) -> Path:
    """The closest directory at or above `start` (default: the cwd) holding `.git`; else the cwd."""
    here = Path(os.path.abspath(start or os.getcwd()))
    for d in (here, *here.parents):
        if (d / ".git").exists():
            return d
    return Path(os.path.abspath(os.getcwd()))


def relative_path(path: str, root: Path) -> str:
    """`path` relative to `root` in POSIX form; a path outside the root stays absolute (stdin names as given)."""
    if path.startswith("<") or path == "-":
        return path
    absolute = Path(os.path.abspath(path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return absolute.as_posix()


def normalized_line(lines: list[str] | None, line: int) -> str:
    if not lines or not 1 <= line <= len(lines):
        return ""
    return " ".join(lines[line - 1].split())


def fingerprints(findings: list[Finding], read_lines: Callable[[str], list[str] | None], root: Path) -> list[str]:
    """One fingerprint per finding, in the same order."""
    import hashlib  # only reports that carry fingerprints (json, sarif, baselines) pay for it

    keyed = []
    for i, f in enumerate(findings):
        rel = relative_path(f.location.path, root)
        keyed.append((rel, f.code, normalized_line(read_lines(f.location.path), f.location.line), i))
    order = sorted(
        range(len(findings)),
        key=lambda i: (keyed[i][:3], findings[i].location.line, findings[i].location.column, findings[i].message),
    )
    seen: dict[tuple, int] = {}
    out = [""] * len(findings)
    for i in order:
        base = keyed[i][:3]
        n = seen.get(base, 0)
        seen[base] = n + 1
        h = hashlib.sha256("\0".join((*base, str(n))).encode("utf-8", "surrogatepass")).hexdigest()[:32]
        out[i] = h
    return out


def write_baseline(path: str, findings: list[Finding], prints: list[str], root: Path) -> None:
    import json

    entries = [
        {
            "fingerprint": fp,
            "code": f.code,
            "path": relative_path(f.location.path, root),
            "line": f.location.line,
            "message": f.message,
        }
        for f, fp in sorted(
            zip(findings, prints, strict=True),
            key=lambda x: (relative_path(x[0].location.path, root), x[0].location.line, x[0].code),
        )
    ]
    doc = {
        "version": BASELINE_VERSION,
        "tool": "packlint",
        "comment": "findings recorded by `packlint check --write-baseline`; `--baseline` hides them",
        "findings": entries,
    }
    from packlint.reporters.escape import json_safe
    from packlint.safe_io import atomic_write

    # (temp file, fsync, rename; a symlink or a device at `path` is refused, never replaced: Q13)
    text = json_safe(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    atomic_write(path, text.encode("utf-8"), what="baseline")


def read_baseline(path: str) -> dict[str, int]:
    """fingerprint -> how many recorded findings carry it."""
    import json

    from packlint.safe_io import BASELINE_LIMIT, read_bounded

    if not os.path.lexists(path):
        raise PacklintError("baseline file not found (create it with --write-baseline)", path=path)
    data = read_bounded(path, BASELINE_LIMIT, "baseline")  # (regular files only: Q11)
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise PacklintError(f"not a packlint baseline (invalid JSON: {exc})", path=path) from None
    if not isinstance(doc, dict) or doc.get("version") != BASELINE_VERSION or not isinstance(doc.get("findings"), list):
        raise PacklintError(
            f"not a packlint baseline (expected version {BASELINE_VERSION} with a findings list)", path=path
        )
    counts: dict[str, int] = {}
    for e in doc["findings"]:
        fp = e.get("fingerprint") if isinstance(e, dict) else None
        if not isinstance(fp, str):
            raise PacklintError("not a packlint baseline (an entry without a fingerprint)", path=path)
        counts[fp] = counts.get(fp, 0) + 1
    return counts


def filter_new(findings: list[Finding], prints: list[str], recorded: dict[str, int]) -> tuple[list[int], int]:
    """Indices of the findings not in the baseline, and how many were hidden."""
    left = dict(recorded)
    keep, hidden = [], 0
    for i, fp in enumerate(prints):
        if left.get(fp, 0) > 0:
            left[fp] -= 1
            hidden += 1
        else:
            keep.append(i)
    return keep, hidden
