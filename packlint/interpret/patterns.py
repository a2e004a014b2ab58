"""bash patterns (`case`, `[[ == ]]`, `${X#pat}`, `${X/pat/rep}`) on top of packlint.globs."""

from __future__ import annotations

import fnmatch
import re

from packlint.globs import bash_pattern_regex as _glob_regex
from packlint.interpret.limits import MAX_PATTERN_STEPS, MAX_VALUE_CHARS


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[\]\\])", r"\\\1", text)


class TooCostly(Exception):
    """A pattern operation whose result or matching cost is over the caps; `reason` says which."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _stars(pattern: str) -> int:
    """The runs of unescaped `*` in a bash pattern (each one a `.*` that can backtrack)."""
    n, i, prev_star = 0, 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i, prev_star = i + 2, False
            continue
        if c == "*" and not prev_star:
            n += 1
        prev_star = c == "*"
        i += 1
    return n


def _literal(pattern: str) -> bool:
    return not any(c in pattern for c in "*?[\\")


def _check_cost(n: int, pattern: str, kind: str, what: str) -> None:
    """Raise TooCostly when matching `pattern` against n characters could take a backtracking matcher
    more than MAX_PATTERN_STEPS steps: n for each `*` (multiplied), times n again for an unanchored
    search (`search`) or for one match per candidate position (`scan`, `${X%pat}`)."""
    stars = _stars(pattern)
    if kind == "anchored":
        steps = n ** max(1, stars)
    elif kind == "search":
        steps = n ** (stars + 1)
    else:  # scan
        steps = (n + 1) * n ** max(1, stars)
    if steps > MAX_PATTERN_STEPS:
        raise TooCostly(f"{what} on a value of {n:,} characters: too costly to track")


def glob_match(text: str, pattern: str) -> bool | None:
    """Whether `text` matches the bash pattern; None: too costly to decide (a long text, many `*`)."""
    if _literal(pattern):
        return text == pattern
    try:
        _check_cost(len(text), pattern, "anchored", "pattern match")
    except TooCostly:
        return None
    try:
        return re.fullmatch(_glob_regex(pattern), text, re.S) is not None
    except re.error:
        return fnmatch.fnmatchcase(text, pattern)


def remove_affix(text: str, pattern: str, op: str) -> str:
    """`${X#p}`, `${X##p}`, `${X%p}`, `${X%%p}`: shortest or longest match removed.
    Raises TooCostly (see MAX_PATTERN_STEPS)."""
    if _literal(pattern):  # (one candidate: the shortest match is the longest)
        if op in ("#", "##"):
            return text[len(pattern) :] if text.startswith(pattern) else text
        return text[: len(text) - len(pattern)] if pattern and text.endswith(pattern) else text
    n = len(text)
    _check_cost(n, pattern, "scan", f"${{X{op}pattern}}")
    rx = _glob_regex(pattern)
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
    """`${X/p/r}`, `${X//p/r}`, `${X/#p/r}`, `${X/%p/r}`. Bounded before building (audit H15): raises
    TooCostly when the result would pass MAX_VALUE_CHARS (`${X//?/$X$X}` squares the length) or the
    matching could pass MAX_PATTERN_STEPS."""
    if not pattern:
        return text
    rx = _glob_regex(pattern)
    n = len(text)
    if op == "/#":
        _check_cost(n, pattern, "anchored", "${X/#pattern/...}")
        m = re.match(rx, text, re.S)
        return _capped(repl + text[m.end() :]) if m else text
    if op == "/%":
        _check_cost(n, pattern, "scan", "${X/%pattern/...}")
        for k in range(0, n + 1):
            if re.fullmatch(rx, text[k:], re.S):
                return _capped(text[:k] + repl)
        return text
    _check_cost(n, pattern, "search", f"${{X{op}pattern/...}}")
    if op != "//":
        m = re.search(rx, text, re.S)
        if m is None:
            return text
        if n - (m.end() - m.start()) + len(repl) > MAX_VALUE_CHARS:
            raise TooCostly(_TOO_LONG)
        return text[: m.start()] + repl + text[m.end() :]
    count = matched = 0
    for m in re.finditer(rx, text, re.S):  # the same matches re.sub replaces
        count += 1
        matched += m.end() - m.start()
    if n - matched + count * len(repl) > MAX_VALUE_CHARS:  # predicted before building
        raise TooCostly(_TOO_LONG)
    return re.sub(rx, lambda m: repl, text, flags=re.S)


_TOO_LONG = f"value too long to track (over {MAX_VALUE_CHARS:,} characters)"


def _capped(text: str) -> str:
    if len(text) > MAX_VALUE_CHARS:
        raise TooCostly(_TOO_LONG)
    return text
