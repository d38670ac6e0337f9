"""The Action judging through an OpenAI-compatible server (its openai-api-key and openai-base-url inputs), through
entrypoint.py, the real openai client and the fake Chat Completions server: verdicts given, the key sent only to
the judge and never shown; a bad base URL is an input error naming the input."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import BASE_SHA, Action, pull_request_event
from tests.fakes.fake_openai import FakeOpenAI

pytest.importorskip("openai", reason="the openai client is not installed (pip install -e '.[dev]' installs it)")

KEY = "sk-e2e-secret-0123456789"


def test_openai_inputs_judge_and_the_key_stays_secret(action: Action, baseline_text: str) -> None:
    action.github.put_file(".evalbot/baseline.json", baseline_text, ref=BASE_SHA)
    with FakeOpenAI(api_key=KEY) as server:
        echo = json.dumps({"reasoning": f"same facts (key {KEY})", "is_the_agent_response_valid": "valid"})
        server.responder = lambda prompt, index, request: echo  # a judge echoing the key
        run = action.run("pull_request", pull_request_event(), judge_key=None,
                         inputs={"actuals": "actuals/good.json", "openai-api-key": KEY,
                                 "openai-base-url": server.url})
    assert run.code == 0, run.stdout + run.stderr
    assert len(server.requests) == 3 and {r.api_key for r in server.requests} == {KEY}
    assert {r.model for r in server.requests} == {"gemini-2.5-flash"}  # no Gemini key: the server takes every name
    report_text = (run.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8")
    report = json.loads(report_text)
    statuses = [c["metrics"]["final_response_match_v2"]["status"] for c in report["eval_sets"][0]["cases"]]
    assert statuses == ["passed"] * 3
    assert report["usage"]["total"]["requests"] == 3 and report["usage"]["total"]["estimated_cost_usd"] is None
    assert f"::add-mask::{KEY}" in run.stdout  # the runner is told to mask it in its own log
    shown = run.stdout.replace(f"::add-mask::{KEY}", "") + run.stderr + run.summary + report_text
    shown += "".join(c.body for c in action.github.comments_on(7))
    at = shown.find(KEY)
    assert at < 0, shown[max(0, at - 300): at + 100]
    assert "(key ***)" in report_text


@pytest.mark.parametrize("url", ["ftp://example.com/v1", "localhost:8000", "http://user:pa55word@example.com/v1",
                                 "http://exa mple.com"])
def test_a_bad_base_url_is_an_input_error(action: Action, url: str) -> None:
    run = action.run("pull_request", pull_request_event(), inputs={"openai-base-url": url})
    assert run.code == 2, run.stdout + run.stderr
    assert any("input openai-base-url:" in a for a in run.annotations("error")), run.commands
    assert "pa55word" not in run.stdout + run.stderr
