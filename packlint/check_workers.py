"""Running a check's jobs (packlint.checking makes them): in this process, or in forked workers for many files. The
workers share the reading of the launched code (codebase.cache's locks), put aside a script whose program another
worker is reading, and, in a result cache run, store the outcomes of their own scripts themselves: each writes one
bundle with the rows it read (result_cache.Store.save) when the jobs are done, instead of sending every script's
input set to this process to merge and write (a fifth of a cold check's time on two cores went to that)."""

from __future__ import annotations

import gc
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from packlint.checking import _Job
    from packlint.result_reads import Reads

PARALLEL_MIN_FILES = 16  # below this, starting workers costs more than it saves

_WORKER_JOBS: list[_Job] = []
_JOB_TAINT: dict[int, bool] = {}  # job index -> something unrecordable decided it (result cache runs)
_JOB_READS: dict[int, Reads] = {}  # job index -> its input set (result cache runs: result_cache.end_job)
# a result cache run's jobs (checking._run_cached): [the Store, each job's key, each job's plan reads], inherited by
# the forked workers, which keep what they analysed (_KEPT) and store it at the end (_flush); _STORED: how many
_SAVE: list[Any] = []
_KEPT: list[tuple[int, Any, Reads]] = []
_STORED = [0]
_FLUSH: list[Any] = []  # [a barrier of the workers, the lock of the cache's index] (made before the fork)
FLUSH_WAIT = 60.0  # seconds a worker waits for the others to take their flush (a stuck one: its outcomes not stored)


def _workers(n_jobs: int) -> int:
    """How many processes: every core for a large directory (PACKLINT_JOBS overrides; 1 disables)."""
    wanted = os.environ.get("PACKLINT_JOBS")
    if wanted and wanted.isdigit():
        return max(1, int(wanted))
    if n_jobs < PARALLEL_MIN_FILES:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return max(1, min(cores, n_jobs // 8))


def _run_jobs(jobs: list[_Job], keep_models: bool) -> list:
    """Every job's outcome, in order, with the cyclic garbage collector off (forked workers inherit it): the analysis
    makes millions of short-lived objects and almost no cycles (peak memory on the public corpus is the same), and its
    passes cost 4-8% of a check. A young-generation pass past COLLECT_YOUNG live objects bounds what cycles leave."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _run_jobs_now(jobs, keep_models)
    finally:
        if enabled:
            gc.enable()


# young container objects alive since the last collection before a young-generation pass (_run_jobs): a pass walks each
# (most are the run's memos: a pass every 256 files cost 0.6 s of a 10 s cold MindSpeed-LLM check to free ~6,000 objects
# of cycles); counted in objects, it bounds what a cycle-making script could leave (a few hundred MB at most).
COLLECT_YOUNG = 2_000_000


def _analyse_collecting(job: _Job, keep_model: bool, count: int):
    from packlint.checking import _analyse

    if gc.get_count()[0] > COLLECT_YOUNG:
        gc.collect(0)
    return _analyse(job, keep_model)


def _run_jobs_now(jobs: list[_Job], keep_models: bool) -> list:
    n = _workers(len(jobs))
    if n <= 1 or len(jobs) <= 1 or keep_models or any(j.stdin_text is not None for j in jobs):
        return _run_here(jobs)
    import multiprocessing

    try:
        ctx = multiprocessing.get_context("fork")
    except ValueError:  # no fork (Windows, some macOS set-ups): one process
        return _run_here(jobs)
    from packlint.codebase import cache as code_cache
    from packlint.result_cache import aside, recording

    _WORKER_JOBS[:] = jobs
    # largest scripts first, one at a time as workers free up: sizes vary a lot, and a big file
    # handed out last would leave the other workers idle while it runs (their sizes: no script's input)
    with aside():
        order = sorted(range(len(jobs)), key=lambda i: -_size(jobs[i].path))
    results: list = [None] * len(jobs)
    # the largest script here, before the workers fork: they inherit what it read and learnt (its program's facts,
    # the module look-ups, the memos of the stacks and the rules) instead of each making them again
    first = order.pop(0)
    results[first], reads = _analyse_indexed(first, here=True)[1:]
    if reads is not None:  # (a result cache run: this process stores this one)
        _JOB_READS[first], _JOB_TAINT[first] = reads
    saving = bool(_SAVE) and recording()
    if saving:
        _FLUSH[:] = [ctx.Barrier(n), ctx.Lock()]
    code_cache.share_builds(ctx.Lock)  # (one worker reads a program while the others wait for its entry)
    try:
        with _pool_class()(n, context=ctx) as pool:
            chunk = max(1, len(jobs) // (n * 32))  # few hand-outs for many files, fine-grained for few
            put_aside: list[int] = []  # put aside while another worker read their program (code_cache.DEFER)
            for i, outcome in pool.imap_unordered(_analyse_deferring, order, chunksize=chunk):
                if isinstance(outcome, str) and outcome == _PUT_ASIDE:  # (sent by value: not the same object)
                    put_aside.append(i)
                    continue
                results[i] = outcome
            again = set(put_aside)  # (largest first, as above)
            for i, outcome in pool.imap_unordered(_worker_job, [i for i in order if i in again]):
                results[i] = outcome
            if saving:  # (one flush per worker: each waits at the barrier until every worker holds one)
                _STORED[0] += sum(pool.map(_flush, range(n), chunksize=1))
        return results
    finally:
        _WORKER_JOBS.clear()
        _FLUSH.clear()
        code_cache.unshare_builds()


def _pool_class() -> type:
    """multiprocessing's Pool whose worker-minding thread wakes when a worker exits or the pool changes state, not
    each time a result is waiting to be read: since bpo-35493 (CPython PR 11488) it also waits on the result pipe,
    and loops, re-polling every worker, until the result thread drains it (~5,000 turns, 0.1-0.2 s of this
    process's CPU in a cold check of 634 scripts, taken from two busy workers on two cores). Workers never exit on
    their own here (no maxtasksperchild), so nothing it minds comes through that pipe."""
    from multiprocessing.pool import Pool

    class _QuietPool(Pool):
        def _get_sentinels(self) -> list:
            return [self._change_notifier._reader]  # type: ignore[attr-defined]

    return _QuietPool


def _worker_job(index: int) -> tuple[int, Any]:
    """A forked worker's job: its outcome goes back; in a result cache run, the worker keeps what to store."""
    from packlint.caches import TAINTED
    from packlint.result_cache import end_job, recording

    i, outcome, _ = _analyse_indexed(index)
    if recording():
        reads = end_job()
        if _SAVE and isinstance(outcome, tuple) and not TAINTED[0]:
            _KEPT.append((index, outcome, reads))
    return i, outcome


def _flush(_n: int) -> int:
    """In each forked worker once, when the jobs are done: store the outcomes it kept in one bundle (the number
    stored). The cache's index is written under the workers' lock."""
    import threading

    barrier, lock = _FLUSH
    try:
        barrier.wait(FLUSH_WAIT)
    except threading.BrokenBarrierError:
        pass  # (a worker that did not come: this one stores its own all the same)
    if not _KEPT or not _SAVE:
        return 0
    store, keys, plans = _SAVE
    done = [(keys[i], outcome, reads.absorb(plans[i])) for i, outcome, reads in _KEPT]
    _KEPT.clear()
    return int(store.save(done, lock))


def _run_here(jobs: list[_Job]) -> list:
    from packlint.caches import TAINTED
    from packlint.result_cache import begin_job, end_job, recording

    out = []
    for k, job in enumerate(jobs):
        if recording():
            begin_job()
        out.append(_analyse_collecting(job, True, k))
        if recording():
            _JOB_READS[k] = end_job()
        _JOB_TAINT[k] = TAINTED[0]
    return out


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _analyse_indexed(index: int, here: bool = False) -> tuple[int, Any, Any]:
    """(index, outcome, None); here (this process, before the fork), in a result cache run: (index, outcome,
    (its input set, whether something unrecordable decided it)). A worker's caller ends its job (_worker_job)."""
    from packlint.caches import TAINTED
    from packlint.result_cache import begin_job, end_job, recording

    if recording():
        begin_job()
    outcome = _analyse_collecting(_WORKER_JOBS[index], False, index)
    if isinstance(outcome, tuple):
        # the script's bytes stay here: the main process reads a file again only if a report shows
        # its lines (Sources.text), instead of receiving and decoding every script of the run
        outcome = (None, *outcome[1:])
    if not here or not recording():
        return index, outcome, None
    return index, outcome, (end_job(), TAINTED[0])


_PUT_ASIDE = "put aside"  # (an outcome of the first pass: the script is analysed in the second)


_BUSY: dict[bytes, str] = {}  # a forked worker's programs another worker was reading: file name -> key


def _analyse_deferring(index: int) -> tuple[int, Any]:
    """_worker_job in a forked worker's first pass: a script whose program another worker is reading is put aside
    (code_cache.Busy) instead of waiting for it; what its analysis recorded so far is dropped. While that program is
    read, the next scripts that name its file are put aside before their analysis (the scripts next in size order
    often launch the same program). Only the order of the work changes: a script put aside is analysed in full later."""
    from packlint.codebase import cache as code_cache
    from packlint.result_cache import end_job, recording

    if _BUSY and _names_busy_program(_WORKER_JOBS[index].path):
        return index, _PUT_ASIDE
    code_cache.DEFER[0] = True
    try:
        return _worker_job(index)
    except code_cache.Busy as busy:
        if recording():
            end_job()  # (its reads and its open memo look-ups: none of them is stored)
        if busy.hint:
            _BUSY[os.fsencode(busy.hint)] = busy.key
        return index, _PUT_ASIDE
    finally:
        code_cache.DEFER[0] = False


def _names_busy_program(path: str) -> bool:
    from packlint.codebase import cache as code_cache
    from packlint.result_cache import aside

    for name, key in list(_BUSY.items()):
        if not code_cache.busy(key):
            del _BUSY[name]
    if not _BUSY:
        return False
    from packlint.safe_io import read_regular

    with aside():  # (a look at the script to schedule it: not an input of any script's outcome)
        data = read_regular(path, 1 << 20)
    return data is not None and any(name in data for name in _BUSY)
