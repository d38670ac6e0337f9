"""LiteLLM-style judge model names (issue 26, item 5): ``anthropic/...``, ``claude-...``, ``ollama/...``,
``groq/...`` are never sent to Gemini. With OPENAI_BASE_URL (a LiteLLM proxy, Ollama) they go there under the name
as written; without it they are not evaluated with how to serve them. Real clients, loopback fake servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from evalbot.judges.factory import model_family
from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini

pytest.importorskip("openai", reason="the openai client is not installed (pip install -e '.[dev]' installs it)")

from tests.fakes.fake_openai import FakeOpenAI

NAMES = ("anthropic/claude-3-5-sonnet", "claude-sonnet-4-5", "ollama/llama3.1", "groq/llama-3.3-70b-versatile")
VALID = '{"reasoning": "same", "is_the_agent_response_valid": "valid"}'


def _project(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str) -> None:
    write("evals/s.evalset.json", eval_set("s", case("c", inv("q", "reference"))))
    write("evals/test_config.json", {"criteria": {"final_response_match_v2": {
        "threshold": 0.5, "judge_model_options": {"judge_model": model, "num_samples": 1}}}})
    write("runs/pr.json", {"c": [inv("q", "reference")]})
    monkeypatch.chdir(tmp_path)


def _run(env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    code = main(["run", "evals", "--actuals", "runs/pr.json", "--judge-timeout", "2", "--report", "r.json"],
                env=env)
    return code, json.loads(Path("r.json").read_text(encoding="utf-8"))


def _metric(report: dict[str, Any]) -> dict[str, Any]:
    (es,) = report["eval_sets"]
    (result,) = es["cases"]
    metric: dict[str, Any] = result["metrics"]["final_response_match_v2"]
    return metric


@pytest.mark.parametrize("model", NAMES)
def test_without_a_server_the_name_is_not_evaluated_and_gemini_gets_nothing(
    model: str, write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(write, tmp_path, monkeypatch, model)
    with FakeGemini(responder=lambda p, i, r: VALID) as gemini:
        code, report = _run({"GOOGLE_API_KEY": "gk-123456", "GOOGLE_GEMINI_BASE_URL": gemini.url})
        assert gemini.requests == []
    metric = _metric(report)
    assert metric["status"] == "not_evaluated" and metric["score"] is None
    text = json.dumps(metric)
    assert f"judge model {model!r} is not a Gemini or OpenAI model" in text and "OPENAI_BASE_URL" in text
    assert "LiteLLM proxy" in text and "never sends it to Gemini" in text
    assert ("openai/llama3.1" in text) == model.startswith("ollama/")  # Ollama's own server names it without it
    assert code == 3  # a judge that gave no verdict is not a pass (the run's judge-failure policy)


@pytest.mark.parametrize("model", NAMES)
def test_with_an_openai_compatible_server_the_name_goes_there_as_written(
    model: str, write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Gemini credentials too: the Gemini server still receives nothing for these names."""
    _project(write, tmp_path, monkeypatch, model)
    with FakeGemini(responder=lambda p, i, r: VALID) as gemini, FakeOpenAI() as proxy:
        proxy.responder = lambda p, i, r: VALID
        code, report = _run({"GOOGLE_API_KEY": "gk-123456", "GOOGLE_GEMINI_BASE_URL": gemini.url,
                             "OPENAI_BASE_URL": proxy.url, "OPENAI_API_KEY": "sk-proxy-123456"})
        assert gemini.requests == [] and [r.model for r in proxy.requests] == [model]
    metric = _metric(report)
    assert (code, metric["status"], metric["score"]) == (0, "passed", 1.0)


def test_gemini_names_still_go_to_gemini_and_openai_names_to_openai() -> None:
    """The families: Gemini's own names and paths (and unknown bare names, as before) stay Gemini's."""
    assert [model_family(m) for m in ("gemini-2.5-flash", "models/gemini-2.5-pro", "judge-model",
                                      "projects/p/locations/l/publishers/google/models/gemini-2.5-flash")] == [
        "gemini"] * 4
    assert [model_family(m) for m in ("gpt-4.1-mini", "o3-mini")] == ["openai"] * 2
    assert [model_family(m) for m in (*NAMES, "gemini/gemini-2.5-flash", "vertex_ai/claude-3-5", "Claude-3")] == [
        "other"] * 7
