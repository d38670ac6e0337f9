"""Serve ``num_samples`` with ``candidate_count`` requests of at most MAX_BATCH samples, falling back to one
request per sample."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Sequence

from evalbot.judges.base import CandidateCountUnsupported, Judge, JudgeReply, JudgeRequest, Usage

MAX_BATCH = 8
"""The most samples one request asks for (Gemini's own ``candidate_count`` limit); more are asked in batches of
this size, and a model without ``candidate_count`` gets at most this many single requests per batch."""


def join(replies: Sequence[JudgeReply]) -> JudgeReply:
    """The replies' texts in order, their usage and cached counts summed."""
    texts: list[str] = []
    usage = Usage()
    cached = 0
    for reply in replies:
        texts.extend(reply.texts)
        usage += reply.usage
        cached += reply.cached_samples
    served = " + ".join(dict.fromkeys(reply.served for reply in replies if reply.served)) or None
    return JudgeReply(tuple(texts), usage, cached, served)


class SamplingJudge:
    """Asks ``inner`` for all samples at once (the prompt's input tokens are paid once).

    When a model refuses ``candidate_count`` the model is remembered and its samples are requested one by one
    (concurrently); when the service returns fewer candidates than asked, the rest are requested separately.
    """

    def __init__(self, inner: Judge) -> None:
        self.inner = inner
        self.single_sample_models: set[str] = set()

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer with exactly ``request.num_samples`` texts, asked in batches of at most ``MAX_BATCH``."""
        n = request.num_samples
        if n > MAX_BATCH:
            sizes = [min(MAX_BATCH, n - done) for done in range(0, n, MAX_BATCH)]
            return await self._all(self._batch(request.with_samples(k)) for k in sizes)
        return await self._batch(request)

    async def _batch(self, request: JudgeRequest) -> JudgeReply:
        n = request.num_samples
        if n <= 1 or request.model in self.single_sample_models:
            return await self._one_by_one(request, n)
        try:
            reply = await self.inner.generate(request)
        except CandidateCountUnsupported:
            self.single_sample_models.add(request.model)
            return await self._one_by_one(request, n)
        if len(reply.texts) >= n:
            return JudgeReply(reply.texts[:n], reply.usage, min(reply.cached_samples, n), reply.served)
        rest = await self._one_by_one(request, n - len(reply.texts))
        return JudgeReply(reply.texts + rest.texts, reply.usage + rest.usage, reply.cached_samples + rest.cached_samples,
                          reply.serving(rest))

    async def _one_by_one(self, request: JudgeRequest, n: int) -> JudgeReply:
        single = request.with_samples(1)
        if n == 1:
            return await self._single(single)
        return await self._all(self._single(single) for _ in range(n))

    @staticmethod
    async def _all(calls: Iterable[Awaitable[JudgeReply]]) -> JudgeReply:
        """Every call's reply joined; the first failure is raised once all have finished (none is left running)."""
        results = await asyncio.gather(*calls, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return join([r for r in results if not isinstance(r, BaseException)])

    async def _single(self, request: JudgeRequest) -> JudgeReply:
        reply = await self.inner.generate(request)
        if not reply.texts:
            return JudgeReply(("",), reply.usage, 0, reply.served)
        return JudgeReply(reply.texts[:1], reply.usage, min(reply.cached_samples, 1), reply.served)
