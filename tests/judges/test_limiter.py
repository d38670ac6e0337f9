"""The run-wide concurrency limit."""

from __future__ import annotations

import asyncio

import pytest

from evalbot.criteria.final_response_match_v2 import parse_verdict
from evalbot.criteria.judged import MajorityRule
from evalbot.judges.base import JudgeRequest
from evalbot.judges.factory import build_stack
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.limiter import LimitedJudge, PrioritySlots
from tests.fakes.fake_gemini import FakeGemini, Recorded


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


def test_waiters_get_freed_slots_by_priority_then_arrival() -> None:
    """With the one slot taken, waiters arriving with priorities 2, 1, 0, 2, 0 are let in 0, 0, 1, 2, 2 (each
    priority in arrival order), one at a time; the slot is free again at the end."""
    slots = PrioritySlots(1)
    order: list[str] = []

    async def waiter(name: str, priority: int) -> None:
        await slots.acquire(priority)
        order.append(name)
        await asyncio.sleep(0)
        assert slots.free == 0
        slots.release()

    async def run() -> None:
        await slots.acquire(2)
        tasks = [asyncio.create_task(waiter(name, prio))
                 for name, prio in (("a2", 2), ("b1", 1), ("c0", 0), ("d2", 2), ("e0", 0))]
        await asyncio.sleep(0)  # all five are waiting
        assert order == []
        slots.release()
        await asyncio.gather(*tasks)

    asyncio.run(run())
    assert order == ["c0", "e0", "b1", "a2", "d2"]
    assert slots.free == 1


@pytest.mark.parametrize("held", [1, 3])
def test_a_cancelled_waiter_never_keeps_a_slot(held: int) -> None:
    """A waiter cancelled while waiting is skipped; one cancelled just as the slot was handed to it passes it on.
    Also with the limit lowered from ``held`` slots to 1 meanwhile (judges.limiter's adaptive limit): the first
    releases then let nobody in."""
    slots = PrioritySlots(held)
    served: list[str] = []

    async def waiter(name: str) -> None:
        await slots.acquire(0)
        served.append(name)
        slots.release()

    async def run() -> None:
        for _ in range(held):
            await slots.acquire(0)
        gone, handed, last = (asyncio.create_task(waiter(n)) for n in ("gone", "handed", "last"))
        await asyncio.sleep(0)
        slots.set_limit(1)
        gone.cancel()
        await asyncio.sleep(0)
        for _ in range(held - 1):
            slots.release()  # still at the lowered limit: nobody is let in
        assert slots.held == 1 and not served
        slots.release()  # the slot is handed over at once, skipping the cancelled waiter: it goes to "handed"...
        handed.cancel()  # ...which is cancelled before it runs: the slot must reach "last"
        await asyncio.wait_for(asyncio.gather(gone, handed, last, return_exceptions=True), 10)  # a lost slot hangs

    asyncio.run(run())
    assert served == ["last"]
    assert slots.free == 1 and slots.held == 0


_VALID = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'
_INVALID = '{"reasoning": "a fact differs", "is_the_agent_response_valid": "invalid"}'


def test_a_slot_freed_by_a_first_round_waits_one_turn_for_its_second_round() -> None:
    """Released by a request that may be followed, the slot goes to the best waiter on the loop's next turn: a
    second round asked right after its first round returned wins it over a waiter that came earlier."""
    slots = PrioritySlots(1)
    order: list[str] = []

    async def waiter(name: str, priority: int) -> None:
        await slots.acquire(priority)
        order.append(name)
        slots.release()

    async def run() -> None:
        await slots.acquire(0)
        earlier = asyncio.create_task(waiter("earlier", 2))
        await asyncio.sleep(0)
        slots.release(followed=True)
        await waiter("second round", 1)  # asked in the same turn, without waiting
        await earlier

    asyncio.run(run())
    assert order == ["second round", "earlier"]
    assert slots.free == 1


def test_a_vote_rounds_go_before_requests_that_waited_longer(fake: FakeGemini) -> None:
    """Through the run's stack with one slot: a sequential vote's first round passes the three single requests
    queued before it, and its second round (its first round split 1-2) passes them too, as soon as it is asked."""
    fake.latency = 0.05

    def respond(prompt: str, index: int, request: Recorded) -> str:
        return _INVALID if "vote" in prompt and index == 0 and request.candidate_count == 3 else _VALID

    fake.responder = respond
    stack = build_stack(GeminiJudge(api_key="k", base_url=fake.url, timeout=5), concurrency=1)

    async def run() -> tuple[str, ...]:
        first = asyncio.create_task(stack.top.generate(JudgeRequest("m", "single 0")))
        await asyncio.sleep(0.01)  # it holds the only slot
        singles = [stack.top.generate(JudgeRequest("m", f"single {i}")) for i in (1, 2, 3)]
        vote = stack.top.generate(JudgeRequest("m", "vote", num_samples=5, stop=MajorityRule(parse_verdict)))
        *_, voted = await asyncio.gather(first, *singles, vote)
        return voted.texts

    texts = asyncio.run(run())
    assert len(texts) == 5 and texts.count(_INVALID) == 1
    asked = [(r.prompt.split()[-1] if "single" in r.prompt else "vote", r.candidate_count) for r in fake.requests]
    assert asked == [("0", 1), ("vote", 3), ("vote", 2), ("1", 1), ("2", 1), ("3", 1)]
