"""The result cache's exchange with forked workers (packlint.result_cache; checking.py runs the workers): each worker
sends back the rows it recorded that the main process has not seen, and each script's input set in its own numbering,
which the main process renumbers into its own. The rows and tables are result_cache's (shared by reference)."""

from __future__ import annotations

from typing import Any

from packlint.result_cache import _FORK, _IDX, _LAST_SENT, _ROWS, _SENT, _WORKER_LAST, _WORKER_ROWS


def sent_delta(used: set[int]) -> tuple[list[list[Any]], tuple[list[int], list[int]]]:
    """What a forked worker recorded since it last reported (rows the main process has not seen), and one
    script's input set as this worker numbers its rows: what it adds to and drops from the set this worker sent
    before (`merge` renumbers them and applies them to that set)."""
    new = _ROWS[_SENT[0] :]
    _SENT[0] = len(_ROWS)
    last = _LAST_SENT[0]
    _LAST_SENT[0] = set(used)
    return [list(r) for r in new], (list(used - last), list(last - used))


def mark_sent() -> None:
    """Before forking workers: the rows the main process holds need not come back from them."""
    _SENT[0] = _FORK[0] = len(_ROWS)


def merge(worker: int, rows: list[list[Any]], used: tuple[list[int], list[int]]) -> set[int]:
    """A worker's new rows joined to the main process's; its script's input set in the main's numbering, from what
    it adds to and drops from the worker's set before (`sent_delta`: the worker's results arrive in its order)."""
    table = _WORKER_ROWS.setdefault(worker, [])
    for kind, path, sig in rows:
        key = (kind, path)
        i = _IDX.get(key, -1)
        if i is None or i < 0:
            i = _IDX[key] = len(_ROWS)
            _ROWS.append((kind, path, sig))
        table.append(i)
    fork = _FORK[0]
    added, dropped = used
    out = set(_WORKER_LAST.get(worker, ()))
    out.difference_update([u if u < fork else table[u - fork] for u in dropped])
    out.update([u if u < fork else table[u - fork] for u in added])
    _WORKER_LAST[worker] = out
    return out
