"""The adaptive judge concurrency limit (judges/limiter.py): halved on HTTP 429 or a timeout, once per round of
requests in flight, grown back by one per limit's worth of answers in a row; the configured concurrency is the
maximum. Slots under a changing limit, the real google-genai client against the fake's quota mode, the report and
console note, and hostile servers (every request refused, huge Retry-After)."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from evalbot.action.settings import ActionInputs
from evalbot.cli.commands import build_parser
from evalbot.criteria.base import BuildContext
from evalbot.criteria.final_response_match_v2 import parse_verdict
from evalbot.criteria.judged import MajorityRule
from evalbot.errors import RetryPolicy
from evalbot.judges.base import JudgeCallError, JudgeReply, JudgeRequest, JudgeTimeout
from evalbot.judges.factory import JudgeStack, build_stack
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.limiter import DEFAULT_CONCURRENCY, AdaptiveLimit, LimitedJudge, PrioritySlots
from evalbot.judges.usage import format_usage
from evalbot.pipeline import evaluate
from evalbot.render.comment import usage_view
from evalbot.render.console import render_text
from evalbot.results import ConcurrencyCuts, JudgeUsage
from evalbot.shard.merge import merge_usage
from tests.fakes.fake_gemini import FakeGemini, Recorded

FAST = RetryPolicy(base_delay=0.02, max_delay=0.1)
"""The default policy's attempts and caps, with short backoff waits (the tests run against a loopback server)."""


# ---------------------------------------------------------------------------------------------- slots, changing limit
def test_a_lowered_limit_takes_no_slot_back_and_serves_every_waiter_in_order() -> None:
    """Four slots held, five waiters, the limit lowered to 1: the first three releases let nobody in, then the waiters
    go one at a time in priority order, never two holding a slot; nothing is left held."""
    slots = PrioritySlots(4)
    order: list[str] = []
    held_when_served: list[int] = []

    async def waiter(name: str, priority: int) -> None:
        await slots.acquire(priority)
        order.append(name)
        held_when_served.append(slots.held)
        await asyncio.sleep(0)
        slots.release()

    async def run() -> None:
        for _ in range(4):
            await slots.acquire(2)
        tasks = [asyncio.create_task(waiter(n, p)) for n, p in (("a2", 2), ("b1", 1), ("c0", 0), ("d2", 2), ("e0", 0))]
        await asyncio.sleep(0)
        slots.set_limit(1)
        for _ in range(3):
            slots.release()
            await asyncio.sleep(0)
        assert order == [] and slots.held == 1 and slots.free == 0
        slots.release()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)  # a lost waiter hangs

    asyncio.run(run())
    assert order == ["c0", "e0", "b1", "a2", "d2"]
    assert held_when_served == [1] * 5
    assert slots.held == 0 and slots.free == 1


def test_a_raised_limit_lets_waiters_in_at_once_by_priority() -> None:
    """One slot held, four waiters: raising the limit to 3 lets the two best waiters in without any release."""
    slots = PrioritySlots(1)
    order: list[str] = []

    async def waiter(name: str, priority: int) -> None:
        await slots.acquire(priority)
        order.append(name)

    async def run() -> None:
        await slots.acquire(2)
        tasks = [asyncio.create_task(waiter(n, p)) for n, p in (("x2", 2), ("y1", 1), ("z2", 2), ("w0", 0))]
        await asyncio.sleep(0)
        slots.set_limit(3)
        await asyncio.sleep(0)
        assert order == ["w0", "y1"] and slots.held == 3
        for _ in range(3):
            slots.release()
        await asyncio.wait_for(asyncio.gather(*tasks), 10)
        assert order == ["w0", "y1", "x2", "z2"]

    asyncio.run(run())


def test_a_slot_handed_over_just_before_a_cut_is_given_back() -> None:
    """Two slots held and one waiter: a release hands the slot to the waiter, and the limit is lowered to 1 before the
    waiter runs; it does not start above the new limit but waits again, and gets in once the other slot frees."""
    slots = PrioritySlots(2)
    started: list[int] = []

    async def waiter() -> None:
        await slots.acquire(2)
        started.append(slots.held)
        slots.release()

    async def run() -> None:
        await slots.acquire(2)
        await slots.acquire(2)
        task = asyncio.create_task(waiter())
        await asyncio.sleep(0)
        slots.release()  # handed over to the waiter, which has not run yet
        slots.set_limit(1)
        for _ in range(3):
            await asyncio.sleep(0)
        assert started == [] and slots.held == 1
        slots.release()
        await asyncio.wait_for(task, 10)

    asyncio.run(run())
    assert started == [1] and slots.held == 0


def test_a_deferred_hand_over_respects_a_limit_lowered_meanwhile() -> None:
    """A first round's slot is handed over on the next turn; if the limit was lowered in between, the freed slot only
    counts down the held ones, and the waiter gets in when the other slot frees."""
    slots = PrioritySlots(2)
    order: list[str] = []

    async def waiter(name: str) -> None:
        await slots.acquire(1)
        order.append(name)
        slots.release()

    async def run() -> None:
        await slots.acquire(0)
        await slots.acquire(2)
        task = asyncio.create_task(waiter("second round"))
        await asyncio.sleep(0)
        slots.release(followed=True)
        slots.set_limit(1)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert order == [] and slots.held == 1
        slots.release()
        await asyncio.wait_for(task, 10)

    asyncio.run(run())
    assert order == ["second round"] and slots.held == 0


def test_the_limit_never_goes_below_one() -> None:
    """set_limit(0) keeps one slot: a waiter is still served."""
    slots = PrioritySlots(3)
    slots.set_limit(0)
    assert slots.limit == 1

    async def run() -> None:
        await slots.acquire(2)
        task = asyncio.create_task(slots.acquire(2))
        await asyncio.sleep(0)
        assert not task.done()
        slots.release()
        await asyncio.wait_for(task, 10)

    asyncio.run(run())


# ---------------------------------------------------------------------------------------------- the rule itself
def test_halved_once_per_round_never_below_one() -> None:
    """32 -> 16 on a refusal; another refusal of a request started before that cut does not cut again; one started
    after it does; the limit stops at 1, where a refusal is no cut."""
    limit = AdaptiveLimit(32)
    assert (limit.current, limit.lowest, limit.use()) == (32, 32, None)
    assert limit.cut(0) and limit.current == 16
    assert not limit.cut(0) and limit.current == 16  # sent under the old limit: says nothing new
    assert limit.cut(1, timeout=True) and limit.current == 8
    for _ in range(10):
        limit.cut(limit.cuts)
    assert limit.current == 1 and limit.cuts == 5 and not limit.cut(limit.cuts)
    assert limit.use() == ConcurrencyCuts(maximum=32, lowest=1, cuts=5, after_timeouts=1)


def test_grows_by_one_per_limit_of_answers_in_a_row_up_to_the_maximum() -> None:
    """At 4 of 6: four answers in a row make 5, five more make 6, and it stays at 6; a refusal breaks the run."""
    limit = AdaptiveLimit(6)
    limit.cut(0)
    limit.cut(1)
    assert limit.current == 1
    assert limit.succeeded() and limit.current == 2
    limit.succeeded()
    assert limit.succeeded() and limit.current == 3
    assert [limit.succeeded() for _ in range(3)] == [False, False, True] and limit.current == 4
    limit.succeeded()
    limit.succeeded()
    assert not limit.cut(0)  # a stale refusal: no cut, but the answers in a row start again
    assert [limit.succeeded() for _ in range(4)] == [False, False, False, True] and limit.current == 5
    assert [limit.succeeded() for _ in range(5)] == [False] * 4 + [True] and limit.current == 6
    assert not any(limit.succeeded() for _ in range(50)) and limit.current == 6
    assert limit.lowest == 1


def test_the_default_maximum_is_32_for_the_cli_and_the_action() -> None:
    """The configured concurrency is the maximum; 32 unless set, in the CLI, action.yml and the Action's inputs."""
    assert DEFAULT_CONCURRENCY == 32
    judge = LimitedJudge(GeminiJudge(api_key="k", base_url="http://127.0.0.1:9"))
    assert judge.limit == judge.current == 32
    args = build_parser().parse_args(["run", "evals"])
    action = YAML(typ="safe").load((Path(__file__).parents[2] / "action.yml").read_text(encoding="utf-8"))
    assert args.judge_concurrency == ActionInputs.model_fields["judge_concurrency"].default == 32
    assert action["inputs"]["judge-concurrency"]["default"] == "32"


# ---------------------------------------------------------------------------------------------- real client, quota
@dataclass
class Watch:
    """Passes requests to ``inner`` (under the limiter) and records, as each attempt starts, the calls in flight and
    the limit in force; ``limiter`` is set once the stack is built."""

    inner: GeminiJudge
    limiter: LimitedJudge | None = None
    starts: list[tuple[int, int]] = field(default_factory=list)

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        assert self.limiter is not None
        self.starts.append((self.limiter.in_flight, self.limiter.current))
        return await self.inner.generate(request)


def _watched_stack(fake: FakeGemini, concurrency: int, retry: RetryPolicy = FAST) -> tuple[JudgeStack, Watch]:
    watch = Watch(GeminiJudge(api_key="k", base_url=fake.url, timeout=10))
    stack = build_stack(watch, concurrency=concurrency, retry=retry)
    watch.limiter = stack.limiter
    return stack, watch


def _overlapping_at_arrival(requests: list[Recorded], later: list[Recorded]) -> int:
    """The most requests the server was answering at once when one of ``later`` arrived (its own interval
    included): a request's answer is sent after ``finished`` is set, so overlapping intervals held slots together."""
    return max((sum(1 for r in requests if r.started <= x.started < r.finished or r is x) for x in later), default=0)


def _verdict_responder(prompt: str, index: int, request: Recorded) -> str:
    """Prompts marked SPLITVOTE split a vote's first round (valid, invalid, invalid) and end invalid; others valid."""
    word = "invalid" if "SPLITVOTE" in prompt and index > 0 else "valid"
    return json.dumps({"reasoning": f"sample {index}", "is_the_agent_response_valid": word})


def test_a_small_quota_lowers_the_limit_and_every_request_is_answered(fake: FakeGemini) -> None:
    """Real google-genai client, fake server with a quota of 3 requests in flight, limit 16, 48 requests (majority
    votes with sequential sampling): every request is answered as without the quota; the limit was halved and went
    down to 2 or 3; no attempt ever started above the limit in force; once the requests sent under the first limit
    were answered, the server never again saw more than the first lowered limit (8) at once."""
    fake.latency = 0.03
    fake.responder = _verdict_responder

    def requests() -> list[JudgeRequest]:
        return [JudgeRequest("m", f"case {i} {'SPLITVOTE' if i % 2 else 'plain'}", num_samples=5,
                             stop=MajorityRule(parse_verdict)) for i in range(48)]

    async def run(stack: JudgeStack) -> list[tuple[str, ...]]:
        return [r.texts for r in await asyncio.gather(*(stack.generate(q) for q in requests()))]

    free, unlimited = _watched_stack(fake, 16)
    expected = asyncio.run(run(free))
    assert free.limiter is not None and free.limiter.adaptive.cuts == 0
    assert max(in_flight for in_flight, _ in unlimited.starts) == 16
    assert sum(r.candidate_count == 2 for r in fake.requests) == 24  # the split votes' second rounds
    fake.reset()
    fake.quota = 3
    fake.quota_retry_delay = "0.01s"
    stack, watch = _watched_stack(fake, 16)
    got = asyncio.run(asyncio.wait_for(run(stack), 60))
    assert got == expected
    limiter = stack.limiter
    assert limiter is not None
    adaptive = limiter.adaptive
    refused = [r for r in fake.requests if r.status == 429]
    assert refused and adaptive.cuts >= 2 and adaptive.lowest in (1, 2, 3), adaptive
    assert all(in_flight <= limit for in_flight, limit in watch.starts), watch.starts
    first_refusal = min(r.finished for r in refused)
    drained = max(r.finished for r in fake.requests if r.started <= first_refusal)
    later = [r for r in fake.requests if r.started > drained]
    assert later and _overlapping_at_arrival(fake.requests, later) <= 8
    usage = stack.usage_summary()
    assert usage.concurrency == adaptive.use() and usage.retries == len(refused)
    assert f"judge rate limited: concurrency lowered to {adaptive.lowest} of 16 ({adaptive.cuts} times)" in (
        format_usage(usage))


def test_the_limit_grows_back_to_the_maximum_once_the_quota_is_lifted(fake: FakeGemini) -> None:
    """Quota 2 under a maximum of 8: the limit comes down; with the quota lifted, 150 more requests bring it back to
    8, and 8 are in flight again."""
    fake.latency = 0.01
    fake.quota = 2
    stack, watch = _watched_stack(fake, 8)

    async def run(prefix: str, count: int) -> None:
        await asyncio.gather(*(stack.generate(JudgeRequest("m", f"{prefix} {i}")) for i in range(count)))

    asyncio.run(asyncio.wait_for(run("limited", 24), 60))
    limiter = stack.limiter
    assert limiter is not None and limiter.adaptive.cuts >= 2 and limiter.adaptive.lowest <= 2
    fake.reset()
    fake.quota = None
    asyncio.run(asyncio.wait_for(run("free", 150), 60))
    assert limiter.current == 8
    assert max(in_flight for in_flight, _ in watch.starts[-40:]) == 8
    assert all(in_flight <= limit for in_flight, limit in watch.starts)


def test_a_rate_limited_run_gives_the_same_verdicts_and_says_so(tmp_path: Path, fake: FakeGemini) -> None:
    """A whole run (pipeline.evaluate, 30 cases judged by final_response_match_v2 with 5 samples) against a quota of
    2: the same statuses and scores as unlimited, and the console and comment say the judge was rate limited."""
    cases, actuals = [], {}
    for i in range(30):
        user = {"role": "user", "parts": [{"text": f"question {i}"}]}
        word = "SPLITVOTE" if i % 3 == 0 else "fine"
        cases.append({"eval_id": f"c{i}", "conversation": [{"invocation_id": f"i{i}", "user_content": user,
                      "final_response": {"role": "model", "parts": [{"text": f"reference {i}"}]}}]})
        actuals[f"c{i}"] = [{"invocation_id": f"i{i}", "user_content": user,
                             "final_response": {"role": "model", "parts": [{"text": f"answer {i} {word}"}]}}]
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "s.evalset.json").write_text(json.dumps({"eval_set_id": "s", "eval_cases": cases}))
    (tmp_path / "evals" / "test_config.json").write_text(json.dumps({"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"num_samples": 5}}}}))
    (tmp_path / "actuals.json").write_text(json.dumps(actuals))
    fake.latency = 0.02
    fake.responder = _verdict_responder

    def run() -> tuple[dict[str, tuple[str, float | None]], JudgeUsage | None, str]:
        stack = build_stack(GeminiJudge(api_key="k", base_url=fake.url, timeout=10), concurrency=16, retry=FAST)
        report = evaluate([str(tmp_path / "evals")], actuals=[str(tmp_path / "actuals.json")],
                          ctx=BuildContext(judge=stack))
        metrics = {c.eval_id: c.metrics["final_response_match_v2"] for c in report.eval_sets[0].cases}
        return {k: (m.status, m.score) for k, m in metrics.items()}, report.usage, render_text(report)

    unlimited, usage, text = run()
    assert usage is not None and usage.concurrency is None and "rate limited" not in text
    assert sorted({s for s, _ in unlimited.values()}) == ["failed", "passed"]
    fake.reset()
    fake.quota = 2
    limited, usage, text = run()
    assert limited == unlimited
    assert usage is not None and usage.concurrency is not None and usage.concurrency.maximum == 16
    note = usage.concurrency.note()
    assert note.startswith("judge rate limited: concurrency lowered to ") and note in text
    view = usage_view(usage.model_dump(mode="json"), None)
    assert view is not None and note in view["summary"]


# ---------------------------------------------------------------------------------------------- hostile servers
class Sleeps:
    """Records the backoff waits instead of sleeping."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)
        await asyncio.sleep(0)


def test_a_server_refusing_everything_ends_in_bounded_time_with_each_request_failed(fake: FakeGemini) -> None:
    """Every request refused (quota 0) with a huge Retry-After: 40 requests each give up after the policy's 6
    attempts with the 429 in the reason, without hanging; the waits are capped at max_retry_after; the limit ends at 1
    and the slots are all free again."""
    fake.quota = 0
    fake.quota_retry_delay = "86400s"
    sleeps = Sleeps()
    stack, watch = _watched_stack(fake, 16, RetryPolicy())
    assert stack.retrying is not None
    stack.retrying.sleep = sleeps

    async def run() -> list[JudgeReply | BaseException]:
        return await asyncio.gather(*(stack.generate(JudgeRequest("m", f"p{i}")) for i in range(40)),
                                    return_exceptions=True)

    started = time.perf_counter()
    outcomes = asyncio.run(asyncio.wait_for(run(), 60))
    assert time.perf_counter() - started < 30
    odd = [o for o in outcomes
           if not (isinstance(o, JudgeCallError) and "429" in str(o) and "gave up after 6 attempts" in str(o))]
    assert not odd, odd[:3]
    assert len(fake.requests) == 40 * 6
    assert sleeps.calls and max(sleeps.calls) == RetryPolicy().max_retry_after == 120.0
    limiter = stack.limiter
    assert limiter is not None and limiter.current == 1 and limiter.in_flight == 0
    assert all(in_flight <= limit for in_flight, limit in watch.starts)
    assert limiter.adaptive.use() == ConcurrencyCuts(maximum=16, lowest=1, cuts=4)


def test_a_run_against_a_server_refusing_everything_is_not_evaluated(tmp_path: Path, fake: FakeGemini) -> None:
    """Through the pipeline (with no backoff waits): every judged verdict is not_evaluated with the 429 as reason,
    none passed or failed; with nothing answered there is no usage block (as before), the limit ended at 1."""
    fake.quota = 0
    stack = build_stack(GeminiJudge(api_key="k", base_url=fake.url, timeout=10), concurrency=4,
                        retry=RetryPolicy(base_delay=0.0, max_delay=0.0))
    data = Path(__file__).parents[1] / "e2e" / "data"
    report = evaluate([str(data / "evals")], actuals=[str(data / "actuals" / "good.json")],
                      ctx=BuildContext(judge=stack))
    judged = [c.metrics["final_response_match_v2"] for c in report.eval_sets[0].cases]
    assert judged and all(m.status == "not_evaluated" for m in judged)
    assert all("429" in (p.reason or "") for m in judged for p in m.per_invocation)
    assert report.usage is None and stack.limiter is not None and stack.limiter.current == 1


class TimesOut:
    """A judge that queues: a call times out when more than ``capacity`` are in flight."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.in_flight = 0
        self.timeouts = 0

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        self.in_flight += 1
        try:
            await asyncio.sleep(0.01)
            if self.in_flight > self.capacity:
                self.timeouts += 1
                raise JudgeTimeout("judge call timed out after 60 s", transient=True)
            return JudgeReply(("ok",))
        finally:
            self.in_flight -= 1


def test_timeouts_of_a_queueing_server_lower_the_limit_too() -> None:
    """A server that makes calls wait past the timeout when more than 2 are in flight (a local model server): the
    limit comes down from 16 and most requests are answered; the note says timeouts were involved."""
    backend = TimesOut(2)
    stack = build_stack(backend, concurrency=16, retry=RetryPolicy(base_delay=0.0, max_delay=0.0))

    async def run() -> list[JudgeReply | BaseException]:
        return await asyncio.gather(*(stack.generate(JudgeRequest("m", f"p{i}")) for i in range(40)),
                                    return_exceptions=True)

    outcomes = asyncio.run(asyncio.wait_for(run(), 30))
    answered = [o for o in outcomes if isinstance(o, JudgeReply)]
    assert stack.limiter is not None and stack.limiter.adaptive.lowest <= 2
    cuts = stack.limiter.adaptive.use()
    assert cuts is not None and cuts.after_timeouts == cuts.cuts >= 3
    assert len(answered) >= 30 and backend.timeouts >= 16
    assert cuts.note().startswith("judge rate limited or timing out: concurrency lowered to ")


def test_merged_parts_sum_their_cuts() -> None:
    """Joining parts (merge, --jobs) sums the cuts and keeps the lowest limit and the largest maximum."""
    parts = [JudgeUsage(concurrency=ConcurrencyCuts(maximum=16, lowest=4, cuts=2)), JudgeUsage(),
             JudgeUsage(concurrency=ConcurrencyCuts(maximum=16, lowest=2, cuts=3, after_timeouts=1))]
    merged = merge_usage(parts)
    assert merged is not None
    assert merged.concurrency == ConcurrencyCuts(maximum=16, lowest=2, cuts=5, after_timeouts=1)
    untouched = merge_usage([JudgeUsage(), None])
    assert untouched is not None and untouched.concurrency is None


@pytest.mark.parametrize("forged", [{"maximum": -1, "lowest": 0, "cuts": "x"}, {"maximum": 10**400, "lowest": True}])
def test_a_forged_concurrency_entry_in_an_untrusted_report_renders_counts_only(forged: dict[str, object]) -> None:
    """The comment reads the report as plain data (untrusted in the second stage): only counts are taken, clamped."""
    usage = {"total": {"requests": 1}, "per_criterion": {}, "concurrency": forged}
    view = usage_view(usage, None)
    assert view is not None and "concurrency lowered to 1 of " in view["summary"]
    assert len(view["summary"]) < 400
