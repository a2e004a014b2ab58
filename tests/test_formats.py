"""CI formats: SARIF 2.1.0 (validated against the official schema in tests/), GitHub workflow
commands, gcc; every format stays valid when a file cannot be parsed or read, or packlint fails."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from packlint.cli import main

SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text())
LEAK = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1\n"
VQA = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\nexport OFFLINE_PACKING_VQA=1\ntorchrun train.py\n"
BROKEN = "#!/bin/bash\nCHECKPOINT=<path>\ntorchrun train.py\n"
UNKNOWN = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\nexport OFFLINE_PACKED_DATA=$(cat flag)\ntorchrun train.py\n"
FORMATS = ("text", "json", "sarif", "github", "gcc")


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory, tmp_path):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()          # the repository root for relative URIs and fingerprints


def run(capsys, *argv):
    capsys.readouterr()
    code = main(["check", "--isolated", "--no-code-base", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def scripts(tmp_path):
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "leak.sh").write_text(LEAK)
    (tmp_path / "jobs" / "vqa.sh").write_text(VQA)
    (tmp_path / "jobs" / "broken.sh").write_text(BROKEN)
    (tmp_path / "jobs" / "unknown.sh").write_text(UNKNOWN)


def sarif(capsys, *argv):
    code, out, _ = run(capsys, "--format", "sarif", *argv)
    doc = json.loads(out)
    jsonschema.validate(doc, SCHEMA)
    return code, doc


def test_sarif_validates_and_has_the_required_parts(capsys, tmp_path):
    scripts(tmp_path)
    code, doc = sarif(capsys, "jobs")
    assert code == 1 and doc["version"] == "2.1.0"
    run0 = doc["runs"][0]
    driver = run0["tool"]["driver"]
    assert driver["name"] == "packlint" and driver["version"] and driver["informationUri"].startswith("https://")
    ids = [r["id"] for r in driver["rules"]]
    assert ids == sorted(ids) and {"PK001", "PK004", "PK900", "PK901"} <= set(ids)
    pk001 = driver["rules"][ids.index("PK001")]
    assert pk001["name"] == "packing-gate-leak" and pk001["defaultConfiguration"]["level"] == "error"
    assert pk001["shortDescription"]["text"] and pk001["fullDescription"]["text"]
    assert "What goes wrong at run time" in pk001["help"]["markdown"]
    assert run0["columnKind"] == "unicodeCodePoints"
    assert run0["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    assert run0["invocations"] == [{"executionSuccessful": True}]
    by_rule = {(r["ruleId"], r["level"]): r for r in run0["results"]}
    assert set(by_rule) == {("PK001", "error"), ("PK001", "note"), ("PK004", "warning"), ("PK900", "error")}
    leak = by_rule["PK001", "error"]
    assert driver["rules"][leak["ruleIndex"]]["id"] == "PK001" and leak["level"] == "error"
    loc = leak["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "jobs/leak.sh", "uriBaseId": "%SRCROOT%"}
    assert loc["region"] == {"startLine": 2, "startColumn": 8, "endLine": 2, "endColumn": 29}
    assert leak["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 3
    assert leak["relatedLocations"][0]["message"]["text"]
    assert re.fullmatch(r"[0-9a-f]{32}", leak["partialFingerprints"]["packlint/v1"])
    assert by_rule["PK001", "note"]["message"]["text"].startswith("could not decide PK001")


def test_sarif_fingerprints_survive_line_shifts(capsys, tmp_path):
    p = tmp_path / "leak.sh"
    p.write_text(LEAK)
    _, before = sarif(capsys, "leak.sh")
    p.write_text(LEAK.replace("#!/bin/bash\n", "#!/bin/bash\n# a comment\n\nset -e\n"))
    _, after = sarif(capsys, "leak.sh")
    [b], [a] = before["runs"][0]["results"], after["runs"][0]["results"]
    assert a["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert a["partialFingerprints"] == b["partialFingerprints"]
    p.write_text(LEAK.replace("export OFFLINE_PACKING_BMR=1", "export  OFFLINE_PACKING_BMR=1   # changed"))
    _, edited = sarif(capsys, "leak.sh")
    assert edited["runs"][0]["results"][0]["partialFingerprints"] != b["partialFingerprints"]


def test_sarif_paths_with_spaces_and_outside_the_root(capsys, tmp_path, tmp_path_factory):
    (tmp_path / "my jobs").mkdir()
    (tmp_path / "my jobs" / "leak.sh").write_text(LEAK)
    outside = tmp_path_factory.mktemp("elsewhere") / "leak.sh"
    outside.write_text(LEAK)
    _, doc = sarif(capsys, "my jobs", str(outside))
    uris = sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"])
    assert uris == sorted(["my%20jobs/leak.sh", outside.as_uri()])


def test_github_workflow_commands(capsys, tmp_path):
    scripts(tmp_path)
    code, out, _ = run(capsys, "--format", "github", "jobs")
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith("::error file=jobs/broken.sh,line=2,col=12,endLine=2,title=PK900 syntax-error::")
    leak = next(ln for ln in lines if "PK001" in ln)
    assert leak.startswith("::error file=jobs/leak.sh,line=2,col=8,endLine=2,endColumn=29,"
                           "title=PK001 packing-gate-leak::OFFLINE_PACKING_BMR=1 packs sub-samples")
    assert "%0Anote: jobs/leak.sh:3: the training process is launched here" in leak
    assert "%0Ahelp: export OFFLINE_PACKED_DATA=1" in leak
    assert any(ln.startswith("::warning file=jobs/vqa.sh,") and "title=PK004 dead-packing-vqa::" in ln for ln in lines)
    assert any(ln.startswith("::notice file=jobs/unknown.sh,") for ln in lines)        # info -> notice
    assert lines[-1] == "packlint: 2 errors, 1 warning, 1 info in 4 files"
    for ln in lines[:-1]:                         # one command per line, nothing unescaped
        assert re.fullmatch(r"::(error|warning|notice) [^:]*::[^\n\r]*", ln), ln


def test_github_escaping_and_the_ten_per_level_summary(capsys, tmp_path):
    from packlint.reporters.github import escape_data, escape_property

    assert escape_property("a,b:c%d\ne") == "a%2Cb%3Ac%25d%0Ae"
    assert escape_data("a,b:c%d\r\ne") == "a,b:c%25d%0D%0Ae"
    (tmp_path / "d").mkdir()
    for i in range(12):
        (tmp_path / "d" / f"a,b:{i:02}.sh").write_text(LEAK)
    _, out, _ = run(capsys, "--format", "github", "d")
    lines = out.splitlines()
    assert lines[0].startswith("::error file=d/a%2Cb%3A00.sh,line=2,")
    assert lines[-1].startswith("packlint: 12 errors, 0 warnings, 0 infos in 12 files; GitHub shows only the first "
                                "10 annotations of each level per step (12 errors here)")


def test_gcc_format(capsys, tmp_path):
    scripts(tmp_path)
    code, out, _ = run(capsys, "--format", "gcc", "jobs")
    lines = out.splitlines()
    assert code == 1
    assert "jobs/leak.sh:2:8: error: OFFLINE_PACKING_BMR=1 packs sub-samples, but Gate 2 is closed" in lines[1]
    assert lines[1].endswith("[PK001]")
    assert any(re.fullmatch(r"jobs/vqa\.sh:3:8: warning: .* \[PK004\]", ln) for ln in lines)
    assert any(re.fullmatch(r"jobs/unknown\.sh:\d+:\d+: note: could not decide .* \[PK001\]", ln) for ln in lines)
    for ln in lines:
        assert re.fullmatch(r"[^:]+:\d+:\d+: (error|warning|note): .* \[[A-Z0-9-]+\]", ln), ln


@pytest.fixture
def crash_one_file(monkeypatch):
    """An internal error while analysing one particular file."""
    import packlint.api

    real = packlint.api.inspect_script

    def flaky(path, **kw):
        if "crash" in str(path):
            raise ValueError("boom")
        return real(path, **kw)

    monkeypatch.setattr(packlint.api, "inspect_script", flaky)
    monkeypatch.delenv("PACKLINT_DEBUG", raising=False)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_is_valid_after_an_internal_error(capsys, tmp_path, crash_one_file, fmt):
    scripts(tmp_path)
    (tmp_path / "jobs" / "crash.sh").write_text(LEAK)
    (tmp_path / "jobs" / "binary.sh").write_bytes(b"\x00\x01\x02ELF" * 50)
    code, out, err = run(capsys, "--format", fmt, "jobs")
    assert code == 2 and "Traceback" not in err
    assert "jobs/crash.sh: internal error: ValueError: boom" in err and "please report" in err
    if fmt == "json":
        doc = json.loads(out)
        assert {e["path"]: e["kind"] for e in doc["errors"]} == {"jobs/binary.sh": "read", "jobs/crash.sh": "internal"}
        assert {f["code"] for f in doc["findings"]} == {"PK001", "PK004", "PK900"}   # the others still checked
    elif fmt == "sarif":
        doc = json.loads(out)
        jsonschema.validate(doc, SCHEMA)
        inv = doc["runs"][0]["invocations"][0]
        assert inv["executionSuccessful"] is False
        notes = inv["toolExecutionNotifications"]
        assert [n["descriptor"]["id"] for n in notes] == ["packlint-error", "packlint-internal-error"]
        assert notes[1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "jobs/crash.sh"
        assert "please report" in notes[1]["message"]["text"]
        assert len(doc["runs"][0]["results"]) == 4
    elif fmt == "github":
        assert "::error file=jobs/crash.sh,title=packlint internal error::internal error: ValueError: boom" in out
        assert out.splitlines()[-1].endswith("(2 could not be checked)")
    elif fmt == "gcc":
        assert "jobs/crash.sh:1:1: error: internal error: ValueError: boom" in out
        assert "[packlint-internal-error]" in out
    else:
        assert "Found 2 errors" in out


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "gcc"])
def test_run_level_errors_still_render_a_document(capsys, tmp_path, fmt):
    (tmp_path / "leak.sh").write_text(LEAK)
    code, out, err = run(capsys, "--format", fmt, "--rule-file", "missing.toml", "leak.sh")
    assert code == 2 and err.count("\n") == 1 and "missing.toml" in err
    if fmt == "json":
        doc = json.loads(out)
        assert doc["findings"] == [] and "missing.toml" in doc["errors"][0]["message"]
    elif fmt == "sarif":
        doc = json.loads(out)
        jsonschema.validate(doc, SCHEMA)
        assert doc["runs"][0]["invocations"][0]["executionSuccessful"] is False
    elif fmt == "github":
        assert out.startswith("::error title=packlint could not check this::")
    else:
        assert out.startswith("packlint: error: ") and out.rstrip().endswith("[packlint-error]")


def test_output_file(capsys, tmp_path):
    (tmp_path / "leak.sh").write_text(LEAK)
    code, out, _ = run(capsys, "--format", "sarif", "--output-file", "out.sarif", "leak.sh")
    assert code == 1 and out == ""
    jsonschema.validate(json.loads((tmp_path / "out.sarif").read_text()), SCHEMA)


def test_duplicate_launch_findings_are_grouped(capsys, tmp_path):
    launches = "".join(f"torchrun train.py --micro-batch-size 1 --seed {i}\n" for i in range(5))
    (tmp_path / "five.sh").write_text("#!/bin/bash\nexport OFFLINE_PACKED_DATA=1\n" + launches)
    _, out, _ = run(capsys, "--format", "json", "five.sh")
    [f] = json.loads(out)["findings"]
    assert f["code"] == "PK002" and f["certainty"] == "certain"
    assert [r["line"] for r in f["related"]] == [3, 4, 5]
    assert f["related"][-1]["message"].endswith("(and 2 more launches)")
