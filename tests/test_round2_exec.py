"""Issue 29, first half (the second reliability audit, shared/research/reliability-audit-2.md): packlint
never runs a program the checked tree chooses, reads only the checkout, and prints only what the user
wrote. Each test names the audit's reproduction it replays (R01, R02, ...); every one failed on 0.3.

Processes are run as a user would (`python -m packlint` in a child) wherever PATH, the environment or
a signal is part of the attack.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GIT = shutil.which("git")


def _run(args: list[str], cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    base = {**os.environ, "PYTHONPATH": str(ROOT), "PACKLINT_CACHE_DIR": str(cwd / ".plcache")}
    return subprocess.run(
        [sys.executable, "-m", "packlint", *args],
        cwd=cwd,
        env={**base, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _plant(path: Path, marker: Path) -> None:
    """An executable that leaves `marker` behind (with what it was asked) and fails."""
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\nexit 1\n')
    path.chmod(0o755)


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(
        [GIT, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false", *args],
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout


SIGNATURE = (
    "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE0000000000000000000000000000000000000000AAoJEAAAAAAAAAAA\n"
    " =AAAA\n -----END PGP SIGNATURE-----\n"
)


def _signed_head(repo: Path) -> None:
    """Rewrite HEAD as a commit with a (bogus) PGP signature: `git log --show-signature` runs gpg on it."""
    raw = _git(repo, "cat-file", "commit", "HEAD")
    head, _, message = raw.partition("\n\n")
    signed = head + "\n" + SIGNATURE.rstrip("\n") + "\n\n" + message
    sha = subprocess.run(
        [GIT, "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo,
        input=signed,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    _git(repo, "update-ref", "HEAD", sha)


@pytest.fixture
def hostile_repo(tmp_path):
    """A checkout whose history removed `OLD_SWITCH` in a signed commit, and whose .git/config names a
    program for every hook git has: signatures (gpg, ssh, x509), pagers, diff drivers, textconv,
    fsmonitor, hooks, ssh, askpass."""
    repo = tmp_path / "trainer"
    repo.mkdir()
    marker = tmp_path / "ran"
    evil = tmp_path / "evil"
    _plant(evil, marker)
    _git(repo, "init", "-q", ".")
    (repo / "train.py").write_text('import os\nFLAG = os.environ.get("OLD_SWITCH")\n')
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    (repo / "train.py").write_text('import os\nFLAG = os.environ.get("NEW_KNOB")\n')
    _git(repo, "commit", "-qam", "two")
    _signed_head(repo)
    hooks = repo / ".git" / "hooks"
    for name in ("post-checkout", "pre-commit", "post-index-change", "reference-transaction"):
        _plant(hooks / name, marker)
    for key, value in (
        ("log.showSignature", "true"),
        ("gpg.program", str(evil)),
        ("gpg.openpgp.program", str(evil)),
        ("gpg.ssh.program", str(evil)),
        ("gpg.x509.program", str(evil)),
        ("diff.evil.textconv", str(evil)),
        ("diff.evil.command", str(evil)),
        ("diff.external", str(evil)),
        ("core.pager", str(evil)),
        ("pager.log", str(evil)),
        ("core.fsmonitor", str(evil)),
        ("core.sshCommand", str(evil)),
        ("core.askPass", str(evil)),
        ("core.hooksPath", str(hooks)),
        ("log.mailmap", "true"),
    ):
        _git(repo, "config", key, value)
    (repo / ".gitattributes").write_text("*.py diff=evil\n")
    (repo / "run.sh").write_text("#!/bin/bash\nexport OLD_SWITCH=1\nexport NEVER_READ_X=1\ntorchrun train.py\n")
    return repo, marker, evil


@pytest.mark.skipif(GIT is None, reason="needs git")
def test_r01_git_history_runs_no_program_the_repository_configures(hostile_repo):
    """R01: `log.showSignature=true` + `gpg.program` ran that program under `packlint check` (PK203's
    history search). Now every program-starting key is overridden: PK203 still reads the history, and
    nothing ran."""
    repo, marker, evil = hostile_repo
    # the set-up is live: git itself, asked as a user would, does run the planted program
    subprocess.run([GIT, "log", "-1", "--format=%h"], cwd=repo, capture_output=True, env={**os.environ, "PAGER": ""})
    assert marker.exists(), "the fixture's .git/config should make plain `git log` run the planted program"
    marker.unlink()
    proc = _run(["check", "--format", "json", "run.sh"], repo)
    found = json.loads(proc.stdout)["findings"]
    assert [(f["code"], f["line"]) for f in found] == [("PK203", 2), ("PK205", 4)], proc.stderr
    assert "history last mentions it" in found[0]["message"]
    assert not marker.exists(), marker.read_text()


def test_r28_tools_come_from_absolute_path_entries_only(tmp_path):
    """R28: with `.` or an empty entry in PATH, a `grep` / `bash` / `git` planted in the checked
    directory ran (shutil.which follows relative entries). Now helper programs are looked up in the
    absolute PATH entries only: check (PK205's grep, `bash -n` on a CRLF script), --fix (bash -n of
    the fixed text) and run (exec bash) all use the real ones."""
    work = tmp_path / "w"
    work.mkdir()
    marker = tmp_path / "ran"
    for tool in ("grep", "bash", "git", "sh"):
        _plant(work / tool, marker)
    (work / "train.py").write_text('import os\nFLAG = os.environ.get("USED")\n')
    (work / "crlf.sh").write_bytes(b"#!/bin/bash\r\nexport NEVER_READ_Y=1\r\ntorchrun train.py\r\n")
    (work / "fixme.sh").write_text(
        "#!/bin/bash\nexport OFFLINE_PACKING_VQA=1\nexport NEVER_READ_Z=1\ntorchrun train.py\n"
    )
    (work / "hello.sh").write_text("#!/bin/bash\necho launched-by-real-bash\n")
    env = {"PATH": ".::" + os.environ.get("PATH", os.defpath)}
    for args in (["check", "crlf.sh", "fixme.sh"], ["check", "--fix", "--unsafe-fixes", "fixme.sh"]):
        proc = _run(args, work, env)
        assert proc.returncode in (0, 1), proc.stderr
    proc = _run(["run", "hello.sh"], work, env)
    assert proc.returncode == 0 and "launched-by-real-bash" in proc.stdout, proc.stderr
    assert not marker.exists(), marker.read_text()


def test_tools_env_and_git_overrides_are_complete():
    """The helper environment passes nothing of the caller's but PATH (absolute entries), the locale
    and TMPDIR; every git key the audit names is overridden."""
    from packlint import tools

    old = dict(os.environ)
    try:
        os.environ.update(PATH=".:/usr/bin::bin", BASH_ENV="/tmp/x", GIT_EXTERNAL_DIFF="/tmp/x", PAGER="/tmp/x")
        env = tools.tool_env()
        assert env["PATH"] == "/usr/bin" and "BASH_ENV" not in env and "GIT_EXTERNAL_DIFF" not in env
        genv = tools.git_env()
        assert genv["GIT_CONFIG_NOSYSTEM"] == "1" and genv["GIT_CONFIG_GLOBAL"] == os.devnull
        assert genv["PAGER"] == "cat" and "GIT_EXTERNAL_DIFF" not in genv
    finally:
        os.environ.clear()
        os.environ.update(old)
    keys = {o.split("=", 1)[0] for o in tools.GIT_OVERRIDES}
    assert {
        "log.showSignature",
        "gpg.program",
        "gpg.ssh.program",
        "gpg.x509.program",
        "core.fsmonitor",
        "core.hooksPath",
        "diff.external",
        "core.pager",
        "protocol.allow",
        "core.sshCommand",
    } <= keys


def test_every_subprocess_goes_through_tools():
    """No module of packlint starts a program by a bare name or through shutil.which: every call site
    resolves it with packlint.tools.find_program (absolute PATH entries) and passes an env."""
    offenders = []
    for path in (ROOT / "packlint").rglob("*.py"):
        text = path.read_text()
        if path.name == "tools.py":
            continue
        for needle in ("shutil.which(", "os.system(", "os.execvp(", "os.execlp("):
            if needle in text:
                offenders.append(f"{path.relative_to(ROOT)}: {needle}")
        for call in ("subprocess.run(", "Popen("):  # (the guard's child bash: find_program too)
            if call in text and "find_program" not in text:
                offenders.append(f"{path.relative_to(ROOT)}: {call} without find_program")
    assert offenders == []


# ------------------------------------------------------------------------- reads outside the checkout


def _launch_repo(tmp_path: Path, config_arg: str, name: str = "l.sh") -> Path:
    repo = tmp_path / "repo"
    repo.mkdir(exist_ok=True)
    (repo / ".git").mkdir(exist_ok=True)  # (a checkout root: the scope's boundary)
    (repo / name).write_text(f"#!/bin/bash\ntrl sft --config {config_arg}\n")
    return repo


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_r02_proc_self_environ_is_never_read_nor_printed(tmp_path):
    """R02: `trl sft --config /proc/self/environ`: PK602's code frame printed the whole environment.
    Now /proc is never read (--allow-outside or not): the file's values are unknown, nothing printed."""
    repo = _launch_repo(tmp_path, "/proc/self/environ")
    (repo / "link.yaml").symlink_to("/proc/self/environ")
    (repo / "l2.sh").write_text("#!/bin/bash\ntrl sft --config link.yaml\n")
    for extra in ([], ["--allow-outside"]):
        proc = _run(["check", *extra, "l.sh", "l2.sh"], repo, {"SECRET_TOKEN": "ghp_leak_me"})
        assert "ghp_leak_me" not in proc.stdout + proc.stderr
        assert proc.returncode == 0, proc.stdout
        proc = _run(["inspect", *extra, "l2.sh"], repo, {"SECRET_TOKEN": "ghp_leak_me"})
        assert "ghp_leak_me" not in proc.stdout and "never read" in proc.stdout


def test_r03_files_outside_the_checkout_are_named_not_read(tmp_path):
    """R03: `--config ~/.netrc`, a checked-in symlink out of the tree, a nested deepspeed_config_file, a
    YAML token file: read, printed in code frames, listed by `inspect`. Now they are named, not read:
    their values are unknown (no PK601/PK602), and `--allow-outside` reads them (inspect then shows only
    the keys a rule reads, never the whole file)."""
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / ".netrc").write_text("machine github.com login bob password hunter2-secret\n")
    (outside / "hosts.yml").write_text("github.com:\n  oauth_token: gho_token_secret\nper_device_train_batch_size: 4\n")
    (outside / "ds.json").write_text('{"train_micro_batch_size_per_gpu": 1, "secret": "ds_secret_value"}\n')
    repo = _launch_repo(tmp_path, str(outside / ".netrc"))
    (repo / "tok.sh").write_text(f"#!/bin/bash\ntrl sft --config {outside / 'hosts.yml'}\n")
    (repo / "hosts.yml").symlink_to(outside / "hosts.yml")
    (repo / "link.sh").write_text("#!/bin/bash\ntrl sft --config hosts.yml\n")
    (repo / "acc.yaml").write_text(f"deepspeed_config:\n  deepspeed_config_file: {outside / 'ds.json'}\n")
    (repo / "acc.sh").write_text("#!/bin/bash\naccelerate launch --config_file acc.yaml train.py\n")
    names = ["l.sh", "tok.sh", "link.sh", "acc.sh"]
    proc = _run(["check", *names], repo)
    secrets = ("hunter2-secret", "gho_token_secret", "ds_secret_value")
    assert proc.returncode == 0 and not any(s in proc.stdout + proc.stderr for s in secrets), proc.stdout
    assert proc.stdout.count("PK603") == 4, proc.stdout  # one info per launch, nested file included
    for name in names:
        out = _run(["inspect", "--format", "json", name], repo).stdout
        assert not any(s in out for s in secrets), out
        assert "outside the checkout" in out, out
    shown = _run(["inspect", "--allow-outside", "tok.sh"], repo).stdout
    assert "per_device_train_batch_size" in shown and "gho_token_secret" not in shown, shown
    proc = _run(["check", "--allow-outside", "l.sh"], repo)  # (read: PK602, but no code frame of it)
    assert "hunter2-secret" not in proc.stdout + proc.stderr


def test_r03_hydra_config_path_outside_is_not_read(tmp_path):
    """R03 (row 73): Hydra `--config-path / --config-name .../hosts` read any YAML of the machine."""
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "hosts.yaml").write_text("trainer:\n  token: hydra_secret_value\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "l.sh").write_text(
        f"#!/bin/bash\npython -m verl.trainer.main_ppo --config-path {outside} --config-name hosts\n"
    )
    out = _run(["inspect", "--format", "json", "l.sh"], repo).stdout
    assert "hydra_secret_value" not in out


def test_sourced_file_outside_the_checkout_is_not_read(tmp_path):
    """A `source`d file outside the checkout is named, not read (an info), unless --allow-outside."""
    outside = tmp_path / "etc"
    outside.mkdir()
    (outside / "env.sh").write_text("export OFFLINE_PACKING_BMR=1\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".git").mkdir()
    (repo / "l.sh").write_text(f"#!/bin/bash\nsource {outside / 'env.sh'}\ntorchrun pretrain_llava_onevision2.py\n")
    model = json.loads(_run(["inspect", "--format", "json", "l.sh"], repo).stdout)
    diags = [d for d in model["diagnostics"] if d["code"] == "source-unreadable"]
    assert diags and diags[0]["severity"] == "info" and "outside the checkout" in diags[0]["message"]
    assert "OFFLINE_PACKING_BMR" not in model["launches"][0]["env"]
    model = json.loads(_run(["inspect", "--allow-outside", "--format", "json", "l.sh"], repo).stdout)
    assert model["launches"][0]["env"]["OFFLINE_PACKING_BMR"]["value"] == "1"


# ------------------------------------------------------------------------- one reading path (safe_io)


def test_r14_r15_config_reads_never_block_on_a_fifo_and_are_bounded(tmp_path):
    """R14/R15: a config named by a launch was `stat`ed, then opened and read whole: a FIFO swapped in
    blocked forever, a link to /proc/self/pagemap read 660 MB. Now one O_NONBLOCK open, fstat on the
    descriptor, a bounded read: exercised directly on the read path (the swap is the descriptor's)."""
    from packlint.configs import read_config_file

    fifo = tmp_path / "sft.yaml"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    root, err = read_config_file(str(fifo), "yaml", "pyyaml", near=str(tmp_path))
    assert root is None and err.unread and "FIFO" in err.message
    big = tmp_path / "big.yaml"
    with open(big, "wb") as fh:
        fh.truncate(1 << 30)  # (sparse)
    root, err = read_config_file(str(big), "yaml", "pyyaml", near=str(tmp_path))
    assert root is None and "over 4 MiB" in err.message
    assert time.monotonic() - t0 < 5


def test_r11_a_huge_launched_python_file_is_named_not_read(tmp_path):
    """R11: a 1 GiB sparse train.py was read whole (1.06 GB) and PK201 silently lost. Now a Python file
    over 8 MiB is not read: its facts are unknown, and the code base lists it as skipped."""
    (tmp_path / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\np.parse_args()\n")
    with open(tmp_path / "train.py", "ab") as fh:
        fh.truncate(1 << 30)
    (tmp_path / "l.sh").write_text("#!/bin/bash\npython train.py --bogus 1\n")
    t0 = time.monotonic()
    proc = _run(["code-base", ".", "train.py"], tmp_path)
    assert time.monotonic() - t0 < 60
    assert "not read" in proc.stdout + proc.stderr and "too large" in proc.stdout + proc.stderr, proc.stdout
    proc = _run(["check", "l.sh"], tmp_path)  # (an info says the flags were not checked, and why)
    assert proc.returncode == 0 and "PK206" in proc.stdout and "too large" in proc.stdout, proc.stdout


def test_every_read_goes_through_safe_io():
    """No module of packlint opens a file with open() / read_text / read_bytes for reading: every read
    is safe_io's (O_NONBLOCK + fstat + a bound). Writes (reports, -o) and packlint's own sources are
    the exceptions listed here."""
    allowed = {
        "packlint/cli/check.py": 'open(args.output_file, "wb")',  # (a write)
        "packlint/codebase/reader.py": 'open(path, "rb")',  # (packlint's own sources: the reader digest)
    }
    offenders = []
    for path in (ROOT / "packlint").rglob("*.py"):
        rel = str(path.relative_to(ROOT))
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if any(k in code for k in (" open(", "(open(", ".read_text(", ".read_bytes(", "io.open(")):
                if rel in allowed and allowed[rel] in code:
                    continue
                if rel == "packlint/safe_io.py" or "def " in code:
                    continue
                offenders.append(f"{rel}:{n}: {line.strip()}")
    assert offenders == []


# ------------------------------------------------------------------------- run, --fix, output


def test_r23_run_launches_only_the_bytes_it_checked(tmp_path, monkeypatch, capsys):
    """R23: `run` compared the bytes, then bash opened the file again by name: a rename in between ran
    unchecked content. Now the comparison reads through one descriptor and the name must still lead to
    that same file (device, inode, size, mtime) as the last step before the exec."""
    from packlint import checking
    from packlint.cli import run as cmd_run
    from packlint.cli import main

    s = tmp_path / "s.sh"
    s.write_text("#!/bin/bash\necho ok\n")
    other = tmp_path / "other.sh"
    other.write_text("#!/bin/bash\necho ok\n")  # (the same bytes, another file)
    real = checking.check_paths

    def swap(*a, **k):
        out = real(*a, **k)
        os.replace(other, s)  # a rename: the bytes compare equal, the file is not the one checked
        return out

    monkeypatch.setattr(checking, "check_paths", swap)
    monkeypatch.setattr(cmd_run.os, "execv", lambda *a: pytest.fail("launched"))
    assert main(["run", str(s)]) == 2
    assert f"not launching {s}: it changed while it was checked" in capsys.readouterr().err


def test_r24_sigterm_during_fix_leaves_no_temp_file(tmp_path):
    """R24: SIGTERM while --fix wrote left `.NAME.XXXX.tmp` beside the script. Now the write removes
    its temp file first, then the process ends by the signal (status -SIGTERM), the script intact."""
    script = tmp_path / "f.sh"
    script.write_text("#!/bin/bash\nexport OFFLINE_PACKING_VQA=1\ntorchrun pretrain_llava_onevision2.py\n")
    original = script.read_bytes()
    code = (
        "import os, signal, sys\n"
        "from packlint import safe_io\n"
        "real = os.fsync\n"
        "def fsync(fd):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return real(fd)\n"
        "os.fsync = fsync\n"
        f"safe_io.atomic_write({str(script)!r}, b'new', what='script')\n"
        "print('not reached')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == -signal.SIGTERM, proc.stderr
    assert "not reached" not in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.sh"]
    assert script.read_bytes() == original


def test_r27_github_and_json_output_escape_control_characters(tmp_path):
    """R27: `--format github` printed ESC, DEL and C1 (U+009B, a CSI) of a file name raw. Now every
    control character but CR/LF (GitHub's own %0D/%0A) is `\\x1b` text; JSON formats write DEL/C1 as
    `\\u` escapes (the same string to a parser)."""
    name = "x\x1b[2J\x7f\u009b\u202e.sh"
    (tmp_path / name).write_text("#!/bin/bash\nexport OFFLINE_PACKING_BMR=1\ntorchrun pretrain_llava_onevision2.py\n")
    raw = set("\x1b\x7f\u009b\u202e")
    for fmt in ("github", "json", "sarif", "gitlab", "text", "gcc"):
        proc = _run(["check", "--format", fmt, name], tmp_path)
        assert proc.returncode == 1, (fmt, proc.stderr)
        assert not raw & set(proc.stdout), (fmt, proc.stdout)
        if fmt in ("json", "sarif", "gitlab"):
            json.loads(proc.stdout)
    doc = json.loads(_run(["check", "--format", "json", name], tmp_path).stdout)
    assert doc["findings"][0]["path"] == name


# ------------------------------------------------------------------------- editor server


def _lsp(tmp_path):
    pytest.importorskip("pygls")
    sys.path.insert(0, str(ROOT / "tests"))
    from test_security import RawLsp

    s = RawLsp(tmp_path)
    s.raw(
        s.frame(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}},
            }
        )
    )
    assert "result" in s.answer(0)
    s.raw(s.frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
    return s


def test_r25_r31_server_sends_no_traceback_and_refuses_huge_frames(tmp_path):
    """R25: hover on `file:///%00` answered -32603 with the server's traceback in `data`. R31: a 57 MiB
    frame was parsed three times (3 GB). Now: a one-line answer (null or an error without data), and a
    frame over 20 MiB is refused unread; the server answers afterwards."""
    s = _lsp(tmp_path)
    try:
        s.raw(
            s.frame(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "textDocument/hover",
                    "params": {"textDocument": {"uri": "file:///%00"}, "position": {"line": 0, "character": 0}},
                }
            )
        )
        answer = s.answer(1)
        assert "Traceback" not in json.dumps(answer)
        assert answer.get("result") is None and "data" not in (answer.get("error") or {}), answer
        s.raw(b"Content-Length: %d\r\n\r\n" % (21 * 1024 * 1024))
        s.raw(b"[" + b"{}," * (7 * 1024 * 1024) + b"{}]")
        s.raw(s.frame({"jsonrpc": "2.0", "id": 2, "method": "packlint/noSuchMethod", "params": {}}))
        assert s.answer(2)["error"]["code"] == -32601
        assert s.proc.poll() is None
    finally:
        s.close()


# ------------------------------------------------------------------------- caches


def test_check_and_stat_modes_of_cache_dirs(tmp_path):
    """R29: every directory packlint makes in its cache is 0700 (os.makedirs' mode reached the leaf only);
    the facts live under the same directory as the other caches (XDG_CACHE_HOME honoured)."""
    (tmp_path / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\np.parse_args()\n")
    (tmp_path / "l.sh").write_text("python train.py --bogus 1\n")
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg"), "PACKLINT_CACHE_DIR": ""}
    proc = _run(["check", "l.sh"], tmp_path, env)
    assert proc.returncode == 1 and "PK201" in proc.stdout
    base = tmp_path / "xdg" / "packlint"
    dirs = [p for p in [base, *base.rglob("*")] if p.is_dir()]
    assert any(p.name == "programs" for p in dirs)
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in dirs), [oct(p.stat().st_mode) for p in dirs]


def _warm(tmp_path: Path) -> tuple[Path, Path, str]:
    """A checkout whose check reads every cache (PK201 from train.py's parser), run once: (repo, cache,
    the expected output)."""
    repo = tmp_path / "r"
    repo.mkdir()
    (repo / "train.py").write_text(
        "import argparse\np = argparse.ArgumentParser()\np.add_argument('--lr')\np.parse_args()\n"
    )
    (repo / "l.sh").write_text("python train.py --bogus 1\n")
    cache = tmp_path / "cache"
    proc = _run(["check", "-q", "l.sh"], repo, {"PACKLINT_CACHE_DIR": str(cache)})
    assert proc.returncode == 1 and "PK201" in proc.stdout, proc.stderr
    return repo, cache, proc.stdout


def _deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.parametrize(
    "poison",
    [
        '{"program": []}',
        '{"program": [{"stack": 5}]}',
        "deep",
        '{"program": [{"stack": "x", "program": "^(x+x+)+y$", "evil": 1}]}',
    ],
)
def test_r18_stacks_cache_entries_are_validated(tmp_path, poison):
    """R18: the stacks cache accepted any JSON whose `program` was a list: `{"program": []}` gave
    `internal error: KeyError` on every script, a 200,000-deep entry "nested too deeply". Now an entry of
    another shape is a miss: the same findings, and a valid entry written in its place."""
    repo, cache, expected = _warm(tmp_path)
    [entry] = list(cache.glob("stacks-*.json"))
    good = entry.read_bytes()
    entry.write_text(_deep(200_000) if poison == "deep" else poison)
    proc = _run(["check", "-q", "l.sh"], repo, {"PACKLINT_CACHE_DIR": str(cache)}, timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, expected, "")
    assert entry.read_bytes() == good


def _rule_entry(cache: Path) -> tuple[Path, dict]:
    [entry] = list(cache.glob("rules-*.json"))
    return entry, json.loads(entry.read_bytes())


def test_r16_a_planted_rule_table_dag_is_refused_at_load(tmp_path):
    """R16: a rule-table entry whose condition is a DAG of shared objects (`Or(x, x)` nested 60 deep:
    2^60 evaluations) hung every check. Now a table expanding to over a million nodes, or holding a
    cycle, is a miss: the check ends at once with the usual findings."""
    repo, cache, expected = _warm(tmp_path)
    entry, doc = _rule_entry(cache)
    names = [c[1] for c in doc["classes"]]
    or_i = names.index("Or") if "Or" in names else None
    if or_i is None:
        doc["classes"].append(["packlint.conditions.tree", "Or", ["type", "left", "right"]])
        or_i = len(doc["classes"]) - 1
    base = len(doc["shared"])
    leaf = ["o", names.index("Const"), "bool", True] if "Const" in names else True
    for i in range(60):  # shared[base + i] = Or(shared[base + i + 1], shared[base + i + 1])
        nxt = ["r", base + i + 1] if i < 59 else leaf
        doc["shared"].append(["o", or_i, "bool", nxt, nxt])
    rule = next(x for x in doc["root"][2:] if isinstance(x, list))  # the rules list
    first = rule[1] if rule[0] == "l" else rule
    when = doc["classes"][first[1]][2].index("when")
    first[2 + when] = ["r", base]
    entry.write_text(json.dumps(doc))
    t0 = time.monotonic()
    proc = _run(["check", "-q", "l.sh"], repo, {"PACKLINT_CACHE_DIR": str(cache)}, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, expected), proc.stderr
    assert time.monotonic() - t0 < 30
    from packlint import rule_cache

    with pytest.raises(rule_cache.CacheFormatError, match="too many nodes|holds itself"):
        rule_cache.loads(json.dumps(doc).encode())
    doc["shared"][base + 59] = ["o", or_i, "bool", ["r", base], ["r", base]]  # a cycle
    with pytest.raises(rule_cache.CacheFormatError, match="too many nodes|holds itself"):
        rule_cache.loads(json.dumps(doc).encode())


@pytest.mark.parametrize(
    "field, value",
    [
        ("severity", 5),
        ("severity", "fatal"),
        ("when", None),
        ("when", 1),
        ("versions", 9),
        ("scope", "bogus"),
        ("exclusive", "yes"),
    ],
)
def test_r17_rule_table_fields_of_the_wrong_type_are_a_miss(tmp_path, field, value):
    """R17: entries with the right classes but fields of the wrong type (`severity: 5`, `when: null`)
    gave internal errors on every run, and were never rewritten. Now every field is checked against its
    declared type (and severity/scope/undecided against their values): a miss, the usual findings."""
    repo, cache, expected = _warm(tmp_path)
    entry, doc = _rule_entry(cache)
    rule_i = [c[1] for c in doc["classes"]].index("Rule")
    fields = doc["classes"][rule_i][2]

    def rules(v):
        if isinstance(v, list):
            if v[:2] == ["o", rule_i]:
                yield v
            for x in v:
                yield from rules(x)

    for node in rules(doc["root"]):
        node[2 + fields.index(field)] = value
    entry.write_text(json.dumps(doc))
    proc = _run(["check", "-q", "l.sh"], repo, {"PACKLINT_CACHE_DIR": str(cache)})
    assert (proc.returncode, proc.stdout, proc.stderr) == (1, expected, "")
    assert json.loads(entry.read_bytes()) != doc  # (replaced by a valid entry)


def test_r19_no_cache_env_reads_and_writes_no_cache_at_all(tmp_path):
    """R19: PACKLINT_NO_CACHE=1 still read and wrote the code-base facts cache. Now it is --no-cache for
    every cache: nothing is created, and the findings are the same."""
    repo, cache, expected = _warm(tmp_path)
    fresh = tmp_path / "fresh"
    for env, args in (({"PACKLINT_NO_CACHE": "1"}, []), ({}, ["--no-cache"])):
        proc = _run(["check", "-q", *args, "l.sh"], repo, {"PACKLINT_CACHE_DIR": str(fresh), **env})
        assert (proc.returncode, proc.stdout) == (1, expected)
        assert not fresh.exists()


def test_r20_oversized_cache_entries_are_not_read(tmp_path):
    """R20: cache entries up to 64 MiB were read (`[{}, ...]` costs ~25x that in memory: three planted
    facts entries took 2.9 GB). Now each kind has its own limit (a few MiB): an entry over it is a miss."""
    from packlint import caches

    repo, cache, expected = _warm(tmp_path)
    entries = [p for p in cache.rglob("*.json")]
    for p in entries:
        kind = (
            "rules"
            if p.name.startswith("rules-")
            else "stacks"
            if p.name.startswith("stacks-")
            else next(k for k in (p.parent.name, p.parent.parent.name) if k in caches.LIMITS)  # (codebase/vN/files/x)
        )
        n = caches.LIMITS[kind] // 3 + 2
        p.write_text("[" + "{}," * n + "{}]")
    code = "import resource, runpy, sys; resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30)); sys.argv = ['packlint', 'check', '-q', 'l.sh']; runpy.run_module('packlint', run_name='__main__')"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PACKLINT_CACHE_DIR": str(cache)},
    )
    assert (proc.returncode, proc.stdout) == (1, expected), proc.stderr


def test_no_cache_keeps_memoisation_within_a_run(tmp_path, monkeypatch):
    """Issue 31: --no-cache re-read a program for every script that launches it (a repository's check
    10-20x slower). Now a run reads each program once, cache or not."""
    from packlint.cli import main
    from packlint.codebase import reader

    (tmp_path / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\np.parse_args()\n")
    for i in range(6):
        (tmp_path / f"s{i}.sh").write_text(f"python train.py --bogus{i} 1\n")
    calls = []
    real = reader.build_facts
    monkeypatch.setattr(reader, "build_facts", lambda *a, **k: calls.append(1) or real(*a, **k))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PACKLINT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PACKLINT_JOBS", "1")
    assert main(["check", "-q", "--no-cache", *[f"s{i}.sh" for i in range(6)]]) == 1
    assert calls == [1]


def test_clean_removes_the_caches_and_says_what(tmp_path):
    """`packlint clean` removes every entry of the three caches, says what it removed, and leaves
    other files alone; the directory is bounded on write (oldest entries evicted)."""
    from packlint import caches

    repo, cache, _ = _warm(tmp_path)
    (cache / "mine.txt").write_text("not packlint's")
    proc = _run(["clean", "--dry-run"], repo, {"PACKLINT_CACHE_DIR": str(cache)})
    assert "nothing removed" in proc.stdout and list(cache.glob("rules-*.json"))
    proc = _run(["clean"], repo, {"PACKLINT_CACHE_DIR": str(cache)})
    assert proc.returncode == 0 and "removed" in proc.stdout and "rule table" in proc.stdout, proc.stdout
    assert sorted(p.name for p in cache.rglob("*") if p.is_file()) == ["mine.txt"]
    for i in range(10):
        p = cache / f"rules-{i:032x}.json"
        p.write_bytes(b"x" * 100_000)
        os.utime(p, (1000 + i, 1000 + i))
    removed = caches.evict(cache, 500_000)
    assert sorted(os.path.basename(r) for r in removed) == [f"rules-{i:032x}.json" for i in range(6)]
    assert (cache / "mine.txt").exists()
