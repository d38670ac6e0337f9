"""Serve ``num_samples`` with one ``candidate_count`` request, falling back to one request per sample."""

from __future__ import annotations

import asyncio

from evalbot.judges.base import CandidateCountUnsupported, Judge, JudgeReply, JudgeRequest, Usage


class SamplingJudge:
    """Asks ``inner`` for all samples at once (the prompt's input tokens are paid once).

    When a model refuses ``candidate_count`` the model is remembered and its samples are requested one by one
    (concurrently); when the service returns fewer candidates than asked, the rest are requested separately.
    """

    def __init__(self, inner: Judge) -> None:
        self.inner = inner
        self.single_sample_models: set[str] = set()

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer with exactly ``request.num_samples`` texts."""
        n = request.num_samples
        if n <= 1 or request.model in self.single_sample_models:
            return await self._one_by_one(request, n)
        try:
            reply = await self.inner.generate(request)
        except CandidateCountUnsupported:
            self.single_sample_models.add(request.model)
            return await self._one_by_one(request, n)
        if len(reply.texts) >= n:
            return JudgeReply(reply.texts[:n], reply.usage, min(reply.cached_samples, n))
        rest = await self._one_by_one(request, n - len(reply.texts))
        return JudgeReply(reply.texts + rest.texts, reply.usage + rest.usage, reply.cached_samples + rest.cached_samples)

    async def _one_by_one(self, request: JudgeRequest, n: int) -> JudgeReply:
        single = request.with_samples(1)
        if n == 1:
            return await self._single(single)
        results = await asyncio.gather(*(self._single(single) for _ in range(n)), return_exceptions=True)
        texts: list[str] = []
        usage = Usage()
        cached = 0
        for result in results:
            if isinstance(result, BaseException):
                raise result
            texts.extend(result.texts)
            usage += result.usage
            cached += result.cached_samples
        return JudgeReply(tuple(texts), usage, cached)

    async def _single(self, request: JudgeRequest) -> JudgeReply:
        reply = await self.inner.generate(request)
        if not reply.texts:
            return JudgeReply(("",), reply.usage, 0)
        return JudgeReply(reply.texts[:1], reply.usage, min(reply.cached_samples, 1))
