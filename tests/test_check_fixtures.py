"""Snapshot tests: every `tests/fixtures/check/<CODE>/<case>.sh` is checked with `packlint check` and
its text output (plus exit status) compared with `<case>.expected.txt` beside it.

Naming: a case whose name contains `pass` must fire nothing at warning or above; any other case must
fire its directory's rule. `clean/*.sh` are correct scripts in many styles: nothing may fire.
Regenerate the snapshots after an intended change with `PACKLINT_UPDATE_SNAPSHOTS=1 pytest tests/test_check_fixtures.py`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from packlint.cli import main

ROOT = Path(__file__).parent / "fixtures" / "check"
UPDATE = bool(os.environ.get("PACKLINT_UPDATE_SNAPSHOTS"))
CASES = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("PK*/*.sh"))
CLEAN = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("clean/*.sh"))
# correct scripts the interpreter does not model yet (strict: they fail loudly once it does)
KNOWN_GAPS: dict[str, str] = {}


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))


def run_check(capsys, *argv: str) -> tuple[str, int]:
    capsys.readouterr()
    code = main(["check", *argv])
    return capsys.readouterr().out, code


def case_argv(case: str, *options: str) -> list[str]:
    """The command line for a case: options, extra options from `<case>.args` beside it (shell words;
    what follows `--` there are the script's positional arguments), the case."""
    import shlex

    extra_file = ROOT / (case[:-3] + ".args")
    words = shlex.split(extra_file.read_text()) if extra_file.exists() else []
    script_args: list[str] = []
    if "--" in words:
        i = words.index("--")
        words, script_args = words[:i], words[i:]
    return [*options, *words, case, *script_args]


@pytest.mark.parametrize("case", CASES)
def test_snapshot(case, capsys):
    out, code = run_check(capsys, *case_argv(case, "--color", "never"))
    actual = f"{out}[exit {code}]\n"
    snap = ROOT / (case[:-3] + ".expected.txt")
    if UPDATE or not snap.exists():
        snap.write_text(actual)
        if not UPDATE:
            pytest.fail(f"wrote a new snapshot {snap.name}: review it and rerun")
    assert actual == snap.read_text()


@pytest.mark.parametrize("case", CASES)
def test_case_fires_its_rule(case, capsys):
    out, _ = run_check(capsys, *case_argv(case, "--format", "json"))
    findings = json.loads(out)["findings"]
    code = case.split("/")[0]
    if "pass" in Path(case).stem:
        assert not [f for f in findings if f["severity"] != "info"], findings
    else:
        assert any(f["code"] == code for f in findings), findings


@pytest.mark.parametrize("case", CLEAN)
def test_correct_scripts_are_clean(case, capsys, request):
    if case in KNOWN_GAPS:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=KNOWN_GAPS[case]))
    out, code = run_check(capsys, "--format", "json", "--fail-on", "info", case)
    assert json.loads(out)["findings"] == []
    assert code == 0
