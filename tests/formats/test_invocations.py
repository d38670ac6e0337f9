"""Tests for evalbot.formats.invocations: what criteria read out of an Invocation, in both intermediate-data forms."""

from __future__ import annotations

from typing import Any

from evalbot.formats.adk import Invocation
from evalbot.formats.invocations import (
    content_text,
    final_text,
    intermediate_texts,
    tool_call_rows,
    tool_calls,
    tool_responses,
    user_text,
)


def inv(**fields: Any) -> Invocation:
    """An invocation with a user message and the given fields."""
    return Invocation.model_validate({"invocation_id": "i", "user_content": {"parts": [{"text": "q"}]}, **fields})


def event(author: str, *parts: dict[str, Any]) -> dict[str, Any]:
    """A recorded event with the given content parts."""
    return {"author": author, "content": {"role": "model", "parts": list(parts)}}


EVENTS = inv(intermediate_data={"invocation_events": [
    event("agent", {"function_call": {"name": "a", "args": {"x": 1}}}, {"text": "thinking"}),
    event("tool", {"function_response": {"name": "a", "response": {"ok": True}}}),
    {"author": "agent"},  # no content at all
    event("sub", {"function_call": {"name": "b", "args": {}}}, {"function_call": {"name": "c"}}),
    event("tool", {"function_response": {"name": "b", "response": {}}}, {"text": ""}),
]})


def test_tool_calls_and_responses_walk_every_event_part_in_order() -> None:
    """Events form: every function_call / function_response part of every author, in event and part order."""
    assert [(c.name, c.args) for c in tool_calls(EVENTS)] == [("a", {"x": 1}), ("b", {}), ("c", None)]
    assert [(r.name, r.response) for r in tool_responses(EVENTS)] == [("a", {"ok": True}), ("b", {})]


def test_tool_calls_and_responses_of_hand_written_data() -> None:
    """tool_uses / tool_responses form: the lists as written (copies); no intermediate data: none."""
    data = {"tool_uses": [{"name": "f", "args": {"k": "v"}}], "tool_responses": [{"name": "f", "response": {"r": 1}}]}
    written = inv(intermediate_data=data)
    assert [c.name for c in tool_calls(written)] == ["f"] and [r.response for r in tool_responses(written)] == [{"r": 1}]
    assert tool_calls(written) is not tool_calls(written)
    assert tool_calls(inv()) == [] and tool_responses(inv()) == []


def test_tool_call_rows_are_the_tool_calls_as_name_and_args() -> None:
    """tool_call_rows gives tool_calls' (name, args) in the same order, in both forms and without data; the args are
    the calls' own objects (the turns show them, the trajectory compares them)."""
    written = inv(intermediate_data={"tool_uses": [{"name": "f", "args": {"k": "v"}}, {"name": None}]})
    for invocation in (EVENTS, written, inv(), inv(intermediate_data={"invocation_events": []})):
        calls = tool_calls(invocation)
        rows = tool_call_rows(invocation)
        assert rows == [(c.name, c.args) for c in calls]
        assert all(row[1] is call.args for row, call in zip(rows, calls, strict=True))
    assert tool_call_rows(EVENTS) == [("a", {"x": 1}), ("b", {}), ("c", None)]


def test_texts() -> None:
    """Texts of parts that have one, joined by newlines; "" without content; intermediate texts keep authors."""
    answered = inv(final_response={"parts": [{"text": "one"}, {"function_call": {"name": "f"}}, {"text": "two"}]})
    assert final_text(answered) == "one\ntwo" and user_text(answered) == "q"
    assert final_text(inv()) == "" and content_text(None) == ""
    assert intermediate_texts(EVENTS) == [("agent", "thinking")]
    hand = inv(intermediate_data={"intermediate_responses": [["sub", [{"text": "a"}, {"text": "b"}]], ["x", []]]})
    assert intermediate_texts(hand) == [("sub", "a\nb")]
