"""The rules over the launched code (PK201-PK204, and PK001/PK002/PK004 deciding from the code), checked
against real argparse and real checkouts.

- The hand-written fixture code bases (tests/fixtures/codebase/i10rules/) are cheap to import: for every
  check fixture that runs on one, the fixture's own parser is run on the launch's arguments, and
  PK201/PK202 must fire exactly when argparse rejects them.
- Real checkouts (LLaVA-OneVision-2 at HEAD and before 2026-01-30, LLaVA-OneVision-1.5, Megatron-LM
  main) are extracted from the public snapshots under /work/.mirror when present (skipped otherwise):
  the packing rules must report what that revision's code does, and every unknown flag reported is one
  audited by reading the code (docs/codebase-rules.md lists them).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from packlint.cli import main

CHECK = Path(__file__).parent / "fixtures" / "check"
CODE = Path(__file__).parent / "fixtures" / "codebase" / "i10rules"
MIRROR = Path(os.environ.get("PACKLINT_MIRROR", "/work/.mirror"))


@pytest.fixture(autouse=True)
def _cache(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cb-cache"))


def check_json(capsys, *argv: str) -> tuple[list[dict], int]:
    capsys.readouterr()
    code = main(["check", "--format", "json", *argv])
    return json.loads(capsys.readouterr().out)["findings"], code


# ------------------------------------------------------------------------------------ fixture code bases


def _cases_on(codebase: str) -> list[str]:
    """Check fixtures (paths relative to CHECK) whose .args map the container path onto `codebase`, and
    the differential-only scripts under i10rules/scripts/."""
    out = []
    for args in sorted(CHECK.glob("PK*/*.args")) + sorted((CODE / "scripts").glob("*.args")):
        if f"/{codebase}" in args.read_text():
            rel = os.path.relpath(args, CHECK)
            out.append(rel[: -len(".args")] + ".sh")
    return out


ARGPARSE_CASES = [(cb, case) for cb in ("aiak_2025", "aiak_2026") for case in _cases_on(cb)]
# where packlint's static reader and argparse still disagree (strict: fails loudly once fixed)
READER_GAPS: dict[str, str] = {}


def _real_parser_rejects(codebase: Path, argv: list[str]) -> tuple[bool, str]:
    """Run the fixture code base's own parser (argparse only: cheap) on `argv`."""
    code = ("import sys\nsys.argv = ['train.py'] + sys.argv[1:]\n"
            "from aiak_training_llm.train_args import parse_train_args\nparse_train_args()\n")
    env = {**os.environ, "PYTHONPATH": f"{codebase / 'aiak_megatron'}{os.pathsep}{codebase}"}
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env,
                          timeout=60)
    return proc.returncode != 0, proc.stderr.strip().splitlines()[-1:] and proc.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("codebase,case", ARGPARSE_CASES, ids=[c for _, c in ARGPARSE_CASES])
def test_flag_rules_agree_with_argparse(codebase, case, capsys, monkeypatch, request):
    """PK201/PK202 fire exactly when the program's real parser rejects the launch's arguments (including
    a provider that sets parser.conflict_handler = 'resolve' and redefines a Megatron flag)."""
    if case in READER_GAPS:
        request.node.add_marker(pytest.mark.xfail(strict=True, reason=READER_GAPS[case]))
    from packlint.api import inspect_script

    monkeypatch.chdir(CHECK)
    extra = shlex.split((CHECK / case.replace(".sh", ".args")).read_text())
    findings, _ = check_json(capsys, *extra, case)
    flagged = sorted({f["message"].split(" ", 1)[0] for f in findings if f["code"] in ("PK201", "PK202")})
    env = dict(extra[i + 1].split("=", 1) for i, w in enumerate(extra) if w == "--env")
    model = inspect_script(case, env=env)
    argvs = [v.get("argv") for launch in model["launches"] for v in (launch.get("variants") or [launch])]
    assert argvs, "the fixture launches nothing"
    rejected = []
    for argv in argvs:
        assert argv is not None and all(isinstance(w, str) for w in argv), argv
        bad, why = _real_parser_rejects(CODE / codebase, argv)
        if bad:
            rejected.append(why)
    assert bool(flagged) == bool(rejected), (flagged, rejected)


def test_same_script_two_revisions(capsys, monkeypatch):
    """The OV2 quick-start shape: PK002/PK004 on the code after 2026-01-30, neither on the code before."""
    monkeypatch.chdir(CHECK)
    script = "PK004/code_2026_no_vqa_read.sh"
    new, _ = check_json(capsys, "--path-map", f"/workspace/LLaVA-OneVision-2={CODE / 'aiak_2026'}", script)
    old, _ = check_json(capsys, "--path-map", f"/workspace/LLaVA-OneVision-2={CODE / 'aiak_2025'}", script)
    assert {f["code"] for f in new} >= {"PK002", "PK004"}
    assert not {f["code"] for f in old} & {"PK001", "PK002", "PK004", "PK204"}


def test_model_name_is_not_evidence(capsys, monkeypatch, tmp_path):
    """--model-name llava-onevision1.5-* on an OV2 program path decides nothing: PK004 still fires."""
    script = tmp_path / "s.sh"
    script.write_text("#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1 OFFLINE_PACKING_VQA=1\n"
                      "torchrun /workspace/LLaVA-OneVision-2/aiak_training_llm/train.py "
                      "--model-name llava-onevision1.5-2b --task-encoder Ov15TaskEncoder\n")
    monkeypatch.chdir(tmp_path)
    findings, _ = check_json(capsys, str(script))
    assert "PK004" in {f["code"] for f in findings}
    assert "PK204" in {f["code"] for f in findings}


# ------------------------------------------------------------------------------------ real checkouts


def _extract(repo: str, rev: str, dest: Path, paths: list[str]) -> Path:
    git_dir = MIRROR / repo / "repo"
    if not git_dir.is_dir():
        pytest.skip(f"no snapshot of {repo} under {MIRROR}")
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", rev, "--", *paths], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    subprocess.run(["git", "init", "-q", str(dest)], check=True)  # the checkout root packlint walks up to
    return dest


OV2 = "EvolvingLMMs-Lab+LLaVA-OneVision-2"
OV15 = "EvolvingLMMs-Lab+LLaVA-OneVision-1.5"
# the last revision of LLaVA-OneVision-2 whose task encoder still reads OFFLINE_PACKING_VQA (the next
# commit, ee4b1bd of 2026-01-30, removed the read)
OV2_OLD = "ee4b1bd^"


def _by_script(findings: list[dict]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in findings:
        out.setdefault(Path(f["path"]).name, set()).add(f["code"])
    return out


@pytest.mark.slow
def test_ov2_head_quick_start_packing(capsys, monkeypatch, tmp_path):
    root = _extract(OV2, "HEAD", tmp_path / "ov2", ["aiak_training_llm", "aiak_megatron", "examples/llava_onevision1_5"])
    monkeypatch.chdir(root)
    findings, _ = check_json(capsys, "examples/llava_onevision1_5/quick_start_2b",
                             "examples/llava_onevision1_5/quick_start_4b")
    per = _by_script(findings)
    assert len(per) == 6, per
    for name, codes in per.items():
        assert "PK004" in codes, (name, codes)           # the code reads no OFFLINE_PACKING_VQA
        assert ("PK002" in codes) == (not name.startswith("stage_2")), (name, codes)  # stage 2 exports no OFFLINE_PACKED_DATA
        assert "PK204" not in codes, (name, codes)
    # audited: ee4b1bd removed --image-resolution with the OFFLINE_PACKING_VQA read; stage 2 still passes it
    unknown = sorted((Path(f["path"]).name, f["message"].split(" ", 1)[0]) for f in findings if f["code"] == "PK201")
    assert unknown == [("stage_2_instruct_llava_ov_2b.sh", "--image-resolution"),
                       ("stage_2_instruct_llava_ov_4b.sh", "--image-resolution")], unknown


@pytest.mark.slow
def test_ov2_before_removal_quick_start_packing(capsys, monkeypatch, tmp_path):
    root = _extract(OV2, OV2_OLD, tmp_path / "ov2old", ["aiak_training_llm", "aiak_megatron", "examples/llava_ov_1_5"])
    monkeypatch.chdir(root)
    findings, _ = check_json(capsys, "examples/llava_ov_1_5/quick_start_2b", "examples/llava_ov_1_5/quick_start_4b")
    codes = {f["code"] for f in findings}
    assert not codes & {"PK001", "PK002", "PK004", "PK201", "PK202", "PK203", "PK204"}, findings


@pytest.mark.slow
def test_ov15_quick_start_packing(capsys, monkeypatch, tmp_path):
    root = _extract(OV15, "HEAD", tmp_path / "ov15", ["aiak_training_llm", "aiak_megatron", "examples"])
    monkeypatch.chdir(root)
    findings, _ = check_json(capsys, "examples/llava_ov_1_5/quick_start")
    codes = {f["code"] for f in findings}
    assert not codes & {"PK001", "PK002", "PK004", "PK201", "PK202", "PK203", "PK204"}, findings


MEGATRON = "NVIDIA+Megatron-LM"


@pytest.mark.slow
def test_megatron_main_stale_preprocess_flag(capsys, monkeypatch, tmp_path):
    """A real unknown flag, audited: tools/preprocess_data.py lost --chunk-size (d1a36e5), the detoxify
    annotation script still passes it."""
    script = "examples/academic_paper_scripts/detxoify_lm/annotations/preprocess.sh"
    root = _extract(MEGATRON, "main", tmp_path / "mlm", ["megatron", "tools/preprocess_data.py", script])
    monkeypatch.chdir(root)
    findings, _ = check_json(capsys, script)
    unknown = [f for f in findings if f["code"] == "PK201"]
    assert [f["message"].split(" ", 1)[0] for f in unknown] == ["--chunk-size"], findings
    assert "tools/preprocess_data.py" in unknown[0]["message"]


@pytest.mark.slow
def test_megatron_scripts_against_snapshots(capsys, monkeypatch, tmp_path):
    """Megatron-LM main's own launch scripts, copied away from the code: checked against the shipped
    release snapshots, the only error is the real one (the gpt3 175B schedule split into six words);
    flags newer than core 0.12 are infos, never errors."""
    git_dir = MIRROR / MEGATRON / "repo"
    if not git_dir.is_dir():
        pytest.skip(f"no snapshot of {MEGATRON} under {MIRROR}")
    names = subprocess.run(["git", "--git-dir", str(git_dir), "ls-tree", "-r", "--name-only", "main"],
                           check=True, capture_output=True, text=True).stdout.split()
    scripts = [n for n in names if n.endswith(".sh")]
    dest = tmp_path / "scripts"
    dest.mkdir()
    archive = subprocess.run(["git", "--git-dir", str(git_dir), "archive", "main", "--", *scripts], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    monkeypatch.chdir(dest)
    findings, _ = check_json(capsys, ".")
    blocking = sorted((f["code"], f["path"], f["message"].split(" ", 1)[0]) for f in findings
                      if f["code"] in ("PK201", "PK202") and f["severity"] != "info")
    assert blocking == [("PK202", "examples/gpt3/train_gpt3_175b_distributed.sh", "--step-batch-size-schedule")]


def test_snapshot_root_programs_match_the_data_file():
    """snapshot_for answers launches of other programs from ROOT_PROGRAMS without reading the data
    file: the constant must name exactly the programs the shipped file covers."""
    from packlint.codebase import snapshots

    data = snapshots.load_data()
    assert data is not None
    assert snapshots.ROOT_PROGRAMS == frozenset(data["programs"])
    assert snapshots.snapshot_for("megatron/pretrain_gpt.py") is not None
    assert snapshots.snapshot_for("train.py") is None
