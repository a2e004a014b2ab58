"""Files made at set-up are not missing files of the checkout (issue 26, TIGER-AI-Lab/verl-tool's shapes):

- a file the script itself writes, copies, moves or links into place before it sources it
  (`cp .../env.example.sh .../env.local.sh` then `source .../env.local.sh`): no PK106, what it sets unknown;
- a path under a git submodule of the checkout's `.gitmodules` whose directory is empty or absent (a clone
  without `--recursive`): PK601 and PK106 rest on the machine (at most info), the submodule named."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from packlint.cli import main

DIR = "examples/train/mcp_universe"
ENV_EXAMPLE = 'export SERP_API_KEY=""\nexport NOTION_API_KEY=""\nexport N_GPUS=8\n'
# eval_financial_analysis.sh's head, as shipped
EVAL = (
    "#!/usr/bin/env bash\nset -euo pipefail\n\n"
    "@MAKE@\n"
    f"set -a; source {DIR}/env.local.sh; set +a\nexport WANDB_MODE=offline\n"
    'RUN_NAME=${RUN_NAME:-"mcp_universe-financial_analysis"}\n'
    "python3 -m verl_tool.trainer.main_ppo trainer.n_gpus_per_node=$N_GPUS trainer.experiment_name=$RUN_NAME\n"
)
GITMODULES = (
    '[submodule "benchmarks/math-evaluation-harness"]\n\tpath = benchmarks/math-evaluation-harness\n'
    "\turl = https://github.com/Zhuofeng-Li/math-evaluation-harness.git\n"
    '[submodule "benchmarks/MCP-Universe"]\n\tpath = benchmarks/MCP-Universe\n'
    "\turl = https://github.com/ShenzheZhu/MCP-Universe\n"
)
# create_data.sh's shape: a gateway launched with a config file of the submodule
CREATE_DATA = (
    "#!/usr/bin/env bash\nset -euo pipefail\n\n"
    'CFG="benchmarks/MCP-Universe/mcpuniverse/mcp/configs/server_list.json"\n'
    'PYPATH="$(pwd)/benchmarks/MCP-Universe"\n'
    "PYTHONPATH=$PYPATH \\\npython -m mcpuniverse.mcp.gateway \\\n"
    '   --port 8001 \\\n   --config "$CFG" \\\n   --mode stdio \\\n   --servers "google-search,fetch" &\n'
)


def run(*argv: str) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        main([*argv[:1], "--format", "json", *(["--exit-zero"] if argv[0] == "check" else []), *argv[1:]])
    return json.loads(buf.getvalue())


def checkout(tmp_path: Path, script: str, name: str = "eval_financial_analysis.sh") -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / DIR).mkdir(parents=True)
    (tmp_path / DIR / "env.example.sh").write_text(ENV_EXAMPLE)
    (tmp_path / DIR / name).write_text(script)
    return tmp_path / DIR / name


def codes(result: dict, code: str) -> list[dict]:
    return [f for f in result["findings"] if f["code"] == code]


@pytest.mark.parametrize(
    "make",
    [
        f"cp {DIR}/env.example.sh {DIR}/env.local.sh",  # verl-tool's line
        f'cp -f "{DIR}/env.example.sh" "./{DIR}/env.local.sh"',
        f"mv {DIR}/env.example.sh {DIR}/env.local.sh",
        f"ln -sf env.example.sh {DIR}/env.local.sh",
        f"install -m 600 {DIR}/env.example.sh {DIR}/env.local.sh",
        f"touch {DIR}/env.local.sh",
        f"cat > {DIR}/env.local.sh <<EOF\nexport N_GPUS=8\nEOF",
        f'echo "export N_GPUS=8" >> {DIR}/env.local.sh',
        f"printenv | grep KEY | tee {DIR}/env.local.sh >/dev/null",
        f'CONF=$(pwd)/{DIR}\ncp {DIR}/env.example.sh "$CONF/env.local.sh"',  # a computed name, the same file name
        f"[ -f {DIR}/env.local.sh ] || cp {DIR}/env.example.sh {DIR}/env.local.sh",
    ],
)
def test_a_file_the_script_makes_before_sourcing_it_is_not_missing(tmp_path: Path, monkeypatch, make: str):
    script = checkout(tmp_path, EVAL.replace("@MAKE@", make))
    monkeypatch.chdir(tmp_path)
    assert codes(run("check", str(script.relative_to(tmp_path))), "PK106") == []
    model = run("inspect", str(script.relative_to(tmp_path)))
    (diag,) = [d for d in model["diagnostics"] if d["code"] == "source-not-found"]
    line = EVAL.replace("@MAKE@", make).splitlines().index(f"set -a; source {DIR}/env.local.sh; set +a") + 1
    assert diag["line"] == line and "the script makes it at line" in diag["message"], diag
    # an unread sourced file: what the rules read of the environment after it is unknown (core._unread_source)
    assert diag["message"].startswith("sourced file not found: ")
    assert "settings it makes are not seen" in diag["message"]


@pytest.mark.parametrize(
    "make",
    [
        "",  # nothing makes it: verl-tool's file as a user would break it
        f"cp {DIR}/env.example.sh {DIR}/env.prod.sh",  # another file
        f"cat {DIR}/env.local.sh > {DIR}/env.bak.sh",  # it is read, not written
        f"cp {DIR}/env.local.sh /tmp/backup/",  # copied away, not into place
        f'cp {DIR}/env.local.sh "$BACKUP_DIR/"',  # the same, into a computed directory
        f"python3 gen_env.py {DIR}/env.local.sh 2>&1",  # an argument is not a written path
    ],
)
def test_a_file_nothing_before_the_source_makes_stays_missing(tmp_path: Path, monkeypatch, make: str):
    script = checkout(tmp_path, EVAL.replace("@MAKE@", make))
    monkeypatch.chdir(tmp_path)
    (found,) = codes(run("check", str(script.relative_to(tmp_path))), "PK106")
    assert found["severity"] == "warning" and "env.local.sh" in found["message"]


def test_a_copy_after_the_source_does_not_make_it(tmp_path: Path, monkeypatch):
    text = EVAL.replace("@MAKE@", "") + f"cp {DIR}/env.example.sh {DIR}/env.local.sh\n"
    script = checkout(tmp_path, text)
    monkeypatch.chdir(tmp_path)
    assert [f["line"] for f in codes(run("check", str(script.relative_to(tmp_path))), "PK106")] == [5]


def submodule_checkout(tmp_path: Path, script: str, name: str = "create_data.sh", fetched: bool = False) -> Path:
    path = checkout(tmp_path, script, name)
    (tmp_path / ".gitmodules").write_text(GITMODULES)
    (tmp_path / "benchmarks" / "MCP-Universe").mkdir(parents=True)  # git leaves an empty directory
    if fetched:  # checked out, without the file: the checkout decides
        (tmp_path / "benchmarks" / "MCP-Universe" / "README.md").write_text("# MCP-Universe\n")
    return path


def test_a_config_under_an_unfetched_submodule_is_the_machines(tmp_path: Path, monkeypatch):
    script = submodule_checkout(tmp_path, CREATE_DATA)
    monkeypatch.chdir(tmp_path)
    (found,) = codes(run("check", str(script.relative_to(tmp_path))), "PK601")
    assert found["severity"] == "info" and found["evidence"] == "machine", found
    assert "under the git submodule benchmarks/MCP-Universe, not checked out here" in found["message"]


def test_a_submodule_directory_absent_altogether_is_not_checked_out_either(tmp_path: Path, monkeypatch):
    script = submodule_checkout(tmp_path, CREATE_DATA)
    (tmp_path / "benchmarks" / "MCP-Universe").rmdir()
    monkeypatch.chdir(tmp_path)
    (found,) = codes(run("check", str(script.relative_to(tmp_path))), "PK601")
    assert found["severity"] == "info" and "git submodule benchmarks/MCP-Universe" in found["message"]


def test_a_checked_out_submodule_without_the_file_decides_like_the_checkout(tmp_path: Path, monkeypatch):
    script = submodule_checkout(tmp_path, CREATE_DATA, fetched=True)
    monkeypatch.chdir(tmp_path)
    (found,) = codes(run("check", str(script.relative_to(tmp_path))), "PK601")
    assert found["severity"] != "info" and "submodule" not in found["message"], found


def test_a_path_beside_a_submodule_is_not_under_it(tmp_path: Path, monkeypatch):
    """`benchmarks/MCP-Universe-v2/...` shares the prefix, not the directory."""
    script = submodule_checkout(tmp_path, CREATE_DATA.replace("MCP-Universe/mcpuniverse", "MCP-Universe-v2/mcp"))
    monkeypatch.chdir(tmp_path)
    (found,) = codes(run("check", str(script.relative_to(tmp_path))), "PK601")
    assert found["severity"] != "info" and "submodule" not in found["message"], found


def test_a_file_sourced_from_an_unfetched_submodule_is_the_machines(tmp_path: Path, monkeypatch):
    text = "#!/usr/bin/env bash\nsource benchmarks/MCP-Universe/scripts/env.sh\npython3 -m verl_tool.trainer.main_ppo\n"
    script = submodule_checkout(tmp_path, text, name="run.sh")
    monkeypatch.chdir(tmp_path)
    (found,) = codes(run("check", str(script.relative_to(tmp_path))), "PK106")
    assert found["severity"] == "info" and found["evidence"] == "machine", found
    assert "under the git submodule benchmarks/MCP-Universe" in found["message"]
    # fetched: the checkout decides again
    (tmp_path / "benchmarks" / "MCP-Universe" / "README.md").write_text("# MCP-Universe\n")
    (found,) = codes(run("check", str(script.relative_to(tmp_path))), "PK106")
    assert found["severity"] == "warning" and "submodule" not in found["message"], found


KALDI_PREP = (
    "#!/usr/bin/env bash\nset -e\n\nKALDI_ROOT=/opt/kaldi/\n\n"
    "pushd $KALDI_ROOT/egs/librispeech/s5\n. ./cmd.sh\n. ./path.sh\npopd\n"
    'cd "$(dirname "$0")"\n. ./local_env.sh\n'
)


def test_a_relative_source_after_cd_into_a_machine_directory_rests_on_the_machine(tmp_path: Path, monkeypatch):
    """NVIDIA/DeepLearningExamples Kaldi/SpeechRecognition/scripts/docker/prepare_data.sh: `pushd
    $KALDI_ROOT/egs/librispeech/s5` (KALDI_ROOT=/opt/kaldi/, the container's) then `. ./cmd.sh`: bash looks in
    /opt/kaldi/..., so whether it exists is the machine's (info, the directory named); back in the script's own
    directory a missing file is the checkout's again (warning)."""
    script = checkout(tmp_path, KALDI_PREP, "prepare_data.sh")
    monkeypatch.chdir(tmp_path)
    found = codes(run("check", str(script.relative_to(tmp_path))), "PK106")
    assert [(f["line"], f["severity"]) for f in found] == [(7, "info"), (8, "info"), (11, "warning")]
    assert "/opt/kaldi/egs/librispeech/s5 at line 6" in found[0]["message"]


def test_a_climbing_relative_pythonpath_stays_inside_the_checkout(tmp_path: Path, monkeypatch):
    """FunAudioLLM/CosyVoice examples/*/path.sh: `export PYTHONPATH=../../../:$PYTHONPATH`, meant from the recipe's
    directory (the repository's root). Taken from packlint's working directory it climbed to `/`, and the check
    of 16 scripts searched the machine's Python files (97 s, and its answer depended on the machine). It is the
    script's directory's, and never a directory above the checkout."""
    from packlint.codebase.options import CodeOptions
    from packlint.codebase.resolve import map_dir

    recipe = tmp_path / "repo" / "examples" / "libritts" / "cosyvoice"
    recipe.mkdir(parents=True)
    (tmp_path / "repo" / ".git").mkdir()
    (tmp_path / "repo" / "third_party" / "Matcha-TTS").mkdir(parents=True)
    root = str(tmp_path / "repo")
    opts = CodeOptions()
    assert map_dir("../../../", opts, [root], root, str(recipe)) == root
    assert (
        map_dir("../../../third_party/Matcha-TTS", opts, [root], root, str(recipe)) == root + "/third_party/Matcha-TTS"
    )
    assert map_dir("../../../../", opts, [root], root, str(recipe)) is None  # above the checkout: not searched
    assert map_dir("../../../", opts, [root], root, None) is None


def test_a_cd_inside_a_compound_command_and_an_optional_source(tmp_path: Path, monkeypatch):
    """GeodesicResearch/geodesic-gpt-neox pretrain_neox.sbatch: `if [ ... ]; then cd /home/a5k/.../other; source
    ./neox/.../generate_hostfile.sh; fi`: the cd on the source's own line, inside the `if`, decides where bash looks
    (the machine's; so too for the source after the `if`). safety-research/talkative-probes submit_eval.sh:
    `source scripts/setup_env.sh 2>/dev/null || true` is written optional: no PK106. A plain missing source stays."""
    (tmp_path / ".git").mkdir()
    script = tmp_path / "pretrain.sbatch"
    script.write_text(
        "#!/bin/bash\nsource scripts/setup_env.sh 2>/dev/null || true\nsource scripts/must.sh\n"
        'if [ "$(hostname)" != "" ]; then cd /home/a5k/other; source ./neox/generate_hostfile.sh; fi\n'
        "source ./after.sh\n"
    )
    monkeypatch.chdir(tmp_path)
    found = codes(run("check", "pretrain.sbatch"), "PK106")
    assert [(f["line"], f["severity"]) for f in found] == [(3, "warning"), (4, "info"), (5, "info")], found
