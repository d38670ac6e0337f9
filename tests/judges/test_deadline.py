"""Bounded judge time: a judge that accepts connections and never answers costs at most the run-wide deadline,
however many calls hang; a timeout is retried once; verdicts obtained before the deadline are kept."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from evalbot.criteria.base import BuildContext
from evalbot.errors import RetryPolicy
from evalbot.judges.base import JudgeCallError, JudgeReply, JudgeRequest, JudgeTimeout
from evalbot.judges.deadline import DEFAULT_DEADLINE, DeadlineJudge
from evalbot.judges.factory import DEFAULT_TIMEOUT, build_stack
from evalbot.judges.gemini import DEFAULT_TIMEOUT as GEMINI_TIMEOUT
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.retry import RetryingJudge
from evalbot.pipeline import evaluate
from tests.fakes.fake_gemini import FakeGemini, Recorded

DATA = Path(__file__).parents[1] / "e2e" / "data"
VALID = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'


def test_default_bound_of_a_hung_judge_is_the_deadline() -> None:
    """With the defaults, a hung call costs one 60 s timeout and one retry (not 6 × 120 s), and the whole run's
    judge time is capped by the 240 s deadline however many calls hang (4 minutes)."""
    policy = RetryPolicy()
    assert DEFAULT_TIMEOUT == GEMINI_TIMEOUT == 60.0 and policy.timeout_attempts == 2
    per_call = policy.timeout_attempts * DEFAULT_TIMEOUT + policy.max_delay  # worst case of one hung call alone
    assert per_call <= 150.0
    assert DEFAULT_DEADLINE == 240.0  # the run-wide cap: every outstanding call is cut off at that point


def test_timeouts_are_retried_once_other_transient_errors_more() -> None:
    """A call that keeps timing out is tried timeout_attempts (2) times; a 503 up to ``attempts``."""
    tries: list[str] = []

    class Hung:
        async def generate(self, request: JudgeRequest) -> JudgeReply:
            tries.append("t")
            raise JudgeTimeout("judge call timed out after 60 s", transient=True)

    async def no_sleep(seconds: float) -> None:
        return None

    judge = RetryingJudge(Hung(), RetryPolicy(), sleep=no_sleep)
    with pytest.raises(JudgeCallError, match=r"timed out after 60 s \(gave up after 2 attempts\)"):
        asyncio.run(judge.generate(JudgeRequest("m", "p")))
    assert len(tries) == 2


def test_deadline_cuts_off_hanging_calls_and_keeps_the_others() -> None:
    """A fake judge that never answers prompts about refunds and answers the others at once: with a 1.5 s deadline
    the run ends within seconds, the hung verdicts are not_evaluated with the deadline as reason, the others kept."""

    def respond(prompt: str, index: int, request: Recorded) -> str:
        if "refund" in prompt.lower():
            time.sleep(20)  # accepts the connection, never answers in time
        return VALID

    with FakeGemini(responder=respond) as fake:
        backend = GeminiJudge(api_key="k", base_url=fake.url, timeout=0.5)
        stack = build_stack(backend, retry=RetryPolicy(base_delay=0.01, max_delay=0.02), deadline=1.5)
        started = time.perf_counter()
        report = evaluate([str(DATA / "evals")], actuals=[str(DATA / "actuals" / "good.json")],
                          ctx=BuildContext(judge=stack))
        elapsed = time.perf_counter() - started
    metrics = {c.eval_id: c.metrics["final_response_match_v2"] for c in report.eval_sets[0].cases}
    hung = [m for m in metrics.values() if m.status == "not_evaluated"]
    kept = [m for m in metrics.values() if m.status == "passed"]
    assert hung and kept, {k: (m.status, m.per_invocation[0].reason) for k, m in metrics.items()}
    reasons = {p.reason or "" for m in hung for p in m.per_invocation}
    assert all("timed out after 0.5 s" in r or "judge deadline of 1.5 s" in r for r in reasons), reasons
    assert elapsed < 1.5 + 4.0  # the deadline plus scoring overhead, not 2 × 0.5 s per hung call × retries


def test_after_the_deadline_new_calls_fail_at_once() -> None:
    """Once the deadline has passed, a call is refused without touching the network."""
    clock = iter([0.0, 5.0])
    called: list[int] = []

    class Fast:
        async def generate(self, request: JudgeRequest) -> JudgeReply:
            called.append(1)
            return JudgeReply(("ok",))

    judge = DeadlineJudge(Fast(), 2.0, clock=lambda: next(clock))
    assert asyncio.run(judge.generate(JudgeRequest("m", "p"))).texts == ("ok",)
    with pytest.raises(JudgeCallError, match="judge deadline of 2 s for the whole run reached"):
        asyncio.run(judge.generate(JudgeRequest("m", "p")))
    assert called == [1] and judge.expired == 1
