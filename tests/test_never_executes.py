"""packlint never executes, sources or evaluates the checked script's code (only `bash -n`, which parses
without running, confirms syntax errors). A script whose every line would write a marker file is put
through `inspect` and `check` (every output format); afterwards no marker may exist. The commands the
script names (torchrun, python, hostname, ...) are also shadowed on PATH by fakes that would write a
marker if anything ran them.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

FAKE_TOOLS = ["torchrun", "python", "python3", "deepspeed", "srun", "mpirun", "accelerate", "hostname",
              "nvidia-smi", "touch", "tee", "cat", "echo", "mkdir", "date", "ls", "seq", "env", "nohup", "sh"]


def _script(m: str) -> str:
    """Every line would create a file in the marker directory m if it ran."""
    return f"""#!/bin/bash
touch {m}/plain
A=$(touch {m}/cmdsub)
B=`touch {m}/backtick`
export C="$(touch {m}/export_cmdsub)"
source ./writer.sh
. ./writer2.sh {m}/sourced_with_args
eval "touch {m}/eval"
eval 'X=$(touch {m}/eval_cmdsub)'
cat <(touch {m}/procsub) > /dev/null
diff <(touch {m}/procsub2) >(touch {m}/procsub_out)
D=$(( $(touch {m}/arith; echo 1) + 1 ))
(( E = $(touch {m}/arith2; echo 2) ))
trap 'touch {m}/trap' EXIT
trap "touch {m}/trap_err" ERR
cat > {m}/heredoc <<EOF
$(touch {m}/heredoc_cmdsub)
EOF
echo hi > {m}/redirect
echo hi >> {m}/append
exec 3> {m}/fd_redirect
if [[ -f $(touch {m}/test_cmdsub) ]]; then touch {m}/then; else touch {m}/else; fi
for i in $(touch {m}/for_list) 1 2; do touch {m}/loop_$i; done
while touch {m}/while_cond; do touch {m}/while_body; break; done
case "$(touch {m}/case_subject)" in *) touch {m}/case_arm ;; esac
F="${{UNSET_VAR:-$(touch {m}/default)}}"
: "${{G:=$(touch {m}/assign_default)}}"
$(echo touch) {m}/cmdname
"$(printf touch)" {m}/cmdname2
bash -c 'touch {m}/bash_c'
sh -c "touch {m}/sh_c"
bash ./child.sh
python -c "open('{m}/python_c', 'w')"
coproc touch {m}/coproc
touch {m}/background &
touch {m}/pipeline | tee {m}/tee
OFFLINE_PACKING_BMR=$(touch {m}/prefix) torchrun --nproc_per_node 8 train.py --save {m}/ckpt
torchrun $(touch {m}/launcher_arg) train.py --micro-batch-size "$(touch {m}/flag_value)" 2>&1 | tee {m}/log
srun bash -c "torchrun train.py --x \\$(touch {m}/srun_inner)"
writer() {{
    touch {m}/function
}}
writer
exec touch {m}/exec
"""


def _fake_bin(tmp: Path, marks: Path) -> Path:
    bin_dir = tmp / "fakebin"
    bin_dir.mkdir()
    for tool in FAKE_TOOLS:
        exe = bin_dir / tool
        exe.write_text(f"#!/bin/sh\n: > '{marks}/EXECUTED_{tool}'\n")
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir


@pytest.fixture
def workspace(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    m = str(marks)
    (work / "train.sh").write_text(_script(m))
    (work / "writer.sh").write_text(f"touch {m}/sourced\nexport OFFLINE_PACKED_DATA=$(touch {m}/sourced_cmdsub)\n")
    (work / "writer2.sh").write_text('touch "$1"\n')
    (work / "child.sh").write_text(f"touch {m}/child_script\n")
    # a grammar gap tree-sitter cannot parse but bash accepts: `bash -n` is consulted
    (work / "gap.sh").write_text(f"touch {m}/gap\nN=1\nX=abc\nY=${{X:$N+1}}\ntorchrun train.py $(touch {m}/gap2)\n")
    # a real syntax error: `bash -n` rejects it, and bash would run none of it
    (work / "broken.sh").write_text(f"touch {m}/broken\nif then fi (\n")
    return work, marks, _fake_bin(tmp_path, marks)


def _run(args, cwd: Path, fake_bin: Path):
    env = dict(os.environ, NO_COLOR="1", PYTHONPATH=str(ROOT))
    env["PATH"] = f"{fake_bin}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run([sys.executable, "-m", "packlint", *args], cwd=cwd, capture_output=True,
                          timeout=600, env=env, stdin=subprocess.DEVNULL)
    assert b"Traceback" not in proc.stderr, proc.stderr.decode()[-2000:]
    return proc


def _assert_no_marker(marks: Path) -> None:
    left = sorted(p.name for p in marks.iterdir())
    assert left == [], f"packlint executed script code: {left}"


SCRIPTS = ["train.sh", "gap.sh", "broken.sh"]


def test_markers_exist_when_bash_really_runs_a_line(workspace, tmp_path):
    """Self-check of the test: the marker lines do write markers when executed."""
    work, marks, _ = workspace
    probe = tmp_path / "probe.sh"
    probe.write_text(f"touch {marks}/probe\nA=$(touch {marks}/probe_cmdsub)\n")
    subprocess.run(["bash", str(probe)], check=True, timeout=30)
    assert {p.name for p in marks.iterdir()} == {"probe", "probe_cmdsub"}
    for p in marks.iterdir():
        p.unlink()


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_inspect_never_executes(workspace, fmt):
    work, marks, fake_bin = workspace
    for script in SCRIPTS:
        proc = _run(["inspect", "--format", fmt, script, "--", "a", "b"], work, fake_bin)
        assert proc.returncode == 0, proc.stderr.decode()
    _assert_no_marker(marks)


def test_inspect_stdin_never_executes(workspace):
    work, marks, fake_bin = workspace
    env = dict(os.environ, PYTHONPATH=str(ROOT), PATH=f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.run([sys.executable, "-m", "packlint", "inspect", "-", "--stdin-filename", "train.sh"],
                          cwd=work, input=(work / "train.sh").read_bytes(), capture_output=True, timeout=600,
                          env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    _assert_no_marker(marks)


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "gcc"])
def test_check_never_executes(workspace, fmt):
    work, marks, fake_bin = workspace
    from packlint.cli.check import FORMATS

    if fmt not in FORMATS:
        pytest.skip(f"check has no --format {fmt}")
    proc = _run(["check", "--format", fmt, *SCRIPTS], work, fake_bin)
    assert proc.returncode in (0, 1), proc.stderr.decode()
    proc = _run(["check", "--format", fmt, "."], work, fake_bin)  # directory discovery too
    assert proc.returncode in (0, 1), proc.stderr.decode()
    _assert_no_marker(marks)


def test_in_process_api_never_executes(workspace, monkeypatch):
    """Through the library entry point, with --inherit-env style settings and positional arguments."""
    from packlint.api import inspect_script

    work, marks, fake_bin = workspace
    monkeypatch.chdir(work)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ.get('PATH', '')}")
    for script in SCRIPTS:
        inspect_script(work / script, inherit_env=True, args=["1", "2", "3", "4"])
    _assert_no_marker(marks)
