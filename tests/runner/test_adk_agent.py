"""ADK agents end to end: a real google-adk LlmAgent whose model calls go to the fake Gemini server.

Runs only where google-adk is importable (it is the optional extra ``evalbot[adk]``, not installed in CI); the
check that a missing google-adk gives a clear error runs everywhere else.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evalbot.errors import ConfigError, install_hint
from evalbot.formats.adk import InvocationEvents
from evalbot.formats.invocations import final_text, tool_calls, tool_responses, user_text
from evalbot.judges.factory import JudgeStack
from evalbot.runner.adk_agent import load_adk_agent
from evalbot.runner.aggregate import score_runs
from evalbot.runner.execute import RunOptions, run_agent
from evalbot.runner.simulator import STOP_SIGNAL
from tests.fakes.builders import load_set
from tests.fakes.fake_gemini import FakeGemini, Scripted

HAVE_ADK = importlib.util.find_spec("google.adk") is not None
needs_adk = pytest.mark.skipif(not HAVE_ADK, reason="google-adk (evalbot[adk]) is not installed")
MODEL = "gemini-2.5-flash"
_names = itertools.count()

AGENT_SOURCE = '''
from google.adk.agents import LlmAgent

def get_weather(city: str) -> dict:
    """Returns today's forecast for a city."""
    return {"city": city, "temp_c": 21, "sky": "sunny"}

root_agent = LlmAgent(
    name="weather_agent",
    model="gemini-2.5-flash",
    instruction="You answer weather questions for {user_name}. Always call get_weather.",
    tools=[get_weather],
)
'''


def _package(tmp_path: Path, source: str = AGENT_SOURCE) -> Path:
    folder = tmp_path / f"adk_test_agent_{next(_names)}"
    folder.mkdir()
    (folder / "__init__.py").write_text("from . import agent\n", encoding="utf-8")
    (folder / "agent.py").write_text(textwrap.dedent(source), encoding="utf-8")
    return folder


def _reply(*parts: dict[str, Any]) -> Scripted:
    body = {
        "candidates": [{"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 50, "candidatesTokenCount": 7, "totalTokenCount": 57},
        "modelVersion": MODEL,
    }
    return Scripted(body=json.dumps(body).encode(), model=MODEL)


def _call(city: str) -> Scripted:
    return _reply({"functionCall": {"name": "get_weather", "args": {"city": city}}})


@pytest.fixture
def adk_env(fake: FakeGemini, monkeypatch: pytest.MonkeyPatch) -> FakeGemini:
    """Point ADK's Gemini model class at the fake server (google-genai reads these variables)."""
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", fake.url)
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key")
    monkeypatch.setenv("GOOGLE_GENAI_USE_VERTEXAI", "false")
    return fake


STATIC_CASE = {
    "eval_id": "paris",
    "session_input": {"app_name": "weather_app", "user_id": "u7", "session_id": "pinned-session",
                      "state": {"user_name": "Ada"}},
    "conversation": [{
        "user_content": {"role": "user", "parts": [{"text": "Weather in Paris?"}]},
        "final_response": {"role": "model", "parts": [{"text": "It is sunny and 21C in Paris."}]},
        "intermediate_data": {"tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}]},
    }],
}


@needs_adk
def test_adk_agent_runs_end_to_end(tmp_path: Path, adk_env: FakeGemini) -> None:
    """Session input honoured, events captured as invocation_events, app details recorded, criteria scored."""
    adk_env.script(_call("Paris"), _reply({"text": "It is sunny and 21C in Paris."}))
    loaded = load_set(tmp_path, {"eval_set_id": "adk", "eval_cases": [STATIC_CASE]},
                      {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}})
    agent = load_adk_agent(str(_package(tmp_path)))
    runs = run_agent(agent, [loaded], RunOptions())
    (run,) = runs.of("adk", "paris")
    assert run.outcome == "ok", run.reason
    assert (run.session_id, run.user_id) == ("pinned-session", "u7")
    (inv,) = run.invocations
    assert user_text(inv) == "Weather in Paris?" and final_text(inv) == "It is sunny and 21C in Paris."
    assert [(c.name, c.args) for c in tool_calls(inv)] == [("get_weather", {"city": "Paris"})]
    assert [r.response for r in tool_responses(inv)] == [{"city": "Paris", "temp_c": 21, "sky": "sunny"}]
    events = inv.intermediate_data
    assert isinstance(events, InvocationEvents)
    assert [e.author for e in events.invocation_events] == ["weather_agent", "weather_agent", "weather_agent"]
    assert events.invocation_events[-1].content is None  # the final text lives in final_response, as in ADK
    assert events.invocation_events[0].usage_metadata is not None and events.invocation_events[0].model_version
    assert inv.duration is not None and inv.invocation_id == "run1-turn1"
    details = inv.app_details.agent_details["weather_agent"] if inv.app_details else None
    assert details is not None and "questions for Ada." in details.instructions
    declared = [f["name"] for tool in details.tool_declarations for f in tool.get("function_declarations", [])]
    assert declared == ["get_weather"]
    assert "questions for Ada." in json.dumps(adk_env.requests[0].body["systemInstruction"])
    (result,) = score_runs([loaded], runs).report.eval_sets[0].cases
    assert result.status == "passed", result.reason
    assert result.metrics["token_usage_v1"].details is not None


@needs_adk
def test_adk_agent_with_a_simulated_user(tmp_path: Path, adk_env: FakeGemini, judge: JudgeStack) -> None:
    """The simulated user (its own model) drives an ADK agent until it sends the stop signal."""
    adk_env.script(
        _call("Paris"), _reply({"text": "Sunny in Paris."}),
        Scripted(texts=["And in London?"], model="sim-model"),
        _call("London"), _reply({"text": "Rainy in London."}),
        Scripted(texts=[STOP_SIGNAL], model="sim-model"),
    )
    scenario = {"eval_id": "chat", "conversation_scenario": {"starting_prompt": "Weather in Paris?",
                                                             "conversation_plan": "Ask about Paris, then London."},
                "session_input": {"app_name": "weather_app", "user_id": "u1", "state": {"user_name": "Bo"}}}
    loaded = load_set(tmp_path, {"eval_set_id": "adk", "eval_cases": [scenario]},
                      {"criteria": {}, "user_simulator_config": {"model": "sim-model"}})
    runs = run_agent(load_adk_agent(str(_package(tmp_path))), [loaded], RunOptions(judge=judge))
    (run,) = runs.of("adk", "chat")
    assert (run.outcome, run.stop) == ("ok", "stop_signal"), run.reason
    assert [user_text(i) for i in run.invocations] == ["Weather in Paris?", "And in London?"]
    assert [final_text(i) for i in run.invocations] == ["Sunny in Paris.", "Rainy in London."]
    sim_prompt = next(r.prompt for r in adk_env.requests if r.model == "sim-model")
    assert "weather_agent: Sunny in Paris." not in sim_prompt and "agent: Sunny in Paris." in sim_prompt


@needs_adk
def test_agent_module_without_root_agent(tmp_path: Path) -> None:
    """A package whose agent module defines no root_agent is a clear configuration error."""
    with pytest.raises(ConfigError, match="defines no 'root_agent'"):
        load_adk_agent(str(_package(tmp_path, "x = 1\n")))


@pytest.mark.skipif(HAVE_ADK, reason="checks the message shown when google-adk is missing")
def test_missing_google_adk_names_the_extra(tmp_path: Path) -> None:
    """Without google-adk, --adk-agent explains how to install the extra."""
    with pytest.raises(ConfigError) as raised:
        load_adk_agent(str(tmp_path))
    assert str(raised.value).endswith(f"install it with: {install_hint('adk')}")
    assert "-m pip install " in str(raised.value) and "[adk]" in str(raised.value)
