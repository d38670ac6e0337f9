"""num_samples via candidate_count, with the one-request-per-sample fallback."""

from __future__ import annotations

import asyncio

import pytest

from evalbot.judges.base import JudgeCallError, JudgeRequest
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.sampling import SamplingJudge
from tests.fakes.fake_gemini import FakeGemini


def _sampling(fake: FakeGemini) -> SamplingJudge:
    return SamplingJudge(GeminiJudge(api_key="k", base_url=fake.url, timeout=5))


def test_five_samples_one_request(fake: FakeGemini) -> None:
    """Five samples cost one HTTP request and one prompt's input tokens."""
    reply = asyncio.run(_sampling(fake).generate(JudgeRequest("m", "judge me", num_samples=5)))
    assert len(reply.texts) == 5 and len(fake.requests) == 1
    assert reply.usage.input_tokens == len("judge me") // 4 + 1


def test_fallback_when_candidate_count_refused(fake: FakeGemini) -> None:
    """A refusal switches the model to single-sample requests, remembered for later requests."""
    fake.reject_candidate_count = {"solo"}
    judge = _sampling(fake)
    reply = asyncio.run(judge.generate(JudgeRequest("solo", "p", num_samples=5)))
    assert len(reply.texts) == 5 and len(fake.requests) == 6  # one refusal + five singles
    fake.reset()
    asyncio.run(judge.generate(JudgeRequest("solo", "q", num_samples=5)))
    assert len(fake.requests) == 5 and all(r.candidate_count == 1 for r in fake.requests)


def test_short_candidate_list_is_topped_up(fake: FakeGemini) -> None:
    """When the service returns fewer candidates than asked, the rest are fetched separately."""
    fake.max_candidates = 2
    reply = asyncio.run(_sampling(fake).generate(JudgeRequest("m", "p", num_samples=5)))
    assert len(reply.texts) == 5 and len(fake.requests) == 4
    assert reply.usage.requests == 4


def test_failed_single_sample_fails_the_request(fake: FakeGemini) -> None:
    """If one separately requested sample fails, the whole request fails (ADK: any failed sample)."""
    judge = _sampling(fake)
    judge.single_sample_models.add("solo")
    fake.fault(400, message="boom")
    with pytest.raises(JudgeCallError, match="boom"):
        asyncio.run(judge.generate(JudgeRequest("solo", "p", num_samples=3)))
    assert len(fake.requests) == 3 and all(r.candidate_count == 1 for r in fake.requests)


def test_many_samples_are_asked_in_bounded_batches(fake: FakeGemini) -> None:
    """64 samples (the most num_samples allows): eight requests of at most MAX_BATCH candidates, never one of 64."""
    from evalbot.judges.sampling import MAX_BATCH

    reply = asyncio.run(_sampling(fake).generate(JudgeRequest("m", "p", num_samples=64)))
    assert len(reply.texts) == 64
    assert sorted(r.candidate_count for r in fake.requests) == [MAX_BATCH] * 8
    fake.reset()
    reply = asyncio.run(_sampling(fake).generate(JudgeRequest("m", "p", num_samples=19)))
    assert len(reply.texts) == 19 and sorted(r.candidate_count for r in fake.requests) == [3, MAX_BATCH, MAX_BATCH]
