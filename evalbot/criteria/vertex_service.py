"""What the criteria scored by the Vertex AI evaluation service share: the requests ADK 2.13 sends, reading verdicts.

ADK 2.13 hands ``safety_v1``, ``response_evaluation_score`` and the three ``multi_turn_*_v1`` metrics to the Gen AI
evaluation SDK (``vertex_ai_eval_facade.py``), which sends one ``evaluateInstances`` request per invocation
(single-turn metrics) or one per conversation (multi-turn metrics). The bodies built here are the ones recorded from
google-adk 2.13.0 and google-cloud-agentplatform 2.6.0 (snake_case JSON, as the SDK sends it):

* predefined metrics: ``{"metrics": [{"predefined_metric_spec": {"metric_spec_name": NAME}}], "instance": ...}``;
* a single turn (``safety_v1``): ``instance`` has ``prompt``, ``response`` and, when there is an expected
  invocation, ``reference``, each ``{"contents": {"contents": [{"parts": [{"text": ...}]}]}}``, and
  ``agent_eval_data`` with one turn (``turn_0``: the user's text, then the model's);
* a conversation (``multi_turn_*``): ``instance`` has an empty ``prompt`` and ``agent_eval_data`` with ``agents``
  (each agent's id, instruction and tool declarations from the invocations' ``app_details``) and one turn per
  invocation (``turn_index``, ``turn_id`` = the invocation id, events: the user's content, the events of ADK's
  ``invocation_events`` form, the final response as author ``agent``). Hand-written ``tool_uses`` are not sent,
  as ADK does not send them.

Without the service's credentials a criterion is ``not_evaluated`` saying what to set (SERVICE_MARK, which the
gate counts as missing judge credentials); a failed call or an answer without a score is ``not_evaluated`` with the
reason (a judge failure). Never a configuration error, never a silent score.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evalbot.criteria.base import BuildContext, CaseInput, Options, not_evaluated, parse_options, score_invocation
from evalbot.criteria.judged import clip
from evalbot.formats.adk import Content, Invocation, InvocationEvents
from evalbot.formats.config import CriterionSpec
from evalbot.judges.base import SERVICE_MISSING, EvaluationService, JudgeError, ServiceVerdict
from evalbot.results import JudgeDetails, MetricResult, RubricVerdict, invocation_score

SERVICE_MARK = "needs the Vertex AI evaluation service: "
"""In the reason of a criterion that had no service to call (compare.judge_gaps counts it as missing credentials)."""
METHOD = "Vertex AI evaluation service"


def service_of(ctx: BuildContext) -> tuple[EvaluationService | None, str]:
    """The run's evaluation service, and why there is none (what to set) when it is None."""
    judge = ctx.judge
    if judge is None:
        return None, SERVICE_MISSING
    return judge.vertex_service, judge.vertex_unavailable or SERVICE_MISSING


def no_service(name: str, threshold: float | None, why: str, case: CaseInput) -> MetricResult:
    """Every invocation not evaluated because the service cannot be reached (one clear message)."""
    return not_evaluated(threshold, f"{name} {SERVICE_MARK}{why}", len(case.actual))


def text_data(text: str) -> dict[str, Any]:
    """A text as the SDK's ``InstanceData`` (one content of one text part)."""
    return {"contents": {"contents": [{"parts": [{"text": text}]}]}}


def predefined(metric: str, instance: Mapping[str, Any]) -> dict[str, Any]:
    """An ``evaluateInstances`` body asking the predefined metric ``metric`` about ``instance``."""
    return {"metrics": [{"predefined_metric_spec": {"metric_spec_name": metric}}], "instance": dict(instance)}


def single_turn(prompt: str, response: str, reference: str | None) -> dict[str, Any]:
    """The instance of one invocation (the SDK's, from a dataset row with prompt, response and reference)."""
    instance: dict[str, Any] = {"prompt": text_data(prompt), "response": text_data(response)}
    if reference is not None:
        instance["reference"] = text_data(reference)
    instance["agent_eval_data"] = {"turns": [{"turn_index": 0, "turn_id": "turn_0", "events": [
        {"author": "user", "content": {"parts": [{"text": prompt}]}},
        {"author": "model", "content": {"parts": [{"text": response}]}}]}]}
    return instance


def _content(content: Content | None) -> dict[str, Any] | None:
    return None if content is None else content.model_dump(mode="json", exclude_none=True)


def _event(author: str, content: Content | None) -> dict[str, Any]:
    event: dict[str, Any] = {"author": author}
    dumped = _content(content)
    if dumped is not None:
        event["content"] = dumped
    return event


def _turn(index: int, invocation: Invocation) -> dict[str, Any]:
    events = [_event("user", invocation.user_content)]
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        events += [_event(e.author, e.content) for e in data.invocation_events if e.content is not None]
    events.append(_event("agent", invocation.final_response))
    return {"turn_index": index, "turn_id": invocation.invocation_id, "events": events}


def conversation(invocations: Sequence[Invocation]) -> dict[str, Any]:
    """The instance of a whole conversation (ADK's ``_get_agent_data``): its agents and one turn per invocation."""
    agents: dict[str, Any] = {}
    for invocation in invocations:
        if invocation.app_details is None:
            continue
        for key, details in invocation.app_details.agent_details.items():
            agents.setdefault(key, {"agent_id": details.name, "instruction": details.instructions,
                                    "tools": details.tool_declarations})
    return {"prompt": {"contents": {"contents": []}},
            "agent_eval_data": {"agents": agents, "turns": [_turn(i, inv) for i, inv in enumerate(invocations)]}}


def verdict_details(verdict: ServiceVerdict, **extra: Any) -> dict[str, Any]:
    """The service's explanation and rubric verdicts as an invocation's details (ADK's rubric scores: a met rubric
    1.0, an unmet one 0.0, with the service's reasoning)."""
    rubrics = [RubricVerdict(rubric_id=clip(r.rubric, 300), score=1.0 if r.verdict else 0.0,
                             rationale=clip(r.reasoning)) for r in verdict.rubrics[:100]]
    details = JudgeDetails(rationale=clip(verdict.explanation) or None, rubrics=rubrics or None).as_details()
    details.update(extra)
    return details


EARLIER_TURN = "no verdict of its own: the Vertex AI evaluation service judges the whole conversation once, on its " \
               "last invocation"
"""The earlier invocations of a multi-turn metric (ADK marks them NOT_EVALUATED; here ``informational``, since a
not_evaluated judged verdict is a judge failure for the gate)."""


class ServiceOptions(Options):
    """ADK's Vertex-service criteria take only a threshold."""


@dataclass(frozen=True)
class MultiTurnMetric:
    """A ``multi_turn_*_v1`` metric: one request with the whole conversation; the verdict (a score in [0, 1]) is
    the last invocation's and the case's."""

    name: str
    metric: str
    threshold: float | None
    service: EvaluationService | None
    why: str

    async def evaluate(self, case: CaseInput) -> MetricResult:
        """Ask the service about the conversation once."""
        if not case.actual:
            return not_evaluated(self.threshold, "the case has no invocations to judge")
        earlier = [invocation_score(inv.invocation_id or None, None, "informational", EARLIER_TURN, None)
                   for inv in case.actual[:-1]]
        last_invocation = case.actual[-1]

        def unjudged(reason: str) -> MetricResult:  # one verdict missing: the last invocation's
            last = score_invocation(None, self.threshold, last_invocation, reason=reason)
            return not_evaluated(self.threshold, reason).model_copy(update={"per_invocation": [*earlier, last]})

        if self.service is None:
            return unjudged(f"{self.name} {SERVICE_MARK}{self.why}")
        try:
            verdict = await self.service.evaluate(predefined(self.metric, conversation(case.actual)), self.name)
        except JudgeError as exc:
            return unjudged(str(exc))
        score, reason = verdict.score, None
        if score is not None and not 0.0 <= score <= 1.0:
            score, reason = None, f"the Vertex AI evaluation service gave {verdict.score!r}, outside this metric's [0, 1]"
        last = score_invocation(score, self.threshold, last_invocation, reason=reason,
                                details=verdict_details(verdict))
        return MetricResult(score=last.score, status=last.status, threshold=self.threshold,
                            per_invocation=[*earlier, last], reason=reason, details={"method": METHOD})


def build_multi_turn(spec: CriterionSpec, ctx: BuildContext, metric: str) -> MultiTurnMetric:
    """A ``multi_turn_*_v1`` criterion asking the service's predefined ``metric``."""
    parse_options(ServiceOptions, spec)
    service, why = service_of(ctx)
    return MultiTurnMetric(spec.name, metric, spec.threshold, service, why)
