"""ADK's informational efficiency metrics: tool calls, model calls, tokens and seconds per invocation.

They follow google-adk 2.13 exactly, with one change of place: ADK's value (a count or seconds, not a [0, 1]
score) is in ``details["value"]`` per invocation and per case, and ``score`` stays null.  The status is always
``informational`` (as in ADK, even when there is no value) and never affects a verdict.  The case value is the
mean of the invocations that have one; ``token_usage_v1`` instead divides every token count by *all*
invocations (a count an invocation did not report is 0 there; a count no invocation reported stays null), and
``invocation_duration_v1`` rounds its case breakdown to milliseconds, as ADK does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.formats.adk import Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.formats.invocations import model_events
from evalbot.results import MetricResult, ScoreRow, mean, metric_of_rows

Measured = tuple[float | None, dict[str, Any]]
"""One invocation's value and the breakdown reported beside it."""
Measure = Callable[[CaseInput], list[Measured]]
"""The measurements of every actual invocation of a case (expected invocations are not used)."""
Aggregate = Callable[[list[Measured]], Measured]
"""The case value and breakdown from its invocations' measurements."""


@dataclass(frozen=True)
class Efficiency:
    """An informational metric: a value per invocation and an aggregate per case."""

    name: str
    measure: Measure
    aggregate: Aggregate
    missing: str
    threshold: float | None = None

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Measure every actual invocation (expected invocations are not used)."""
        measured = self.measure(case)
        per: list[ScoreRow] = [(invocation_id, None, "informational", None, {"value": value, **extra})
                               for invocation_id, (value, extra) in zip(case.invocation_ids, measured, strict=True)]
        value, extra = self.aggregate(measured) if measured else (None, {})
        reason = None if value is not None else (self.missing if measured else "the case has no invocations")
        return metric_of_rows(None, "informational", None, per, reason, {"value": value, **extra})


def _mean_values(measured: list[Measured]) -> Measured:
    return mean(value for value, _ in measured), {}


def tool_call_counts(case: CaseInput) -> list[Measured]:
    """Number of tool calls per invocation (either intermediate-data form), from the calls the case already read."""
    return [(float(len(calls)), {}) for calls in case.actual_call_rows]


def inference_call_count(invocation: Invocation) -> Measured:
    """Events that carry usage metadata or a model version; None without recorded events."""
    count, _ = model_events(invocation)
    return (None, {}) if count is None else (float(count), {})


def inference_call_counts(case: CaseInput) -> list[Measured]:
    """inference_call_count of every actual invocation, from the events pass the case shares with token_usage."""
    return [(None, {}) if count is None else (float(count), {}) for count, _ in case.actual_model_events]


TOKEN_FIELDS = (
    "total_tokens", "input_tokens", "prompt_tokens", "cached_tokens", "tool_use_tokens",
    "output_tokens", "candidates_tokens", "reasoning_tokens",
)


def _count(usage: dict[str, Any], snake: str) -> int | None:
    parts = snake.split("_")
    camel = parts[0] + "".join(p.title() for p in parts[1:])
    for key in (snake, camel):
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return int(value)
    return None


def _add(total: float | None, count: int | None) -> float | None:
    return total if count is None else (total or 0) + count


def _both(a: int | None, b: int | None) -> int | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


def token_breakdown(invocation: Invocation) -> dict[str, float | None]:
    """Token counts summed over the invocation's events; a count no event reported stays None (not 0)."""
    return _token_totals(model_events(invocation)[1])


def _token_totals(usages: list[dict[str, Any]]) -> dict[str, float | None]:
    totals: dict[str, float | None] = dict.fromkeys(TOKEN_FIELDS)
    if not usages:
        return totals
    for usage in usages:
        prompt, tool = _count(usage, "prompt_token_count"), _count(usage, "tool_use_prompt_token_count")
        cand, thoughts = _count(usage, "candidates_token_count"), _count(usage, "thoughts_token_count")
        for name, count in (
            ("input_tokens", _both(prompt, tool)),
            ("prompt_tokens", prompt),
            ("cached_tokens", _count(usage, "cached_content_token_count")),
            ("tool_use_tokens", tool),
            ("output_tokens", _both(cand, thoughts)),
            ("candidates_tokens", cand),
            ("reasoning_tokens", thoughts),
        ):
            totals[name] = _add(totals[name], count)
    if totals["input_tokens"] is not None or totals["output_tokens"] is not None:
        totals["total_tokens"] = (totals["input_tokens"] or 0) + (totals["output_tokens"] or 0)
    return totals


def _present(breakdown: dict[str, float | None]) -> dict[str, float]:
    return {k: v for k, v in breakdown.items() if v is not None}


def token_usage(invocation: Invocation) -> Measured:
    """Total tokens, with every token type in ``token_usage_details``."""
    return _usage_measured(model_events(invocation)[1])


def _usage_measured(usages: list[dict[str, Any]]) -> Measured:
    if not usages:
        return None, {"token_usage_details": {}}  # what the totals give when no event reported usage
    breakdown = _token_totals(usages)
    return breakdown["total_tokens"], {"token_usage_details": _present(breakdown)}


def token_usages(case: CaseInput) -> list[Measured]:
    """token_usage of every actual invocation, from the events pass the case shares with inference_call_count."""
    return [_usage_measured(usages) for _, usages in case.actual_model_events]


def _average_tokens(measured: list[Measured]) -> Measured:
    if not any(extra["token_usage_details"] for _, extra in measured):
        return None, {"token_usage_details": {}}  # nothing reported (the common case without ADK's events)
    averaged: dict[str, float | None] = {}
    for name in TOKEN_FIELDS:
        present = [extra["token_usage_details"][name] for _, extra in measured if name in extra["token_usage_details"]]
        averaged[name] = sum(present) / len(measured) if present else None
    return averaged["total_tokens"], {"token_usage_details": _present(averaged)}


DURATION_FIELDS = ("total_seconds", "model_seconds", "tool_seconds", "framework_seconds")


def invocation_duration(invocation: Invocation) -> Measured:
    """Seconds the invocation took, split into model, tool and framework time when those were measured."""
    total = invocation.duration
    if total is None:
        return None, {"duration_details": {}}
    model, tool = invocation.model_duration, invocation.tool_duration
    framework = None if model is None or tool is None else round(max(total - model - tool, 0.0), 3)
    parts = {"total_seconds": total, "model_seconds": model, "tool_seconds": tool, "framework_seconds": framework}
    return total, {"duration_details": {k: v for k, v in parts.items() if v is not None}}


def invocation_durations(case: CaseInput) -> list[Measured]:
    """invocation_duration of every actual invocation (one without a duration measured in place)."""
    return [(None, {"duration_details": {}}) if act.duration is None else invocation_duration(act)
            for act in case.actual]


def _average_duration(measured: list[Measured]) -> Measured:
    if not any(extra["duration_details"] for _, extra in measured):
        return None, {"duration_details": {}}  # nothing measured (the common case without recorded durations)
    averaged: dict[str, float] = {}
    for name in DURATION_FIELDS:
        present = [extra["duration_details"][name] for _, extra in measured if name in extra["duration_details"]]
        if present:
            averaged[name] = round(sum(present) / len(present), 3)
    return averaged.get("total_seconds"), {"duration_details": averaged}


def build_tool_call_count(spec: CriterionSpec, ctx: BuildContext) -> Efficiency:
    """``tool_call_count_v1``: tool calls per invocation."""
    return Efficiency(spec.name, tool_call_counts, _mean_values, "no invocation to count tool calls in")


def build_inference_call_count(spec: CriterionSpec, ctx: BuildContext) -> Efficiency:
    """``inference_call_count_v1``: model calls per invocation (needs ADK's recorded events)."""
    missing = "no invocation records its events (only runs recorded by ADK inference carry model calls)"
    return Efficiency(spec.name, inference_call_counts, _mean_values, missing)


def build_token_usage(spec: CriterionSpec, ctx: BuildContext) -> Efficiency:
    """``token_usage_v1``: tokens per invocation, with the per-type breakdown."""
    missing = "no invocation reports token usage (usage_metadata on recorded events)"
    return Efficiency(spec.name, token_usages, _average_tokens, missing)


def build_invocation_duration(spec: CriterionSpec, ctx: BuildContext) -> Efficiency:
    """``invocation_duration_v1``: seconds per invocation, with the model/tool/framework split."""
    missing = "no invocation records its duration"
    return Efficiency(spec.name, invocation_durations, _average_duration, missing)
