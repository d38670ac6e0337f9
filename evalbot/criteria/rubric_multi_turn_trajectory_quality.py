"""``rubric_based_multi_turn_trajectory_quality_v1``: a judge checks the whole conversation against rubrics (ADK 2.13).

Semantics of ADK 2.13 (``rubric_based_multi_turn_trajectory_evaluator.py``): the judge reads every turn of the
conversation at once (user messages, the agents' texts, tool calls and tool results, final responses, plus the
agents' instructions and tools) and gives a verdict per rubric; ``num_samples`` answers are put to a majority vote per
rubric (a tie fails) and the case score is the mean of the rubrics' verdicts. The verdict belongs to the LAST
invocation; the earlier ones carry none.

Rubrics: the criterion's, plus case and invocation rubrics typed ``TRAJECTORY_QUALITY``. Two deliberate
differences from ADK, both documented in docs/criteria.md:

- ADK reads invocation-level rubrics of the last invocation only (it judges "the last turn"), so a
  ``TRAJECTORY_QUALITY`` rubric put on an earlier turn is silently dropped; evalbot judges the rubrics of every turn.
- ADK marks the earlier invocations NOT_EVALUATED; evalbot marks them ``informational`` (no verdict of their own),
  because a not_evaluated judged verdict is a judge failure for evalbot's gate.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalbot.criteria.base import BuildContext, CaseInput, not_evaluated, parse_options, score_invocation
from evalbot.criteria.judged import NO_JUDGE, JudgeCall, agent_instructions, judge_call, unavailable
from evalbot.criteria.judged_rubrics import RubricError, RubricOptions, effective_rubrics, judge_rubrics, summarize
from evalbot.formats.adk import IntermediateData, Invocation, InvocationEvents, Rubric
from evalbot.formats.config import CriterionSpec
from evalbot.formats.invocations import content_text
from evalbot.judges.templates import render
from evalbot.results import InvocationScore, MetricResult, invocation_score

NAME = "rubric_based_multi_turn_trajectory_quality_v1"
RUBRIC_TYPE = "TRAJECTORY_QUALITY"
EARLIER_TURN = "no verdict of its own: the whole conversation is judged once, on its last invocation"


def _args(value: Any) -> str:
    return json.dumps(value if value is not None else {}, ensure_ascii=False, sort_keys=True, default=str)


def _turn_lines(number: int, invocation: Invocation) -> list[str]:
    """One invocation as conversation lines: the user, what the agents said and called, the final answer."""
    lines = []
    user = content_text(invocation.user_content)
    if user:
        lines.append(f"[turn {number}] user says: {user}")
    data = invocation.intermediate_data
    agent = "agent"
    if isinstance(data, InvocationEvents):
        agent = data.invocation_events[0].author if data.invocation_events else agent
        for event in data.invocation_events:
            who = "user" if event.author.lower() == "user" else f"agent {event.author}"
            parts = (event.content.parts or []) if event.content else []
            text = "\n".join(p.text for p in parts if p.text)
            if text:
                lines.append(f"[turn {number}] {who} says: {text}")
            for part in parts:
                if part.function_call is not None:
                    call = part.function_call
                    lines.append(f"[turn {number}] {who} calls tool {call.name} with arguments {_args(call.args)}")
                if part.function_response is not None:
                    response = part.function_response
                    lines.append(f"[turn {number}] tool {response.name} returns {_args(response.response)}")
    elif isinstance(data, IntermediateData):
        for call in data.tool_uses:
            lines.append(f"[turn {number}] agent calls tool {call.name} with arguments {_args(call.args)}")
        for response in data.tool_responses:
            lines.append(f"[turn {number}] tool {response.name} returns {_args(response.response)}")
        for author, parts in data.intermediate_responses:
            text = "\n".join(p.text for p in parts if p.text)
            if text:
                lines.append(f"[turn {number}] agent {author} says: {text}")
    final = content_text(invocation.final_response)
    if final:
        lines.append(f"[turn {number}] agent {agent} answers: {final}")
    return lines


def conversation(invocations: Sequence[Invocation]) -> str:
    """The whole conversation, one line per message, tool call or tool result, numbered by turn."""
    return "\n".join(line for i, inv in enumerate(invocations) for line in _turn_lines(i + 1, inv))


def _tools(invocations: Sequence[Invocation]) -> list[str]:
    """``agent: tool — description`` for every declared function of every agent seen (each once)."""
    found: dict[str, None] = {}
    for inv in invocations:
        for name, details in (inv.app_details.agent_details.items() if inv.app_details else []):
            for tool in details.tool_declarations:
                functions = tool.get("function_declarations") if isinstance(tool, dict) else None
                for fn in functions if isinstance(functions, list) else []:
                    if isinstance(fn, dict):
                        found[f"{name}: {fn.get('name')} — {fn.get('description') or '(no description)'}"] = None
    return list(found)


def _instructions(invocations: Sequence[Invocation]) -> list[str]:
    found: dict[str, None] = {}
    for inv in invocations:
        for name, text in agent_instructions(inv.app_details):
            found[f"Agent {name}:\n{text}"] = None
    return list(found)


def prompt(invocations: Sequence[Invocation], rubrics: Sequence[Rubric]) -> str:
    """The judge prompt for a whole conversation."""
    properties = [f"[id: {' '.join(r.rubric_id.split())}] {' '.join((r.rubric_content.text_property or '').split())}"
                  for r in rubrics]
    return render(
        "rubric_multi_turn_trajectory_quality.j2",
        instructions="\n\n".join(_instructions(invocations)) or "(none given)",
        tools="\n".join(_tools(invocations)) or "The agents declared no tools.",
        conversation=conversation(invocations) or "(the conversation is empty)",
        properties="\n".join(properties),
    )


def rubrics_of(criterion: Sequence[Rubric], case: CaseInput) -> list[Rubric]:
    """The criterion's rubrics plus every ``TRAJECTORY_QUALITY`` rubric of the case, its invocations and the
    expected invocations (the last invocation's first, as ADK reads them)."""
    expected = case.expected or []
    scoped: list[Sequence[Rubric] | None] = [case.actual[-1].rubrics, case.case.rubrics]
    if len(expected) >= len(case.actual):
        scoped.append(expected[len(case.actual) - 1].rubrics)
    scoped += [inv.rubrics for inv in case.actual[:-1]] + [inv.rubrics for inv in expected]
    rubrics = effective_rubrics(criterion, scoped, RUBRIC_TYPE)
    if not rubrics:
        raise RubricError(f"the conversation has no rubrics: give the criterion 'rubrics' or add rubrics with "
                          f"\"type\": \"{RUBRIC_TYPE}\" to the case or its invocations")
    return rubrics


@dataclass(frozen=True)
class TrajectoryCriterion:
    """One judge verdict per rubric over the whole conversation, carried by the last invocation."""

    name: str
    threshold: float | None
    options: RubricOptions
    call: JudgeCall | None
    unavailable_reason: str | None = None

    async def evaluate(self, case: CaseInput) -> MetricResult:
        """Judge the conversation once against its effective rubrics."""
        if not case.actual:
            return not_evaluated(self.threshold, "the case has no invocations to judge")
        earlier: list[InvocationScore] = [
            invocation_score(inv.invocation_id or None, None, "informational", EARLIER_TURN, None)
            for inv in case.actual[:-1]
        ]
        if self.call is None:
            reason = unavailable(self.name, self.threshold, self.unavailable_reason, case).reason or NO_JUDGE
            return self._unjudged(case, earlier, reason)
        try:
            rubrics = rubrics_of(self.options.rubrics or [], case)
        except RubricError as exc:
            return self._unjudged(case, earlier, str(exc))
        call = self.call.fresh()
        last = await judge_rubrics(call, prompt(case.actual, rubrics), self.threshold, case.actual[-1], rubrics)
        return summarize(self.threshold, [*earlier, last], call)

    def _unjudged(self, case: CaseInput, earlier: list[InvocationScore], reason: str) -> MetricResult:
        """Not evaluated, the reason on the last invocation (the one a verdict would belong to)."""
        last = score_invocation(None, self.threshold, case.actual[-1], reason=reason)
        return not_evaluated(self.threshold, reason).model_copy(update={"per_invocation": [*earlier, last]})


def build(spec: CriterionSpec, ctx: BuildContext) -> TrajectoryCriterion:
    """Factory registered under ``rubric_based_multi_turn_trajectory_quality_v1``."""
    options = parse_options(RubricOptions, spec)
    call = judge_call(ctx, options.judge_model_options, spec.name)
    return TrajectoryCriterion(spec.name, spec.threshold, options, call, ctx.judge_unavailable_reason)
