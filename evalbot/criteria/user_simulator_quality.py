"""``per_turn_user_simulator_quality_v1``: did the simulated user follow its conversation plan? (ADK 2.13)

Turn 1 passes when the user's text equals the scenario's starting prompt (no judge). Every later turn is judged
(``num_samples`` votes, a tie fails). One more judgement asks whether the conversation should have ended with the
stop signal after the last turn; when that fails, it replaces the last turn's verdict (when it cannot be judged, the
last turn is not_evaluated). Case score = passed turns divided by scored turns (turn 1 included).

Deliberate differences: a turn whose answers were all unparseable, or whose judge call failed, is not_evaluated and
left out of the denominator (ADK counts an unparseable turn as a fail-like 0 and lets a failed call void the whole
criterion); the other turns are still scored.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from evalbot.criteria.base import BuildContext, CaseInput, Options, not_evaluated, parse_options, score_invocation
from evalbot.criteria.judged import JudgeCall, JudgeModelOptions, judge_call, judge_verdict, unavailable
from evalbot.formats.adk import ConversationScenario, Invocation, UserPersona
from evalbot.formats.config import CriterionSpec
from evalbot.formats.invocations import content_text
from evalbot.formats.personas import BUILTIN_PERSONAS, unknown_persona_message
from evalbot.judges.templates import render
from evalbot.results import InvocationScore, JudgeDetails, MetricResult, threshold_status

NAME = "per_turn_user_simulator_quality_v1"
_IS_VALID = re.compile(r'"is_valid":\s*\[*[\n\s]*"*([^"\]]*)"*[\n\s]*\]*\s*[,\n\}]')


class UserSimulatorQualityOptions(Options):
    """ADK's LlmBackedUserSimulatorCriterion options."""

    judge_model_options: JudgeModelOptions = JudgeModelOptions()
    stop_signal: str = Field(default="</finished>", min_length=1)
    include_intermediate_responses_in_final: bool = False


def parse_valid(text: str) -> float | None:
    """1.0 valid, 0.0 invalid, None when the ``is_valid`` field is missing or unrecognised (ADK's rules)."""
    scores: set[float | None] = set()
    for match in _IS_VALID.finditer(text):
        label = match.group(1).strip("}").replace(",", "").strip().lower()
        if label in {"invalid", "almost", "false", "partially_valid", "partially valid", "partially"}:
            scores.add(0.0)
        else:
            scores.add(1.0 if label in {"valid", "true"} else None)
    return scores.pop() if len(scores) == 1 else None  # none, or conflicting verdicts: unrecognised


def persona_text(persona: UserPersona | str | None) -> str:
    """The persona shown to the judge: description, then each behaviour with what the user must not do.

    An id is resolved from the built-in personas exactly as the simulator resolves it, so the judge checks the user
    against the persona the simulator was given (ADK gives its judge the persona's violation rubrics too).
    """
    if persona is None:
        return ""
    if isinstance(persona, str):
        data: dict[str, Any] = BUILTIN_PERSONAS.get(persona) or {"description": unknown_persona_message(persona)}
    else:
        data = persona.model_dump(mode="json", exclude_none=True)
    lines = [str(data.get("description") or data.get("id") or "")]
    behaviors = data.get("behaviors")
    for behavior in behaviors if isinstance(behaviors, list) else []:
        if not isinstance(behavior, dict):
            continue
        lines.append(f"- {behavior.get('name', '')}: {behavior.get('description', '')}")
        rubrics = behavior.get("violation_rubrics", behavior.get("violationRubrics")) or []
        lines.extend(f"  - violated when: {r}" for r in (rubrics if isinstance(rubrics, list) else []))
    return "\n".join(line for line in lines if line)


def history(invocations: list[Invocation]) -> str:
    """The conversation before a turn, one message per paragraph."""
    lines = []
    for inv in invocations:
        if inv.user_content.parts:
            lines.append(f"USER: {content_text(inv.user_content)}")
        if inv.final_response is not None:
            lines.append(f"AGENT: {content_text(inv.final_response)}")
    return "\n\n".join(lines)


@dataclass(frozen=True)
class UserSimulatorQuality:
    """Per-turn check of a simulated user against its scenario."""

    threshold: float | None
    options: UserSimulatorQualityOptions
    call: JudgeCall | None
    unavailable_reason: str | None = None
    name: str = NAME

    async def evaluate(self, case: CaseInput) -> MetricResult:
        """Score every turn, then apply the stop-signal check to the last one."""
        if self.call is None:
            return unavailable(self.name, self.threshold, self.unavailable_reason, case)
        scenario = case.scenario
        if scenario is None:
            return not_evaluated(self.threshold, f"{self.name} needs a conversation_scenario case",
                                 len(case.actual))
        if not case.actual:
            return not_evaluated(self.threshold, "the case has no invocations to score")
        call = self.call.fresh()
        actual = list(case.actual)
        first = self._first(actual[0], scenario)
        judged = [self._judge(call, scenario, actual[:i], content_text(inv.user_content), inv)
                  for i, inv in enumerate(actual) if i > 0]
        stop = self._judge(call, scenario, actual, self.options.stop_signal, actual[-1])
        *later, stop_result = await asyncio.gather(*judged, stop)
        turns = [first, *later]
        if stop_result.status == "failed":
            turns[-1] = stop_result.model_copy(
                update={"reason": "the simulated user should have ended the conversation with the stop signal "
                                  "here: " + (JudgeDetails.read(stop_result.details).rationale or "")})
        elif stop_result.status == "not_evaluated":
            turns[-1] = turns[-1].model_copy(
                update={"score": None, "status": "not_evaluated",
                        "reason": f"the stop-signal check could not be judged: {stop_result.reason}"})
        scored = [t for t in turns if t.status != "not_evaluated"]
        overall = sum(1.0 for t in scored if t.status == "passed") / len(scored) if scored else None
        reason = None if scored else "no turn could be judged (see each turn's reason)"
        return MetricResult(score=overall, status=threshold_status(overall, self.threshold), threshold=self.threshold,
                            per_invocation=turns, reason=reason, details=call.tally.details())

    def _first(self, invocation: Invocation, scenario: ConversationScenario) -> InvocationScore:
        parts = [p.text for p in invocation.user_content.parts or [] if p.text]
        if not parts:
            return score_invocation(None, self.threshold, invocation, reason="the first user turn has no text")
        same = content_text(invocation.user_content).strip() == scenario.starting_prompt.strip()
        reason = None if same else "the first user message is not the scenario's starting_prompt"
        return score_invocation(1.0 if same else 0.0, self.threshold, invocation, reason=reason)

    async def _judge(self, call: JudgeCall, scenario: ConversationScenario, before: list[Invocation],
                     message: str, invocation: Invocation) -> InvocationScore:
        prompt = render(
            "user_simulator_quality.j2",
            conversation_plan=scenario.conversation_plan,
            persona=persona_text(scenario.user_persona),
            history=history(before),
            user_message=message,
            stop_signal=self.options.stop_signal,
        )
        return await judge_verdict(call, prompt, parse_valid, self.threshold, invocation,
                                   "the judge's answers had no recognisable is_valid verdict")


def build(spec: CriterionSpec, ctx: BuildContext) -> UserSimulatorQuality:
    """Factory registered under ``per_turn_user_simulator_quality_v1``."""
    options = parse_options(UserSimulatorQualityOptions, spec)
    call = judge_call(ctx, options.judge_model_options, spec.name)
    return UserSimulatorQuality(spec.threshold, options, call, ctx.judge_unavailable_reason, spec.name)
