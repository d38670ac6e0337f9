"""Vertex-style pointwise template metrics declared in the config."""

from __future__ import annotations

from typing import Any

from evalbot.compare.baseline import build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.criteria import BrokenCriterion, build_criteria
from evalbot.criteria import pointwise_template as pw
from evalbot.criteria.base import BuildContext
from evalbot.formats.config import parse_config
from evalbot.results import MetricResult
from tests.fakes.judged import Judged, case_input, judged, run, unfence
from tests.fakes.pointwise import ACTUAL, CASE, TEMPLATE, _criteria
from tests.fakes.reports import case, eval_set, report
from tests.fakes.reports import criterion as criterion_info


def _scored(judge: Judged, template: dict[str, Any], answers: list[str]) -> MetricResult:
    """The pointwise metric of ``template`` on the case, with one sample per answer (in order)."""
    with judge(lambda p, i, r: answers[i]) as (_, stack):
        (criterion, *_) = _criteria({"metric_prompt_template": template,
                                     "judge_model_options": {"num_samples": len(answers)}}, stack)
        return run(criterion, case_input(CASE, ACTUAL))


def test_declared_under_any_name_and_scored(judged_on: Judged) -> None:
    """A criterion with metric_prompt_template is a judge metric: inputs reach the prompt, the score is read."""
    with judged_on(lambda p, i, r: '{"explanation": "calls match", "score": 1}') as (fake, stack):
        (criterion, *_) = _criteria({"metric_prompt_template": TEMPLATE}, stack)
        result = run(criterion, case_input(CASE, ACTUAL))
    prompt = fake.requests[0].prompt
    assert '"tool_name": "get_weather"' in prompt and "Weather in Paris?" in prompt
    assert prompt.index("0: Does not follow") < prompt.index("1: Follows")
    assert unfence(prompt).rstrip().endswith("Sunny.")
    assert result.score == 1.0 and result.status == "passed"
    assert (result.per_invocation[0].details or {})["rationale"] == "calls match"


def test_sample_mean_and_out_of_rubric_scores(judged_on: Judged) -> None:
    """Several samples average; a score not in the rubric is unparsed."""
    result = _scored(judged_on, TEMPLATE, ['{"score": 1}', '{"score": 0}', '{"score": 7}', '{"score": 1}'])
    details = result.per_invocation[0].details or {}
    assert details["samples"] == [1.0, 0.0, None, 1.0]
    assert result.score == 2 / 3


def test_parse_score() -> None:
    """Scores are read from JSON, quoted or not, and must be rubric ratings."""
    assert pw.parse_score('{"explanation": "x", "score": "4"}', {1.0, 4.0}) == 4.0
    assert pw.parse_score('{"score": 2.5}', {1.0, 2.0}) is None
    assert pw.parse_score("four", {4.0}) is None


def test_bad_templates_are_config_errors() -> None:
    """An unknown input variable or a non-numeric rating is an error naming the problem."""
    bad_var = _criteria({"metric_prompt_template": {**TEMPLATE, "input_variables": ["prompt", "mood"]}}, None)[0]
    assert isinstance(bad_var, BrokenCriterion) and "mood" in bad_var.reason
    bad_key = _criteria({"metric_prompt_template": {**TEMPLATE, "rating_rubric": {"good": "x"}}}, None)[0]
    assert isinstance(bad_key, BrokenCriterion) and "rating_rubric" in bad_key.reason


FIVE_POINT = {**TEMPLATE, "rating_rubric": {str(k): f"rating {k}" for k in range(1, 6)}}


def test_ratings_are_normalised_onto_the_unit_interval(judged_on: Judged) -> None:
    """A 1-5 rubric's rating 4 scores 0.75 (report scores stay in [0, 1]); the rating itself is kept."""
    with judged_on(lambda p, i, r: '{"explanation": "mostly", "score": 4}') as (_, stack):
        (criterion, *_) = _criteria({"metric_prompt_template": FIVE_POINT}, stack)
        result = run(criterion, case_input(CASE, ACTUAL))
    assert result.score == 0.75 and result.status == "passed"
    assert (result.per_invocation[0].details or {})["rating"] == 4.0


def test_a_threshold_on_the_rating_scale_is_rejected_with_the_mapping() -> None:
    """threshold 4 on a 1-5 rubric is a config error that explains the normalised scale."""
    config = parse_config({"criteria": {"q": {"threshold": 4, "metric_prompt_template": FIVE_POINT}}}, "c.json")
    (criterion, *_), _ = build_criteria(config, BuildContext())
    assert isinstance(criterion, BrokenCriterion)
    assert "outside 0..1" in criterion.reason and "(rating - 1) / (5 - 1)" in criterion.reason


SCALE = {**TEMPLATE, "rating_rubric": {"1": "Bad", "2": "Poor", "3": "Fair", "4": "Good", "5": "Great"}}


def test_samples_vote_against_the_threshold(judged_on: Judged) -> None:
    """On a 1-5 scale with threshold 0.5 (a rating of 3 and up passes), ratings 4, 2, 3 and an unparsed one record
    votes 2 yes, 1 no, 1 unparsed; the score is still the mean of the ratings."""
    result = _scored(judged_on, SCALE, ['{"score": 4}', '{"score": 2}', '{"score": 3}', '{"score": 9}'])
    details = result.per_invocation[0].details or {}
    assert details["votes"] == {"yes": 2, "no": 1, "unparsed": 1}
    assert details["samples"] == [4.0, 2.0, 3.0, None] and result.score == 0.5
    assert pw.sample_votes([5.0], {1.0, 5.0}, None) is None  # informational: no verdict, no votes


def _flip(main_ratings: list[int], pr_ratings: list[int]) -> str:
    """The comparison category of one case whose pointwise metric went from ``main_ratings`` to ``pr_ratings``."""
    results = [_scored(judged, SCALE, [f'{{"score": {r}}}' for r in ratings]) for ratings in (main_ratings, pr_ratings)]
    info = [criterion_info("follows", 0.5, judged=True)]
    main, pr = (report(eval_set("s", [case("c", {"follows": r})], criteria=info)) for r in results)
    comparison = compare(current=pr, baseline=build_baseline(main, commit="a", created_at="2026-01-01T00:00:00Z"),
                         policy=GatePolicy(), baseline_source="main")
    (category,) = (c.category for es in comparison.eval_sets for c in es.cases)
    return category


def test_a_flip_on_ratings_that_disagree_is_inconclusive() -> None:
    """Ratings 5, 5, 5 on main and 4, 2, 2 on the PR (mean 2.67: fails) disagree among themselves: judge noise,
    inconclusive, not blocking. Read as votes ("every rating above 0.5 is a pass") it was a decided regression."""
    assert _flip([5, 5, 5], [4, 2, 2]) == "inconclusive"
    assert _flip([5, 5, 5], [2, 1, 2]) == "regressed"  # every sample fails: decided
