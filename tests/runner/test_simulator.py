"""The LLM-backed simulated user, through the real google-genai client against the fake Gemini server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from evalbot.errors import ConfigError
from evalbot.formats.adk import ConversationScenario, EvalCase
from evalbot.formats.invocations import user_text
from evalbot.judges.factory import JudgeStack
from evalbot.runner.base import CaseRun, SimulatorError
from evalbot.runner.conversation import run_conversation
from evalbot.runner.custom_agent import load_function_agent
from evalbot.runner.simulator import (
    STOP_SIGNAL,
    SimulatedUser,
    SimulatorConfig,
    builtin_personas,
    parse_simulator_config,
    resolve_persona,
)
from tests.fakes.fake_gemini import FakeGemini, Scripted

PLAN = "Ask for the weather in Paris, then ask whether to take an umbrella, then end the conversation."


def _scenario(persona: Any = None) -> EvalCase:
    scenario: dict[str, Any] = {"starting_prompt": "  Hi! Weather in Paris?  ", "conversation_plan": PLAN}
    if persona is not None:
        scenario["user_persona"] = persona
    return EvalCase.model_validate({"eval_id": "sim", "conversation_scenario": scenario})


def _simulate(judge: Any, case: EvalCase, config: SimulatorConfig | None = None, spec: str = "echo") -> CaseRun:
    assert case.conversation_scenario is not None
    user = SimulatedUser(judge, config or SimulatorConfig(), case.conversation_scenario)
    agent = load_function_agent(f"tests.fakes.agents:{spec}")
    return asyncio.run(run_conversation(agent, case, eval_set_id="s", run=1, timeout=5, simulator=user))


def test_conversation_ends_by_stop_signal(fake: FakeGemini, judge: JudgeStack) -> None:
    """Starting prompt verbatim, then generated turns until the LLM answers with the stop signal."""
    fake.script(Scripted(texts=["Should I take an umbrella?"]), Scripted(texts=[f"Thanks! {STOP_SIGNAL.upper()}"]))
    result = _simulate(judge, _scenario("NOVICE"))
    assert (result.outcome, result.stop) == ("ok", "stop_signal")
    assert [user_text(i) for i in result.invocations] == ["  Hi! Weather in Paris?  ", "Should I take an umbrella?"]
    assert len(fake.requests) == 2  # no LLM call for the starting prompt
    first, second = (r.prompt for r in fake.requests)
    assert PLAN in first and STOP_SIGNAL in first
    assert builtin_personas()["NOVICE"]["description"] in first
    assert "user:   Hi! Weather in Paris?" in first and "agent: you said:   Hi! Weather in Paris?" in first
    assert "user: Should I take an umbrella?" in second
    assert fake.requests[0].model == "gemini-2.5-flash"
    thinking = fake.requests[0].body["generationConfig"]["thinkingConfig"]  # ADK's default model_configuration
    assert 10240 in thinking.values() and True in thinking.values()
    assert judge.usage_summary().per_criterion["user_simulator"].requests == 2


def test_conversation_hits_the_invocation_limit(fake: FakeGemini, judge: JudgeStack) -> None:
    """With max_allowed_invocations=3 the starting prompt plus two generated messages are sent, then it stops."""
    fake.responder = lambda prompt, i, rec: f"question number {len(fake.requests)}"
    config = parse_simulator_config({"max_allowed_invocations": 3, "model": "sim-model",
                                     "model_configuration": {"temperature": 0.5}}, "cfg.json")
    result = _simulate(judge, _scenario(), config)
    assert (result.outcome, result.stop) == ("ok", "invocation_limit")
    assert [user_text(i) for i in result.invocations][1:] == ["question number 1", "question number 2"]
    assert len(fake.requests) == 2 and fake.requests[0].model == "sim-model"
    assert fake.requests[0].body["generationConfig"] == {"temperature": 0.5}


def test_unlimited_conversation_still_ends_on_stop_signal(fake: FakeGemini, judge: JudgeStack) -> None:
    """-1 removes the limit; the stop signal is matched case-insensitively anywhere in the text."""
    fake.script(*[Scripted(texts=[f"more {i}"]) for i in range(25)], Scripted(texts=["done </FINISHED>"]))
    result = _simulate(judge, _scenario(), parse_simulator_config({"max_allowed_invocations": -1}, "c"))
    assert result.stop == "stop_signal" and len(result.invocations) == 26


def test_empty_message_is_an_error(fake: FakeGemini, judge: JudgeStack) -> None:
    """An empty generated message stops the run as an error naming the model."""
    fake.script(Scripted(texts=["   "]))
    result = _simulate(judge, _scenario())
    assert result.outcome == "error" and len(result.invocations) == 1
    assert result.reason == "turn 2: the simulated user's LLM (gemini-2.5-flash) returned an empty message"


def test_llm_failure_is_an_error_with_the_service_message(fake: FakeGemini, judge: JudgeStack) -> None:
    """A failing LLM call ends the run as an error carrying the service's message."""
    fake.fault(400, message="model not found")
    result = _simulate(judge, _scenario())
    assert result.outcome == "error" and "model not found" in (result.reason or "")


def test_tool_calls_are_shown_only_when_asked(fake: FakeGemini, judge: JudgeStack) -> None:
    """include_function_calls adds the agent's tool calls to the history in the prompt."""
    fake.script(Scripted(texts=[STOP_SIGNAL]), Scripted(texts=[STOP_SIGNAL]))
    _simulate(judge, _scenario())
    _simulate(judge, _scenario(), parse_simulator_config({"include_function_calls": True}, "c"))
    without, with_tools = (r.prompt for r in fake.requests)
    assert "tool call: echo(" not in without
    assert 'tool call: echo({"text": "  Hi! Weather in Paris?  "})' in with_tools


def test_custom_instructions_replace_the_prompt(fake: FakeGemini, judge: JudgeStack) -> None:
    """A custom Jinja template is rendered with the plan, history, stop signal and persona."""
    fake.script(Scripted(texts=[STOP_SIGNAL]))
    template = "PLAN={{ conversation_plan }}|STOP={{ stop_signal }}|WHO={{ persona.id }}|H={{ conversation_history }}"
    config = parse_simulator_config({"custom_instructions": template}, "c")
    _simulate(judge, _scenario({"id": "pirate", "description": "Talks like a pirate.", "behaviors": []}), config)
    assert fake.requests[0].prompt.startswith(f"PLAN={PLAN}|STOP={STOP_SIGNAL}|WHO=pirate|H=user: ")


def test_persona_objects_and_unknown_ids() -> None:
    """A persona object is used as given; an unknown id names the built-in ones."""
    persona = resolve_persona(ConversationScenario.model_validate({
        "starting_prompt": "x", "conversation_plan": "y",
        "user_persona": {"id": "p", "description": "Impatient.",
                         "behaviors": [{"name": "short", "description": "d", "behavior_instructions": ["be brief"]}]},
    }).user_persona)
    assert persona is not None and persona["behaviors"][0]["behavior_instructions"] == ["be brief"]
    with pytest.raises(SimulatorError, match="EVALUATOR, EXPERT, NOVICE"):
        resolve_persona("GRUMPY")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"type": "llm_text"}, "/type: 'llm_text' is not a simulator type"),
        ({"max_allowed_invocations": "5"}, "integer >= 1, or -1"),
        ({"custom_instructions": "{{ conversation_plan }} {{ stop_signal }}"}, "must use {{ conversation_history }}"),
        ({"model_configuration": []}, "model_configuration: expected an object"),
    ],
)
def test_invalid_simulator_config_names_the_key(raw: dict[str, Any], message: str) -> None:
    """Config problems raise ConfigError naming the file and key."""
    with pytest.raises(ConfigError, match=r"cfg\.json:/user_simulator_config") as info:
        parse_simulator_config(raw, "cfg.json")
    assert message in str(info.value)


def test_the_judge_still_answers_in_the_next_event_loop(fake: FakeGemini, judge: JudgeStack) -> None:
    """Agent runs and scoring use separate event loops; the same judge serves both (google-genai 2.x binds a
    client's session to one loop)."""
    from evalbot.judges.base import JudgeRequest

    fake.script(Scripted(texts=[STOP_SIGNAL]))
    assert _simulate(judge, _scenario()).stop == "stop_signal"
    reply = asyncio.run(judge.generate(JudgeRequest("judge-model", "score this")))
    assert reply.texts == ("fake answer 0",)


def test_extra_keys_are_kept_and_llm_audio_is_marked_unsupported() -> None:
    """ADK keeps simulator keys it does not know, so a typo or a newer key is not an error (parse_config gives the
    notice); ``llm_audio`` parses into a config that says why its scenarios are not evaluated."""
    config = parse_simulator_config({"max_alowed_invocations": 3, "voice": "x"}, "cfg.json")
    assert config.max_allowed_invocations == 20 and config.unsupported is None
    audio = parse_simulator_config({"type": "llm_audio", "model": "m"}, "cfg.json")
    assert audio.unsupported is not None and "user_simulator_config.type 'llm_audio'" in audio.unsupported
