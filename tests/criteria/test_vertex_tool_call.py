"""Vertex's tool-call metrics: Vertex's tool-call JSON texts (hand computations on Google's published rows),
trajectories, pairing, value equality, missing data and hostile texts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria import CRITERIA
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.criteria.vertex_tool_call import is_tool_call_text
from evalbot.errors import ConfigError
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.formats.vertex import cases_from_rows
from evalbot.results import MetricResult

NAMES = ["tool_call_valid", "tool_name_match", "tool_parameter_key_match", "tool_parameter_kv_match"]
BOOKING = {"movie": "Mission Impossible Dead Reckoning Part 1", "theater": "Regal Edwards 14",
           "location": "Mountain View CA", "showtime": "7:30", "date": "2024-03-30", "num_tix": "2"}


def text(*calls: tuple[str, Any]) -> str:
    """Vertex's tool-call JSON: ``{"content": "", "tool_calls": [{"name", "arguments"}]}``."""
    return json.dumps({"content": "", "tool_calls": [{"name": n, "arguments": a} for n, a in calls]})


def booking(**changes: Any) -> str:
    args = {k: v for k, v in {**BOOKING, **changes}.items() if v is not None}
    return text(("book_tickets", args))


def invocation(response: str | None = None, calls: list[tuple[str, Any]] | None = None) -> Invocation:
    raw: dict[str, Any] = {"user_content": {"role": "user", "parts": [{"text": "q"}]}}
    if response is not None:
        raw["final_response"] = {"role": "model", "parts": [{"text": response}]}
    if calls is not None:
        raw["intermediate_data"] = {"tool_uses": [{"name": n, "args": a} for n, a in calls]}
    return Invocation.model_validate(raw)


def evaluate(name: str, actual: Invocation, expected: Invocation, threshold: float | None = None,
             **options: Any) -> MetricResult:
    criterion = CRITERIA[name](CriterionSpec(name, threshold, options), BuildContext())
    result = criterion.evaluate(CaseInput("s", EvalCase(eval_id="c", conversation=[expected]), [actual]))
    assert isinstance(result, MetricResult)
    return result


def scores(response: str, reference: str, **options: Any) -> list[float | None]:
    return [evaluate(n, invocation(response), invocation(reference), **options).score for n in NAMES]


# Google's "bring your own prediction" rows for these metrics (generative-ai notebook, tool-use evaluation); the
# expected values are computed by hand from the definitions in docs/vertex.md.
NOTEBOOK = [
    (booking(), booking(), [1.0, 1.0, 1.0, 1.0]),
    (booking(), booking(movie="Godzilla", showtime="9:30"), [1.0, 1.0, 1.0, 4 / 6]),
    (booking(location=None, showtime=None, date=None, num_tix=None), booking(), [1.0, 1.0, 2 / 6, 2 / 6]),
    (booking(theater="Cinemark", showtime="5:30"), booking(), [1.0, 1.0, 1.0, 4 / 6]),
]


@pytest.mark.parametrize(("response", "reference", "expected"), NOTEBOOK)
def test_google_notebook_rows_by_hand(response: str, reference: str, expected: list[float]) -> None:
    assert scores(response, reference) == pytest.approx(expected)


def test_name_mismatch_and_extra_parameters() -> None:
    """A different tool: name 0, parameters still compared; parameters the reference lacks cost nothing."""
    response = text(("cancel_tickets", {**BOOKING, "seat": "A1"}))
    assert scores(response, booking()) == [1.0, 0.0, 1.0, 1.0]


def test_calls_are_paired_by_position_over_the_longer_side() -> None:
    """Two reference calls, one predicted: the missing position scores 0 on every pair metric."""
    reference = text(("a", {"x": 1}), ("b", {"y": 2}))
    assert scores(text(("a", {"x": 1})), reference) == [1.0, 0.5, 0.5, 0.5]
    assert scores(text(("b", {"y": 2}), ("a", {"x": 1})), reference) == [1.0, 0.0, 0.0, 0.0]
    assert scores(text(("a", {"x": 1}), ("b", {"y": 3})), reference) == [1.0, 1.0, 1.0, 0.5]


def test_empty_sides() -> None:
    """No call expected and none made: the pair metrics are 1.0; ``tool_call_valid`` needs a call (0.0)."""
    assert scores(text(), text()) == [0.0, 1.0, 1.0, 1.0]
    assert scores(text(), booking()) == [0.0, 0.0, 0.0, 0.0]
    assert scores(text(("f", {})), text(("f", {}))) == [1.0, 1.0, 1.0, 1.0]
    assert scores(text(("f", {"a": 1})), text(("f", {}))) == [1.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize(("predicted", "reference", "loose", "strict"), [
    ("2", 2, 1.0, 0.0),
    ("London ", "london", 1.0, 0.0),
    (1, 1.0, 1.0, 1.0),
    ({"b": 1, "a": [1, 2]}, {"a": [1, 2], "b": 1}, 1.0, 1.0),
    (True, 1, 0.0, 0.0),
    ("true", True, 1.0, 0.0),
    (None, "null", 1.0, 0.0),
    ("Paris", "Lyon", 0.0, 0.0),
])
def test_value_equality_loose_by_default_strict_on_request(predicted: Any, reference: Any, loose: float,
                                                         strict: float) -> None:
    response, expected = text(("f", {"v": predicted})), text(("f", {"v": reference}))
    assert evaluate("tool_parameter_kv_match", invocation(response), invocation(expected)).score == loose
    assert evaluate("tool_parameter_kv_match", invocation(response), invocation(expected),
                    use_strict_string_match=True).score == strict


@pytest.mark.parametrize(("response", "valid"), [
    (text(("f", {"a": 1})), 1.0),
    (json.dumps({"tool_calls": [{"name": "f"}]}), 1.0),  # no arguments: {}
    (json.dumps({"tool_calls": [{"name": "f", "arguments": "{\"a\": 1}"}]}), 1.0),  # OpenAI's string form
    (json.dumps({"tool_calls": [{"name": "f", "arguments": "not json"}]}), 0.0),
    (json.dumps({"tool_calls": [{"name": "f", "arguments": [1]}]}), 0.0),
    (json.dumps({"tool_calls": [{"name": "", "arguments": {}}]}), 0.0),
    (json.dumps({"tool_calls": [{"arguments": {}}]}), 0.0),
    (json.dumps({"tool_calls": [text(("f", {}))]}), 0.0),  # a call that is a string, not an object
    (json.dumps({"tool_calls": [{"name": "f", "arguments": {}}, {"name": 3}]}), 0.0),
    (json.dumps({"tool_calls": "f(a=1)"}), 0.0),
    (json.dumps({"tool_calls": []}), 0.0),
    ("{not json", 0.0),
    ("I booked your tickets.", 0.0),
])
def test_tool_call_valid(response: str, valid: float) -> None:
    """Against a tool-call reference, the prediction is read as Vertex's JSON; anything else is not a valid call."""
    result = evaluate("tool_call_valid", invocation(response), invocation(booking()))
    assert result.score == valid


def test_prediction_that_is_not_tool_call_json_scores_zero_with_the_reason() -> None:
    result = evaluate("tool_name_match", invocation("Sure, booked!"), invocation(booking()), 1.0)
    assert (result.score, result.status) == (0.0, "failed")
    assert result.per_invocation[0].reason == "the response is not a tool-call JSON object with a tool_calls list"


def test_reference_that_is_not_tool_call_json_is_not_evaluated() -> None:
    result = evaluate("tool_name_match", invocation(booking()), invocation("the tickets are booked"), 1.0)
    assert (result.score, result.status) == (None, "not_evaluated")
    assert result.reason == "the reference is not a tool-call JSON object with a tool_calls list"


def test_trajectories_when_the_texts_are_not_tool_call_json() -> None:
    """An agent's run: the calls are its tool calls (ADK function calls, Vertex trajectories)."""
    actual = invocation("Booked.", [("book_tickets", {**BOOKING, "num_tix": 2})])
    expected = invocation("Your tickets are booked.", [("book_tickets", BOOKING)])
    got = [evaluate(n, actual, expected) for n in NAMES]
    assert [r.score for r in got] == [1.0, 1.0, 1.0, 1.0]  # "2" and 2 match loosely
    assert [(r.per_invocation[0].details or {}).get("source") for r in got] == ["trajectory"] * 4
    strict = evaluate("tool_parameter_kv_match", actual, expected, use_strict_string_match=True)
    assert strict.score == pytest.approx(5 / 6)


def test_vertex_rows_with_trajectories_and_missing_ones(tmp_path: Path) -> None:
    call = {"tool_name": "get_price", "tool_input": {"product": "phone"}}
    rows = [
        {"eval_id": "ok", "response": "r", "reference": "r", "predicted_trajectory": [call],
         "reference_trajectory": [{"tool_name": "get_price", "tool_input": {"product": "tablet"}}]},
        {"eval_id": "no_ref", "response": "r", "predicted_trajectory": [call]},
        {"eval_id": "no_pred", "response": "r", "reference_trajectory": [call]},
        {"eval_id": "crashed", "failure": 1, "reference_trajectory": [call]},
    ]
    _, cases = cases_from_rows(rows, tmp_path / "d.json")
    results: dict[str, list[tuple[float | None, str]]] = {}
    for loaded in cases:
        assert loaded.case is not None and loaded.actual is not None
        results[loaded.eval_id] = []
        for name in NAMES:
            criterion = CRITERIA[name](CriterionSpec(name, 1.0, {}), BuildContext())
            result = criterion.evaluate(CaseInput("s", loaded.case, loaded.actual))
            assert isinstance(result, MetricResult)
            results[loaded.eval_id].append((result.score, result.reason or ""))
    assert [s for s, _ in results["ok"]] == [1.0, 1.0, 1.0, 0.0]
    assert results["no_ref"][0][0] == 1.0  # tool_call_valid needs no reference
    assert results["no_ref"][1:] == [(None, "the row gives no reference_trajectory")] * 3
    assert results["no_pred"] == [(None, "the row gives no predicted_trajectory")] * 4
    assert [s for s, _ in results["crashed"]] == [0.0, 0.0, 0.0, 0.0]


def test_tool_call_valid_on_trajectories_and_scenarios() -> None:
    """Without a tool-call text the prediction's calls are checked; scenario cases are scored too."""
    scenario = EvalCase.model_validate({"eval_id": "c", "conversation_scenario": {"starting_prompt": "hi",
                                                                                  "conversation_plan": "p"}})
    criterion = CRITERIA["tool_call_valid"](CriterionSpec("tool_call_valid", None, {}), BuildContext())
    for calls, expected in [([("f", {"a": 1})], 1.0), ([], 0.0), ([("", {})], 0.0)]:
        result = criterion.evaluate(CaseInput("s", scenario, [invocation("hi", calls)]))
        assert isinstance(result, MetricResult) and result.score == expected
    pair = CRITERIA["tool_name_match"](CriterionSpec("tool_name_match", None, {}), BuildContext())
    result = pair.evaluate(CaseInput("s", scenario, [invocation("hi", [("f", {})])]))
    assert isinstance(result, MetricResult) and result.status == "not_evaluated"


@pytest.mark.parametrize("hostile", [
    "{" + '"tool_calls": ' + "[" * 200_000,  # nesting deep enough to overflow the JSON parser's recursion
    '{"tool_calls": ' + "[" * 100_000 + "]" * 100_000 + "}",
    "\ud800{",  # a lone surrogate
    " " * 1_000_000 + "{}",
])
def test_hostile_texts_are_not_tool_calls_and_do_not_crash(hostile: str) -> None:
    """Too deep for the JSON parser, invalid text, no tool_calls key: not a call, so 0.0 against a tool-call reference."""
    assert not is_tool_call_text(hostile)
    for name in NAMES:
        result = evaluate(name, invocation(hostile), invocation(booking()))
        assert result.score == 0.0


def test_options() -> None:
    for name in ["tool_call_valid", "tool_name_match", "tool_parameter_key_match"]:
        with pytest.raises(ConfigError, match=f"invalid options for {name}"):
            CRITERIA[name](CriterionSpec(name, None, {"use_strict_string_match": True}), BuildContext())
    with pytest.raises(ConfigError, match="use_strict_string_match"):
        CRITERIA["tool_parameter_kv_match"](CriterionSpec("tool_parameter_kv_match", None,
                                                          {"use_strict_string_macth": True}), BuildContext())
    camel = evaluate("tool_parameter_kv_match", invocation(text(("f", {"v": "2"}))),
                     invocation(text(("f", {"v": 2}))), useStrictStringMatch=True)
    assert camel.score == 0.0
