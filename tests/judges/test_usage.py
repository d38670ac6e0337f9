"""Token usage and estimated cost accounting."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from evalbot.formats.prices import shipped_prices
from evalbot.judges.base import JudgeRequest, Usage
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.usage import MeteredJudge, UsageLedger, estimated_cost, format_usage
from evalbot.results import CacheUse, JudgeUsage, Report, UsageRow
from tests.fakes.fake_gemini import FakeGemini


def price(model: str) -> tuple[float, float] | None:
    found = shipped_prices().price(model)
    return None if found is None else (found.input, found.output)


def test_price_of_a_name_or_a_version_of_it() -> None:
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
    frm = summary.per_criterion["final_response_match_v2"]
    hal = summary.per_criterion["hallucinations_v1"]
    assert frm.input_tokens == 101 and frm.requests == 1 and frm.models == ["gemini-2.5-flash"]
    assert hal.requests == 2 and hal.input_tokens == 22
    total = summary.total
    assert total.input_tokens == 123 and total.requests == 3
    assert frm.estimated_cost_usd is not None and hal.estimated_cost_usd is not None
    assert total.estimated_cost_usd == pytest.approx(frm.estimated_cost_usd + hal.estimated_cost_usd)
    assert summary.per_model == {"gemini-2.5-flash": total}


def test_unknown_price_makes_cost_unknown() -> None:
    """One unpriced model makes the total cost None rather than an undercount."""
    ledger = UsageLedger()
    ledger.record("a", "gemini-2.5-flash", Usage(100, 100, 1))
    ledger.record("b", "custom-model", Usage(100, 100, 1))
    summary = ledger.summary()
    assert summary.per_criterion["a"].estimated_cost_usd is not None
    assert summary.per_criterion["b"].estimated_cost_usd is None
    assert summary.total.estimated_cost_usd is None
    assert summary.per_model["gemini-2.5-flash"].estimated_cost_usd == summary.per_criterion["a"].estimated_cost_usd
    assert summary.per_model["custom-model"].estimated_cost_usd is None


def test_format_usage_lines() -> None:
    """The CLI text names each criterion, the total, the cached answers and the estimated cost."""
    ledger = UsageLedger()
    ledger.record("final_response_match_v2", "gemini-2.5-flash", Usage(1000, 200, 2, 3))
    text = format_usage(ledger.summary())
    first, total = text.splitlines()
    assert first.startswith("final_response_match_v2: 2 requests, 1,000 input + 200 output tokens, 3 answers")
    assert total.startswith("judge total:") and "~$0.0008" in total


OLD_USAGE = {  # Report.usage as written before it was typed (the bundled example, replayed from its cache)
    "per_criterion": {"final_response_match_v2": {"input_tokens": 0, "output_tokens": 0, "requests": 0,
                                                  "cached_samples": 10, "models": ["gemini-2.5-flash"],
                                                  "estimated_cost_usd": 0.0}},
    "total": {"input_tokens": 0, "output_tokens": 0, "requests": 0, "cached_samples": 10, "estimated_cost_usd": 0.0},
    "prices": "estimated from Gemini list prices as of 2025-09",
    "cache": {"directory": "examples/judge-cache", "hits": 10, "writes": 0},
}


def test_summary_json_keeps_the_untyped_keys_and_order() -> None:
    """The typed summary serializes to the dict it replaced, key order included; cache and retries appear only when
    set, and per_model only when it cannot be derived (one criterion, one model here)."""
    ledger = UsageLedger()
    ledger.record("final_response_match_v2", "gemini-2.5-flash", Usage(cached_samples=10))
    summary = ledger.summary()
    assert list(summary.model_dump(mode="json")) == ["per_criterion", "total", "prices"]
    summary.cache = CacheUse(directory="examples/judge-cache", hits=10)
    dumped = json.loads(summary.model_dump_json())
    old = {**OLD_USAGE, "prices": shipped_prices().note()}  # the note names the shipped table's date now
    assert dumped == old and json.dumps(dumped) == json.dumps(old)
    summary.retries = 0
    assert list(summary.model_dump(mode="json"))[-1] == "retries"


def test_old_report_usage_loads_and_derives_rows_per_model() -> None:
    """A report file written before the typing loads unchanged, with its rows per model derived."""
    report = Report.model_validate_json(json.dumps({"usage": OLD_USAGE}))
    assert report.usage is not None
    assert report.usage.per_model == {"gemini-2.5-flash": UsageRow(cached_samples=10, estimated_cost_usd=0.0)}
    assert json.loads(report.model_dump_json())["usage"] == OLD_USAGE


def test_rows_per_model_are_written_when_a_criterion_asked_two_models() -> None:
    """Two models behind one criterion cannot be told apart in per_criterion, so per_model is written and read back."""
    ledger = UsageLedger()
    ledger.record("c", "gemini-2.5-flash", Usage(1000, 100, 1))
    ledger.record("c", "gemini-2.5-pro", Usage(2000, 200, 1))
    ledger.record("d", "gemini-2.5-pro", Usage(10, 10, 1))
    summary = ledger.summary()
    assert summary.per_criterion["c"].models == ["gemini-2.5-flash", "gemini-2.5-pro"]
    pro = summary.per_model["gemini-2.5-pro"]
    assert (pro.input_tokens, pro.requests) == (2010, 2)
    assert pro.estimated_cost_usd == pytest.approx((2010 * 1.25 + 210 * 10.0) / 1e6)
    dumped = summary.model_dump(mode="json")
    assert list(dumped) == ["per_criterion", "total", "prices", "per_model"]
    assert JudgeUsage.model_validate(dumped) == summary


def test_hostile_usage_is_refused_with_its_location() -> None:
    """Non-numbers, unknown keys and nesting where a number belongs are refused when a report is read."""
    for usage, loc in (({"total": {"requests": "<b>9</b>"}}, ("usage", "total", "requests")),
                       ({"per_criterion": {"c": {"models": "m"}}}, ("usage", "per_criterion", "c", "models")),
                       ({"total": {"input_tokens": {"a": [1]}}}, ("usage", "total", "input_tokens")),
                       ({"x": "not a mapping"}, ("usage", "x"))):
        with pytest.raises(ValidationError) as info:
            Report.model_validate_json(json.dumps({"usage": usage}))
        assert info.value.errors()[0]["loc"] == loc
