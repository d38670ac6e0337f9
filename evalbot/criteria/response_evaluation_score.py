"""``response_evaluation_score`` (ADK 2.13): how coherent is each final response? Vertex AI's coherence, 1 to 5.

ADK scores it with the Vertex AI evaluation service, one request per invocation, and requires expected invocations
(a scenario case is not evaluated). The case's value is the mean of the scored invocations' ratings and passes when
it is ``>= threshold``, with the threshold on ADK's 1-5 scale (config validation takes 1..5 for this criterion).
Every score in evalbot's report lies in [0, 1], so the rating is reported as ``(rating - 1) / 4`` (4 -> 0.75) and
the threshold likewise, with the rating itself in ``details.value`` and the threshold in ``details.threshold_value``;
pass and fail are decided on the ratings, as ADK decides them.

The request is the service's own coherence metric (``coherence_input``: ``metric_spec`` and ``instance.prediction``
= the final response; answer ``coherenceResult``: ``score``, ``explanation``). ADK 2.13's SDK instead loads a
coherence prompt template from a Google Cloud Storage bucket and sends it as an LLM-based metric; evalbot cannot
read that bucket's template here and does not copy it, so the wording the service judges with may differ. UNTESTED
against the real service (no Google Cloud project or express-mode key is reachable here).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from evalbot.criteria.base import BuildContext, CaseInput, not_evaluated, parse_options
from evalbot.criteria.vertex_service import METHOD, ServiceOptions, no_service, service_of, verdict_details
from evalbot.formats.adk import Invocation
from evalbot.formats.config import SCALED_THRESHOLDS, CriterionSpec
from evalbot.formats.invocations import final_text
from evalbot.judges.base import EvaluationService, JudgeError
from evalbot.results import InvocationScore, MetricResult, clean_score, invocation_score, mean, threshold_status

NAME = "response_evaluation_score"
LOW, HIGH = SCALED_THRESHOLDS[NAME]
NO_EXPECTED = ("needs expected invocations (ADK requires them for response_evaluation_score); a conversation "
               "scenario has none")


def unit(rating: float | None) -> float | None:
    """A 1-5 rating on the report's [0, 1] scale."""
    return None if rating is None else min(1.0, max(0.0, (rating - LOW) / (HIGH - LOW)))


def body(response: str) -> dict[str, Any]:
    """The ``evaluateInstances`` body asking the service's coherence metric about ``response``."""
    return {"coherence_input": {"metric_spec": {}, "instance": {"prediction": response}}}


@dataclass(frozen=True)
class Coherence:
    """Vertex AI's coherence rating of each final response."""

    name: str
    threshold_value: float | None
    """The configured threshold, on the 1-5 scale."""
    service: EvaluationService | None
    why: str

    @property
    def threshold(self) -> float | None:
        """The threshold on the report's [0, 1] scale."""
        return unit(self.threshold_value)

    async def evaluate(self, case: CaseInput) -> MetricResult:
        """Rate every invocation; the case's value is the mean rating."""
        if self.service is None:
            return no_service(self.name, self.threshold, self.why, case)
        if case.expected is None:
            return not_evaluated(self.threshold, NO_EXPECTED, len(case.actual))
        scored = await asyncio.gather(*(self._one(self.service, inv) for inv in case.actual))
        ratings = [rating for rating, _ in scored if rating is not None]
        value = mean(ratings)
        reason = None if ratings else "no response could be rated (see each invocation's reason)"
        details: dict[str, Any] = {"method": METHOD, "value": value, "threshold_value": self.threshold_value,
                                   "scale": f"{LOW:g}-{HIGH:g}"}
        return MetricResult(score=clean_score(unit(value)), status=threshold_status(value, self.threshold_value),
                            threshold=self.threshold, per_invocation=[s for _, s in scored], reason=reason,
                            details=details)

    async def _one(self, service: EvaluationService, invocation: Invocation) -> tuple[float | None, InvocationScore]:
        response = final_text(invocation)
        invocation_id = invocation.invocation_id or None
        if not response:
            return None, invocation_score(invocation_id, None, "not_evaluated", "no final response to rate", None)
        try:
            verdict = await service.evaluate(body(response), self.name)
        except JudgeError as exc:
            return None, invocation_score(invocation_id, None, "not_evaluated", str(exc), None)
        rating = verdict.score
        if rating is None or not LOW <= rating <= HIGH:
            why = f"the Vertex AI evaluation service gave {rating!r}, outside coherence's {LOW:g}-{HIGH:g}"
            return None, invocation_score(invocation_id, None, "not_evaluated", why, verdict_details(verdict))
        details = verdict_details(verdict, value=rating)
        return rating, invocation_score(invocation_id, clean_score(unit(rating)),
                                        threshold_status(rating, self.threshold_value), None, details)


def build(spec: CriterionSpec, ctx: BuildContext) -> Coherence:
    """Factory registered under ``response_evaluation_score``."""
    parse_options(ServiceOptions, spec)
    service, why = service_of(ctx)
    return Coherence(spec.name, spec.threshold, service, why)
