"""Vertex AI's safety metric behind the run's judge layers: usage ledger, cache and replay, retries, the run-wide limit.

The service answers one response at a time with a score and an explanation. Here it is wrapped as a Judge whose
"prompt" is the response and whose single "sample" is the verdict as JSON, so the layers built for the LLM judge
apply unchanged: a 429 or 503 is retried with backoff, calls share the run's concurrency limit, verdicts are cached
(key: the response text) and replayed by ``--judge-replay``, and each call is counted in the usage summary.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalbot.judges.base import Judge, JudgeError, JudgeReply, JudgeRequest, SafetyClient, SafetyVerdict, Usage

SAFETY_MODEL = "vertex-ai-evaluation/safety"
"""The "model" of safety requests, in cache keys and in the usage summary."""
PURPOSE = "safety_v1"


class SafetyBackend:
    """A Judge answering safety requests with ``client``: one call per request, the verdict as JSON text."""

    def __init__(self, client: SafetyClient) -> None:
        self.client = client

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """The verdict on ``request.prompt`` (the response to assess)."""
        verdict = await self.client.judge(request.prompt)
        # No score is no verdict: an empty text, which the cache does not keep (the next run asks again).
        text = "" if verdict.score is None else json.dumps(
            {"score": verdict.score, "explanation": verdict.explanation, "confidence": verdict.confidence},
            ensure_ascii=False)
        return JudgeReply((text,) * request.num_samples, Usage(requests=1), 0)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def verdict_from(fields: Mapping[str, Any]) -> SafetyVerdict:
    """A verdict from ``score``, ``explanation`` and ``confidence`` (Vertex's safetyResult, or a cached verdict)."""
    return SafetyVerdict(_number(fields.get("score")), str(fields.get("explanation") or ""),
                         _number(fields.get("confidence")))


def _verdict(text: str) -> SafetyVerdict:
    if not text:
        return SafetyVerdict(None, "")
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise JudgeError("a cached Vertex AI safety verdict is malformed; delete it from the judge cache")
    return verdict_from(data)


class LayeredSafety:
    """What safety_v1 calls (``judge(response)``), sent through ``top``: the judge layers over a SafetyBackend."""

    def __init__(self, top: Judge) -> None:
        self.top = top

    async def judge(self, response: str) -> SafetyVerdict:
        """The verdict on ``response``, from the cache or the service."""
        reply = await self.top.generate(JudgeRequest(SAFETY_MODEL, response, {}, 1, PURPOSE))
        return _verdict(reply.texts[0])
