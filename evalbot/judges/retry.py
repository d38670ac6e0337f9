"""Retries of transient judge failures (408/429/5xx, timeouts) with exponential backoff, jitter and Retry-After,
as ``errors.RetryPolicy`` (the one policy, shared with the GitHub client) says."""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from evalbot.errors import RetryPolicy
from evalbot.judges.base import Judge, JudgeCallError, JudgeReply, JudgeRequest, JudgeTimeout, Usage

Sleep = Callable[[float], Awaitable[None]]


@dataclass
class RetryingJudge:
    """Retries transient failures of ``inner``; the last error is re-raised with the attempt count."""

    inner: Judge
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Sleep = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)
    retries: int = 0
    """Retries made so far (for the CLI's summary and the benchmark)."""

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Call ``inner`` until it answers, fails permanently or the attempts are used up."""
        attempt = 1
        timeouts = 0
        while True:
            try:
                reply = await self.inner.generate(request)
            except JudgeCallError as exc:
                timeouts += isinstance(exc, JudgeTimeout)
                if not exc.transient or attempt >= self.policy.attempts or timeouts >= self.policy.timeout_attempts:
                    if exc.transient:
                        raise JudgeCallError(
                            f"{exc} (gave up after {attempt} attempts)", status=exc.status, transient=True
                        ) from exc
                    raise
                self.retries += 1
                await self.sleep(self.policy.delay(attempt, exc.retry_after, self.rng))
                attempt += 1
                continue
            if attempt > 1:
                # Failed attempts were requests too.
                reply = JudgeReply(reply.texts, reply.usage + Usage(requests=attempt - 1), reply.cached_samples,
                                   reply.served)
            return reply


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
