"""Snapshot test of `packlint inspect --format json` over tests/fixtures/inspect/*.sh.

Each fixture `NAME.sh` (top level of the folder only; includes live in subfolders) is inspected with
its `NAME.args.json` sidecar (`{"args": [...], "env": {...}}` -> `-- ARGS` and `--env NAME=VALUE`),
with the fixtures folder as the cwd, and the JSON is compared with `NAME.expected.json` after making
absolute paths relative to the fixtures folder.

Regenerate:  PACKLINT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_inspect_fixtures.py
then read every changed snapshot against what bash does before committing it.
"""

from __future__ import annotations

import io
import json
import os
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from oracle.harness import FIXTURES_DIR, discover_fixtures

FIXTURES = discover_fixtures()
UPDATE = os.environ.get("PACKLINT_UPDATE_SNAPSHOTS") == "1"


def normalise(obj, root: Path):
    """Absolute paths under the fixtures folder -> relative (in every string, messages included)."""
    prefixes = sorted({str(root) + os.sep, str(root.resolve()) + os.sep}, key=len, reverse=True)
    if isinstance(obj, dict):
        return {k: normalise(v, root) for k, v in obj.items()}
    if isinstance(obj, list):
        return [normalise(v, root) for v in obj]
    if isinstance(obj, str):
        for p in prefixes:
            obj = obj.replace(p, "")
        for p in prefixes:  # the folder itself
            if obj == p.rstrip(os.sep):
                obj = "."
        return obj
    return obj


def inspect_json(fx, monkeypatch) -> dict:
    from packlint.cli import main

    monkeypatch.chdir(FIXTURES_DIR)
    # --no-code-base: these snapshots are about bash; where packlint's own checkout happens to hold a
    # program's source is not (code resolution has its own tests: tests/test_codebase.py)
    argv = ["inspect", fx.path.name, "--format", "json", "--no-code-base"]
    for k, v in fx.env.items():
        argv += ["--env", f"{k}={v}"]
    if fx.args:
        argv += ["--", *fx.args]
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = main(argv)
    out = buf.getvalue()
    try:
        data = json.loads(out)
    except json.JSONDecodeError as exc:
        pytest.fail(f"`packlint {' '.join(argv)}` (exit {rc}) did not print JSON: {exc}\n{out[:2000]}")
    return normalise(data, FIXTURES_DIR)


def test_fixtures_exist():
    assert len(FIXTURES) >= 20, [f.name for f in FIXTURES]


@pytest.mark.parametrize("fx", FIXTURES, ids=[f.name for f in FIXTURES])
def test_inspect_snapshot(fx, monkeypatch):
    got = inspect_json(fx, monkeypatch)
    text = json.dumps(got, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    if UPDATE:
        fx.expected_path.write_text(text, encoding="utf-8")
        return
    if not fx.expected_path.exists():
        pytest.fail(f"missing snapshot {fx.expected_path.relative_to(FIXTURES_DIR.parent.parent.parent)}; create it with\n"
                    f"  PACKLINT_UPDATE_SNAPSHOTS=1 .venv/bin/python -m pytest tests/test_inspect_fixtures.py -k {fx.name}\n"
                    f"and check it against what bash does before committing it")
    expected = json.loads(fx.expected_path.read_text(encoding="utf-8"))
    if got != expected:
        import difflib

        exp_text = json.dumps(expected, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        diff = "".join(difflib.unified_diff(exp_text.splitlines(True), text.splitlines(True),
                                            "expected", "packlint", n=2))
        pytest.fail(f"{fx.name}: launch model differs from {fx.expected_path.name}:\n{diff[:6000]}")


PLACEHOLDER_MARKERS = ("__PLGAP", "$__PX")


def _strings(obj):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, str):
        yield obj


@pytest.mark.parametrize("fx", FIXTURES, ids=[f.name for f in FIXTURES])
def test_no_parser_placeholder_reaches_the_model(fx, monkeypatch):
    """Exact or unknown: the parser's stand-ins for regions it cannot read (`$__PLGAP___`,
    `$__PX3___`) are never a value, a program or a message."""
    got = inspect_json(fx, monkeypatch)
    leaked = sorted({s for s in _strings(got) if any(m in s for m in PLACEHOLDER_MARKERS)})
    assert not leaked, leaked
