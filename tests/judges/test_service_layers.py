"""Reading the Vertex AI evaluation service's answers and the cached verdicts: malformed, hostile and forged input
is refused cleanly (a JudgeError with the reason), never taken as a score."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria import multi_turn_task_success, response_evaluation_score, safety
from evalbot.judges.base import JudgeCallError, JudgeError, ServiceRubric
from evalbot.judges.factory import add_evaluation_service, build_stack
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.service_layers import verdict_from_answer
from evalbot.judges.vertex_eval import VertexEvaluation
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_vertex_eval import Graded, connect, mount
from tests.fakes.judged import build, case_input, inv, judged, run


def test_reads_camel_and_snake_case_answers() -> None:
    """The REST answer (camelCase) and the SDK's dump (snake_case) read the same; an unmet rubric may omit
    ``verdict``; a rubric is named by its property description, else its id, else its position."""
    camel = {"metricResults": [{"score": 0.5, "explanation": "e", "rubricVerdicts": [
        {"evaluatedRubric": {"rubricId": "a", "content": {"property": {"description": "Goal met"}}}, "verdict": True,
         "reasoning": "r"},
        {"evaluatedRubric": {"rubricId": "b"}, "reasoning": "no"}, {}]}]}
    snake = {"metric_results": [{"score": 0.5, "explanation": "e", "rubric_verdicts": [
        {"evaluated_rubric": {"rubric_id": "a", "content": {"property": {"description": "Goal met"}}}, "verdict": True,
         "reasoning": "r"},
        {"evaluated_rubric": {"rubric_id": "b"}, "reasoning": "no"}, {}]}]}
    expected = (ServiceRubric("Goal met", True, "r"), ServiceRubric("b", False, "no"), ServiceRubric("rubric_2", False))
    for answer in (camel, snake):
        verdict = verdict_from_answer(answer, "m")
        assert (verdict.score, verdict.explanation, verdict.rubrics) == (0.5, "e", expected)
    legacy = verdict_from_answer({"coherenceResult": {"score": 4, "explanation": "x", "confidence": 1}}, "c")
    assert (legacy.score, legacy.explanation) == (4.0, "x")


@pytest.mark.parametrize("answer", [
    [], "text", None, {}, {"metricResults": []}, {"metricResults": ["x"]}, {"metricResults": {"score": 1}},
    {"somethingElse": 1},
])
def test_answers_without_a_metric_result_are_refused(answer: Any) -> None:
    """Anything but a metric result is a JudgeCallError naming the criterion, never a verdict."""
    with pytest.raises(JudgeCallError, match=r"\(m\)"):
        verdict_from_answer(answer, "m")


@pytest.mark.parametrize("score", [True, "1", float("nan"), float("inf"), None, [1]])
def test_scores_that_are_not_finite_numbers_are_no_score(score: Any) -> None:
    """A boolean, a string, NaN, infinity or a list is no score (not_evaluated upstream), never a number."""
    assert verdict_from_answer({"metricResults": [{"score": score}]}, "m").score is None


def test_an_error_in_the_result_is_kept_as_the_reason() -> None:
    """A metric result with an error code carries the service's message."""
    verdict = verdict_from_answer({"metricResults": [{"error": {"code": 3, "message": "bad turn"}}]}, "m")
    assert verdict.score is None and verdict.error is not None and "bad turn" in verdict.error


def test_huge_answers_are_clipped_in_the_report() -> None:
    """A 2,000-rubric answer with a megabyte explanation leaves at most 100 rubrics and short texts in the details."""
    big = "x" * 1_000_000
    rubrics = [("r" * 5_000, True, "y" * 5_000)] * 2_000
    with judged() as (fake, stack):
        mount(fake, lambda metric, instance: Graded(1.0, big, rubrics))
        connect(stack, fake)
        case = case_input({"eval_id": "c", "conversation": [inv("a", "q", "r")]}, [inv("a", "q", "r")])
        result = run(build(multi_turn_task_success.build, multi_turn_task_success.NAME, 0.5, stack), case)
    details = result.per_invocation[-1].details or {}
    assert result.score == 1.0 and len(details["rubrics"]) == 100
    assert len(json.dumps(details)) < 200_000


def _forge(cache_dir: Path, text: str) -> None:
    """Overwrite every cached answer with ``text`` (an unsigned cache a pull request could write)."""
    for path in cache_dir.rglob("*.json"):
        entry = json.loads(path.read_text(encoding="utf-8"))
        entry["samples"] = {index: text for index in entry["samples"]}
        entry.pop("hmac", None)
        path.write_text(json.dumps(entry), encoding="utf-8")


@pytest.mark.parametrize(("factory", "name", "threshold", "forged"), [
    (response_evaluation_score.build, response_evaluation_score.NAME, 3, {"score": 9.0, "explanation": "", "rubrics": []}),
    (safety.build, safety.NAME, 0.5, {"score": 7.0, "explanation": "", "rubrics": []}),
    (multi_turn_task_success.build, multi_turn_task_success.NAME, 0.5, {"score": -1, "explanation": "", "rubrics": []}),
    (safety.build, safety.NAME, 0.5, "not json"),
    (safety.build, safety.NAME, 0.5, {"score": 1.0, "rubrics": "nope"}),
])
def test_forged_cached_verdicts_never_score(tmp_path: Path, factory: Any, name: str, threshold: float,
                                            forged: Any) -> None:
    """A cached verdict edited to an off-scale score or a malformed shape is replayed as not_evaluated with the
    reason, never as a score."""
    case = case_input({"eval_id": "c", "conversation": [inv("a", "q", "r")]}, [inv("a", "q", "r")])
    with judged() as (fake, _):
        mount(fake, lambda metric, instance: Graded(4.0 if metric == "coherence" else 1.0))
        stack = build_stack(GeminiJudge(api_key="k", base_url=fake.url, timeout=5), cache_dir=tmp_path)
        connect(stack, fake)
        assert run(build(factory, name, threshold, stack), case).score is not None
    _forge(tmp_path, forged if isinstance(forged, str) else json.dumps(forged))
    replay = build_stack(None, cache_dir=tmp_path, replay=True)
    add_evaluation_service(replay, None)
    result = run(build(factory, name, threshold, replay), case)
    assert result.score is None and result.status == "not_evaluated"
    reasons = " ".join(p.reason or "" for p in result.per_invocation)
    assert "outside" in reasons or "malformed" in reasons


def test_the_api_key_never_reaches_an_error_message() -> None:
    """A proxy echoing the express-mode key in its error body: the reason carries a mask instead."""
    key = "AIzaSy-very-secret-express-key-123456"
    with FakeGemini() as fake:
        fake.routes[":evaluateInstances"] = lambda body: (403, {"error": {
            "code": 403, "message": f"API key {key} not valid", "status": "PERMISSION_DENIED"}})
        client = VertexEvaluation(api_key=key, base_url=fake.url, timeout=5)
        with pytest.raises(JudgeError) as caught:
            asyncio.run(client.evaluate({"instance": {}}, "safety_v1"))
    assert key not in str(caught.value) and "not valid" in str(caught.value)
