"""Configuration: discovery (closest file upwards), every key, command line over config, errors
(file + key, exit 2), `packlint config` with origins, --config and --isolated."""

from __future__ import annotations

import json
import textwrap

import pytest

from packlint.cli import main
from packlint.config import glob_matches
from pathlib import Path

LEAK = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1\n"
VQA = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\nexport OFFLINE_PACKING_VQA=1\ntorchrun train.py\n"
MBS = ("#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\n"
       "torchrun --nnodes $SLURM_NNODES train.py --micro-batch-size 1\n")


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory, tmp_path):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "rule-cache"))
    monkeypatch.chdir(tmp_path)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def run(capsys, *argv):
    capsys.readouterr()
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def codes(capsys, *argv):
    # configuration is under test, not the launched code: no code reading (no PK204 info for the
    # OFFLINE_PACKING_VQA scripts whose code is not at hand)
    code, out, err = run(capsys, "check", "--format", "json", "--no-code-base", *argv)
    assert out, err
    return code, sorted((f["code"], f["path"]) for f in json.loads(out)["findings"])


def test_discovery_closest_file_upwards(capsys, tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.packlint]\nignore = ['PK004']\n")
    write(tmp_path / "a" / "vqa.sh", VQA)
    write(tmp_path / "b" / "packlint.toml", "select = ['PK004']\nfail-on = 'warning'\n")
    write(tmp_path / "b" / "vqa.sh", VQA)
    write(tmp_path / "b" / "leak.sh", LEAK)
    code, found = codes(capsys, ".")
    # a/ uses the root pyproject (PK004 ignored); b/ its own packlint.toml (only PK004, fails on warning)
    assert found == [("PK004", "b/vqa.sh")]
    assert code == 1


def test_precedence_in_one_directory_and_pyproject_without_table(capsys, tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.packlint]\nignore = ['PK004']\n")
    write(tmp_path / "sub" / "pyproject.toml", "[project]\nname = 'x'\n")   # no [tool.packlint]: passed over
    write(tmp_path / "sub" / "vqa.sh", VQA)
    assert codes(capsys, "sub")[1] == []
    write(tmp_path / "sub" / "packlint.toml", "ignore = []\n")
    assert codes(capsys, "sub")[1] == [("PK004", "sub/vqa.sh")]
    write(tmp_path / "sub" / ".packlint.toml", "ignore = ['PK0']\n")          # .packlint.toml wins
    assert codes(capsys, "sub")[1] == []


def test_config_flag_and_isolated(capsys, tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.packlint]\nignore = ['PK004']\n")
    write(tmp_path / "other.toml", "ignore = ['PK001']\n")
    write(tmp_path / "vqa.sh", VQA)
    write(tmp_path / "leak.sh", LEAK)
    assert codes(capsys, ".")[1] == [("PK001", "leak.sh")]
    assert codes(capsys, "--config", "other.toml", ".")[1] == [("PK004", "vqa.sh")]
    assert codes(capsys, "--isolated", ".")[1] == [("PK001", "leak.sh"), ("PK004", "vqa.sh")]


def test_command_line_wins(capsys, tmp_path):
    write(tmp_path / "packlint.toml", "select = ['PK004']\nignore = ['PK001']\nfail-on = 'warning'\n")
    write(tmp_path / "vqa.sh", VQA)
    write(tmp_path / "leak.sh", LEAK)
    assert codes(capsys, ".") == (1, [("PK004", "vqa.sh")])
    assert codes(capsys, "--fail-on", "error", ".") == (0, [("PK004", "vqa.sh")])
    # --select starts over (config select and ignore dropped); --ignore adds to the config's
    assert codes(capsys, "--select", "PK001", ".")[1] == [("PK001", "leak.sh")]
    assert codes(capsys, "--ignore", "PK004", ".")[1] == []


def test_severity_per_file_ignores_and_exclude(capsys, tmp_path):
    write(tmp_path / "pyproject.toml", """\
        [tool.packlint]
        exclude = ["vendor", "old/*.sh"]
        [tool.packlint.severity]
        PK004 = "error"
        [tool.packlint.per-file-ignores]
        "legacy/**" = ["PK001"]
        "*_leak.sh" = ["PK001"]
        """)
    write(tmp_path / "vqa.sh", VQA)
    write(tmp_path / "legacy" / "deep" / "leak.sh", LEAK)
    write(tmp_path / "x_leak.sh", LEAK)
    write(tmp_path / "vendor" / "leak.sh", LEAK)
    write(tmp_path / "old" / "leak.sh", LEAK)
    code, out, _ = run(capsys, "check", "--format", "json", "--no-code-base", ".")
    doc = json.loads(out)
    assert [(f["code"], f["path"], f["severity"]) for f in doc["findings"]] == [("PK004", "vqa.sh", "error")]
    assert code == 1 and doc["summary"]["files"] == 3
    # excluded even when named on the command line (as pre-commit names files)
    assert codes(capsys, "vendor/leak.sh")[1] == []


def test_env_and_known_env(capsys, tmp_path):
    write(tmp_path / "leak.sh", LEAK)
    write(tmp_path / "mbs.sh", MBS)
    assert codes(capsys, "--isolated", "leak.sh")[1] == [("PK001", "leak.sh")]
    write(tmp_path / "packlint.toml", "env = { OFFLINE_PACKED_DATA = '1' }\n")
    assert codes(capsys, "leak.sh")[1] == []
    assert codes(capsys, "--env", "OFFLINE_PACKED_DATA=0", "leak.sh")[1] == [("PK001", "leak.sh")]
    # known-env: set by the cluster, value unknown -> it reaches the interpreter
    capsys.readouterr()
    main(["inspect", "--format", "json", "--known-env", "SLURM_NNODES", "mbs.sh"])
    model = json.loads(capsys.readouterr().out)
    assert "set by the cluster" in model["launches"][0]["world_size"]["unknown"]
    from packlint.checking import CheckOptions, check_paths
    from packlint.config import CliSettings

    def world_size(**cli):
        result = check_paths(["mbs.sh"], CheckOptions(cli=CliSettings(**cli)))
        return result.models["mbs.sh"]["launches"][0]["world_size"]["unknown"]

    assert "set by the cluster" not in world_size()
    assert "set by the cluster" in world_size(known_env=["SLURM_NNODES"])
    write(tmp_path / "packlint.toml", "known-env = ['SLURM_NNODES']\n")
    assert "set by the cluster" in world_size()
    code, out, _ = run(capsys, "config", "mbs.sh", "--format", "json")
    assert json.loads(out)["settings"]["known-env"] == ["SLURM_NNODES"]


def test_rule_files_relative_to_the_config(capsys, tmp_path):
    write(tmp_path / "cfg" / "team.toml", '''\
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
    write(tmp_path / "cfg" / "packlint.toml", "rule-files = ['team.toml']\n")
    write(tmp_path / "cfg" / "ok.sh", VQA.replace("export OFFLINE_PACKING_VQA=1\n", ""))
    assert codes(capsys, "cfg")[1] == [("TM001", "cfg/ok.sh")]


@pytest.mark.parametrize("body,expected", [
    ("selct = ['PK001']\n", "packlint.toml:1: selct: unknown key (did you mean 'select'?)"),
    ("select = 'PK001'\n", "packlint.toml:1: select: expected a list"),
    ("fail-on = 'fatal'\n", "packlint.toml:1: fail-on: expected one of 'error', 'warning', 'info', got 'fatal'"),
    ("rule-files = ['nope.toml']\n", "packlint.toml:1: rule-files: rule file 'nope.toml' not found"),
    ("env = { X = 1 }\n", "packlint.toml:1: env: X: expected a string, got a number (1) (write X = \"1\")"),
    ("known-env = ['1BAD']\n", "known-env: '1BAD' is not an environment variable name"),
    ("\n\nselect = ['PK777']\n", "packlint.toml:3: select: unknown rule code or name: PK777"),
    ("[severity]\nPK001 = 'loud'\n", "severity: PK001: expected 'error', 'warning' or 'info', got 'loud'"),
    ("[severity]\nPK777 = 'error'\n", "packlint.toml:1: severity: unknown rule code 'PK777'"),
    ("per-file-ignores = { 'a/*' = 'PK777' }\n", "per-file-ignores: 'a/*': unknown rule code or name: PK777"),
    ("select = [\n", "packlint.toml: invalid TOML"),
])
def test_config_errors_name_the_file_and_key(capsys, tmp_path, body, expected):
    write(tmp_path / "packlint.toml", body)
    write(tmp_path / "leak.sh", LEAK)
    for fmt in ("text", "json", "sarif", "github", "gcc"):
        code, out, err = run(capsys, "check", "--format", fmt, "leak.sh")
        assert code == 2, (fmt, err)
        assert expected in err and err.count("\n") == 1 and "Traceback" not in err, err
        if fmt in ("json", "sarif"):
            json.loads(out)               # still a valid document
    code, _, err = run(capsys, "config", ".")
    assert code == 2 and expected in err


def test_pyproject_errors_name_the_table(capsys, tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname='x'\n\n[tool.packlint]\nignore = 'PK004'\n")
    write(tmp_path / "leak.sh", LEAK)
    code, _, err = run(capsys, "check", "leak.sh")
    assert code == 2 and "pyproject.toml:5: [tool.packlint] ignore: expected a list" in err
    code, _, err = run(capsys, "check", "--config", "missing.toml", "leak.sh")
    assert code == 2 and "missing.toml: config file not found" in err


def test_packlint_config_shows_origins(capsys, tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'x'\n[tool.packlint]\nignore = ['PK004']\nfail-on = 'warning'\n")
    code, out, _ = run(capsys, "config")
    assert code == 0
    assert f"# config file: {tmp_path / 'pyproject.toml'} [tool.packlint]" in out
    assert 'ignore           = ["PK004"]  # pyproject.toml:4 ([tool.packlint].ignore)' in out
    assert 'select           = ["ALL"]  # default' in out
    code, out, _ = run(capsys, "config", "--fail-on", "info", "--ignore", "PK103", "--format", "json")
    doc = json.loads(out)
    assert doc["settings"]["fail-on"] == "info" and doc["origins"]["fail-on"] == "command line (--fail-on)"
    assert doc["settings"]["ignore"] == ["PK004", "PK103"]
    assert doc["origins"]["ignore"] == "pyproject.toml:4 ([tool.packlint].ignore) + command line (--ignore)"
    code, out, _ = run(capsys, "config", "--isolated")
    assert "# config file: none (built-in defaults)" in out


@pytest.mark.parametrize("pattern,path,hit", [
    ("vendor", "vendor/x.sh", True), ("vendor", "a/vendor/b/x.sh", True), ("vendor", "vendors/x.sh", False),
    ("*.bash", "a/b/x.bash", True), ("old/*.sh", "old/x.sh", True), ("old/*.sh", "old/sub/x.sh", False),
    ("old/**/*.sh", "old/sub/x.sh", True), ("legacy/", "legacy/x.sh", True), ("./legacy", "legacy/x.sh", True),
    ("x[0-9].sh", "x1.sh", True), ("x[!0-9].sh", "x1.sh", False),
])
def test_globs(tmp_path, pattern, path, hit):
    assert glob_matches(pattern, tmp_path, str(tmp_path / path)) is hit
