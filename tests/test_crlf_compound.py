"""A CRLF script whose launch sits in a compound command (issue 26, the sixth holdout): SeanLeng1/
Reward-Calibration carries OpenRLHF 0.3.8's example scripts with CRLF endings, each launch inside
`if [[ ${1} != "slurm" ]]; then\\r ... fi\\r`. `then\\r` and `fi\\r` are words to bash, not keywords: `bash -n`
fails ("unexpected end of file"), bash runs the lines before the `if` and stops there, and deepspeed never
starts. packlint said PK201 on the CR-glued last flag (argparse exits "after the job got its nodes") and no
PK900: the PK900 confirmation asked bash about the text with its CRs removed. Bash is the oracle."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from packlint.cli import main

TRAIN = (
    "import argparse\n\nparser = argparse.ArgumentParser()\nparser.add_argument('--save_path', default='./ckpt')\n"
    "parser.add_argument('--gradient_checkpointing', action='store_true')\nargs = parser.parse_args()\n"
)
# OpenRLHF 0.3.8 examples/scripts/train_dpo_llama.sh's shape
SCRIPT = (
    "set -x\n\nread -r -d '' training_commands <<EOF\nopenrlhf.cli.train_dpo \\\n   --save_path ./ckpt \\\n"
    "   --gradient_checkpointing\nEOF\n\n"
    'if [[ ${1} != "slurm" ]]; then\n    deepspeed --module $training_commands\nfi\n'
)


def check_json(*argv: str) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["check", "--no-cache", "--format", "json", "--exit-zero", *argv])
    return json.loads(buf.getvalue())


def _tree(tmp_path: Path, text: str) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "openrlhf" / "cli").mkdir(parents=True)
    (tmp_path / "openrlhf" / "__init__.py").write_text("")
    (tmp_path / "openrlhf" / "cli" / "__init__.py").write_text("")
    (tmp_path / "openrlhf" / "cli" / "train_dpo.py").write_text(TRAIN)
    script = tmp_path / "train_dpo_llama.sh"
    script.write_bytes(text.encode())
    return script


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
def test_an_if_whose_then_has_a_cr_is_a_syntax_error_at_the_if(tmp_path: Path, monkeypatch) -> None:
    script = _tree(tmp_path, SCRIPT.replace("\n", "\r\n"))
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode != 0  # the oracle
    monkeypatch.chdir(tmp_path)
    findings = check_json(script.name)["findings"]
    codes = {f["code"]: f for f in findings}
    assert "PK900" in codes and "PK201" not in codes, [(f["code"], f["line"], f["message"][:90]) for f in findings]
    pk900 = codes["PK900"]
    assert pk900["line"] == 9 and "`then\\r`" in pk900["message"], pk900


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is the oracle")
def test_a_crlf_launch_outside_a_compound_command_runs_with_the_cr(tmp_path: Path, monkeypatch) -> None:
    """Without the `if`, bash parses the file and runs the launch: argparse gets `--gradient_checkpointing\\r`."""
    text = SCRIPT.replace('if [[ ${1} != "slurm" ]]; then\n', "").replace("\nfi\n", "\n")
    script = _tree(tmp_path, text.replace("\n", "\r\n"))
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0  # the oracle
    monkeypatch.chdir(tmp_path)
    codes = {f["code"] for f in check_json(script.name)["findings"]}
    assert "PK900" not in codes and {"PK904", "PK201"} <= codes, codes


def test_the_same_script_with_lf_endings_parses(tmp_path: Path, monkeypatch) -> None:
    script = _tree(tmp_path, SCRIPT)
    monkeypatch.chdir(tmp_path)
    codes = {f["code"] for f in check_json(script.name)["findings"]}
    assert not codes & {"PK900", "PK904", "PK201"}, codes
