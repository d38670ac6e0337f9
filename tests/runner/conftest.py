"""Fixtures for runner tests: a fake Gemini server, a judge stack on it, and eval sets written to disk."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalbot.formats.loaded import LoadedEvalSet
from evalbot.judges.factory import JudgeStack, build_stack
from evalbot.judges.gemini import GeminiJudge
from evalbot.judges.retry import RetryPolicy
from evalbot.load import load_eval_set
from tests.fakes.fake_gemini import FakeGemini
from tests.runner import agents


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    """A fake Gemini server on loopback, stopped after the test."""
    with FakeGemini() as server:
        yield server


@pytest.fixture
def judge(fake: FakeGemini) -> JudgeStack:
    """The CLI's judge stack (real google-genai client) pointed at the fake server, without retry waits."""
    backend = GeminiJudge(api_key="test-key", base_url=fake.url, timeout=5.0)
    return build_stack(backend, retry=RetryPolicy(attempts=1))


@pytest.fixture(autouse=True)
def _release_hung_agents() -> Iterator[None]:
    agents.RELEASE.clear()
    yield
    agents.RELEASE.set()


def inv(user: str = "hi", response: str | None = "ok", calls: list[tuple[str, dict[str, Any]]] | None = None
        ) -> dict[str, Any]:
    """An expected Invocation as JSON (``calls`` go into ``tool_uses``)."""
    out: dict[str, Any] = {"user_content": {"role": "user", "parts": [{"text": user}]}}
    if response is not None:
        out["final_response"] = {"role": "model", "parts": [{"text": response}]}
    if calls is not None:
        out["intermediate_data"] = {"tool_uses": [{"name": n, "args": a} for n, a in calls]}
    return out


def case(eval_id: str, *invocations: dict[str, Any]) -> dict[str, Any]:
    """An EvalCase with a fixed conversation as JSON."""
    return {"eval_id": eval_id, "conversation": list(invocations)}


def eval_set(eval_set_id: str, *cases: dict[str, Any]) -> dict[str, Any]:
    """An EvalSet as JSON."""
    return {"eval_set_id": eval_set_id, "eval_cases": list(cases)}


def load_set(tmp_path: Path, data: dict[str, Any], config: dict[str, Any] | None = None,
             name: str = "set.evalset.json") -> LoadedEvalSet:
    """Write an eval set (and its test_config.json) and load it as evalbot does."""
    folder = tmp_path / name.split(".")[0]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    if config is not None:
        (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    return load_eval_set(path)
