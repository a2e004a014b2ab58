"""The pre-commit hook, with the real `pre-commit` package, in the form the docs give it
(docs/integrations.md): the snippet's `rev` must be the released tag `v<packlint.__version__>` and its
URL the project's; here the URL is replaced by a local clone of this checkout tagged like a release.

What it shows: `pre-commit try-repo` and an installed hook catch a bug in a `.sbatch` file, a `.slurm`
file and an extensionless non-executable script (the files `packlint check .` checks), pass a good
script, never look at a text file that is not a script, honour the project's `exclude`, and block a
real `git commit`.

Cost: building the hook's Python environment (pip install of this repository) is most of it; it needs
the package index or a local wheelhouse (skipped, with the reason, when pip reaches neither). All
tests share one PRE_COMMIT_HOME and one (repo, rev), so the config-based tests build it once per
session; `try-repo` always builds its own in a temporary store, once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from packlint import __version__

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "integrations.md"
BAD = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1\n"
GOOD = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\ntorchrun train.py --micro-batch-size 1\n"
# every kind of file `packlint check .` checks, each with a PK001 on line 2
BAD_FILES = {"bad.sh": BAD, "job.sbatch": BAD.replace("#!/bin/bash", "#!/bin/bash\n#SBATCH -N 1", 1),
             "job.slurm": BAD, "train_launch": BAD.replace("#!/bin/bash", "#!/usr/bin/env bash", 1)}
BAD_LINES = {"bad.sh": 2, "job.sbatch": 3, "job.slurm": 2, "train_launch": 2}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("git") is None, reason="needs git"),
    pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs this repository as a git checkout"),
]


def documented_config() -> dict:
    yaml = pytest.importorskip("yaml")
    block = re.search(r"## pre-commit\n.*?```yaml\n(.*?)```", DOC.read_text(), re.S)
    assert block, "docs/integrations.md has no pre-commit snippet"
    return yaml.safe_load(block.group(1))


def test_snippet_pins_the_released_tag_of_this_version_and_the_project_url():
    repo = documented_config()["repos"][0]
    assert repo["rev"] == f"v{__version__}"
    homepage = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Homepage"]
    assert repo["repo"] == homepage
    assert repo["hooks"][0]["id"] == "packlint"


def _env(home: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT", "OFFLINE_"))}
    env.update(PRE_COMMIT_HOME=str(home), GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com", NO_COLOR="1")
    return env


def git(repo: Path, *args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)


@pytest.fixture(scope="session")
def release(tmp_path_factory) -> tuple[Path, str, dict]:
    """A clone of this checkout (uncommitted changes included, via `git stash create`) with the tag
    the snippet names, plus the shared pre-commit home. Returns (clone, rev, env)."""
    pytest.importorskip("pre_commit")
    base = tmp_path_factory.mktemp("pre-commit")
    env = _env(base / "home")
    rev = documented_config()["repos"][0]["rev"]
    snapshot = git(ROOT, "stash", "create", env=env).stdout.strip() or git(ROOT, "rev-parse", "HEAD", env=env).stdout.strip()
    clone = base / "packlint-release"
    assert git(base, "clone", "-q", "--no-checkout", str(ROOT), str(clone), env=env).returncode == 0
    fetched = git(clone, "fetch", "-q", str(ROOT), snapshot, env=env)
    assert fetched.returncode == 0, fetched.stderr
    assert git(clone, "checkout", "-q", "--detach", snapshot, env=env).returncode == 0
    tagged = git(clone, "tag", "-f", rev, env=env)
    assert tagged.returncode == 0, tagged.stderr
    return clone, rev, env


@pytest.fixture
def project(tmp_path, release):
    """A training repository with one bad file of each kind, a good script and a non-script."""
    clone, rev, env = release
    r = tmp_path / "training-repo"
    r.mkdir()
    assert git(r, "init", "-q", ".", env=env).returncode == 0
    for name, text in BAD_FILES.items():
        (r / name).write_text(text)       # none executable: identify's `shell` tag would skip most
    (r / "good.sh").write_text(GOOD)
    (r / "notes.txt").write_text(BAD)     # a text file that is no script: never checked
    config = documented_config()
    config["repos"][0]["repo"] = str(clone)
    import yaml

    (r / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    git(r, "add", ".", env=env)
    return r, env


# pip's words when it cannot reach an index or wheelhouse holding packlint's dependencies
OFFLINE = ("No matching distribution found", "Could not find a version that satisfies", "NewConnectionError",
           "Temporary failure in name resolution", "Network is unreachable")


def pre_commit(repo: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    """`pre-commit ARGS` in `repo`. Building the hook's environment is a `pip install` of the clone: it
    needs packlint's dependencies from an index or a wheelhouse (pip's config, PIP_INDEX_URL,
    PIP_FIND_LINKS). Without one, pre-commit exits 3 on pip's error: the test is skipped, saying so."""
    out = subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=repo, env=env, capture_output=True,
                         text=True, timeout=1200)
    said = out.stdout + out.stderr
    if out.returncode == 3 and "pip" in said and any(w in said for w in OFFLINE):
        pytest.skip("pre-commit could not build the hook's environment: pip reaches no index or wheelhouse "
                    "with packlint's dependencies (offline)")
    return out


def assert_caught(out: str, names) -> None:
    for name in names:
        assert f"{name}:{BAD_LINES[name]}:8: PK001 [error]" in out, out
    assert "notes.txt" not in out and "good.sh" not in out, out


def test_try_repo_at_the_snippets_tag_catches_a_bug_in_a_sbatch_file(project, release):
    r, env = project
    clone, rev, _ = release
    out = pre_commit(r, env, "try-repo", str(clone), "packlint", "--ref", rev, "--all-files")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "Failed" in out.stdout
    assert_caught(out.stdout, BAD_FILES)


def test_snippet_config_checks_what_check_dot_checks_and_honours_exclude(project):
    r, env = project
    bad = pre_commit(r, env, "run", "--all-files")
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert_caught(bad.stdout, BAD_FILES)
    good = pre_commit(r, env, "run", "--files", "good.sh", "notes.txt")
    assert good.returncode == 0, good.stdout + good.stderr
    # the project's configuration applies to the hook (exclude, as pre-commit names the files)
    (r / "pyproject.toml").write_text("[tool.packlint]\nexclude = ['job.sbatch']\n")
    excluded = pre_commit(r, env, "run", "--files", "job.sbatch")
    assert excluded.returncode == 0, excluded.stdout + excluded.stderr


def test_installed_hook_blocks_the_commit(project):
    r, env = project
    git(r, "reset", "-q", env=env)
    git(r, "add", ".pre-commit-config.yaml", "good.sh", "notes.txt", env=env)
    assert pre_commit(r, env, "install").returncode == 0
    ok = git(r, "commit", "-q", "-m", "good script", env=env)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    git(r, "add", "job.sbatch", env=env)
    blocked = git(r, "commit", "-q", "-m", "bad job", env=env)
    assert blocked.returncode != 0
    assert "job.sbatch:3:8: PK001" in blocked.stdout + blocked.stderr
    assert git(r, "log", "--format=%s", env=env).stdout.split("\n")[0] == "good script"


def test_try_repo_at_a_commit_sha_of_an_untagged_clone(project, release, tmp_path):
    """The snippet's other form, `rev:` a commit's full SHA: what works before a release is tagged."""
    r, env = project
    clone, _rev, _ = release
    untagged = tmp_path / "packlint-untagged"
    assert git(tmp_path, "clone", "-q", "--no-tags", str(clone), str(untagged), env=env).returncode == 0
    assert git(untagged, "tag", "-l", env=env).stdout == ""
    sha = git(untagged, "rev-parse", "HEAD", env=env).stdout.strip()
    assert re.fullmatch(r"[0-9a-f]{40}", sha)
    out = pre_commit(r, env, "try-repo", str(untagged), "packlint", "--ref", sha, "--all-files")
    assert out.returncode == 1, out.stdout + out.stderr
    assert_caught(out.stdout, BAD_FILES)
