"""A run-wide deadline for judge calls: after it, outstanding and new calls fail at once with that reason.

However many calls hang, the judge costs a run at most ``seconds`` of wall time (counted from its first call):
each call is awaited for the time that is left, never longer. Verdicts obtained before the deadline are kept;
cached answers (the cache layer sits above this one) are still served after it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from evalbot.judges.base import Judge, JudgeCallError, JudgeReply, JudgeRequest

DEFAULT_DEADLINE = 240.0


class DeadlineJudge:
    """Bounds the total time spent on ``inner`` from its first call."""

    def __init__(self, inner: Judge, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not seconds > 0:
            raise ValueError(f"the judge deadline must be positive, got {seconds}")
        self.inner = inner
        self.seconds = seconds
        self._clock = clock
        self._started: float | None = None
        self.expired = 0
        """Calls cut off or refused by the deadline."""

    def _message(self) -> str:
        return (f"judge deadline of {self.seconds:g} s for the whole run reached; raise --judge-deadline "
                "(Action input judge-deadline) if the judge is just slow")

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Call ``inner`` for at most the time left before the deadline."""
        now = self._clock()
        if self._started is None:
            self._started = now
        left = self._started + self.seconds - now
        if left <= 0:
            self.expired += 1
            raise JudgeCallError(self._message())
        try:
            async with asyncio.timeout(left):
                return await self.inner.generate(request)
        except TimeoutError:
            self.expired += 1
            raise JudgeCallError(self._message()) from None
