"""Vertex-style pointwise template metrics: criteria, a rating rubric and input variables -> score and explanation.

Declared in ``test_config.json`` under any criterion name, with a ``metric_prompt_template`` object (the fields of
Vertex's ``PointwiseMetricPromptTemplate``: ``criteria``, ``rating_rubric``, ``input_variables``, optional
``instruction``, ``metric_definition``, ``evaluation_steps``, ``few_shot_examples``) and a ``threshold``::

    "follows_trajectory": {"threshold": 0.5,
      "metric_prompt_template": {"criteria": {"Follows trajectory": "..."},
                                 "rating_rubric": {"1": "Follows", "0": "Does not follow"},
                                 "input_variables": ["prompt", "predicted_trajectory"]}}

Vertex fills and judges the template server-side; evalbot renders its own prompt with the same ingredients and
asks the judge for ``{"explanation", "score"}``. A score outside the rubric's ratings is unparseable. With
``num_samples`` > 1 (default 1) the invocation's rating is the mean of the parsed samples. Every score in evalbot's
report lies in [0, 1], so the rating is normalised over the rubric's range, ``(rating - lowest) / (highest -
lowest)`` (a 1-5 rubric maps 4 to 0.75), and the rating itself is kept in ``details.rating``; the threshold is on
the normalised scale. Case score = mean of the scored invocations (Vertex's ``<metric>/mean``, normalised).
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pydantic import Field, field_validator

from evalbot.criteria.base import BuildContext, CaseInput, Options, parse_options, score_invocation
from evalbot.criteria.judged import (
    JudgeCall,
    JudgeModelOptions,
    echo_reason,
    judge_call,
    rationale_of,
    unavailable,
    user_prompt,
)
from evalbot.errors import ConfigError
from evalbot.formats.adk import Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.formats.invocations import content_text, final_text, tool_calls
from evalbot.judges.templates import echoes_example, render
from evalbot.results import InvocationScore, JudgeDetails, MetricResult, VoteSplit, threshold_status

_SCORE = re.compile(r'"score"\s*:\s*"?(-?\d+(?:\.\d+)?)')


class PromptTemplate(Options):
    """Vertex's PointwiseMetricPromptTemplate fields."""

    criteria: dict[str, str] = Field(min_length=1)
    rating_rubric: dict[str, str] = Field(min_length=1)
    input_variables: list[str] = Field(default_factory=lambda: ["prompt"])
    instruction: str | None = None
    metric_definition: str | None = None
    evaluation_steps: dict[str, str] | None = None
    few_shot_examples: list[str] | None = None

    @field_validator("rating_rubric")
    @classmethod
    def _numeric(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            try:
                float(key)
            except ValueError:
                raise ValueError(f"rating_rubric keys must be numbers (the scores), got {key!r}") from None
        return value


class PointwiseOptions(Options):
    """A pointwise metric: its template and the judge settings."""

    metric_prompt_template: PromptTemplate
    judge_model_options: JudgeModelOptions = JudgeModelOptions(num_samples=1)
    include_intermediate_responses_in_final: bool = False


def _trajectory(invocation: Invocation | None) -> str:
    calls = tool_calls(invocation) if invocation is not None else []
    return json.dumps([{"tool_name": c.name, "tool_input": c.args} for c in calls], ensure_ascii=False)


Variable = Callable[[Invocation, Invocation | None, list[Invocation]], str]
VARIABLES: dict[str, Variable] = {
    "prompt": lambda act, exp, before: user_prompt(act),
    "reference": lambda act, exp, before: final_text(exp) if exp is not None else "",
    "predicted_trajectory": lambda act, exp, before: _trajectory(act),
    "reference_trajectory": lambda act, exp, before: _trajectory(exp),
    "history": lambda act, exp, before: "\n".join(
        f"user: {user_prompt(i)}\nagent: {content_text(i.final_response)}" for i in before),
}
"""Input variables evalbot can fill from an invocation (``response`` is always the final response)."""


def parse_score(text: str, allowed: set[float]) -> float | None:
    """The ``score`` of a JSON answer, if it is one of the rubric's ratings.

    Every ``score`` field of the answer is read: one that carries different values (a judge quoting an agent answer
    that ends with ``{"score": 5}`` before its own ``{"score": 1}``) has no score, never the first one's."""
    values = {float(match.group(1)) for match in _SCORE.finditer(text)}
    if len(values) != 1:
        return None
    value = values.pop()
    return value if value in allowed else None


def normalise(rating: float | None, allowed: set[float]) -> float | None:
    """A rating mapped onto [0, 1] over the rubric's range (a one-rating rubric maps to 1.0)."""
    if rating is None:
        return None
    low, high = min(allowed), max(allowed)
    return 1.0 if high == low else (rating - low) / (high - low)


def sample_votes(samples: Sequence[float | None], allowed: set[float], threshold: float | None) -> VoteSplit | None:
    """Each sample's own verdict: would its rating alone pass the threshold? The score averages the ratings; these
    votes tell the gate whether the samples agreed (a flip on ratings that disagree is judge noise, not a regression)
    and give the exact test its counts. None without a threshold (an informational metric has no verdict)."""
    if threshold is None:
        return None
    verdicts = [None if s is None else threshold_status(normalise(s, allowed), threshold) for s in samples]
    yes, no = verdicts.count("passed"), verdicts.count("failed")
    return VoteSplit(yes=yes, no=no, unparsed=len(samples) - yes - no)


@dataclass(frozen=True)
class PointwiseTemplate:
    """A user-declared judge metric."""

    name: str
    threshold: float | None
    options: PointwiseOptions
    call: JudgeCall | None
    unavailable_reason: str | None = None

    async def evaluate(self, case: CaseInput) -> MetricResult:
        """Rate every invocation; the case score is the mean of the rated ones."""
        if self.call is None:
            return unavailable(self.name, self.threshold, self.unavailable_reason, case)
        call = self.call.fresh()
        expected = list(case.expected or [])
        actual = list(case.actual)
        scores = list(await asyncio.gather(*(
            self._one(call, inv, expected[i] if i < len(expected) else None, actual[:i])
            for i, inv in enumerate(actual))))
        present = [s.score for s in scores if s.score is not None]
        overall = statistics.mean(present) if present else None
        reason = None if present else "no invocation could be rated (see each invocation's reason)"
        return MetricResult(score=overall, status=threshold_status(overall, self.threshold), threshold=self.threshold,
                            per_invocation=scores, reason=reason, details=call.tally.details())

    async def _one(self, call: JudgeCall, actual: Invocation, expected: Invocation | None,
                   before: list[Invocation]) -> InvocationScore:
        template = self.options.metric_prompt_template
        allowed = {float(k) for k in template.rating_rubric}
        prompt = render(
            "pointwise.j2",
            instruction=template.instruction,
            metric_definition=template.metric_definition,
            criteria=sorted(template.criteria.items()),
            rubric=sorted(template.rating_rubric.items(), key=lambda kv: float(kv[0])),
            steps=sorted((template.evaluation_steps or {}).items()),
            examples=template.few_shot_examples or [],
            allowed=", ".join(sorted(template.rating_rubric, key=float)),
            inputs=[(v, VARIABLES[v](actual, expected, before)) for v in template.input_variables if v != "response"],
            response=final_text(actual),
        )
        answer = await call.ask(prompt)
        if answer.error is not None:
            return score_invocation(None, self.threshold, actual, reason=answer.error)
        samples = [None if echoes_example(t) else parse_score(t, allowed) for t in answer.texts]
        present = [s for s in samples if s is not None]
        rating = statistics.mean(present) if present else None
        score = normalise(rating, allowed)
        first = next((t for t, s in zip(answer.texts, samples, strict=True) if s is not None),
                     answer.texts[0] if answer.texts else "")
        details = JudgeDetails(samples=samples, rating=rating, rationale=rationale_of(first),
                               votes=sample_votes(samples, allowed, self.threshold))
        reason = None if score is not None else (
            echo_reason(answer.texts) or "the judge's answers had no score from the rating rubric")
        return score_invocation(score, self.threshold, actual, reason=reason, details=details.as_details())


def build(spec: CriterionSpec, ctx: BuildContext) -> PointwiseTemplate:
    """Factory for criteria whose options carry a ``metric_prompt_template``."""
    options = parse_options(PointwiseOptions, spec)
    unknown = [v for v in options.metric_prompt_template.input_variables if v != "response" and v not in VARIABLES]
    if unknown:
        raise ConfigError(f"{spec.name}: unknown input variable(s) {', '.join(unknown)}; evalbot can fill "
                          f"{', '.join(['response', *VARIABLES])}")
    if spec.threshold is not None and not 0.0 <= spec.threshold <= 1.0:
        ratings = sorted(float(k) for k in options.metric_prompt_template.rating_rubric)
        raise ConfigError(
            f"{spec.name}: threshold {spec.threshold:g} is outside 0..1; scores are ratings normalised over the "
            f"rubric's range {ratings[0]:g}..{ratings[-1]:g}, i.e. (rating - {ratings[0]:g}) / "
            f"({ratings[-1]:g} - {ratings[0]:g})"
        )
    call = judge_call(ctx, options.judge_model_options, spec.name)
    return PointwiseTemplate(spec.name, spec.threshold, options, call, ctx.judge_unavailable_reason)
