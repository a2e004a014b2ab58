"""Fixes (`packlint check --fix / --unsafe-fixes / --diff`, packlint.fixes).

Snapshots: every `tests/fixtures/fix/<case>.sh` is run through `--diff`, `--diff --unsafe-fixes` and then
`--fix --unsafe-fixes` followed by a check; the outputs are compared with `<case>.expected.txt` beside it
(regenerate with PACKLINT_UPDATE_SNAPSHOTS=1). The bundled examples are fixed on a copy: each fixable
finding turns into a clean check, and a second run changes nothing. A property test mutates fixtures
and checks that whatever the fixes do, bash still accepts the script and fixing again changes nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from packlint.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "fix"
CASES = sorted(p.name for p in FIX.glob("*.sh"))
UPDATE = bool(os.environ.get("PACKLINT_UPDATE_SNAPSHOTS"))
FIXABLE = {"PK001", "PK004", "PK101", "PK103"}


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))
    monkeypatch.delenv("NO_COLOR", raising=False)


def run(capsys, *argv):
    capsys.readouterr()
    code = main(["check", "--isolated", "--color", "never", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def bash_n(path: Path) -> bool:
    return subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("case", CASES)
def test_fix_snapshot(case, capsys, tmp_path, monkeypatch):
    for p in FIX.iterdir():
        if not p.name.endswith(".expected.txt"):
            shutil.copy(p, tmp_path / p.name)
    monkeypatch.chdir(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    parts = []
    for opts in (["--diff"], ["--diff", "--unsafe-fixes"]):
        code, out, err = run(capsys, *opts, case)
        parts.append(f"## check {' '.join(opts)}  [exit {code}]\n{out}{err}")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before, "--diff must not write"
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", "-q", case)
    parts.append(f"## check --fix --unsafe-fixes -q  [exit {code}]\n{out}{err}")
    assert bash_n(tmp_path / case)
    for name, data in before.items():
        if name != case:
            assert (tmp_path / name).read_bytes() == data, f"{name}: only the named file is edited"
    fixed = (tmp_path / case).read_bytes()
    code2, _, err2 = run(capsys, "--fix", "--unsafe-fixes", "-q", case)
    assert (tmp_path / case).read_bytes() == fixed and "applied 0 fixes" in err2, "fixing twice changes nothing"
    actual = "\n".join(parts)
    snap = FIX / (case[:-3] + ".expected.txt")
    if UPDATE or not snap.exists():
        snap.write_text(actual)
    assert actual == snap.read_text()


def test_examples_fixed_on_a_copy(capsys, tmp_path, monkeypatch):
    work = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", work)
    monkeypatch.chdir(tmp_path)
    _, out, _ = run(capsys, "--output-format", "json", "examples")
    import json

    fixable = {f["path"] for f in json.loads(out)["findings"] if f["fix"] is not None}
    assert {Path(p).name for p in fixable} == {"pk001_gate_leak.sh", "pk004_dead_vqa.sh",
                                               "pk101_env_not_exported.sh", "pk103_flag_repeated.sh"}
    run(capsys, "--fix", "--unsafe-fixes", "examples")
    for path in sorted(fixable):
        code, out, _ = run(capsys, path)
        assert code == 0 and out.startswith("All clear"), (path, out)
        assert bash_n(tmp_path / path)
    snapshot = {p.name: p.read_bytes() for p in work.iterdir()}
    code, _, err = run(capsys, "--fix", "--unsafe-fixes", "examples")
    assert {p.name: p.read_bytes() for p in work.iterdir()} == snapshot and "applied 0 fixes" in err
    code, out, _ = run(capsys, "--diff", "--unsafe-fixes", "examples")
    assert code == 0 and out == ""


def test_safe_only_fix_leaves_unsafe_findings(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "examples" / "pk101_env_not_exported.sh", "a.sh")
    shutil.copy(ROOT / "examples" / "pk004_dead_vqa.sh", "b.sh")
    original = Path("a.sh").read_text()
    code, out, err = run(capsys, "--fix", "-q", "a.sh", "b.sh")
    assert Path("a.sh").read_text() == original
    assert "OFFLINE_PACKING_VQA" not in Path("b.sh").read_text()
    assert code == 1 and "PK101" in out and "PK004" not in out and "applied 1 fix" in err


def test_fix_options_need_each_other(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a.sh").write_text("#!/bin/bash\ntrue\n")
    code, _, err = run(capsys, "--unsafe-fixes", "a.sh")
    assert code == 2 and "--unsafe-fixes needs --fix or --diff" in err


def test_stdin_fix_prints_the_fixed_script(capsys, monkeypatch, tmp_path):
    import io
    import sys

    monkeypatch.chdir(tmp_path)
    text = "#!/bin/bash\nexport OFFLINE_PACKING_VQA=1\ntorchrun pretrain_llava_onevision2.py\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code, out, _ = run(capsys, "--fix", "--stdin-filename", "train.sh", "-")
    assert code == 0 and out == "#!/bin/bash\ntorchrun pretrain_llava_onevision2.py\n"


def test_crlf_and_broken_scripts_are_left_alone(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("crlf.sh").write_bytes(b"#!/bin/bash\r\nexport OFFLINE_PACKING_VQA=1\r\ntorchrun train.py\r\n")
    Path("broken.sh").write_text("#!/bin/bash\nexport OFFLINE_PACKING_VQA=1\nif true; then\ntorchrun train.py\n")
    before = {p: Path(p).read_bytes() for p in ("crlf.sh", "broken.sh")}
    _, _, err = run(capsys, "--fix", "--unsafe-fixes", "crlf.sh", "broken.sh")
    assert {p: Path(p).read_bytes() for p in before} == before
    assert "crlf.sh: not fixed: the file has CR line ends" in err
    assert "broken.sh: not fixed: bash rejects the script as it is" in err


# ---------------------------------------------------------------------------------------------- property

SEEDS = sorted([*ROOT.glob("examples/*.sh"), *FIX.glob("*.sh")])
SEEDS = [p for p in SEEDS if "pk900" not in p.name]
SNIPPETS = [
    "export OFFLINE_PACKING_VQA=1",
    "export A=1 OFFLINE_PACKING_VQA=1",
    "OFFLINE_PACKED_DATA=1",
    "export OFFLINE_PACKING_BMR=1",
    "ARGS=(--seq-length 1024 --lr 1e-4)",
    "true; export OFFLINE_PACKING_VQA=1; true",
    "if true; then export OFFLINE_PACKING_VQA=1; fi",
    "[ -d /data ] && export OFFLINE_PACKING_VQA=1",
    "f() { export OFFLINE_PACKING_BMR=1; }",
    "X=\"--seq-length 2048\"",
]


@st.composite
def mutated(draw):
    seed = draw(st.sampled_from(SEEDS))
    lines = seed.read_text().split("\n")
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "duplicate", "indent", "flag"]))
        i = draw(st.integers(1, max(1, len(lines) - 1)))
        if op == "insert":
            lines.insert(i, draw(st.sampled_from(SNIPPETS)))
        elif op == "duplicate" and lines[i - 1].strip() and not lines[i - 1].rstrip().endswith("\\"):
            lines.insert(i, lines[i - 1])
        elif op == "indent":
            lines[i - 1] = "\t" + lines[i - 1]
        else:
            last = max(j for j, ln in enumerate(lines) if ln.strip() or j == 0)
            if not lines[last].rstrip().endswith("\\"):
                lines[last] += draw(st.sampled_from([" --seq-length 4096", " --micro-batch-size 2",
                                                     " --lr 3e-4 --lr 1e-4"]))
    return seed.name, "\n".join(lines)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=mutated())
def test_fixes_never_break_a_script(case, tmp_path_factory):
    from packlint.checking import CheckOptions
    from packlint.cli.fix import text_checker
    from packlint.config import CliSettings
    from packlint.fixes import bash_accepts, fix_text

    name, text = case
    if not bash_accepts(text):
        return
    d = tmp_path_factory.mktemp("prop")
    path = d / "train.sh"
    path.write_text(text)
    check = text_checker(str(path), CheckOptions(cli=CliSettings(isolated=True)))
    outcome = fix_text(str(path), text, check, unsafe=True)
    event(f"applied {min(outcome.applied, 2)}+ fixes")
    assert bash_accepts(outcome.text), (name, text, outcome.text)
    again = fix_text(str(path), outcome.text, check, unsafe=True)
    if outcome.rounds < 10:
        assert again.text == outcome.text, (name, outcome.text, again.text)


# ---------------------------------------------------------------------------------------------- as data

USER_RULES = '''
[variables]
typos = ["--seq-lenght"]
stale = ["NCCL_IB_DISABLE_OLD"]

[[rule]]
code = "USR001"
name = "flag-typo"
severity = "error"
for_each = "typos"
summary = "a misspelt flag"
when = "has_flag(name)"
message = "{name} is misspelt"
report_at = "flag:{name}"
explanation = "The parser rejects it."
fix = { kind = "replace_prefix", text = "--seq-length", expect = "{name}", applicability = "unsafe", \
        title = "rename {name}" }
[[rule.example]]
kind = "bad"
script = "torchrun t.py --seq-lenght 1"
[[rule.example]]
kind = "good"
script = "torchrun t.py --seq-length 1"

[[rule]]
code = "USR002"
name = "stale-env"
severity = "warning"
for_each = "stale"
summary = "a variable nothing reads"
when = "assigned(name)"
message = "{name} is read by nothing"
report_at = "var:{name}"
explanation = "Dead."
fix = { kind = "delete", applicability = "safe", title = "delete {name}", expect = "{name}" }
[[rule.example]]
kind = "bad"
script = "export NCCL_IB_DISABLE_OLD=1\\ntorchrun t.py"
[[rule.example]]
kind = "good"
script = "torchrun t.py"

[[rule]]
code = "USR003"
name = "needs-debug-line"
severity = "info"
summary = "the launch has no NCCL_DEBUG"
when = "not in_env('NCCL_DEBUG')"
message = "set NCCL_DEBUG"
report_at = "launch"
explanation = "Debugging."
fix = { kind = "insert_line_before", text = "export NCCL_DEBUG=WARN", applicability = "safe", title = "add NCCL_DEBUG" }
[[rule.example]]
kind = "bad"
script = "torchrun t.py"
[[rule.example]]
kind = "good"
script = "export NCCL_DEBUG=INFO\\ntorchrun t.py"
'''


def test_a_fix_is_only_a_table_entry(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("rules.toml").write_text(USER_RULES)
    Path("t.sh").write_text("#!/bin/bash\nexport A=1 NCCL_IB_DISABLE_OLD=1\n"
                            "ARGS=\"--seq-lenght=4096 --lr 1e-4\"\ntorchrun t.py $ARGS\n")
    code, out, err = run(capsys, "--rule-file", "rules.toml", "--select", "USR", "--fix", "--unsafe-fixes", "-q",
                         "t.sh")
    assert Path("t.sh").read_text() == ("#!/bin/bash\nexport A=1\nARGS=\"--seq-length=4096 --lr 1e-4\"\n"
                                        "export NCCL_DEBUG=WARN\ntorchrun t.py $ARGS\n")
    assert out == "" and "applied 3 fixes" in err


def test_no_line_after_a_prefix_assignment(capsys, tmp_path, monkeypatch):
    """PK001's fix adds a line after the OFFLINE_PACKING_BMR assignment: not when that assignment is a
    prefix of the launch line (after it is after the launch)."""
    monkeypatch.chdir(tmp_path)
    text = "#!/bin/bash\nOFFLINE_PACKING_BMR=1 torchrun pretrain_llava_onevision2.py --micro-batch-size 1\n"
    Path("t.sh").write_text(text)
    code, out, err = run(capsys, "--fix", "--unsafe-fixes", "-q", "t.sh")
    assert Path("t.sh").read_text() == text and "PK001" in out and "applied 0 fixes" in err


@pytest.mark.parametrize("fix, error", [
    ('{ kind = "move", applicability = "safe", title = "x" }', "fix.kind"),
    ('{ kind = "replace_prefix", text = "x", applicability = "safe", title = "x" }', "needs `expect`"),
    ('{ kind = "delete", at = "nowhere:X", applicability = "safe", title = "x" }', "unknown location kind"),
    ('{ kind = "delete", applicability = "maybe", title = "x" }', "fix.applicability"),
    ('{ kind = "delete", applicability = "safe", title = "{nope(1)}" }', "fix.title"),
])
def test_bad_fix_entries_are_table_errors(capsys, tmp_path, monkeypatch, fix, error):
    monkeypatch.chdir(tmp_path)
    table = USER_RULES.split("[[rule]]")[0] + "[[rule]]" + USER_RULES.split("[[rule]]")[2]
    old = 'fix = { kind = "delete", applicability = "safe", title = "delete {name}", expect = "{name}" }'
    table = table.replace(old, f"fix = {fix}")
    Path("rules.toml").write_text(table)
    Path("t.sh").write_text("#!/bin/bash\ntrue\n")
    code, _, err = run(capsys, "--rule-file", "rules.toml", "t.sh")
    assert code == 2 and error in err, err


def test_delete_the_first_of_two_exports_via_a_diagnostic(tmp_path, monkeypatch):
    """The shape PK105 (env-overwritten, issue 12) takes: a script rule over diagnostics whose fix
    deletes the *first* assignment, named by the diagnostic's related location; the variable is read
    later, which `refuse_if_read = false` allows (only the lost first value is deleted)."""
    from packlint.engine import check_model
    from packlint.fixes import Script, concrete_fix
    from packlint.rule_table import load_table

    monkeypatch.chdir(tmp_path)
    Path("r.toml").write_text('''
[[rule]]
code = "USR105"
name = "env-overwritten-test"
severity = "warning"
scope = "script"
for_each = "diagnostics"
summary = "s"
when = "diag_code == 'env-overwritten'"
message = "{diag_message}"
report_at = "diagnostic"
explanation = "x"
fix = { kind = "delete", at = "diagnostic:related", applicability = "safe", title = "delete the first export", \
        refuse_if_read = false }
[[rule.example]]
kind = "bad"
script = "true"
[[rule.example]]
kind = "good"
script = "true"
''')
    text = "#!/bin/bash\nexport TOKENS=1\nexport TOKENS=2\necho $TOKENS\n"
    rules = [r for r in load_table(["r.toml"], use_cache=False).rules if r.code == "USR105"]
    diag = {"severity": "info", "code": "env-overwritten", "message": "TOKENS is set again", "file": "t.sh",
            "line": 3, "column": 8, "related": [{"file": "t.sh", "line": 2, "column": 8}]}
    (finding,) = check_model({"script": "t.sh", "launches": [], "diagnostics": [diag]}, rules)
    fix = concrete_fix(finding, Script("t.sh", text))
    assert fix is not None and fix.applicability == "safe"
    assert [(e.line, e.end_line, e.content) for e in fix.edits] == [(2, 3, "")]
    # without refuse_if_read = false, a variable the script reads is never deleted
    plan = finding.fix
    from packlint.findings import FixPlan

    strict = finding.replace(fix=FixPlan(plan.kind, plan.start, plan.end, plan.text, plan.applicability, plan.title))
    assert concrete_fix(strict, Script("t.sh", text)) is None
