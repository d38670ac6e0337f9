"""The run-wide concurrency limit."""

from __future__ import annotations

import asyncio

import pytest

from evalbot.judges.base import JudgeRequest
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.limiter import LimitedJudge
from tests.fakes.fake_gemini import FakeGemini


def test_never_more_than_limit_in_flight(fake: FakeGemini) -> None:
    """30 concurrent calls through a limit of 4 reach the server at most 4 at a time, and all complete."""
    fake.latency = 0.05
    judge = LimitedJudge(GeminiJudge(api_key="k", base_url=fake.url, timeout=5), 4)

    async def run() -> list[int]:
        replies = await asyncio.gather(*(judge.generate(JudgeRequest("m", f"p{i}")) for i in range(30)))
        return [len(r.texts) for r in replies]

    assert asyncio.run(run()) == [1] * 30
    assert judge.peak == 4 and fake.peak_in_flight <= 4
    assert judge.in_flight == 0


def test_limit_must_be_positive() -> None:
    """A zero limit is refused with a clear message."""
    with pytest.raises(ValueError, match="at least 1"):
        LimitedJudge(GeminiJudge(api_key="k", base_url="http://127.0.0.1:9"), 0)
