"""``latency`` (seconds in details, threshold = maximum) and ``failure`` (failure rate, threshold = maximum rate)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria import CRITERIA, lower_is_better
from evalbot.criteria.base import BuildContext, CaseInput, Criterion
from evalbot.errors import ConfigError
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.formats.vertex import VertexInvocation
from evalbot.pipeline import evaluate
from evalbot.results import MetricResult

PRODUCT = Path(__file__).resolve().parents[1] / "data" / "vertex" / "product_agent"
OBSERVED = json.loads((PRODUCT / "observed.json").read_text())["summary_metrics"]


def timed(seconds: float | None = None, failure: bool | None = None) -> Invocation:
    """A Vertex actual invocation with a latency and a failure flag."""
    return VertexInvocation.model_validate(
        {"user_content": {"parts": [{"text": "q"}]}, "duration": seconds, "failure": failure}
    )


def plain(**extra: Any) -> Invocation:
    """An ADK invocation (no failure flag; duration only when given)."""
    return Invocation.model_validate({"user_content": {"parts": [{"text": "q"}]}, **extra})


def build(name: str, threshold: float | None = None) -> Criterion:
    """A registered criterion."""
    return CRITERIA[name](CriterionSpec(name, threshold), BuildContext())


def score(name: str, *actual: Invocation, threshold: float | None = None) -> MetricResult:
    """Score the invocations as one case."""
    case = EvalCase(eval_id="c", conversation=[plain() for _ in actual])
    result = build(name, threshold).evaluate(CaseInput("s", case, list(actual)))
    assert isinstance(result, MetricResult)
    return result


def test_notebook_latencies_and_failures() -> None:
    """Google's run: latency mean 2.174779 / std 0.558429 from the details; failure rate 0 on every row."""
    (eval_set,) = evaluate([str(PRODUCT / "executed.jsonl")]).eval_sets
    seconds = [c.metrics["latency"].details["value"] for c in eval_set.cases]  # type: ignore[index]
    assert statistics.fmean(seconds) == pytest.approx(OBSERVED["latency_in_seconds/mean"], abs=2e-6)
    assert statistics.stdev(seconds) == pytest.approx(OBSERVED["latency_in_seconds/std"], abs=2e-6)
    assert all(c.metrics["latency"].score is None for c in eval_set.cases)
    assert eval_set.metrics["latency"].informational == 5
    failure = eval_set.metrics["failure"]
    assert (failure.mean, failure.std, failure.informational) == (OBSERVED["failure/mean"], OBSERVED["failure/std"], 5)


def test_latency_is_informational_without_threshold() -> None:
    """Seconds are reported in details with a null score; mean and max per case."""
    result = score("latency", timed(1.5), timed(2.5))
    assert (result.score, result.status) == (None, "informational")
    assert result.details == {"value": 2.0, "max": 2.5, "unit": "seconds"}
    assert [p.details for p in result.per_invocation] == [
        {"value": 1.5, "unit": "seconds"},
        {"value": 2.5, "unit": "seconds"},
    ]


def test_latency_threshold_is_a_maximum_per_invocation() -> None:
    """With a threshold an invocation passes at <= threshold seconds; one slow invocation fails the case."""
    ok = score("latency", timed(1.0), timed(2.0), threshold=2.0)
    assert ok.status == "passed" and [p.status for p in ok.per_invocation] == ["passed", "passed"]
    slow = score("latency", timed(0.5), timed(2.5), threshold=2.0)
    assert slow.status == "failed" and [p.status for p in slow.per_invocation] == ["passed", "failed"]
    assert slow.reason == "an invocation took 2.5 s, more than the 2 s allowed"


def test_latency_needs_a_recorded_duration() -> None:
    """No duration anywhere: not evaluated with the reason; partly timed: judged on the timed ones, and said so."""
    none = score("latency", plain(), timed(None), threshold=5.0)
    assert none.status == "not_evaluated" and "records no latency" in (none.reason or "")
    partly = score("latency", timed(1.0), plain(), threshold=5.0)
    assert partly.status == "passed" and partly.reason == "1 of 2 invocation(s) record no latency"
    assert [p.status for p in partly.per_invocation] == ["passed", "not_evaluated"]
    assert score("latency", plain(duration=3.0)).details == {"value": 3.0, "max": 3.0, "unit": "seconds"}


def test_failure_rate_is_the_score() -> None:
    """Per invocation 1.0 when the agent failed; the case score is the rate, informational without threshold."""
    result = score("failure", timed(failure=True), timed(failure=False), timed(failure=False), timed(failure=True))
    assert (result.score, result.status) == (0.5, "informational")
    assert [p.score for p in result.per_invocation] == [1.0, 0.0, 0.0, 1.0]
    assert result.reason == "the agent failed on 2 of 4 invocation(s)"
    assert result.details == {"value": 0.5, "failures": 2, "lower_is_better": True}


@pytest.mark.parametrize(
    ("flags", "threshold", "status"),
    [([False], 0.0, "passed"), ([True], 0.0, "failed"), ([True, False], 0.5, "passed"), ([True, False], 0.4, "failed")],
)
def test_failure_threshold_is_a_maximum_rate(flags: list[bool], threshold: float, status: str) -> None:
    """A threshold is the highest acceptable failure rate: 0 fails any case with a failure."""
    result = score("failure", *[timed(failure=f) for f in flags], threshold=threshold)
    assert result.status == status
    assert [p.status for p in result.per_invocation] == ["failed" if f and threshold < 1 else "passed" for f in flags]


def test_failure_needs_a_recorded_flag() -> None:
    """ADK invocations carry no failure flag: not evaluated, with the reason."""
    result = score("failure", plain(), threshold=0.0)
    assert (result.score, result.status) == (None, "not_evaluated")
    assert "records no failure flag" in (result.reason or "")


def test_failed_vertex_row_end_to_end(tmp_path: Path) -> None:
    """A crashed row (failure 1, no latency) fails ``failure`` at threshold 0 and is unmeasured for latency."""
    path = tmp_path / "run.jsonl"
    path.write_text(
        json.dumps({"prompt": "p", "response": "Error occurred", "failure": 1, "latency_in_seconds": None}) + "\n"
        + json.dumps({"prompt": "q", "response": "fine", "failure": 0, "latency_in_seconds": 1.2}) + "\n"
    )
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"criteria": {"failure": 0.0, "latency": 3.0}}))
    (eval_set,) = evaluate([str(path)], config=str(config)).eval_sets
    crashed, fine = eval_set.cases
    assert crashed.status == "failed" and crashed.metrics["latency"].status == "not_evaluated"
    assert fine.status == "passed"
    assert eval_set.metrics["failure"].mean == 0.5


@pytest.mark.parametrize("name", ["latency", "failure"])
def test_options_are_rejected(name: str) -> None:
    """Neither criterion takes options."""
    with pytest.raises(ConfigError):
        CRITERIA[name](CriterionSpec(name, 1.0, {"unit": "ms"}), BuildContext())


@pytest.mark.parametrize("name", ["latency", "failure"])
def test_the_registry_says_lower_is_better_where_the_criterion_passes_below_its_threshold(name: str) -> None:
    """``criteria.lower_is_better`` (read by the yardstick, the paired test and the outputs) agrees with what the
    criterion does: at its threshold it passes, above it it fails; a custom metric of the same name is scored
    higher-is-better."""
    assert lower_is_better(name) and not lower_is_better(name, "repo.metrics.fn")
    at, above = (timed(2.0, False), timed(3.0, True))
    assert score(name, at, threshold=2.0 if name == "latency" else 0.0).status == "passed"
    assert score(name, above, threshold=2.0 if name == "latency" else 0.0).status == "failed"


def test_every_other_built_in_criterion_is_higher_is_better() -> None:
    assert {name for name in CRITERIA if lower_is_better(name)} == {"latency", "failure"}
