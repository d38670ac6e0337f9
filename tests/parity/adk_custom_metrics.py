"""ADK-contract custom metric functions for the custom-metric parity goldens (needs google-adk).

scripts/make_custom_metric_goldens.py registers them in google-adk's own LocalEvalService; the parity test runs the
same config through evalbot, which imports them as ``tests.parity.adk_custom_metrics.<name>``.  They cover the
shapes a user's function returns: consistent statuses, async, another value range, ADK's default status
(NOT_EVALUATED) left in place, a status contradicting the threshold, a raise, and no per-invocation results.
"""

from __future__ import annotations

import asyncio
from typing import Any

from google.adk.evaluation.eval_case import Invocation, get_all_tool_calls
from google.adk.evaluation.eval_metrics import EvalMetric, EvalStatus
from google.adk.evaluation.evaluator import EvaluationResult, PerInvocationResult


def _names(invocation: Invocation | None) -> list[str]:
    if invocation is None:
        return []
    return [c.name or "" for c in get_all_tool_calls(invocation.intermediate_data)]


def _text(invocation: Invocation | None) -> str:
    if invocation is None or invocation.final_response is None:
        return ""
    return " ".join(p.text or "" for p in invocation.final_response.parts or [] if not p.thought)


def _coverage(actual: Invocation, expected: Invocation | None) -> float:
    want = set(_names(expected))
    if not want:
        return 1.0
    return len(want & set(_names(actual))) / len(want)


def _verdict(score: float | None, threshold: float | None) -> EvalStatus:
    if score is None or threshold is None:
        return EvalStatus.NOT_EVALUATED
    return EvalStatus.PASSED if score >= threshold else EvalStatus.FAILED


def _result(eval_metric: EvalMetric, actual: list[Invocation], scores: list[float]) -> EvaluationResult:
    threshold = eval_metric.criterion.threshold if eval_metric.criterion else None
    per = [
        PerInvocationResult(actual_invocation=a, score=s, eval_status=_verdict(s, threshold))
        for a, s in zip(actual, scores, strict=True)
    ]
    overall = sum(scores) / len(scores) if scores else None
    return EvaluationResult(
        overall_score=overall, overall_eval_status=_verdict(overall, threshold), per_invocation_results=per
    )


def _pairs(actual: list[Invocation], expected: list[Invocation] | None) -> list[tuple[Invocation, Invocation | None]]:
    return [(a, expected[i] if expected else None) for i, a in enumerate(actual)]


def tool_coverage(
    eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: Any
) -> EvaluationResult:
    """Share of the expected tool names the agent called, per invocation; statuses from the criterion's threshold."""
    return _result(eval_metric, actual, [_coverage(a, e) for a, e in _pairs(actual, expected)])


async def word_overlap(
    eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: Any
) -> EvaluationResult:
    """Async: share of the reference's words present in the response (lower-cased, split on spaces)."""
    await asyncio.sleep(0)
    scores = []
    for a, e in _pairs(actual, expected):
        want = set(_text(e).lower().split())
        scores.append(1.0 if not want else len(want & set(_text(a).lower().split())) / len(want))
    return _result(eval_metric, actual, scores)


def signed_coverage(
    eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: Any
) -> EvaluationResult:
    """Declared on [-10, 10]: 20 * coverage - 10."""
    return _result(eval_metric, actual, [20.0 * _coverage(a, e) - 10.0 for a, e in _pairs(actual, expected)])


def status_left_default(
    eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: Any
) -> EvaluationResult:
    """Scores only: every status stays ADK's default NOT_EVALUATED."""
    scores = [_coverage(a, e) for a, e in _pairs(actual, expected)]
    per = [PerInvocationResult(actual_invocation=a, score=s) for a, s in zip(actual, scores, strict=True)]
    return EvaluationResult(overall_score=sum(scores) / len(scores), per_invocation_results=per)


def always_passes(
    eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: Any
) -> EvaluationResult:
    """Reports PASSED whatever the score (the function, not the threshold, decides the status in ADK)."""
    scores = [_coverage(a, e) for a, e in _pairs(actual, expected)]
    per = [PerInvocationResult(actual_invocation=a, score=s, eval_status=EvalStatus.PASSED)
           for a, s in zip(actual, scores, strict=True)]
    return EvaluationResult(
        overall_score=sum(scores) / len(scores), overall_eval_status=EvalStatus.PASSED, per_invocation_results=per
    )


def raises_on_multi_turn(
    eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: Any
) -> EvaluationResult:
    """Raises on cases with more than one invocation (ADK: NOT_EVALUATED; evalbot: error)."""
    if len(actual) > 1:
        raise RuntimeError(f"cannot score {len(actual)} turns")
    return _result(eval_metric, actual, [_coverage(a, e) for a, e in _pairs(actual, expected)])


def no_per_invocation(
    eval_metric: EvalMetric, actual: list[Invocation], expected: list[Invocation] | None, scenario: Any
) -> EvaluationResult:
    """A verdict without per-invocation results (ADK aborts the whole run; evalbot: error on the case)."""
    return EvaluationResult(overall_score=1.0, overall_eval_status=EvalStatus.PASSED)
