"""The run-wide cap on judge requests (issue 24, item 6): derived from the cases, printed once when hit."""

from __future__ import annotations

import asyncio
import logging

import pytest

from evalbot.judges.base import JudgeCallError, JudgeRequest
from evalbot.judges.factory import judge_from_environ
from evalbot.pipeline import BASE_REQUESTS, REQUESTS_PER_CASE_CRITERION, load_inputs, request_cap
from tests.fakes.fake_gemini import FakeGemini


def test_requests_past_the_cap_fail_and_the_cap_is_printed_once(fake: FakeGemini,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    stack, _ = judge_from_environ({"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": fake.url})
    assert stack is not None
    stack.cap_requests(2, "2 for this test")

    async def ask(prompt: str) -> str:
        try:
            await stack.generate(JudgeRequest("gemini-2.5-flash", prompt, num_samples=1))
        except JudgeCallError as exc:
            return str(exc)
        return "answered"

    with caplog.at_level(logging.WARNING, logger="evalbot"):
        results = [asyncio.run(ask(f"p{i}")) for i in range(4)]
    assert results[:2] == ["answered", "answered"] and len(fake.requests) == 2
    assert results[2] == results[3] == "judge request cap reached: 2 requests for this run (2 for this test)"
    assert [r.getMessage() for r in caplog.records if "cap reached" in r.getMessage()] == [
        "evalbot: judge request cap reached: 2 requests for this run (2 for this test); the judged verdicts still "
        "to ask are not_evaluated"]


def test_the_cap_is_derived_from_the_cases() -> None:
    inputs = load_inputs(["examples/evals"])
    cap, why = request_cap(inputs)
    units = sum(len(es.cases) * max(1, len(es.config.criteria)) for es in inputs.eval_sets)
    assert units > 0 and cap == BASE_REQUESTS + units * REQUESTS_PER_CASE_CRITERION
    assert f"{units:,} of them" in why
