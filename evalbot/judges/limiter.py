"""A run-wide bound on judge calls in flight (one limiter is shared by every criterion of the run)."""

from __future__ import annotations

import asyncio

from evalbot.judges.base import Judge, JudgeReply, JudgeRequest

DEFAULT_CONCURRENCY = 16


class LimitedJudge:
    """Lets at most ``limit`` calls to ``inner`` run at once; records the peak for reports and benchmarks."""

    def __init__(self, inner: Judge, limit: int = DEFAULT_CONCURRENCY) -> None:
        if limit < 1:
            raise ValueError(f"judge concurrency must be at least 1, got {limit}")
        self.inner = inner
        self.limit = limit
        self.in_flight = 0
        self.peak = 0
        self._semaphore: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _sem(self) -> asyncio.Semaphore:
        # A semaphore belongs to one event loop; tests and the CLI may run several loops in sequence.
        loop = asyncio.get_running_loop()
        if self._semaphore is None or self._loop is not loop:
            self._semaphore, self._loop = asyncio.Semaphore(self.limit), loop
        return self._semaphore

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Wait for a free slot, then call ``inner``."""
        async with self._sem():
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                return await self.inner.generate(request)
            finally:
                self.in_flight -= 1
