"""Retries of transient judge failures (408/429/5xx, timeouts) with exponential backoff, jitter and Retry-After."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from evalbot.judges.base import Judge, JudgeCallError, JudgeReply, JudgeRequest, JudgeTimeout, Usage


@dataclass(frozen=True)
class RetryPolicy:
    """How many attempts, and how long to wait between them.

    Attempt ``n`` (from 1) waits a random time in ``[0, min(max_delay, base_delay * 2**(n-1))]`` ("full jitter"),
    but never less than the service's ``Retry-After`` (capped at ``max_retry_after``).
    """

    attempts: int = 6
    timeout_attempts: int = 2
    """Attempts of a call that keeps timing out: a judge that accepts connections and never answers costs one
    timeout and one retry per call, not ``attempts`` of them."""
    base_delay: float = 1.0
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        wait = rng.uniform(0.0, ceiling)
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_retry_after))
        return wait


Sleep = Callable[[float], Awaitable[None]]


@dataclass
class RetryingJudge:
    """Retries transient failures of ``inner``; the last error is re-raised with the attempt count."""

    inner: Judge
    policy: RetryPolicy = RetryPolicy()
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
                u = reply.usage
                reply = JudgeReply(
                    reply.texts,
                    Usage(u.input_tokens, u.output_tokens, u.requests + attempt - 1, u.cached_samples),
                    reply.cached_samples,
                )
            return reply
