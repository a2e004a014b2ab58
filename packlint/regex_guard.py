"""Regular expressions packlint did not write (a user rule's `matches()`, a script's `[[ $X =~ RE ]]`),
run with a bound on their time by construction (audits Q7, R04/R05).

Python's `re` backtracks: `^(a+)+$` takes exponential time, and so does `^(a{1,16}){1,16}b` (no repeat in
it is unbounded); `.*a.*a.*b` takes polynomial time; and no signal interrupts a match (Ctrl-C waits for it).
So a foreign pattern never runs on `re` unless its cost is bounded by its shape:

- the engine is RE2 (`google-re2`, a dependency): linear in the subject for every pattern it can express,
  which is every pattern without a backreference or a lookaround; RE2's own memory cap bounds the compiled
  program (`a{1000}{1000}` is refused by RE2, and then undecided here);
- a pattern RE2 cannot express (or every pattern, where RE2 is not installed) runs on `re` only inside a
  checked subset (`_analyse`, `fast`): no backreference, no repeat or alternation inside a repeated group
  past _MAX_WAYS choices, at most _MAX_WAYS choices among its bounded repeats and alternations (`x?`
  thirty times is 2**30), and either no unbounded repeat (subjects up to MAX_RE_CHARS: n * 4,096 steps)
  or one (subjects up to CHEAP_SUBJECT_CHARS: n**2 * 4,096); any other runs on the `regex` module with a
  timeout of CALL_TIMEOUT_S, at most FILE_BUDGET_S of such matching per file, on subjects up to
  MAX_SUBJECT_CHARS;
- at load, a rule's pattern whose backtracking can grow exponentially (`nested_quantifier`: a repeat or
  alternation inside an unbounded repeat, `(a+)+`; one inside a bounded repeat past _MAX_WAYS choices,
  `(a{1,16}){1,16}`; a backreference) is refused with a one-line error at the rule's position, whichever
  engine is installed (a rule table loads or not the same everywhere);
- whatever is not decided is undecided: a rule says nothing, a script's `[[ =~ ]]` is unknown (the
  interpreter notes it with an info diagnostic).
"""

from __future__ import annotations

import functools
import importlib
import math
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
# A pattern without an unbounded repeat (a stack-source rule's literal, `[(].sdpa., .eager.[)]`) runs on `re`
# on subjects up to this length: a stack's source file (2 MB at most, stack_source.MAX_BYTES)
MAX_RE_CHARS = 1 << 21
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


def _children(av: Any):
    if isinstance(av, _sre_parse.SubPattern):
        yield av
    elif isinstance(av, (tuple, list)):
        for x in av:
            yield from _children(x)


# A repeated group may match its body this many ways (the product, over the repeats, of the ways each
# iteration can match) before its pattern counts as exponential: `a{2,3}(b{1,4}){2}` (16 ways) passes,
# `(a{1,16}){1,16}` (16**16) does not. An unbounded repeat counts as _MANY ways.
_MAX_WAYS = 4096
_MANY = float(1 << 40)


def _ways_of_repeat(lo: int, hi: int, inner: float) -> float:
    if inner <= 1:
        return float(hi - lo + 1)
    if hi * math.log2(inner) > 60:
        return _MANY
    return min(_MANY, inner**hi * (hi - lo + 1))


def _walk(sub: Any, counts: list[float]) -> tuple[str | None, float]:
    """(what makes `sub` backtrack without a bound on its shape, or None; the ways it can match a given
    text, roughly); counts[0] += its unbounded repeats, counts[1] *= the choices of its bounded ones and
    of its alternations (an over-estimate: the backtracking of the pattern without its unbounded repeats)."""
    ways = 1.0
    for op, av in sub:
        name = str(op)
        if name in ("GROUPREF", "GROUPREF_EXISTS"):
            return "a backreference", 0.0
        if name in _REPEATS:
            lo, hi, body = av
            why, inner = _walk(body, counts)
            if why:
                return why, 0.0
            if hi == _sre_parse.MAXREPEAT:
                if inner > 1:
                    return "a repeat or an alternation inside an unbounded repeat (like `(a+)+` or `(a|aa)+`)", 0.0
                counts[0] += 1
                ways = min(_MANY, ways * _MANY)
                continue
            total = _ways_of_repeat(lo, hi, inner)
            if hi > 1 and inner > 1 and total > _MAX_WAYS:
                return "a repeat or an alternation inside a repeated group (like `(a{1,16}){1,16}`)", 0.0
            counts[1] = min(_MANY, counts[1] * total)
            ways = min(_MANY, ways * total)
            continue
        if name == "BRANCH":
            alternatives = 0.0
            for child in _children(av):
                why, inner = _walk(child, counts)
                if why:
                    return why, 0.0
                alternatives += inner
            counts[1] = min(_MANY, counts[1] * max(1.0, alternatives))
            ways = min(_MANY, ways * alternatives)
            continue
        for child in _children(av):
            why, inner = _walk(child, counts)
            if why:
                return why, 0.0
            ways = min(_MANY, ways * inner)
    return None, ways


@functools.lru_cache(maxsize=512)
def _analyse(pattern: str) -> tuple[str | None, bool | str]:
    """(what makes the pattern's matching time grow without a bound on its shape, or None; whether `re`
    may match it: at most _MAX_WAYS choices among its bounded repeats and alternations, and no unbounded
    repeat (True: n * _MAX_WAYS steps on a subject of n characters) or one ("one": n**2 * _MAX_WAYS, so
    only on subjects of at most CHEAP_SUBJECT_CHARS))."""
    try:
        with warnings.catch_warnings():  # FutureWarning on `[[:digit:]]`: bash's POSIX class, not noise to print
            warnings.simplefilter("ignore")
            tree = _sre_parse.parse(pattern)
    except Exception:  # noqa: BLE001 - any parser failure on a foreign pattern: treated as not cheap
        return None, False  # (a compile error is reported by whoever compiles it)
    counts = [0.0, 1.0]
    try:
        why = _walk(tree, counts)[0]
    except RecursionError:
        return "nesting too deep", False
    return why, why is None and counts[0] <= 1 and counts[1] <= _MAX_WAYS and (counts[0] == 0 or "one")


@functools.lru_cache(maxsize=512)
def _linear(pattern: str) -> Any:
    """The pattern compiled by RE2 (linear-time matching), or None: RE2 is not installed, or cannot
    express the pattern (a backreference, a lookaround), or its program is over RE2's memory cap."""
    if _re2 is None:
        return None
    try:
        return _re2.compile(pattern, _RE2_OPTIONS)
    except Exception:  # noqa: BLE001 - re2.error, or anything the binding raises on foreign input
        return None


def _load_re2() -> tuple[Any, Any]:
    try:
        re2 = importlib.import_module("re2")
        options = re2.Options()
        options.log_errors = False  # a pattern RE2 refuses is not an error to print on packlint's stderr
        return re2, options
    except Exception:  # noqa: BLE001 - not installed (or a broken build): the checked subset and `regex`
        return None, None


_re2, _RE2_OPTIONS = _load_re2()


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
    kind, rx = plan(pattern)
    if fast(kind, len(subject)):
        return True, rx.search(subject)
    if kind == "bad" or len(subject) > MAX_SUBJECT_CHARS:
        return False, None
    return timed_find(pattern, subject)


def fast(kind: str, n: int) -> bool:
    """Whether a pattern of this plan matches a subject of n characters at once, within its bound: RE2 on
    any subject packlint read (its own size limits apply: linear time), `re` on a pattern without an
    unbounded repeat up to MAX_RE_CHARS (n * 4,096 steps at most), one with one unbounded repeat up to
    CHEAP_SUBJECT_CHARS (n**2 * 4,096)."""
    return kind == "linear" or (kind == "re" and n <= MAX_RE_CHARS) or (kind == "re-short" and n <= CHEAP_SUBJECT_CHARS)


@functools.lru_cache(maxsize=512)
def plan(pattern: str) -> tuple[str, Any]:
    """How `pattern` is matched: ("linear", RE2's compiled pattern), ("re" / "re-short", re's compiled
    pattern: inside the checked subset, "re-short" for subjects of at most CHEAP_SUBJECT_CHARS), ("timed",
    None: the `regex` module with a timeout) or ("bad", None: not a valid pattern)."""
    linear = _linear(pattern)
    if linear is not None:
        return "linear", linear
    cheap = _analyse(pattern)[1]
    try:
        compiled = _compile_quietly(pattern)
    except re.error:
        return "bad", None
    if cheap:
        return ("re-short" if cheap == "one" else "re"), compiled
    return "timed", None


def _taint() -> None:
    from packlint.caches import taint  # an undecided match depends on time: not for the result cache

    taint()


def timed_find(pattern: str, subject: str) -> tuple[bool, Any]:
    """bounded_find on the `regex` module, with a timeout per call and per file."""
    left = FILE_BUDGET_S - _spent[0]
    if left <= 0:
        _taint()
        return False, None
    try:
        import regex  # only for patterns that could backtrack for long (not on the common path)
    except ImportError:  # pragma: no cover - a dependency; without it such a match is undecided
        return False, None
    start = time.perf_counter()
    try:
        return True, regex.search(pattern, subject, timeout=min(CALL_TIMEOUT_S, left))
    except Exception:  # noqa: BLE001 - a timeout, or the engine failing on foreign input: undecided
        _taint()
        return False, None
    finally:
        _spent[0] += time.perf_counter() - start


def rule_pattern(pattern: str) -> Any:
    """A rule table's literal pattern, checked at load: a bad pattern, or one whose matching time can grow
    exponentially (nested_quantifier), raises re.error (the table's load fails at the rule's position)."""
    _compile_quietly(pattern)
    why = nested_quantifier(pattern)
    if why is not None:  # (audits Q7, R05: `^(a+)+$`, `^(a{1,16}){1,16}b` against a script's value)
        raise re.error(f"its matching time can grow exponentially with the value ({why}); rewrite it without that")
    from packlint.regex import BoundedRegex

    return BoundedRegex(pattern)
