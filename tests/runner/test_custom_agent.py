"""Custom agent functions: loading ``module:callable``, the output contract, history and state."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evalbot.errors import ConfigError
from evalbot.formats.adk import Content, EvalCase, IntermediateData, Part
from evalbot.formats.invocations import final_text, tool_calls
from evalbot.runner.base import AgentError
from evalbot.runner.custom_agent import invocation_from_output, load_callable, load_function_agent

USER = Content(role="user", parts=[Part(text="hello")])


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon", "expected 'module:callable'"),
        ("tests.runner.missing_module:f", "cannot import module 'tests.runner.missing_module'"),
        ("tests.fakes.agents:nope", "has no attribute 'nope'"),
        ("tests.fakes.agents:NOT_CALLABLE", "is a int, not a callable"),
    ],
)
def test_bad_specs_are_config_errors(spec: str, message: str) -> None:
    """A spec that cannot be loaded names the spec and the problem."""
    with pytest.raises(ConfigError, match=message):
        load_callable(spec)


def test_dotted_attribute_is_resolved() -> None:
    """``module:obj.attr`` reaches attributes of module-level objects."""
    assert load_callable("tests.fakes.agents:flaky.__call__").__name__ == "__call__"


@pytest.mark.parametrize(
    ("output", "message"),
    [
        ("just text", "returned str"),
        ({"answer": "x"}, "no 'response' key"),
        ({"response": 3}, "'response' must be a string"),
        ({"response": "x", "predicted_trajectory": "not json"}, "not JSON"),
        ({"response": "x", "predicted_trajectory": "[" * 100_000}, "not JSON"),  # RecursionError: exit 70
        ({"response": "x", "predicted_trajectory": [{"tool_name": "a", "tool_input": "[" * 100_000}]},
         "must be an object of"),
        ({"response": "x", "predicted_trajectory": {"tool_name": "a"}}, "must be a list"),
        ({"response": "x", "predicted_trajectory": ["a"]}, r"predicted_trajectory\[0\] must be an object"),
        ({"response": "x", "predicted_trajectory": [{"tool_input": {}}]}, "non-empty string 'tool_name'"),
        ({"response": "x", "predicted_trajectory": [{"tool_name": "a"}]}, "has no 'tool_input'"),
        ({"response": "x", "predicted_trajectory": [{"tool_name": "a", "tool_input": [1]}]}, "must be an object of"),
    ],
)
def test_malformed_output_is_rejected_with_the_contract(output: Any, message: str) -> None:
    """Every way of breaking the contract raises AgentError saying what is wrong."""
    with pytest.raises(AgentError, match=message):
        invocation_from_output(output, USER, "i1")


def test_output_becomes_an_invocation() -> None:
    """Response, tool calls (JSON-string inputs decoded) and the user message land in the invocation."""
    inv = invocation_from_output(
        {"response": "done", "predicted_trajectory": [{"tool_name": "a", "tool_input": '{"x": 1}'},
                                                     {"tool_name": "b", "tool_input": None}], "extra": 1},
        USER, "i1",
    )
    assert final_text(inv) == "done" and inv.invocation_id == "i1" and inv.user_content == USER
    assert [(c.name, c.args) for c in tool_calls(inv)] == [("a", {"x": 1}), ("b", None)]
    assert isinstance(inv.intermediate_data, IntermediateData)


def test_missing_trajectory_means_no_tool_calls() -> None:
    """A response without ``predicted_trajectory`` records an empty trajectory."""
    assert tool_calls(invocation_from_output({"response": "hi"}, USER, "i")) == []


def _converse(spec: str, prompts: list[str], state: dict[str, Any] | None = None) -> list[str]:
    agent = load_function_agent(spec)
    case = EvalCase.model_validate({
        "eval_id": "c", "conversation": [{"user_content": {"parts": [{"text": p}]}} for p in prompts],
        **({"session_input": {"app_name": "a", "user_id": "u", "state": state}} if state else {}),
    })

    async def go() -> list[str]:
        session = await agent.open(case, 1)
        out = []
        for i, p in enumerate(prompts):
            inv = await session.send(Content(role="user", parts=[Part(text=p)]), f"t{i}")
            out.append(final_text(inv))
        return out

    return asyncio.run(go())


def test_history_holds_the_earlier_turns() -> None:
    """A function declaring ``history`` receives the earlier turns of the conversation."""
    assert _converse("tests.fakes.agents:with_history", ["a", "b", "c"]) == [
        "turn 1; previous: None", "turn 2; previous: a", "turn 3; previous: b"]


def test_state_comes_from_session_input() -> None:
    """A function declaring ``state`` receives the case's session_input.state."""
    assert _converse("tests.fakes.agents:with_state", ["hi"], {"user_name": "Ada"}) == ["user is Ada"]


def test_async_and_json_string_trajectories() -> None:
    """Async functions are awaited; a JSON-string trajectory is decoded."""
    assert _converse("tests.fakes.agents:async_echo", ["x"]) == ["you said: x"]
    agent = load_function_agent("tests.fakes.agents:async_echo")
    assert agent.is_async and not agent.wants_history
    assert _converse("tests.fakes.agents:json_trajectory", ["x"]) == ["ok"]
