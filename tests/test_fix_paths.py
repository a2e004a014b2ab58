"""A file's fixes do not depend on how it was named (issue 31): `packlint check --fix` on a script named
relatively, absolutely (as editors and CI pass it, from any directory) or through a directory applies the
same fixes, and the editor offers the same code actions.

The case: a finding decided from the launched code. PK103 on a repeated flag is decided from the program's
parser (`train.py` beside the script: `--lr` takes one value, `--tags` appends). The fix loop re-checks the
text through stdin under the file's name; its code used to be looked up from the current directory, so
the PK103 fix went missing whenever packlint was started elsewhere than the script's directory."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from packlint.cli import main

TRAIN_PY = """import argparse

parser = argparse.ArgumentParser(description="SFT")
parser.add_argument("--lr", type=float, default=1e-5)
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--tags", action="append", default=[])
args = parser.parse_args()
"""
RUN_SH = """#!/bin/bash
set -euo pipefail
export OFFLINE_PACKING_BMR=1
OFFLINE_PACKED_DATA=1
COMMON=(--lr 1e-4 --epochs 3)
python train.py "${COMMON[@]}" --lr 2e-5 --tags sft --tags lora
torchrun --nproc_per_node 8 aiak_training_llm/train/sft/sft_llava_onevision2.py \\
    --packing-sft-data \\
    --micro-batch-size 1 \\
    --seq-length 8192
"""
FIXED = """#!/bin/bash
set -euo pipefail
export OFFLINE_PACKING_BMR=1
export OFFLINE_PACKED_DATA=1
COMMON=(--epochs 3)
python train.py "${COMMON[@]}" --lr 2e-5 --tags sft --tags lora
torchrun --nproc_per_node 8 aiak_training_llm/train/sft/sft_llava_onevision2.py \\
    --packing-sft-data \\
    --micro-batch-size 1 \\
    --seq-length 8192
"""


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    (repo / ".git").mkdir()
    (repo / "scripts" / "train.py").write_text(TRAIN_PY)
    (repo / "scripts" / "run.sh").write_text(RUN_SH)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    return repo, elsewhere


def fix(capsys, *argv: str) -> str:
    capsys.readouterr()
    main(["check", "--isolated", "--fix", "--unsafe-fixes", "-q", *argv])
    return capsys.readouterr().err


@pytest.mark.parametrize(
    "cwd, name",
    [
        ("scripts", "run.sh"),  # relative, beside the script
        ("repo", "scripts/run.sh"),  # relative, from the checkout's root
        ("elsewhere", "ABS"),  # absolute, from an unrelated directory (editors, CI)
        ("scripts", "ABS"),  # absolute, from the script's directory
        ("repo", "scripts"),  # through a directory
        ("elsewhere", "ABSDIR"),  # through a directory named absolutely
    ],
)
def test_same_fixes_whatever_the_name(checkout, capsys, monkeypatch, cwd, name):
    repo, elsewhere = checkout
    script = repo / "scripts" / "run.sh"
    monkeypatch.chdir({"scripts": repo / "scripts", "repo": repo, "elsewhere": elsewhere}[cwd])
    given = {"ABS": str(script), "ABSDIR": str(repo / "scripts")}.get(name, name)
    err = fix(capsys, given)
    assert "applied 2 fixes" in err, err
    assert script.read_text() == FIXED
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0


def test_diff_is_the_same_from_any_directory(checkout, capsys, monkeypatch):
    repo, elsewhere = checkout
    script = repo / "scripts" / "run.sh"
    seen = set()
    for cwd in (repo / "scripts", repo, elsewhere):
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        main(["check", "--isolated", "--diff", "--unsafe-fixes", str(script)])
        out, err = capsys.readouterr()
        assert "would apply 2 fixes" in err, (cwd, err)
        seen.add("".join(line for line in out.splitlines(keepends=True) if not line.startswith(("---", "+++"))))
    assert len(seen) == 1


def test_stdin_with_a_filename_reads_the_code_beside_that_name(checkout, capsys, monkeypatch):
    import io
    import json

    repo, elsewhere = checkout
    script = repo / "scripts" / "run.sh"
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(RUN_SH.encode())))
    capsys.readouterr()
    main(["check", "--isolated", "--format", "json", "--stdin-filename", str(script), "-"])
    found = {(f["code"], f["line"]) for f in json.loads(capsys.readouterr().out)["findings"]}
    assert ("PK103", 6) in found  # decided from scripts/train.py's parser, not from the current directory


def test_editor_code_actions_whatever_the_servers_directory(checkout, monkeypatch):
    pytest.importorskip("pygls")
    from packlint.server import PacklintServer

    repo, elsewhere = checkout
    script = repo / "scripts" / "run.sh"
    offered = []
    for cwd in (repo / "scripts", repo, elsewhere):
        monkeypatch.chdir(cwd)
        server = PacklintServer.__new__(PacklintServer)
        server.analyses = {}
        analysis = server.analyse(script.as_uri(), RUN_SH)
        offered.append(
            sorted((f.code, fix.title) for f, fix in zip(analysis.findings, analysis.fixes, strict=True) if fix)
        )
    assert offered[0] == offered[1] == offered[2]
    assert [c for c, _t in offered[0]].count("PK103") == 1 and "PK101" in {c for c, _t in offered[0]}


def test_a_symlinked_checkout_gets_the_same_fixes(checkout, capsys, monkeypatch, tmp_path):
    repo, elsewhere = checkout
    link = tmp_path / "link"
    link.symlink_to(repo)
    monkeypatch.chdir(elsewhere)
    err = fix(capsys, str(link / "scripts" / "run.sh"))
    assert "applied 2 fixes" in err, err
    assert (repo / "scripts" / "run.sh").read_text() == FIXED
    shutil.rmtree(repo / "scripts")
    assert os.path.islink(link)
