"""`packlint run [OPTIONS] SCRIPT [ARGS...]`, the launch gate, run as a user runs it: real stub scripts,
a fake `torchrun` on PATH, the real environment, args with spaces and quotes, exec (same pid), exit
status, stdin and SIGTERM passing through, --dry-run, --force, --probe."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from packlint.cli import main

PACKLINT = [sys.executable, "-m", "packlint"]
BMR_ONLY = "#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun train.py --micro-batch-size 1 \"$@\"\n"
CLEAN = ("#!/bin/bash\nexport OFFLINE_PACKING_BMR=1 OFFLINE_PACKED_DATA=1\n"
         "torchrun --nproc_per_node 2 pretrain.py --micro-batch-size \"${1:-1}\" --seq-length 64\n")


@pytest.fixture
def sandbox(tmp_path, tmp_path_factory):
    """A directory with a fake torchrun on PATH and an environment without packing variables."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "torchrun"
    fake.write_text('#!/bin/bash\necho "torchrun ran: $*"\n'
                    'echo "env: BMR=${OFFLINE_PACKING_BMR-unset} PACKED=${OFFLINE_PACKED_DATA-unset} TEAM=${TEAM-unset}"\n')
    fake.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLINE_", "PACKLINT_DEBUG", "NO_COLOR"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    env["PACKLINT_CACHE_DIR"] = str(tmp_path_factory.getbasetemp() / "rule-cache")
    return tmp_path, env


def script(directory: Path, name: str, text: str) -> str:
    p = directory / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def gate(env, *argv, cwd=None, input=None, timeout=600):  # a hang guard, not a speed limit
    return subprocess.run([*PACKLINT, "run", *argv], env=env, cwd=cwd, input=input, capture_output=True,
                          text=True, timeout=timeout)


def test_args_pass_through_exactly_and_it_is_an_exec(sandbox):
    d, env = sandbox
    stub = script(d, "stub.sh", """\
        #!/bin/bash
        echo "pid=$$"
        printf '<%s>\\n' "$@"
        """)
    args = ["a b", "it's", '"double"', "", "*", "$HOME", "--", "--dry-run", "-x", "tab\there"]
    proc = subprocess.Popen([*PACKLINT, "run", stub, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    lines = out.splitlines()
    assert lines[0] == f"pid={proc.pid}"            # exec: the script runs in packlint's own process
    assert lines[1:] == [f"<{a}>" for a in args]    # no re-quoting, no globbing, `--` and options kept
    assert err == ""                                # a clean check prints nothing


def test_real_environment_decides_and_blocks(sandbox):
    d, env = sandbox
    s = script(d, "train.sh", BMR_ONLY)
    blocked = gate(env, s)
    assert blocked.returncode == 1
    assert blocked.stdout == ""                     # not launched: the fake torchrun never ran
    assert "PK001" in blocked.stderr and "not launching" in blocked.stderr
    ok = gate({**env, "OFFLINE_PACKED_DATA": "1", "TEAM": "vision"}, s, "--lr", "3e-4")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.splitlines() == ["torchrun ran: train.py --micro-batch-size 1 --lr 3e-4",
                                      "env: BMR=1 PACKED=1 TEAM=vision"]


def test_positional_args_are_checked(sandbox):
    d, env = sandbox
    s = script(d, "train.sh", CLEAN)
    assert gate(env, s).returncode == 0
    bad = gate(env, s, "4")                         # $1 is the micro-batch size: 4 with packing
    assert bad.returncode == 1 and "PK003" in bad.stderr and "micro-batch size is 4" in bad.stderr
    assert bad.stdout == ""


def test_dry_run_and_force(sandbox):
    d, env = sandbox
    s = script(d, "train.sh", BMR_ONLY)
    dry = gate(env, "--dry-run", s)
    assert dry.returncode == 1 and dry.stdout == "" and "PK001" in dry.stderr
    clean = script(d, "clean.sh", CLEAN)
    dry_clean = gate(env, "--dry-run", clean)
    assert (dry_clean.returncode, dry_clean.stdout) == (0, "")
    forced = gate(env, "--force", s)
    assert forced.returncode == 0 and forced.stdout.startswith("torchrun ran: ")
    assert "--force: launching" in forced.stderr and "despite 1 finding" in forced.stderr
    # options after SCRIPT belong to the script
    after = gate(env, clean, "--dry-run")
    assert after.returncode == 0 and "--micro-batch-size --dry-run --seq-length 64" in after.stdout


def test_fail_on_and_warnings_do_not_block(sandbox):
    d, env = sandbox
    s = script(d, "vqa.sh", "#!/bin/bash\nexport OFFLINE_PACKING_VQA=1\ntorchrun train.py\n")
    warned = gate(env, s)
    assert warned.returncode == 0 and "PK004" in warned.stderr and warned.stdout.startswith("torchrun ran:")
    assert gate(env, "--fail-on", "warning", s).returncode == 1
    assert gate(env, "--ignore", "PK004", "--fail-on", "warning", s).returncode == 0


def test_exit_status_and_stdin_pass_through(sandbox):
    d, env = sandbox
    s = script(d, "stub.sh", '#!/bin/bash\nread -r line\necho "got:$line"\nexit 7\n')
    proc = gate(env, s, input="hello from stdin\n")
    assert proc.returncode == 7 and proc.stdout == "got:hello from stdin\n"


def test_sigterm_reaches_the_script(sandbox):
    d, env = sandbox
    trapped = script(d, "trap.sh", """\
        #!/bin/bash
        trap 'echo "got TERM"; kill "$child"; exit 42' TERM
        sleep 30 >/dev/null 2>&1 &
        child=$!
        echo ready
        wait
        """)
    proc = subprocess.Popen([*PACKLINT, "run", trapped], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert out == "got TERM\n" and proc.returncode == 42
    # untrapped: the script dies of the signal, and the caller sees exactly that
    plain = script(d, "plain.sh", "#!/bin/bash\necho ready\nexec sleep 30\n")
    proc = subprocess.Popen([*PACKLINT, "run", plain], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGTERM


def test_config_applies_but_not_its_assumed_env(sandbox):
    d, env = sandbox
    (d / "packlint.toml").write_text("env = { OFFLINE_PACKED_DATA = '1' }\nignore = ['PK004']\n")
    s = script(d, "train.sh", BMR_ONLY.replace("torchrun", "export OFFLINE_PACKING_VQA=1\ntorchrun"))
    proc = gate(env, s, cwd=d)
    assert proc.returncode == 1 and "PK001" in proc.stderr and "PK004" not in proc.stderr
    proc = gate({**env, "OFFLINE_PACKED_DATA": "1"}, s, cwd=d)
    assert proc.returncode == 0 and proc.stdout.startswith("torchrun ran:")
    (d / "packlint.toml").write_text("selct = 1\n")
    bad = gate(env, s, cwd=d)
    assert bad.returncode == 2 and "selct: unknown key" in bad.stderr and bad.stdout == ""


def test_unreadable_or_missing_script_is_not_launched(sandbox):
    d, env = sandbox
    proc = gate(env, str(d / "missing.sh"))
    assert proc.returncode == 2 and "missing.sh" in proc.stderr and "not launching" in proc.stderr
    assert gate(env, "-").returncode == 2
    assert gate(env).returncode == 2                # no SCRIPT: usage error


def test_json_format_goes_to_stderr(sandbox):
    d, env = sandbox
    s = script(d, "train.sh", BMR_ONLY)
    proc = gate(env, "--format", "json", "--dry-run", s)
    assert proc.returncode == 1 and proc.stdout == ""
    doc = json.loads(proc.stderr[: proc.stderr.rindex("}") + 1])
    assert [f["code"] for f in doc["findings"]] == ["PK001"]


def test_cli_splits_only_before_script(monkeypatch):
    from packlint.cli.run import split_argv

    assert split_argv(["--dry-run", "--fail-on", "warning", "t.sh", "--force", "--", "x"]) == (
        ["--dry-run", "--fail-on", "warning"], ["t.sh", "--force", "--", "x"])
    assert split_argv(["--fail-on=info", "--", "-weird.sh", "a"]) == (["--fail-on=info"], ["-weird.sh", "a"])
    assert split_argv(["--select", "PK001", "--known-env", "SLURM_NNODES", "t.sh"]) == (
        ["--select", "PK001", "--known-env", "SLURM_NNODES"], ["t.sh"])
    seen = {}
    monkeypatch.setattr("packlint.cli.run.run", lambda args: seen.update(vars(args)) or 0)
    assert main(["run", "--dry-run", "t.sh", "a", "--", "--dry-run"]) == 0
    assert seen["script"] == "t.sh" and seen["script_args"] == ["a", "--", "--dry-run"] and seen["dry_run"]


def test_probe_missing_is_one_clear_line(tmp_path, capsys, monkeypatch):
    s = script(tmp_path, "clean.sh", CLEAN)
    monkeypatch.setitem(sys.modules, "runtime_probe.launches", None)     # as if torch/the probe were absent
    launched = []
    monkeypatch.setattr("packlint.cli.run.launch", lambda *a: launched.append(a) or 0)
    capsys.readouterr()
    code = main(["run", "--probe", s])
    err = capsys.readouterr().err
    assert code == 2 and launched == []
    assert "the probe needs torch: pip install 'packlint[probe] @ git+https://github.com/packlint/packlint'" in err and err.count("\n") == 1


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch (packlint[probe])")
def test_probe_runs_before_the_launch(sandbox):
    d, env = sandbox
    s = script(d, "clean.sh", CLEAN)
    proc = gate(env, "--probe", s)
    assert proc.returncode == 0, proc.stderr
    assert "PROVEN" in proc.stderr and proc.stdout.startswith("torchrun ran: ")


def test_probe_with_nothing_to_probe_does_not_block(sandbox):
    d, env = sandbox
    s = script(d, "prep.sh", "#!/bin/bash\necho preparing\n")
    proc = gate(env, "--probe", s)
    assert proc.returncode == 0 and proc.stdout == "preparing\n"
    assert "no training launch to probe" in proc.stderr


@pytest.mark.parametrize("verdict", [1, 3, 4])
def test_a_probe_verdict_that_blocks_the_launch_exits_1_not_the_guards_3(tmp_path, capsys, monkeypatch, verdict):
    """LEAK (1), DIFFERS (3) and UNDECIDED (4) block `packlint run --probe` with 1, as a finding does: 3 under
    `packlint run` is the guard's stop only."""
    s = script(tmp_path, "clean.sh", CLEAN)
    launched = []
    monkeypatch.setattr("packlint.cli.run._probe", lambda result, script: verdict)
    monkeypatch.setattr("packlint.cli.run.launch", lambda *a: launched.append(a) or 0)
    capsys.readouterr()
    assert main(["run", "--probe", s]) == 1 and launched == []
    assert "not launching" in capsys.readouterr().err
