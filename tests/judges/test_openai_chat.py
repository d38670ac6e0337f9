"""The OpenAI-compatible judge backend through the real ``openai`` client against the loopback fake Chat Completions
server (tests/fakes/fake_openai.py): samples through ``n``, the fallback when ``n`` is refused, errors, Retry-After,
malformed bodies, Azure's URL scheme, the config mapping, routing by model name, secrets and usage."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalbot.criteria.judged import JudgeCall, JudgeModelOptions

pytest.importorskip("openai", reason="the openai client is not installed (pip install -e '.[dev]' installs it)")

from evalbot.errors import RetryPolicy
from evalbot.formats.prices import shipped_prices
from evalbot.judges.base import (
    CandidateCountUnsupported,
    JudgeCallError,
    JudgeRequest,
    JudgeTimeout,
    Usage,
)
from evalbot.judges.factory import MISSING_CREDENTIALS, build_stack, judge_from_environ
from evalbot.judges.openai_chat import OpenAIJudge, chat_parameters
from evalbot.judges.usage import UsageLedger, estimated_cost
from evalbot.redact import forget_secrets, register_secret
from tests.fakes.fake_gemini import FakeError, FakeGemini, Scripted
from tests.fakes.fake_openai import FakeOpenAI

FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.01, max_retry_after=0.01)
KEY = "sk-test-0123456789"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def ask(judge: object, request: JudgeRequest) -> object:
    return asyncio.run(judge.generate(request))  # type: ignore[attr-defined]


def test_samples_come_from_one_request_with_n(server: FakeOpenAI) -> None:
    """num_samples becomes ``n``; every choice's text comes back in order, with the tokens billed; the key goes in
    the Authorization header and the openai/ prefix is not sent."""
    server.responder = lambda prompt, i, rec: f"answer {i} to {prompt}"
    judge = OpenAIJudge(api_key=KEY, base_url=server.url, prefix="openai/")
    reply = asyncio.run(judge.generate(JudgeRequest("openai/gpt-4.1-mini", "hello", num_samples=3)))
    assert reply.texts == ("answer 0 to hello", "answer 1 to hello", "answer 2 to hello")
    assert reply.usage.requests == 1 and reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    [rec] = server.requests
    assert (rec.path, rec.model, rec.api_key, rec.candidate_count) == ("/v1/chat/completions", "gpt-4.1-mini", KEY, 3)
    assert rec.body["messages"] == [{"role": "user", "content": "hello"}]


def test_refused_n_falls_back_to_one_request_per_sample(server: FakeOpenAI) -> None:
    """A 400 naming ``n`` (as OpenAI's reasoning models answer) becomes CandidateCountUnsupported; the sampling
    layer then asks once per sample, and remembers the model."""
    server.reject_candidate_count = {"o3"}
    judge = OpenAIJudge(api_key=KEY, base_url=server.url)
    with pytest.raises(CandidateCountUnsupported, match="HTTP 400: Unsupported value: 'n'"):
        asyncio.run(judge.generate(JudgeRequest("o3", "p", num_samples=4)))
    stack = build_stack(judge, retry=FAST)
    reply = asyncio.run(stack.generate(JudgeRequest("o3", "p", num_samples=4)))
    assert len(reply.texts) == 4
    assert [r.candidate_count for r in server.requests] == [4, 4, 1, 1, 1, 1]
    asyncio.run(stack.generate(JudgeRequest("o3", "q", num_samples=2)))
    assert [r.candidate_count for r in server.requests[6:]] == [1, 1]  # remembered: no second refusal


def test_a_server_ignoring_n_gets_the_rest_asked_separately(server: FakeOpenAI) -> None:
    """Servers that ignore ``n`` (llama.cpp's, Ollama) return one choice: the missing samples are requested."""
    server.max_candidates = 1
    stack = build_stack(OpenAIJudge(api_key=KEY, base_url=server.url), retry=FAST)
    reply = asyncio.run(stack.generate(JudgeRequest("local", "p", num_samples=3)))
    assert len(reply.texts) == 3 and [r.candidate_count for r in server.requests] == [3, 1, 1]


def test_429_with_retry_after_is_transient_and_retried(server: FakeOpenAI) -> None:
    """429 carries Retry-After into the error; through the retry layer the second attempt answers."""
    server.fault(429, retry_after="7", message="Rate limit reached")
    judge = OpenAIJudge(api_key=KEY, base_url=server.url)
    with pytest.raises(JudgeCallError) as caught:
        asyncio.run(judge.generate(JudgeRequest("m", "p")))
    assert (caught.value.status, caught.value.transient, caught.value.retry_after) == (429, True, 7.0)
    assert "HTTP 429: Rate limit reached" in str(caught.value)
    server.fault(429, retry_after="0")
    stack = build_stack(judge, retry=FAST)
    reply = asyncio.run(stack.generate(JudgeRequest("m", "p")))
    assert reply.texts == ("fake answer 0",) and reply.usage.requests == 2 and stack.retrying is not None
    assert stack.retrying.retries == 1


@pytest.mark.parametrize(("status", "transient"), [(500, True), (503, True), (401, False), (404, False),
                                                     (400, False)])
def test_status_codes_map_to_transient_or_permanent(server: FakeOpenAI, status: int, transient: bool) -> None:
    server.fault(status, message=f"injected {status}")
    with pytest.raises(JudgeCallError) as caught:
        asyncio.run(OpenAIJudge(api_key=KEY, base_url=server.url).generate(JudgeRequest("m", "p", num_samples=2)))
    assert type(caught.value) is JudgeCallError  # a 400 not about n is not a refusal of n
    assert (caught.value.status, caught.value.transient) == (status, transient)


@pytest.mark.parametrize("body", [b'{"choices": [{"message": ', b"<html>502 Bad Gateway</html>", b'{"object": "x"}',
                                  b'{"choices": null}', b"[1, 2]"])
def test_malformed_bodies_are_transient_errors_not_crashes(server: FakeOpenAI, body: bytes) -> None:
    server.malformed(body)
    with pytest.raises(JudgeCallError, match="malformed answer") as caught:
        asyncio.run(OpenAIJudge(api_key=KEY, base_url=server.url).generate(JudgeRequest("m", "p")))
    assert caught.value.transient


def test_empty_and_refused_choices_are_empty_texts(server: FakeOpenAI) -> None:
    """A choice without text (content null) is an empty answer the verdict parser reports, not an exception."""
    server.malformed(json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                                       "refusal": "I can't help"}}]}).encode())
    server.script(Scripted(texts=[]))
    judge = OpenAIJudge(api_key=KEY, base_url=server.url)
    assert asyncio.run(judge.generate(JudgeRequest("m", "p"))).texts == ("I can't help",)
    assert asyncio.run(judge.generate(JudgeRequest("m", "p"))).texts == ()


def test_timeout(server: FakeOpenAI) -> None:
    server.slow(1.0)
    with pytest.raises(JudgeTimeout, match=r"timed out after 0\.2 s"):
        asyncio.run(OpenAIJudge(api_key=KEY, base_url=server.url, timeout=0.2).generate(JudgeRequest("m", "p")))


def test_unreachable_server_is_transient() -> None:
    with FakeOpenAI() as fake:
        url = fake.url
    with pytest.raises(JudgeCallError, match="cannot reach the server") as caught:
        asyncio.run(OpenAIJudge(api_key=KEY, base_url=url).generate(JudgeRequest("m", "p")))
    assert caught.value.transient


def test_azure_deployment_url_and_key_header(server: FakeOpenAI) -> None:
    """Azure OpenAI: /openai/deployments/{deployment}/chat/completions?api-version=..., the key in ``api-key``."""
    judge = OpenAIJudge(api_key=KEY, azure_endpoint=server.root, api_version="2024-10-21", prefix="azure/")
    reply = asyncio.run(judge.generate(JudgeRequest("azure/judge-deploy", "p", num_samples=2)))
    assert len(reply.texts) == 2
    [rec] = server.requests
    assert (rec.path, rec.model, rec.api_key) == ("/openai/deployments/judge-deploy/chat/completions", "judge-deploy",
                                                  KEY)
    assert "max_completion_tokens" not in rec.body


def test_config_maps_to_chat_parameters(server: FakeOpenAI, caplog: pytest.LogCaptureFixture) -> None:
    """GenerateContentConfig fields become Chat Completions parameters; fields with no counterpart are ignored with
    a warning (once per field), never a crash; a field that is not a generation parameter is refused unsent."""
    config = {"temperature": 0.2, "top_p": 0.9, "max_output_tokens": 300, "seed": 7, "stop_sequences": ["END"],
              "response_mime_type": "application/json", "system_instruction": "You are a strict grader.",
              "top_k": 40, "thinking_config": {"thinking_budget": 0}}
    judge = OpenAIJudge(api_key=KEY, base_url=server.url)
    with caplog.at_level(logging.WARNING, logger="evalbot"):
        asyncio.run(judge.generate(JudgeRequest("m", "p", config=config)))
        asyncio.run(judge.generate(JudgeRequest("m", "q", config=config)))
    body = server.requests[0].body
    assert body["temperature"] == 0.2 and body["top_p"] == 0.9 and body["seed"] == 7 and body["stop"] == ["END"]
    assert body["max_tokens"] == 300 and "max_completion_tokens" not in body  # a custom server: max_tokens
    assert body["response_format"] == {"type": "json_object"}
    assert body["messages"][0] == {"role": "system", "content": "You are a strict grader."}
    assert not {"top_k", "thinking_config"} & set(body)
    warnings = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert len(warnings) == 1 and "thinking_config" in warnings[0] and "top_k" in warnings[0]
    sent = len(server.requests)
    for refused in ({"made_up_field": {"x": [1]}}, {"extra_body": {"messages": []}}, {"http_options": {"base_url": "x"}}):
        with pytest.raises(JudgeCallError, match=f"{next(iter(refused))}.*not a generation parameter"):
            asyncio.run(judge.generate(JudgeRequest("m", "p", config={**config, **refused})))
    assert len(server.requests) == sent
    params, ignored = chat_parameters({"max_output_tokens": 10, "response_json_schema": {"type": "object"},
                                       "temperature": "hot"}, 1)
    assert params == {"max_completion_tokens": 10, "response_format": {
        "type": "json_schema", "json_schema": {"name": "judge_answer", "schema": {"type": "object"}}}}
    assert ignored == ["temperature"]  # a value of the wrong type is not sent either


def test_the_key_echoed_by_a_server_is_masked(server: FakeOpenAI) -> None:
    """A proxy echoing the key in an error or an answer never puts it in evalbot's output."""
    server.fault(401, message=f"Incorrect API key provided: {KEY}")
    judge = OpenAIJudge(api_key=KEY, base_url=server.url)
    with pytest.raises(JudgeCallError) as caught:
        asyncio.run(judge.generate(JudgeRequest("m", "p")))
    assert KEY not in str(caught.value) and "***" in str(caught.value)
    server.responder = lambda prompt, i, rec: f"my key is {KEY}"
    assert asyncio.run(judge.generate(JudgeRequest("m", "p"))).texts == ("my key is ***",)


def test_environment_routes_models_to_their_backend(tmp_path: Path) -> None:
    """openai/<model> goes to OPENAI_BASE_URL, azure/<deployment> to AZURE_OPENAI_ENDPOINT, other names to Gemini;
    each server sees only its own requests and its own key."""
    with FakeOpenAI() as oa, FakeOpenAI() as az, FakeGemini() as gem:
        env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": oa.url, "AZURE_OPENAI_API_KEY": "az-key-123",
               "AZURE_OPENAI_ENDPOINT": az.root, "OPENAI_API_VERSION": "2024-10-21",
               "GOOGLE_API_KEY": "gk-123456", "GOOGLE_GEMINI_BASE_URL": gem.url}
        judge, notice = judge_from_environ(env, retry=FAST)
        assert judge is not None and notice is None
        for model in ("openai/gpt-4.1-mini", "azure/dep", "gemini-2.5-flash"):
            asyncio.run(judge.generate(JudgeRequest(model, "p", num_samples=2, purpose="c")))
        assert [(r.model, r.api_key) for r in oa.requests] == [("gpt-4.1-mini", KEY)]
        assert [(r.model, r.api_key) for r in az.requests] == [("dep", "az-key-123")]
        assert [(r.model, r.api_key) for r in gem.requests] == [("gemini-2.5-flash", "gk-123456")]
        summary = judge.usage_summary()
        assert summary.per_criterion["c"].requests == 3
        assert summary.per_criterion["c"].models == ["azure/dep", "gemini-2.5-flash", "openai/gpt-4.1-mini"]


def test_a_base_url_alone_serves_every_model_name_and_prices_none(server: FakeOpenAI) -> None:
    """OPENAI_BASE_URL without a Gemini key: every judge model (ADK's default gemini-2.5-flash too) goes to that
    server under its own name, with no key of ours; its cost is unknown (None), never 0."""
    judge, _ = judge_from_environ({"OPENAI_BASE_URL": server.url}, retry=FAST)
    assert judge is not None
    asyncio.run(judge.generate(JudgeRequest("gemini-2.5-flash", "p", purpose="c")))
    asyncio.run(judge.generate(JudgeRequest("openai/gpt-4.1-mini", "p", purpose="c")))
    assert [r.model for r in server.requests] == ["gemini-2.5-flash", "gpt-4.1-mini"]
    summary = judge.usage_summary()
    assert summary.total.estimated_cost_usd is None and summary.per_criterion["c"].estimated_cost_usd is None
    call = JudgeCall(judge, JudgeModelOptions(judge_model="gemini-2.5-flash"), "c")  # a case's details: unknown too
    asyncio.run(call.ask("p"))
    assert call.tally.details()["judge"]["estimated_cost_usd"] is None and call.tally.usage.requests == 1
    priced, _ = judge_from_environ({"GOOGLE_API_KEY": "gk-123456", "OPENAI_BASE_URL": server.url})
    assert priced is not None and priced.estimated_cost(Usage(10, 10), "gemini-2.5-flash") is not None
    assert priced.estimated_cost(Usage(10, 10), "openai/gpt-4.1") is None  # served by that other server


def test_unconfigured_backends_fail_the_request_with_what_to_set(server: FakeOpenAI) -> None:
    """An OpenAI key alone: a Gemini model name (the default judge) and an azure/ name fail permanently, naming
    the variables to set; nothing is sent."""
    assert judge_from_environ({"AZURE_OPENAI_ENDPOINT": "https://x"})[1] == MISSING_CREDENTIALS  # no key: no judge
    judge, _ = judge_from_environ({"OPENAI_API_KEY": KEY}, retry=FAST)
    assert judge is not None
    with pytest.raises(JudgeCallError, match="no Gemini credentials") as caught:
        asyncio.run(judge.generate(JudgeRequest("gemini-2.5-flash", "p")))
    assert not caught.value.transient
    with pytest.raises(JudgeCallError, match="AZURE_OPENAI_ENDPOINT"):
        asyncio.run(judge.generate(JudgeRequest("azure/dep", "p")))
    gemini_only, _ = judge_from_environ({"GOOGLE_API_KEY": "gk-123456"}, retry=FAST)
    assert gemini_only is not None
    with pytest.raises(JudgeCallError, match="OPENAI_API_KEY"):
        asyncio.run(gemini_only.generate(JudgeRequest("openai/gpt-4.1", "p")))


def test_openai_prices_and_unknown_models() -> None:
    price = shipped_prices().price
    mini, full = price("openai/gpt-4.1-mini"), price("openai/gpt-4.1")
    assert mini is not None and (mini.input, mini.output) == (0.40, 1.60)
    assert full is not None and (full.input, full.output) == (2.0, 8.0)
    assert price("azure/my-deployment") is None and price("llama3") is None
    assert estimated_cost(Usage(1_000_000, 1_000_000), "openai/gpt-4o-mini") == pytest.approx(0.75)
    assert estimated_cost(Usage(10, 10), "azure/gpt-4o") is None
    ledger = UsageLedger()
    ledger.record("c", "gemini-2.5-flash", Usage(10, 10, 1))
    ledger.record("c", "openai/gpt-4.1", Usage(10, 10, 1))
    assert ledger.summary().prices == shipped_prices().note()  # one table, dated, for every provider


def test_cached_answers_never_import_openai(server: FakeOpenAI, tmp_path: Path) -> None:
    """A run answered from the cache (or replayed) never imports the openai client; the first miss does."""
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": server.url, "EVALBOT_JUDGE_CACHE": str(tmp_path)}
    seeded, _ = judge_from_environ(env, retry=FAST)
    assert seeded is not None
    asyncio.run(seeded.generate(JudgeRequest("openai/m", "p", num_samples=2)))
    script = (
        "import asyncio, json, sys\n"
        "from evalbot.judges.base import JudgeRequest\n"
        "from evalbot.judges.factory import judge_from_environ\n"
        "judge, _ = judge_from_environ(json.loads(sys.argv[1]))\n"
        "hit = asyncio.run(judge.generate(JudgeRequest('openai/m', 'p', num_samples=2)))\n"
        "before = 'openai' in sys.modules\n"
        "replay, _ = judge_from_environ(json.loads(sys.argv[1]), replay=True)\n"
        "again = asyncio.run(replay.generate(JudgeRequest('openai/m', 'p', num_samples=2)))\n"
        "replayed = 'openai' in sys.modules\n"
        "miss = asyncio.run(judge.generate(JudgeRequest('openai/m', 'other', num_samples=2)))\n"
        "print(json.dumps([hit.from_cache, before, again.from_cache, replayed, miss.from_cache,"
        " 'openai' in sys.modules]))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, json.dumps(env)], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == [True, False, True, False, False, True]
    assert len(server.requests) == 2


def test_registered_secret_masks_answers_too(server: FakeOpenAI) -> None:
    """The front ends register OPENAI_API_KEY and AZURE_OPENAI_API_KEY (SECRET_ENV): a judge answer quoting a
    registered key is masked like the Gemini key."""
    from evalbot.judges.factory import SECRET_ENV

    assert {"OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"} <= set(SECRET_ENV)
    register_secret("az-secret-987654")
    try:
        server.responder = lambda prompt, i, rec: "leak az-secret-987654"
        assert asyncio.run(OpenAIJudge(base_url=server.url).generate(JudgeRequest("m", "p"))).texts == ("leak ***",)
    finally:
        forget_secrets()


def test_responder_errors_use_openai_error_bodies(server: FakeOpenAI) -> None:
    """The fake's own check: a responder's FakeError reaches the client as OpenAI's error shape."""
    def fail(prompt: str, i: int, rec: object) -> str:
        raise FakeError(503, "overloaded", retry_after="2")

    server.responder = fail
    with pytest.raises(JudgeCallError, match="HTTP 503: overloaded") as caught:
        asyncio.run(OpenAIJudge(base_url=server.url).generate(JudgeRequest("m", "p")))
    assert caught.value.retry_after == 2.0
