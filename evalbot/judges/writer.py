"""One background thread that runs queued file writes in order, so the event loop sending judge requests never waits.

The thread is started on first use and lives for the process (a daemon, so it never delays exit by itself); what is
still queued when the interpreter exits is written by an ``atexit`` hook.  Each ``WriteQueue`` counts its own jobs,
so a cache can wait for its writes without waiting for anybody else's.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable

_cond = threading.Condition()
_jobs: deque[tuple[WriteQueue, Callable[[], None]]] = deque()
_running = 0
"""Jobs taken off ``_jobs`` and not finished yet."""
_thread: threading.Thread | None = None


def _work() -> None:
    global _running
    while True:
        with _cond:
            while not _jobs:
                _cond.wait()
            owner, job = _jobs.popleft()
            _running += 1  # with the same lock held: the exit drain sees every job queued or running
        _run(owner, job)


def _run(owner: WriteQueue, job: Callable[[], None]) -> None:
    """Run one job taken off ``_jobs`` (``_running`` already counts it) and book its outcome."""
    global _running
    error: Exception | None = None
    try:
        job()
    except Exception as exc:  # kept for the owner's next wait()
        error = exc
    finally:
        with _cond:
            _running -= 1
            owner._pending -= 1
            if error is not None:
                owner._errors.append(error)
            _cond.notify_all()


def _ensure_thread() -> None:
    """Start the writer thread if it is not running (first use, or in a child process after ``fork``)."""
    global _thread
    if _thread is None or not _thread.is_alive():
        _thread = threading.Thread(target=_work, name="evalbot-writer", daemon=True)
        _thread.start()


def _drain_at_exit() -> None:
    with _cond:
        while (_jobs or _running) and _thread is not None and _thread.is_alive():
            _cond.wait(0.1)


def _forget_thread_in_child() -> None:
    global _thread, _cond, _running
    # The parent's thread did not survive the fork (nor, perhaps, the state of its lock): start afresh.
    _thread, _cond, _running = None, threading.Condition(), 0


atexit.register(_drain_at_exit)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_thread_in_child)


class WriteQueue:
    """A caller's share of the writer thread: ``submit`` jobs, ``wait`` until they are done."""

    def __init__(self) -> None:
        self._pending = 0
        self._errors: list[Exception] = []

    @property
    def busy(self) -> bool:
        """True while some submitted job has not finished."""
        return self._pending > 0

    def submit(self, jobs: Iterable[Callable[[], None]]) -> None:
        """Queue ``jobs``: they are started in submission order, after everything queued before. A caller waiting in
        ``wait()`` helps with this queue's jobs, so two of them may run at the same time (cache writes of one
        request merge under a lock, so their order does not matter)."""
        with _cond:
            for job in jobs:
                _jobs.append((self, job))
                self._pending += 1
            if self._pending:
                _ensure_thread()
                _cond.notify_all()

    def wait(self) -> None:
        """Block until every submitted job has run, helping the writer thread with this queue's jobs meanwhile;
        re-raise the first error raised since the last wait."""
        global _running
        while True:
            with _cond:
                if not self._pending:
                    errors, self._errors = self._errors, []
                    break
                job = next((j for o, j in _jobs if o is self), None)
                if job is None:
                    _cond.wait()
                    continue
                _jobs.remove((self, job))
                _running += 1
            _run(self, job)
        if errors:
            raise errors[0]
