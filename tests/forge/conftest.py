"""Fixtures: a contract-checked fake GitHub and a PyGithubForge pointed at it with fast retries."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from evalbot.errors import RetryPolicy
from evalbot.forge.pygithub import PyGithubForge
from tests.fakes.fake_github import APP_TOKEN, FakeGitHub

FAST = RetryPolicy(attempts=4, base_delay=0.01, rate_limit_wait=0.01, max_wait=5.0)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    """A running fake; the test fails if any exchange broke GitHub's OpenAPI contract."""
    with FakeGitHub() as server:
        yield server
    assert server.violations == []


@pytest.fixture
def make_forge(fake: FakeGitHub) -> Callable[..., PyGithubForge]:
    """Build a forge against ``fake``; keyword arguments override the defaults."""

    def build(**overrides: Any) -> PyGithubForge:
        options: dict[str, Any] = {
            "token": APP_TOKEN,
            "repository": fake.repo,
            "api_url": fake.base_url,
            "retry": FAST,
            "seconds_between_writes": None,
            "sleep": lambda s: None,
        }
        options.update(overrides)
        return PyGithubForge(**options)

    return build
