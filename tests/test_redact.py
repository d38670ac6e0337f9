"""Secrets and signed URLs never reach what evalbot writes."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalbot.action import workflow as actions
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.criteria.base import BuildContext
from evalbot.errors import RetryPolicy
from evalbot.forge.base import ForgeError
from evalbot.judges.factory import build_stack
from evalbot.judges.gemini import GeminiJudge
from evalbot.pipeline import evaluate
from evalbot.redact import forget_secrets, register_secret, scrub, scrub_utf8, strip_url_queries
from evalbot.render.comment import comment_marker, render_comment
from evalbot.results import write_report_json
from tests.fakes.fake_gemini import FakeError, FakeGemini, Recorded

DATA = Path(__file__).parent / "e2e" / "data"
KEY = "AIzaSy-not-a-real-key-0123456789"
SIGNED = "https://pipelines.actions.githubusercontent.com/abc/artifact.zip?sig=SECRETSIG&se=2026-01-01"


@pytest.fixture(autouse=True)
def clean_registry() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


def test_a_judge_echoing_the_key_leaks_it_nowhere(tmp_path: Path) -> None:
    """A proxy echoes the key in its 401 error body and in an answer: the report, the comment and the judge cache
    (which stores answers) never contain it, though the key was never registered globally (the backend masks its
    own key at the source)."""
    calls = iter(range(1000))

    def echo(prompt: str, index: int, request: Recorded) -> str:
        if next(calls) == 0:
            raise FakeError(401, f"API key not valid: {request.api_key}")
        return f'{{"reasoning": "key {request.api_key} seen", "is_the_agent_response_valid": "valid"}}'

    cache = tmp_path / "cache"
    with FakeGemini(responder=echo) as fake:
        stack = build_stack(GeminiJudge(api_key=KEY, base_url=fake.url, timeout=5), cache_dir=cache,
                            retry=RetryPolicy(attempts=1))
        report = evaluate([str(DATA / "evals")], actuals=[str(DATA / "actuals" / "good.json")],
                          ctx=BuildContext(judge=stack))
        assert any(r.api_key == KEY for r in fake.requests)  # the key was really sent, and really echoed
    if stack.cache is not None:
        stack.cache.flush()
    out = io.StringIO()
    write_report_json(report, out)
    comment = render_comment(compare(current=report, baseline=None, policy=GatePolicy()), marker=comment_marker())
    cached = "".join(p.read_text() for p in cache.rglob("*.json"))
    assert "API key not valid: ***" in out.getvalue() and "key *** seen" in cached
    for text in (out.getvalue(), comment, cached):
        assert KEY not in text


def test_registered_secrets_are_masked_in_reports_summaries_and_annotations(tmp_path: Path) -> None:
    """Any value registered at the edge (github-token, judge key) is masked by every writer."""
    register_secret("ghs_0123456789abcdef")
    report = evaluate([str(DATA / "evals")], actuals=[str(DATA / "actuals" / "good.json")])
    report.notices.append("a proxy said: token ghs_0123456789abcdef rejected")
    out = io.StringIO()
    write_report_json(report, out)
    assert "token *** rejected" in out.getvalue() and "ghs_0123456789abcdef" not in out.getvalue()
    summary = tmp_path / "summary.md"
    actions.append_summary(summary, "token ghs_0123456789abcdef")
    assert summary.read_text() == "token ***"
    assert json.loads(out.getvalue())["notices"][-1] == "a proxy said: token *** rejected"


def test_urls_in_error_messages_lose_their_query_strings() -> None:
    """A failing artifact download must not put a signed storage URL into an annotation."""
    error = ForgeError("download artifact", f"404 Client Error: Not Found for url: {SIGNED}")
    assert "SECRETSIG" not in str(error) and "artifact.zip?…" in str(error)
    line = actions.annotation("error", str(error), title="evalbot")
    assert "SECRETSIG" not in line and "se=2026" not in line
    assert strip_url_queries("see http://h/x?a=1#frag, ok") == "see http://h/x?…#frag, ok"
    assert scrub("no url here") == "no url here"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        # urllib3's messages for a refused storage connection: the URL has no scheme
        ("Max retries exceeded with url: /abc/artifact.zip?sig=SECRETSIG&se=2026 (Caused by X)",
         "url: /abc/artifact.zip?… (Caused by X)"),
        ("connection broken by 'NewConnectionError()': /abc/artifact.zip?sig=SECRETSIG", ": /abc/artifact.zip?…"),
        ("pipelines.actions.githubusercontent.com/abc/artifact.zip?sig=SECRETSIG&se=2026", "artifact.zip?…"),
        ("host:443/p?sig=SECRETSIG)", "host:443/p?…)"),
        ("storage.example.net?sig=SECRETSIG", "storage.example.net?…"),
    ],
)
def test_url_queries_go_with_or_without_a_scheme(text: str, kept: str) -> None:
    """Issue 24: the signature of a schemeless URL-like text was printed; every such query is dropped now."""
    assert kept in strip_url_queries(text) and "SECRETSIG" not in scrub(text)


def test_text_that_is_not_a_url_keeps_its_question_marks() -> None:
    """A question ending a sentence, even after a slash, and a bare word with ? keep their text."""
    for text in ("and/or? yes", "is it ok?", "a?b"):
        assert strip_url_queries(text) == text


def test_a_huge_token_without_a_query_is_scanned_once() -> None:
    """A 200,000-character word (a judge answer in the cache) next to a real query: the query is still dropped, and
    the path pattern no longer backtracks from every position of the word (it took minutes: test_cache hung)."""
    text = "x" * 200_000 + " https://store.example/a?sig=1 b/c?d=2"
    start = time.perf_counter()
    out = strip_url_queries(text)
    assert time.perf_counter() - start < 2.0
    assert out.endswith(" https://store.example/a?… b/c?…") and out.startswith("x" * 200_000)


@pytest.mark.parametrize("word", ["x?" + "a." * 50_000, "a." * 50_000 + "b/c?sig=SECRETSIG", "?" + "a" * 100_000])
def test_a_huge_token_holding_a_query_is_not_backtracked_through(word: str) -> None:
    """A long dotted or alphanumeric run in a token that also holds a ``?`` made both URL patterns backtrack from
    every position (``x?a.a.a…`` of 100,000 characters: 143 s). Such tokens drop every query-like tail instead."""
    start = time.perf_counter()
    out = scrub(f"before {word} after")
    assert time.perf_counter() - start < 2.0
    assert out.startswith("before ") and out.endswith(" after") and "SECRETSIG" not in out and "?…" in out


def test_short_tokens_keep_the_exact_url_rules() -> None:
    """The fallback is only for long tokens: a short word with ``?`` and no URL before it keeps its text."""
    assert strip_url_queries("x?" + "a." * 20) == "x?" + "a." * 20


@pytest.mark.parametrize("secret", [None, "sk-secret-0123"])
@pytest.mark.parametrize("text", [
    '{"a":"plain text, no query"}', '{"u":"https://x.example/p?sig=abc"}', '{"u":"host/p?sig=abc é"}',
    '{"k":"sk-secret-0123"}', '{"k":"日本 sk-secret-0123 /a?b=c"}', "", "?",
])
def test_scrub_utf8_is_scrub_on_bytes(text: str, secret: str | None) -> None:
    """The bytes form gives scrub's result, with and without a registered secret, with and without a query; a line
    with nothing to scrub comes back as the very same object."""
    if secret:
        register_secret(secret)
    data = text.encode()
    assert scrub_utf8(data) == scrub(text).encode()
    if not secret and "?" not in text:
        assert scrub_utf8(data) is data
