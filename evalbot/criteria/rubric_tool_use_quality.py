"""``rubric_based_tool_use_quality_v1``: a judge checks the agent's tool calls against rubrics (ADK 2.13).

Rubrics: the criterion's, plus case and invocation rubrics typed ``TOOL_USE_QUALITY``.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalbot.criteria.base import BuildContext, parse_options
from evalbot.criteria.judged import as_json, judge_call, tool_declarations, tool_steps, user_prompt
from evalbot.criteria.judged_rubrics import RubricCriterion, RubricOptions
from evalbot.formats.adk import Invocation, Rubric
from evalbot.formats.config import CriterionSpec
from evalbot.judges.templates import render

NAME = "rubric_based_tool_use_quality_v1"
RUBRIC_TYPE = "TOOL_USE_QUALITY"


def prompt(invocation: Invocation, rubrics: Sequence[Rubric], options: RubricOptions) -> str:
    """The judge prompt for one invocation."""
    tools = tool_declarations(invocation.app_details)
    steps = tool_steps(invocation)
    return render(
        "rubric_tool_use_quality.j2",
        tool_declarations=as_json(tools) if any(tools.values()) else "The agent has no tools.",
        user_prompt=user_prompt(invocation),
        steps=as_json(steps) if steps else "No tools were called.",
        rubrics=rubrics,
    )


def build(spec: CriterionSpec, ctx: BuildContext) -> RubricCriterion:
    """Factory registered under ``rubric_based_tool_use_quality_v1``."""
    options = parse_options(RubricOptions, spec)
    call = judge_call(ctx, options.judge_model_options, spec.name)
    return RubricCriterion(spec.name, spec.threshold, options, RUBRIC_TYPE, prompt, call, ctx.judge_unavailable_reason)
