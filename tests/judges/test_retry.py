"""Retries with backoff, jitter and Retry-After, through the real client and the fake server."""

from __future__ import annotations

import asyncio
import random

import pytest

from evalbot.errors import RetryPolicy
from evalbot.forge.pygithub import DEFAULT_RETRY
from evalbot.judges.base import JudgeCallError, JudgeRequest
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.retry import RetryingJudge
from tests.fakes.fake_gemini import FakeGemini

MODEL = "gemini-2.5-flash"


class Sleeps:
    """Records requested sleeps instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def _retrying(fake: FakeGemini, sleeps: Sleeps, attempts: int = 4) -> RetryingJudge:
    backend = GeminiJudge(api_key="k", base_url=fake.url, timeout=5)
    return RetryingJudge(backend, RetryPolicy(attempts=attempts, base_delay=0.01, max_delay=0.05), sleep=sleeps)


def test_429_then_503_then_success(fake: FakeGemini) -> None:
    """Transient errors are retried; the answer arrives and every HTTP attempt is counted."""
    fake.fault(429, retry_after="3")
    fake.fault(503)
    sleeps = Sleeps()
    reply = asyncio.run(_retrying(fake, sleeps).generate(JudgeRequest(MODEL, "x")))
    assert reply.texts == ("fake answer 0",)
    assert len(fake.requests) == 3 and reply.usage.requests == 3
    assert sleeps.calls[0] >= 3.0  # Retry-After honoured
    assert sleeps.calls[1] <= 0.05  # plain backoff stays under max_delay


def test_gives_up_after_attempts(fake: FakeGemini) -> None:
    """Persistent 503s end in a JudgeCallError saying how many attempts were made."""
    fake.fault(503, count=10)
    with pytest.raises(JudgeCallError, match="gave up after 3 attempts"):
        asyncio.run(_retrying(fake, Sleeps(), attempts=3).generate(JudgeRequest(MODEL, "x")))
    assert len(fake.requests) == 3


def test_permanent_error_not_retried(fake: FakeGemini) -> None:
    """A 403 is raised at once, without retries."""
    fake.fault(403)
    sleeps = Sleeps()
    with pytest.raises(JudgeCallError):
        asyncio.run(_retrying(fake, sleeps).generate(JudgeRequest(MODEL, "x")))
    assert len(fake.requests) == 1 and sleeps.calls == []


@pytest.mark.parametrize("status", [408, 500, 502, 504])
def test_other_transient_statuses_are_retried(fake: FakeGemini, status: int) -> None:
    """408 and 5xx are retried like 429."""
    fake.fault(status)
    reply = asyncio.run(_retrying(fake, Sleeps()).generate(JudgeRequest(MODEL, "x")))
    assert reply.texts and len(fake.requests) == 2


def test_delay_is_jittered_exponential_and_capped() -> None:
    """Delays stay within the exponential ceiling, honour Retry-After and cap it."""
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0, max_retry_after=20.0)
    rng = random.Random(1)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (6, 8.0)]:
        delays = [policy.delay(attempt, None, rng) for _ in range(200)]
        assert all(0.0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling / 2  # really spread, not constant
    assert policy.delay(1, 5.0, rng) >= 5.0
    assert policy.delay(1, 500.0, rng) == 20.0


def test_one_policy_for_judge_and_github() -> None:
    """The judge's retrying layer and the GitHub client share errors.RetryPolicy and its defaults: 6 tries (5
    retries), 1 s doubling to at most 30 s; fewer than one try is refused."""
    policy = RetryPolicy()
    assert RetryingJudge(GeminiJudge(api_key="k", base_url="http://127.0.0.1:9", timeout=1)).policy == policy
    assert DEFAULT_RETRY == policy
    assert (policy.attempts, policy.retries, policy.timeout_attempts) == (6, 5, 2)
    assert [policy.backoff(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert (policy.max_retry_after, policy.rate_limit_wait, policy.max_wait) == (120.0, 60.0, 300.0)
    with pytest.raises(ValueError, match="at least one attempt"):
        RetryPolicy(attempts=0)
