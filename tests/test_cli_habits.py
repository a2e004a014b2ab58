"""What a ruff or ShellCheck user reaches for: `--output-format` (with `--format` kept), `--statistics`,
`-q`, `-S/--severity`, `--extend-select`, "did you mean", per-rule documentation links (`doc-url`), the
fixes in JSON and SARIF, and the `junit` / `gitlab` formats validated against their schemas."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from packlint.cli import main

TESTS = Path(__file__).parent
SARIF_SCHEMA = json.loads((TESTS / "sarif-schema-2.1.0.json").read_text())
GITLAB_SCHEMA = json.loads((TESTS / "schemas" / "gitlab-codequality.json").read_text())
JUNIT_XSD = TESTS / "schemas" / "junit-jenkins.xsd"

LEAK = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1\n"
VQA = ("#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\n"
       "export A=1 OFFLINE_PACKING_VQA=1   # copied from the 1.5 script\ntorchrun train.py --micro-batch-size 1\n")
REPEAT = "#!/bin/bash\nARGS=(--seq-length 4096 --lr 1e-4)\ntorchrun pretrain_gpt.py \"${ARGS[@]}\" --seq-length 8192\n"
CLEAN = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\ntorchrun train.py --micro-batch-size 1\n"
BROKEN = "#!/bin/bash\nCHECKPOINT=<path>\ntorchrun train.py\n"


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory, tmp_path):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".git").mkdir()
    for name, text in (("leak.sh", LEAK), ("vqa.sh", VQA), ("repeat.sh", REPEAT), ("clean.sh", CLEAN)):
        (tmp_path / name).write_text(text)


def run(capsys, *argv):
    capsys.readouterr()
    isolated = [] if "--config" in argv else ["--isolated"]
    code = main(["check", *isolated, "--color", "never", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_output_format_and_its_alias(capsys):
    a = run(capsys, "--output-format", "json", "leak.sh")
    b = run(capsys, "--format", "json", "leak.sh")
    assert a == b and json.loads(a[1])["findings"][0]["code"] == "PK001"


def test_statistics(capsys):
    code, out, _ = run(capsys, "--statistics", "leak.sh", "vqa.sh", "repeat.sh", "clean.sh")
    assert code == 1
    assert out.splitlines() == ["1\tPK001\t[*] packing-gate-leak [error]", "1\tPK004\t[*] dead-packing-vqa [warning]",
                                "1\tPK103\t[*] flag-repeated [warning]", "1\tPK204\tcode-base-not-found [info]"]
    _, out, _ = run(capsys, "--statistics", "--output-format", "json", "leak.sh")
    assert json.loads(out) == [{"code": "PK001", "name": "packing-gate-leak", "severity": "error", "count": 1,
                                "fixable": 1}]


def test_quiet(capsys):
    code, out, _ = run(capsys, "-q", "clean.sh")
    assert (code, out) == (0, "")
    code, out, _ = run(capsys, "--quiet", "vqa.sh")
    assert code == 0 and out == ("vqa.sh:3:12: PK004 [warning] OFFLINE_PACKING_VQA is read nowhere in the "
                                 "LLaVA-OneVision2 code: setting it does nothing and misleads readers\n"
                                 "vqa.sh:4:1: PK204 [info] the code of train.py was not found, so the packing rules "
                                 "judged OFFLINE_PACKING_VQA from the program path: it names no LLaVA-OneVision-1.5 "
                                 "checkout, so the code is taken not to read it (`packlint inspect` shows where "
                                 "packlint looked)\n")


def test_severity_display_filter(capsys):
    code, out, _ = run(capsys, "-S", "error", "--output-format", "json", "--fail-on", "warning", "vqa.sh", "leak.sh")
    doc = json.loads(out)
    assert [f["code"] for f in doc["findings"]] == ["PK001"] and code == 1
    # hidden findings do not fail the run: the filter decides what is shown, --fail-on what of it fails
    code, out, _ = run(capsys, "--severity", "error", "--fail-on", "warning", "vqa.sh")
    assert code == 0 and out.startswith("All clear")


def test_extend_select(capsys, tmp_path):
    (tmp_path / "packlint.toml").write_text("select = ['PK1']\n")
    _, out, _ = run(capsys, "--output-format", "json", "--config", "packlint.toml", "vqa.sh", "repeat.sh")
    assert [f["code"] for f in json.loads(out)["findings"]] == ["PK103"]
    _, out, _ = run(capsys, "--output-format", "json", "--config", "packlint.toml", "--extend-select", "PK004",
                    "vqa.sh", "repeat.sh")
    assert sorted(f["code"] for f in json.loads(out)["findings"]) == ["PK004", "PK103"]
    (tmp_path / "packlint.toml").write_text("select = ['PK1']\nextend-select = ['dead-packing-vqa']\n")
    _, out, _ = run(capsys, "--output-format", "json", "--config", "packlint.toml", "vqa.sh")
    assert [f["code"] for f in json.loads(out)["findings"]] == ["PK004"]


@pytest.mark.parametrize("argv, hint", [
    (["--fixx"], "did you mean --fix?"),
    (["--output-fromat", "json"], "did you mean --output-format?"),
    (["--select", "PK10O"], "did you mean PK100?"),   # placeholder, replaced below
    (["--ignore", "packing-gate-lek"], "did you mean packing-gate-leak?"),
    (["-S", "warn"], "did you mean 'warning'?"),
])
def test_did_you_mean(capsys, argv, hint):
    if argv[-1] == "PK10O":
        argv, hint = ["--select", "PK1O1"], "did you mean PK101?"
    code, _, err = run(capsys, *argv, "leak.sh")
    assert code == 2 and hint in err, err


def test_did_you_mean_for_commands(capsys):
    capsys.readouterr()
    assert main(["chek", "leak.sh"]) == 2
    assert "did you mean 'check'?" in capsys.readouterr().err


def test_json_carries_fix_and_url(capsys):
    _, out, _ = run(capsys, "--output-format", "json", "vqa.sh", "leak.sh", "repeat.sh")
    by_code = {f["code"]: f for f in json.loads(out)["findings"]}
    assert by_code["PK004"]["url"].endswith("docs/rules-reference.md#pk004-dead-packing-vqa-warning")
    assert by_code["PK004"]["fix"] == {
        "applicability": "safe", "message": "delete the dead OFFLINE_PACKING_VQA assignment",
        "edits": [{"path": "vqa.sh", "line": 3, "column": 11, "end_line": 3, "end_column": 33, "content": ""}]}
    assert by_code["PK001"]["fix"]["applicability"] == "unsafe"
    assert by_code["PK001"]["fix"]["edits"][0]["content"] == "export OFFLINE_PACKED_DATA=1\n"
    assert by_code["PK103"]["fix"]["edits"][0] | {"content": ""} == {
        "path": "repeat.sh", "line": 2, "column": 7, "end_line": 2, "end_column": 25, "content": ""}


def test_doc_url_template_from_config(capsys, tmp_path):
    (tmp_path / "packlint.toml").write_text("doc-url = 'https://wiki.example.com/packlint/{code}-{name}'\n")
    _, out, _ = run(capsys, "--output-format", "sarif", "--config", "packlint.toml", "leak.sh")
    rules = {r["id"]: r for r in json.loads(out)["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["PK001"]["helpUri"] == "https://wiki.example.com/packlint/PK001-packing-gate-leak"
    (tmp_path / "packlint.toml").write_text("doc-url = 'https://x/{nope}'\n")
    code, _, err = run(capsys, "--config", "packlint.toml", "leak.sh")
    assert code == 2 and "doc-url: bad template" in err


def test_sarif_fixes_validate(capsys):
    code, out, _ = run(capsys, "--output-format", "sarif", "vqa.sh", "leak.sh", "repeat.sh")
    doc = json.loads(out)
    jsonschema.validate(doc, SARIF_SCHEMA)
    results = {r["ruleId"]: r for r in doc["runs"][0]["results"]}
    fix = results["PK004"]["fixes"][0]
    assert fix["description"]["text"].endswith("(safe fix)")
    change = fix["artifactChanges"][0]
    assert change["artifactLocation"] == {"uri": "vqa.sh", "uriBaseId": "%SRCROOT%"}
    assert change["replacements"] == [{"deletedRegion": {"startLine": 3, "startColumn": 11, "endLine": 3,
                                                         "endColumn": 33}}]
    insert = results["PK001"]["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert insert["insertedContent"]["text"] == "export OFFLINE_PACKED_DATA=1\n"
    assert insert["deletedRegion"]["startColumn"] == insert["deletedRegion"]["endColumn"]
    reference = (TESTS.parent / "docs" / "rules-reference.md").read_text()
    from packlint.rule_table import is_released, load_table

    released = {r.code for r in load_table().rules if is_released(r)}
    for rule in doc["runs"][0]["tool"]["driver"]["rules"]:
        page, anchor = rule["helpUri"].rsplit("#", 1)
        assert page.endswith("/docs/rules-reference.md") and anchor.startswith(rule["id"].lower() + "-")
        if rule["id"] not in released:  # its section enters the reference when its release is cut
            continue
        # the link lands on the rule's own heading in the generated reference (GitHub's anchor of it)
        heading = next(ln for ln in reference.splitlines() if ln.startswith(f"## {rule['id']} "))
        assert re.sub(r"[^a-z0-9 -]", "", heading[3:].lower()).replace(" ", "-") == anchor


def test_junit_validates(capsys, tmp_path):
    xmlschema = pytest.importorskip("xmlschema")
    (tmp_path / "broken.sh").write_text(BROKEN)
    (tmp_path / "ctl.sh").write_text("#!/bin/bash\nexport OFFLINE_PACKING_VQA='a\x01b <&> \"q\"'\ntorchrun t.py\n")
    schema = xmlschema.XMLSchema(str(JUNIT_XSD))
    code, out, _ = run(capsys, "--output-format", "junit", ".")
    schema.validate(out)
    import xml.etree.ElementTree as ET

    root = ET.fromstring(out)
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"broken.sh", "clean.sh", "ctl.sh", "leak.sh", "repeat.sh", "vqa.sh"}
    assert suites["clean.sh"].get("tests") == "1" and suites["clean.sh"].find("testcase/failure") is None
    failure = suites["leak.sh"].find("testcase/failure")
    assert failure.get("type") == "error" and "PK001" in failure.text and "help:" in failure.text
    # a warning does not fail the run by default: a passing case that says what was found
    assert suites["vqa.sh"].find("testcase/failure") is None and "PK004" in suites["vqa.sh"].find(
        "testcase/system-out").text
    assert root.get("failures") == str(sum(int(s.get("failures")) for s in suites.values()))
    # with --fail-on warning, the warnings fail too
    _, out, _ = run(capsys, "--output-format", "junit", "--fail-on", "warning", "vqa.sh")
    schema.validate(out)
    assert ET.fromstring(out).find("testsuite/testcase/failure").get("type") == "warning"
    # a run-level error still renders a valid document
    code, out, _ = run(capsys, "--output-format", "junit", "--select", "PK777", "leak.sh")
    schema.validate(out)
    assert code == 2 and ET.fromstring(out).find("testsuite/testcase/error") is not None


def test_gitlab_validates(capsys, tmp_path):
    (tmp_path / "broken.sh").write_text(BROKEN)
    code, out, _ = run(capsys, "--output-format", "gitlab", ".")
    issues = json.loads(out)
    jsonschema.validate(issues, GITLAB_SCHEMA)
    by_code = {i["check_name"]: i for i in issues}
    assert by_code["PK001"]["severity"] == "major" and by_code["PK004"]["severity"] == "minor"
    assert by_code["PK001"]["location"] == {"path": "leak.sh", "lines": {"begin": 2, "end": 2}}
    assert len({i["fingerprint"] for i in issues}) == len(issues)
    # the fingerprint survives a line shift (GitLab then shows the finding as unchanged)
    (tmp_path / "leak.sh").write_text(LEAK.replace("#!/bin/bash\n", "#!/bin/bash\n# a comment\n"))
    _, out2, _ = run(capsys, "--output-format", "gitlab", ".")
    moved = {i["check_name"]: i for i in json.loads(out2)}
    assert moved["PK001"]["fingerprint"] == by_code["PK001"]["fingerprint"]
    assert moved["PK001"]["location"]["lines"]["begin"] == 3
    code, out, _ = run(capsys, "--output-format", "gitlab", "--select", "PK777", "leak.sh")
    jsonschema.validate(json.loads(out), GITLAB_SCHEMA)
    assert code == 2


UPSTREAM_JUNIT = Path("/work/.mirror/jenkinsci+xunit-plugin/repo")


@pytest.mark.skipif(not UPSTREAM_JUNIT.exists(), reason="needs the jenkinsci/xunit-plugin snapshot")
def test_junit_validates_against_jenkins_own_schema(capsys, tmp_path):
    """The schema Jenkins' xUnit plugin validates JUnit reports with (read from the public snapshot, not
    vendored)."""
    import subprocess

    xmlschema = pytest.importorskip("xmlschema")
    xsd = subprocess.run(["git", f"--git-dir={UPSTREAM_JUNIT}", "show",
                          "HEAD:src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd"],
                         capture_output=True, check=True).stdout
    (tmp_path / "junit-10.xsd").write_bytes(xsd)
    (tmp_path / "broken.sh").write_text(BROKEN)
    schema = xmlschema.XMLSchema(str(tmp_path / "junit-10.xsd"))
    _, out, _ = run(capsys, "--output-format", "junit", "--fail-on", "info", ".")
    schema.validate(out)
