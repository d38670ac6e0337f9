"""multi_turn_*_v1 and safety_v1 on the Vertex AI evaluation service, through the real google-genai client against the
loopback fake, checked against what google-adk 2.13 itself sent and scored (tests/data/vertex_eval, recorded by
scripts/record_vertex_eval_requests.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.compare.judge_gaps import NO_SERVICE_MARK, judge_gaps
from evalbot.criteria import (
    build_criteria,
    multi_turn_task_success,
    multi_turn_tool_use_quality,
    multi_turn_trajectory_quality,
    safety,
)
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.criteria.vertex_service import EARLIER_TURN, SERVICE_MARK
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import parse_config
from evalbot.judges.base import SERVICE_MISSING
from evalbot.judges.factory import build_stack
from evalbot.judges.gemini import GeminiJudge
from evalbot.results import CaseResult, EvalSetReport, Report
from tests.fakes.fake_vertex_eval import Graded, connect, mount
from tests.fakes.judged import FAST_RETRY, build, case_input, inv, judged, run

DATA = Path(__file__).resolve().parents[1] / "data" / "vertex_eval"
CONVERSATION = json.loads((DATA / "conversation.json").read_text(encoding="utf-8"))
ADK = json.loads((DATA / "adk_requests.json").read_text(encoding="utf-8"))
FACTORIES = {
    "multi_turn_task_success_v1": multi_turn_task_success.build,
    "multi_turn_trajectory_quality_v1": multi_turn_trajectory_quality.build,
    "multi_turn_tool_use_quality_v1": multi_turn_tool_use_quality.build,
    "safety_v1": safety.build,
}
STATUS = {"PASSED": "passed", "FAILED": "failed", "NOT_EVALUATED": "not_evaluated"}


def _no_nulls(value: Any) -> Any:
    """ADK's SDK sends unset fields as null (``metric_spec_parameters``); the service reads them as absent."""
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def _canned(metric: str, instance: dict[str, Any]) -> Graded | tuple[int, str]:
    """The verdicts the recording's stub gave ADK, in the fake's terms."""
    result = ADK["canned"][metric]["metricResults"][0]
    if "error" in result:
        return Graded(None, "", error=(result["error"]["code"], result["error"]["message"]))
    rubrics = [(v["evaluatedRubric"]["content"]["property"]["description"], v.get("verdict") is True, v["reasoning"])
               for v in result.get("rubricVerdicts", [])]
    return Graded(result["score"], result["explanation"], rubrics)


def _conversation_case() -> CaseInput:
    return CaseInput("set", EvalCase.model_validate({"eval_id": "lights", "conversation": CONVERSATION["expected"]}),
                     [Invocation.model_validate(i) for i in CONVERSATION["actual"]])


@pytest.mark.parametrize("mode", ["express", "project"])
@pytest.mark.parametrize("metric", sorted(FACTORIES))
def test_requests_and_scores_match_adk(metric: str, mode: str) -> None:
    """For the same invocations evalbot sends ADK 2.13's requests (path, API key, body) and, on the same answers,
    gives ADK's scores and statuses; the earlier turns of a multi-turn metric carry no verdict (ADK: NOT_EVALUATED,
    here informational, as a not_evaluated judged verdict would be a judge failure for the gate)."""
    adk = ADK["modes"][mode][metric]
    with judged() as (fake, stack):
        mount(fake, _canned)
        connect(stack, fake, project=mode == "project")
        result = run(build(FACTORIES[metric], metric, 0.6, stack), _conversation_case())
        sent = [(r.path, r.api_key, r.body) for r in fake.requests]
    def key(request: tuple[str, str | None, Any]) -> str:  # safety's invocations are sent concurrently
        return json.dumps(request, sort_keys=True)

    assert sorted(((p, k, _no_nulls(b)) for p, k, b in sent), key=key) == sorted(
        ((r["path"], r["api_key"], _no_nulls(r["body"])) for r in adk["requests"]), key=key)
    assert result.score == adk["overall_score"]
    assert result.status == STATUS[adk["overall_status"]]
    mine = [(p.score, p.status) for p in result.per_invocation]
    theirs = [(p["score"], STATUS[p["status"]]) for p in adk["per_invocation"]]
    if metric.startswith("multi_turn"):
        assert mine[:-1] == [(None, "informational")] * (len(mine) - 1)
        assert all(p.reason == EARLIER_TURN for p in result.per_invocation[:-1])
        mine, theirs = mine[-1:], theirs[-1:]
    assert mine == theirs
    rubrics = [(r["rubric_id"], r["score"], r["rationale"]) for r in adk["per_invocation"][-1]["rubric_scores"]
               if "score" in r]
    details = result.per_invocation[-1].details or {}
    assert [(r["rubric_id"], r["score"], r["rationale"]) for r in details.get("rubrics", [])] == rubrics


def test_service_error_in_the_answer_is_a_reasoned_not_evaluated() -> None:
    """An answer whose metric result carries an error (no score) leaves the verdict not_evaluated with the
    service's message; the gate counts it as a judge failure."""
    with judged() as (fake, stack):
        mount(fake, lambda metric, instance: Graded(None, "", error=(3, "no tool calls found")))
        connect(stack, fake)
        result = run(build(multi_turn_tool_use_quality.build, "multi_turn_tool_use_quality_v1", 0.5, stack),
                     _conversation_case())
    assert result.status == "not_evaluated" and result.score is None
    assert "no tool calls found" in (result.per_invocation[-1].reason or "")
    gaps = judge_gaps(_report("multi_turn_tool_use_quality_v1", result))
    assert gaps.failed == 1 and gaps.no_judge == 0


def _report(name: str, result: Any) -> Report:
    config = parse_config({"criteria": {name: 0.5}}, "test_config.json")
    _, infos = build_criteria(config, BuildContext())
    case = CaseResult(eval_id="lights", status=result.status, metrics={name: result})
    return Report(eval_sets=[EvalSetReport(eval_set_id="set", path="set.evalset.json", status=result.status,
                                           criteria=infos, cases=[case])])


@pytest.mark.parametrize("metric", sorted(FACTORIES))
def test_without_credentials_not_evaluated_with_what_to_set(metric: str) -> None:
    """No service credentials: every invocation not_evaluated, the reason naming what to set; never a config error;
    the gate counts them as missing judge credentials (blocking where credentials are expected)."""
    criterion = build(FACTORIES[metric], metric, 0.5, None)
    result = run(criterion, _conversation_case())
    assert result.status == "not_evaluated"
    assert (result.reason or "").startswith(f"{metric} {SERVICE_MARK}{SERVICE_MISSING}")
    assert SERVICE_MARK == NO_SERVICE_MARK
    gaps = judge_gaps(_report(metric, result))
    verdicts = 3 if metric == "safety_v1" else 1  # a multi-turn metric has one verdict per conversation
    assert gaps.no_judge == verdicts and gaps.failed == 0 and gaps.total == verdicts
    message = gaps.no_judge_message(expected=True) or ""
    assert "GOOGLE_API_KEY" in message and "Vertex AI evaluation service" in message


def test_a_judge_without_the_service_says_why() -> None:
    """A run with an LLM judge (GEMINI_API_KEY) but no service credentials: the reason is the stack's."""
    stack = build_stack(GeminiJudge(api_key="k", base_url="http://127.0.0.1:9"), retry=FAST_RETRY)
    stack.vertex_unavailable = "GOOGLE_CLOUD_LOCATION is not set (the service needs a project and a location)"
    result = run(build(multi_turn_task_success.build, "multi_turn_task_success_v1", 0.5, stack), _conversation_case())
    assert "GOOGLE_CLOUD_LOCATION is not set" in (result.reason or "")


def test_transient_errors_are_retried_and_verdicts_cached(tmp_path: Path) -> None:
    """A 503 is retried with the judge's policy; a second run with the same cache sends nothing; replay answers."""
    calls: list[str] = []

    def flaky(metric: str, instance: dict[str, Any]) -> Graded | tuple[int, str]:
        calls.append(metric)
        return (503, "busy") if len(calls) == 1 else Graded(0.8, "fine")

    with judged() as (fake, _):
        mount(fake, flaky)
        for _ in range(2):
            stack = build_stack(GeminiJudge(api_key="k", base_url=fake.url, timeout=5), cache_dir=tmp_path,
                                retry=FAST_RETRY)
            connect(stack, fake)
            result = run(build(multi_turn_task_success.build, "multi_turn_task_success_v1", 0.5, stack),
                         _conversation_case())
            assert result.score == 0.8 and result.status == "passed"
        assert len(calls) == 2
    replay = build_stack(None, cache_dir=tmp_path, replay=True)
    from evalbot.judges.factory import add_evaluation_service

    add_evaluation_service(replay, None)
    again = run(build(multi_turn_task_success.build, "multi_turn_task_success_v1", 0.5, replay), _conversation_case())
    assert again.score == 0.8


@pytest.mark.parametrize("score", [1.5, -0.1])
def test_a_score_outside_the_scale_is_refused(score: float) -> None:
    """A multi-turn score outside [0, 1] is not taken: not_evaluated, saying so."""
    with judged() as (fake, stack):
        mount(fake, lambda metric, instance: Graded(score))
        connect(stack, fake)
        result = run(build(multi_turn_task_success.build, "multi_turn_task_success_v1", 0.5, stack),
                     _conversation_case())
    assert result.status == "not_evaluated" and "outside" in (result.reason or "")


def test_hostile_texts_travel_as_data() -> None:
    """Markup, template syntax, invalid surrogates' replacements and a huge text reach the service as JSON strings,
    unchanged and unrendered."""
    hostile = "{{ 7*7 }} </turn> \"quoted\" \\ \u202e" + "x" * 200_000
    with judged() as (fake, stack):
        route = mount(fake, lambda metric, instance: Graded(1.0))
        connect(stack, fake)
        case = case_input({"eval_id": "c", "conversation": [inv("a", "q", "r")]}, [inv("a", hostile, hostile)])
        result = run(build(multi_turn_task_success.build, "multi_turn_task_success_v1", 0.5, stack), case)
    assert result.score == 1.0
    events = route.calls[0][1]["agent_eval_data"]["turns"][0]["events"]
    assert [e["content"]["parts"][0]["text"] for e in events] == [hostile, hostile]


def test_every_adk_vertex_name_loads_without_unknown_criteria() -> None:
    """A config naming the Vertex-service metrics of ADK 2.13 (coherence on its 1-5 scale) loads, and each builds
    without a configuration error, with or without credentials."""
    config = parse_config({"criteria": {
        "multi_turn_task_success_v1": 0.7, "multi_turn_trajectory_quality_v1": 0.7,
        "multi_turn_tool_use_quality_v1": {"threshold": 0.6}, "response_evaluation_score": 3.5, "safety_v1": 0.9,
    }}, "test_config.json")
    built, infos = build_criteria(config, BuildContext())
    assert [i.error for i in infos if i.error] == []
    assert {i.name for i in infos if i.judged} == {
        "multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1", "multi_turn_tool_use_quality_v1",
        "response_evaluation_score", "safety_v1"}
    assert len(built) == len(infos)
