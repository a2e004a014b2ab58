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


# Brace expansion (`{a,b}{c,d}`): at most this many words from one word, and this many characters of
# work building them; past either the word is Unknown ("brace expansion into N words ... too large to
# track"). The count is predicted before anything is built.
MAX_BRACE_WORDS = 4096
MAX_BRACE_CHARS = MAX_VALUE_CHARS


# Words: one command line (or one word's splitting) keeps at most MAX_WORDS words, the rest one Unknown
# word ("N words: more than packlint tracks"); an array with more than MAX_ARRAY_ITEMS items becomes
# one Unknown item that may be any number of words. Appends (`A+=(...)`) copy the array, so this cap
# also bounds their cost: n appends cost at most n x MAX_ARRAY_ITEMS item copies (audit H12).
MAX_WORDS = 1 << 16
MAX_ARRAY_ITEMS = 4096


# A bash pattern operation (`${X%%/*}`, `${X//a*b/c}`, `case`, `[[ == ]]`) is run only when a
# backtracking matcher needs at most about this many steps for it (characters x candidate positions,
# times the characters again for each further `*`); else its result is Unknown (a `case` or `[[ ]]`
# undecided). ~10 ms of matching. A pattern without `*?[\` is matched as a string, at any length.
MAX_PATTERN_STEPS = 10_000_000


# Work units (statements run + words expanded + world-merge effort, over all worlds) one script may take.
# A unit costs 10-50 us of CPU, so the budget ends any script well under a second. Measured on 1,534
# public scripts: median 77 units, 99th percentile about 1,100; the few above this are CI utilities
# with dozens of undecidable branches (benchmarks/run.py --public).
MAX_WORK = 8_000
# ... plus one unit per WORK_BYTES bytes of script text read (the script and the files it sources or
# runs, each once): straight-line code is always analysed in full, at a cost linear in its size
# (a 20,000-line script needs ~0.08-0.12 units per byte, so one unit per 4 bytes leaves it a 2x
# margin); only repetition is cut off.
WORK_BYTES = 4


class OutOfWork(Exception):
    """MAX_WORK reached: unwinds the whole analysis (caught in Interpreter.run)."""

    def __init__(self, span: Span | None) -> None:
        super().__init__("out of work budget")
        self.span = span


# Diagnostics that mean "launches may be missing from here on" (the PK902 rule reports them).
STOP_CODES = frozenset({"too-complex", "too-deep"})
