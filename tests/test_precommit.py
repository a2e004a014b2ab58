"""The pre-commit hook, with the real `pre-commit` package: `pre-commit try-repo` against this checkout
in a temporary git repository (a bad script fails the hook, a good one passes, the project's config
applies), and a real `git commit` blocked by the installed hook.

pre-commit builds the hook's Python environment from this repository (pip may fetch tree-sitter,
pydantic and rich from PyPI). About 15-40 s in all, most of it the one-time environment install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BAD = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1\n"
GOOD = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\ntorchrun train.py --micro-batch-size 1\n"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs this repository as a git checkout"),
]


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    pytest.importorskip("pre_commit")
    return tmp_path_factory.mktemp("pre-commit-home")


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT", "OFFLINE_"))}
    env.update(PRE_COMMIT_HOME=str(home), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com", NO_COLOR="1")
    return env


def git(repo: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)


@pytest.fixture
def repo(tmp_path, home):
    env = _env(home)
    r = tmp_path / "training-repo"
    r.mkdir()
    assert git(r, "init", "-q", ".", env=env).returncode == 0
    (r / "bad.sh").write_text(BAD)
    (r / "good.sh").write_text(GOOD)
    (r / "notes.txt").write_text("export OFFLINE_PACKING_BMR=1\n")   # not a shell file: never checked
    git(r, "add", ".", env=env)
    return r, env


def pre_commit(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=600)


def test_try_repo_blocks_bad_and_passes_good(repo):
    r, env = repo
    bad = pre_commit(r, env, "try-repo", str(ROOT), "packlint", "--files", "bad.sh")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "packlint" in bad.stdout and "Failed" in bad.stdout
    assert "bad.sh:2:8: PK001 [error]" in bad.stdout
    good = pre_commit(r, env, "try-repo", str(ROOT), "packlint", "--files", "good.sh", "notes.txt")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout
    # the project's configuration applies to the hook (exclude, as pre-commit names the files)
    (r / "pyproject.toml").write_text("[tool.packlint]\nexclude = ['bad.sh']\n")
    excluded = pre_commit(r, env, "try-repo", str(ROOT), "packlint", "--files", "bad.sh")
    assert excluded.returncode == 0, excluded.stdout + excluded.stderr


def test_installed_hook_blocks_the_commit(repo):
    r, env = repo
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    has_manifest = subprocess.run(["git", "cat-file", "-e", f"{head}:.pre-commit-hooks.yaml"], cwd=ROOT).returncode == 0
    if not has_manifest:
        pytest.skip("HEAD of this checkout has no .pre-commit-hooks.yaml yet")
    (r / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {ROOT}\n    rev: {head}\n    hooks:\n      - id: packlint\n")
    git(r, "reset", "-q", env=env)
    git(r, "add", ".pre-commit-config.yaml", "good.sh", env=env)
    assert pre_commit(r, env, "install").returncode == 0
    ok = git(r, "commit", "-q", "-m", "good script", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    git(r, "add", "bad.sh", env=env)
    blocked = git(r, "commit", "-q", "-m", "bad script", env=env)
    assert blocked.returncode != 0
    assert "PK001" in blocked.stdout + blocked.stderr
    assert git(r, "log", "--format=%s", env=env).stdout.split("\n")[0] == "good script"
