"""Sequential sampling: ask the fewest samples that could decide a vote, and the rest only when they do not.

A request carrying a ``stop`` rule (majority-vote criteria set one; see criteria.judged.MajorityRule) is answered in
at most two requests to the layers below: samples ``0 .. k-1`` first (``k`` = ``stop.first_round``, 3 of 5 for a
majority), then, only when those leave the verdict open, samples ``k .. n-1``.  Samples keep their index, so the
cache serves each round by index and the answers are the ones a single request for all ``n`` would have been given
from the same cache.  Because the rule only stops once *no* answers to the missing samples could change the
verdict, the verdict is always the one the full set would give.  The rounds carry a priority for the run's concurrency limit
(judges.limiter): first rounds go before any other waiting request and second rounds next, so a second round is
asked as soon as a slot frees after its first round answers, and no first round is left to the end of the run where
its second round would run with slots idle.  Requests without a rule (criteria that average
their samples) pass through unchanged, as does everything when sequential sampling is off (``sampling: full``).
"""

from __future__ import annotations

from dataclasses import replace

from evalbot.judges.base import (
    DEFAULT_SAMPLING,
    FIRST_ROUND,
    SECOND_ROUND,
    Judge,
    JudgeReply,
    JudgeRequest,
    Sampling,
    Usage,
)


class SequentialJudge:
    """Answers requests that carry a stop rule in rounds (see the module docstring); ``mode`` ``full`` turns it off.

    The reply's usage counts ``saved_samples`` (samples never asked) and ``extra_requests`` (second rounds)."""

    def __init__(self, inner: Judge, mode: Sampling = DEFAULT_SAMPLING) -> None:
        self.inner = inner
        self.mode: Sampling = mode

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """All samples in one request, or the first round and (when it did not decide) the rest."""
        rule, n = request.stop, request.num_samples
        if rule is None or self.mode == "full" or n <= 1:
            return await self.inner.generate(request.samples_from(request.first_sample, n))
        first = min(max(1, rule.first_round(n)), n)
        first_round = replace(request.samples_from(request.first_sample, first), priority=FIRST_ROUND)
        reply = await self.inner.generate(first_round)
        if first >= n:
            return reply
        if rule.decided(reply.texts, n):
            usage = reply.usage + Usage(saved_samples=n - len(reply.texts))
            return JudgeReply(reply.texts, usage, reply.cached_samples, reply.served)
        rest = await self.inner.generate(
            replace(request.samples_from(request.first_sample + first, n - first), priority=SECOND_ROUND))
        extra = Usage(extra_requests=1 if rest.usage.requests else 0)
        return JudgeReply(reply.texts + rest.texts, reply.usage + rest.usage + extra,
                          reply.cached_samples + rest.cached_samples, reply.serving(rest))
