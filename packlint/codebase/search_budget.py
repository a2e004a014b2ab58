"""One time budget per run for the searches of a code base that run an external program: PK203's git
history lookup (`git log -G`) and the search for a quoted name (`grep -r`, PK205's unread exports).

Each search is bounded per call, but their number grows with the script (one per exported variable) and
with the launches checked: 200 unread exports over a 100,000-file tree took 137 s (audit R12). So all of
them together, across every launch and file of one run, may take at most SECONDS of wall-clock time; past
it a search is not made and its answer is unknown (the rule that needed it says nothing). A run is one
`packlint check` (or one analysis of the editor server): `checking.check_paths` resets the budget, through
`codebase.resolve.clear_run_memos`. How a search runs (its command, its environment) is the caller's."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

SECONDS = 10.0


class SearchBudget:
    """Seconds left for external searches in this run."""

    def __init__(self, seconds: float) -> None:
        self.total = seconds
        self.left = seconds

    def reset(self) -> None:
        self.left = self.total

    def timeout(self, per_call: float) -> float | None:
        """The timeout for the next search (at most `per_call`), or None when the budget is spent (the
        answer then depends on time: not for the result cache, caches.taint)."""
        if self.left <= 0:
            from packlint.caches import taint

            taint()
            return None
        return min(per_call, self.left)

    @contextmanager
    def spend(self) -> Iterator[None]:
        """Charge the time of the block to the budget."""
        t0 = time.monotonic()
        try:
            yield
        except BaseException:  # a search that timed out or failed: its answer is not the files' (caches.taint)
            from packlint.caches import taint

            taint()
            raise
        finally:
            self.left -= time.monotonic() - t0


SEARCHES = SearchBudget(SECONDS)
