"""How far the interpreter follows a script: the caps that keep any input bounded in time and memory."""

from __future__ import annotations

from packlint.values import Span

MAX_WORLDS = 16


MAX_LOOP_ITERATIONS = 64


# Worlds one loop iteration may hand to the next before they are joined into one.
MAX_LOOP_WORLDS = 4


MAX_CALL_DEPTH = 32


MAX_SOURCE_DEPTH = 16


MAX_NESTING = 400


# Python frames a nesting level may take (a `$( )` level is ~8 frames): the recursion limit is raised to
# this while a script is analysed, so MAX_NESTING, not Python, is what stops deep input.
RECURSION_LIMIT = 12 * MAX_NESTING + 1000


MAX_VALUE_CHARS = 1 << 20


# Work units (statements run + words expanded + world-merge effort, over all worlds) one script may take.
# A unit costs 10-50 us on a loaded 2-core machine, so the budget ends any script well under a second.
# Measured on 1,515 public scripts: median 77 units, 99th percentile about 1,100, largest legitimate
# ones under 10,000 (benchmarks/run.py --public).
MAX_WORK = 15_000


class OutOfWork(Exception):
    """MAX_WORK reached: unwinds the whole analysis (caught in Interpreter.run)."""

    def __init__(self, span: Span | None) -> None:
        super().__init__("out of work budget")
        self.span = span


# Diagnostics that mean "launches may be missing from here on" (the PK902 rule reports them).
STOP_CODES = frozenset({"too-complex", "too-deep"})
