"""The result cache's exchange with forked workers (packlint.result_cache; checking.py runs the workers): each worker
sends back the rows it recorded that the main process has not seen, each memo entry's read set the first time a script
uses it (a group: thousands of rows of a program's code, shared by the scripts that launch the program), and each
script's input set as its own rows and the numbers of its groups, in its own numbering, which the main process
renumbers into its own. The rows and tables are result_cache's (shared by reference)."""

from __future__ import annotations

from typing import Any

from packlint.result_cache import _FORK, _IDX, _KEPT_GROUPS, _ROWS, _SENT, _SENT_GROUPS, _WORKER_GROUPS, _WORKER_ROWS
from packlint.result_reads import Reads


def sent_delta(used: set[int]) -> tuple[list[list[Any]], tuple[list[int], list[tuple[int, list[int]]], list[int]]]:
    """What a forked worker recorded since it last reported (rows the main process has not seen), and one script's
    input set as this worker numbers its rows: its own rows, the groups it uses that this worker has not sent before
    (number, rows), and the numbers of all its groups."""
    new = _ROWS[_SENT[0] :]
    _SENT[0] = len(_ROWS)
    fresh: list[tuple[int, list[int]]] = []
    ids: list[int] = []
    for k, g in (used.merged if isinstance(used, Reads) else {}).items():
        n = _SENT_GROUPS.get(k)
        if n is None:
            n = _SENT_GROUPS[k] = len(_KEPT_GROUPS)
            _KEPT_GROUPS.append(g)  # (kept alive: its id is not reused while it is numbered)
            fresh.append((n, list(g)))
        ids.append(n)
    return [list(r) for r in new], (list(used), fresh, ids)


def mark_sent() -> None:
    """Before forking workers: the rows the main process holds need not come back from them."""
    _SENT[0] = _FORK[0] = len(_ROWS)
    _SENT_GROUPS.clear()
    _KEPT_GROUPS.clear()


def merge(worker: int, rows: list[list[Any]], used: tuple[list[int], list[tuple[int, list[int]]], list[int]]) -> Reads:
    """A worker's new rows joined to the main process's; its script's input set in the main's numbering (the worker's
    results arrive in its order: a group is known before a script uses it by number)."""
    table = _WORKER_ROWS.setdefault(worker, [])
    for kind, path, sig in rows:
        key = (kind, path)
        i = _IDX.get(key, -1)
        if i is None or i < 0:
            i = _IDX[key] = len(_ROWS)
            _ROWS.append((kind, path, sig))
        table.append(i)
    fork = _FORK[0]
    own, fresh, ids = used
    for n, g in fresh:
        _WORKER_GROUPS[worker, n] = frozenset([u if u < fork else table[u - fork] for u in g])
    out = Reads()
    out.update([u if u < fork else table[u - fork] for u in own])
    for n in ids:
        out.merge(_WORKER_GROUPS[worker, n])
    return out
