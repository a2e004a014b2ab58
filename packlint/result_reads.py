"""A script's input set while a run records it (packlint.result_cache): the rows it read itself, and the read sets of
the memo entries it used, held by reference and joined only where the union is needed.

A memo entry is hit thousands of times per script (caches.Memo), and the entries of a program's code each hold
thousands of rows: adding them to every script's set (7 million inserts in a cold check of MindSpeed-LLM's 634
scripts), sorting each script's union and sending it from a forked worker to the main process cost more than the rest
of the recording. The groups are kept as they are; `runs_of` makes a script's runs of rows from each group's runs
(made once per group and save), and the result is the same list as the runs of the union."""

from __future__ import annotations


class Reads(set):
    """Rows read (the set itself) and the memo entries' read sets used (`merged`, by identity, each kept alive here:
    an id is never reused while the set holds it)."""

    __slots__ = ("merged",)

    def __init__(self) -> None:
        super().__init__()
        self.merged: dict[int, frozenset[int]] = {}

    def merge(self, deps: frozenset[int]) -> None:
        if id(deps) not in self.merged:
            self.merged[id(deps)] = deps

    def absorb(self, other: set[int]) -> Reads:
        """Another input set joined to this one (in place; returns it)."""
        self |= other
        if isinstance(other, Reads):
            for k, g in other.merged.items():
                self.merged.setdefault(k, g)
        return self

    def flat(self) -> frozenset[int]:
        """Every row, its own and its groups'."""
        return frozenset().union(self, *self.merged.values())


def touches(reads: set[int], rows: set[int], known: dict[int, bool]) -> bool:
    """Whether an input set holds one of `rows` (`known`: each group's answer by its id, kept by the caller)."""
    if not reads.isdisjoint(rows):
        return True
    for k, g in (reads.merged if isinstance(reads, Reads) else {}).items():
        hit = known.get(k)
        if hit is None:
            hit = known[k] = not g.isdisjoint(rows)
        if hit:
            return True
    return False


def runs(rows: list[int]) -> list[int]:
    """Sorted row numbers as [first, count, first, count, ...]: the rows of a program's code, read in one go, are
    numbered in a row (a cold MindSpeed-LLM run: about nine times shorter than the list, well under the size limit).
    One pass (a bisection per run cost twice as much on the ~500 runs of a script's set)."""
    out: list[int] = []
    if not rows:
        return out
    it = iter(rows)
    start = prev = next(it)
    for r in it:
        if r != prev + 1:
            out += (start, prev - start + 1)
            start = r
        prev = r
    out += (start, prev - start + 1)
    return out


def runs_of(reads: set[int], known: dict[int, list[int]]) -> list[int]:
    """`runs(sorted(the union))` of an input set, from its own rows' runs and each group's (`known`: a group's runs by
    its id, made once and kept by the caller while the groups are alive)."""
    groups = reads.merged if isinstance(reads, Reads) else {}
    own = runs(sorted(reads))
    if not groups:
        return own
    parts = [own]
    for k, g in groups.items():
        r = known.get(k)
        if r is None:
            r = known[k] = runs(sorted(g))
        parts.append(r)
    spans = sorted((p[n], p[n] + p[n + 1] - 1) for p in parts for n in range(0, len(p), 2))
    out: list[int] = []
    if not spans:
        return out
    first, last = spans[0]
    for f, end in spans:
        if f > last + 1:
            out += (first, last - first + 1)
            first, last = f, end
        elif end > last:
            last = end
    out += (first, last - first + 1)
    return out
