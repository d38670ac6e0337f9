"""``rubric_based_final_response_quality_v1``: a judge checks the final response against rubrics (ADK 2.13).

Reference-free. Rubrics: the criterion's, plus case and invocation rubrics typed ``FINAL_RESPONSE_QUALITY``.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalbot.criteria.base import BuildContext, parse_options
from evalbot.criteria.judged import (
    as_json,
    judge_call,
    response_text,
    tool_declarations,
    tool_steps,
    user_prompt,
)
from evalbot.criteria.judged_rubrics import RubricCriterion, RubricOptions
from evalbot.formats.adk import Invocation, InvocationEvents, Rubric
from evalbot.formats.config import CriterionSpec
from evalbot.judges.templates import render

NAME = "rubric_based_final_response_quality_v1"
RUBRIC_TYPE = "FINAL_RESPONSE_QUALITY"


def _instructions(invocation: Invocation) -> str:
    """The instructions of the agent that answered: the first event's author, else the first agent."""
    app = invocation.app_details
    if app is None:
        return ""
    data = invocation.intermediate_data
    author = None
    if isinstance(data, InvocationEvents) and data.invocation_events:
        author = data.invocation_events[0].author
    elif app.agent_details:
        author = next(iter(app.agent_details))
    details = app.agent_details.get(author) if author else None
    return details.instructions if details else ""


def _grounding(invocation: Invocation) -> str:
    data = invocation.intermediate_data
    if not isinstance(data, InvocationEvents):
        return ""
    found = [{"step": i, "author": e.author, "grounding_metadata": e.grounding_metadata}
             for i, e in enumerate(data.invocation_events) if e.grounding_metadata]
    return as_json(found) if found else ""


def prompt(invocation: Invocation, rubrics: Sequence[Rubric], options: RubricOptions) -> str:
    """The judge prompt for one invocation."""
    tools = tool_declarations(invocation.app_details)
    steps = tool_steps(invocation)
    return render(
        "rubric_final_response_quality.j2",
        developer_instructions=_instructions(invocation),
        tool_declarations=as_json(tools) if any(tools.values()) else "The agent has no tools.",
        user_prompt=user_prompt(invocation),
        steps=as_json(steps) if steps else "No tools were called.",
        grounding=_grounding(invocation),
        final_answer=response_text(invocation, options.include_intermediate_responses_in_final),
        rubrics=rubrics,
    )


def build(spec: CriterionSpec, ctx: BuildContext) -> RubricCriterion:
    """Factory registered under ``rubric_based_final_response_quality_v1``."""
    options = parse_options(RubricOptions, spec)
    call = judge_call(ctx, options.judge_model_options, spec.name)
    return RubricCriterion(spec.name, spec.threshold, options, RUBRIC_TYPE, prompt, call, ctx.judge_unavailable_reason)
