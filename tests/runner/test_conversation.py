"""One conversation with the agent: success, exceptions, hangs, malformed output and multi-turn replay."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from evalbot.formats.adk import EvalCase
from evalbot.formats.invocations import final_text, tool_calls, user_text
from evalbot.runner.base import CaseRun
from evalbot.runner.conversation import run_conversation
from evalbot.runner.custom_agent import load_function_agent


def _case(*prompts: str) -> EvalCase:
    return EvalCase.model_validate({
        "eval_id": "c1",
        "conversation": [{"user_content": {"role": "user", "parts": [{"text": p}]}} for p in prompts],
    })


def _run(spec: str, *prompts: str, timeout: float = 5.0, run: int = 1) -> CaseRun:
    agent = load_function_agent(spec)
    return asyncio.run(run_conversation(agent, _case(*prompts), eval_set_id="s", run=run, timeout=timeout))


def test_success_records_invocations_with_latency() -> None:
    """Every turn becomes an invocation with a readable id, the tool calls and a measured duration."""
    result = _run("tests.fakes.agents:echo", "hi", "again", run=2)
    assert (result.outcome, result.reason, result.stop) == ("ok", None, "conversation_end")
    assert [i.invocation_id for i in result.invocations] == ["run2-turn1", "run2-turn2"]
    assert [final_text(i) for i in result.invocations] == ["you said: hi", "you said: again"]
    assert [c.args for c in tool_calls(result.invocations[0])] == [{"text": "hi"}]
    assert all(i.duration is not None and 0 <= i.duration < 1 for i in result.invocations)


def test_exception_fails_the_case_with_its_message() -> None:
    """An agent that raises fails the run; the message names the turn and the exception."""
    result = _run("tests.fakes.agents:raises", "boom")
    assert result.outcome == "failed" and result.failed_turn == 1 and result.invocations == []
    assert result.reason == "turn 1: the agent raised ValueError: cannot handle 'boom'"
    assert result.failed_invocation is not None and user_text(result.failed_invocation) == "boom"
    assert result.failed_invocation.duration is None


def test_failure_on_a_later_turn_keeps_the_answered_turns() -> None:
    """A multi-turn conversation stops at the failing turn; the turns before it are kept."""
    result = _run("tests.fakes.agents:fails_on_second_turn", "one", "two", "three")
    assert result.outcome == "failed" and result.failed_turn == 2
    assert [user_text(i) for i in result.invocations] == ["one"]
    assert "RuntimeError: lost the thread" in (result.reason or "")


def test_hung_sync_agent_times_out_and_the_run_goes_on() -> None:
    """A blocking agent is abandoned after the timeout (its daemon thread does not hold the run)."""
    started = time.monotonic()
    result = _run("tests.fakes.agents:hangs", "wait", timeout=0.3)
    assert time.monotonic() - started < 3
    assert result.outcome == "failed" and result.failed_turn == 1
    assert result.reason == "turn 1: the agent did not answer within 0.3 s (timeout)"


def test_hung_async_agent_times_out() -> None:
    """An async agent that never answers is cancelled at the timeout."""
    result = _run("tests.fakes.agents:async_hangs", "wait", timeout=0.2)
    assert result.outcome == "failed" and "within 0.2 s" in (result.reason or "")


def test_malformed_output_is_an_error_on_that_case() -> None:
    """Output that breaks the contract ends the run as an error that explains the contract."""
    result = _run("tests.fakes.agents:returns_string", "hi")
    assert result.outcome == "error" and result.failed_turn == 1
    assert (result.reason or "").startswith("turn 1: malformed agent output: the agent function returned str")
    assert "'predicted_trajectory'" in (result.reason or "")


def test_static_multi_turn_passes_the_conversation_so_far() -> None:
    """Each turn of a static conversation is sent in order and the agent sees the earlier turns."""
    result = _run("tests.fakes.agents:with_history", "a", "b")
    assert [final_text(i) for i in result.invocations] == ["turn 1; previous: None", "turn 2; previous: a"]


def test_session_start_failure_fails_the_run() -> None:
    """An agent whose session cannot start fails the run instead of aborting it."""

    class Broken:
        label = "broken"

        async def open(self, case: EvalCase, run: int) -> Any:
            raise ConnectionError("backend down")

    result = asyncio.run(run_conversation(Broken(), _case("x"), eval_set_id="s", run=1, timeout=1))
    assert result.outcome == "failed" and "ConnectionError: backend down" in (result.reason or "")
