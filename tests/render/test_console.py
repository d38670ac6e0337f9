"""The terminal summary's wording of failed criteria."""

from __future__ import annotations

from evalbot.render.console import render_text
from evalbot.results import CaseResult, EvalSetReport, MetricResult, MetricSummary, Report


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


def _value_row(seconds: list[float]) -> str:
    """The latency row of an eval set whose cases took ``seconds`` (a criterion with a value, not a score)."""
    cases = [CaseResult(eval_id=f"c{i}", status="passed", metrics={"latency": MetricResult(
        score=None, status="passed", threshold=5.0, details={"value": s})}) for i, s in enumerate(seconds)]
    es = EvalSetReport(eval_set_id="s", path="p", status="passed", cases=cases,
                       metrics={"latency": MetricSummary(mean=None, passed=len(cases), threshold=5.0)})
    out = render_text(Report(eval_sets=[es]))
    header = next(line for line in out.splitlines() if "threshold" in line)
    row = next(line for line in out.splitlines() if line.lstrip().startswith("latency"))
    assert header.index("mean") + len("mean") == row.index(row.split()[2]) + len(row.split()[2]), (header, row)
    return row


def test_a_value_mean_keeps_the_columns_in_line() -> None:
    """A latency mean of 0.000917 s (a fast local agent: examples/agent) once printed 8 characters in the 7-wide
    mean column and pushed std and the counts out of line; it is shown with fewer digits instead."""
    assert _value_row([0.000917, 0.000917]).split()[1:4] == ["5.000", "0.00092", "—"]
    assert _value_row([12_345_678.0]).split()[2] == "1.2e+07"
    assert _value_row([1.5, 2.5]).split()[2] == "2"
    assert _value_row([0.25]).split()[2] == "0.25"
