"""Issue 37, row 7: a fork's pull request gets a trusted, blocking verdict. The fork's first stage runs without
secrets, so a regression only the judge sees passes there; the trusted ``workflow_run`` stage re-measures the runs
with its judge and sets its verdict as the ``evalbot`` commit status on the PR's head commit (the check branch
protection requires), and exits with the verdict's code. Through entrypoint.py, the fake GitHub (statuses served
as GitHub's OpenAPI description says) and the fake Gemini."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    BASE_SHA,
    HEAD_SHA,
    REPO,
    RUN_ID,
    Action,
    measure_baseline,
    pr_actuals,
    pull_request_event,
    uploaded,
    workflow_run_event,
)
from tests.fakes.fake_gemini import FakeGemini, Recorded
from tests.fakes.fake_github import NO_STATUSES_TOKEN, READ_ONLY_TOKEN, FakeGitHub, Pull

VALID = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'
INVALID = '{"reasoning": "it refuses", "is_the_agent_response_valid": "invalid"}'
REGRESSED = "Hello! How can I help you with your orders today? I will not help you."
"""Still close to the reference text (response_match_score passes): only the judge sees the regression."""
THIS_RUN = f"https://github.com/{REPO}/actions/runs/4242"


def judge(prompt: str, index: int, request: Recorded) -> str:
    return INVALID if "I will not help you" in prompt else VALID


@pytest.fixture
def action(tmp_path: Path, github: FakeGitHub) -> Iterator[Action]:
    with FakeGemini(responder=judge) as gemini:
        yield Action(tmp_path, github, gemini)


def fork_first_stage(action: Action, actuals: str) -> str:
    """The fork's pull_request run (read-only token, no judge key); its upload becomes the artifact. Returns its
    job summary."""
    statuses = len(action.github.statuses)
    run = action.run("pull_request", pull_request_event(fork=True), inputs={"actuals": actuals},
                     token=READ_ONLY_TOKEN, judge_key=None)
    assert run.code == 0, run.stdout + run.stderr  # judged criteria are not measured here: nothing blocks
    assert "fork's first stage, not the gate: passed" in run.stdout
    notices = [c for c in run.commands if c.startswith("::notice") and "Not the merge gate" in c]
    assert notices and f"`evalbot` commit status on {HEAD_SHA[:12]}" in notices[0]
    assert "Not the merge gate" in run.summary and len(action.github.statuses) == statuses  # the fork sets none
    action.github.artifacts.clear()
    action.github.add_artifact(RUN_ID, "evalbot-report", uploaded(run.workspace / ".evalbot-out"))
    if not action.github.pulls:
        action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="feature", head_owner="forker"))
    return run.summary


def trusted_stage(action: Action, **kw: object) -> object:
    return action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run", **kw.pop("inputs", {})},
                      judge_key="fake-gemini-key", sha="d" * 40, ref="refs/heads/main", **kw)  # type: ignore[arg-type]


def test_a_judged_regression_of_a_fork_fails_the_evalbot_status(action: Action) -> None:
    """Before: the first stage (the only check) passed and the trusted stage said "blocked" but exited 0 and set no
    status. Now the trusted stage sets `evalbot` pending, then failure on the head commit, linked to its run, and
    exits 1; the honest control (the fork's runs match main's) gets success and exit 0."""
    measure_baseline(action)
    fork_first_stage(action, pr_actuals(action, REGRESSED))
    run = trusted_stage(action)
    assert run.code == 1, run.stdout + run.stderr  # type: ignore[attr-defined]
    assert run.outputs["verdict"] == "blocked"  # type: ignore[attr-defined]
    assert [(s.sha, s.context, s.state) for s in action.github.statuses] == [
        (HEAD_SHA, "evalbot", "pending"), (HEAD_SHA, "evalbot", "failure")]
    final = action.github.statuses[-1]
    assert final.description is not None and final.description.startswith("blocked: 1 regressed")
    assert final.target_url == THIS_RUN
    (comment,) = action.github.comments_on(7)
    assert "The merge gate is the `evalbot` commit status" in comment.body and "greeting" in comment.body

    fork_first_stage(action, "actuals/good.json")  # the fork pushes a fix (same head in this fake)
    honest = trusted_stage(action)
    assert honest.code == 0 and honest.outputs["verdict"] == "passed", honest.stdout  # type: ignore[attr-defined]
    status = action.github.status_of(HEAD_SHA, "evalbot")
    assert status is not None and status.state == "success" and status.description == "no regressions"


def test_without_statuses_write_the_trusted_stage_fails_naming_the_permission(action: Action, github: FakeGitHub
                                                                               ) -> None:
    """The trusted job lacks `statuses: write`: exit 3 and an error naming the permission, before any judge call;
    never a silent pass."""
    measure_baseline(action)
    fork_first_stage(action, "actuals/good.json")
    asked = len(action.gemini.requests)
    run = trusted_stage(action, token=NO_STATUSES_TOKEN)
    assert run.code == 3 and run.outputs["verdict"] == "error", run.stdout  # type: ignore[attr-defined]
    (error,) = [a for a in run.annotations() if "evalbot status" in a]  # type: ignore[attr-defined]
    assert "permissions: statuses: write" in error and "HTTP 403" in error
    assert github.statuses == [] and len(action.gemini.requests) == asked and github.comments_on(7) == []


def test_an_artifact_that_cannot_be_measured_is_an_error_status(action: Action, github: FakeGitHub) -> None:
    """An artifact that cannot be re-measured (a report of no case) or is refused (keys evalbot never writes) sets
    `error`, never leaves the check pending or green; another configuration's comment-id has its own context."""
    measure_baseline(action)
    fork_first_stage(action, "actuals/good.json")
    github.artifacts.clear()
    github.add_artifact(RUN_ID, "evalbot-report", {"report.json": b"{}"})
    empty = trusted_stage(action)
    assert empty.code == 3, empty.stdout  # type: ignore[attr-defined]
    status = github.status_of(HEAD_SHA, "evalbot")
    assert status is not None and status.state == "error" and status.description is not None
    assert status.description.startswith("could not measure: artifact evalbot-report is empty")
    github.artifacts.clear()
    github.add_artifact(RUN_ID, "evalbot-report", {"report.json": b'{"eval_sets": [], "pwned": true}'})
    tampered = trusted_stage(action, inputs={"comment-id": "suite-b"})
    assert tampered.code == 2, tampered.stdout  # type: ignore[attr-defined]
    other = github.status_of(HEAD_SHA, "evalbot/suite-b")
    assert other is not None and other.state == "error" and "not an evalbot report" in (other.description or "")
    assert all(len(s.description or "") <= 140 for s in github.statuses)
