"""TOML read within bounds, for every TOML file packlint reads from its input (rule files, `.packlint.toml`,
`pyproject.toml`, the config files a launch names).

`tomllib` keeps every prefix of a dotted key (`a.b.c = 1` costs the tuples `a`, `a.b`, `a.b.c`), so one key
of N parts costs O(N**2): a 40 KB `.packlint.toml` of one 20,000-part key took 1.6 GB (audit R07). Before
parsing, `loads` sums the squares of the part counts of every key and table header (a linear scan of the
text, quoted parts counted as one) and refuses a text over KEY_COST: real files have keys of a few parts
(a 4 MiB file of 4-part keys costs ~500,000). An integer of more than Python's 4,300 digits (R21/R22) is
refused the same way, not raised as an internal error. The caller reports TomlLimitError as it reports a
syntax error (a rule or settings file: a one-line error; a config file: unread, with the reason)."""

from __future__ import annotations

import re
import sys
from typing import Any

KEY_COST = 1 << 20  # the sum, over keys and headers, of (dotted parts)**2

_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')  # (linear: no repeat inside a repeat)


class TomlLimitError(ValueError):
    """A TOML text over packlint's bounds; `line` is where (1-based), 0 when unknown."""

    def __init__(self, message: str, line: int = 0) -> None:
        super().__init__(message)
        self.line = line


def _tomllib() -> Any:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def key_cost(text: str) -> tuple[int, int]:
    """(the sum of squared dotted-part counts of the keys and headers, the line where it passed KEY_COST
    or 0)."""
    cost = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        if "." not in line:
            cost += line.count("=") + 1
            continue
        bare = _QUOTED.sub("Q", line) if ('"' in line or "'" in line) else line
        head = bare.lstrip()
        if head.startswith("["):
            end = head.find("]", 1)
            cost += (head[: end if end > 0 else len(head)].count(".") + 1) ** 2
        start, eq = 0, bare.find("=")
        while eq >= 0:  # each `key =` (inline tables too): the text since `{`, `,` or the previous `=`
            begin = max(start, bare.rfind("{", start, eq) + 1, bare.rfind(",", start, eq) + 1)
            cost += (bare.count(".", begin, eq) + 1) ** 2
            start, eq = eq + 1, bare.find("=", eq + 1)
        if cost > KEY_COST:
            return cost, lineno
    return cost, 0


def loads(text: str) -> dict[str, Any]:
    """tomllib.loads within the bounds (module doc). Raises tomllib.TOMLDecodeError or TomlLimitError."""
    cost, line = key_cost(text)
    if line:
        raise TomlLimitError(
            f"dotted keys too long to read (the squares of their part counts add up past {KEY_COST:,} by line "
            f"{line}): refused before parsing",
            line,
        )
    tomllib = _tomllib()
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as exc:  # int(): "Exceeds the limit (4300 digits) for integer string conversion"
        raise TomlLimitError(f"a number too long to read ({str(exc).split(':')[0]})") from None
    except RecursionError:
        raise TomlLimitError("nested too deeply to read") from None
