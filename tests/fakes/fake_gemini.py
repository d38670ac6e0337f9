"""A loopback fake of the Gemini API ``generateContent`` endpoint for the real google-genai client (stdlib only).

Serves ``POST /{v1,v1beta}/models/{model}:generateContent`` (and ``:streamGenerateContent``) with
``candidateCount`` candidates whose texts come from a ``responder(prompt, sample_index, request)`` function or from
scripted replies; injects HTTP errors (429/503/400 ... with ``Retry-After``), slow and malformed answers; rate-limits
like a small quota (``quota``: 429 RESOURCE_EXHAUSTED with Gemini's error body whenever more requests are in flight);
logs every request. Stdlib only so that ADK's own virtualenv can import it too (``scripts/make_judge_goldens.py``).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    """One request as the server saw it."""

    path: str
    model: str
    api_key: str | None
    body: dict[str, Any]
    prompt: str
    candidate_count: int
    status: int = 0
    started: float = 0.0
    finished: float = 0.0
    in_flight: int = 0
    """Requests in flight at the server when this one arrived, itself included."""


@dataclass
class Scripted:
    """A canned answer: candidate ``texts`` (None: ask the responder), or an error ``status``, or a raw ``body``."""

    texts: list[str] | None = None
    status: int = 200
    error_status: str = ""
    message: str = ""
    retry_after: str | None = None
    body: bytes | None = None
    delay: float = 0.0
    model: str | None = None
    """Only requests to this model consume the entry (None: any model)."""


Responder = Callable[[str, int, Recorded], str]
"""Gives the text of candidate ``index`` for a prompt; may raise FakeError to answer with an HTTP error."""


class FakeError(Exception):
    """Raised by a responder to make the whole request fail with HTTP ``status``."""

    def __init__(self, status: int, message: str = "", retry_after: str | None = None) -> None:
        super().__init__(message or f"injected error {status}")
        self.status = status
        self.message = message or f"injected error {status}"
        self.retry_after = retry_after


TAG = re.compile(r"@@([A-Za-z0-9_.-]+)@@")


class TaggedResponder:
    """Answers by tag: the LAST ``@@tag@@`` in the prompt picks a list of answers, consumed in call order.

    Tests put tags in the texts being judged, and judge prompts show the judged text last, so the same script
    drives ADK's judges (one request per sample) and evalbot's (one request with ``candidateCount``). An answer is
    a text, or ``{"error": status, "message": ...}`` to fail the request. Calls beyond the list reuse it cyclically.
    """

    def __init__(self, answers: dict[str, list[Any]]) -> None:
        self.answers = answers
        self.calls: dict[str, int] = {}
        self.unrouted: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, prompt: str, index: int, request: Recorded) -> str:
        tags = TAG.findall(prompt)
        tag = tags[-1] if tags else ""
        if tag not in self.answers:
            with self._lock:
                self.unrouted.append(prompt)
            raise FakeError(400, f"no scripted answer for tag {tag!r}")
        with self._lock:
            k = self.calls.get(tag, 0)
            self.calls[tag] = k + 1
        options = self.answers[tag]
        answer = options[k % len(options)]
        if isinstance(answer, dict):
            raise FakeError(int(answer.get("error", 400)), str(answer.get("message", "")))
        return str(answer)

_STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def _default_responder(prompt: str, index: int, request: Recorded) -> str:
    return f"fake answer {index}"


@dataclass
class FakeGemini:
    """The fake server; use as a context manager or call ``start()``/``stop()``."""

    responder: Responder = _default_responder
    latency: float = 0.0
    """Seconds every successful answer takes."""
    reject_candidate_count: Iterable[str] = ()
    """Models that answer 400 to ``candidateCount`` > 1, as some Gemini models do."""
    max_candidates: int | None = None
    """Return at most this many candidates (a service returning fewer than asked)."""
    routes: dict[str, Callable[[dict[str, Any]], tuple[int, dict[str, Any]]]] = field(default_factory=dict)
    """Other methods by path suffix (e.g. ``":evaluateInstances"``): request body -> (status, JSON answer)."""
    quota: int | None = None
    """At most this many ``generateContent`` requests in flight: one arriving while as many are being answered is
    refused at once with 429 RESOURCE_EXHAUSTED, in the body Gemini sends for a per-minute quota (QuotaFailure,
    Help, RetryInfo). None: no quota."""
    quota_retry_delay: str | None = None
    """``RetryInfo.retryDelay`` of those refusals (e.g. ``"0.05s"``), None to leave RetryInfo out."""
    served_as: dict[str, str] = field(default_factory=dict)
    """The model each requested model is answered by, as the answer names it (``modelVersion``; OpenAI's
    ``model``): a provider serving another version under the same name. Unlisted: the requested name."""
    requests: list[Recorded] = field(default_factory=list)
    in_flight: int = 0
    peak_in_flight: int = 0
    generating: int = 0
    """``generateContent`` requests being answered (refused ones are not counted)."""

    def __post_init__(self) -> None:
        self._queue: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.reject_candidate_count = set(self.reject_candidate_count)

    # ------------------------------------------------------------------ scripting
    def script(self, *entries: Scripted) -> None:
        """Queue canned answers; each request consumes the first entry that matches its model."""
        with self._lock:
            self._queue.extend(entries)

    def fault(self, status: int, *, count: int = 1, retry_after: str | None = None, message: str = "",
              model: str | None = None) -> None:
        """Queue ``count`` error answers with HTTP ``status`` (and a ``Retry-After`` header if given)."""
        text = message or f"injected error {status}"
        self.script(*[Scripted(status=status, message=text, retry_after=retry_after, model=model)] * count)

    def malformed(self, body: bytes = b'{"candidates": [{"content": ', *, count: int = 1) -> None:
        """Queue ``count`` 200 answers whose body is not valid JSON."""
        self.script(*[Scripted(body=body)] * count)

    def slow(self, seconds: float, *, count: int = 1) -> None:
        """Queue ``count`` normal answers that take ``seconds``."""
        self.script(*[Scripted(delay=seconds)] * count)

    def _next_scripted(self, model: str) -> Scripted | None:
        with self._lock:
            for i, entry in enumerate(self._queue):
                if entry.model is None or entry.model == model:
                    del self._queue[i]
                    return entry
        return None

    # ------------------------------------------------------------------ serving
    @property
    def url(self) -> str:
        """Base URL to give google-genai (``HttpOptions(base_url=...)`` or ``GOOGLE_GEMINI_BASE_URL``)."""
        if self._server is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeGemini:
        """Start serving on a free loopback port in a daemon thread."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the real service allows
            disable_nagle_algorithm = True  # headers and body go out at once (no delayed-ACK stalls)

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                if self.path == "/_reset":
                    fake.reset()
                    self._json({"ok": True})
                    return
                fake._handle(self)

            def do_GET(self) -> None:
                if self.path == "/_stats":
                    self._json({"requests": len(fake.requests), "peak_in_flight": fake.peak_in_flight,
                                "statuses": [r.status for r in fake.requests],
                                "candidate_counts": [r.candidate_count for r in fake.requests],
                                "started": [r.started for r in fake.requests],
                                "finished": [r.finished for r in fake.requests]})
                else:
                    self.send_error(404)

            def _json(self, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = _Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGemini:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget the request log and the queued answers."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()
            self.peak_in_flight = 0

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            self._answer(handler)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        started = time.monotonic()
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b"{}"
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        path = handler.path.split("?", 1)[0]
        model = path.split("/models/", 1)[-1].split(":", 1)[0]
        prompt = "\n".join(
            p.get("text", "")
            for c in body.get("contents", [])
            for p in (c.get("parts") or [])
            if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
        config = body.get("generationConfig") or {}
        n = int(config.get("candidateCount") or 1)
        rec = Recorded(path, model, handler.headers.get("x-goog-api-key"), body, prompt, n, started=started)
        counted = False
        with self._lock:
            self.requests.append(rec)
            rec.in_flight = self.in_flight
            over_quota = self.quota is not None and self.generating >= self.quota and "generateContent" in path
            if not over_quota and "generateContent" in path:
                self.generating += 1
                counted = True
        try:
            if over_quota:
                status, payload, headers = 429, _quota_error(model, self.quota or 0, self.quota_retry_delay), {}
            else:
                status, payload, headers = self._decide(path, model, prompt, n, rec)
        finally:
            if counted:
                with self._lock:
                    self.generating -= 1
        rec.status = status
        rec.finished = time.monotonic()
        stream = ":streamGenerateContent" in path and status == 200 and isinstance(payload, dict)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        if stream:
            data = b"data: " + data + b"\r\n\r\n"
        handler.send_response(status)
        handler.send_header("Content-Type", "text/event-stream" if stream else "application/json")
        handler.send_header("Content-Length", str(len(data)))
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _decide(self, path: str, model: str, prompt: str, n: int,
                rec: Recorded) -> tuple[int, dict[str, Any] | bytes, dict[str, str]]:
        for suffix, route in self.routes.items():
            if path.endswith(suffix):
                status, answer = route(rec.body)
                return status, answer, {}
        if not (path.endswith(":generateContent") or path.endswith(":streamGenerateContent")):
            return 404, _error(404, "NOT_FOUND", f"unknown method {path}"), {}
        entry = self._next_scripted(model)
        if entry is not None and entry.delay:
            time.sleep(entry.delay)
        if entry is not None and entry.status != 200:
            headers = {"Retry-After": entry.retry_after} if entry.retry_after is not None else {}
            name = entry.error_status or _STATUS_NAMES.get(entry.status, "UNKNOWN")
            return entry.status, _error(entry.status, name, entry.message), headers
        if entry is not None and entry.body is not None:
            return 200, entry.body, {}
        if n > 1 and model in self.reject_candidate_count:
            return 400, _error(400, "INVALID_ARGUMENT",
                               f"Multiple candidates is not enabled for models/{model}"), {}
        if self.latency:
            time.sleep(self.latency)
        count = n if self.max_candidates is None else min(n, self.max_candidates)
        if entry is not None and entry.texts is not None:
            texts = list(entry.texts[:count])
        else:
            try:
                texts = [self.responder(prompt, i, rec) for i in range(count)]
            except FakeError as exc:
                name = _STATUS_NAMES.get(exc.status, "UNKNOWN")
                headers = {"Retry-After": exc.retry_after} if exc.retry_after is not None else {}
                return exc.status, _error(exc.status, name, exc.message), headers
        out_tokens = sum(len(t) // 4 + 1 for t in texts)
        in_tokens = len(prompt) // 4 + 1
        return 200, {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": t}]}, "finishReason": "STOP", "index": i}
                for i, t in enumerate(texts)
            ],
            "usageMetadata": {"promptTokenCount": in_tokens, "candidatesTokenCount": out_tokens,
                              "totalTokenCount": in_tokens + out_tokens},
            "modelVersion": self.served_as.get(model, model),
            "responseId": f"fake-{len(self.requests)}",
        }, {}


class _Server(ThreadingHTTPServer):
    # The default listen backlog of 5 drops simultaneous connects (the client then waits ~1 s to retry).
    request_queue_size = 256
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout or deadline test closing its connection) is expected: not an error to
        print on the shared stderr, where it lands in another test's output. Anything else still prints."""
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def _error(code: int, status: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status}}


def _quota_error(model: str, quota: int, retry_delay: str | None) -> dict[str, Any]:
    """The body of Gemini's 429 for an exhausted per-minute quota (its shape; the values are the fake's)."""
    details: list[dict[str, Any]] = [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
         "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                         "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
                         "quotaDimensions": {"location": "global", "model": model}, "quotaValue": str(quota)}]},
        {"@type": "type.googleapis.com/google.rpc.Help",
         "links": [{"description": "Learn more about Gemini API quotas",
                    "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
    ]
    if retry_delay is not None:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay})
    message = ("You exceeded your current quota, please check your plan and billing details. For more information on "
               "this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.")
    return {"error": {"code": 429, "message": message, "status": "RESOURCE_EXHAUSTED", "details": details}}


def serve_main(argv: list[str] | None = None) -> None:
    """Serve from a separate process: ``python -m tests.fakes.fake_gemini --latency 0.2 --answer TEXT``.

    Prints the base URL on the first line of stdout; ``GET /_stats`` gives the request count and peak concurrency,
    ``POST /_reset`` clears them. Used by the benchmark so the server does not share the client's interpreter.
    """
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.0)
    parser.add_argument("--answer", default="fake answer")
    parser.add_argument("--split-answer", help="the first sample's answer to every --split-every-th prompt")
    parser.add_argument("--split-every", type=int, default=0, help="which prompts get --split-answer (by CRC32)")
    parser.add_argument("--quota", type=int, default=None, help="429 RESOURCE_EXHAUSTED beyond this many in flight")
    args = parser.parse_args(argv)
    answer, split, every = args.answer, args.split_answer, args.split_every

    def respond(prompt: str, index: int, request: Recorded) -> str:
        if split is not None and every and index == 0 and zlib.crc32(prompt.encode()) % every == 0:
            return str(split)
        return str(answer)

    fake = FakeGemini(responder=respond, latency=args.latency, quota=args.quota).start()
    print(fake.url, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    serve_main()
