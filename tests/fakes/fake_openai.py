"""A loopback fake of the OpenAI Chat Completions endpoint for the real ``openai`` client (stdlib only).

Serves ``POST /v1/chat/completions`` (OpenAI and every compatible server) and Azure OpenAI's
``POST /openai/deployments/{deployment}/chat/completions?api-version=...`` with ``n`` choices whose texts come from
the same ``responder(prompt, sample_index, request)`` functions and ``Scripted`` answers as the fake Gemini server
(tests/fakes/fake_gemini.py, whose scripting and serving it shares); injects HTTP errors with OpenAI's error
bodies (429 with ``Retry-After``, 5xx), ``n`` refused (HTTP 400 ``param: "n"``, as OpenAI's reasoning models
answer), slow and malformed answers; logs every request.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.fakes.fake_gemini import FakeError, FakeGemini, Recorded

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "invalid_request_error",
    403: "permission_error",
    404: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    503: "server_error",
}


def openai_error(status: int, message: str, *, param: str | None = None, code: str | None = None) -> dict[str, Any]:
    """An error body as OpenAI sends it (Azure and vLLM send the same shape)."""
    return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "api_error"), "param": param,
                      "code": code}}


@dataclass
class FakeOpenAI(FakeGemini):
    """The fake server (same scripting API as FakeGemini: ``responder``, ``script``, ``fault``, ``malformed``,
    ``slow``, ``latency``, ``requests``, ``peak_in_flight``). ``reject_candidate_count`` names the models that refuse
    ``n`` > 1; ``max_candidates`` caps the choices returned (as servers that ignore ``n`` return one);
    ``api_key`` set: requests without that key get 401 as from OpenAI."""

    api_key: str | None = None

    @property
    def url(self) -> str:
        """Base URL to give the OpenAI client (``base_url=`` or ``OPENAI_BASE_URL``): the server root plus ``/v1``."""
        return self.root + "/v1"

    @property
    def root(self) -> str:
        """The server root (Azure's ``AZURE_OPENAI_ENDPOINT``)."""
        if self._server is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def malformed(self, body: bytes = b'{"choices": [{"message": ', *, count: int = 1) -> None:
        """Queue ``count`` 200 answers whose body is not valid JSON."""
        super().malformed(body, count=count)

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        started = time.monotonic()
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        body = body if isinstance(body, dict) else {}
        split = urlsplit(handler.path)
        path = split.path
        model = str(body.get("model") or "")
        if path.startswith("/openai/deployments/"):
            model = path.removeprefix("/openai/deployments/").split("/", 1)[0]
        messages = body.get("messages") if isinstance(body.get("messages"), list) else []
        prompt = "\n".join(m["content"] for m in messages
                           if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str))
        n = body.get("n") if isinstance(body.get("n"), int) else 1
        auth = handler.headers.get("authorization") or ""
        key = handler.headers.get("api-key") or (auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else None)
        rec = Recorded(path, model, key, body, prompt, n, started=started)
        with self._lock:
            self.requests.append(rec)
        status, payload, headers = self._decide_chat(path, parse_qs(split.query), model, prompt, n, rec)
        rec.status = status
        rec.finished = time.monotonic()
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _decide_chat(self, path: str, query: dict[str, list[str]], model: str, prompt: str, n: int,
                     rec: Recorded) -> tuple[int, dict[str, Any] | bytes, dict[str, str]]:
        azure = path.startswith("/openai/deployments/")
        if not (path == "/v1/chat/completions" or (azure and path.endswith("/chat/completions"))):
            return 404, openai_error(404, f"Invalid URL (POST {path})"), {}
        if azure and not query.get("api-version"):
            return 404, {"error": {"code": "404", "message": "Resource not found"}}, {}
        if self.api_key is not None and rec.api_key != self.api_key:
            return 401, openai_error(401, "Incorrect API key provided.", code="invalid_api_key"), {}
        entry = self._next_scripted(model)
        if entry is not None and entry.delay:
            time.sleep(entry.delay)
        if entry is not None and entry.status != 200:
            headers = {"Retry-After": entry.retry_after} if entry.retry_after is not None else {}
            return entry.status, openai_error(entry.status, entry.message), headers
        if entry is not None and entry.body is not None:
            return 200, entry.body, {}
        if n > 1 and model in self.reject_candidate_count:
            return 400, openai_error(
                400, f"Unsupported value: 'n' does not support {n} with this model. Supported values are: 1.",
                param="n", code="unsupported_value"), {}
        if self.latency:
            time.sleep(self.latency)
        count = n if self.max_candidates is None else min(n, self.max_candidates)
        if entry is not None and entry.texts is not None:
            texts = list(entry.texts[:count])
        else:
            try:
                texts = [self.responder(prompt, i, rec) for i in range(count)]
            except FakeError as exc:
                headers = {"Retry-After": exc.retry_after} if exc.retry_after is not None else {}
                return exc.status, openai_error(exc.status, exc.message), headers
        out_tokens = sum(len(t) // 4 + 1 for t in texts)
        in_tokens = len(prompt) // 4 + 1
        return 200, {
            "id": f"chatcmpl-fake{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.served_as.get(model, model),
            "choices": [
                {"index": i, "message": {"role": "assistant", "content": t, "refusal": None},
                 "logprobs": None, "finish_reason": "stop"}
                for i, t in enumerate(texts)
            ],
            "usage": {"prompt_tokens": in_tokens, "completion_tokens": out_tokens,
                      "total_tokens": in_tokens + out_tokens},
        }, {}
