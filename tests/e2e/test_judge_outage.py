"""A judge outage through entrypoint.py: named in the comment's headline, the summary and an annotation; exit 3
with judge-failures block (the default), exit 0 with the warning with judge-failures warn."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import BASE_SHA, Action, pull_request_event
from tests.fakes.fake_gemini import FakeError, Recorded


def bad_key(prompt: str, index: int, request: Recorded) -> str:
    raise FakeError(401, "API key not valid. Please pass a valid API key.")


@pytest.mark.parametrize(("policy", "code", "verdict"), [("", 3, "error"), ("warn", 0, "passed")])
def test_judge_401_is_never_a_silent_pass(action: Action, baseline_text: str, policy: str, code: int,
                                          verdict: str) -> None:
    action.github.put_file(".evalbot/baseline.json", baseline_text, ref=BASE_SHA)
    action.gemini.responder = bad_key
    run = action.run("pull_request", pull_request_event(),
                     inputs={"actuals": "actuals/good.json", "judge-failures": policy})
    assert run.code == code, run.stdout + run.stderr
    assert run.outputs["verdict"] == verdict
    body = action.github.comments_on(7)[0].body
    assert "✅" not in body.splitlines()[1]
    alert = "judge unavailable: 3 of 3 judged verdict(s) not evaluated — judge call failed: HTTP 401"
    assert alert in body and alert in run.summary
    level = "error" if code else "warning"
    assert any(alert in a for a in run.annotations(level)), run.commands
    assert f"evalbot: {level}: {alert}" in run.stdout
