"""The Judge protocol: one prompt in, ``num_samples`` answer texts out, with token usage and cache provenance."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from evalbot.results import JudgeUsage


@dataclass(frozen=True)
class Usage:
    """Tokens paid for and HTTP requests made (cached answers cost nothing and count as cached samples)."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cached_samples: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
            self.cached_samples + other.cached_samples,
        )


@dataclass(frozen=True)
class JudgeRequest:
    """One judge prompt to be answered ``num_samples`` times.

    ``config`` holds google-genai ``GenerateContentConfig`` fields in snake_case (ADK's ``judge_model_config``);
    ``purpose`` names the criterion asking, for usage accounting only (it is not part of the cache key).
    """

    model: str
    prompt: str
    config: Mapping[str, Any] = field(default_factory=dict)
    num_samples: int = 1
    purpose: str = ""

    def with_samples(self, num_samples: int) -> JudgeRequest:
        """The same request asking for another number of samples."""
        return JudgeRequest(self.model, self.prompt, self.config, num_samples, self.purpose)


@dataclass(frozen=True)
class JudgeReply:
    """The sample texts (exactly ``num_samples`` of them), the usage paid for, and how many came from cache."""

    texts: tuple[str, ...]
    usage: Usage = Usage()
    cached_samples: int = 0

    @property
    def from_cache(self) -> bool:
        """True when every sample was served from the cache."""
        return bool(self.texts) and self.cached_samples == len(self.texts)


class Judge(Protocol):
    """Anything that answers judge requests (the Gemini backend and the wrappers around it)."""

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer the request with ``request.num_samples`` texts, or raise JudgeError."""
        ...


@dataclass(frozen=True)
class SafetyVerdict:
    """Vertex's verdict on one response: 1 safe, 0 unsafe."""

    score: float | None
    explanation: str
    confidence: float | None = None


class SafetyClient(Protocol):
    """Vertex AI's safety evaluation: the client (judges/vertex_safety.py) or the layers around it."""

    async def judge(self, response: str) -> SafetyVerdict:
        """The service's verdict on ``response``; raises JudgeCallError."""
        ...


class RunJudge(Judge, Protocol):
    """The run's judge as criteria, scoring and the front ends see it (``judges.factory.JudgeStack``)."""

    @property
    def notes(self) -> Sequence[str]:
        """What the judge's setup wants the report to say (e.g. Vertex safety unavailable)."""
        ...

    @property
    def vertex_safety(self) -> SafetyClient | None:
        """Vertex AI's safety metric behind the run's layers, when a Google Cloud project is configured."""
        ...

    def usage_summary(self) -> JudgeUsage:
        """Token usage and estimated cost per criterion, per model and in total (``UsageLedger.summary``), plus the
        cache's hits and the retry count: what becomes ``Report.usage``."""
        ...


class JudgeError(Exception):
    """The judge could not answer; the message says why in words fit for a report."""


class JudgeCallError(JudgeError):
    """A call to the judge service failed.

    ``status`` is the HTTP status (None for timeouts and connection errors); ``transient`` says whether a retry may
    help; ``retry_after`` is the delay in seconds the service asked for, if any.
    """

    def __init__(
        self, message: str, *, status: int | None = None, transient: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.transient = transient
        self.retry_after = retry_after


class JudgeTimeout(JudgeCallError):
    """A call got no answer within the per-call timeout (retried at most ``RetryPolicy.timeout_attempts`` times)."""


class CandidateCountUnsupported(JudgeCallError):
    """The model refused ``candidate_count`` > 1; samples must be requested one by one."""


class ReplayMiss(JudgeError):
    """Replay mode found no cached answer for a request (replay never calls the network)."""


DEFAULT_JUDGE_MODEL = "gemini-2.5-flash"
"""The judge model when a criterion's ``judge_model_options`` name none (ADK's default)."""

TRANSIENT_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
"""HTTP statuses worth retrying."""
