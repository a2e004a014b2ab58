"""A script's input set while a run records it (packlint.result_cache): the rows it read itself, and the read sets of
the memo entries it used, held by reference and joined only where the union is needed.

A memo entry is hit thousands of times per script (caches.Memo), and the entries of a program's code each hold
thousands of rows: adding them to every script's set (7 million inserts in a cold check of MindSpeed-LLM's 634
scripts), sorting each script's union and sending it from a forked worker to the main process cost more than the rest
of the recording. The groups are kept as they are, and stored as they are (`grouped`): each group's runs once per
saved run, a script's own rows as runs and the numbers of its groups (joining each script's groups into the runs of
its union, 1.2 million spans sorted for MindSpeed-LLM, was most of the save)."""

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


def grouped(
    reads: set[int], numbered: dict[frozenset[int], int], groups: list[list[int]]
) -> tuple[list[int], list[int]]:
    """An input set as the result cache stores it: the runs of its own rows and the numbers of its groups, each group
    numbered (and its runs appended to `groups`) the first time one of the sets stored together uses it; equal groups
    share a number. The rows of the runs and of the numbered groups together are the set's union."""
    refs = []
    for g in reads.merged.values() if isinstance(reads, Reads) else ():
        n = numbered.get(g)
        if n is None:
            n = numbered[g] = len(groups)
            groups.append(runs(sorted(g)))
        refs.append(n)
    return runs(sorted(reads)), sorted(set(refs))
