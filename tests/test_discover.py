"""Directory discovery: each real file once, reported under the name it was found by."""

from __future__ import annotations

import json
import os
import shutil

from packlint import cli
from packlint.discover import discover

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "examples", "pk001_gate_leak.sh")


def test_symlinked_script_is_checked_once(tmp_path, monkeypatch, capsys):
    d = tmp_path / "d"
    d.mkdir()
    shutil.copy(EXAMPLE, d / "a.sh")
    (d / "b.sh").symlink_to("a.sh")
    monkeypatch.chdir(tmp_path)
    files, errors = discover(["d"])
    assert files == ["d/a.sh"] and errors == []
    assert cli.main(["check", "--format", "json", "d"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["path"] for f in findings] == ["d/a.sh"]


def test_symlink_named_explicitly_is_reported_under_its_name(tmp_path, monkeypatch, capsys):
    shutil.copy(EXAMPLE, tmp_path / "real.sh")
    (tmp_path / "link.sh").symlink_to("real.sh")
    monkeypatch.chdir(tmp_path)
    assert cli.main(["check", "--format", "json", "link.sh"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert {f["path"] for f in findings} == {"link.sh"}
