"""``trajectory_single_tool_use``: name-only presence of one tool, Google's executed notebook vectors, and options."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria import build_criteria
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.criteria.trajectory_single_tool_use import SingleToolUse, build
from evalbot.errors import ConfigError
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec, parse_config
from evalbot.formats.vertex import cases_from_rows
from evalbot.pipeline import evaluate
from evalbot.results import MetricResult

PRODUCT = Path(__file__).resolve().parents[1] / "data" / "vertex" / "product_agent"
OBSERVED = json.loads((PRODUCT / "observed.json").read_text())


def uses(*names: str) -> Invocation:
    """An ADK invocation calling these tools."""
    calls = [{"name": n, "args": {"k": i}} for i, n in enumerate(names)]
    raw = {"user_content": {"parts": [{"text": "q"}]}, "intermediate_data": {"tool_uses": calls}}
    return Invocation.model_validate(raw)


def single(tool: str = "price", threshold: float | None = None) -> SingleToolUse:
    """The metric looking for ``tool``."""
    return build(CriterionSpec("trajectory_single_tool_use", threshold, {"tool_name": tool}), BuildContext())


def score(*invocations: Invocation, threshold: float | None = None) -> MetricResult:
    """Score the invocations as one case."""
    case = EvalCase(eval_id="c", conversation=[uses() for _ in invocations])
    return single(threshold=threshold).evaluate(CaseInput("s", case, list(invocations)))


@pytest.mark.parametrize("name", ["executed.jsonl", "executed.csv"])
def test_google_notebook_vectors(name: str) -> None:
    """Google's executed run: per-row [1, 1, 0, 1, 0]; MetricSummary mean 0.6 and sample std 0.547723."""
    report = evaluate([str(PRODUCT / name)])
    (eval_set,) = report.eval_sets
    got = [c.metrics["trajectory_single_tool_use"].score for c in eval_set.cases]
    assert got == OBSERVED["per_row_scores"] == [1.0, 1.0, 0.0, 1.0, 0.0]
    summary = eval_set.metrics["trajectory_single_tool_use"]
    observed = OBSERVED["summary_metrics"]
    assert summary.mean == pytest.approx(observed["trajectory_single_tool_use/mean"], abs=1e-12)
    assert summary.std is not None and round(summary.std, 6) == observed["trajectory_single_tool_use/std"]
    assert summary.informational == 5 and summary.passed == summary.failed == 0


@pytest.mark.parametrize("name", ["executed.jsonl", "byod.json"])
def test_notebook_trajectories_score_one_on_all_five_pair_metrics(name: str) -> None:
    """Predicted == reference on every row: Vertex reported 1.0 on all five metrics (mean 1.0, std 0.0)."""
    (eval_set,) = evaluate([str(PRODUCT / name)]).eval_sets
    for metric in ("exact_match", "in_order_match", "any_order_match", "precision", "recall"):
        summary = eval_set.metrics[f"trajectory_{metric}"]
        assert (summary.mean, summary.std, summary.informational) == (1.0, 0.0, 5)


def test_name_only_any_count_any_order() -> None:
    """Arguments, order and repetitions do not matter; absence scores 0."""
    assert score(uses("details", "price", "price")).score == 1.0
    assert score(uses("details")).score == 0.0
    assert score(uses()).score == 0.0
    assert score(uses("Price")).score == 0.0
    result = score(uses("price", "x", "price"), uses("x"))
    assert result.score == 0.5 and result.per_invocation[0].details == {"tool_name": "price", "calls": 2}


def test_threshold_makes_it_a_verdict() -> None:
    """Informational without a threshold; passed/failed with one."""
    assert score(uses("price")).status == "informational"
    assert score(uses("price"), threshold=1.0).status == "passed"
    assert score(uses("price"), uses("x"), threshold=0.6).status == "failed"


def test_needs_no_reference_so_scenario_cases_are_scored() -> None:
    """Only the predicted side is read."""
    case = EvalCase.model_validate(
        {"eval_id": "s", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"}}
    )
    assert single().evaluate(CaseInput("s", case, [uses("price")])).score == 1.0


def test_row_without_predicted_trajectory_is_not_evaluated(tmp_path: Path) -> None:
    """A Vertex row with a response but no predicted_trajectory cannot say whether the tool was used."""
    (loaded,) = cases_from_rows([{"prompt": "p", "response": "r"}], tmp_path / "d.json")[1]
    assert loaded.case is not None and loaded.actual is not None
    result = single().evaluate(CaseInput("s", loaded.case, loaded.actual))
    assert (result.score, result.status) == (None, "not_evaluated")
    assert result.reason == "the row gives no predicted_trajectory"


@pytest.mark.parametrize("options", [{}, {"tool_name": ""}, {"tool_name": 3}, {"tool_name": "a", "tools": ["b"]}])
def test_tool_name_is_required(options: dict[str, Any]) -> None:
    """A missing, empty or non-string tool_name (or an unknown option) is a configuration error on every case."""
    with pytest.raises(ConfigError, match="trajectory_single_tool_use"):
        build(CriterionSpec("trajectory_single_tool_use", None, options), BuildContext())
    config = parse_config({"criteria": {"trajectory_single_tool_use": {"threshold": None, **options}}}, "c.json")
    (criterion, *_), (info, *_) = build_criteria(config, BuildContext())
    assert info.error is not None
    result = criterion.evaluate(CaseInput("s", EvalCase(eval_id="c", conversation=[uses()]), [uses("a")]))
    assert isinstance(result, MetricResult) and result.status == "error"


def test_camel_case_tool_name() -> None:
    """``toolName`` is accepted like ADK's camelCase criterion options."""
    built = build(CriterionSpec("trajectory_single_tool_use", None, {"toolName": "price"}), BuildContext())
    assert built.tool_name == "price"
