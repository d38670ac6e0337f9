"""Token usage and estimated cost accounting."""

from __future__ import annotations

import asyncio

import pytest

from evalbot.judges.base import JudgeRequest, Usage
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.usage import MeteredJudge, UsageLedger, estimated_cost, format_usage, price
from tests.fakes.fake_gemini import FakeGemini


def test_price_uses_longest_prefix() -> None:
    """Flash-lite is not priced as flash; versioned names and models/ prefixes resolve; unknown is None."""
    assert price("gemini-2.5-flash-lite") == (0.10, 0.40)
    assert price("models/gemini-2.5-flash-001") == (0.30, 2.50)
    assert price("my-proxy-model") is None


def test_estimated_cost() -> None:
    """Cost = input and output tokens times their prices per million."""
    assert estimated_cost(Usage(1_000_000, 100_000), "gemini-2.5-flash") == pytest.approx(0.30 + 0.25)
    assert estimated_cost(Usage(10, 10), "unknown") is None


def test_ledger_per_criterion_and_total(fake: FakeGemini) -> None:
    """Each criterion's usage is booked separately and summed into the total."""
    ledger = UsageLedger()
    judge = MeteredJudge(GeminiJudge(api_key="k", base_url=fake.url, timeout=5), ledger)

    async def run() -> None:
        await judge.generate(JudgeRequest("gemini-2.5-flash", "a" * 400, purpose="final_response_match_v2"))
        await judge.generate(JudgeRequest("gemini-2.5-flash", "b" * 40, num_samples=2, purpose="hallucinations_v1"))
        await judge.generate(JudgeRequest("gemini-2.5-flash", "c" * 40, purpose="hallucinations_v1"))

    asyncio.run(run())
    summary = ledger.summary()
    frm = summary["per_criterion"]["final_response_match_v2"]
    hal = summary["per_criterion"]["hallucinations_v1"]
    assert frm["input_tokens"] == 101 and frm["requests"] == 1
    assert hal["requests"] == 2 and hal["input_tokens"] == 22
    total = summary["total"]
    assert total["input_tokens"] == 123 and total["requests"] == 3
    assert total["estimated_cost_usd"] == pytest.approx(frm["estimated_cost_usd"] + hal["estimated_cost_usd"])


def test_unknown_price_makes_cost_unknown() -> None:
    """One unpriced model makes the total cost None rather than an undercount."""
    ledger = UsageLedger()
    ledger.record("a", "gemini-2.5-flash", Usage(100, 100, 1))
    ledger.record("b", "custom-model", Usage(100, 100, 1))
    summary = ledger.summary()
    assert summary["per_criterion"]["a"]["estimated_cost_usd"] is not None
    assert summary["per_criterion"]["b"]["estimated_cost_usd"] is None
    assert summary["total"]["estimated_cost_usd"] is None


def test_format_usage_lines() -> None:
    """The CLI text names each criterion, the total, the cached answers and the estimated cost."""
    ledger = UsageLedger()
    ledger.record("final_response_match_v2", "gemini-2.5-flash", Usage(1000, 200, 2, 3))
    text = format_usage(ledger.summary())
    first, total = text.splitlines()
    assert first.startswith("final_response_match_v2: 2 requests, 1,000 input + 200 output tokens, 3 answers")
    assert total.startswith("judge total:") and "~$0.0008" in total
