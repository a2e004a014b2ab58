"""bash patterns (`case`, `[[ == ]]`, `${X#pat}`, `${X/pat/rep}`) on top of packlint.globs."""

from __future__ import annotations

import fnmatch
import re

from packlint.globs import bash_pattern_regex as _glob_regex


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


def glob_match(text: str, pattern: str) -> bool:
    try:
        return re.fullmatch(_glob_regex(pattern), text, re.S) is not None
    except re.error:
        return fnmatch.fnmatchcase(text, pattern)


def remove_affix(text: str, pattern: str, op: str) -> str:
    """`${X#p}`, `${X##p}`, `${X%p}`, `${X%%p}`: shortest or longest match removed."""
    rx = _glob_regex(pattern)
    n = len(text)
    if op in ("#", "##"):
        rng = range(0, n + 1) if op == "#" else range(n, -1, -1)
        for k in rng:
            if re.fullmatch(rx, text[:k], re.S):
                return text[k:]
        return text
    rng = range(n, -1, -1) if op == "%" else range(0, n + 1)
    for k in rng:
        if re.fullmatch(rx, text[k:], re.S):
            return text[:k]
    return text


def replace_pattern(text: str, pattern: str, repl: str, op: str) -> str:
    """`${X/p/r}`, `${X//p/r}`, `${X/#p/r}`, `${X/%p/r}`."""
    rx = _glob_regex(pattern)
    if not pattern:
        return text
    if op == "/#":
        m = re.match(rx, text, re.S)
        return repl + text[m.end() :] if m else text
    if op == "/%":
        for k in range(0, len(text) + 1):
            if re.fullmatch(rx, text[k:], re.S):
                return text[:k] + repl
        return text
    return re.sub(rx, lambda m: repl, text, count=0 if op == "//" else 1, flags=re.S)
