"""Regular expressions compiled on first use.

Compiling a pattern costs 0.1-0.9 ms, and the patterns packlint keeps at module level add up to ~8 ms
of a ~100 ms `packlint check x.sh` — most of them for paths a given run never takes (suppression
comments, pyproject tables, `bash -n` messages, budget stops). A `LazyRegex` stands in for such a
pattern: the same methods, compiled the first time one is called, and pickled as its source."""

from __future__ import annotations

import re
from typing import Any


class LazyRegex:
    """`re.compile(pattern, flags)`, deferred until first use."""

    __slots__ = ("pattern", "flags", "_compiled")

    def __init__(self, pattern: Any, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[Any] | None = None

    @property
    def compiled(self) -> re.Pattern[Any]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def __reduce__(self) -> tuple[Any, ...]:
        return (LazyRegex, (self.pattern, self.flags))

    def search(self, *args: Any) -> Any:
        return self.compiled.search(*args)

    def match(self, *args: Any) -> Any:
        return self.compiled.match(*args)

    def fullmatch(self, *args: Any) -> Any:
        return self.compiled.fullmatch(*args)

    def sub(self, *args: Any) -> Any:
        return self.compiled.sub(*args)

    def split(self, *args: Any) -> Any:
        return self.compiled.split(*args)

    def findall(self, *args: Any) -> Any:
        return self.compiled.findall(*args)

    def finditer(self, *args: Any) -> Any:
        return self.compiled.finditer(*args)


class Undecided(Exception):
    """A foreign pattern's match could not be decided within the bounds (see bounded_find)."""


class BoundedRegex:
    """A foreign pattern with `re`'s `search`, bounded as bounded_find is: `search` raises Undecided where
    bounded_find does not decide (the caller's value is then unknown). Compiled on first use."""

    __slots__ = ("pattern", "_compiled")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._compiled: Any = None

    def __reduce__(self) -> tuple[Any, ...]:
        return (BoundedRegex, (self.pattern,))

    def search(self, subject: str) -> Any:
        from packlint import regex_guard as guard

        plan = self._compiled
        if plan is None:
            plan = self._compiled = guard.plan(self.pattern)  # (kind, compiled): see regex_guard.plan
        kind, rx = plan
        n = len(subject)
        if guard.fast(kind, n):
            return rx.search(subject)
        decided, found = guard.bounded_find(self.pattern, subject)
        if not decided:
            raise Undecided(f"{self.pattern!r} could not be matched within packlint's limits")
        return found
