"""Issue 37, row 8: every event whose payload carries a pull request is gated with the base commit's yardstick, as a
pull request is, or mode auto refuses it; a pull request's tree is never measured in push mode against its own
baseline. The attack: the workflow also runs on ``pull_request_review`` (or ``pull_request_review_comment``,
``issue_comment`` on the PR), and the PR's tree carries a baseline measured on its regressed runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import BASELINE, MARK, Action, event, make_baseline, pull_request_event

REVIEW_EVENTS = ("pull_request_review", "pull_request_review_comment")


def plant_pr_baseline(action: Action) -> None:
    """The PR's tree holds a baseline made from its own regressed runs (refund recorded as failing)."""
    made = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": "actuals/regressed.json"},
                      ref="refs/heads/feature")
    assert made.code == 0, made.stdout + made.stderr
    assert (action.workspace / BASELINE).is_file()


def review_event(name: str) -> dict[str, Any]:
    """The pull_request payload as GitHub sends it for a review (``review``) or a review comment (``comment``)."""
    payload = pull_request_event()
    payload["action"] = "submitted" if name == "pull_request_review" else "created"
    extra = {"id": 80, "body": "looks good", "user": {"login": "octocat"}}
    payload["review" if name == "pull_request_review" else "comment"] = extra
    return payload


def issue_comment_event() -> dict[str, Any]:
    """issue_comment on PR #7: the issue names the pull request by URL only, no base or head commit."""
    payload = event("push")
    for key in ("ref", "before", "after", "commits", "head_commit", "compare", "created", "deleted", "forced",
                "base_ref", "pusher"):
        payload.pop(key, None)
    url = "https://api.github.com/repos/octo-org/shop-agent/pulls/7"
    payload.update(action="created", comment={"id": 81, "body": "/evalbot"},
                   issue={"number": 7, "title": "feature", "pull_request": {"url": url}})
    return payload


@pytest.mark.parametrize("name", REVIEW_EVENTS)
def test_review_events_are_gated_with_the_base_commits_baseline(action: Action, baseline_text: str,
                                                                name: str) -> None:
    """Mode auto ran these as push, against the baseline in the PR's tree: without one "⚠️ no baseline", with one
    made from its own regressed runs "✅ no regressions" (exit 0 both). Now they are a pull request run: the
    baseline is read at the base commit, so refund blocks (exit 1); and a baseline in the PR's tree is what it is
    on a pull_request event, the PR's baseline update, whose accepted change is named in the comment."""
    make_baseline(action, baseline_text)
    run = action.run(name, review_event(name), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert "mode pull_request" in run.stdout
    assert run.outputs["verdict"] == "blocked" and run.outputs["regressed"] == "1"
    (comment,) = action.github.comments_on(7)
    assert comment.body.startswith(MARK) and "refund" in comment.body
    assert comment.body.split("\n")[1] == "### ❌ evalbot: blocked: 1 regressed"

    plant_pr_baseline(action)
    as_pr = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    pr_headline = action.github.comments_on(7)[0].body.split("\n")[1]
    planted = action.run(name, review_event(name), inputs={"actuals": "actuals/regressed.json"})
    (comment,) = action.github.comments_on(7)
    headline = comment.body.split("\n")[1]
    assert (planted.code, planted.outputs["verdict"], headline) == (as_pr.code, as_pr.outputs["verdict"], pr_headline)
    assert "accepted by this PR's baseline update" in headline and "no regressions" not in headline
    assert "shop / refund" in comment.body


def test_review_event_control_a_good_pr_still_passes(action: Action, baseline_text: str) -> None:
    """Honest control: a review of a PR whose runs match main's passes, against the base commit's baseline."""
    make_baseline(action, baseline_text)
    run = action.run("pull_request_review", review_event("pull_request_review"),
                     inputs={"actuals": "actuals/good.json"})
    assert run.code == 0 and run.outputs["verdict"] == "passed", run.stdout + run.stderr
    assert "Not the merge gate" not in run.summary  # a same-repository PR's run is its gate


def test_issue_comment_on_a_pull_request_is_refused_in_mode_auto(action: Action, baseline_text: str) -> None:
    """issue_comment on a PR names no base commit, so the yardstick cannot be read there: mode auto refuses it
    (exit 2, naming the event and the modes that fit) instead of a push run on whatever the job checked out."""
    make_baseline(action, baseline_text)
    plant_pr_baseline(action)
    run = action.run("issue_comment", issue_comment_event(), inputs={"actuals": "actuals/regressed.json"},
                     ref="refs/heads/main")
    assert run.code == 2, run.stdout + run.stderr
    (error,) = [a for a in run.annotations() if "input mode" in a]
    assert "issue_comment" in error and "pull request #7" in error and "pull_request_target" in error
    assert run.outputs == {} or run.outputs.get("verdict") != "passed"
    assert action.github.comments_on(7) == []


@pytest.mark.parametrize("name", [*REVIEW_EVENTS, "pull_request"])
def test_mode_push_is_refused_on_a_pull_requests_tree(action: Action, baseline_text: str, name: str) -> None:
    """mode: push, set explicitly on an event that carries a pull request, would measure the PR's tree against its
    own baseline: exit 2 naming the event and the modes that fit."""
    make_baseline(action, baseline_text)
    plant_pr_baseline(action)
    payload = pull_request_event() if name == "pull_request" else review_event(name)
    run = action.run(name, payload, inputs={"actuals": "actuals/regressed.json", "mode": "push"})
    assert run.code == 2, run.stdout + run.stderr
    assert any("input mode" in a and name in a and "pull_request" in a for a in run.annotations()), run.stdout
