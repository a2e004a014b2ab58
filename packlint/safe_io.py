"""Bounded reads and atomic writes: the only way packlint reads a file named on its command line, reads
stdin, or writes a file (fixes, baselines, caches). docs/security.md says what each one guarantees.

- `read_bounded(path, limit, what)`: opens with O_NONBLOCK (a FIFO never blocks the open) and, for
  caches, O_NOFOLLOW; checks on the open descriptor that it is a regular file (a FIFO, device, socket or
  directory is refused before a byte is read) and no larger than `limit`; then reads at most `limit`
  bytes. Every failure is a one-line PacklintError naming the file and `what` it was.
- `read_cache_file(path, limit)`: the same for a cache entry, which must also be owned by the user;
  returns None instead of raising (a cache that cannot be trusted is a cache miss).
- `read_stdin_bounded(limit)`: reads at most `limit` + 1 bytes, so `check - < /dev/zero` ends.
- `atomic_write(path, data)`: a temp file made as `tempfile.mkstemp` makes one in the same directory (O_EXCL, a
  random name: nothing planted there is followed), written, fsync'ed and renamed over `path`; the
  original file's mode is kept. A symlink or a special file at `path` is refused (never replaced).
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from typing import BinaryIO

from packlint.errors import PacklintError

MiB = 1024 * 1024
CONFIG_LIMIT = 4 * MiB  # a rule file, a .packlint.toml / pyproject.toml, a baseline
BASELINE_LIMIT = 64 * MiB
CACHE_LIMIT = 64 * MiB

_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_BINARY = getattr(os, "O_BINARY", 0)


def _mib(n: int) -> str:
    return f"{n / MiB:.0f} MiB" if n >= MiB else f"{n} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a directory"
    if stat.S_ISFIFO(mode):
        return "not a regular file (a FIFO): refused"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "not a regular file (a device): refused"
    if stat.S_ISSOCK(mode):
        return "not a regular file (a socket): refused"
    return "not a regular file: refused"


def _read_fd(fd: int, limit: int) -> bytes:
    """At most limit + 1 bytes (the caller compares with limit: a file that grew past it is refused)."""
    chunks: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, MiB))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def open_regular(
    path: str | os.PathLike[str], limit: int, what: str, *, display: str | None = None, nofollow: bool = False
) -> tuple[int, os.stat_result]:
    """(fd, fstat) of the regular file `path`, opened with O_NONBLOCK (a FIFO never blocks the open) and,
    with nofollow, O_NOFOLLOW; the type and size are checked on the descriptor, so a file swapped in after
    any earlier check is still refused. Else a one-line PacklintError: `<path>: cannot read <what>: ...`.
    The caller closes the fd."""
    shown = display or os.fspath(path)
    prefix = f"cannot read {what}: " if what else ""
    flags = os.O_RDONLY | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY | (_O_NOFOLLOW if nofollow else 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise PacklintError(f"{what} not found" if what else "no such file", path=shown) from None
    except PermissionError:
        raise PacklintError(f"{prefix}permission denied", path=shown) from None
    except IsADirectoryError:
        raise PacklintError(f"{prefix}is a directory", path=shown) from None
    except OSError as exc:
        if nofollow and exc.errno == errno.ELOOP:
            raise PacklintError(f"{prefix}a symbolic link: not followed", path=shown) from None
        raise PacklintError(f"{prefix}{exc.strerror or exc}", path=shown) from None
    except ValueError:  # a NUL in the name (an editor's `file:///%00`, R25)
        raise PacklintError(f"{prefix}a NUL character in the file name", path=shown) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise PacklintError(f"{prefix}{_kind(st.st_mode)}", path=shown)
        if st.st_size > limit:
            raise PacklintError(f"{prefix}file too large ({st.st_size} bytes > {_mib(limit)} limit)", path=shown)
        if _O_NONBLOCK:  # (a regular file never blocks; cleared so that reads behave as usual)
            try:
                os.set_blocking(fd, True)
            except OSError:
                pass
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_open(fd: int, st: os.stat_result, limit: int, what: str, shown: str) -> bytes:
    """At most `limit` bytes of an fd from `open_regular` (more: refused, the file grew meanwhile)."""
    prefix = f"cannot read {what}: " if what else ""
    try:
        data = _read_fd(fd, limit)
    except OSError as exc:
        raise PacklintError(f"{prefix}{exc.strerror or exc}", path=shown) from None
    if len(data) > limit:
        raise PacklintError(f"{prefix}file too large (more than {_mib(limit)})", path=shown)
    return data


def read_bounded(
    path: str | os.PathLike[str], limit: int, what: str, *, display: str | None = None, nofollow: bool = False
) -> bytes:
    """The bytes of the regular file `path` (at most `limit`), or a one-line PacklintError:
    `<path>: cannot read <what>: <reason>`."""
    fd, st = open_regular(path, limit, what, display=display, nofollow=nofollow)
    try:
        return read_open(fd, st, limit, what, display or os.fspath(path))
    finally:
        os.close(fd)


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes | None:
    """`read_bounded` for a file whose absence or refusal only makes its facts unknown: None instead
    of an error (a FIFO, a device, a directory, a file over `limit`, a missing or unreadable file)."""
    try:
        return read_bounded(path, limit, "")
    except PacklintError:
        return None


def read_head(path: str | os.PathLike[str], n: int) -> bytes | None:
    """The first `n` bytes of a regular file of any size (a shebang, a format sniff); None when the
    file is missing or not a regular file."""
    try:
        fd, _ = open_regular(path, 1 << 62, "")
    except PacklintError:
        return None
    try:
        return os.read(fd, n)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_cache_file(path: str | os.PathLike[str], limit: int = CACHE_LIMIT) -> bytes | None:
    """A cache entry's bytes, or None when it is missing or cannot be trusted: not a regular file (a
    FIFO, a device, a directory), a symlink (O_NOFOLLOW), not owned by this user, larger than `limit`."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_NONBLOCK | _O_NOFOLLOW | _O_CLOEXEC | _O_BINARY)
    except (OSError, ValueError):
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            return None
        if _O_NONBLOCK:
            os.set_blocking(fd, True)
        data = _read_fd(fd, limit)
        return None if len(data) > limit else data
    except OSError:
        return None
    finally:
        os.close(fd)


def read_stdin_bounded(limit: int, stream: BinaryIO | None = None, *, what: str = "stdin") -> bytes:
    """At most `limit` bytes of stdin; more is a one-line error, raised as soon as the limit is passed
    (so `check - < /dev/zero` reads limit + 1 bytes, then stops)."""
    src = stream if stream is not None else sys.stdin.buffer
    chunks: list[bytes] = []
    total = 0
    try:
        while total <= limit:
            chunk = src.read(min(MiB, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise PacklintError(f"cannot read {what}: {exc.strerror or exc}", path="-") from None
    if total > limit:
        raise PacklintError(f"input too large to be a launch script (more than {_mib(limit)} on {what})", path="-")
    return b"".join(chunks)


def check_writable_target(path: str | os.PathLike[str], what: str, *, follow: bool = False) -> str:
    """The path `atomic_write` will replace: `path` itself, or (follow=True) the regular file a symlink
    points to. A special file, a directory or (follow=False) a symlink is refused."""
    shown = os.fspath(path)
    target = os.path.realpath(path) if follow else shown
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise PacklintError(f"cannot write {what}: {exc.strerror or exc}", path=shown) from None
    if stat.S_ISLNK(st.st_mode):
        raise PacklintError(f"cannot write {what}: a symbolic link: refused (name its target)", path=shown)
    if not stat.S_ISREG(st.st_mode):
        raise PacklintError(f"cannot write {what}: {_kind(st.st_mode)}", path=shown)
    return target


class _Signalled(BaseException):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_END_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT")


def _mkstemp(prefix: str, suffix: str, directory: str) -> tuple[int, str]:
    """`tempfile.mkstemp`'s guarantees (O_EXCL|O_NOFOLLOW, 0600, a random name, another on a clash) without
    importing tempfile (shutil, random: ~10 ms of a one-script check that stores its result)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        path = os.path.join(directory, prefix + os.urandom(6).hex() + suffix)
        try:
            return os.open(path, flags, 0o600), os.path.abspath(path)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no unused temporary name", directory)


def _raise_on_signals() -> dict[int, object]:
    """While a temp file exists: SIGTERM, SIGHUP and SIGQUIT raise `_Signalled` (so the temp file is
    removed) instead of ending the process at once (R24). Returns the handlers to restore; nothing
    changes outside the main thread (Python runs handlers there only). SIGKILL cannot be caught."""
    import signal

    if sys.modules.get("threading") is not None:  # (not imported: this is the main thread; a one-script check)
        import threading

        if threading.current_thread() is not threading.main_thread():
            return {}

    def handler(signum: int, frame: object) -> None:
        raise _Signalled(signum)

    saved: dict[int, object] = {}
    for name in _END_SIGNALS:
        num = getattr(signal, name, None)
        if num is None:
            continue
        try:
            old = signal.getsignal(num)
            if old is signal.SIG_IGN:
                continue
            signal.signal(num, handler)
            saved[num] = old
        except (OSError, ValueError):
            pass
    return saved


def _restore_signals(saved: dict[int, object], signalled: int | None) -> None:
    """Put the handlers back; a signal that arrived meanwhile is delivered again, now with its own
    handler (by default: the process ends by that signal, as it would have without packlint)."""
    import signal

    for num, old in saved.items():
        signal.signal(num, old)  # type: ignore[arg-type]
    if signalled is not None:
        os.kill(os.getpid(), signalled)


def atomic_write(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    keep_mode: bool = True,
    what: str = "file",
    follow: bool = False,
    fsync: bool = True,
    expect: bytes | None = None,
    replace_any: bool = False,
) -> None:
    """Replace `path` with `data` atomically: a reader (or a kill) sees the old or the new file, never
    a part. The temp file comes from mkstemp in the same directory (O_EXCL, random name), is written,
    fsync'ed and renamed over the target; keep_mode gives it the original file's permission bits and,
    where allowed, its owner (a new file gets 0666 less the umask). A hard link to the old file keeps
    the old content (the name is replaced, not the inode). A symlink (unless follow=True, which writes to the regular
    file it points to) or a special file is refused with a one-line PacklintError, never replaced.
    `expect`: the bytes the file must still hold (checked just before the rename; else refused).
    replace_any (a cache entry, in packlint's own directory): whatever is at `path` (a link, a FIFO) is
    replaced by the rename itself (never written through), and the new file is private (0600).
    SIGTERM, SIGHUP or SIGQUIT during the write remove the temp file, then end the process as usual."""
    shown = os.fspath(path)
    if replace_any:
        target, keep_mode = shown, False
    else:
        target = check_writable_target(path, what, follow=follow)
    mode: int | None = None
    owner: tuple[int, int] | None = None
    if keep_mode:
        try:
            st = os.stat(target)
            mode = stat.S_IMODE(st.st_mode)
            owner = (st.st_uid, st.st_gid)
        except FileNotFoundError:
            mask = os.umask(0)
            os.umask(mask)
            mode = 0o666 & ~mask
        except OSError:
            mode = None
    directory = os.path.dirname(target) or "."
    saved = _raise_on_signals()
    signalled: int | None = None
    try:
        _write_replace(target, data, directory, mode, owner, fsync, expect, what, shown)
    except _Signalled as sig:
        signalled = sig.signum
        raise PacklintError(f"cannot write {what}: interrupted by a signal", path=shown) from None
    finally:
        _restore_signals(saved, signalled)


def _write_replace(
    target: str,
    data: bytes,
    directory: str,
    mode: int | None,
    owner: tuple[int, int] | None,
    fsync: bool,
    expect: bytes | None,
    what: str,
    shown: str,
) -> None:
    """atomic_write's temp file, write, checks and rename; the temp file is removed on any failure."""
    try:
        fd, tmp = _mkstemp(f".{os.path.basename(target)}.", ".tmp", directory)
    except OSError as exc:
        raise PacklintError(f"cannot write {what}: {exc.strerror or exc}", path=shown) from None
    try:
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            if owner is not None and hasattr(os, "fchown"):
                try:  # (root fixing another user's script: the file stays theirs)
                    if owner != (os.getuid(), os.getgid()):
                        os.fchown(fd, *owner)
                except OSError:
                    pass
            if mode is not None:
                os.fchmod(fd, mode)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        if expect is not None:
            try:
                now = read_bounded(target, max(len(expect), 1) * 2 + MiB, what)
            except PacklintError:
                now = None
            if now != expect:
                raise PacklintError(f"changed since it was checked: {what} not written", path=shown)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise PacklintError(f"cannot write {what}: {exc.strerror or exc}", path=shown) from None
        raise
