"""Setting up the OpenAI-compatible judge: the openai extra missing is one line saying what to install, and a server
that cannot be reached (or answers 404 for a wrong base URL) is named by its URL, without credentials or query."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from evalbot.errors import RetryPolicy, install_hint
from evalbot.judges.base import JudgeCallError, JudgeRequest
from evalbot.judges.factory import judge_from_environ
from tests.fakes.builders import case, eval_set, inv

pytest.importorskip("openai", reason="the openai client is not installed (pip install -e '.[dev]' installs it)")

from evalbot.judges.openai_chat import OpenAIJudge, shown_endpoint
from tests.fakes.fake_openai import FakeOpenAI

FAST = RetryPolicy(attempts=2, base_delay=0.001, max_delay=0.01, max_retry_after=0.01)
CONFIG = {"criteria": {"final_response_match_v2": {
    "threshold": 0.8, "judge_model_options": {"judge_model": "openai/gpt-4.1-mini", "num_samples": 1}}}}


def test_openai_not_installed_is_one_line_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """OPENAI_API_KEY set, the openai package absent: each judged verdict says in one line what to install (it used
    to be "cannot set up the judge client: ModuleNotFoundError: No module named 'openai'")."""
    (tmp_path / "test_config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    (tmp_path / "s.evalset.json").write_text(json.dumps(eval_set("s", case("c", inv("hi", "Paris")))),
                                             encoding="utf-8")
    (tmp_path / "runs.json").write_text(json.dumps({"c": [inv("hi", "Paris")]}), encoding="utf-8")
    monkeypatch.setitem(sys.modules, "openai", None)  # what a missing package looks like to an import
    monkeypatch.delitem(sys.modules, "evalbot.judges.openai_chat", raising=False)
    monkeypatch.chdir(tmp_path)
    code = main(["run", "s.evalset.json", "--actuals", "runs.json", "--report", "r.json"],
                env={"OPENAI_API_KEY": "sk-test-0123456789"})
    out = capsys.readouterr()
    assert code == 2
    reason = json.loads((tmp_path / "r.json").read_text())["eval_sets"][0]["cases"][0]["metrics"][
        "final_response_match_v2"]["reason"]
    assert install_hint("openai") in reason and "OPENAI_API_KEY" in reason
    assert '-m pip install ' in reason and '[openai]' in reason
    assert "\n" not in reason and "ModuleNotFoundError" not in reason
    assert "ModuleNotFoundError" not in out.out + out.err


@pytest.mark.parametrize(("url", "shown"), [
    ("http://user:secretpw@127.0.0.1:9/v1?token=abc#frag", "http://127.0.0.1:9/v1"),
    ("https://key@llm.example.com/openai/v1", "https://llm.example.com/openai/v1"),
    ("http://[::1]:8000/v1?api-key=s3cret", "http://[::1]:8000/v1"),
    ("http://host:notaport/v1", "(an invalid URL)"),
])
def test_shown_endpoint_drops_credentials_and_query(url: str, shown: str) -> None:
    assert shown_endpoint(url) == shown


def test_unreachable_base_url_is_named_without_credentials() -> None:
    """A wrong OPENAI_BASE_URL: the judge failure (which the comment's "could not measure" headline quotes) names
    the URL it tried, without the userinfo or query that may hold credentials."""
    with FakeOpenAI() as fake:
        port = fake.url.split(":")[2].split("/")[0]
    env = {"OPENAI_API_KEY": "sk-test-0123456789",
           "OPENAI_BASE_URL": f"http://admin:secretpw@127.0.0.1:{port}/v1?token=tok-123"}
    stack, why = judge_from_environ(env, retry=FAST)
    assert stack is not None and why is None
    with pytest.raises(JudgeCallError) as caught:
        asyncio.run(stack.generate(JudgeRequest("openai/gpt-4.1-mini", "p")))
    message = str(caught.value)
    assert f"cannot reach the server at http://127.0.0.1:{port}/v1 " in message
    assert "secretpw" not in message and "admin" not in message and "tok-123" not in message


def test_404_from_a_wrong_base_path_names_the_url() -> None:
    """A base URL missing its /v1 answers 404 for every model: the message names where it asked."""
    with FakeOpenAI() as fake:
        root = fake.root
        judge = OpenAIJudge(api_key="sk-test-0123456789", base_url=root + "/wrong?sig=zzz")
        with pytest.raises(JudgeCallError) as caught:
            asyncio.run(judge.generate(JudgeRequest("m", "p")))
    assert caught.value.status == 404
    assert f"from {root}/wrong: check the model name and OPENAI_BASE_URL" in str(caught.value)
    assert "sig=zzz" not in str(caught.value)
