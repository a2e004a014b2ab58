"""Baseline: --write-baseline records today's findings (fingerprinted by path, code and the normalised
line text, not line numbers); --baseline reports only new ones."""

from __future__ import annotations

import json

import pytest

from packlint.cli import main

LEAK = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1\n"
VQA = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\nexport OFFLINE_PACKING_VQA=1\ntorchrun train.py\n"


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory, tmp_path):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()


def run(capsys, *argv):
    capsys.readouterr()
    # baselines are under test, not the launched code: no code reading (no PK204 infos)
    code = main(["check", "--isolated", "--no-code-base", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def findings(capsys, *argv):
    code, out, _ = run(capsys, "--format", "json", *argv)
    doc = json.loads(out)
    return code, [(f["code"], f["path"], f["line"]) for f in doc["findings"]], doc["summary"]


def legacy_repo(tmp_path, n=30):
    (tmp_path / "legacy").mkdir()
    for i in range(n):
        (tmp_path / "legacy" / f"job{i:03}.sh").write_text(LEAK if i % 2 else VQA)


def test_write_then_only_new_findings(capsys, tmp_path):
    legacy_repo(tmp_path)
    code, out, err = run(capsys, "--write-baseline", "packlint-baseline.json", ".")
    assert code == 0 and "wrote 30 findings to the baseline packlint-baseline.json" in err
    doc = json.loads((tmp_path / "packlint-baseline.json").read_text())
    assert doc["version"] == 1 and len(doc["findings"]) == 30
    assert set(doc["findings"][0]) >= {"fingerprint", "code", "path", "line", "message"}
    assert doc["findings"][0]["path"] == "legacy/job000.sh"
    # nothing new: clean, exit 0, the summary says how many the baseline hides
    code, found, summary = findings(capsys, "--baseline", "packlint-baseline.json", ".")
    assert (code, found, summary["baselined"]) == (0, [], 30)
    _, out, _ = run(capsys, "--color", "never", "--baseline", "packlint-baseline.json", ".")
    assert "All clear: no findings in 30 files (30 in the baseline)." in out
    # line shifts in legacy files do not resurface their findings; a new problem is reported
    p = tmp_path / "legacy" / "job001.sh"
    p.write_text(p.read_text().replace("#!/bin/bash\n", "#!/bin/bash\n# header\nset -euo pipefail\n\n"))
    (tmp_path / "new.sh").write_text(LEAK)
    code, found, summary = findings(capsys, "--baseline", "packlint-baseline.json", ".")
    assert (code, found, summary["baselined"]) == (1, [("PK001", "new.sh", 2)], 30)


def test_a_second_identical_finding_in_one_file_is_new(capsys, tmp_path):
    (tmp_path / "two.sh").write_text("#!/bin/bash\nexport OFFLINE_PACKING_VQA=1\ntorchrun a.py\n")
    run(capsys, "--write-baseline", "b.json", "two.sh")
    # the same line text again further down: the occurrence index makes it a different fingerprint
    (tmp_path / "two.sh").write_text("#!/bin/bash\nexport OFFLINE_PACKING_VQA=1\ntorchrun a.py\n"
                                     "export OFFLINE_PACKING_VQA=1\ntorchrun b.py\n")
    code, found, summary = findings(capsys, "--baseline", "b.json", "--fail-on", "warning", "two.sh")
    assert summary["baselined"] == 1 and len(found) == 1 and code == 1


def test_fingerprint_ignores_cwd_and_whitespace(capsys, tmp_path, monkeypatch):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "leak.sh").write_text(LEAK)
    run(capsys, "--write-baseline", "b.json", "jobs/leak.sh")
    monkeypatch.chdir(tmp_path / "jobs")
    (tmp_path / "jobs" / "leak.sh").write_text(LEAK.replace("export OFFLINE_PACKING_BMR=1", "  export   OFFLINE_PACKING_BMR=1"))
    code, found, summary = findings(capsys, "--baseline", "../b.json", "leak.sh")
    assert (code, found, summary["baselined"]) == (0, [], 1)


def test_fingerprint_changes_when_the_line_changes(capsys, tmp_path):
    (tmp_path / "leak.sh").write_text(LEAK)
    run(capsys, "--write-baseline", "b.json", "leak.sh")
    (tmp_path / "leak.sh").write_text(LEAK.replace("BMR=1", "BMR='1'"))
    code, found, _ = findings(capsys, "--baseline", "b.json", "leak.sh")
    assert code == 1 and found == [("PK001", "leak.sh", 2)]


@pytest.mark.parametrize("content,message", [
    (None, "baseline file not found"),
    ("{not json", "not a packlint baseline (invalid JSON"),
    ('{"version": 7, "findings": []}', "not a packlint baseline (expected version 1"),
    ('{"version": 1, "findings": [{"code": "PK001"}]}', "an entry without a fingerprint"),
])
def test_bad_baseline_is_exit_2(capsys, tmp_path, content, message):
    (tmp_path / "leak.sh").write_text(LEAK)
    if content is not None:
        (tmp_path / "b.json").write_text(content)
    code, out, err = run(capsys, "--baseline", "b.json", "leak.sh")
    assert code == 2 and message in err and "Traceback" not in err
    code, out, err = run(capsys, "--format", "json", "--baseline", "b.json", "leak.sh")
    assert code == 2 and message in json.loads(out)["errors"][0]["message"]


def test_json_findings_carry_the_fingerprint(capsys, tmp_path):
    (tmp_path / "leak.sh").write_text(LEAK)
    _, out, _ = run(capsys, "--format", "json", "leak.sh")
    [f] = json.loads(out)["findings"]
    run(capsys, "--write-baseline", "b.json", "leak.sh")
    assert json.loads((tmp_path / "b.json").read_text())["findings"][0]["fingerprint"] == f["fingerprint"]
