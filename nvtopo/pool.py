"""Worker processes for the fleet commands (``audit``, ``cluster``), and how they end.

:func:`workers` opens a :class:`concurrent.futures.ProcessPoolExecutor` on the ``forkserver``
start method.  Such a pool is more than its workers: the forkserver process forks them, and
the resource tracker watches their semaphores.  None of them dies with this process: killed
by SIGTERM or SIGHUP, ``audit -j2`` left the forkserver, both workers and the tracker
running (minutes later they were still there, holding the terminal's pipes).  So, while a
pool is open:

* SIGTERM, SIGHUP and SIGINT are caught.  The handler ends every process this one started
  (the workers and the forkserver: SIGTERM, then SIGKILL after a grace of
  :data:`GRACE_S`), cancels what was queued, then exits as the signal asked: SIGINT as
  Ctrl-C does (``KeyboardInterrupt``: "nvtopo: interrupted", exit status 130), SIGTERM and
  SIGHUP with ``SystemExit(128 + signal number)`` (143, 129), the status a shell reports
  for a process the signal ended.  ``finally`` blocks still run on the way out (a
  temporary ``-o`` file is removed).  The resource tracker is left to end by itself: it
  ignores SIGTERM and exits as soon as this process has gone, after unlinking any
  semaphore left behind (killed, it would leave them in ``/dev/shm``).
* Workers ignore SIGINT: a Ctrl-C at the terminal reaches the whole process group, and
  this process, not each worker (with a traceback each), decides what happens.
* Leaving the ``with`` block by an exception (a renderer failing, the caller abandoning
  the results) ends the workers at once instead of waiting for queued work; leaving it
  normally waits for them, as the executor's own ``with`` does.

The handlers are those in place before once the pool is closed.  Outside the main thread
(where Python runs no signal handler) the pool is opened without them.
"""

from __future__ import annotations

import contextlib
import gc
import os
import signal
from typing import Any, Callable, Iterator, List, Optional

from . import signals

#: Seconds a process is given to end after SIGTERM before SIGKILL.
GRACE_S = 2.0
#: The cyclic collector's first threshold while a fleet command reads its files (Python's
#: default is 700 allocations).  Each file's model is a few thousand records with no cycle
#: among them, freed by reference counting once the file is done; at 700 the collector
#: walked each model at least once while it was alive, for nothing (about 5 % of
#: ``cluster``).  Garbage in cycles (an exception's traceback) waits at most this many
#: allocations, a few megabytes, before it is collected as before.
FLEET_GEN0 = 50_000
#: The signals that end a pool's processes with this one.
SIGNALS = tuple(signals.ending().values())


def _context() -> Any:
    import multiprocessing

    try:
        return multiprocessing.get_context("forkserver")
    except ValueError:  # pragma: no cover - platforms without forkserver
        return multiprocessing.get_context("spawn")


def _worker_start(initializer: Optional[Callable[[], None]]) -> None:
    """In each worker: Ctrl-C is the parent's to handle; then the caller's initializer."""
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    except (ValueError, OSError):  # pragma: no cover
        pass
    if initializer is not None:
        initializer()


def _tracker_pid() -> Optional[int]:
    try:
        from multiprocessing import resource_tracker

        return getattr(resource_tracker._resource_tracker, "_pid", None)
    except Exception:  # pragma: no cover - a Python without it
        return None


def end_children(grace_s: float = GRACE_S) -> List[int]:
    """End every process this one started, grandchildren included (the forkserver's
    workers), except the resource tracker (see the module's description): SIGTERM, then
    SIGKILL for those still there after ``grace_s``.  The grandchildren first, so that
    their parent (the forkserver) is there to reap them.  Returns the pids signalled."""
    import psutil

    try:
        me = psutil.Process()
        kids = me.children(recursive=True)
    except psutil.Error:  # pragma: no cover
        return []
    tracker = _tracker_pid()
    kids = [k for k in kids if k.pid != tracker]
    deeper = [k for k in kids if _parent(k) != me.pid]
    for group in (deeper, [k for k in kids if k not in deeper]):
        for sig in ("terminate", "kill"):
            for k in group:
                with contextlib.suppress(psutil.Error):
                    getattr(k, sig)()
            if _wait_gone(group, grace_s):
                break
    return [k.pid for k in kids]


def _parent(p: Any) -> Optional[int]:
    import psutil

    try:
        return p.ppid()
    except psutil.Error:
        return None


def _wait_gone(procs: List[Any], timeout: float) -> bool:
    """Whether every process of ``procs`` has ended (a zombie has: only its reaping is
    left, to its parent) within ``timeout`` seconds."""
    import time

    import psutil

    deadline = time.monotonic() + timeout
    while True:
        left = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    left.append(p)
            except psutil.Error:
                pass
        if not left:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
        procs = left


def _end_pool(pool: Any) -> None:
    end_children()
    with contextlib.suppress(Exception):
        pool.shutdown(wait=False, cancel_futures=True)


@contextlib.contextmanager
def fleet_collections() -> Iterator[None]:
    """The collector's first threshold raised to :data:`FLEET_GEN0` while a fleet command
    reads its files in this process; as it was afterwards."""
    before = gc.get_threshold()
    fleet_worker()
    try:
        yield
    finally:
        gc.set_threshold(*before)


def fleet_worker() -> None:
    """In a worker process, which only reads files: the threshold of
    :func:`fleet_collections` for good."""
    gen0, *older = gc.get_threshold()
    gc.set_threshold(max(gen0, FLEET_GEN0), *older)


@contextlib.contextmanager
def workers(jobs: int, initializer: Optional[Callable[[], None]] = None) -> Iterator[Any]:
    """A process pool of ``jobs`` workers that ends with this process, whatever ends it
    (see the module's description)."""
    import concurrent.futures as cf
    import functools

    state = {"ended": False}
    pool: Any = None

    def end() -> None:
        if not state["ended"] and pool is not None:
            state["ended"] = True
            _end_pool(pool)

    def on_signal(signum: int, _frame: Any) -> None:
        end()
        if signum == getattr(signal, "SIGINT", None):
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    old = signals.take(on_signal)
    try:
        pool = cf.ProcessPoolExecutor(max_workers=jobs, mp_context=_context(),
                                      initializer=functools.partial(_worker_start,
                                                                    initializer))
        try:
            yield pool
        except BaseException:
            end()
            raise
        pool.shutdown(wait=True)
    finally:
        signals.give_back(old)


__all__ = ["FLEET_GEN0", "GRACE_S", "SIGNALS", "end_children", "fleet_collections",
           "fleet_worker", "workers"]
