"""response_evaluation_score: Vertex AI's coherence (1-5) through the real google-genai client against the fake;
thresholds on ADK's 1-5 scale, pass/fail decided on the ratings, the report's score normalised."""

from __future__ import annotations

from typing import Any

import pytest

from evalbot.criteria import build_criteria, response_evaluation_score
from evalbot.criteria.base import BuildContext
from evalbot.formats.config import parse_config, parse_criterion
from tests.fakes.fake_vertex_eval import Graded, connect, mount
from tests.fakes.judged import build, case_input, inv, judged, run

NAME = "response_evaluation_score"
CASE = {"eval_id": "c", "conversation": [inv("a", "q", "ref a"), inv("b", "q", "ref b")]}
RATINGS = {"clear answer": 5.0, "muddled answer": 2.0}


def _rate(metric: str, instance: dict[str, Any]) -> Graded:
    return Graded(RATINGS[instance["prediction"]], f"rated {instance['prediction']}")


def _actual(*responses: str) -> list[dict[str, Any]]:
    return [inv(iid, "q", text) for iid, text in zip("ab", responses, strict=False)]


@pytest.mark.parametrize(("threshold", "status"), [(3.5, "passed"), (4.0, "failed"), (1, "passed"), (5, "failed")])
def test_mean_rating_against_a_1_to_5_threshold(threshold: float, status: str) -> None:
    """Ratings 5 and 2: the case's value is their mean, 3.5, compared with the threshold on the 1-5 scale; the
    report's score is (3.5 - 1) / 4 = 0.625 and each invocation's rating is kept in details.value."""
    with judged() as (fake, stack):
        route = mount(fake, _rate)
        connect(stack, fake)
        result = run(build(response_evaluation_score.build, NAME, threshold, stack),
                     case_input(CASE, _actual("clear answer", "muddled answer")))
    assert result.status == status
    assert result.score == 0.625
    assert result.threshold == (threshold - 1) / 4
    assert (result.details or {})["value"] == 3.5 and (result.details or {})["threshold_value"] == threshold
    assert [p.score for p in result.per_invocation] == [1.0, 0.25]
    assert [(p.details or {})["value"] for p in result.per_invocation] == [5.0, 2.0]
    assert [p.status for p in result.per_invocation] == [
        "passed" if 5.0 >= threshold else "failed", "passed" if 2.0 >= threshold else "failed"]
    assert sorted(i["prediction"] for _, i in route.calls) == ["clear answer", "muddled answer"]
    assert {r.path for r in fake.requests} == {"/v1beta1/:evaluateInstances"}
    assert all(set(r.body) == {"coherence_input"} for r in fake.requests)


@pytest.mark.parametrize("rating", [0.5, 5.5])
def test_a_rating_off_the_scale_is_not_taken(rating: float) -> None:
    """A rating outside 1-5 is not_evaluated, saying so (never clipped into a score)."""
    with judged() as (fake, stack):
        mount(fake, lambda metric, instance: Graded(rating))
        connect(stack, fake)
        result = run(build(response_evaluation_score.build, NAME, 3, stack),
                     case_input(CASE, _actual("clear answer", "muddled answer")))
    assert result.status == "not_evaluated"
    assert all("outside coherence's 1-5" in (p.reason or "") for p in result.per_invocation)


def test_a_scenario_case_is_not_evaluated_as_in_adk() -> None:
    """ADK requires expected invocations for this metric: a conversation scenario is not evaluated, never sent."""
    scenario = {"eval_id": "s", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "chat"}}
    with judged() as (fake, stack):
        route = mount(fake, _rate)
        connect(stack, fake)
        result = run(build(response_evaluation_score.build, NAME, 3, stack),
                     case_input(scenario, _actual("clear answer")))
    assert result.status == "not_evaluated" and "expected invocations" in (result.reason or "")
    assert route.calls == []


def test_without_credentials_never_a_config_error() -> None:
    """No service: not_evaluated with what to set; the config with a 1-5 threshold loads without an error."""
    result = run(build(response_evaluation_score.build, NAME, 4, None), case_input(CASE, _actual("clear answer")))
    assert result.status == "not_evaluated" and "GOOGLE_API_KEY" in (result.reason or "")
    config = parse_config({"criteria": {NAME: 4}}, "test_config.json")
    _, infos = build_criteria(config, BuildContext())
    assert infos[0].error is None and infos[0].threshold == 0.75


@pytest.mark.parametrize("threshold", [0.8, 0, 5.01, 6])
def test_a_threshold_off_the_scale_is_refused_with_the_scale(threshold: float) -> None:
    """A 0..1-style threshold would pass every rated case (ADK's coherence is at least 1): refused, naming the
    1-5 scale; the other 0..1 criteria keep refusing 1-5 values."""
    spec = parse_criterion(NAME, threshold, "test_config.json")
    assert spec.error is not None and "1-5 scale" in spec.error
    assert parse_criterion("safety_v1", 4, "test_config.json").error is not None
    assert parse_criterion(NAME, {"threshold": 3.5}, "test_config.json").error is None
