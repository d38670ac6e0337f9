"""A loopback fake of the Vertex AI evaluation service's ``evaluateInstances``, mounted on FakeGemini's server.

It speaks the shapes google-adk 2.13's SDK sends and the REST reference answers (recorded with
scripts/record_vertex_eval_requests.py): a predefined metric
(``metrics: [{predefined_metric_spec: {metric_spec_name}}]`` with an ``instance``) is answered with
``{"metricResults": [{"score", "explanation", "rubricVerdicts": [...]}]}``, the legacy coherence metric
(``coherence_input: {metric_spec, instance: {prediction}}``) with ``{"coherenceResult": {...}}``. A request of any
other shape, or a predefined metric the service does not have, is refused with 400 INVALID_ARGUMENT as the service
refuses it. Tests script the verdicts with ``grade(metric, instance) -> Graded | (status, message)``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalbot.judges.factory import JudgeStack, add_evaluation_service
from evalbot.judges.vertex_eval import VertexEvaluation
from tests.fakes.fake_gemini import FakeGemini

PREDEFINED = frozenset({"safety_v1", "multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1",
                        "multi_turn_tool_use_quality_v1"})
"""The predefined metrics the fake knows (the real service has more)."""


@dataclass
class Graded:
    """One verdict: a score (None: omitted), an explanation, rubric verdicts as (description, met, reasoning)."""

    score: float | None
    explanation: str = "why"
    rubrics: list[tuple[str, bool, str]] = field(default_factory=list)
    error: tuple[int, str] | None = None


Grade = Callable[[str, dict[str, Any]], "Graded | tuple[int, str]"]


def _error(status: int, message: str) -> tuple[int, dict[str, Any]]:
    names = {400: "INVALID_ARGUMENT", 403: "PERMISSION_DENIED", 429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE"}
    return status, {"error": {"code": status, "message": message, "status": names.get(status, "UNKNOWN")}}


def _metric_result(graded: Graded) -> dict[str, Any]:
    result: dict[str, Any] = {"explanation": graded.explanation}
    if graded.score is not None:
        result["score"] = graded.score
    if graded.rubrics:
        result["rubricVerdicts"] = [
            {"evaluatedRubric": {"rubricId": f"r{i}", "content": {"property": {"description": text}}},
             **({"verdict": True} if met else {}), "reasoning": reasoning}
            for i, (text, met, reasoning) in enumerate(graded.rubrics)]
    if graded.error is not None:
        result["error"] = {"code": graded.error[0], "message": graded.error[1]}
    return result


@dataclass
class FakeVertexEval:
    """The ``:evaluateInstances`` route: validates each request's shape, logs it and answers ``grade``'s verdict."""

    grade: Grade
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        coherence = body.get("coherence_input")
        if isinstance(coherence, dict):
            instance = coherence.get("instance")
            if set(body) != {"coherence_input"} or not isinstance(instance, dict) or not isinstance(
                    instance.get("prediction"), str) or not isinstance(coherence.get("metric_spec"), dict):
                return _error(400, "Required field is not set: coherence_input.instance.prediction")
            return self._answer("coherence", instance, legacy=True)
        metrics = body.get("metrics")
        instance = body.get("instance")
        if set(body) != {"metrics", "instance"} or not isinstance(metrics, list) or len(metrics) != 1 \
                or not isinstance(instance, dict):
            return _error(400, "Invalid EvaluateInstancesRequest: expected one metric and an instance")
        spec = metrics[0].get("predefined_metric_spec") if isinstance(metrics[0], dict) else None
        name = spec.get("metric_spec_name") if isinstance(spec, dict) else None
        if name not in PREDEFINED:
            return _error(400, f"Unsupported predefined metric: {name!r}")
        return self._answer(str(name), instance, legacy=False)

    def _answer(self, metric: str, instance: dict[str, Any], *, legacy: bool) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.calls.append((metric, instance))
        graded = self.grade(metric, instance)
        if isinstance(graded, tuple):
            return _error(*graded)
        if legacy:
            result = {"explanation": graded.explanation, "confidence": 0.9}
            if graded.score is not None:
                result["score"] = graded.score
            return 200, {"coherenceResult": result}
        return 200, {"metricResults": [_metric_result(graded)]}


def mount(fake: FakeGemini, grade: Grade) -> FakeVertexEval:
    """Serve ``grade``'s verdicts at ``fake``'s ``:evaluateInstances``."""
    route = FakeVertexEval(grade)
    fake.routes[":evaluateInstances"] = route
    return route


def connect(stack: JudgeStack, fake: FakeGemini, *, project: bool = False) -> None:
    """Point ``stack``'s evaluation service at ``fake`` through the real google-genai Vertex client: express mode
    (an API key), or project mode with a stand-in token."""
    if project:
        from google.oauth2.credentials import Credentials  # google-auth comes with google-genai

        client = VertexEvaluation(project="proj", location="us-central1", base_url=fake.url, timeout=5)
        client._client._api_client._credentials = Credentials(token="stand-in-token")
    else:
        client = VertexEvaluation(api_key="express-key", base_url=fake.url, timeout=5)
    add_evaluation_service(stack, client)
