"""Escaping what comes from the input (file names, script text) for each output format (H27, H28).

File names and script text may hold anything: a newline (which would forge a gcc-format finding line),
ESC (which would drive the terminal), and bytes that are not UTF-8 (kept by Python as lone surrogates
U+DC80..U+DCFF, "surrogateescape", which no UTF-8 encoder accepts).

- `terminal_safe`: for text and gcc output: control characters (C0 but tab, DEL, C1) become `\\n`,
  `\\x1b`, ...; an undecodable byte becomes `\\xff`. One finding stays one line.
- `utf8_safe`: for JSON, SARIF, JUnit, GitLab, GitHub: an undecodable byte becomes the text `\\xff`
  (never a `\\udcff` escape, which strict JSON parsers reject); every other character is kept (those
  formats escape control characters themselves).
- `xml_safe`: `utf8_safe`, and the characters XML 1.0 cannot hold at all become `\\xNN` text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packlint.regex import LazyRegex

if TYPE_CHECKING:
    import re

# (compiled on first use: most output is printable ASCII, and these cost ~1.5 ms of every start)
_SURROGATE = LazyRegex("[\ud800-\udfff]")
# control characters, and the characters that reorder or break a line on screen (U+2028/2029 line and
# paragraph separators, U+202A..202E and U+2066..2069 bidirectional overrides: "Trojan Source")
_LAYOUT = "\u2028\u2029\u202a-\u202e\u2066-\u2069"
_TERMINAL = LazyRegex(f"[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff{_LAYOUT}]")
# what github's workflow commands do not escape themselves: every control character but CR and LF
_GITHUB = LazyRegex(f"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff{_LAYOUT}]")
# JSON output: DEL, C1 and the layout characters as \u escapes (the same string to a parser, inert on a
# terminal: U+009B is a CSI in many terminals); undecodable bytes as the text `\xff`
_JSON_RAW = LazyRegex(f"[\x7f-\x9f\ud800-\udfff{_LAYOUT}]")
_XML = LazyRegex("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group(0)
    named = _NAMED.get(ch)
    if named is not None:
        return named
    n = ord(ch)
    if 0xDC80 <= n <= 0xDCFF:  # an undecodable byte (surrogateescape)
        return f"\\x{n - 0xDC00:02x}"
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}"


def terminal_safe(text: str) -> str:
    if text.isprintable():  # (the common case, one C call)
        return text
    return _TERMINAL.sub(_escape, text)


def utf8_safe(text: str) -> str:
    if text.isascii():
        return text
    return _SURROGATE.sub(_escape, text)


def xml_safe(text: str) -> str:
    if text.isprintable():
        return text
    return _XML.sub(_escape, text)


def _escape_in_json(m: re.Match[str]) -> str:
    n = ord(m.group(0))
    if 0xDC80 <= n <= 0xDCFF:
        return "\\" + _escape(m)  # (inside a JSON string the backslash itself is escaped: `\\xff`)
    return f"\\u{n:04x}"  # (DEL, C1, layout: the JSON escape of the same character)


def json_safe(document: str) -> str:
    """A `json.dumps(..., ensure_ascii=False)` text whose strings may hold undecodable bytes: each
    becomes the text `\\xff` (a valid JSON escape of the backslash, then `xff`); DEL, C1 and the
    layout characters become `\\u` escapes (json.dumps escapes only C0)."""
    if document.isascii() and "\x7f" not in document:
        return document
    return _JSON_RAW.sub(_escape_in_json, document)


def github_safe(text: str) -> str:
    """For GitHub workflow commands: `utf8_safe`, and every control character but CR and LF (which
    the command's own %0D/%0A encoding handles) as `\\x1b` text (R27: ESC, DEL and C1 went out raw)."""
    if text.isprintable():
        return text
    return _GITHUB.sub(_escape, text)
