"""The program's own startup checks (issue 18): read from the launched code, evaluated statically.

Fixtures under tests/fixtures/startup/<case>/ are small code bases in the shapes real ones use
(Megatron-LM's parse_and_validate_args -> validate_args; a fork with an uneven layer list that guards
the upstream assert; a fork that patches validate_args through a patch registry, MindSpeed-LLM's
shape), each with scripts and their expected `packlint check --format gcc` output beside them
(`<script>.expected`). The evaluator is also cross-checked against the fixture's own code run by
Python (the test runs it; packlint never does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from packlint.cli import main

ROOT = Path(__file__).parent / "fixtures" / "startup"
SCRIPTS = sorted(ROOT.glob("*/*.sh"))
UPDATE = bool(os.environ.get("PACKLINT_UPDATE_SNAPSHOTS"))


def run_check(capsys, case: Path, script: Path, *extra: str) -> str:
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        code = main(["check", "--isolated", "--no-cache", "--code-base", case.name, "--select", "PK3",
                     "--format", "gcc", *extra, str(script.relative_to(ROOT))])
    finally:
        os.chdir(old)
    out = capsys.readouterr()
    return out.out + out.err + f"exit {code}\n"


@pytest.mark.parametrize("script", SCRIPTS, ids=[str(s.relative_to(ROOT)) for s in SCRIPTS])
def test_expected_output(capsys, script):
    got = run_check(capsys, script.parent, script)
    expected = script.with_name(script.name + ".expected")
    if UPDATE or not expected.exists():
        expected.write_text(got)
    assert got == expected.read_text()


def test_hand_written_rule_is_the_fallback_without_code(capsys):
    """Without the code, the release-snapshot rule (PK308) reports what PK330 reports with it: one
    finding per check either way, never both."""
    script = ROOT / "upstream" / "train.sh"
    with_code = run_check(capsys, script.parent, script)
    old = os.getcwd()
    os.chdir(ROOT)
    try:
        main(["check", "--isolated", "--no-code-base", "--select", "PK3", "--format", "gcc", "upstream/train.sh"])
    finally:
        os.chdir(old)
    without = capsys.readouterr().out
    assert "[PK330]" in with_code and "[PK308]" not in with_code
    assert "[PK308]" in without and "[PK330]" not in without


def test_fork_guard_makes_the_upstream_rule_silent(capsys):
    script = ROOT / "fork_layer_list" / "train.sh"
    assert "error" not in run_check(capsys, script.parent, script)


def test_patched_validation_is_undecided(capsys):
    script = ROOT / "fork_patch" / "train.sh"
    out = run_check(capsys, script.parent, script)
    assert "[PK331]" in out and "[PK308]" not in out and "[PK330]" not in out


# ------------------------------------------------------------------ the oracle: the code itself


def _real_outcome(case: Path, argv: list[str], world: int) -> bool:
    """Whether the fixture's own validation raises for argv (run by Python in a subprocess)."""
    code = (
        "import sys, os\n"
        f"sys.path.insert(0, {str(case)!r})\n"
        f"sys.argv = ['pretrain_gpt.py'] + {argv!r}\n"
        f"os.environ['WORLD_SIZE'] = '{world}'\n"
        "from megatron.training.arguments import parse_and_validate_args\n"
        "try:\n"
        "    parse_and_validate_args()\n"
        "except AssertionError:\n"
        "    sys.exit(3)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert proc.returncode in (0, 3), proc.stderr.decode()
    return proc.returncode == 3


GRID = [  # (layers, pp, tp, nproc, nnodes, layer list or None)
    (30, 4, 2, 8, 2, None),
    (32, 4, 2, 8, 2, None),
    (32, 4, 2, 6, 2, None),
    (24, 3, 1, 8, 3, None),
    (24, 5, 1, 5, 1, None),
    (30, 4, 2, 8, 2, "8,8,7,7"),
    (30, 4, 2, 8, 2, "8,8,14"),
]


@pytest.mark.parametrize("case", ["upstream", "fork_layer_list"])
def test_evaluator_agrees_with_the_code_it_reads(case, tmp_path):
    """PK330 fires exactly when the fixture's own validate_args raises (python runs the fixture)."""
    from packlint.api import inspect_script
    from packlint.codebase import CodeOptions, CodeSession
    from packlint.engine import check_model
    from packlint.rule_table import load_table

    rules = [r for r in load_table(use_cache=False).rules if r.code == "PK330"]
    base = ROOT / case
    for layers, pp, tp, nproc, nnodes, layer_list in GRID:
        if layer_list is not None and case == "upstream":
            continue
        argv = ["--num-layers", str(layers), "--pipeline-model-parallel-size", str(pp),
                "--tensor-model-parallel-size", str(tp), "--micro-batch-size", "1"]
        if layer_list is not None:
            argv += ["--num-layer-list", layer_list]
        script = tmp_path / "train.sh"
        script.write_text(f"#!/bin/bash\ntorchrun --nproc_per_node {nproc} --nnodes {nnodes} "
                          f"{base}/pretrain_gpt.py {' '.join(argv)}\n")
        model = inspect_script(str(script))
        session = CodeSession(str(script), CodeOptions(code_bases=[str(base)], use_cache=False))
        fired = any(f.code == "PK330" for f in check_model(model, rules, code=session.facts))
        real = _real_outcome(base, argv, nproc * nnodes)
        where = (case, layers, pp, tp, nproc, nnodes, layer_list)
        assert real or not fired, where  # never a finding the code would not raise
        if layer_list is None:
            assert fired == real, where
        else:
            # `[int(x) for x in args.num_layer_list.split(",")]` is not modelled: the fork's own
            # length check is undecided (silent), never wrong
            assert not fired, where


def test_startup_facts_are_plain_json_and_round_trip(tmp_path):
    import json

    from packlint.codebase.model import CodeFacts
    from packlint.codebase.options import CodeOptions
    from packlint.codebase.reader import read_program

    base = ROOT / "upstream"
    facts = read_program(str(base / "pretrain_gpt.py"), [str(base)], [], CodeOptions(use_cache=True,
                                                                                      cache_dir=str(tmp_path)))
    assert facts.startup is not None and facts.startup["validate"]["name"] == "validate_args"
    again = CodeFacts.from_json(json.loads(json.dumps(facts.to_json())))
    assert again.startup == facts.startup
    cached = read_program(str(base / "pretrain_gpt.py"), [str(base)], [], CodeOptions(use_cache=True,
                                                                                       cache_dir=str(tmp_path)))
    assert cached.startup == facts.startup


def _evaluate(body_src: str, attrs: dict) -> list[dict]:
    """Extract the checks of `validate_args` in body_src and evaluate them over attrs."""
    import ast

    from packlint.codebase.startup_checks import Evaluator, _Module, _Reader, unknown

    tree = ast.parse(body_src)
    mod = _Module("/x/arguments.py", tree)

    class Index:
        def source(self, path):
            return None

    reader = _Reader(Index(), [])
    fn = mod.functions["validate_args"]
    data = {"prelude": [["inline", "/x", 1]], "body": reader.steps(mod, fn.body, "args", None),
            "validate": {"param": "args"}, "program_defaults": {}}
    return Evaluator(data, attrs, {}, unknown("absent")).run()


def test_three_valued_unknown_never_fires():
    from packlint.codebase.startup_checks import unknown

    src = '''
def validate_args(args, defaults={}):
    assert args.a % args.b == 0, "a % b"
    if args.c:
        assert args.a > 100, "inside an undecided branch"
    args.a = helper(args.a)
    assert args.a == 0, "after an assignment not modelled"
    if args.tp == 1:
        args.sp = False
    assert not args.sp, "sp reset by a modelled branch"
'''
    res = _evaluate(src, {"a": 30, "b": unknown("not known"), "c": unknown("not known"), "tp": 1, "sp": True})
    assert [r["status"] for r in res] == ["undecided", "undecided", "undecided", "passes"]
    res = _evaluate(src, {"a": 30, "b": 4, "c": False, "tp": 2, "sp": True})
    assert [r["status"] for r in res] == ["fails", "undecided", "fails"]


def test_calls_given_the_args_object_change_what_they_assign():
    src = '''
def fix_up(args):
    args.b = 3

def validate_args(args, defaults={}):
    fix_up(args)
    unknown_helper(args)
    assert args.a % 4 == 0, "a"
'''
    res = _evaluate(src, {"a": 30, "b": 1})
    assert [r["status"] for r in res] == ["undecided"]
    src2 = src.replace("    unknown_helper(args)\n", "")
    res = _evaluate(src2, {"a": 30, "b": 1})
    assert [r["status"] for r in res] == ["fails"]


def test_early_return_that_may_happen_makes_later_checks_undecided():
    from packlint.codebase.startup_checks import unknown

    src = '''
def validate_args(args, defaults={}):
    if args.skip:
        return args
    assert args.a == 1, "a"
'''
    assert [r["status"] for r in _evaluate(src, {"skip": unknown("?"), "a": 2})] == ["undecided"]
    assert [r["status"] for r in _evaluate(src, {"skip": False, "a": 2})] == ["fails"]
    assert [r["status"] for r in _evaluate(src, {"skip": True, "a": 2})] == []



@pytest.mark.parametrize("patch", [
    "import train\ntrain.validate_args = lambda args: args\n",
    "import train\nsetattr(train, 'validate_args', print)\n",
    "from patch_utils import pm\npm.register_patch('megatron.training.arguments.validate_args', print)\n",
    "import sys\nsys.modules['megatron.training.arguments'] = object()\n",
])
def test_patch_forms_make_checks_undecided(tmp_path, patch):
    """Each way forks change the validation at import time is found (PK331), and no check is judged."""
    (tmp_path / "patch_utils.py").write_text("class pm:\n    @staticmethod\n    def register_patch(*a):\n        pass\n")
    (tmp_path / "fork_patches.py").write_text(patch)
    (tmp_path / "train.py").write_text(
        "import argparse\nimport fork_patches  # noqa: F401\n\n\n"
        "def validate_args(args):\n    assert args.micro_batch_size == 1, 'mbs must be 1'\n\n\n"
        "if __name__ == '__main__':\n"
        "    p = argparse.ArgumentParser()\n    p.add_argument('--micro-batch-size', type=int)\n"
        "    args = p.parse_args()\n    validate_args(args)\n")
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\ntorchrun --nproc_per_node 8 {tmp_path}/train.py --micro-batch-size 2\n")
    from packlint.api import inspect_script
    from packlint.codebase import CodeOptions, CodeSession
    from packlint.engine import check_model
    from packlint.rule_table import load_table

    rules = [r for r in load_table(use_cache=False).rules if r.code in ("PK330", "PK331")]
    session = CodeSession(str(script), CodeOptions(code_bases=[str(tmp_path)], use_cache=False))
    codes = [f.code for f in check_model(inspect_script(str(script)), rules, code=session.facts)]
    assert codes == ["PK331"], codes
    (tmp_path / "fork_patches.py").write_text("X = 1\n")  # no patch: the check is judged
    session = CodeSession(str(script), CodeOptions(code_bases=[str(tmp_path)], use_cache=False))
    codes = [f.code for f in check_model(inspect_script(str(script)), rules, code=session.facts)]
    assert codes == ["PK330"], codes


def test_decorated_or_rebound_validation_is_a_patch(tmp_path):
    (tmp_path / "train.py").write_text(
        "import argparse\nfrom wrappers import wrap\n\n\n"
        "@wrap\ndef validate_args(args):\n    assert args.micro_batch_size == 1, 'mbs must be 1'\n\n\n"
        "if __name__ == '__main__':\n"
        "    p = argparse.ArgumentParser()\n    p.add_argument('--micro-batch-size', type=int)\n"
        "    args = p.parse_args()\n    validate_args(args)\n")
    (tmp_path / "wrappers.py").write_text("def wrap(f):\n    return f\n")
    from packlint.codebase.options import CodeOptions
    from packlint.codebase.reader import build_facts
    from packlint.codebase.model import ProgramResolution

    prog = str(tmp_path / "train.py")
    res = ProgramResolution(prog, prog, "absolute", "", str(tmp_path), [str(tmp_path)], [])
    facts, _ = build_facts(prog, [str(tmp_path)], [], CodeOptions(use_cache=False), res)
    assert [p["what"] for p in facts.startup["patches"]] == ["decorates validate_args with wrap"]


@pytest.mark.parametrize("argv,fires", [
    ("--packing-x --micro-batch-size 1", True),
    ("--packing-x $EXTRA --micro-batch-size 1", False),  # $EXTRA may hold --packing-y
    ("$EXTRA --packing-x --micro-batch-size 1", False),
    ("--packing-x --packing-y $EXTRA", False),
])
def test_unknown_words_in_argv(tmp_path, argv, fires):
    """An argument packlint cannot see may give any flag, or repeat one given before it (argparse keeps
    the last): what it may set is unknown."""
    (tmp_path / "train.py").write_text(
        "import argparse\n\n\n"
        "def validate_args(args):\n"
        "    if args.packing_x and not args.packing_y:\n"
        "        raise ValueError('--packing-x requires --packing-y')\n\n\n"
        "if __name__ == '__main__':\n"
        "    p = argparse.ArgumentParser(allow_abbrev=False)\n"
        "    p.add_argument('--micro-batch-size', type=int)\n"
        "    p.add_argument('--packing-x', action='store_true')\n"
        "    p.add_argument('--packing-y', action='store_true')\n"
        "    args = p.parse_args()\n    validate_args(args)\n")
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\nEXTRA=$(cat extra.txt)\ntorchrun --nproc_per_node 8 {tmp_path}/train.py {argv}\n")
    from packlint.api import inspect_script
    from packlint.codebase import CodeOptions, CodeSession
    from packlint.engine import check_model
    from packlint.rule_table import load_table

    rules = [r for r in load_table(use_cache=False).rules if r.code == "PK330"]
    session = CodeSession(str(script), CodeOptions(code_bases=[str(tmp_path)], use_cache=False))
    codes = [f.code for f in check_model(inspect_script(str(script)), rules, code=session.facts)]
    assert codes == (["PK330"] if fires else []), codes


def test_launch_values_follow_argparse():
    """The values the evaluator reads are argparse's: the last store wins, append keeps every value
    after the default list's, switches are booleans, a value that does not convert is unknown."""
    from packlint.codebase.model import FlagSpec
    from packlint.codebase.startup_checks import is_unknown
    from packlint.conditions.functions.startup import _given_value

    def occ(i, opt, value, spec):
        return ((1, i, i), opt, {"value": value}, spec)

    store = FlagSpec(("--n",), "n", "store", None, "int", default="None")
    assert _given_value([occ(1, "--n", "2", store), occ(5, "--n", "8", store)]) == 8
    assert is_unknown(_given_value([occ(1, "--n", "2e3", store)]))
    append = FlagSpec(("--x",), "x", "append", None, "int", default="[1]")
    assert _given_value([occ(1, "--x", "2", append), occ(5, "--x", "3", append)]) == (1, 2, 3)
    switch = FlagSpec(("--sp",), "sp", "store_true", None, "bool", default="False")
    assert _given_value([occ(1, "--sp", True, switch)]) is True


def test_the_startup_checks_walk_visits_nodes_in_ast_walks_order():
    """startup_checks._walk (a list, not ast.walk's generator): the same nodes in the same order, on every module of
    packlint itself and on a tree with nested comprehensions, decorators and match statements."""
    import ast
    from pathlib import Path

    from packlint.codebase.startup_checks import _walk

    texts = [p.read_text() for p in sorted(Path(__file__).resolve().parents[1].joinpath("packlint").rglob("*.py"))]
    texts.append(
        "@dec(a, *b)\ndef f(x=[y for y in z if y], *, k={1: (2, 3)}):\n    match x:\n"
        "        case [1, *rest] if rest: return {**k}\n        case _: pass\n"
    )
    for text in texts:
        tree = ast.parse(text)
        assert [id(n) for n in _walk(tree)] == [id(n) for n in ast.walk(tree)]
