"""rubric_based_tool_use_quality_v1: the judge sees the tool calls paired with their results."""

from __future__ import annotations

from evalbot.criteria import rubric_tool_use_quality as tuq
from tests.fakes.judged import Judged, build, case_input, inv, run

NAME = "rubric_based_tool_use_quality_v1"
RUBRIC = {"rubric_id": "city", "rubric_content": {"text_property": "The agent asks for the right city."}}


def test_tool_calls_from_events_are_paired_by_id(judged_on: Judged) -> None:
    """Calls and responses recorded as events reach the prompt, each response next to its call."""
    events = [
        {"author": "a", "content": {"role": "model", "parts": [
            {"function_call": {"id": "x2", "name": "lookup", "args": {"q": "second"}}},
            {"function_call": {"id": "x1", "name": "lookup", "args": {"q": "first"}}}]}},
        {"author": "a", "content": {"role": "user", "parts": [
            {"function_response": {"id": "x1", "name": "lookup", "response": {"r": "R-FIRST"}}},
            {"function_response": {"id": "x2", "name": "lookup", "response": {"r": "R-SECOND"}}}]}},
    ]
    answer = "ID: city\nProperty: The agent asks for the right city.\nRationale: yes\nVerdict: yes"
    with judged_on(lambda p, i, r: answer) as (fake, stack):
        result = run(build(tuq.build, NAME, {"threshold": 1.0, "rubrics": [RUBRIC]}, stack),
                     case_input({"eval_id": "c", "conversation": [inv("t", "q")]},
                                [inv("t", "where?", "ok", intermediate_data={"invocation_events": events})]))
    prompt = fake.requests[0].prompt
    assert prompt.index('"second"') < prompt.index("R-SECOND") < prompt.index('"first"') < prompt.index("R-FIRST")
    assert result.status == "passed" and result.score == 1.0


def test_no_tools_is_said_plainly(judged_on: Judged) -> None:
    """An invocation without tool calls tells the judge so instead of showing an empty list."""
    answer = "ID: city\nProperty: The agent asks for the right city.\nRationale: none\nVerdict: no"
    with judged_on(lambda p, i, r: answer) as (fake, stack):
        result = run(build(tuq.build, NAME, {"threshold": 0.5, "rubrics": [RUBRIC]}, stack),
                     case_input({"eval_id": "c", "conversation": [inv("t", "q")]}, [inv("t", "q", "a")]))
    assert "No tools were called." in fake.requests[0].prompt
    assert result.status == "failed" and result.score == 0.0
