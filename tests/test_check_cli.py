"""`packlint check` / `rules` / `explain` as a user runs them: exit codes, selection, formats, colour,
stdin, discovery and bad input (a one-line error and exit 2, never a traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from packlint.cli import main
from packlint.discover import discover

FIX = Path(__file__).parent / "fixtures" / "check"
LEAK = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1\n"
VQA = "#!/bin/bash\nexport OFFLINE_PACKING_VQA=1\ntorchrun train.py\n"
CLEAN = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\ntorchrun train.py --micro-batch-size 1\n"

FINDING_SCHEMA = {
    "type": "object",
    "required": ["version", "findings", "summary"],
    "properties": {
        "version": {"const": 1},
        "findings": {"type": "array", "items": {
            "type": "object",
            "required": ["code", "name", "severity", "message", "path", "line", "column", "end_line",
                         "end_column", "related", "certainty"],
            "properties": {
                "code": {"type": "string", "pattern": "^[A-Z]+[0-9]{3}$"},
                "severity": {"enum": ["error", "warning", "info"]},
                "certainty": {"enum": ["certain", "possible"]},
                "line": {"type": "integer", "minimum": 1}, "column": {"type": "integer", "minimum": 1},
                "related": {"type": "array", "items": {"type": "object",
                                                       "required": ["path", "line", "column", "message"]}},
            }}},
        "summary": {"type": "object", "required": ["files", "errors", "warnings", "infos"]},
    },
}


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))
    monkeypatch.delenv("NO_COLOR", raising=False)


def run(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_exit_codes_and_fail_on(tmp_path, capsys):
    leak, vqa, clean = script(tmp_path, "a.sh", LEAK), script(tmp_path, "b.sh", VQA), script(tmp_path, "c.sh", CLEAN)
    assert run(capsys, "check", leak)[0] == 1
    assert run(capsys, "check", clean)[0] == 0
    assert run(capsys, "check", vqa)[0] == 0                       # a warning is below --fail-on error
    assert run(capsys, "check", "--fail-on", "warning", vqa)[0] == 1
    assert run(capsys, "check", "--exit-zero", leak)[0] == 0


def test_select_and_ignore(tmp_path, capsys):
    both = script(tmp_path, "a.sh", LEAK.replace("torchrun", "export OFFLINE_PACKING_VQA=1\ntorchrun"))
    def found(*opts):
        _, out, _ = run(capsys, "check", "--format", "json", "--no-code-base", *opts, both)
        return sorted(f["code"] for f in json.loads(out)["findings"])
    _, out, _ = run(capsys, "check", "--format", "json", both)  # with code reading: a.sh's code is not at hand
    assert sorted(f["code"] for f in json.loads(out)["findings"]) == ["PK001", "PK004", "PK204"]
    assert found() == ["PK001", "PK004"]
    assert found("--select", "PK00") == ["PK001", "PK004"]
    assert found("--select", "PK001") == ["PK001"]
    assert found("--ignore", "PK001,dead-packing-vqa") == []
    assert found("--select", "PK", "--ignore", "PK004") == ["PK001"]
    code, _, err = run(capsys, "check", "--select", "PK777", both)
    assert code == 2 and "unknown rule code" in err


def test_json_output_matches_the_documented_shape(tmp_path, capsys):
    import jsonschema

    path = script(tmp_path, "a.sh", LEAK)
    code, out, _ = run(capsys, "check", "--format", "json", path, str(FIX / "PK003"))
    doc = json.loads(out)
    jsonschema.validate(doc, FINDING_SCHEMA)
    assert doc["summary"]["files"] >= 2 and doc["summary"]["errors"] >= 1
    leak = [f for f in doc["findings"] if f["path"] == path][0]
    assert (leak["code"], leak["name"], leak["line"], leak["column"]) == ("PK001", "packing-gate-leak", 2, 8)
    assert leak["related"][0]["line"] == 3


def test_text_output_is_a_code_frame(tmp_path, capsys):
    path = script(tmp_path, "a.sh", LEAK)
    _, out, _ = run(capsys, "check", "--color", "never", path)
    assert f"{path}:2:8: PK001 [error]" in out
    assert "2 | export OFFLINE_PACKING_BMR=1\n  |        ^^^^^^^^^^^^^^^^^^^^^" in out
    assert "= note: " in out and "= help: export OFFLINE_PACKED_DATA=1" in out
    assert out.rstrip().endswith("Found 1 error, 0 warnings, 0 infos in 1 file.")
    assert "\x1b[" not in out


def test_colour_only_when_asked_or_on_a_terminal(tmp_path, capsys, monkeypatch):
    path = script(tmp_path, "a.sh", LEAK)
    assert "\x1b[" in run(capsys, "check", "--color", "always", path)[1]
    assert "\x1b[" not in run(capsys, "check", path)[1]       # captured stdout is not a tty
    monkeypatch.setenv("NO_COLOR", "1")
    from packlint.cli.check import use_color

    class Tty:
        def isatty(self):
            return True
    assert use_color("auto", Tty()) is False
    monkeypatch.delenv("NO_COLOR")
    assert use_color("auto", Tty()) is True


def test_stdin_with_a_filename(capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(LEAK.encode())))
    code, out, _ = run(capsys, "check", "--format", "json", "--stdin-filename", "train.sh", "-")
    assert code == 1 and json.loads(out)["findings"][0]["path"] == "train.sh"


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    code, out, err = run(capsys, "check", str(tmp_path / "missing.sh"))
    assert code == 2 and "missing.sh: no such file or directory" in err and "Traceback" not in err
    bad_rules = script(tmp_path, "team.toml", "[[rule]]\ncode = 'PK001'\n")
    code, _, err = run(capsys, "check", "--rule-file", bad_rules, script(tmp_path, "a.sh", CLEAN))
    assert code == 2 and err.count("\n") == 1 and "team.toml" in err
    code, _, err = run(capsys, "check", "--rule-file", str(tmp_path / "nope.toml"), str(tmp_path))
    assert code == 2 and "nope.toml" in err
    code, _, err = run(capsys, "check", "--env", "NOEQUALS", str(tmp_path))
    assert code == 2


def test_a_user_rule_file_adds_a_gate(tmp_path, capsys):
    rules = script(tmp_path, "team.toml", '''
[[rule]]
code = "TM001"
name = "flash-attn-required"
severity = "error"
summary = "packed runs must use flash attention"
when = "gate2_open and not has_flag('--use-flash-attn')"
message = "packing without --use-flash-attn"
explanation = "Our cluster policy."
[[rule.example]]
kind = "bad"
script = "export OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\\ntorchrun t.py"
[[rule.example]]
kind = "good"
script = "export OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\\ntorchrun t.py --use-flash-attn"
''')
    code, out, _ = run(capsys, "check", "--format", "json", "--rule-file", rules, script(tmp_path, "a.sh", CLEAN))
    assert code == 1 and [f["code"] for f in json.loads(out)["findings"]] == ["TM001"]


def test_discovery(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "train.sh").write_text(CLEAN)
    (tmp_path / "a.bash").write_text(CLEAN)
    (tmp_path / "launch").write_text("#!/usr/bin/env bash\necho\n")
    (tmp_path / "posix").write_text("#!/bin/sh\necho\n")
    (tmp_path / "tool.py").write_text("#!/bin/sh\n")
    (tmp_path / "notes").write_text("hello\n")
    (tmp_path / "zsh").write_text("#!/bin/zsh\n")
    for skip in (".git", "node_modules", "venv_any"):
        (tmp_path / skip).mkdir()
        (tmp_path / skip / "x.sh").write_text(CLEAN)
    (tmp_path / "venv_any" / "pyvenv.cfg").write_text("")
    os.symlink(tmp_path, tmp_path / "b" / "loop")
    files, errors = discover([str(tmp_path)])
    rel = [os.path.relpath(f, tmp_path) for f in files]
    assert rel == ["a.bash", "b/train.sh", "launch", "posix"]
    assert errors == []
    files2, _ = discover([str(tmp_path)])
    assert files2 == files


def test_rules_and_explain(capsys):
    code, out, _ = run(capsys, "rules")
    assert code == 0 and "PK001  packing-gate-leak" in out and "PK900" in out
    code, out, _ = run(capsys, "rules", "--format", "json")
    assert [r["code"] for r in json.loads(out)["rules"]][:2] == ["PK001", "PK002"]
    code, out, _ = run(capsys, "explain", "PK001", "--color", "never")
    assert code == 0 and out.startswith("# PK001 `packing-gate-leak` (error)") and "## Bad" in out and "## Good" in out
    assert run(capsys, "explain", "packing-micro-batch", "--color", "never")[0] == 0
    code, _, err = run(capsys, "explain", "PK01")
    assert code == 2 and "no rule" in err


def test_examples_directory(capsys, monkeypatch):
    """The README's main command: each rule fires once, the correct example is clean."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    code, out, _ = run(capsys, "check", "--format", "json", "examples/")
    findings = json.loads(out)["findings"]
    non_info = sorted(f["code"] for f in findings if f["severity"] != "info")
    assert non_info == ["PK001", "PK002", "PK003", "PK004", "PK101", "PK102", "PK103", "PK104", "PK900"]
    assert not [f for f in findings if "correct" in f["path"]]
    assert code == 1


def test_no_traceback_from_the_installed_entry_point(tmp_path):
    env = {**os.environ, "PACKLINT_NO_CACHE": "1"}
    proc = subprocess.run([sys.executable, "-m", "packlint", "check", str(tmp_path / "nope.sh")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_docs_are_current(capsys, monkeypatch):
    """docs/check.md shows the real output of `packlint check examples/` and the README the real
    output of its one example; docs/rules-reference.md names every released rule (a rule newer than
    this version enters it at its release), docs/rules.md every built-in function of the condition
    language."""
    from packlint.conditions import FUNCTIONS
    from packlint.rule_table import is_released, load_table

    root = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(root)
    check_md = (root / "docs" / "check.md").read_text()
    shown = check_md.split("$ packlint check examples/\n", 1)[1].split("```", 1)[0]
    _, out, _ = run(capsys, "check", "--color", "never", "examples/")
    assert shown == out
    readme = (root / "README.md").read_text()
    shown = readme.split("$ packlint check examples/pk001_gate_leak.sh\n", 1)[1].split("```", 1)[0]
    _, out, _ = run(capsys, "check", "--color", "never", "examples/pk001_gate_leak.sh")
    assert shown == out
    reference_md = (root / "docs" / "rules-reference.md").read_text()
    for rule in load_table().rules:
        if is_released(rule):
            assert f"| [{rule.code}](#" in reference_md and f") | `{rule.name}` |" in reference_md
    rules_md = (root / "docs" / "rules.md").read_text()
    for name in FUNCTIONS:
        assert f"`{name}" in rules_md, name


def test_the_command_line_ends_at_once_with_its_output_whole(tmp_path):
    """`python -m packlint` (and the console script) ends with os._exit after the command (cli.entry): its whole
    output still arrives, to a file and to a pipe, the exit code is the command's, and a reader that stops
    early (`| head -c 20`) gets no traceback."""
    examples = Path(__file__).resolve().parent.parent / "examples"
    env = dict(os.environ, PACKLINT_CACHE_DIR=str(tmp_path / "cache"))
    out = tmp_path / "out.json"
    with out.open("w") as fh:
        rc = subprocess.run([sys.executable, "-m", "packlint", "check", "--format", "json", str(examples)],
                            stdout=fh, env=env).returncode
    data = json.loads(out.read_text())
    assert rc == 1 and len(data["findings"]) == 10 and data["summary"]["errors"] == 5
    piped = subprocess.run([sys.executable, "-m", "packlint", "check", "--format", "json", str(examples)],
                           capture_output=True, text=True, env=env)
    assert piped.returncode == 1 and json.loads(piped.stdout) == data
    early = subprocess.run(f"'{sys.executable}' -m packlint check '{examples}' | head -c 20", shell=True,
                           capture_output=True, text=True, env=env)
    assert "Traceback" not in early.stderr and len(early.stdout) == 20
