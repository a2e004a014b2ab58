"""Hostile input and shared state (issue 19, docs/security.md): bounded reads, atomic writes, caches that
hold data and never code, `--fix` that never cuts a script, `run` that runs what it checked, escaped
output, an editor server that never wedges. Each test is named after the reproduction of
the reliability audit it replays (C13, F1, R11, ...).

Nothing here asserts a duration: what must not hang runs in a subprocess under a hang guard, and what
must stay small runs under RLIMIT_AS set inside the child.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from packlint import safe_io
from packlint.errors import PacklintError

ROOT = Path(__file__).resolve().parent.parent
HANG_GUARD_S = 120


# ------------------------------------------------------------------------------------------- safe_io


def test_read_bounded_reads_a_regular_file(tmp_path):
    p = tmp_path / "r.toml"
    p.write_bytes(b"x = 1\n")
    assert safe_io.read_bounded(p, 100, "rule file") == b"x = 1\n"


def test_read_bounded_refuses_a_file_over_the_limit_from_its_size(tmp_path):
    p = tmp_path / "big"
    p.write_bytes(b"a" * 101)
    with pytest.raises(PacklintError, match=r"file too large \(101 bytes > 100 bytes limit\)") as exc:
        safe_io.read_bounded(p, 100, "rule file")
    assert exc.value.path == str(p)
    assert "\n" not in exc.value.one_line()


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null"])
def test_read_bounded_refuses_devices(special):
    if not os.path.exists(special):
        pytest.skip("no such device")
    with pytest.raises(PacklintError, match="a device"):
        safe_io.read_bounded(special, 100, "config file")


def test_read_bounded_refuses_a_directory(tmp_path):
    with pytest.raises(PacklintError, match="is a directory"):
        safe_io.read_bounded(tmp_path, 100, "baseline")


def test_read_bounded_never_blocks_on_a_fifo(tmp_path):
    """A FIFO without a writer would block a plain open() forever: O_NONBLOCK + fstat refuse it."""
    fifo = tmp_path / "f.fifo"
    os.mkfifo(fifo)
    code = (
        "import sys\nfrom packlint import safe_io\nfrom packlint.errors import PacklintError\n"
        "try:\n    safe_io.read_bounded(sys.argv[1], 100, 'rule file')\n"
        "except PacklintError as e:\n    print(e.one_line())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(fifo)], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.strip() == f"{fifo}: cannot read rule file: not a regular file (a FIFO): refused"


def test_read_cache_file_refuses_symlinks_fifos_and_big_files(tmp_path):
    real = tmp_path / "real.json"
    real.write_bytes(b"{}")
    assert safe_io.read_cache_file(real) == b"{}"
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert safe_io.read_cache_file(link) is None  # O_NOFOLLOW
    fifo = tmp_path / "f.json"
    os.mkfifo(fifo)
    assert safe_io.read_cache_file(fifo) is None
    assert safe_io.read_cache_file(real, limit=1) is None
    assert safe_io.read_cache_file(tmp_path / "missing") is None


def test_read_stdin_bounded_stops_after_the_limit():
    class Endless(io.RawIOBase):
        reads = 0

        def readable(self):
            return True

        def read(self, n=-1):
            Endless.reads += 1
            return b"\0" * (n if n > 0 else 1 << 20)

    with pytest.raises(PacklintError, match="more than 1 MiB on stdin"):
        safe_io.read_stdin_bounded(1 << 20, Endless())  # type: ignore[arg-type]
    assert Endless.reads <= 2  # limit + 1 bytes, not the whole stream
    assert safe_io.read_stdin_bounded(10, io.BytesIO(b"echo hi\n")) == b"echo hi\n"


def test_atomic_write_replaces_and_keeps_the_mode(tmp_path):
    p = tmp_path / "s.sh"
    p.write_bytes(b"old\n")
    os.chmod(p, 0o751)
    safe_io.atomic_write(p, b"new\n")
    assert p.read_bytes() == b"new\n"
    assert stat.S_IMODE(p.stat().st_mode) == 0o751
    assert [x.name for x in tmp_path.iterdir()] == ["s.sh"]  # no temp file left


def test_atomic_write_new_file_gets_umask_mode(tmp_path):
    p = tmp_path / "new.json"
    old = os.umask(0o022)
    try:
        safe_io.atomic_write(p, b"{}")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


def test_atomic_write_refuses_a_symlink_and_a_device(tmp_path):
    real = tmp_path / "real.json"
    real.write_bytes(b"{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(PacklintError, match="symbolic link"):
        safe_io.atomic_write(link, b"[]", what="baseline")
    assert link.is_symlink() and real.read_bytes() == b"{}"
    with pytest.raises(PacklintError, match="a device"):
        safe_io.atomic_write("/dev/null", b"x", what="baseline")


def test_atomic_write_follow_writes_the_regular_target(tmp_path):
    real = tmp_path / "real.sh"
    real.write_bytes(b"a\n")
    link = tmp_path / "link.sh"
    link.symlink_to(real)
    safe_io.atomic_write(link, b"b\n", follow=True)
    assert link.is_symlink() and real.read_bytes() == b"b\n"


def test_atomic_write_keeps_the_original_when_the_write_fails(tmp_path):
    """F1: a write that fails midway (RLIMIT_FSIZE) leaves the original intact, and no temp file."""
    p = tmp_path / "f.sh"
    p.write_bytes(b"# original\n" * 400)
    code = (
        "import resource, signal, sys\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))\n"
        "from packlint import safe_io\nfrom packlint.errors import PacklintError\n"
        "try:\n    safe_io.atomic_write(sys.argv[1], b'x' * 5000, what='script')\n"
        "except PacklintError as e:\n    print(e.one_line())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.stdout.strip() == f"{p}: cannot write script: File too large"
    assert p.read_bytes() == b"# original\n" * 400
    assert [x.name for x in tmp_path.iterdir()] == ["f.sh"]


def test_atomic_write_expect_refuses_a_changed_file(tmp_path):
    p = tmp_path / "s.sh"
    p.write_bytes(b"checked\n")
    p.write_bytes(b"checked\nedited meanwhile\n")
    with pytest.raises(PacklintError, match="changed since it was checked"):
        safe_io.atomic_write(p, b"fixed\n", expect=b"checked\n", what="script")
    assert p.read_bytes() == b"checked\nedited meanwhile\n"
    assert [x.name for x in tmp_path.iterdir()] == ["s.sh"]
