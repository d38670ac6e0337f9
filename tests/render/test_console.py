"""The terminal summary's wording of failed criteria."""

from __future__ import annotations

from evalbot.render.console import render_text
from evalbot.results import CaseResult, EvalSetReport, MetricResult, Report


def _report(**metrics: MetricResult) -> Report:
    case = CaseResult(eval_id="c", status="failed", metrics=metrics)
    return Report(eval_sets=[EvalSetReport(eval_set_id="s", path="p", status="failed", cases=[case])])


def test_minimum_criteria_read_score_below_threshold() -> None:
    """A score criterion fails below its threshold: 'name score < threshold'."""
    out = render_text(_report(response_match_score=MetricResult(score=0.25, status="failed", threshold=0.8)))
    assert "s / c: response_match_score 0.250 < 0.800" in out


def test_maxima_read_above_threshold_and_value_metrics_show_their_value() -> None:
    """failure (a rate) and latency (seconds, no score) fail above their threshold, and say so."""
    out = render_text(_report(
        failure=MetricResult(score=0.5, status="failed", threshold=0.0),
        latency=MetricResult(score=None, status="failed", threshold=5.0, details={"value": 4.0, "max": 7.5}),
    ))
    assert "failure 0.500 > 0.000" in out
    assert "latency 7.500 > 5.000" in out
