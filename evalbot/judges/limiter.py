"""A run-wide bound on judge calls in flight (one limiter is shared by every criterion of the run)."""

from __future__ import annotations

import asyncio
import heapq
import itertools

from evalbot.judges.base import FIRST_ROUND, Judge, JudgeReply, JudgeRequest

DEFAULT_CONCURRENCY = 16


class PrioritySlots:
    """``limit`` slots of one event loop; waiters get a freed slot lowest ``priority`` first, then in arrival order.

    A freed slot goes straight to the chosen waiter (see release), so no later arrival can take it first.
    """

    def __init__(self, limit: int) -> None:
        self.free = limit
        self._waiting: list[tuple[int, int, asyncio.Future[None]]] = []
        self._arrival = itertools.count()

    async def acquire(self, priority: int) -> None:
        """Take a slot, waiting behind the waiters with a lower priority or the same one that came earlier."""
        if self.free and not self._waiting:
            self.free -= 1
            return
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiting, (priority, next(self._arrival), turn))
        try:
            await turn
        except asyncio.CancelledError:
            if turn.done() and not turn.cancelled():  # the slot was handed over as the waiter was cancelled
                self.release()
            raise  # a cancelled waiter still in the heap is skipped by release()

    def release(self, *, followed: bool = False) -> None:
        """Give the slot back. When the request that held it may be ``followed`` by another (a vote's first round,
        see judges.sequential), the slot is handed over on the event loop's next turn, not at once: the second round,
        asked as soon as the first returns, is by then among the waiters, and its priority wins the slot."""
        if followed:
            asyncio.get_running_loop().call_soon(self._hand_over)
        else:
            self._hand_over()

    def _hand_over(self) -> None:
        """The slot to the first waiter still waiting, or back to the free ones."""
        while self._waiting:
            turn = heapq.heappop(self._waiting)[2]
            if not turn.done():
                turn.set_result(None)
                return
        self.free += 1


class LimitedJudge:
    """Lets at most ``limit`` calls to ``inner`` run at once, the waiting ones by ``JudgeRequest.priority`` (see
    judges.sequential) and then in arrival order; records the peak for reports and benchmarks."""

    def __init__(self, inner: Judge, limit: int = DEFAULT_CONCURRENCY, *, sharing: LimitedJudge | None = None) -> None:
        if limit < 1:
            raise ValueError(f"judge concurrency must be at least 1, got {limit}")
        self.inner = inner
        self.limit: int = sharing.limit if sharing is not None else limit
        self.in_flight = 0
        self.peak = 0
        self._slots: LimitedJudge = sharing._slots if sharing is not None else self
        """The limiter whose slots (and in-flight count) this one uses: another service shares the run's limit."""
        self._semaphore: PrioritySlots | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _sem(self) -> PrioritySlots:
        # Slots belong to one event loop (their waiters are its futures); tests and the CLI may run several loops in
        # sequence.
        slots = self._slots
        loop = asyncio.get_running_loop()
        if slots._semaphore is None or slots._loop is not loop:
            slots._semaphore, slots._loop = PrioritySlots(slots.limit), loop
        return slots._semaphore

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Wait for a free slot, then call ``inner``."""
        slots = self._slots
        sem = self._sem()
        await sem.acquire(request.priority)
        slots.in_flight += 1
        slots.peak = max(slots.peak, slots.in_flight)
        try:
            return await self.inner.generate(request)
        finally:
            slots.in_flight -= 1
            sem.release(followed=request.priority == FIRST_ROUND)
