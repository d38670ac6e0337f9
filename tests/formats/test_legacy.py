"""ADK's legacy ``*.test.json`` shapes: conversion to EvalCases and errors that point into the legacy file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalbot.formats.invocations import final_text, intermediate_texts, tool_calls, user_text
from evalbot.load import load_eval_set, stable_id
from tests.fakes.builders import Writer

SAMPLES = Path(__file__).parents[1] / "data" / "adk_parity" / "samples" / "legacy_v0.5.0" / "tests" / "integration"


def turn(query: str = "q", tools: list[dict[str, Any]] | None = None, reference: str | None = "r", **extra: Any) -> dict[str, Any]:
    """One legacy turn."""
    return {"query": query, "expected_tool_use": tools or [], "reference": reference, **extra}


def test_list_of_turns_is_one_case_named_by_path() -> None:
    """The original shape (ADK's home_automation sample) becomes one case whose eval_id is the file path
    (relative to the repository root)."""
    path = SAMPLES / "fixture" / "home_automation_agent" / "test_files" / "dependent_tool_calls.test.json"
    loaded = load_eval_set(path)
    (only,) = loaded.cases
    assert loaded.eval_set_id == stable_id(path) == only.eval_id and only.case is not None
    assert not Path(only.eval_id).is_absolute() and only.eval_id.endswith("/dependent_tool_calls.test.json")
    first, second = only.case.conversation or []
    assert user_text(first) == "Turn off device_2 in the Bedroom."
    assert [(c.name, c.args) for c in tool_calls(first)] == [
        ("set_device_info", {"location": "Bedroom", "status": "OFF", "device_id": "device_2"})
    ]
    assert final_text(second) == "Status of device_2 is off."


def test_list_of_cases_with_session(write: Writer) -> None:
    """``[{name, data, initial_session}]`` gives one case per item with its session input."""
    session = {"app_name": "home", "user_id": "u1", "state": {"lights": "on"}}
    path = write("old.test.json", [{"name": "one", "data": [turn()], "initial_session": session},
                                   {"name": "two", "data": [turn(), turn()]}])
    one, two = (c.case for c in load_eval_set(path).cases)
    assert one is not None and one.eval_id == "one" and one.session_input is not None
    assert (one.session_input.app_name, one.session_input.state) == ("home", {"lights": "on"})
    assert two is not None and len(two.conversation or []) == 2 and two.session_input is None


def test_missing_reference_is_empty_text_and_intermediate_responses_kept(write: Writer) -> None:
    """No reference gives an empty final response (as ADK converts it); intermediate responses keep their author."""
    path = write("t.test.json", [turn(reference=None, expected_intermediate_agent_responses=[{"author": "sub", "text": "hm"}])])
    (loaded,) = load_eval_set(path).cases
    assert loaded.case is not None and loaded.case.conversation is not None
    (invocation,) = loaded.case.conversation
    assert final_text(invocation) == "" and intermediate_texts(invocation) == [("sub", "hm")]


def test_null_tool_input_is_kept_as_none(write: Writer) -> None:
    """``tool_input: null`` stays None (which does not equal ``{}``), as in ADK."""
    path = write("t.test.json", [turn(tools=[{"tool_name": "f", "tool_input": None}])])
    (loaded,) = load_eval_set(path).cases
    assert loaded.case is not None and loaded.case.conversation is not None
    assert tool_calls(loaded.case.conversation[0])[0].args is None


BAD_TURNS: dict[str, tuple[Any, str, str]] = {
    "missing_tool_input": ([turn(tools=[{"tool_name": "f"}])], "/0/expected_tool_use/0/tool_input",
                           "required: the tool's arguments (use {} for none)"),
    "tool_input_list": ([turn(), turn(tools=[{"tool_name": "f", "tool_input": [1]}])],
                        "/1/expected_tool_use/0/tool_input", "expected the tool's arguments as an object (or null)"),
    "missing_tool_name": ([turn(tools=[{"tool_input": {}}])], "/0/expected_tool_use/0/tool_name",
                          "required: the tool's name as a string"),
    "query_not_string": ([{"query": 3}], "/0/query", "required: the user's message as a string"),
    "reference_not_string": ([turn(reference=["a"])], "/0/reference",  # type: ignore[arg-type]
                             "expected the reference response as a string"),
    "tool_use_not_list": ([{"query": "q", "expected_tool_use": "f"}], "/0/expected_tool_use",
                          "expected a list of tool uses"),
}


@pytest.mark.parametrize("name", sorted(BAD_TURNS))
def test_bad_turn_points_into_the_legacy_file(write: Writer, name: str) -> None:
    """Errors in the list-of-turns shape name the pointer in the file as written, not in a converted document."""
    content, pointer, message = BAD_TURNS[name]
    path = write("t.test.json", content)
    (loaded,) = load_eval_set(path).cases
    assert loaded.error is not None
    assert (loaded.error.path, loaded.error.pointer, loaded.error.message) == (str(path), pointer, message)


def test_bad_legacy_case_does_not_hide_the_others(write: Writer) -> None:
    """In the list-of-cases shape a broken case is an error; its neighbours load, pointers include the case index."""
    path = write("old.test.json", [
        {"name": "good", "data": [turn()]},
        {"name": "bad", "data": [turn(), turn(tools=[{"tool_name": "f"}])]},
        {"name": "bad_session", "data": [turn()], "initial_session": {"app_name": 7}},
        {"data": []},
    ])
    good, bad, bad_session, unnamed = load_eval_set(path).cases
    assert good.case is not None
    assert bad.error is not None and bad.error.pointer == "/1/data/1/expected_tool_use/0/tool_input"
    assert bad_session.error is not None
    assert (bad_session.error.pointer, bad_session.error.message) == ("/2/initial_session/app_name", "expected a string")
    assert unnamed.eval_id == "#3" and unnamed.error is not None and unnamed.error.pointer == "/3"
    assert "a list of cases with 'name' and 'data'" in unnamed.error.message
