"""A finding inside a file that several checked scripts source is reported once, with every caller's
launch as a related location (issue 18, part 6). The tree is the shape of a repository whose training
scripts share one settings file (`common/env.sh`)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

from packlint.cli import main

ENV = "export OFFLINE_PACKING_BMR=1\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"
RUN = "#!/bin/bash\nsource common/env.sh\ntorchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size {mbs}\n"


def check_json(*argv: str) -> dict:
    buf = io.StringIO()
    with redirect_stdout(buf):
        main(["check", "--format", "json", "--exit-zero", *argv])
    return json.loads(buf.getvalue())


def test_a_sourced_files_finding_is_reported_once_with_every_caller(tmp_path: Path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "env.sh").write_text(ENV)
    for n, name in enumerate(("run_a.sh", "run_b.sh", "run_c.sh")):
        (tmp_path / name).write_text(RUN.format(mbs=n + 1))
    monkeypatch.chdir(tmp_path)
    findings = [f for f in check_json("run_a.sh", "run_b.sh", "run_c.sh")["findings"] if f["code"] == "PK001"]
    assert len(findings) == 1, findings
    (leak,) = findings
    assert (leak["path"], leak["line"]) == ("common/env.sh", 1)
    assert [(r["path"], r["line"]) for r in leak["related"]] == [("run_a.sh", 3), ("run_b.sh", 3), ("run_c.sh", 3)]
    # one script alone: the same finding, with its one caller
    (alone,) = [f for f in check_json("run_b.sh")["findings"] if f["code"] == "PK001"]
    assert [(r["path"], r["line"]) for r in alone["related"]] == [("run_b.sh", 3)]


def test_a_finding_in_a_checked_file_that_another_checked_script_submits_is_reported_once(tmp_path: Path, monkeypatch):
    """open-r1's shape: `launch_filtering.sh` runs `sbatch slurm/compute_pass_rate.slurm ...` in a loop, and
    the .slurm file is itself one of the checked files; its finding (a `source` of a missing settings file) once."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "compute.slurm").write_text(
        "#!/bin/bash\n#SBATCH --nodes=1\nset -x -e\nsource env/cluster.sh\n"
        "python scripts/compute.py --config $1 --start $2 --end $3\n"
    )
    (tmp_path / "launch.sh").write_text(
        "for i in {0..400..200}; do\n  sbatch slurm/compute.slurm recipes/x.yaml $i $((i + 200))\ndone\n"
    )
    monkeypatch.chdir(tmp_path)
    found = [f for f in check_json("launch.sh", "slurm/compute.slurm")["findings"] if f["code"] == "PK106"]
    assert [(f["path"], f["line"]) for f in found] == [("slurm/compute.slurm", 4)], found
    found = [f for f in check_json("slurm/compute.slurm", "launch.sh")["findings"] if f["code"] == "PK106"]
    assert [(f["path"], f["line"]) for f in found] == [("slurm/compute.slurm", 4)], found


def test_a_file_the_checkouts_gitignore_names_is_not_missing(tmp_path: Path, monkeypatch):
    """`source .env` where the repository ignores `.env` (or `*.local.sh`, by git's own rules): each user
    makes it, so PK106 rests on the machine (an info naming the .gitignore); it stays a warning for a path
    no .gitignore ignores."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("# local\n.env\nsecrets/\n*.local.sh\n")
    (tmp_path / "train.sh").write_text(
        "#!/bin/bash\nsource .env\nsource secrets/wandb.sh\nsource cluster.local.sh\nsource conf/env.sh\n"
        "torchrun --nproc_per_node 8 pretrain_gpt.py --micro-batch-size 1\n"
    )
    monkeypatch.chdir(tmp_path)
    found = [(f["line"], f["severity"]) for f in check_json("train.sh")["findings"] if f["code"] == "PK106"]
    assert found == [(2, "info"), (3, "info"), (4, "info"), (5, "warning")], found
