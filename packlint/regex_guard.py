"""Regular expressions packlint did not write (a user rule's `matches()`, a script's `[[ $X =~ RE ]]`),
run with a bound on their time (audit Q7).

Python's `re` backtracks: `^(a+)+$` takes exponential time and `.*a.*a.*b` polynomial time (a
4,096-character subject already takes 23 s with `.*a.*b`), and no signal interrupts a match. So:

- at load, a rule's pattern with a nested quantifier, an alternation inside a repeat or a backreference
  (`nested_quantifier`) is refused with a one-line error at the rule's position;
- at evaluation (`bounded_search`), a subject over MAX_SUBJECT_CHARS is not matched (undecided); a
  pattern with at most one unbounded repeat on a subject of at most CHEAP_SUBJECT_CHARS runs on `re`
  (a few million steps at most: the built-in rules and most user patterns); any other runs on the
  `regex` module with a timeout of CALL_TIMEOUT_S, and at most FILE_BUDGET_S of such matching per
  file. A match that runs out of time is undecided: the rule says nothing.
"""

from __future__ import annotations

import functools
import importlib
import re
import time
import warnings
from typing import Any

try:  # the parser of the `re` module: Python 3.11+, then 3.10
    _sre_parse: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover
    _sre_parse = importlib.import_module("sre_parse")

# Subjects longer than this are not matched at all (undecided).
MAX_SUBJECT_CHARS = 1 << 16
# A pattern with at most one unbounded repeat runs on `re` up to this subject length (n**2 steps).
CHEAP_SUBJECT_CHARS = 2048
# The `regex` module's timeout for one match, and the time all such matches of one file may take.
CALL_TIMEOUT_S = 0.05
FILE_BUDGET_S = 1.0

_spent = [0.0]  # seconds spent in timed matches since reset_budget()


def reset_budget() -> None:
    """A new file: its matches get FILE_BUDGET_S again."""
    _spent[0] = 0.0


_REPEATS = ("MAX_REPEAT", "MIN_REPEAT")
_MANY = 16  # a bounded repeat of more than this many counts as unbounded


def _children(av: Any):
    if isinstance(av, _sre_parse.SubPattern):
        yield av
    elif isinstance(av, (tuple, list)):
        for x in av:
            yield from _children(x)


def _walk(sub: Any, inside: bool, counts: list[int]) -> str | None:
    for op, av in sub:
        name = str(op)
        if name in ("GROUPREF", "GROUPREF_EXISTS"):
            return "a backreference"
        if name in _REPEATS:
            _lo, hi, body = av
            many = hi == _sre_parse.MAXREPEAT or hi > _MANY
            if many:
                counts[0] += 1
                if inside:
                    return "a repeat inside a repeated group (like `(a+)+`)"
            found = _walk(body, inside or many, counts)
            if found:
                return found
            continue
        if name == "BRANCH" and inside:
            return "an alternation inside a repeated group (like `(a|aa)+`)"
        for child in _children(av):
            found = _walk(child, inside, counts)
            if found:
                return found
    return None


@functools.lru_cache(maxsize=512)
def _analyse(pattern: str) -> tuple[str | None, int]:
    """(what makes the pattern exponential or None, the number of unbounded repeats)."""
    try:
        with warnings.catch_warnings():  # FutureWarning on `[[:digit:]]`: bash's POSIX class, not noise to print
            warnings.simplefilter("ignore")
            tree = _sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - any parser failure on a foreign pattern: treated as not cheap
        return None, 99  # (a compile error is reported by whoever compiles it)
    counts = [0]
    try:
        why = _walk(tree, False, counts)
    except RecursionError:
        return "nesting too deep", 99
    return why, counts[0]


def nested_quantifier(pattern: str) -> str | None:
    """What makes `pattern`'s matching time exponential in the subject's length, or None."""
    return _analyse(pattern)[0]


def bounded_search(pattern: str, subject: str, compiled: Any = None) -> bool | None:
    """`re.search(pattern, subject) is not None`, or None when it cannot be decided within the bounds."""
    decided, found = bounded_find(pattern, subject, compiled)
    return (found is not None) if decided else None


def _compile_quietly(pattern: str) -> Any:
    """re.compile without Python's FutureWarnings ("Possible nested set"): a script's `[[ $x =~ [[:digit:]] ]]`
    is bash's POSIX class, and a warning on packlint's stderr would be noise to the user."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return re.compile(pattern)


def bounded_find(pattern: str, subject: str, compiled: Any = None) -> tuple[bool, Any]:
    """(decided, the match object of `re.search(pattern, subject)` or None). Not decided: the subject is
    too long, the pattern ran out of time, or it is not a valid pattern."""
    if len(subject) > MAX_SUBJECT_CHARS:
        return False, None
    why, unbounded = _analyse(pattern)
    if why is None and (unbounded == 0 or (unbounded == 1 and len(subject) <= CHEAP_SUBJECT_CHARS)):
        try:
            rx = compiled if compiled is not None else _compile_quietly(pattern)
        except re.error:
            return False, None
        return True, rx.search(subject)
    left = FILE_BUDGET_S - _spent[0]
    if left <= 0:
        return False, None
    try:
        import regex  # only for patterns that could backtrack for long (not on the common path)
    except ImportError:  # pragma: no cover - a dependency; without it such a match is undecided
        return False, None
    start = time.perf_counter()
    try:
        return True, regex.search(pattern, subject, timeout=min(CALL_TIMEOUT_S, left))
    except Exception:  # noqa: BLE001 - a timeout, or the engine failing on foreign input: undecided
        return False, None
    finally:
        _spent[0] += time.perf_counter() - start
