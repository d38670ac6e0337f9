"""A run-wide bound on judge calls in flight (one limiter is shared by every criterion of the run)."""

from __future__ import annotations

import asyncio

from evalbot.judges.base import Judge, JudgeReply, JudgeRequest

DEFAULT_CONCURRENCY = 16


class LimitedJudge:
    """Lets at most ``limit`` calls to ``inner`` run at once; records the peak for reports and benchmarks."""

    def __init__(self, inner: Judge, limit: int = DEFAULT_CONCURRENCY, *, sharing: LimitedJudge | None = None) -> None:
        if limit < 1:
            raise ValueError(f"judge concurrency must be at least 1, got {limit}")
        self.inner = inner
        self.limit: int = sharing.limit if sharing is not None else limit
        self.in_flight = 0
        self.peak = 0
        self._slots: LimitedJudge = sharing._slots if sharing is not None else self
        """The limiter whose slots (and in-flight count) this one uses: another service shares the run's limit."""
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _sem(self) -> asyncio.Semaphore:
        # A semaphore belongs to one event loop; tests and the CLI may run several loops in sequence.
        slots = self._slots
        loop = asyncio.get_running_loop()
        if slots._semaphore is None or slots._loop is not loop:
            slots._semaphore, slots._loop = asyncio.Semaphore(slots.limit), loop
        return slots._semaphore

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Wait for a free slot, then call ``inner``."""
        slots = self._slots
        async with self._sem():
            slots.in_flight += 1
            slots.peak = max(slots.peak, slots.in_flight)
            try:
                return await self.inner.generate(request)
            finally:
                slots.in_flight -= 1
