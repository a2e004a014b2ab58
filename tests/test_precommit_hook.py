"""packlint-pre-commit's file selection without pre-commit: of the staged files pre-commit appends,
only the ones `packlint check DIR` would pick are checked; the hook's own args pass through."""

from __future__ import annotations

from packlint.precommit_hook import main, select_argv

BAD = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1\n"


def test_keeps_scripts_drops_other_text_and_keeps_option_values(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name in ("a.sh", "job.sbatch", "job.slurm", "train"):
        (tmp_path / name).write_text(BAD)
    (tmp_path / "notes.txt").write_text(BAD)        # shebang, but a .txt is never a script
    (tmp_path / "Makefile").write_text("all:\n\techo hi\n")
    (tmp_path / "pyproject.toml").write_text("[tool.packlint]\n")
    argv = ["--config", "pyproject.toml", "--fail-on", "warning",
            "a.sh", "job.sbatch", "job.slurm", "train", "notes.txt", "Makefile"]
    assert select_argv(argv) == ["check", "--config", "pyproject.toml", "--fail-on", "warning",
                                 "a.sh", "job.sbatch", "job.slurm", "train"]


def test_no_script_staged_is_a_pass_without_checking_anything(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# hi\n")
    (tmp_path / "a.sh").write_text(BAD)  # not staged: `packlint check` with no path would find it
    assert select_argv(["README.md"]) is None
    assert main(["README.md"]) == 0 and capsys.readouterr().out == ""


def test_a_bad_sbatch_file_fails_the_hook(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
    (tmp_path / "job.sbatch").write_text(BAD)
    assert main(["--isolated", "job.sbatch"]) == 1
    assert "job.sbatch:2:8: PK001" in capsys.readouterr().out
