"""A run-wide, adaptive bound on judge calls in flight (one limiter is shared by every criterion of the run).

The configured concurrency (``--judge-concurrency``, the Action's ``judge-concurrency``) is the maximum. The limit
in force adapts to the judge service, additive-increase / multiplicative-decrease as TCP does: an attempt refused
with HTTP 429 (Gemini's and Vertex AI's ``RESOURCE_EXHAUSTED``, OpenAI's rate limits) or timed out halves it (never
below 1), at most once per round of requests in flight: a refusal of a request that started before the last cut
says nothing new (those requests were sent under the old limit) and does not cut again. After as many consecutive
successes as the limit in force, it grows by one, up to the maximum. A healthy quota thus runs at the maximum, and a
small one finds its level on its own; the retries (judges.retry, above this layer) wait out the refusals, and each
retry takes a slot again.

Timeouts cut too: a server that queues rather than refuses (a local Ollama or vLLM, a proxy in front of a small
deployment) answers too many calls by making the last ones wait until the per-call timeout, and halving what is sent
is the only way its queue drains; a cloud API that simply was slow once costs one halving, won back by the additive
increase. Other failures (5xx, invalid answers) neither cut nor count as successes: they say nothing about the
load. The Vertex AI evaluation service's calls share the run's limit and so its cuts, and the limit learned in one
event loop carries over to the run's next ones (settling split votes, reruns). What the limit did is reported once
it was lowered (``AdaptiveLimit.use``: ``Report.usage.concurrency``, shown with the judge's usage).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from dataclasses import dataclass, field

from evalbot.judges.base import FIRST_ROUND, Judge, JudgeCallError, JudgeReply, JudgeRequest, JudgeTimeout
from evalbot.results import ConcurrencyCuts

DEFAULT_CONCURRENCY = 32
"""Judge calls in flight at most (the adaptive limit's maximum) when --judge-concurrency is not given."""

RATE_LIMITED = 429


class PrioritySlots:
    """At most ``limit`` slots of one event loop held at once; waiters get a freed slot lowest ``priority`` first,
    then in arrival order.

    A freed slot goes straight to the chosen waiter (see release), so no later arrival can take it first. The limit
    may change while slots are held (``set_limit``): lowered, no held slot is taken back, and freed slots go to no
    waiter until fewer than the new limit are held; raised, waiters are let in at once, in the same order. Every
    waiter is served as long as the limit is at least 1, since each release hands on or counts down the held slots.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrival = itertools.count()

    @property
    def free(self) -> int:
        """Slots a request could take at once (none while more than the limit are held)."""
        return max(0, self.limit - self.held)

    async def acquire(self, priority: int) -> None:
        """Take a slot, waiting behind the waiters with a lower priority or the same one that came earlier.

        A slot handed over just before the limit was lowered (the waiter had not run yet) is given back, and the
        waiter waits again in its place: no request starts above the limit in force."""
        if self.held < self.limit and not self._waiting:
            self.held += 1
            return
        arrival = next(self._arrival)
        while True:
            turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            heapq.heappush(self._waiting, (priority, arrival, turn))
            try:
                await turn
            except asyncio.CancelledError:
                if turn.done() and not turn.cancelled():  # the slot was handed over as the waiter was cancelled
                    self.release()
                raise  # a cancelled waiter still in the heap is skipped by _wake()
            if self.held <= self.limit:
                return
            self.held -= 1  # still at or above the lowered limit: nobody else to let in

    def release(self, *, followed: bool = False) -> None:
        """Give the slot back. When the request that held it may be ``followed`` by another (a vote's first round,
        see judges.sequential), the slot is handed over on the event loop's next turn, not at once: the second round,
        asked as soon as the first returns, is by then among the waiters, and its priority wins the slot."""
        if followed:
            asyncio.get_running_loop().call_soon(self._give_back)
        else:
            self._give_back()

    def set_limit(self, limit: int) -> None:
        """Change the limit (at least 1); a raised one lets waiters in at once."""
        self.limit = max(1, limit)
        self._wake()

    def _give_back(self) -> None:
        self.held -= 1
        self._wake()

    def _wake(self) -> None:
        """Hand slots to the first waiters still waiting while fewer than the limit are held."""
        while self.held < self.limit and self._waiting:
            turn = heapq.heappop(self._waiting)[2]
            if not turn.done():
                turn.set_result(None)
                self.held += 1


@dataclass
class AdaptiveLimit:
    """The limit in force between 1 and ``maximum`` (see the module docstring): ``cut`` on a refusal or a timeout,
    ``succeeded`` on an answer. ``cuts`` also numbers the rounds: a request records it when it starts, and only a
    request of the current round cuts."""

    maximum: int
    current: int = 0
    cuts: int = 0
    after_timeouts: int = 0
    """Cuts made on a timeout (the others on HTTP 429)."""
    lowest: int = 0
    _streak: int = field(default=0, repr=False)

    def __post_init__(self) -> None:
        self.current = self.current or self.maximum
        self.lowest = self.lowest or self.current

    def cut(self, round_started: int, *, timeout: bool = False) -> bool:
        """Halve the limit for a refusal (or ``timeout``) of a request started in round ``round_started``; False
        when that request started before the last cut, or the limit is already 1."""
        self._streak = 0
        if round_started != self.cuts or self.current == 1:
            return False
        self.current = max(1, self.current // 2)
        self.lowest = min(self.lowest, self.current)
        self.cuts += 1
        self.after_timeouts += timeout
        return True

    def succeeded(self) -> bool:
        """Count an answer; True when it raised the limit (the limit's worth of answers in a row)."""
        self._streak += 1
        if self._streak < self.current or self.current >= self.maximum:
            return False
        self.current += 1
        self._streak = 0
        return True

    def use(self) -> ConcurrencyCuts | None:
        """What the report says about the limit: None when it was never lowered."""
        if not self.cuts:
            return None
        return ConcurrencyCuts(maximum=self.maximum, lowest=self.lowest, cuts=self.cuts,
                               after_timeouts=self.after_timeouts)


def lowers_the_limit(exc: JudgeCallError) -> bool:
    """Whether a failed attempt says the service has too many calls: a rate limit (429) or a timeout."""
    return exc.status == RATE_LIMITED or isinstance(exc, JudgeTimeout)


class LimitedJudge:
    """Lets at most the adaptive limit's calls to ``inner`` run at once (``limit``: its maximum), the waiting ones
    by ``JudgeRequest.priority`` (see judges.sequential) and then in arrival order; records the peak for reports
    and benchmarks. A limiter made ``sharing`` another uses its slots, in-flight count and adaptive limit."""

    def __init__(self, inner: Judge, limit: int = DEFAULT_CONCURRENCY, *, sharing: LimitedJudge | None = None) -> None:
        if limit < 1:
            raise ValueError(f"judge concurrency must be at least 1, got {limit}")
        self.inner = inner
        self.limit: int = sharing.limit if sharing is not None else limit
        self.in_flight = 0
        self.peak = 0
        self._slots: LimitedJudge = sharing._slots if sharing is not None else self
        """The limiter whose slots (and in-flight count) this one uses: another service shares the run's limit."""
        self.adaptive: AdaptiveLimit = sharing.adaptive if sharing is not None else AdaptiveLimit(limit)
        self._semaphore: PrioritySlots | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def current(self) -> int:
        """The limit in force."""
        return self.adaptive.current

    def _sem(self) -> PrioritySlots:
        # Slots belong to one event loop (their waiters are its futures); tests and the CLI may run several loops in
        # sequence. The adaptive limit carries over: the next loop talks to the same service.
        slots = self._slots
        loop = asyncio.get_running_loop()
        if slots._semaphore is None or slots._loop is not loop:
            slots._semaphore, slots._loop = PrioritySlots(self.adaptive.current), loop
        return slots._semaphore

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Wait for a free slot, then call ``inner``; its outcome adapts the limit."""
        slots, adaptive = self._slots, self.adaptive
        sem = self._sem()
        await sem.acquire(request.priority)
        round_started = adaptive.cuts
        slots.in_flight += 1
        slots.peak = max(slots.peak, slots.in_flight)
        try:
            reply = await self.inner.generate(request)
        except JudgeCallError as exc:
            if lowers_the_limit(exc) and adaptive.cut(round_started, timeout=isinstance(exc, JudgeTimeout)):
                sem.set_limit(adaptive.current)
            raise
        finally:
            slots.in_flight -= 1
            sem.release(followed=request.priority == FIRST_ROUND)
        if adaptive.succeeded():
            sem.set_limit(adaptive.current)
        return reply
