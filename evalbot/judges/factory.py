"""Build the run's judge from credentials in an environment mapping (the only judge code that reads one)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evalbot.errors import ConfigError, RetryPolicy, install_hint
from evalbot.formats.prices import JudgeBudget, PriceTable
from evalbot.judges.base import (
    DEFAULT_SAMPLING,
    SERVICE_MISSING,
    EvaluationService,
    Judge,
    JudgeCallError,
    JudgeReply,
    JudgeRequest,
    Sampling,
    Usage,
)
from evalbot.judges.budget import BudgetCap
from evalbot.judges.cache import KEY_ENV, CacheTrust, CachingJudge, DiskCache
from evalbot.judges.cap import RequestCap
from evalbot.judges.deadline import DEFAULT_DEADLINE, DeadlineJudge
from evalbot.judges.limiter import DEFAULT_CONCURRENCY, LimitedJudge
from evalbot.judges.retry import RetryingJudge
from evalbot.judges.sampling import SamplingJudge
from evalbot.judges.sequential import SequentialJudge
from evalbot.judges.service_layers import LayeredService, ServiceBackend
from evalbot.judges.usage import MeteredJudge, UsageLedger
from evalbot.results import CacheUse, JudgeUsage

if TYPE_CHECKING:
    from evalbot.judges.openai_chat import OpenAIJudge

DEFAULT_TIMEOUT = 60.0
"""Seconds per judge call (as judges.gemini.DEFAULT_TIMEOUT, without importing google-genai)."""

CACHE_ENV = "EVALBOT_JUDGE_CACHE"
MISSING_CREDENTIALS = (
    "no judge credentials: set GOOGLE_API_KEY or GEMINI_API_KEY (Gemini API), or GOOGLE_GENAI_USE_VERTEXAI=true "
    "with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (Vertex AI), or OPENAI_API_KEY / OPENAI_BASE_URL "
    "(OpenAI-compatible), or AZURE_OPENAI_API_KEY with AZURE_OPENAI_ENDPOINT (Azure OpenAI); judged criteria "
    "are not evaluated"
)
"""The one message shown (once per judged criterion) when no judge can be built."""


class DeferredBackend:
    """A backend built on the first request that really reaches it: a replayed or fully cached run never imports
    google-genai (about 0.7 s of a run's start) nor builds its client.

    ``build`` runs once, in a worker thread (the import holds the GIL but not the event loop's other cache hits);
    concurrent first requests wait for the same backend. A failure to build is a configuration error of the run.
    """

    def __init__(self, build: Callable[[], Judge]) -> None:
        self._build = build
        self._backend: Judge | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """Whether the backend exists (some request reached it)."""
        return self._backend is not None

    def _get(self) -> Judge:
        with self._lock:
            if self._backend is None:
                try:
                    self._backend = self._build()
                except ConfigError:
                    raise
                except Exception as exc:  # google-genai validates options eagerly; an import can fail too
                    raise ConfigError(f"cannot set up the judge client: {type(exc).__name__}: {exc}") from exc
            return self._backend

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Build the backend if needed, then answer through it."""
        backend = self._backend
        if backend is None:
            backend = await asyncio.to_thread(self._get)
        return await backend.generate(request)


@dataclass
class JudgeStack:
    """The run's judge: usage metering, sequential sampling, cache, ``candidate_count`` sampling, retries, a
    concurrency limit.

    Order of the layers, outermost first: Metered -> Sequential -> Caching -> Deadline -> Sampling -> Retrying ->
    RequestCap -> BudgetCap (the policy's judge_budget) -> Limited -> backend, so each sequential round is served by index from the cache, cached answers skip everything
    else, backoff waits do not hold a concurrency slot, and each HTTP attempt does.
    """

    top: Judge
    ledger: UsageLedger
    limiter: LimitedJudge | None = None
    retrying: RetryingJudge | None = None
    cache: DiskCache | None = None
    backend: Judge | None = None
    vertex_service: EvaluationService | None = None
    """The Vertex AI evaluation service behind these layers (LayeredService) when ADK would reach it; safety_v1,
    response_evaluation_score and the multi_turn_* criteria use it (see add_evaluation_service)."""
    vertex_unavailable: str | None = None
    """Why vertex_service is None (what to set)."""
    service_retrying: RetryingJudge | None = None
    notes: list[str] = field(default_factory=list)
    sampling: Sampling = DEFAULT_SAMPLING
    """How majority-vote criteria ask for their samples (see judges.sequential)."""
    cap: RequestCap | None = None
    """The run-wide cap on requests reaching the judge service (set from the run's cases: cap_requests)."""
    budget: BudgetCap | None = None
    """The gate policy's judge_budget, where requests leave for the judge service (set_budget)."""

    def set_budget(self, budget: JudgeBudget | None, what: str = "") -> None:
        """At most ``budget``'s requests and dollars sent to the judge and the evaluation service in this run
        (``what``: how the refusals name it when it is a part's share of the run's)."""
        if self.budget is not None:
            self.budget.set(budget, what)

    def set_prices(self, prices: PriceTable) -> None:
        """Price the run's judge usage (and its dollar budget) with ``prices`` (the policy's table)."""
        self.ledger.prices = prices

    def cap_requests(self, limit: int, why: str) -> None:
        """Let at most ``limit`` requests reach the judge service in this run (``why``: how it was derived)."""
        if self.cap is not None:
            self.cap.set(limit, why)

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer through every layer."""
        return await self.top.generate(request)

    def estimated_cost(self, usage: Usage, model: str) -> float | None:
        """Cost from list prices, None for unknown models and for those of the ledger's unpriced servers."""
        return self.ledger.cost(usage, model)

    def usage_summary(self) -> JudgeUsage:
        """Token usage and estimated cost per criterion, per model and in total (UsageLedger.summary), with the
        cache's hits and writes when a cache is used, the retry count when a retrying layer ran, and how the
        adaptive concurrency limit was lowered when it was (judges.limiter)."""
        summary = self.ledger.summary()
        if self.cache is not None:
            summary.cache = CacheUse(directory=str(self.cache.directory), hits=self.cache.hits,
                                     writes=self.cache.writes, ignored=self.cache.ignored,
                                     signed=self.cache.trust.key is not None)
        if self.retrying is not None or self.service_retrying is not None:
            summary.retries = sum(r.retries for r in (self.retrying, self.service_retrying) if r is not None)
        if self.limiter is not None:
            summary.concurrency = self.limiter.adaptive.use()
        return summary


def add_evaluation_service(stack: JudgeStack, client: EvaluationService | None, *,
                           backend: Judge | None = None) -> None:
    """Send the Vertex AI evaluation-service criteria through the stack's layers: its usage ledger, its cache
    (replayed when neither ``client`` nor ``backend``, a ServiceBackend built later, is given), its retry policy and
    the run-wide concurrency limit it shares."""
    inner: Judge | None = None
    if backend is None and client is not None:
        backend = ServiceBackend(client)
    if backend is not None:
        limited = LimitedJudge(backend, sharing=stack.limiter) if stack.limiter is not None else LimitedJudge(backend)
        policy = stack.retrying.policy if stack.retrying is not None else RetryPolicy()
        ledger = stack.ledger
        budgeted = BudgetCap(limited, lambda: ledger.prices, lambda model: ledger.unpriced(model),
                             sharing=stack.budget)
        stack.budget = stack.budget or budgeted
        inner = stack.service_retrying = RetryingJudge(budgeted, policy)
    if stack.cache is not None:
        inner = CachingJudge(inner, stack.cache, replay=backend is None)
    if inner is None:
        raise ConfigError("the Vertex AI evaluation service needs a client, or a judge cache to replay from")
    stack.vertex_service = LayeredService(MeteredJudge(inner, stack.ledger))
    stack.vertex_unavailable = None


def service_credentials(env: Mapping[str, str]) -> tuple[dict[str, str] | None, str | None]:
    """How ADK 2.13 reaches the Vertex AI evaluation service from ``env``: ``{"api_key"}`` (GOOGLE_API_KEY set:
    express mode, first as in ADK), ``{"project", "location"}``, or None and why not."""
    api_key = env.get("GOOGLE_API_KEY") or None
    project = env.get("GOOGLE_CLOUD_PROJECT") or None
    location = env.get("GOOGLE_CLOUD_LOCATION") or None
    if api_key:
        return {"api_key": api_key}, None
    if project and location:
        return {"project": project, "location": location}, None
    if project or location:
        missing = "GOOGLE_CLOUD_LOCATION" if project else "GOOGLE_CLOUD_PROJECT"
        return None, f"{missing} is not set (the Vertex AI evaluation service needs a project and a location)"
    return None, SERVICE_MISSING


def _add_vertex_service(stack: JudgeStack, env: Mapping[str, str], timeout: float) -> None:
    """Reach the Vertex AI evaluation service as ADK would, or record why not (``stack.vertex_unavailable``)."""
    credentials, why = service_credentials(env)
    if credentials is None:
        stack.vertex_unavailable = why
        return
    base_url = env.get("GOOGLE_VERTEX_BASE_URL") or None

    def build() -> Judge:
        from evalbot.judges.vertex_eval import VertexEvaluation  # lazily: google-genai is slow to import

        return ServiceBackend(VertexEvaluation(**credentials, base_url=base_url, timeout=timeout))

    if "api_key" in credentials:  # built on the first request: a run without Vertex criteria never imports it
        add_evaluation_service(stack, None, backend=DeferredBackend(build))
        return
    try:  # project mode looks up application default credentials: a failure is said at once
        backend = build()
    except Exception as exc:  # no application default credentials, or options google-genai refuses
        stack.vertex_unavailable = f"its client could not be set up ({type(exc).__name__}: {exc})"
        stack.notes.append(f"Vertex AI evaluation service unavailable: {stack.vertex_unavailable}")
    else:
        add_evaluation_service(stack, None, backend=backend)


def build_stack(
    backend: Judge | None,
    *,
    cache_dir: Path | str | None = None,
    replay: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
    retry: RetryPolicy | None = None,
    deadline: float | None = None,
    sampling: Sampling = DEFAULT_SAMPLING,
    cache_trust: CacheTrust | None = None,
) -> JudgeStack:
    """Wrap ``backend`` (None only in replay mode) in the standard layers; ``deadline`` bounds the seconds spent on
    network calls for the whole run (cached answers are served after it); ``sampling`` ``full`` asks majority-vote
    criteria for all their samples at once; ``cache_trust``: which cached answers are replayed (default: unsigned
    ones too, as a caller that names its own directory means)."""
    if replay and cache_dir is None:
        raise ConfigError(f"--judge-replay needs a judge cache: pass --judge-cache DIR or set {CACHE_ENV}")
    limiter = retrying = cap = budget = None
    inner: Judge | None = None
    ledger = UsageLedger()
    if backend is not None:
        limiter = LimitedJudge(backend, concurrency)
        budget = BudgetCap(limiter, lambda: ledger.prices, lambda model: ledger.unpriced(model))
        cap = RequestCap(budget)
        retrying = RetryingJudge(cap, retry or RetryPolicy())
        inner = SamplingJudge(retrying)
        if deadline is not None:
            inner = DeadlineJudge(inner, deadline)
    cache = DiskCache(cache_dir, cache_trust) if cache_dir is not None else None
    if cache is not None:
        inner = CachingJudge(inner, cache, replay=replay)
    if inner is None:
        raise ConfigError("no judge backend and no cache to replay from")
    top = MeteredJudge(SequentialJudge(inner, sampling), ledger)
    return JudgeStack(top, ledger, limiter, retrying, cache, backend, sampling=sampling, cap=cap, budget=budget)


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


OPENAI_PREFIX = "openai/"
AZURE_PREFIX = "azure/"
DEFAULT_AZURE_API_VERSION = "2024-10-21"
"""Azure OpenAI's API version when OPENAI_API_VERSION is not set (a generally available one with JSON mode)."""
OPENAI_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
              "OPENAI_API_VERSION")
SECRET_ENV = ("GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY", "AZURE_OPENAI_API_KEY", KEY_ENV)
"""The judge API keys (and the judge cache's signing key) the front ends register with evalbot.redact."""


_GEMINI_PATHS = ("models/", "tunedModels/", "projects/", "publishers/google/")
"""Resource-path forms of Gemini model names (Gemini API and Vertex AI)."""
_OPENAI_FAMILIES = ("gpt-", "chatgpt-", "o1", "o3", "o4")
"""Bare names OpenAI's own service serves (OPENAI_API_KEY alone is enough for them)."""
_OTHER_FAMILIES = ("claude-", "llama", "mistral", "mixtral", "codestral", "qwen", "deepseek", "phi-", "command-",
                   "grok-")
"""Bare names of other providers' models: never Gemini's; served only by an OPENAI_BASE_URL server."""


def model_family(model: str) -> str:
    """Who serves a judge model name: ``gemini`` (Gemini API / Vertex AI), ``openai`` (a bare OpenAI name: OpenAI's
    own service or OPENAI_BASE_URL), or ``other`` (a LiteLLM-style ``provider/model`` name such as
    ``anthropic/...``, ``ollama/...``, ``groq/...``, ``gemini/...``, or a bare ``claude-...``: only an
    OpenAI-compatible server set as OPENAI_BASE_URL, such as a LiteLLM proxy or Ollama, serves it). ``openai/`` and
    ``azure/`` names are routed before this is asked. Unrecognised bare names are Gemini's."""
    lowered = model.lower()
    if model.startswith(_GEMINI_PATHS):
        return "gemini"
    if "/" in model:
        return "other"
    if lowered.startswith(_OPENAI_FAMILIES):
        return "openai"
    if lowered.startswith(_OTHER_FAMILIES):
        return "other"
    return "gemini"


def unserved_message(model: str) -> str:
    """Why a non-Gemini, non-OpenAI model name cannot be judged here, and how to serve it."""
    ollama = model.split("/", 1)[1] if model.startswith(("ollama/", "ollama_chat/")) else None
    local = (f"; or run Ollama itself (OPENAI_BASE_URL=http://localhost:11434/v1) and name the judge "
             f"'openai/{ollama}'") if ollama else ""
    return (f"judge model {model!r} is not a Gemini or OpenAI model and no server for it is configured; evalbot "
            "never sends it to Gemini. Serve it through an OpenAI-compatible endpoint, for example a LiteLLM proxy "
            f"whose model_list names {model!r}, and set OPENAI_BASE_URL to it (OPENAI_API_KEY too if it needs one): "
            f"evalbot sends the name as written{local}")


class RoutingJudge:
    """Sends each request to the backend its model name picks (see model_family).

    ``azure/<deployment>`` goes to Azure OpenAI, ``openai/<model>`` and a bare OpenAI name (``gpt-...``) to the
    OpenAI-compatible server (OpenAI itself or OPENAI_BASE_URL). Other providers' names
    (``anthropic/...``, ``ollama/...``, ``groq/...``, ``claude-...``) go only to an OPENAI_BASE_URL server, under
    the name as written (a LiteLLM proxy routes them), and never to Gemini. Any other name goes to Gemini, or, when
    no Gemini credentials are set but OPENAI_BASE_URL is, to that server under its own name (a local server or a
    LiteLLM proxy names its models as it likes). A name whose backend is not configured fails that request
    (not_evaluated, with what to set).
    """

    def __init__(self, *, gemini: Judge | None = None, openai: Judge | None = None, azure: Judge | None = None,
                 openai_takes_all: bool = False) -> None:
        self.gemini = gemini
        self.openai = openai
        self.azure = azure
        self.openai_takes_all = openai_takes_all

    @property
    def built(self) -> bool:
        """Whether some backend was built (a request reached it; see DeferredBackend)."""
        backends = [b for b in (self.gemini, self.openai, self.azure) if b is not None]
        return any(b.built if isinstance(b, DeferredBackend) else True for b in backends)

    def backend_for(self, model: str) -> Judge:
        """The backend for ``model``; raises JudgeCallError (permanent) when it is not configured."""
        if model.startswith(AZURE_PREFIX):
            if self.azure is None:
                raise JudgeCallError(f"judge model {model!r} is an Azure OpenAI deployment, but AZURE_OPENAI_ENDPOINT "
                                     "and AZURE_OPENAI_API_KEY are not set")
            return self.azure
        family = model_family(model)
        if model.startswith(OPENAI_PREFIX) or family == "openai":
            if self.openai is None:
                raise JudgeCallError(f"judge model {model!r} is an OpenAI model, but neither OPENAI_API_KEY nor "
                                     "OPENAI_BASE_URL is set")
            return self.openai
        if family == "other":
            if self.openai is not None and self.openai_takes_all:
                return self.openai
            raise JudgeCallError(unserved_message(model))
        if self.gemini is not None:
            return self.gemini
        if self.openai is not None and self.openai_takes_all:
            return self.openai
        raise JudgeCallError(f"judge model {model!r} is served by Gemini, but no Gemini credentials are set "
                             "(GOOGLE_API_KEY or GEMINI_API_KEY); name an openai/<model> or azure/<deployment> "
                             "judge_model, or set OPENAI_BASE_URL to send every judge model to that server")

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer through the backend the model name picks."""
        return await self.backend_for(request.model).generate(request)


OPENAI_MISSING = "the OpenAI judge ({variable} is set) needs the openai package: {install}"
"""The message when the ``openai`` extra is missing; ``install`` is :func:`evalbot.errors.install_hint`'s command."""


def _openai_judge_class(variable: str) -> type[OpenAIJudge]:
    """The OpenAI backend's class, imported lazily (only runs that reach it import openai, an optional extra that
    is slow to import); a one-line configuration error when the extra is not installed."""
    try:
        from evalbot.judges.openai_chat import OpenAIJudge  # lazily: openai is an optional extra, slow to import
    except ModuleNotFoundError as exc:
        if exc.name != "openai" and not str(exc).startswith("import of openai"):
            raise
        raise ConfigError(OPENAI_MISSING.format(variable=variable, install=install_hint("openai"))) from None
    return OpenAIJudge


def _openai_backends(env: Mapping[str, str], timeout: float) -> tuple[Judge | None, Judge | None]:
    """The OpenAI-compatible backend (OPENAI_API_KEY and/or OPENAI_BASE_URL) and the Azure OpenAI one
    (AZURE_OPENAI_ENDPOINT with AZURE_OPENAI_API_KEY, OPENAI_API_VERSION), each built on its first request."""
    key = env.get("OPENAI_API_KEY") or None
    base_url = env.get("OPENAI_BASE_URL") or None
    openai_backend: Judge | None = None
    if key or base_url:
        def build_openai() -> Judge:
            OpenAIJudge = _openai_judge_class("OPENAI_API_KEY" if key else "OPENAI_BASE_URL")
            return OpenAIJudge(api_key=key, base_url=base_url, prefix=OPENAI_PREFIX, timeout=timeout)

        openai_backend = DeferredBackend(build_openai)
    endpoint = env.get("AZURE_OPENAI_ENDPOINT") or None
    azure_key = env.get("AZURE_OPENAI_API_KEY") or None
    azure_backend: Judge | None = None
    if endpoint and azure_key:
        version = env.get("OPENAI_API_VERSION") or DEFAULT_AZURE_API_VERSION

        def build_azure() -> Judge:
            OpenAIJudge = _openai_judge_class("AZURE_OPENAI_ENDPOINT")
            return OpenAIJudge(api_key=azure_key, azure_endpoint=endpoint, api_version=version, prefix=AZURE_PREFIX,
                               timeout=timeout)

        azure_backend = DeferredBackend(build_azure)
    return openai_backend, azure_backend


def judge_from_environ(
    env: Mapping[str, str],
    *,
    cache_dir: Path | str | None = None,
    replay: bool = False,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout: float = DEFAULT_TIMEOUT,
    retry: RetryPolicy | None = None,
    deadline: float | None = DEFAULT_DEADLINE,
    sampling: Sampling = DEFAULT_SAMPLING,
    action: bool = False,
) -> tuple[JudgeStack | None, str | None]:
    """The judge for a run and None, or None and the reason there is none (no credentials and no replay).

    Reads only ``env``: GOOGLE_API_KEY / GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_CLOUD_PROJECT,
    GOOGLE_CLOUD_LOCATION, GOOGLE_GEMINI_BASE_URL / GOOGLE_VERTEX_BASE_URL, the OpenAI variables of OPENAI_ENV
    and EVALBOT_JUDGE_CACHE (used when ``cache_dir`` is None), EVALBOT_JUDGE_CACHE_KEY and the GitHub event
    (which cached answers are replayed: CacheTrust.for_run; ``action``: the Action's run, which never replays
    unsigned answers). Replay mode never builds a network backend.
    """
    trust = CacheTrust.for_run(env, action=action)
    if cache_dir is None and env.get(CACHE_ENV):
        cache_dir = env[CACHE_ENV]
    project = env.get("GOOGLE_CLOUD_PROJECT") or None
    location = env.get("GOOGLE_CLOUD_LOCATION") or None
    if replay:
        replayed = build_stack(None, cache_dir=cache_dir, replay=True, concurrency=concurrency, retry=retry,
                               sampling=sampling, cache_trust=trust)
        credentials, why = service_credentials(env)
        if credentials is not None:  # the Vertex criteria replay the verdicts the service gave when recorded
            add_evaluation_service(replayed, None)
        else:
            replayed.vertex_unavailable = why
        return replayed, None
    openai_backend, azure_backend = _openai_backends(env, timeout)
    api_key = env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY") or None
    vertex = _truthy(env.get("GOOGLE_GENAI_USE_VERTEXAI"))
    gemini_configured = bool(project or api_key) if vertex else bool(api_key)
    service_only = service_credentials(env)[0] is not None
    if not gemini_configured and openai_backend is None and azure_backend is None and not service_only:
        return None, MISSING_CREDENTIALS
    if vertex and project:
        api_key = None  # Vertex AI: a project (with application default credentials) and an API key exclude each other
    base_url = env.get("GOOGLE_VERTEX_BASE_URL" if vertex else "GOOGLE_GEMINI_BASE_URL") or None

    def gemini() -> Judge:
        from evalbot.judges.gemini import GeminiJudge  # imported lazily: google-genai is slow to import

        return GeminiJudge(
            api_key=api_key, vertexai=vertex, project=project, location=location, base_url=base_url, timeout=timeout
        )

    gemini_backend: Judge | None = None
    if gemini_configured and vertex:
        # Vertex AI looks up application default credentials: a failure must stop the run at once.
        try:
            gemini_backend = gemini()
        except Exception as exc:  # google-genai validates credentials and options eagerly
            raise ConfigError(f"cannot set up the judge client: {type(exc).__name__}: {exc}") from exc
    elif gemini_configured:
        gemini_backend = DeferredBackend(gemini)
    backend = RoutingJudge(gemini=gemini_backend, openai=openai_backend, azure=azure_backend,
                           openai_takes_all=bool(env.get("OPENAI_BASE_URL")))
    stack = build_stack(backend, cache_dir=cache_dir, replay=False, concurrency=concurrency, retry=retry,
                        deadline=deadline, sampling=sampling, cache_trust=trust)
    if env.get("OPENAI_BASE_URL"):  # another server than OpenAI's: its models cost what it charges, unknown here
        everything = gemini_backend is None
        stack.ledger.unpriced = lambda model: (model.startswith(OPENAI_PREFIX) or everything
                                               or model_family(model) == "other")
    _add_vertex_service(stack, env, timeout)
    return stack, None
