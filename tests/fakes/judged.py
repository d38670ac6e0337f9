"""Test helpers for judged criteria: a judge stack on a fake Gemini server, cases and results."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evalbot.criteria.base import BuildContext, CaseInput, Criterion
from evalbot.errors import RetryPolicy
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec, parse_criterion
from evalbot.judges.base import DEFAULT_SAMPLING, Sampling
from evalbot.judges.factory import JudgeStack, build_stack
from evalbot.judges.gemini import GeminiJudge
from evalbot.results import MetricResult
from tests.fakes.fake_gemini import FakeGemini

FAST_RETRY = RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.005, max_retry_after=0.005)


@contextmanager
def judged(answers: Any = None, sampling: Sampling = DEFAULT_SAMPLING,
           cache_dir: Path | None = None) -> Iterator[tuple[FakeGemini, JudgeStack]]:
    """A fake Gemini server (responder = ``answers`` if given) and a judge stack pointed at it."""
    with FakeGemini() as fake:
        if answers is not None:
            fake.responder = answers
        backend = GeminiJudge(api_key="test", base_url=fake.url, timeout=5)
        yield fake, build_stack(backend, retry=FAST_RETRY, sampling=sampling, cache_dir=cache_dir)


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
