"""Glob patterns as Python regexes, for the two places packlint matches them: bash's own pattern
matching (`[[ $x == pat ]]`, `case`, `${x#pat}`, `${x/pat/rep}`) and the configuration's path globs
(`exclude`, `per-file-ignores`). One translator, so both read bracket expressions the same way, as
POSIX and bash do: a `]` right after `[`, `[!` or `[^` is a member, not the end; `!` and `^` negate;
`[:alpha:]`-style classes; an unterminated `[` is a literal `[`."""

from __future__ import annotations

import re

# POSIX character classes (the C locale, as bash's defaults in a launch script)
_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v",
    "blank": " \\t",
    "xdigit": "0-9A-Fa-f",
    "word": "a-zA-Z0-9_",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "cntrl": "\\x00-\\x1f\\x7f",
    "print": "\\x20-\\x7e",
    "graph": "\\x21-\\x7e",
}


def _bracket(pattern: str, i: int, escapes: bool) -> tuple[str, int] | None:
    """The bracket expression starting at `pattern[i] == '['`: (a regex class, the index after its
    closing `]`), or None when it is not terminated (then the `[` is an ordinary character)."""
    n = len(pattern)
    j = i + 1
    negate = j < n and pattern[j] in "!^"
    if negate:
        j += 1
    members: list[str] = []
    first = True
    while j < n:
        c = pattern[j]
        if c == "]" and not first:
            if not members:  # only reversed ranges: nothing matches (or, negated, any character)
                return ("[\\s\\S]" if negate else "(?!)"), j + 1
            return ("[^" if negate else "[") + "".join(members) + "]", j + 1
        first = False
        if c == "[" and pattern.startswith("[:", j):
            end = pattern.find(":]", j + 2)
            name = pattern[j + 2 : end] if end >= 0 else None
            if name in _CLASSES:
                members.append(_CLASSES[name])
                j = end + 2
                continue
        low, j = _bracket_char(pattern, j, escapes)
        if j + 1 < n and pattern[j] == "-" and pattern[j + 1] != "]":
            high, j = _bracket_char(pattern, j + 1, escapes)
            if low <= high:  # a reversed range (`[z-a]`, `[a-Z]`) matches nothing, as in bash (not an error)
                members.append(re.escape(low) + "-" + re.escape(high))
            continue
        members.append(re.escape(low))
    return None


def _bracket_char(pattern: str, j: int, escapes: bool) -> tuple[str, int]:
    """The character at `pattern[j]` inside a bracket expression (a backslash escapes the next one when
    `escapes`) and the index after it."""
    if pattern[j] == "\\" and escapes and j + 1 < len(pattern):
        return pattern[j + 1], j + 2
    return pattern[j], j + 1


def translate(pattern: str, *, path: bool, escapes: bool) -> str:
    """A glob as a regex (without anchors). `path`: `*` and `?` stay within one path component and
    `**` crosses components (configuration globs); otherwise `*` and `?` match any character, `/`
    included (bash patterns). `escapes`: a backslash makes the next character literal (bash)."""
    i, n, out = 0, len(pattern), []
    while i < n:
        c = pattern[i]
        if c == "\\" and escapes and i + 1 < n:
            out.append(re.escape(pattern[i + 1]))
            i += 2
        elif path and pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif path and pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*" if path else ".*")
            i += 1
        elif c == "?":
            out.append("[^/]" if path else ".")
            i += 1
        elif c == "[" and (bracket := _bracket(pattern, i, escapes)) is not None:
            out.append(bracket[0])
            i = bracket[1]
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def bash_pattern_regex(pattern: str) -> str:
    """A bash pattern (`\\` escapes a character; `*` matches `/` too) as a regex; match with re.S."""
    return translate(pattern, path=False, escapes=True)


# A glob's regex backtracks at most (path length) ** (runs of `*`) steps; past this it is matched by
# regex_guard (RE2's linear time, or a time bound), as bash patterns are (interpret/limits.py)
MAX_GLOB_STEPS = 10_000_000


class PathGlob:
    """A configuration path glob, matched within a bound: `a/**/**/**/b` is a regex whose backtracking
    grows as the path's length to the power of its wildcards (8 `**/` took 3.7 s on a 30-component
    path), and `.packlint.toml` comes with the checked repository. Where (length ** stars) is within
    MAX_GLOB_STEPS, `re` matches it; otherwise regex_guard does (RE2 in linear time; without RE2, a match
    not decided within its time bound is no match)."""

    __slots__ = ("pattern", "stars", "_compiled")

    def __init__(self, pattern: str, stars: int) -> None:
        self.pattern = pattern
        self.stars = max(1, stars)
        self._compiled: re.Pattern[str] | None = None

    def match(self, path: str) -> bool:
        if len(path) ** self.stars <= MAX_GLOB_STEPS:
            if self._compiled is None:
                self._compiled = re.compile(self.pattern)
            return self._compiled.match(path) is not None
        from packlint.regex_guard import bounded_find

        decided, found = bounded_find(self.pattern, path)
        return decided and found is not None


def _star_runs(pattern: str) -> int:
    return len(re.findall(r"\*+", pattern))


def path_glob_regex(pattern: str) -> PathGlob:
    """A configuration path glob; matches the path itself or anything under it (`legacy` matches
    `legacy/x.sh`). A backslash is an ordinary character."""
    regex = "^(?:" + translate(pattern, path=True, escapes=False) + r")(?:/.*)?$"
    return PathGlob(regex, _star_runs(pattern) + 1)  # (+1: the `(?:/.*)?` after it)
