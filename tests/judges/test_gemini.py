"""The google-genai backend against the loopback fake Gemini server."""

from __future__ import annotations

import asyncio
import email.utils
import time

import pytest

from evalbot.errors import ConfigError
from evalbot.judges.base import CandidateCountUnsupported, JudgeCallError, JudgeRequest
from evalbot.judges.gemini import GeminiJudge, JudgeSetupError, parse_retry_after
from tests.fakes.fake_gemini import FakeGemini, Scripted

MODEL = "gemini-2.5-flash"


def _judge(fake: FakeGemini, timeout: float = 5.0) -> GeminiJudge:
    return GeminiJudge(api_key="test-key", base_url=fake.url, timeout=timeout)


def test_round_trip_sends_prompt_config_and_candidate_count(fake: FakeGemini) -> None:
    """One request carries the prompt, the judge config and candidateCount; every candidate text comes back."""
    fake.responder = lambda prompt, i, rec: f"{prompt}#{i}"
    reply = asyncio.run(_judge(fake).generate(JudgeRequest(MODEL, "rate this", {"temperature": 0.0}, 3)))
    assert reply.texts == ("rate this#0", "rate this#1", "rate this#2")
    (req,) = fake.requests
    assert req.path == f"/v1beta/models/{MODEL}:generateContent"
    assert req.api_key == "test-key"
    assert req.body["generationConfig"] == {"temperature": 0.0, "candidateCount": 3}
    assert reply.usage.requests == 1 and reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0


def test_single_sample_omits_candidate_count(fake: FakeGemini) -> None:
    """A one-sample request does not send candidateCount (models that reject it still work)."""
    asyncio.run(_judge(fake).generate(JudgeRequest(MODEL, "x")))
    assert "candidateCount" not in fake.requests[0].body.get("generationConfig", {})


def test_429_is_transient_with_retry_after_header(fake: FakeGemini) -> None:
    """A 429 becomes a transient JudgeCallError carrying the Retry-After seconds."""
    fake.fault(429, retry_after="7")
    with pytest.raises(JudgeCallError) as info:
        asyncio.run(_judge(fake).generate(JudgeRequest(MODEL, "x")))
    assert (info.value.status, info.value.transient, info.value.retry_after) == (429, True, 7.0)


def test_400_is_permanent(fake: FakeGemini) -> None:
    """A 400 unrelated to candidates is not retryable and keeps the service's message."""
    fake.fault(400, message="prompt too long")
    with pytest.raises(JudgeCallError) as info:
        asyncio.run(_judge(fake).generate(JudgeRequest(MODEL, "x", num_samples=5)))
    assert not info.value.transient and not isinstance(info.value, CandidateCountUnsupported)
    assert "prompt too long" in str(info.value)


def test_candidate_count_refusal_is_recognised(fake: FakeGemini) -> None:
    """A model refusing candidateCount raises CandidateCountUnsupported."""
    fake.reject_candidate_count = {"solo-model"}
    with pytest.raises(CandidateCountUnsupported):
        asyncio.run(_judge(fake).generate(JudgeRequest("solo-model", "x", num_samples=2)))


def test_malformed_body_is_a_transient_error(fake: FakeGemini) -> None:
    """A garbled 200 body is reported as a malformed answer, worth a retry."""
    fake.malformed()
    with pytest.raises(JudgeCallError, match="malformed") as info:
        asyncio.run(_judge(fake).generate(JudgeRequest(MODEL, "x")))
    assert info.value.transient


def test_slow_answer_times_out(fake: FakeGemini) -> None:
    """An answer slower than the per-call timeout becomes a transient timeout error."""
    fake.slow(1.5)
    start = time.monotonic()
    with pytest.raises(JudgeCallError, match="timed out") as info:
        asyncio.run(_judge(fake, timeout=0.3).generate(JudgeRequest(MODEL, "x")))
    assert info.value.transient and time.monotonic() - start < 1.4


def test_invalid_config_is_reported_not_sent(fake: FakeGemini) -> None:
    """An unknown judge_model_config key fails before any request, naming the key."""
    with pytest.raises(JudgeCallError, match="temprature"):
        asyncio.run(_judge(fake).generate(JudgeRequest(MODEL, "x", {"temprature": 0})))
    assert fake.requests == []


def test_base_url_from_google_gemini_base_url(fake: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without an explicit base URL, google-genai's GOOGLE_GEMINI_BASE_URL redirects the backend."""
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    fake.script(Scripted(texts=["via env"]))
    reply = asyncio.run(GeminiJudge(api_key="k", timeout=5).generate(JudgeRequest(MODEL, "x")))
    assert reply.texts == ("via env",)


def test_one_judge_sends_each_requests_own_config(fake: FakeGemini) -> None:
    """Configs are built once per (config, samples) and reused, yet every request carries its own."""
    judge = _judge(fake)

    async def run() -> None:
        await judge.generate(JudgeRequest(MODEL, "a", {"temperature": 0.0}, 3))
        await judge.generate(JudgeRequest(MODEL, "b", {"temperature": 0.5}, 3))
        await judge.generate(JudgeRequest(MODEL, "c", {"temperature": 0.0}, 2))
        await judge.generate(JudgeRequest(MODEL, "d", {"temperature": 0.0}, 3))

    asyncio.run(run())
    assert [r.body["generationConfig"] for r in fake.requests] == [
        {"temperature": 0.0, "candidateCount": 3},
        {"temperature": 0.5, "candidateCount": 3},
        {"temperature": 0.0, "candidateCount": 2},
        {"temperature": 0.0, "candidateCount": 3},
    ]


def test_client_built_in_background_serves_several_loops(fake: FakeGemini) -> None:
    """The client built off the critical path answers concurrent first calls, and later event loops too."""
    judge = _judge(fake)

    async def burst() -> None:
        await asyncio.gather(*(judge.generate(JudgeRequest(MODEL, f"p{i}")) for i in range(5)))

    asyncio.run(burst())
    asyncio.run(burst())
    assert len(fake.requests) == 10


def test_a_cancelled_first_call_does_not_spoil_the_client(fake: FakeGemini) -> None:
    """Cancelling a call still waiting for the client being built leaves the client to the other calls."""
    judge = _judge(fake)

    async def run() -> tuple[str, ...]:
        first = asyncio.create_task(judge.generate(JudgeRequest(MODEL, "cancelled")))
        await asyncio.sleep(0)
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first
        return (await judge.generate(JudgeRequest(MODEL, "second"))).texts

    assert asyncio.run(run()) == ("fake answer 0",)


def test_client_setup_failure_is_a_config_error(fake: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client google-genai cannot build (unreadable SSL_CERT_FILE) fails every call as a ConfigError, never a
    retryable judge error, and sends nothing."""
    monkeypatch.setenv("SSL_CERT_FILE", "/nonexistent/ca.pem")
    judge = _judge(fake)
    for _ in range(2):
        with pytest.raises(JudgeSetupError, match="cannot set up the judge client") as info:
            asyncio.run(judge.generate(JudgeRequest(MODEL, "x")))
        assert isinstance(info.value, ConfigError) and not isinstance(info.value, JudgeCallError)
    assert fake.requests == []


def test_parse_retry_after_forms() -> None:
    """Retry-After accepts delta-seconds and HTTP dates; garbage is ignored."""
    now = time.time()
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after("12") == 12.0
    assert 28 <= (parse_retry_after(date, now=now) or 0) <= 31
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None
