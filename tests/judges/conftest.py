"""Fixtures for judge tests: a running fake Gemini server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_gemini import FakeGemini


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    """A fake Gemini server on loopback, stopped after the test."""
    with FakeGemini() as server:
        yield server
