"""The google-genai judge backend: one ``generateContent`` call per request (Gemini API or Vertex AI)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from google import genai
from google.genai import errors, types
from pydantic import ValidationError

from evalbot.errors import ConfigError
from evalbot.formats.genconfig import generation_problems
from evalbot.judges.base import (
    TRANSIENT_STATUSES,
    CandidateCountUnsupported,
    JudgeCallError,
    JudgeReply,
    JudgeRequest,
    JudgeTimeout,
    Usage,
    without_secrets,
)
from evalbot.judges.retry import parse_retry_after
from evalbot.redact import scrub

DEFAULT_TIMEOUT = 60.0


class JudgeSetupError(ConfigError):
    """The google-genai client could not be built (e.g. an unreadable ``SSL_CERT_FILE``).

    Deliberately not a JudgeError: it is a configuration problem of the whole run, so every judged criterion ends
    as an error (exit code 2) rather than a quiet not_evaluated.
    """


def _in_thread(build: Callable[[], Any]) -> concurrent.futures.Future[Any]:
    """Run ``build`` in a daemon thread; its result (or exception) in a future."""
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future.set_running_or_notify_cancel()  # a running future cannot be cancelled by one impatient awaiter

    def run() -> None:
        try:
            future.set_result(build())
        except BaseException as exc:  # handed to whoever awaits the client
            future.set_exception(exc)

    threading.Thread(target=run, name="evalbot-genai-client", daemon=True).start()
    return future


def _retry_delay_from_details(details: Any) -> float | None:
    """``google.rpc.RetryInfo.retryDelay`` ("3s", "0.5s") from an error body, if present."""
    error = details.get("error", details) if isinstance(details, dict) else None
    items = error.get("details") if isinstance(error, dict) else None
    for item in items if isinstance(items, list) else []:
        delay = item.get("retryDelay") if isinstance(item, dict) else None
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return float(delay[:-1])
            except ValueError:
                return None
    return None


def _call_error(exc: errors.APIError, num_samples: int) -> JudgeCallError:
    headers = getattr(exc.response, "headers", None)
    header = headers.get("retry-after") if headers is not None else None
    retry_after = parse_retry_after(header) if header else _retry_delay_from_details(exc.details)
    message = f"judge call failed: HTTP {exc.code} {exc.status or ''}: {exc.message or exc.details}".replace(
        "  ", " "
    )
    if exc.code == 400 and num_samples > 1 and "candidate" in str(exc.message or exc.details).lower():
        return CandidateCountUnsupported(message, status=400)
    return JudgeCallError(message, status=exc.code, transient=exc.code in TRANSIENT_STATUSES, retry_after=retry_after)


def _candidate_text(candidate: types.Candidate) -> str:
    parts = candidate.content.parts if candidate.content and candidate.content.parts else []
    return "\n".join(p.text for p in parts if p.text and not p.thought)


class GeminiJudge:
    """Calls ``models.generate_content`` once per request, asking for ``num_samples`` candidates.

    No retries here (see RetryingJudge): errors become JudgeCallError with the HTTP status, whether a retry may
    help and the service's ``Retry-After``. ``base_url`` None lets google-genai use ``GOOGLE_GEMINI_BASE_URL``.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        vertexai: bool = False,
        project: str | None = None,
        location: str | None = None,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.timeout = timeout
        self._secret = (api_key,) if api_key else ()
        http_options = types.HttpOptions(
            base_url=base_url,
            api_version=None if vertexai else "v1beta",
            timeout=int(timeout * 1000),
        )

        def new_client() -> genai.Client:
            if vertexai:
                return genai.Client(
                    vertexai=True, project=project, location=location, api_key=api_key, http_options=http_options
                )
            return genai.Client(api_key=api_key, http_options=http_options)

        self._new_client = new_client
        self._client: genai.Client | None = None
        self._pending: concurrent.futures.Future[genai.Client] | None = None
        if vertexai:
            # Vertex AI: the client looks up application default credentials; a failure must stop the run at once.
            self._client = new_client()
        else:
            # Gemini API: nothing to validate, but building the client costs ~40 ms (google-genai loads CA
            # certificates twice, outside the GIL); it is built in a thread while the run loads its inputs.
            self._pending = _in_thread(new_client)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._retired: list[genai.Client] = []
        self._configs: dict[tuple[str, int], types.GenerateContentConfig] = {}

    async def _client_for_loop(self) -> genai.Client:
        """google-genai 2.x binds its async HTTP session to the first event loop, and a run may use several loops in
        turn (agent runs, then scoring): each loop gets its own client.  Replaced clients are kept until exit, since
        collecting one inside a later loop would try to close its session there."""
        if self._pending is not None:
            pending = self._pending
            try:
                client = await asyncio.wrap_future(pending) if not pending.done() else pending.result()
            except Exception as exc:
                raise JudgeSetupError(f"cannot set up the judge client: {type(exc).__name__}: {exc}") from exc
            if self._pending is pending:  # the first caller to get here installs it
                self._client, self._pending = client, None
        loop = asyncio.get_running_loop()
        if self._client is None or (self._loop is not None and self._loop is not loop):
            if self._client is not None:
                self._retired.append(self._client)
            self._client = self._new_client()
        self._loop = loop
        return self._client

    def _config(self, config: Mapping[str, Any], num_samples: int) -> types.GenerateContentConfig:
        """The validated config, built once per distinct (config, num_samples); each call gets a shallow copy (a
        library assigning a field changes no other call; google-genai 3.x deep-copies it anyway)."""
        try:
            key = (json.dumps(config, sort_keys=True, default=repr), num_samples)
        except (TypeError, ValueError):  # not JSON-shaped (e.g. non-string keys): validate every time
            return self._validate(config, num_samples)
        built = self._configs.get(key)
        if built is None:
            built = self._configs[key] = self._validate(config, num_samples)
        return built.model_copy()

    @staticmethod
    def _validate(config: Mapping[str, Any], num_samples: int) -> types.GenerateContentConfig:
        refused = generation_problems(config)  # checked when the config was read; here for any other caller
        if refused:
            where, problem = refused[0]
            raise JudgeCallError(f"invalid judge_model_config: {'.'.join(where)}: {problem}")
        fields = dict(config)
        if num_samples > 1:
            fields["candidate_count"] = num_samples
        fields["automatic_function_calling"] = {"disable": True}
        try:
            return types.GenerateContentConfig.model_validate(fields)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise JudgeCallError(f"invalid judge_model_config: {problems}") from None

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """One HTTP request; the texts of every candidate and the tokens billed (the key never in either)."""
        return await without_secrets(self._generate(request), self._secret)

    async def _generate(self, request: JudgeRequest) -> JudgeReply:
        config = self._config(request.config, request.num_samples)
        client = await self._client_for_loop()
        try:
            async with asyncio.timeout(self.timeout):  # no extra task per call, unlike asyncio.wait_for
                response = await client.aio.models.generate_content(
                    model=request.model, contents=request.prompt, config=config
                )
        except TimeoutError:
            raise JudgeTimeout(f"judge call timed out after {self.timeout:g} s", transient=True) from None
        except errors.APIError as exc:
            raise _call_error(exc, request.num_samples) from None
        except ValueError as exc:  # includes JSON and pydantic errors on a garbled body
            raise JudgeCallError(
                f"the judge service sent a malformed answer ({type(exc).__name__}: {exc})", transient=True
            ) from None
        except OSError as exc:
            raise JudgeCallError(f"judge call failed: {type(exc).__name__}: {exc}", transient=True) from None
        except Exception as exc:  # transport errors of the HTTP library google-genai happens to use
            name = type(exc).__name__
            transient = any(word in name for word in ("Connect", "Timeout", "Network", "Protocol", "Read"))
            raise JudgeCallError(f"judge call failed: {name}: {exc}", transient=transient) from None
        texts = tuple(scrub(_candidate_text(c), self._secret) for c in response.candidates or [])
        meta = response.usage_metadata
        usage = Usage(
            input_tokens=(meta.prompt_token_count or 0) if meta else 0,
            output_tokens=((meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0)) if meta else 0,
            requests=1,
        )
        served = scrub(response.model_version, self._secret)[:200] if response.model_version else None
        return JudgeReply(texts, usage, 0, served)
