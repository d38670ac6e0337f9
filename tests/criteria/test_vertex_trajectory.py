"""The five reference-based Vertex trajectory metrics: call identity, duplicates, empties, missing data, verdicts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbot.criteria import (
    CRITERIA,
    build_criteria,
    trajectory_any_order_match,
    trajectory_exact_match,
    trajectory_in_order_match,
    trajectory_precision,
    trajectory_recall,
)
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.criteria.vertex_trajectory import Duplicates, Key, PairMetric, call_key, canonical
from evalbot.errors import ConfigError
from evalbot.formats.adk import EvalCase, FunctionCall, Invocation
from evalbot.formats.config import CriterionSpec, parse_config
from evalbot.formats.vertex import cases_from_rows, load_dataset
from evalbot.results import MetricResult

DATA = Path(__file__).resolve().parents[1] / "data" / "vertex"
PAIRS = (
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
)
Call = tuple[str, dict[str, Any] | None]
DUPLICATES: list[Duplicates] = ["membership", "multiset"]


def tc(name: str, **args: Any) -> Call:
    """A tool call as (name, args)."""
    return (name, args)


A, B, C = tc("a", x=1), tc("b"), tc("c")


def invocation(calls: list[Call] | None, *, events: bool = False) -> Invocation:
    """An ADK invocation with these tool calls (``tool_uses`` or the events form)."""
    raw: dict[str, Any] = {"user_content": {"role": "user", "parts": [{"text": "q"}]}}
    fcs = [{"name": n, "args": a} for n, a in calls or []]
    if events:
        events_json = [{"author": "agent", "content": {"role": "model", "parts": [{"function_call": f}]}} for f in fcs]
        raw["intermediate_data"] = {"invocation_events": events_json}
    elif calls is not None:
        raw["intermediate_data"] = {"tool_uses": fcs}
    return Invocation.model_validate(raw)


def metric(name: str, threshold: float | None = None, **options: Any) -> PairMetric:
    """Build a registered pair metric."""
    built = CRITERIA[name](CriterionSpec(name, threshold, options), BuildContext())
    assert isinstance(built, PairMetric)
    return built


def run(name: str, predicted: list[list[Call]], reference: list[list[Call]], threshold: float | None = None,
        **options: Any) -> MetricResult:
    """Score a multi-invocation ADK case."""
    expected = [invocation(r) for r in reference]
    case = EvalCase(eval_id="c", conversation=expected)
    return metric(name, threshold, **options).evaluate(CaseInput("s", case, [invocation(p) for p in predicted]))


def scores(predicted: list[Call], reference: list[Call], **options: Any) -> list[float | None]:
    """The five metrics on one invocation, in PAIRS order."""
    return [run(name, [predicted], [reference], **options).score for name in PAIRS]


def test_docs_examples_compare_arguments() -> None:
    """Vertex docs' rows differing only in arguments: 0 everywhere, P = R = 0.5; all 1.0 with ignore_args."""
    rows = json.loads((DATA / "docs_on_device" / "rows.json").read_text())
    _, cases = load_dataset(DATA / "docs_on_device" / "rows.json")
    for row, loaded in zip(rows, cases, strict=True):
        assert loaded.case is not None and loaded.actual is not None
        for options, key in (({}, "derived_expected_if_tool_input_compared"), ({"ignore_args": True},
                                                                              "derived_expected_if_name_only")):
            got = {n: metric(n, **options).evaluate(CaseInput("s", loaded.case, loaded.actual)).score for n in PAIRS}
            assert got == row[key], (row["id"], options)


@pytest.mark.parametrize(
    ("predicted", "reference", "expected"),
    [
        ([A, C, B], [A, B], [0.0, 1.0, 1.0, 2 / 3, 1.0]),  # extra call
        ([B, A], [A, B], [0.0, 0.0, 1.0, 1.0, 1.0]),  # swapped
        ([A], [A, B], [0.0, 0.0, 0.0, 1.0, 0.5]),  # missing call
        ([A, B], [A, B], [1.0, 1.0, 1.0, 1.0, 1.0]),
        ([C], [A, B], [0.0, 0.0, 0.0, 0.0, 0.0]),
    ],
)
def test_order_and_extras(predicted: list[Call], reference: list[Call], expected: list[float]) -> None:
    """Docs definitions: exact is positional, in_order a subsequence, any_order containment, P/R ratios."""
    assert scores(predicted, reference) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("predicted", "reference", "membership", "multiset"),
    [
        ([A, A], [A], [0.0, 1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.5, 1.0]),
        ([A], [A, A], [0.0, 0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 1.0, 0.5]),
        ([A, B, A], [A, B, B], [0.0, 0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 2 / 3, 2 / 3]),
    ],
)
def test_duplicates_membership_default_and_multiset_option(
    predicted: list[Call], reference: list[Call], membership: list[float], multiset: list[float]
) -> None:
    """Default membership counts a repeated call as matched; ``duplicates: multiset`` matches each call once."""
    assert scores(predicted, reference) == pytest.approx(membership)
    assert scores(predicted, reference, duplicates="multiset") == pytest.approx(multiset)


@pytest.mark.parametrize(
    ("left", "right", "equal"),
    [
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),  # key order
        ({"n": 23}, {"n": 23.0}, True),  # int vs float
        ({"n": True}, {"n": 1}, False),  # bool is not a number
        ({"n": "1"}, {"n": 1}, False),  # string is not a number
        ({"n": [1, 2]}, {"n": [2, 1]}, False),  # list order matters
        ({"n": {"deep": [1, {"x": 0.0}]}}, {"n": {"deep": [1.0, {"x": -0.0}]}}, True),
        ({"n": 2**60 + 1}, {"n": float(2**60)}, False),  # exact integer comparison
        (None, {}, False),  # missing args are not empty args
        ({}, {}, True),
        ({"a": 1}, {"a": 1, "b": None}, False),  # extra key
    ],
)
def test_argument_equality(left: dict[str, Any] | None, right: dict[str, Any] | None, equal: bool) -> None:
    """Arguments compare as parsed JSON: key order and 1 vs 1.0 do not matter; types otherwise do."""
    assert (scores([("t", left)], [("t", right)])[0] == 1.0) is equal
    assert scores([("t", left)], [("t", right)], ignore_args=True)[0] == 1.0


def test_names_are_case_sensitive() -> None:
    """Tool names must match exactly."""
    assert scores([("Get", {})], [("get", {})], ignore_args=True) == [0.0] * 5


@pytest.mark.parametrize(
    ("predicted", "reference", "expected"),
    [
        ([], [], [1.0, 1.0, 1.0, 1.0, 1.0]),
        ([], [A], [0.0, 0.0, 0.0, 0.0, 0.0]),
        ([A], [], [0.0, 1.0, 1.0, 0.0, 1.0]),
    ],
)
def test_empty_trajectories_have_explicit_scores(
    predicted: list[Call], reference: list[Call], expected: list[float]
) -> None:
    """Where Vertex drops the row, evalbot scores: both empty match; skipping expected calls scores 0."""
    assert scores(predicted, reference) == expected
    assert scores(predicted, reference, duplicates="multiset") == expected


def test_adk_invocation_without_intermediate_data_is_an_empty_trajectory() -> None:
    """ADK semantics for ADK files: no intermediate_data means no tool calls."""
    assert [run(n, [None], [None]).score for n in PAIRS] == [1.0] * 5  # type: ignore[list-item]


def test_events_form_actuals_are_scored() -> None:
    """Tool calls recorded as invocation_events are read like tool_uses."""
    case = EvalCase(eval_id="c", conversation=[invocation([A, B])])
    actual = [invocation([A, B], events=True)]
    assert [metric(n).evaluate(CaseInput("s", case, actual)).score for n in PAIRS] == [1.0] * 5


def test_missing_vertex_trajectory_is_not_evaluated(tmp_path: Path) -> None:
    """A row without predicted or reference trajectory is not evaluated, with the reason; never a silent 0."""
    rows = [
        {"prompt": "p", "response": "r", "reference_trajectory": [{"tool_name": "a", "tool_input": {}}]},
        {"prompt": "p", "predicted_trajectory": []},
    ]
    _, cases = cases_from_rows(rows, tmp_path / "d.json")
    for loaded, side in zip(cases, ("predicted", "reference"), strict=True):
        assert loaded.case is not None and loaded.actual is not None
        for name in PAIRS:
            result = metric(name, 0.5).evaluate(CaseInput("s", loaded.case, loaded.actual))
            assert (result.score, result.status) == (None, "not_evaluated")
            assert result.reason == f"the row gives no {side}_trajectory"
            assert result.per_invocation[0].reason == result.reason


def test_failed_row_without_prediction_is_scored_as_empty(tmp_path: Path) -> None:
    """An agent that crashed (failure = 1) made no recorded call: it fails instead of escaping evaluation."""
    rows = [{"prompt": "p", "failure": 1, "reference_trajectory": [{"tool_name": "a", "tool_input": {}}]}]
    (loaded,) = cases_from_rows(rows, tmp_path / "d.json")[1]
    assert loaded.case is not None and loaded.actual is not None
    result = metric("trajectory_recall", 1.0).evaluate(CaseInput("s", loaded.case, loaded.actual))
    assert (result.score, result.status) == (0.0, "failed")
    assert "failure = 1" in (result.per_invocation[0].reason or "")


def test_threshold_absent_is_informational_present_is_ge() -> None:
    """No threshold: informational with the score; a threshold passes at score >= threshold."""
    assert run("trajectory_precision", [[A, C, B]], [[A, B]]).status == "informational"
    assert run("trajectory_precision", [[A, B]], [[A, B]], 1.0).status == "passed"
    assert run("trajectory_recall", [[A]], [[A, B]], 0.5).status == "passed"
    failing = run("trajectory_recall", [[A]], [[A, B]], 0.51)
    assert failing.status == "failed" and failing.per_invocation[0].status == "failed"


def test_case_score_is_the_mean_of_invocations() -> None:
    """Per-invocation scores, mean per case, details with the call counts."""
    result = run("trajectory_precision", [[A, C], [B], []], [[A], [B], [C]], 0.5)
    assert [p.score for p in result.per_invocation] == [0.5, 1.0, 0.0]
    assert result.score == pytest.approx(0.5) and result.status == "passed"
    assert result.per_invocation[0].details == {"predicted_calls": 2, "reference_calls": 1}


def test_scenario_case_is_not_evaluated() -> None:
    """Without an expected conversation there is no reference."""
    case = EvalCase.model_validate(
        {"eval_id": "s", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"}}
    )
    result = metric("trajectory_exact_match").evaluate(CaseInput("s", case, [invocation([A])]))
    assert result.status == "not_evaluated" and "conversation scenario" in (result.reason or "")


@pytest.mark.parametrize("options", [{"duplicates": "set"}, {"ignoreArgs": "maybe"}, {"match_type": "EXACT"}])
def test_invalid_options_are_config_errors(options: dict[str, Any]) -> None:
    """Unknown or invalid options are rejected, and build_criteria turns that into an error on every case."""
    with pytest.raises(ConfigError):
        metric("trajectory_recall", 1.0, **options)
    config = parse_config({"criteria": {"trajectory_recall": {"threshold": 1.0, **options}}}, "c.json")
    built, infos = build_criteria(config, BuildContext())
    assert infos[0].error is not None and "trajectory_recall" in infos[0].error
    result = built[0].evaluate(CaseInput("s", EvalCase(eval_id="c", conversation=[invocation([])]), [invocation([])]))
    assert isinstance(result, MetricResult) and result.status == "error"


def test_camel_case_options_are_accepted() -> None:
    """Options accept camelCase like ADK's criterion objects."""
    assert scores([tc("a", x=1)], [tc("a", x=2)], ignoreArgs=True) == [1.0] * 5


calls = st.lists(st.sampled_from(["a", "b", "c"]).map(lambda n: FunctionCall(name=n, args={})), max_size=5)


def keys(fcs: list[FunctionCall]) -> list[Key]:
    """Call keys of function calls."""
    return [call_key(f, False) for f in fcs]


@settings(max_examples=200, deadline=None)
@given(predicted=calls, reference=calls, duplicates=st.sampled_from(DUPLICATES))
def test_metric_relationships(
    predicted: list[FunctionCall], reference: list[FunctionCall], duplicates: Duplicates
) -> None:
    """exact implies in_order implies any_order; any_order == (recall == 1); precision(P, R) == recall(R, P)."""
    p, r, d = keys(predicted), keys(reference), duplicates
    exact = trajectory_exact_match.score(p, r, d)
    in_order = trajectory_in_order_match.score(p, r, d)
    any_order = trajectory_any_order_match.score(p, r, d)
    recall = trajectory_recall.score(p, r, d)
    precision = trajectory_precision.score(p, r, d)
    assert exact <= in_order <= any_order
    assert (any_order == 1.0) == (recall == 1.0)
    if p and r:
        assert precision == trajectory_recall.score(r, p, d)
    assert 0.0 <= precision <= 1.0 and 0.0 <= recall <= 1.0
    assert trajectory_precision.score(p, r, "multiset") <= trajectory_precision.score(p, r, "membership")


def test_canonical_keeps_distinct_json_types_apart() -> None:
    """Canonical forms: booleans, numbers, strings and null never collide."""
    values = [True, 1, "1", None, [1], {"1": 1}]
    assert len({canonical(v) for v in values}) == len(values)
    assert canonical({"a": [1, 2.0]}) == canonical({"a": [1.0, 2]})
