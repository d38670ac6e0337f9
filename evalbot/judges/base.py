"""The Judge protocol: one prompt in, ``num_samples`` answer texts out, with token usage and cache provenance."""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from evalbot.redact import scrub
from evalbot.results import JudgeUsage

if TYPE_CHECKING:
    from evalbot.formats.prices import JudgeBudget, PriceTable


@dataclass(frozen=True)
class Usage:
    """Tokens paid for and HTTP requests made (cached answers cost nothing and count as cached samples)."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cached_samples: int = 0
    saved_samples: int = 0
    """Samples sequential sampling did not ask (neither the judge nor the cache): the first ones decided the vote."""
    extra_requests: int = 0
    """Second requests sequential sampling made because the first samples did not decide the vote."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
            self.cached_samples + other.cached_samples,
            self.saved_samples + other.saved_samples,
            self.extra_requests + other.extra_requests,
        )


Sampling = Literal["sequential", "full"]
"""How majority-vote criteria ask for their samples: the fewest that could decide first (``sequential``, the
default), or all ``num_samples`` in one request (``full``, as ADK does)."""
SAMPLING_MODES: tuple[Sampling, ...] = ("sequential", "full")
DEFAULT_SAMPLING: Sampling = "sequential"


class StopRule(Protocol):
    """When the samples asked so far already decide a request's verdict (a majority vote, for instance)."""

    def first_round(self, num_samples: int) -> int:
        """How many samples to ask first: the fewest whose answers could decide the verdict."""
        ...

    def decided(self, texts: Sequence[str], num_samples: int) -> bool:
        """True when no answers to the samples not asked yet could change the verdict of ``texts``."""
        ...


FIRST_ROUND, SECOND_ROUND, OTHER_REQUEST = 0, 1, 2
"""JudgeRequest.priority values: a sequential vote's first round, its second round, any other request."""


@dataclass(frozen=True)
class JudgeRequest:
    """One judge prompt to be answered ``num_samples`` times.

    ``config`` holds google-genai ``GenerateContentConfig`` fields in snake_case (ADK's ``judge_model_config``);
    ``purpose`` names the criterion asking, for usage accounting only (it is not part of the cache key).
    ``first_sample`` is the index of the first sample asked (the samples are ``first_sample ..
    first_sample + num_samples - 1``): the cache keeps answers by index, backends ignore it.  ``stop`` lets the
    run's sequential-sampling layer ask fewer samples when the first ones decide (see judges.sequential); layers
    below it never see one.
    """

    model: str
    prompt: str
    config: Mapping[str, Any] = field(default_factory=dict)
    num_samples: int = 1
    purpose: str = ""
    first_sample: int = 0
    stop: StopRule | None = field(default=None, compare=False)
    priority: int = field(default=OTHER_REQUEST, compare=False)
    """Which waiting requests the run's concurrency limit lets through first, lowest first: a sequential vote's first
    round (0: another request may have to follow it, so it should not wait at the end of the queue), its second round
    (1: the vote waits for nothing else), then all others (2). Not part of the cache key."""

    def with_samples(self, num_samples: int) -> JudgeRequest:
        """The same request asking for another number of samples (from the same first index)."""
        return replace(self, num_samples=num_samples)

    def samples_from(self, first_sample: int, num_samples: int) -> JudgeRequest:
        """The same prompt asking for samples ``first_sample .. first_sample + num_samples - 1``, without a stop
        rule."""
        return replace(self, first_sample=first_sample, num_samples=num_samples, stop=None)


@dataclass(frozen=True)
class JudgeReply:
    """The sample texts (exactly ``num_samples`` of them, or fewer when the request's ``stop`` rule was met early),
    the usage paid for, and how many came from cache."""

    texts: tuple[str, ...]
    usage: Usage = Usage()
    cached_samples: int = 0
    served: str | None = None
    """The model the service says answered (Gemini's ``modelVersion``, OpenAI's ``model``); None when no answer came
    from the service (all cached) or it named none. Compared with the configured name: a provider-side swap shows."""

    def serving(self, other: JudgeReply) -> str | None:
        """The served model of this reply joined with ``other``'s (the first named; a second, different one too)."""
        names = [n for n in (self.served, other.served) if n]
        return " + ".join(dict.fromkeys(names)) or None

    @property
    def from_cache(self) -> bool:
        """True when every sample was served from the cache."""
        return bool(self.texts) and self.cached_samples == len(self.texts)


class Judge(Protocol):
    """Anything that answers judge requests (the Gemini backend and the wrappers around it)."""

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer the request with ``request.num_samples`` texts (fewer only where its ``stop`` rule was met), or
        raise JudgeError."""
        ...


@dataclass(frozen=True)
class ServiceRubric:
    """The Vertex AI evaluation service's verdict on one rubric it generated (adaptive-rubric metrics)."""

    rubric: str
    verdict: bool
    reasoning: str = ""


@dataclass(frozen=True)
class ServiceVerdict:
    """The Vertex AI evaluation service's answer on one instance: a score on the metric's own scale (None when the
    service gave none; ``error`` then says why when it did), its explanation and any rubric verdicts."""

    score: float | None
    explanation: str = ""
    rubrics: tuple[ServiceRubric, ...] = ()
    error: str | None = None


SERVICE_MISSING = (
    "set GOOGLE_API_KEY (Vertex AI express mode), or GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION with "
    "application default credentials, as ADK does (GEMINI_API_KEY and OpenAI credentials do not reach it)"
)
"""Why the Vertex AI evaluation service is not used, when none of its credentials are set."""


class EvaluationService(Protocol):
    """The Vertex AI evaluation service (``evaluateInstances``): the client (judges/vertex_eval.py) or the layers
    around it (judges/service_layers.py)."""

    async def evaluate(self, body: Mapping[str, Any], purpose: str) -> ServiceVerdict:
        """The service's verdict on the request ``body`` (its JSON fields); ``purpose`` names the criterion asking
        (usage accounting). Raises JudgeCallError."""
        ...


class RunJudge(Judge, Protocol):
    """The run's judge as criteria, scoring and the front ends see it (``judges.factory.JudgeStack``)."""

    @property
    def notes(self) -> Sequence[str]:
        """What the judge's setup wants the report to say (e.g. Vertex safety unavailable)."""
        ...

    @property
    def vertex_service(self) -> EvaluationService | None:
        """The Vertex AI evaluation service behind the run's layers, when ADK would reach it (GOOGLE_API_KEY, or
        GOOGLE_CLOUD_PROJECT with GOOGLE_CLOUD_LOCATION)."""
        ...

    @property
    def vertex_unavailable(self) -> str | None:
        """Why ``vertex_service`` is None (what to set), else None."""
        ...

    def cap_requests(self, limit: int, why: str) -> None:
        """Let at most ``limit`` requests reach the judge service in this run (``why``: how it was derived)."""
        ...

    def set_budget(self, budget: JudgeBudget | None, what: str = "") -> None:
        """At most ``budget``'s requests and dollars sent in this run (the gate policy's judge_budget; ``what``: how
        refusals name a part's share of it)."""
        ...

    def set_prices(self, prices: PriceTable) -> None:
        """Price the run's usage with ``prices`` (the shipped table and the gate policy's prices)."""
        ...

    def usage_summary(self) -> JudgeUsage:
        """Token usage and estimated cost per criterion, per model and in total (``UsageLedger.summary``), plus the
        cache's hits and the retry count: what becomes ``Report.usage``."""
        ...

    def estimated_cost(self, usage: Usage, model: str) -> float | None:
        """USD cost of ``usage`` on ``model`` from list prices, or None when unknown (no list price, or a server
        reached through OPENAI_BASE_URL whose prices evalbot cannot know)."""
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


def scrubbed(exc: JudgeCallError, secrets: tuple[str, ...]) -> JudgeCallError:
    """``exc`` with the secrets taken out of its message (a server or proxy may echo the key in an error body);
    ``exc`` itself when its message held none."""
    message = scrub(str(exc), secrets)
    if message == str(exc):
        return exc
    return type(exc)(message, status=exc.status, transient=exc.transient, retry_after=exc.retry_after)


async def without_secrets(call: Awaitable[JudgeReply], secrets: tuple[str, ...]) -> JudgeReply:
    """Await a backend's request; a failure whose message echoes a secret is raised again with it taken out."""
    try:
        return await call
    except JudgeCallError as exc:
        clean = scrubbed(exc, secrets)
        if clean is exc:
            raise
        raise clean from None


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
