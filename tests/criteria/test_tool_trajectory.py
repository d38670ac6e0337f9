"""``tool_trajectory_avg_score``: ADK's truth table, argument equality, ignore_args and match_type normalisation."""

from __future__ import annotations

from typing import Any

import pytest

from evalbot.criteria import build_criteria
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.criteria.tool_trajectory import ToolTrajectory, TrajectoryOptions, build
from evalbot.errors import ConfigError
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec, parse_config
from evalbot.results import MetricResult
from tests.fakes.builders import Call, case, inv

F, G, H = ("f", {"a": 1}), ("g", {"b": [1, 2]}), ("h", None)


def score(expected: list[Call], actual: list[Call], match_type: Any = "EXACT", ignore_args: bool = False) -> float | None:
    """The case score of one invocation with these expected and actual calls."""
    criterion = ToolTrajectory(1.0, TrajectoryOptions(match_type=match_type, ignore_args=ignore_args))
    expected_case = EvalCase.model_validate(case("c", inv(calls=expected)))
    actual_inv = Invocation.model_validate(inv(calls=actual, events=True))
    return criterion.evaluate(CaseInput("s", expected_case, [actual_inv])).score


TRUTH_TABLE = [
    # (what, expected, actual, EXACT, IN_ORDER, ANY_ORDER) — verified against ADK 2.13 (reference §2).
    ("identical", [F, G], [F, G], 1.0, 1.0, 1.0),
    ("extra call", [F, G], [F, H, G], 0.0, 1.0, 1.0),
    ("reordered", [F, G], [G, F], 0.0, 0.0, 1.0),
    ("duplicate expected, single actual", [F, F], [F], 0.0, 0.0, 0.0),
    ("missing call", [F, G], [F], 0.0, 0.0, 0.0),
    ("empty / empty", [], [], 1.0, 1.0, 1.0),
    ("empty expected, some actual", [], [F], 0.0, 1.0, 1.0),
    ("some expected, empty actual", [F], [], 0.0, 0.0, 0.0),
    ("wrong name", [F], [("F", {"a": 1})], 0.0, 0.0, 0.0),
]


@pytest.mark.parametrize(("what", "expected", "actual", "exact", "in_order", "any_order"), TRUTH_TABLE)
def test_truth_table(
    what: str, expected: list[Call], actual: list[Call], exact: float, in_order: float, any_order: float
) -> None:
    """Each match type scores the classic trajectory shapes as ADK does."""
    got = tuple(score(expected, actual, mt) for mt in ("EXACT", "IN_ORDER", "ANY_ORDER"))
    assert got == (exact, in_order, any_order), what


@pytest.mark.parametrize(
    ("expected_args", "actual_args", "equal"),
    [
        ({"n": 1}, {"n": 1.0}, True),
        ({"n": 1}, {"n": True}, True),
        ({"n": 1.0}, {"n": True}, True),
        ({"n": 1}, {"n": "1"}, False),
        (None, {}, False),
        ({}, None, False),
        (None, None, True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        ({"l": [1, 2]}, {"l": [2, 1]}, False),
        ({"d": {"x": 1, "y": [1.0]}}, {"d": {"y": [1], "x": 1}}, True),
        ({"a": 1}, {"a": 1, "extra": 0}, False),
    ],
)
def test_argument_equality_is_python_equality(
    expected_args: dict[str, Any] | None, actual_args: dict[str, Any] | None, equal: bool
) -> None:
    """Arguments compare with Python ``==`` after JSON parsing: 1 == 1.0 == True, "1" != 1, None != {}."""
    for match_type in ("EXACT", "IN_ORDER", "ANY_ORDER"):
        assert score([("f", expected_args)], [("f", actual_args)], match_type) == (1.0 if equal else 0.0)


def test_ignore_args_compares_names_only() -> None:
    """With ignore_args only names (case-sensitive) and, for EXACT, order and count matter."""
    assert score([F, G], [("f", {"other": 1}), ("g", None)], ignore_args=True) == 1.0
    assert score([F], [("F", {"a": 1})], ignore_args=True) == 0.0
    assert score([F, G], [("g", None), ("f", None)], "ANY_ORDER", ignore_args=True) == 1.0
    assert score([F, G], [("g", None), ("f", None)], "EXACT", ignore_args=True) == 0.0


def test_call_id_is_ignored() -> None:
    """The call id (set by real inference) is not part of equality."""
    expected = EvalCase.model_validate(case("c", inv(calls=[F])))
    actual = Invocation.model_validate(inv(intermediate_data={"tool_uses": [{"id": "x1", "name": "f", "args": {"a": 1}}]}))
    assert ToolTrajectory(1.0, TrajectoryOptions()).evaluate(CaseInput("s", expected, [actual])).score == 1.0


def test_case_score_is_mean_of_binary_invocation_scores() -> None:
    """Two invocations, one matching: per-invocation 1/0 with the threshold rule, case score 0.5 and failed."""
    expected = EvalCase.model_validate(case("c", inv(calls=[F], invocation_id="t1"), inv(calls=[G], invocation_id="t2")))
    actual = [Invocation.model_validate(inv(calls=c, invocation_id=i)) for c, i in (([F], "a1"), ([F], "a2"))]
    result = ToolTrajectory(0.5, TrajectoryOptions()).evaluate(CaseInput("s", expected, actual))
    assert (result.score, result.status, result.threshold) == (0.5, "passed", 0.5)
    assert [(p.invocation_id, p.score, p.status) for p in result.per_invocation] == [
        ("a1", 1.0, "passed"), ("a2", 0.0, "failed")
    ]


def test_scenario_case_is_not_evaluated_with_reason() -> None:
    """A conversation-scenario case has no expected calls: not evaluated, with one placeholder per invocation."""
    scenario = EvalCase.model_validate(
        {"eval_id": "s", "conversation_scenario": {"starting_prompt": "a", "conversation_plan": "b"}}
    )
    result = ToolTrajectory(1.0, TrajectoryOptions()).evaluate(CaseInput("s", scenario, [Invocation.model_validate(inv())]))
    assert (result.score, result.status) == (None, "not_evaluated")
    assert result.reason is not None and "conversation scenario" in result.reason
    assert [p.status for p in result.per_invocation] == ["not_evaluated"]


@pytest.mark.parametrize(
    ("raw", "normalised"),
    [
        ("EXACT", "EXACT"), ("exact", "EXACT"), ("in-order", "IN_ORDER"), ("In_Order", "IN_ORDER"),
        ("Any Order", "ANY_ORDER"), (" any-order ", "ANY_ORDER"), (0, "EXACT"), (1, "IN_ORDER"), (2, "ANY_ORDER"),
    ],
)
def test_match_type_normalisation(raw: Any, normalised: str) -> None:
    """match_type is case-insensitive, reads '-' and ' ' as '_', and accepts ADK's enum ints 0/1/2."""
    built = build(CriterionSpec("tool_trajectory_avg_score", 1.0, {"match_type": raw}), BuildContext())
    assert built.options.match_type == normalised


@pytest.mark.parametrize("raw", ["1", 3, -1, "ANY", "subset", None, True])
def test_match_type_rejections(raw: Any) -> None:
    """The string "1", out-of-range ints, unknown names, null and booleans are invalid options."""
    with pytest.raises(ConfigError) as info:
        build(CriterionSpec("tool_trajectory_avg_score", 1.0, {"match_type": raw}), BuildContext())
    assert str(info.value).startswith("invalid options for tool_trajectory_avg_score: match_type:")


def test_misspelt_option_is_rejected_not_ignored() -> None:
    """Unlike ADK (which silently uses EXACT for ``matchtype``), an unknown option is an error on the criterion."""
    config = parse_config({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "matchtype": "ANY"}}}, "c.json")
    built, infos = build_criteria(config, BuildContext())
    criterion, info = built[0], infos[0]
    assert info.error == (
        "invalid options for tool_trajectory_avg_score: matchtype: Extra inputs are not permitted (did you mean 'match_type'?) "
        "(c.json:/criteria/tool_trajectory_avg_score)"
    )
    result = criterion.evaluate(CaseInput("s", EvalCase.model_validate(case("c")), [Invocation.model_validate(inv())]))
    assert isinstance(result, MetricResult) and result.status == "error"
    assert result.reason == "not configured correctly (the eval set's error says why)"  # info.error is said once


def test_keys_adk_ignores_are_ignored_with_a_notice() -> None:
    """Keys ADK keeps and ignores in a criterion object (``description``, ``method``) score as ADK scores (the
    same fingerprint as without them) with one notice naming them; a near miss of an option is still an error."""
    plain = parse_config({"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "ANY_ORDER"}}},
                         "c.json")
    extra = parse_config({"criteria": {"tool_trajectory_avg_score": {
        "threshold": 1, "match_type": "ANY_ORDER", "description": "calls in any order", "method": "ROUGE_1"}}}, "c.json")
    (plain_c, *_), (plain_i, *_) = build_criteria(plain, BuildContext())
    (extra_c, *_), (extra_i, *_) = build_criteria(extra, BuildContext())
    assert extra_i.error is None and extra_i.fingerprint == plain_i.fingerprint
    assert extra_i.notice == ("c.json:/criteria/tool_trajectory_avg_score: tool_trajectory_avg_score does not read "
                              "'description', 'method'; ignored, as ADK ignores them (the scores are ADK's)")
    reordered = CaseInput("s", EvalCase.model_validate(case("c", inv(calls=[("a", {}), ("b", {})]))),
                          [Invocation.model_validate(inv(calls=[("b", {}), ("a", {})]))])
    got, want = extra_c.evaluate(reordered), plain_c.evaluate(reordered)
    assert isinstance(got, MetricResult) and isinstance(want, MetricResult)
    assert (got.score, got.status) == (want.score, want.status) == (1.0, "passed")


def test_case_input_reads_each_part_once_and_keeps_it() -> None:
    """What criteria share is computed on first read and the same object afterwards (the trajectory, ROUGE and
    tool-count criteria and the turn rows all read it); scenario cases have no expected parts."""
    calls = [("a", {"x": 1}), ("b", {})]
    expected = EvalCase.model_validate(case("c", inv("q", "yes", calls=calls)))
    actual = [Invocation.model_validate(inv("q", "no", calls=calls[::-1]))]
    read = CaseInput("s", expected, actual)
    assert read.actual_calls is read.actual_calls and read.expected_texts is read.expected_texts
    assert [[c.name for c in calls] for calls in read.actual_calls] == [["b", "a"]]
    assert [[c.name for c in calls] for calls in (read.expected_calls or [])] == [["a", "b"]]
    assert (read.actual_texts, read.expected_texts) == (["no"], ["yes"])
    assert read.actual_model_events == [(None, [])]
    assert CaseInput.actual_calls.__doc__ == "Tool calls of each actual invocation."
    scenario = EvalCase.model_validate(
        {"eval_id": "s", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "ask"}})
    assert CaseInput("s", scenario, actual).expected_calls is None
