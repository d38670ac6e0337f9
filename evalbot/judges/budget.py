"""The gate policy's ``judge_budget``: at most N requests, at most X dollars sent to the judge in a run.

``BudgetCap`` sits where requests leave for the judge service (under the retries: every HTTP attempt counts, as it
is paid for). A request is let through only when the count stays within ``requests`` and when what was spent, what
the requests in flight may still cost and this request's worst case stay within ``usd``: the worst case is the
prompt's UTF-8 bytes as input tokens (a token is never less than a byte) plus ``OVERHEAD_TOKENS``, and each sample's
``max_output_tokens`` (else ``DEFAULT_MAX_OUTPUT``) as output tokens, at the price table's price; its reservation
becomes the reply's real cost once it answers. So the budget is never exceeded, whatever the concurrency (the count
and the reservation are taken under one lock before the request is sent). A model without a known price cannot be
bounded: under a dollar budget its requests are refused (add it to the policy's ``prices``).

A refused request raises ``JudgeBudgetReached``: its verdict is not_evaluated with that reason, a judge failure
(``judge_failures: block``: exit 3), counted apart in the headline (``compare.judge_gaps``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from evalbot.formats.prices import JudgeBudget, PriceTable
from evalbot.judges.base import Judge, JudgeCallError, JudgeReply, JudgeRequest, JudgeTimeout

log = logging.getLogger("evalbot")

BUDGET_MARK = "judge budget reached"
"""How the reason of a verdict the budget left not evaluated begins (compare.judge_gaps counts them apart)."""
OVERHEAD_TOKENS = 64
"""Tokens a request may cost beyond its prompt's bytes (the chat format's own tokens)."""
DEFAULT_MAX_OUTPUT = 65_536
"""Output tokens a sample may cost when the judge config sets no ``max_output_tokens`` (Gemini 2.5's maximum,
thinking included)."""


def tighter(*budgets: JudgeBudget | None) -> JudgeBudget | None:
    """The budget within all of ``budgets`` (each half the lowest set): a command-line flag or an Action input can
    lower the gate policy's budget, never raise it."""
    given = [b for b in budgets if b is not None]
    requests = [b.requests for b in given if b.requests is not None]
    usd = [b.usd for b in given if b.usd is not None]
    if not requests and not usd:
        return None
    return JudgeBudget(requests=min(requests) if requests else None, usd=min(usd) if usd else None)


class JudgeBudgetReached(JudgeCallError):
    """The run's judge budget does not allow this request (never retried)."""


def _max_output(config: Mapping[str, Any]) -> int:
    for key in ("max_output_tokens", "maxOutputTokens", "max_tokens", "max_completion_tokens"):
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return DEFAULT_MAX_OUTPUT


def worst_case_tokens(request: JudgeRequest) -> tuple[int, int]:
    """The most input and output tokens ``request`` can be billed for (see the module's docstring)."""
    return (len(request.prompt.encode("utf-8", "surrogatepass")) + OVERHEAD_TOKENS,
            _max_output(request.config) * max(1, request.num_samples))


class BudgetCap:
    """Lets requests through to ``inner`` within ``budget`` (None: all); ``prices`` and ``unpriced`` are asked at
    each request (the front ends set the policy's table after the stack is built)."""

    def __init__(self, inner: Judge, prices: Callable[[], PriceTable], unpriced: Callable[[str], bool],
                 sharing: BudgetCap | None = None) -> None:
        self.inner = inner
        self.root: BudgetCap = sharing.root if sharing is not None else self
        """The cap whose budget, counts and lock this one shares (the Vertex evaluation service's requests count
        against the judge's budget)."""
        self.budget: JudgeBudget | None = None
        self._prices = prices
        self._unpriced = unpriced
        self._lock = threading.Lock()
        self.sent = 0
        self.spent = 0.0
        self.reserved = 0.0
        self.refused = 0
        self.what = ""

    def set(self, budget: JudgeBudget | None, what: str = "") -> None:
        """The run's budget (None: no limit); ``what`` names it in the refusals when it is a part's share."""
        self.budget = budget
        self.what = what

    def _cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        return None if self._unpriced(model) else self._prices().cost(model, input_tokens, output_tokens)

    def _refuse(self, why: str) -> JudgeBudgetReached:
        self.refused += 1
        budget = self.what or (f"{self.budget.text()} for this run" if self.budget is not None else "")
        message = f"{BUDGET_MARK} ({budget}): {why}"
        if self.refused == 1:
            log.warning("evalbot: %s; the judged verdicts still to ask are not_evaluated", message)
        return JudgeBudgetReached(message)

    def _admit(self, request: JudgeRequest) -> float:
        """Count ``request`` and reserve its worst-case cost, or raise JudgeBudgetReached (under the lock)."""
        budget = self.budget
        if budget is None:
            self.sent += 1
            return 0.0
        if budget.requests is not None and self.sent >= budget.requests:
            raise self._refuse(f"{self.sent:,} sent")
        reserve = 0.0
        if budget.usd is not None:
            worst = self._cost(request.model, *worst_case_tokens(request))
            if worst is None:
                raise self._refuse(f"the price of judge model {request.model!r} is unknown, so a request cannot be "
                                   "bounded in dollars (add it to the gate policy's prices)")
            if self.spent + self.reserved + worst > budget.usd:
                raise self._refuse(f"{self.spent:.4f} USD spent, {self.reserved:.4f} USD in flight, and the next "
                                   f"request may cost up to {worst:.4f} USD")
            self.reserved += worst
            reserve = worst
        self.sent += 1
        return reserve

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Send ``request`` if the budget allows it; book its real cost once answered."""
        root = self.root
        with root._lock:
            reserve = root._admit(request)
        try:
            reply = await self.inner.generate(request)
        except JudgeTimeout:  # it may have been answered and billed: its worst case stays spent
            with root._lock:
                root.reserved -= reserve
                root.spent += reserve
            raise
        except BaseException:
            with root._lock:
                root.reserved -= reserve
            raise
        cost = root._cost(request.model, reply.usage.input_tokens, reply.usage.output_tokens)
        with root._lock:
            root.reserved -= reserve
            root.spent += reserve if cost is None else cost
        return reply
