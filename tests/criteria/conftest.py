"""The ``judged`` fixture: judged-criteria tests run once per judge backend (Gemini and OpenAI-compatible), each
through its real client against its loopback fake server."""

from __future__ import annotations

import functools

import pytest

from tests.fakes.judged import BACKENDS, Judged, judged


@pytest.fixture(params=BACKENDS)
def judged_on(request: pytest.FixtureRequest) -> Judged:
    """``judged(answers)`` on this test's backend."""
    return functools.partial(judged, backend=request.param)
