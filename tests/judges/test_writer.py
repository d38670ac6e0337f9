"""The background writer thread shared by judge caches."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from evalbot.judges.writer import WriteQueue


def test_jobs_all_run_once_and_wait_returns_when_done() -> None:
    """Submitted jobs all run, each exactly once, before wait() returns (wait() may run some of them itself, next
    to the writer thread, so they can finish out of order)."""
    queue = WriteQueue()
    done: list[int] = []
    queue.submit([lambda i=i: done.append(i) for i in range(50)])  # type: ignore[misc]
    queue.wait()
    assert sorted(done) == list(range(50)) and not queue.busy


def test_a_queue_does_not_wait_for_another_queues_slow_job() -> None:
    """While the writer thread is stuck in one queue's job, another queue's wait() runs its own jobs itself."""
    slow, fast = WriteQueue(), WriteQueue()
    release = threading.Event()
    started = threading.Event()
    ran: list[str] = []

    def stuck() -> None:
        started.set()
        release.wait(5)
        ran.append("slow")

    slow.submit([stuck])
    assert started.wait(5)
    fast.submit([lambda: ran.append("fast")])
    fast.wait()
    assert ran == ["fast"] and slow.busy
    release.set()
    slow.wait()
    assert ran == ["fast", "slow"] and not slow.busy


def test_a_failed_job_is_raised_by_the_next_wait_only() -> None:
    """An error in a job does not stop the others; the next wait() raises it, the one after does not."""
    queue = WriteQueue()
    done: list[str] = []

    def fail() -> None:
        raise OSError("disk full")

    queue.submit([fail, lambda: done.append("after")])
    with pytest.raises(OSError, match="disk full"):
        queue.wait()
    assert done == ["after"]
    queue.wait()


def test_exit_drain_waits_for_a_job_taken_off_the_queue_but_not_started(monkeypatch: pytest.MonkeyPatch) -> None:
    """The atexit drain does not return while the writer thread holds a job it has not begun running yet."""
    from evalbot.judges import writer

    taken, go = threading.Event(), threading.Event()
    original = writer._run

    def held(owner: WriteQueue, job: Callable[[], None]) -> None:
        taken.set()
        go.wait(5)
        original(owner, job)

    monkeypatch.setattr(writer, "_run", held)
    done: list[int] = []
    queue = WriteQueue()
    queue.submit([lambda: done.append(1)])
    assert taken.wait(5)
    drain = threading.Thread(target=writer._drain_at_exit)
    drain.start()
    drain.join(0.3)
    still_waiting = drain.is_alive()
    go.set()
    drain.join(5)
    queue.wait()
    assert still_waiting and done == [1]
