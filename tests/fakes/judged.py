"""Test helpers for judged criteria: a judge stack on a fake Gemini or OpenAI-compatible server, cases and results."""

from __future__ import annotations

import asyncio
import importlib.util
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

import pytest

from evalbot.criteria.base import BuildContext, CaseInput, Criterion
from evalbot.errors import RetryPolicy
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec, parse_criterion
from evalbot.judges.base import DEFAULT_SAMPLING, Sampling
from evalbot.judges.factory import JudgeStack, build_stack
from evalbot.judges.gemini import GeminiJudge
from evalbot.results import MetricResult
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_openai import FakeOpenAI

FAST_RETRY = RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.005, max_retry_after=0.005)
HAVE_OPENAI = importlib.util.find_spec("openai") is not None
BACKENDS = [
    pytest.param("gemini", id="gemini"),
    pytest.param("openai", id="openai", marks=pytest.mark.skipif(
        not HAVE_OPENAI, reason="the openai client is not installed (pip install -e '.[dev]' installs it)")),
]
"""The judge backends every judged test runs on: ``@pytest.mark.parametrize("backend", BACKENDS)``."""


def fake_server(backend: str) -> FakeGemini:
    """A (not yet started) fake server speaking ``backend``'s wire protocol."""
    return FakeOpenAI() if backend == "openai" else FakeGemini()


def judge_backend(backend: str, fake: FakeGemini, *, timeout: float = 5) -> Any:
    """The real client of ``backend`` pointed at ``fake`` (for models named as test configs name them: the OpenAI
    backend serves every model name, as with OPENAI_BASE_URL and no Gemini key)."""
    if backend == "openai":
        from evalbot.judges.openai_chat import OpenAIJudge

        return OpenAIJudge(api_key="test-openai-key", base_url=fake.url, timeout=timeout)
    return GeminiJudge(api_key="test", base_url=fake.url, timeout=timeout)


@contextmanager
def judged(answers: Any = None, sampling: Sampling = DEFAULT_SAMPLING, cache_dir: Path | None = None,
           backend: str = "gemini") -> Iterator[tuple[FakeGemini, JudgeStack]]:
    """A fake server of ``backend`` (responder = ``answers`` if given) and a judge stack pointed at it."""
    with fake_server(backend) as fake:
        if answers is not None:
            fake.responder = answers
        yield fake, build_stack(judge_backend(backend, fake), retry=FAST_RETRY, sampling=sampling, cache_dir=cache_dir)


class Judged(Protocol):
    """The ``judged`` fixture: ``judged(answers)`` on the backend the test is parametrized with."""

    def __call__(self, answers: Any = None, sampling: Sampling = DEFAULT_SAMPLING,
                 cache_dir: Path | None = None) -> AbstractContextManager[tuple[FakeGemini, JudgeStack]]: ...


def spec(name: str, criterion: Any) -> CriterionSpec:
    """A criterion spec as the config loader builds it."""
    return parse_criterion(name, criterion, "test_config.json")


def build(factory: Callable[[CriterionSpec, BuildContext], Criterion], name: str, criterion: Any,
          judge: Any, reason: str | None = None) -> Criterion:
    """Build a criterion with the given judge."""
    return factory(spec(name, criterion), BuildContext(judge=judge, judge_unavailable_reason=reason))


def case_input(eval_case: dict[str, Any], actual: list[dict[str, Any]]) -> CaseInput:
    """A CaseInput from JSON-shaped data."""
    return CaseInput("set", EvalCase.model_validate(eval_case), [Invocation.model_validate(i) for i in actual])


def run(criterion: Criterion, case: CaseInput) -> MetricResult:
    """Evaluate (awaiting judged criteria)."""
    result = criterion.evaluate(case)
    if isinstance(result, MetricResult):
        return result

    async def wait() -> MetricResult:
        return await result

    return asyncio.run(wait())


_FENCE = re.compile(r"^<<<DATA-[0-9a-f]{16}\n|\nDATA-[0-9a-f]{16}>>>$", re.MULTILINE)


def unfence(prompt: str) -> str:
    """A judge prompt without the data fences around the untrusted texts (see judges.templates.render)."""
    return _FENCE.sub("", prompt)


def text(role: str, value: str) -> dict[str, Any]:
    """A one-part Content."""
    return {"role": role, "parts": [{"text": value}]}


def inv(iid: str, user: str, final: str | None = None, **extra: Any) -> dict[str, Any]:
    """An invocation in JSON form."""
    out: dict[str, Any] = {"invocation_id": iid, "user_content": text("user", user), **extra}
    if final is not None:
        out["final_response"] = text("model", final)
    return out
