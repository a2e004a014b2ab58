"""tools/recall_injection.py (issue 27): a case is caught only when its code fires after the edit and not
(as often) before; a control is clean only when it adds no warning or error; an edit that does not apply is
a miss, never a silent pass. Run on a two-file checkout written here (the real repositories are read from
mirrors by the tool itself, see docs/accuracy.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "recall_injection.py"
spec = importlib.util.spec_from_file_location("recall_injection", TOOL)
assert spec is not None and spec.loader is not None
recall = importlib.util.module_from_spec(spec)
spec.loader.exec_module(recall)

SCRIPT = """#!/bin/bash
python3 -m verl.trainer.main_ppo data.train_batch_size=512 actor_rollout_ref.actor.ppo_mini_batch_size=256 \\
    actor_rollout_ref.actor.optim.lr=1e-6 trainer.experiment_name=run_$(date +%m%d)
"""


@pytest.fixture()
def checkout(tmp_path: Path, monkeypatch, capsys) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "run.sh").write_text(SCRIPT)

    def check_here(root: Path, script: str) -> list[dict]:  # the tool's check, in this process (fast)
        import json

        from packlint.cli import main

        monkeypatch.chdir(root)
        capsys.readouterr()
        code = main(["check", "--isolated", "--no-cache", "--format", "json", script])
        assert code in (0, 1)
        return json.loads(capsys.readouterr().out)["findings"]

    monkeypatch.setattr(recall, "check", check_here)
    return tmp_path


def case(expect: str, find: str, replace: str) -> dict:
    return {
        "id": "x",
        "stack": "verl",
        "script": "run.sh",
        "expect": expect,
        "edits": [{"file": "run.sh", "find": find, "replace": replace}],
    }


def test_an_injected_mistake_is_caught_and_the_file_restored(checkout):
    r = recall.run_case(case("PK453", "train_batch_size=512", "train_batch_size=64"), checkout, {})
    assert r["ok"] and "PK453" in r["fired"] and "PK453" not in r["before"]
    assert (checkout / "run.sh").read_text() == SCRIPT


def test_a_harmless_edit_is_a_clean_control(checkout):
    r = recall.run_case(case("clean", "optim.lr=1e-6", "optim.lr=2e-6"), checkout, {})
    assert r["ok"] and r["new"] == []


def test_a_mistake_that_does_not_fire_is_a_miss(checkout):
    r = recall.run_case(case("PK453", "optim.lr=1e-6", "optim.lr=2e-6"), checkout, {})
    assert not r["ok"]


def test_an_edit_that_does_not_apply_is_an_error(checkout):
    with pytest.raises(ValueError):
        recall.run_case(case("PK453", "not in the file", "x"), checkout, {})
    assert (checkout / "run.sh").read_text() == SCRIPT
