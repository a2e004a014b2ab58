"""PK106 on files made at set-up and on CRLF lines (issue 26, the second holdout):

- Jetteyc/Megatron-LM-AutoTuner sources `.secrets/env.sh`, which its `.gitignore` ignores with the
  wildcard pattern `.secrets/env.*` (only `.secrets/env_sample.sh` is committed): each user makes it at
  set-up, so the finding rests on the machine: an info naming the .gitignore, judged by git's own rules
  (packlint.discover's matcher), not a warning about the checkout;
- sunblaze-ucb/Intuitor's CRLF scripts `source openr1/bin/activate\\r`: bash keeps the CR and looks for a
  file whose name ends in it, so the line fails on every machine; PK106 says the CR is why (not "does not
  exist in this checkout"), and what the path without the CR would be (a venv made at set-up)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from packlint.cli import main

GITIGNORE = "# Byte-compiled\n__pycache__/\n*.py[cod]\n\n# secrets\n.secrets/env.*\n\noutputs/\n"
# scripts/download_model_configs.sh, as shipped (run from the checkout's root)
DOWNLOAD = (
    '#!/bin/bash\n\nsource .secrets/env.sh\n\nMODEL_NAMES=(\n    "Qwen/Qwen3-0.6B"\n)\n'
    'for MODEL_NAME in "${MODEL_NAMES[@]}"; do\n'
    '    python3 scripts/download_model_config.py --model-name "$MODEL_NAME" --output-dir "$OUT"\ndone\n'
)
# slurm/train.slurm's head (Intuitor / open-r1), every line ending in CRLF
INTUITOR = (
    "#!/bin/bash\n#SBATCH --job-name=open-r1\n#SBATCH --nodes=1\n\nset -x -e\n\n"
    "source ~/.bashrc\nsource openr1/bin/activate\nsource recipes/accelerate_env.sh\n"
    "ACCELERATE_LOG_LEVEL=info accelerate launch --config_file recipes/accelerate_configs/zero3.yaml "
    "--num_processes 8 src/open_r1/grpo.py --config recipes/grpo.yaml\n"
)


def check_json(*argv: str) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["check", "--format", "json", "--exit-zero", *argv])
    return json.loads(buf.getvalue())


def pk106(result: dict) -> list[dict]:
    return [f for f in result["findings"] if f["code"] == "PK106"]


def test_a_sourced_file_a_wildcard_gitignore_pattern_ignores_is_an_info_naming_it(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(GITIGNORE)
    (tmp_path / ".secrets").mkdir()
    (tmp_path / ".secrets" / "env_sample.sh").write_text('export HF_TOKEN=""\n')
    (tmp_path / ".secrets" / "__init__.py").write_text("")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "download_model_configs.sh").write_text(DOWNLOAD)
    # the same shape without the .gitignore entry: the committed file is missing, a warning
    (tmp_path / "scripts" / "other.sh").write_text(DOWNLOAD.replace(".secrets/env.sh", ".secrets/cluster.sh"))
    monkeypatch.chdir(tmp_path)
    found = {f["path"]: f for f in pk106(check_json("scripts"))}
    ignored = found["scripts/download_model_configs.sh"]
    assert ignored["severity"] == "info" and ignored["evidence"] == "machine", ignored
    assert ignored["premises"] == [
        {
            "kind": "machine",
            "because": "the checkout's .gitignore ignores .secrets/env.sh: a file made when the job is set up",
        }
    ]
    assert found["scripts/other.sh"]["severity"] == "warning", found


def test_a_gitignore_reinclusion_keeps_the_warning(tmp_path: Path, monkeypatch):
    """Git's rules, not a literal match: `!.secrets/env.sh` re-includes the file, so it is a committed
    file that is missing."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text(GITIGNORE + "!.secrets/env.sh\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "download_model_configs.sh").write_text(DOWNLOAD)
    monkeypatch.chdir(tmp_path)
    assert [f["severity"] for f in pk106(check_json("scripts"))] == ["warning"]


def test_a_crlf_source_line_names_the_carriage_return(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "slurm").mkdir()
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "accelerate_env.sh").write_text("export NCCL_DEBUG=WARN\n")
    (tmp_path / "slurm" / "train.slurm").write_bytes(INTUITOR.replace("\n", "\r\n").encode())
    monkeypatch.chdir(tmp_path)
    result = check_json("slurm/train.slurm")
    found = {f["line"]: f for f in pk106(result)}
    assert sorted(found) == [8, 9], found
    venv, committed = found[8], found[9]
    for f in (venv, committed):
        assert f["severity"] == "warning" and f["evidence"] == "checkout", f
        assert "ends in a carriage return" in f["message"] and "does not exist in this checkout" not in f["message"]
    assert "openr1/bin/activate is made at set-up" in venv["message"], venv["message"]
    assert "(without the CR: recipes/accelerate_env.sh)" in committed["message"], committed["message"]
    assert any(f["code"] == "PK904" for f in result["findings"])


def test_the_same_lines_with_lf_endings_give_no_pk106(tmp_path: Path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "slurm").mkdir()
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "accelerate_env.sh").write_text("export NCCL_DEBUG=WARN\n")
    (tmp_path / "slurm" / "train.slurm").write_text(INTUITOR)
    monkeypatch.chdir(tmp_path)
    assert pk106(check_json("slurm/train.slurm")) == []
