"""Reading a script from disk or stdin into text packlint can analyse, refusing what is not a script.

Every refusal is a PacklintError with the path, so one bad file is one clear line, never a traceback.
"""

from __future__ import annotations

import os
from array import array
from bisect import bisect_left
from pathlib import Path

from packlint.errors import PacklintError
from packlint.records import factory, record
from packlint.values import Span

MAX_SCRIPT_BYTES = 8 * 1024 * 1024  # larger "scripts" are refused: no launch script is 8 MiB


@record
class SourceFile:
    """One script's bytes (normalised for the parser) and what is needed to turn offsets into spans."""

    path: str  # as reported to the user
    data: bytes  # UTF-8 (or raw) bytes with CRLF turned into LF and any BOM removed
    line_base: int = 0  # for text embedded in another file (`bash -c '...'`): first line's offset
    column_base: int = 0  # ... and first line's column offset
    notes: list[str] = factory(list)  # e.g. "CRLF line endings", "decoded from UTF-16"
    crlf: bool = False  # lines end in CR LF (bash keeps the CR in the last word of a line)
    pinned: Span | None = None  # text that is not on the page as is (`eval "$CMD"`): every span is this
    # (byte start, byte end, origin) of text that came from values resting on something (`eval $cmd` with
    # cmd="torchrun --nnodes $NNODES ...", NNODES=${WORLD_SIZE:-1}): its literal words keep that origin
    marks: tuple = ()
    _line_starts: list[int] | None = None
    _span_cache: dict = factory(dict)
    _char_starts: dict[int, array[int] | bool] = factory(dict)  # row -> False (ASCII) | char offsets
    _ascii_data: bytes | None = None  # the `data` last found to be all ASCII (columns = bytes + 1)

    def line_starts(self) -> list[int]:
        if self._line_starts is None:
            starts = [0]
            find = self.data.find
            i = find(b"\n")
            while i != -1:
                starts.append(i + 1)
                i = find(b"\n", i + 1)
            self._line_starts = starts
        return self._line_starts

    def line_bytes(self, row: int) -> bytes:
        starts = self.line_starts()
        if row >= len(starts):
            return b""
        end = starts[row + 1] - 1 if row + 1 < len(starts) else len(self.data)
        return self.data[starts[row] : end]

    def line_text(self, row: int) -> str:
        return self.line_bytes(row).decode("utf-8", "replace").rstrip("\r")

    def char_column(self, row: int, byte_col: int) -> int:
        """0-based byte column -> 1-based character column.

        Each line is looked at once (a 1 MB line holds hundreds of thousands of words: slicing it per
        word was quadratic); an undecodable byte counts as one character."""
        if self._ascii_data is self.data:
            return byte_col + 1
        starts = self._char_starts.get(row)
        if starts is None:
            if not self._char_starts and self.data.isascii():  # (asked once per text: most are ASCII)
                self._ascii_data = self.data
                return byte_col + 1
            line = self.line_bytes(row)
            if line.isascii():
                starts = False
            else:
                starts = array("l")
                pos = 0
                for ch in line.decode("utf-8", "surrogateescape"):
                    starts.append(pos)
                    pos += len(ch.encode("utf-8", "surrogateescape"))
            self._char_starts[row] = starts
        if not isinstance(starts, array):  # False: an ASCII line
            return byte_col + 1
        return bisect_left(starts, byte_col) + 1

    def span_of_points(self, start: tuple[int, int], end: tuple[int, int]) -> Span:
        if self.pinned is not None:
            return self.pinned
        (sr, sc), (er, ec) = start, end
        if self._ascii_data is self.data:  # (char_column's answer for an ASCII text, without the calls)
            col, end_col = sc + 1, ec + 1
        else:
            col = self.char_column(sr, sc)
            end_col = self.char_column(er, ec)
        if sr == 0:
            col += self.column_base
        if er == 0:
            end_col += self.column_base
        return Span(self.path, sr + 1 + self.line_base, col, er + 1 + self.line_base, end_col)

    def span_of_bytes(self, start: int, end: int) -> Span:
        """The span of data[start:end] (byte offsets)."""
        sr = self.data.count(b"\n", 0, start)
        er = sr + self.data.count(b"\n", start, end)
        sc = start - (self.data.rfind(b"\n", 0, start) + 1)
        ec = end - (self.data.rfind(b"\n", 0, end) + 1)
        return self.span_of_points((sr, sc), (er, ec))

    def span(self, node) -> Span:
        key = node.byte_range  # (start, end): one call into tree-sitter instead of two
        cache = self._span_cache
        found = cache.get(key)
        if found is None:
            found = cache[key] = self.span_of_points(node.start_point, node.end_point)
        return found


def _decode_to_utf8(raw: bytes, path: str, notes: list[str]) -> bytes:
    """UTF-16/32 with a BOM is re-encoded; a UTF-8 BOM is dropped; other bytes pass through untouched
    (tree-sitter works on bytes; non-UTF-8 bytes only ever appear in reported text as U+FFFD)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        notes.append("UTF-8 byte-order mark removed")
        return raw[3:]
    for bom, codec in (
        (b"\xff\xfe\x00\x00", "utf-32-le"),
        (b"\x00\x00\xfe\xff", "utf-32-be"),
        (b"\xff\xfe", "utf-16-le"),
        (b"\xfe\xff", "utf-16-be"),
    ):
        if raw.startswith(bom):
            try:
                text = raw[len(bom) :].decode(codec)
            except UnicodeDecodeError as exc:
                raise PacklintError(
                    f"not a text file: invalid {codec.upper()} at byte {exc.start}", path=path
                ) from None
            notes.append(f"decoded from {codec.upper()}")
            return text.encode("utf-8")
    return raw


def _looks_binary(raw: bytes) -> str | None:
    head = raw[:8192]
    if head.startswith(b"\x7fELF"):
        return "an ELF executable"
    if head.startswith(b"\x89PNG"):
        return "a PNG image"
    if head.startswith((b"PK\x03\x04", b"\x1f\x8b", b"BZh", b"\xfd7zXZ")):
        return "an archive"
    if b"\x00" in head:
        return "binary data (NUL bytes)"
    return None


def prepare(raw: bytes, path: str) -> SourceFile:
    """Turn raw bytes into a SourceFile, or refuse them with a reason."""
    if len(raw) > MAX_SCRIPT_BYTES:
        raise PacklintError(
            f"file too large to be a launch script ({len(raw) / 1e6:.1f} MB > "
            f"{MAX_SCRIPT_BYTES // (1024 * 1024)} MiB limit)",
            path=path,
        )
    notes: list[str] = []
    data = _decode_to_utf8(raw, path, notes)
    kind = _looks_binary(data)
    if kind is not None:
        raise PacklintError(f"not a shell script: looks like {kind}", path=path)
    # CRLF is kept: bash reads the CR as part of the last word of each line, and so does packlint
    crlf = b"\r\n" in data
    if crlf:
        notes.append("CRLF line endings")
    return SourceFile(path=path, data=data, notes=notes, crlf=crlf)


def read_bytes(path: str | os.PathLike, display: str | None = None) -> bytes:
    """Read a regular file with every OS failure turned into a one-line error (through safe_io: one
    O_NONBLOCK open, type and size checked on the descriptor, at most MAX_SCRIPT_BYTES read)."""
    from packlint.safe_io import open_regular, read_open

    shown = display or str(path)
    try:
        fd, st = open_regular(path, 1 << 62, "", display=shown)
    except PacklintError as exc:
        msg = exc.message
        if msg.startswith("not a regular file"):  # FIFOs, sockets and devices could block or never end
            msg = "not a regular file (FIFO, socket or device): refused"
        elif msg not in ("no such file", "permission denied", "is a directory"):
            msg = f"cannot read: {msg}"
        raise PacklintError(msg, path=shown) from None
    try:
        if st.st_size > MAX_SCRIPT_BYTES:
            raise PacklintError(
                f"file too large to be a launch script ({st.st_size / 1e6:.1f} MB > "
                f"{MAX_SCRIPT_BYTES // (1024 * 1024)} MiB limit)",
                path=shown,
            )
        return read_open(fd, st, MAX_SCRIPT_BYTES, "", shown)[: MAX_SCRIPT_BYTES + 1]
    finally:
        os.close(fd)


def load(path: str | os.PathLike, display: str | None = None) -> SourceFile:
    shown = display or str(path)
    return prepare(read_bytes(path, shown), shown)


def display_path(path: Path) -> str:
    """Paths are reported relative to the cwd when below it (like ruff), absolute otherwise."""
    absolute = os.path.abspath(path)  # not resolve(): a symlink is reported under the name given
    cwd = os.path.abspath(os.getcwd())
    if absolute == cwd or absolute.startswith(cwd.rstrip(os.sep) + os.sep):
        return os.path.relpath(absolute, cwd)
    return str(path)
