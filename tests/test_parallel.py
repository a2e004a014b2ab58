"""A large directory is checked by several processes; the report is exactly the one-process report."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from packlint import cli

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _check(monkeypatch, capsys, jobs: str, target: Path) -> tuple[int, str]:
    monkeypatch.setenv("PACKLINT_JOBS", jobs)
    code = cli.main(["check", "--format", "json", str(target)])
    return code, capsys.readouterr().out


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_parallel_report_equals_sequential(tmp_path, monkeypatch, capsys):
    for i in range(3):  # 30 scripts: above the threshold for using workers
        d = tmp_path / f"team{i}"
        shutil.copytree(EXAMPLES, d)
    monkeypatch.chdir(tmp_path)
    sequential = _check(monkeypatch, capsys, "1", Path("."))
    parallel = _check(monkeypatch, capsys, "2", Path("."))
    assert parallel == sequential
    assert sequential[0] == 1 and '"files": 30' in sequential[1]
