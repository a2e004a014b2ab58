"""The checkout a script lives in, without a VCS marker (issue 18, part 5): the code search stops at the
nearest project root, else at the script's own directory, and never climbs to `/`, the home directory
or the temp directory. Fixture trees are laid out the way an extracted release or a container's
/workspace looks: a project with its packaging files, examples with their own requirements.txt, and
unrelated Python files above it."""

from __future__ import annotations

import io
import json
import os
import tempfile
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from packlint.cli import main
from packlint.codebase.resolve import checkout_root, never_roots, script_checkout_dirs

TRAIN = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr', type=float)\np.parse_args()\n"
LAUNCH = "#!/bin/bash\ntorchrun --nproc_per_node 8 pretrain.py --lr 1e-4\n"


def code_of(script: Path) -> dict:
    """`packlint inspect --format json SCRIPT`: the first launch's code resolution."""
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["inspect", str(script), "--format", "json"]) == 0
    return json.loads(buf.getvalue())["launches"][0]["code"]


def _tree(base: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = base / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


@pytest.fixture
def release(tmp_path: Path) -> Path:
    """/.../outer (unrelated code, its own pretrain.py) / release (pyproject.toml, pretrain.py) /
    examples/gpt (a requirements.txt of its own, the script)."""
    _tree(
        tmp_path,
        {
            "outer/pretrain.py": "raise SystemExit('unrelated')\n",
            "outer/setup.cfg": "[metadata]\nname = unrelated\n",
            "outer/release/pyproject.toml": "[project]\nname = 'release'\n",
            "outer/release/pretrain.py": TRAIN,
            "outer/release/examples/gpt/requirements.txt": "sentencepiece\n",
            "outer/release/examples/gpt/train.sh": LAUNCH,
        },
    )
    return tmp_path / "outer" / "release"


def test_project_root_bounds_the_checkout(release: Path):
    start = release / "examples" / "gpt"
    assert checkout_root(str(start)) == (str(release), "project")
    dirs = script_checkout_dirs(str(start / "train.sh"))
    assert dirs == [str(start), str(start.parent), str(release)]
    code = code_of(start / "train.sh")
    assert code["found"] and code["file"] == str(release / "pretrain.py")


def test_a_vcs_marker_still_wins(release: Path):
    (release.parent / ".git").mkdir()  # the outer tree is the repository: the monorepo case
    assert checkout_root(str(release / "examples" / "gpt")) == (str(release.parent), "vcs")


def test_requirements_only_then_script_dir(tmp_path: Path):
    _tree(tmp_path, {"a/requirements-dev.txt": "x\n", "a/b/c/train.sh": LAUNCH, "z/train.sh": LAUNCH})
    assert checkout_root(str(tmp_path / "a" / "b" / "c")) == (str(tmp_path / "a"), "requirements")
    assert checkout_root(str(tmp_path / "z")) == (str(tmp_path / "z"), "script-dir")
    code = code_of(tmp_path / "z" / "train.sh")
    assert not code["found"]
    assert "only the script's directory" in code["detail"] and str(tmp_path / "z") in code["detail"]


def test_never_the_temp_home_or_root_directory():
    stop = never_roots()
    for d in (tempfile.gettempdir(), os.path.expanduser("~"), os.sep):
        assert os.path.abspath(d) in stop
        assert checkout_root(d)[0] is None
        assert script_checkout_dirs(os.path.join(d, "x.sh")) == []


@pytest.mark.parametrize("tmpdir_env", [None, "set", "empty"])
def test_the_temp_directory_without_tempfile_is_what_tempfile_says(tmp_path: Path, tmpdir_env):
    """never_roots() reads the temp directory without importing tempfile (start-up time) where that gives
    tempfile's own answer; a fresh process each, since tempfile remembers its first answer."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    if tmpdir_env == "set":
        env["TMPDIR"] = str(tmp_path)
    elif tmpdir_env == "empty":
        env["TMPDIR"] = ""
    code = (
        "import sys; from packlint.codebase.resolve import _temp_dir; d = _temp_dir(); "
        "lazy = 'tempfile' not in sys.modules; import tempfile; print(d == tempfile.gettempdir(), lazy)"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "False" if tmpdir_env == "set" else str(os.access("/tmp", os.W_OK))]


def test_the_climb_stops_below_the_temp_directory(tmp_path: Path):
    # tmp_path lies inside the temp directory, which holds other tests' files: the climb never gets there
    assert str(tmp_path).startswith(os.path.realpath(tempfile.gettempdir())) or str(tmp_path).startswith(
        tempfile.gettempdir()
    )
    deep = tmp_path / "x" / "y"
    deep.mkdir(parents=True)
    root, why = checkout_root(str(deep))
    assert (root, why) == (str(deep), "script-dir")
