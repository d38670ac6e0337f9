"""Missing judge credentials block where secrets are expected (issue 23, item 5): a same-repository pull request, a
push and a merge queue without the judge's key are a judge failure (verdict error, exit 3) naming what to set; only
a fork's first stage, whose secrets GitHub withholds, keeps the warning."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Action, event, make_baseline, pull_request_event
from tests.fakes.fake_github import READ_ONLY_TOKEN

WHAT_TO_SET = ("the judge-api-key and openai-api-key inputs are empty (a secret that is not set, or misnamed in the "
               "workflow, reads as empty) and no judge variable is set (GOOGLE_API_KEY or GEMINI_API_KEY; "
               "OPENAI_API_KEY or OPENAI_BASE_URL; AZURE_OPENAI_API_KEY with AZURE_OPENAI_ENDPOINT; "
               "GOOGLE_GENAI_USE_VERTEXAI with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION)")


@pytest.mark.parametrize("judge_key", [None, ""], ids=["secret-missing", "secret-misnamed"])
def test_same_repo_pull_request_without_the_judge_key_is_a_judge_failure(
    action: Action, baseline_text: str, judge_key: str | None
) -> None:
    """``judge-api-key: ${{ secrets.GEMINI_KEY }}`` when the secret is GEMINI_API_KEY reads as empty, exactly like a
    missing secret: the judged criterion is never measured, so a judged regression could not be seen. Exit 3, the
    headline says so, and the whole message (inputs and variables to set) is shown, not cut mid-word."""
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"},
                     judge_key=judge_key)
    assert run.code == 3, run.stdout + run.stderr
    assert run.outputs["verdict"] == "error"
    body = action.github.comments_on(7)[0].body
    headline = body.splitlines()[1]
    assert headline == "### ⛔ evalbot: could not measure, not passing: judge credentials missing", headline
    assert ("judge credentials missing: 3 of 3 judged verdict(s) not evaluated — no judge credentials: "
            + WHAT_TO_SET + " (judge-failures: block)").replace("_", "\\_") in body
    assert "no regressions" not in headline
    assert any("judge credentials missing" in a for a in run.annotations()), run.stdout
    assert "could not measure, not passing: judge credentials missing" in run.summary


def test_judge_failures_warn_lets_the_missing_key_pass_with_the_warning(action: Action, baseline_text: str) -> None:
    """``judge-failures: warn`` treats the missing key as it treats an outage: exit 0, never a plain pass."""
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(),
                     inputs={"actuals": "actuals/good.json", "judge-failures": "warn"}, judge_key=None)
    assert run.code == 0, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    assert body.splitlines()[1].startswith("### ⚠️ evalbot: no regressions in what was measured")
    assert "judge credentials missing: 3 of 3" in body and "judge-failures: warn" in body


def test_fork_first_stage_keeps_the_warning(action: Action, baseline_text: str) -> None:
    """A fork's pull_request run has no secrets by design: the judged criteria are a warning, exit 0."""
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(fork=True), inputs={"actuals": "actuals/good.json"},
                     token=READ_ONLY_TOKEN, judge_key=None)
    assert run.code == 0, run.stdout + run.stderr
    assert "judged criteria not measured: 3 of 3 judged verdict(s) not evaluated" in run.summary
    assert "(not blocking; regressions on these criteria cannot be detected)" in run.summary
    assert "judge credentials missing" not in run.summary


def test_push_without_the_judge_key_is_a_judge_failure(action: Action) -> None:
    """A push (e.g. to main, without update-baseline) has its secrets: no key there is exit 3 too."""
    run = action.run("push", event("push"), inputs={"actuals": "actuals/good.json"}, ref="refs/heads/main",
                     sha="e" * 40, judge_key=None)
    assert run.code == 3, run.stdout + run.stderr
    assert "could not measure, not passing: judge credentials missing" in run.summary
    report = json.loads((run.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    assert {c["metrics"]["final_response_match_v2"]["status"] for c in report["eval_sets"][0]["cases"]} == {
        "not_evaluated"}


def test_baseline_mode_without_the_judge_key_writes_nothing(action: Action) -> None:
    """mode baseline: exit 3 and no file (a baseline without the judged verdicts would leave them uncompared)."""
    run = action.run("push", event("push"), inputs={"actuals": "actuals/good.json", "mode": "baseline"},
                     ref="refs/heads/main", sha="e" * 40, judge_key=None)
    assert run.code == 3, run.stdout + run.stderr
    assert not (action.workspace / ".evalbot" / "baseline.json").exists()
    assert "judge credentials missing" in run.summary
