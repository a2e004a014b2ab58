"""Recall and precision fixtures of the stack rule packs (issue 21): the catalogue's bad snippets
(docs/packing-stacks.md, by row) written as real-shaped launch scripts with their config files,
and their corrected counterparts. Each case is a directory `tests/fixtures/stacks/<stack>/<case>/` with a
`run.sh` whose `# expect: CODE` lines name every code that must fire at warning or above (`# expect: clean`:
none), beside the files the launch names. The case is copied to a temporary directory (its own checkout)
and checked with code reading on, as `packlint check` would."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from packlint.api import inspect_script
from packlint.codebase import CodeOptions, CodeSession
from packlint.engine import check_model
from packlint.rule_table import load_table

ROOT = Path(__file__).resolve().parent / "fixtures" / "stacks"
CASES = sorted(p for p in ROOT.glob("*/*") if (p / "run.sh").is_file())
TABLE = load_table(use_cache=False)


def expected(script: Path) -> set[str]:
    codes = set()
    for line in script.read_text().splitlines():
        if line.startswith("# expect:"):
            word = line.split(":", 1)[1].strip()
            if word != "clean":
                codes.add(word)
    return codes


@pytest.mark.parametrize("case", CASES, ids=[f"{p.parent.name}/{p.name}" for p in CASES])
def test_stack_case(case: Path, tmp_path: Path) -> None:
    where = tmp_path / case.name
    shutil.copytree(case, where)
    (where / ".git").mkdir()  # the case is its own checkout: nothing above it is read
    script = where / "run.sh"
    text = script.read_bytes()
    model = inspect_script(str(script), text=text, display_path=str(script))
    session = CodeSession(str(script), CodeOptions(use_cache=False))
    findings = check_model(model, TABLE.rules, script_text=text, code=session.facts)
    fired = {f.code for f in findings if f.severity in ("error", "warning")}
    assert fired == expected(case / "run.sh"), [(f.code, f.severity, f.message[:160]) for f in findings]


def test_every_stack_has_cases() -> None:
    stacks = {p.parent.name for p in CASES}
    assert {
        "llamafactory",
        "trl",
        "axolotl",
        "swift",
        "verl",
        "openrlhf",
        "megatron-lm",
        "megatron-bridge",
        "nemo-rl",
        "internvl",
        "torchtitan",
    } <= stacks
    for stack in stacks:
        kinds = {p.name.rsplit("_", 1)[-1] for p in CASES if p.parent.name == stack}
        assert {"bad", "good"} <= kinds, stack
