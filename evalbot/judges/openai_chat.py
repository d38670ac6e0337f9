"""The OpenAI-compatible judge backend: one Chat Completions call per request, through the official ``openai`` client.

Speaks to OpenAI, Azure OpenAI (``/openai/deployments/{deployment}/chat/completions?api-version=``) and any server
that implements the protocol (vLLM, Ollama, llama.cpp's server, a LiteLLM proxy). Imported only when a request
reaches it (see judges.factory), so replayed and cached runs never import ``openai``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import openai
from openai.types.chat import ChatCompletionMessageParam

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

log = logging.getLogger("evalbot")

DEFAULT_TIMEOUT = 60.0
NO_KEY = "no-key"
"""The API key sent to a server configured by base URL alone (local servers ignore it; the client needs one)."""

_N_REFUSED = re.compile(r"""['"`]n['"`]|\bn\b\s*(?:>|must|is not|not supported|parameter)|\bparameter\b[^.]*\bn\b""",
                        re.IGNORECASE)

_SAME_NAME = ("temperature", "top_p", "seed", "presence_penalty", "frequency_penalty")
_NOT_SENT = frozenset({
    # GenerateContentConfig fields with no Chat Completions counterpart, or that evalbot sets itself.
    "candidate_count", "automatic_function_calling", "http_options", "top_k", "safety_settings", "thinking_config",
    "tools", "tool_config", "labels", "cached_content", "response_modalities", "media_resolution", "speech_config",
    "audio_timestamp", "routing_config", "model_selection_config", "response_logprobs", "logprobs",
    "enable_enhanced_civic_answers", "image_config", "response_schema",
})


def chat_parameters(config: Mapping[str, Any], num_samples: int, *,
                    max_tokens_field: str = "max_completion_tokens") -> tuple[dict[str, Any], list[str]]:
    """Chat Completions parameters for a google-genai ``GenerateContentConfig`` (snake_case), and the names of the
    fields that have no counterpart (ignored, for a note).

    ``response_mime_type: application/json`` asks for JSON mode, ``response_json_schema`` (a JSON schema object)
    for structured outputs; ``system_instruction`` (a text) becomes a system message. ``max_tokens_field`` is
    ``max_tokens`` for servers that predate ``max_completion_tokens``.
    """
    params: dict[str, Any] = {}
    ignored: list[str] = []
    for key, value in config.items():
        if value is None:
            continue
        if key in _SAME_NAME and isinstance(value, int | float) and not isinstance(value, bool):
            params[key] = value
        elif key == "max_output_tokens" and isinstance(value, int) and not isinstance(value, bool) and value > 0:
            params[max_tokens_field] = value
        elif key == "stop_sequences" and isinstance(value, list) and all(isinstance(s, str) for s in value):
            if value:
                params["stop"] = value[:4]
        elif key == "response_mime_type" and isinstance(value, str):
            if value.lower() == "application/json":
                params.setdefault("response_format", {"type": "json_object"})
        elif key == "response_json_schema" and isinstance(value, dict):
            params["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": "judge_answer", "schema": value}}
        elif key == "system_instruction" and isinstance(value, str):
            params["_system"] = value
        else:
            ignored.append(key)
    if num_samples > 1:
        params["n"] = num_samples
    return params, sorted(k for k in ignored if k not in _NOT_SENT) + sorted(k for k in ignored if k in _NOT_SENT)


OPENAI_URL = "https://api.openai.com/v1"
"""Where the client sends requests when no base URL is set (named in messages)."""


def shown_endpoint(url: str) -> str:
    """``url`` as messages may name it: without user, password, query or fragment (where credentials sit)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "(an invalid URL)"
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port is not None else "")
    return scrub(urlunsplit((parts.scheme, netloc, parts.path, "", "")))


def _refuses_n(exc: openai.APIStatusError) -> bool:
    body = exc.body if isinstance(exc.body, dict) else {}
    if body.get("param") == "n":
        return True
    return bool(_N_REFUSED.search(f"{exc.message} {body.get('message', '')}"))


def _call_error(exc: openai.APIStatusError, num_samples: int, endpoint: str) -> JudgeCallError:
    status = exc.status_code
    body = exc.body if isinstance(exc.body, dict) else {}
    detail = body.get("message") if isinstance(body.get("message"), str) else exc.message
    message = f"judge call failed: HTTP {status}: {detail}"
    if status == 404:  # a wrong base URL (a path missing /v1) answers 404 for every model
        message += f" (from {endpoint}: check the model name and OPENAI_BASE_URL)"
    if status in (400, 422) and num_samples > 1 and _refuses_n(exc):
        return CandidateCountUnsupported(message, status=status)
    retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
    if retry_after is None:
        ms = exc.response.headers.get("retry-after-ms")
        try:
            retry_after = float(ms) / 1000 if ms else None
        except ValueError:
            retry_after = None
    return JudgeCallError(message, status=status, transient=status in TRANSIENT_STATUSES, retry_after=retry_after)


class OpenAIJudge:
    """Calls ``chat.completions.create`` once per request, asking for ``n`` = ``num_samples`` choices.

    ``azure_endpoint`` set: Azure OpenAI (the model name is the deployment, ``api_version`` required). Otherwise
    ``base_url`` (None: OpenAI's own) and ``api_key``. ``prefix`` is stripped from request model names
    (``openai/`` or ``azure/``). No retries here (see RetryingJudge); the client's own are turned off.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        azure_endpoint: str | None = None,
        api_version: str | None = None,
        prefix: str = "",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.timeout = timeout
        self.prefix = prefix
        self.azure = azure_endpoint is not None
        self._secret = (api_key,) if api_key else ()
        self._api_key = api_key or NO_KEY
        self._base_url = base_url
        self._azure_endpoint = azure_endpoint
        self._api_version = api_version
        self.endpoint = shown_endpoint(azure_endpoint or base_url or OPENAI_URL)
        """The server's URL as messages name it (no credentials, no query)."""
        # OpenAI's own service and Azure know max_completion_tokens (reasoning models accept nothing else); other
        # servers (llama.cpp, older vLLM and Ollama) know only max_tokens.
        self.max_tokens_field = "max_completion_tokens" if base_url is None else "max_tokens"
        self.ignored_fields: set[str] = set()
        self._lock = threading.Lock()
        self._client: openai.AsyncOpenAI | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._retired: list[openai.AsyncOpenAI] = []
        self._new_client()  # options are checked now: a bad endpoint is a configuration error of the run

    def _new_client(self) -> openai.AsyncOpenAI:
        if self._azure_endpoint is not None:
            return openai.AsyncAzureOpenAI(api_key=self._api_key, azure_endpoint=self._azure_endpoint,
                                           api_version=self._api_version, timeout=self.timeout, max_retries=0)
        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self._base_url, timeout=self.timeout,
                                  max_retries=0)

    def _client_for_loop(self) -> openai.AsyncOpenAI:
        """The client's connection pool belongs to one event loop, and a run may use several in turn: each loop gets
        its own client (replaced ones are kept, not collected inside a later loop)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            if self._client is not None:
                self._retired.append(self._client)
            self._client, self._loop = self._new_client(), loop
        return self._client

    def _note_ignored(self, fields: list[str]) -> None:
        new = [f for f in fields if f not in self.ignored_fields]
        if new:
            with self._lock:
                self.ignored_fields.update(new)
            log.warning("evalbot: judge_model_config field(s) with no Chat Completions counterpart ignored: %s",
                        ", ".join(new))

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """One HTTP request; the texts of every choice and the tokens billed (the key never in either)."""
        return await without_secrets(self._generate(request), self._secret)

    async def _generate(self, request: JudgeRequest) -> JudgeReply:
        refused = generation_problems(request.config)  # checked when the config was read; here for any other caller
        if refused:
            where, problem = refused[0]
            raise JudgeCallError(f"invalid judge_model_config: {'.'.join(where)}: {problem}")
        params, ignored = chat_parameters(request.config, request.num_samples, max_tokens_field=self.max_tokens_field)
        self._note_ignored(ignored)
        messages: list[ChatCompletionMessageParam] = []
        system = params.pop("_system", None)
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": request.prompt})
        model = request.model.removeprefix(self.prefix) if self.prefix else request.model
        client = self._client_for_loop()
        try:
            async with asyncio.timeout(self.timeout):
                response = await client.chat.completions.create(model=model, messages=messages, **params)
        except TimeoutError:
            raise JudgeTimeout(f"judge call timed out after {self.timeout:g} s", transient=True) from None
        except openai.APITimeoutError:
            raise JudgeTimeout(f"judge call timed out after {self.timeout:g} s", transient=True) from None
        except openai.APIStatusError as exc:
            raise _call_error(exc, request.num_samples, self.endpoint) from None
        except openai.APIConnectionError as exc:
            raise JudgeCallError(f"judge call failed: cannot reach the server at {self.endpoint} ({exc})",
                                 transient=True) from None
        except (ValueError, openai.APIResponseValidationError) as exc:  # a garbled body
            raise JudgeCallError(
                f"the judge service sent a malformed answer ({type(exc).__name__}: {exc})", transient=True
            ) from None
        except openai.OpenAIError as exc:
            raise JudgeCallError(f"judge call failed: {type(exc).__name__}: {exc}") from None
        served = getattr(response, "model", None)
        served = scrub(served, self._secret)[:200] if isinstance(served, str) and served else None
        return JudgeReply(self._texts(response), self._usage(response), 0, served)

    def _texts(self, response: Any) -> tuple[str, ...]:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise JudgeCallError("the judge service sent a malformed answer (no choices)", transient=True)
        texts: list[str] = []
        for choice in sorted(choices, key=lambda c: getattr(c, "index", 0) or 0):
            message = getattr(choice, "message", None)
            content = getattr(message, "content", None)
            if not isinstance(content, str):  # a refusal or a tool call: no verdict text
                content = getattr(message, "refusal", None) or ""
            texts.append(scrub(content, self._secret))
        return tuple(texts)

    @staticmethod
    def _usage(response: Any) -> Usage:
        usage = getattr(response, "usage", None)
        prompt = getattr(usage, "prompt_tokens", 0)
        completion = getattr(usage, "completion_tokens", 0)
        return Usage(
            input_tokens=prompt if isinstance(prompt, int) else 0,
            output_tokens=completion if isinstance(completion, int) else 0,
            requests=1,
        )
