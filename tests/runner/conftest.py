"""Fixtures for runner tests: a fake Gemini server, a judge stack on it, and eval sets written to disk."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalbot.errors import RetryPolicy
from evalbot.judges.factory import JudgeStack, build_stack
from evalbot.judges.gemini import GeminiJudge
from tests.fakes import agents
from tests.fakes.fake_gemini import FakeGemini


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


