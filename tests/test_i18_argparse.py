"""Issue 18 (argparse as argparse does it, PK203 on evidence, snapshots only for upstream), checked
against the real thing: the fixture programs' own parsers (tests/fixtures/codebase/i18argparse, plain
argparse, imported here by the test, never by packlint) and transformers' own `string_to_bool`. The
check fixtures that pin packlint's output are in tests/fixtures/check/PK103, PK201, PK202, PK203, PK206.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from packlint.cli import main
from packlint.codebase.snapshots import fork_evidence

CODE = Path(__file__).parent / "fixtures" / "codebase" / "i18argparse"


def _parser(name: str):
    spec = importlib.util.spec_from_file_location(f"i18_{name}", CODE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod.get_parser()


def test_dashdash_ends_the_options_in_real_argparse():
    # what PK202/dashdash_wrapper.sh relies on: after `--`, submit.py takes nothing as its own
    args = _parser("submit").parse_args(
        ["--nodes", "2", "--queue", "long", "--", "python", "other.py", "--seed", "abc", "--queue", "never"]
    )
    assert args.nodes == 2 and args.queue == "long"
    assert args.command[-4:] == ["--seed", "abc", "--queue", "never"]


def test_accumulating_actions_keep_every_value_in_real_argparse():
    args = _parser("train").parse_args(
        ["--tag", "a", "--tag", "b", "-v", "-v", "--layers", "1", "2", "--layers", "3", "--seed", "1", "--seed", "01"]
    )
    assert args.tag == ["a", "b"] and args.verbose == 2 and args.layers == [1, 2, 3] and args.seed == 1


def test_hf_bools_are_one_value_for_transformers():
    string_to_bool = pytest.importorskip("transformers.hf_argparser").string_to_bool

    from packlint.conditions.functions.codebase import _HF_BOOL

    for word, value in _HF_BOOL.items():
        assert string_to_bool(word) is value and string_to_bool(word.upper()) is value


def test_a_value_after_an_empty_expansion_is_only_a_guess(capsys):
    # `--seed $1 2e-5` with the caller's `$1 = 7`: argparse rejects the extra word, not '2e-5' as an int
    with pytest.raises(SystemExit):
        _parser("train").parse_args(["--seed", "7", "2e-5"])
    assert "unrecognized arguments: 2e-5" in capsys.readouterr().err


def test_parse_known_args_keeps_unknown_words():
    args, rest = _parser("known_train").parse_known_args(["--model-config", "x.yaml", "--seed", "3"])
    assert args.seed == 3 and rest == ["--model-config", "x.yaml"]


@pytest.mark.parametrize(
    "program, root, evidence",
    [
        ("/workspace/MindSpeed-LLM/pretrain_gpt.py", None, "its path names MindSpeed-LLM"),
        ("/opt/Pai-Megatron-Patch/examples/pretrain_gpt.py", None, "its path names Pai-Megatron-Patch"),
        ("/workspace/Megatron-LM/pretrain_gpt.py", None, None),
        ("pretrain_gpt.py", "ascend_llm", "the script's checkout ascend_llm holds mindspeed_llm/"),
        ("pretrain_gpt.py", "Megatron-LM", None),
        ("pretrain_gpt.py", "my_experiments", None),
    ],
)
def test_fork_evidence(tmp_path, program, root, evidence):
    script = tmp_path / "s.sh"
    if root is not None:
        base = tmp_path / root
        (base / "examples").mkdir(parents=True)
        (base / "setup.cfg").write_text("")
        if root == "ascend_llm":
            (base / "mindspeed_llm").mkdir()
        script = base / "examples" / "s.sh"
    else:
        (tmp_path / "setup.cfg").write_text("")
    assert fork_evidence(program, str(script)) == evidence


def _check_json(capsys, *argv) -> list[dict]:
    capsys.readouterr()
    main(["check", "--isolated", "--format", "json", *argv])
    return json.loads(capsys.readouterr().out)["findings"]


@pytest.mark.parametrize("root, codes", [("ascend_llm", ["PK206"]), ("Megatron-LM", ["PK201"])])
def test_no_code_base_fork_is_undecided(tmp_path, monkeypatch, capsys, root, codes):
    """With --no-code-base a fork's checkout gets one info, not an unknown-flag error per fork flag; an
    upstream checkout is still checked against the snapshots."""
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    base = tmp_path / root
    (base / "examples").mkdir(parents=True)
    (base / "setup.cfg").write_text("")
    (base / "mindspeed_llm").mkdir()
    if root == "Megatron-LM":
        (base / "mindspeed_llm").rmdir()
    script = base / "examples" / "pretrain.sh"
    script.write_text(
        "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1 --use-fused-rmsnorm\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1 --use-fused-swiglu\n"
    )
    found = _check_json(capsys, "--no-code-base", str(script))
    assert sorted({f["code"] for f in found}) == codes
    if root == "ascend_llm":
        assert len(found) == 1  # once per script


@pytest.mark.skipif(__import__("shutil").which("git") is None, reason="needs git")
def test_dead_env_var_from_history_runs_nothing_of_the_repository(tmp_path, monkeypatch, capsys):
    """PK203 (b): a variable the code base used to read (git history) is a warning; the repository's
    own textconv / external diff / hooks are never run on the way (a marker file would appear)."""
    import subprocess

    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "trainer"
    repo.mkdir()
    marker = tmp_path / "ran"

    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                       capture_output=True)

    git("init", "-q", ".")
    (repo / "train.py").write_text('import os\nFLAG = os.environ.get("OLD_SWITCH")\n')
    git("add", ".")
    git("commit", "-qm", "one")
    (repo / "train.py").write_text('import os\nFLAG = os.environ.get("NEW_KNOB")\n')
    git("commit", "-qam", "two")
    for key, cmd in (("diff.evil.textconv", f"touch {marker}; cat"), ("diff.external", f"touch {marker}"),
                     ("core.pager", f"touch {marker}; cat"), ("core.fsmonitor", f"touch {marker}")):
        git("config", key, cmd)
    (repo / ".gitattributes").write_text("*.py diff=evil\n")
    (repo / "run.sh").write_text("#!/bin/bash\nexport OLD_SWITCH=1\nexport NEVER_READ_X=1\ntorchrun train.py\n")
    found = _check_json(capsys, str(repo / "run.sh"))
    assert [(f["code"], f["line"]) for f in found] == [("PK203", 2), ("PK205", 4)]
    assert "history last mentions it" in found[0]["message"]
    assert not marker.exists()


def test_a_program_outside_the_checkout_is_not_judged_by_the_checkout(tmp_path):
    """Pai-Megatron-Patch's `torchrun $MEGATRON_PATH/pretrain_gpt.py` (MEGATRON_PATH=$2, given by the
    caller): the program is not the checkout's own code, so the checkout's name is no evidence of a fork
    (the snapshots apply, and the removed --DDP-impl of its gpt3 example is found)."""
    base = tmp_path / "Pai-Megatron-Patch"
    (base / "examples" / "gpt3").mkdir(parents=True)
    (base / "setup.cfg").write_text("")
    script = base / "examples" / "gpt3" / "run.sh"
    assert fork_evidence("/pretrain_gpt.py", str(script)) is None
    assert fork_evidence("pretrain_gpt.py", str(script)) == "the script's checkout is Pai-Megatron-Patch"
    assert fork_evidence(f"{base}/pretrain_gpt.py", str(script)) == "its path names Pai-Megatron-Patch"
