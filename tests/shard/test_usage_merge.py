"""Judge usage of the parts merged as the one run's ledger would have reported it."""

from __future__ import annotations

import pytest

from evalbot.judges.base import Usage
from evalbot.judges.usage import UsageLedger
from evalbot.results import CacheUse
from evalbot.shard.merge import merge_usage

BOOKINGS = [
    ("final_response_match_v2", "gemini-2.5-flash", Usage(1234, 567, 3, 0)),
    ("hallucinations_v1", "gemini-2.5-pro", Usage(9876, 5432, 7, 2)),
    ("final_response_match_v2", "gemini-2.5-flash", Usage(111, 222, 1, 4)),
    ("rubric_based_tool_use_quality_v1", "unpriced-model", Usage(10, 20, 1, 0)),
]


def _ledger(bookings: list[tuple[str, str, Usage]]) -> UsageLedger:
    ledger = UsageLedger()
    for purpose, model, usage in bookings:
        ledger.record(purpose, model, usage)
    return ledger


def test_single_model_criteria_merge_exactly() -> None:
    whole = _ledger(BOOKINGS).summary()
    first, second = _ledger(BOOKINGS[::2]).summary(), _ledger(BOOKINGS[1::2]).summary()
    first.cache = CacheUse(directory="/c", hits=3, writes=1)
    second.cache = CacheUse(directory="/c", hits=2, writes=5)
    second.retries = 4
    merged = merge_usage([first, None, second])
    assert merged is not None
    assert merged.model_dump(exclude={"cache", "retries"}) == whole.model_dump(exclude={"cache", "retries"})
    assert merged.cache == CacheUse(directory="/c", hits=5, writes=6) and merged.retries == 4
    assert merged.total.estimated_cost_usd is None  # an unpriced model makes the total unknown, as in one run


def test_criterion_asking_two_models_adds_rows() -> None:
    two = [("c", "gemini-2.5-flash", Usage(100, 10, 1, 0)), ("c", "gemini-2.5-pro", Usage(50, 5, 1, 0))]
    merged = merge_usage([_ledger(two[:1]).summary(), _ledger(two[1:]).summary(), _ledger(two).summary()])
    assert merged is not None
    row = merged.per_criterion["c"]
    assert (row.input_tokens, row.requests, row.models) == (300, 4, ["gemini-2.5-flash", "gemini-2.5-pro"])
    assert merged.total.input_tokens == 300 and merged.per_model["gemini-2.5-pro"].input_tokens == 100
    assert merge_usage([None, None]) is None


def test_parts_priced_by_the_policys_table_keep_their_costs() -> None:
    """A part priced with the gate policy's prices (or an unpriced server) is not repriced from the shipped table."""
    from evalbot.formats.prices import Price, shipped_prices

    table = shipped_prices().extended({"gemini-2.5-flash": Price(1.0, 2.0)})
    parts = []
    for bookings in (BOOKINGS[:1], BOOKINGS[2:3]):
        ledger = _ledger(bookings)
        ledger.prices = table
        parts.append(ledger.summary())
    merged = merge_usage(parts)
    assert merged is not None
    tokens_in, tokens_out = 1234 + 111, 567 + 222
    assert merged.total.estimated_cost_usd == pytest.approx((tokens_in * 1.0 + tokens_out * 2.0) / 1e6)
    assert merged.prices == table.note()
