"""The Vertex AI evaluation service behind the run's judge layers: usage ledger, cache and replay, retries, the run-wide
limit; and reading the service's answers.

The service answers one ``evaluateInstances`` request at a time with a score, an explanation and, for its
adaptive-rubric metrics, rubric verdicts. Here it is wrapped as a Judge whose "prompt" is the request body as
canonical JSON and whose single "sample" is the verdict as JSON, so the layers built for the LLM judge apply
unchanged: a 429 or 503 is retried with backoff, calls share the run's concurrency limit, verdicts are cached (key:
the request body) and replayed by ``--judge-replay``, and each call is counted in the usage summary under the
criterion that asked.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from evalbot.judges.base import (
    EvaluationService,
    Judge,
    JudgeCallError,
    JudgeError,
    JudgeReply,
    JudgeRequest,
    ServiceRubric,
    ServiceVerdict,
    Usage,
)

SERVICE_MODEL = "vertex-ai-evaluation"
"""The "model" of evaluation-service requests, in cache keys and in the usage summary."""
NO_SCORE = "the Vertex AI evaluation service returned no score"


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _field(data: Mapping[str, Any], camel: str, snake: str) -> Any:
    """A field of the service's JSON under its camelCase name (REST) or its snake_case one (the SDK's dumps)."""
    return data[camel] if camel in data else data.get(snake)


def _rubric(index: int, verdict: Mapping[str, Any]) -> ServiceRubric:
    """One rubric verdict, named as ADK names it: the rubric's property description, else its id."""
    rubric = _field(verdict, "evaluatedRubric", "evaluated_rubric")
    rubric = rubric if isinstance(rubric, Mapping) else {}
    content = rubric.get("content")
    prop = content.get("property") if isinstance(content, Mapping) else None
    description = prop.get("description") if isinstance(prop, Mapping) else None
    name = description or _field(rubric, "rubricId", "rubric_id") or f"rubric_{index}"
    # The service omits ``verdict`` when a rubric is not met.
    return ServiceRubric(str(name), verdict.get("verdict") is True, str(verdict.get("reasoning") or ""))


def verdict_from_answer(answer: Any, purpose: str) -> ServiceVerdict:
    """The verdict in an ``evaluateInstances`` answer: the first of ``metricResults`` (predefined metrics), else a
    legacy ``<metric>Result`` object (``coherenceResult``); raises JudgeCallError when there is neither."""
    if not isinstance(answer, Mapping):
        raise JudgeCallError(f"Vertex AI evaluation service ({purpose}) sent a malformed answer")
    results = _field(answer, "metricResults", "metric_results")
    result: Any = None
    if isinstance(results, list) and results:
        result = results[0]
    elif results is None:
        result = next((v for k, v in answer.items() if k.endswith(("Result", "_result"))), None)
    if not isinstance(result, Mapping):
        raise JudgeCallError(f"Vertex AI evaluation service ({purpose}) answered without a metric result")
    verdicts = _field(result, "rubricVerdicts", "rubric_verdicts")
    rubrics = tuple(_rubric(i, v) for i, v in enumerate(verdicts if isinstance(verdicts, list) else [])
                    if isinstance(v, Mapping))
    error = result.get("error")
    message = None
    if isinstance(error, Mapping) and error.get("code"):
        message = f"the Vertex AI evaluation service reported an error: {error.get('message') or ''} " \
                  f"(code {error.get('code')})"
    return ServiceVerdict(_number(result.get("score")), str(result.get("explanation") or ""), rubrics, message)


def _dump(verdict: ServiceVerdict) -> str:
    return json.dumps({"score": verdict.score, "explanation": verdict.explanation,
                       "rubrics": [[r.rubric, r.verdict, r.reasoning] for r in verdict.rubrics]}, ensure_ascii=False)


def _load(text: str) -> ServiceVerdict:
    try:
        data: Any = json.loads(text)
    except ValueError:
        data = None
    rubrics = data.get("rubrics") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(rubrics, list) or not all(
            isinstance(r, list) and len(r) == 3 for r in rubrics):
        raise JudgeError("a cached Vertex AI evaluation verdict is malformed; delete it from the judge cache")
    return ServiceVerdict(_number(data.get("score")), str(data.get("explanation") or ""),
                          tuple(ServiceRubric(str(r[0]), r[1] is True, str(r[2])) for r in rubrics))


class ServiceBackend:
    """A Judge answering evaluation-service requests with ``client``: one call per request, the verdict as JSON.

    A verdict without a score is raised as a (permanent) JudgeCallError with the service's reason: no verdict, and
    nothing the cache keeps, so the next run asks again."""

    def __init__(self, client: EvaluationService) -> None:
        self.client = client

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """The verdict on the request body in ``request.prompt``."""
        verdict = await self.client.evaluate(json.loads(request.prompt), request.purpose)
        if verdict.score is None:
            raise JudgeCallError(verdict.error or NO_SCORE)
        return JudgeReply((_dump(verdict),) * request.num_samples, Usage(requests=1), 0)


class LayeredService:
    """What the Vertex criteria call (``evaluate(body, purpose)``), sent through ``top``: the judge layers over a
    ServiceBackend."""

    def __init__(self, top: Judge) -> None:
        self.top = top

    async def evaluate(self, body: Mapping[str, Any], purpose: str) -> ServiceVerdict:
        """The verdict on ``body``, from the cache or the service."""
        prompt = json.dumps(body, sort_keys=True, ensure_ascii=False)
        reply = await self.top.generate(JudgeRequest(SERVICE_MODEL, prompt, {}, 1, purpose))
        return _load(reply.texts[0])
