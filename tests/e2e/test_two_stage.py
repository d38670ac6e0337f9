"""Fork-safe flow end to end: the fork's run leaves a report artifact, the workflow_run stage comments."""

from __future__ import annotations

import json
import socket

import pytest

from tests.e2e.conftest import (
    BASE_SHA,
    BASELINE,
    HEAD_SHA,
    MARK,
    REPO,
    RUN_ID,
    Action,
    evalbot,
    event,
    first_stage,
    main_file,
    uploaded,
    what_to_do,
    workflow_run_event,
)
from tests.fakes.fake_github import Pull
from tests.fakes.fake_github_routes import STORAGE_SIGNATURE
from tests.forge.malformed_zips import BROKEN_DIRECTORY, MALFORMED


def test_second_stage_posts_the_fork_comment_and_edits_it_later(action: Action, baseline_text: str) -> None:
    """workflow_run: artifact downloaded, PR found by head sha, comment created; a later run edits it."""
    first_stage(action, "actuals/good.json", baseline_text)
    run = action.run(
        "workflow_run",
        workflow_run_event(),
        inputs={"mode": "workflow_run"},
        judge_key=None,
        sha="d" * 40,
        ref="refs/heads/main",
    )
    assert run.code == 0, run.stdout + run.stderr
    assert action.github.calls("issues/create-comment", status=201) == 1
    (comment,) = action.github.comments_on(7)
    assert comment.body.startswith(MARK) and f"/{REPO}/actions/runs/{RUN_ID}" in comment.body
    assert run.outputs["comment-url"].endswith(f"#issuecomment-{comment.id}")
    assert action.github.calls("blob") == 1  # the archive, fetched from storage without the token
    assert "could not be rerun" not in comment.body  # nothing flipped: nothing to rerun

    action.github.artifacts.clear()
    first_stage(
        action, "actuals/regressed.json", baseline_text
    )  # the fork pushed a regression; its PATCH is refused too
    again = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=None)
    assert again.code == 1 and again.outputs["verdict"] == "blocked" and again.outputs["regressed"] == "1"
    status = action.github.status_of(HEAD_SHA, "evalbot")  # the merge gate: the head commit's evalbot status
    assert status is not None and status.state == "failure"
    assert [c.id for c in action.github.comments_on(7)] == [comment.id]
    assert "refund" in action.github.comments[comment.id].body
    assert action.github.calls("issues/create-comment", status=201) == 1
    # re-measured from recorded runs, like every such comparison: it says the flipped case could not be rerun
    not_rerun = "1 flipped case(s) could not be rerun to tell a real drop from a bad draw: this run scored recorded runs"
    assert not_rerun in action.github.comments[comment.id].body
    assert not_rerun in again.summary


def test_second_stage_matches_the_pr_by_head_repository_branch_and_sha(action: Action, baseline_text: str) -> None:
    """Two open PRs share the fork's head commit (the same commit pushed to a branch of ours, opened later): the
    comment goes to the fork's PR only, matched by head repository, branch and sha (the sha alone picked the newest
    PR); without a head branch in the event nothing is guessed."""
    first_stage(action, "actuals/good.json", baseline_text)
    action.github.add_pull(Pull(8, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="copy", head_owner="octo-org"))
    action.github.add_pull(Pull(9, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="feature", head_owner="octo-org"))
    run = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=None)
    assert run.code == 0, run.stdout + run.stderr
    assert len(action.github.comments_on(7)) == 1
    assert action.github.comments_on(8) == [] and action.github.comments_on(9) == []
    assert f"Results for commit `{HEAD_SHA[:7]}`" in action.github.comments_on(7)[0].body

    unlabelled = workflow_run_event()
    unlabelled["workflow_run"]["head_branch"] = None
    again = action.run("workflow_run", unlabelled, inputs={"mode": "workflow_run"}, judge_key=None)
    assert again.code == 0 and action.github.comments_on(8) == [] and action.github.comments_on(9) == []
    assert "No single open pull request" in again.stdout


def test_tampered_artifact_is_refused(action: Action, baseline_text: str) -> None:
    """A report with keys evalbot never writes is rejected with an error naming the artifact (exit 2)."""
    first_stage(action, "actuals/good.json", baseline_text)
    action.github.artifacts.clear()
    action.github.add_artifact(RUN_ID, "evalbot-report", {"report.json": b'{"eval_sets": [], "pwned": true}'})
    run = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=None)
    assert run.code == 2 and action.github.comments_on(7) == []
    assert any("artifact evalbot-report" in line and "not an evalbot report" in line for line in run.annotations())


ZIP_ATTACKS = {**MALFORMED, **BROKEN_DIRECTORY}


@pytest.mark.parametrize(
    "kind",
    ["encrypted flag", "compression method 99 (AES)", "truncated data", "corrupt LZMA data", "zip version 9.9",
     "empty member name (IndexError)"],
)
def test_malformed_zip_artifact_is_unusable(action: Action, kind: str) -> None:
    """The trusted stage given a malformed zip: exit 2 with "artifact unusable", no comment (was exit 70; the last
    three, issue 24's corrupt LZMA member, zip version 9.9 and IndexError directory, until issue 24). The other kinds
    take the same path (tests/forge: every kind through the real download)."""
    action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="feature", head_owner="forker"))
    aid = action.github.add_artifact(RUN_ID, "evalbot-report", {})
    action.github.artifacts[aid] = (RUN_ID, "evalbot-report", ZIP_ATTACKS[kind])
    run = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=None)
    assert run.code == 2 and action.github.comments_on(7) == [], run.stdout + run.stderr
    assert any("artifact unusable" in line for line in run.annotations())
    assert "Traceback" not in run.stdout + run.stderr and "evalbot bug" not in run.stdout


def test_refused_artifact_storage_never_prints_the_signature(action: Action) -> None:
    """Issue 24: the storage host refuses the connection; urllib3's message names the URL without a scheme
    ("...with url: /_blobs/artifacts/N.zip?sig=..."), and its sig= query reached the log and the annotation."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    action.github.storage = f"http://localhost:{port}"
    action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="feature", head_owner="forker"))
    action.github.add_artifact(RUN_ID, "evalbot-report", {"report.json": b"{}"})
    run = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=None)
    everything = run.stdout + run.stderr + run.summary + json.dumps(run.outputs)
    assert run.code not in (0, 70) and action.github.comments_on(7) == [], everything
    assert "Connection refused" in everything or "NewConnectionError" in everything, everything
    assert "/_blobs/artifacts/" in everything and ".zip?…" in everything  # the URL is named, its query is not
    assert STORAGE_SIGNATURE not in everything and "se=2099" not in everything


def test_non_pull_request_runs_are_ignored(action: Action) -> None:
    """A workflow_run triggered by a push has no PR to comment on: exit 0, nothing posted."""
    run = action.run("workflow_run", workflow_run_event(event_name="push"), inputs={"mode": "workflow_run"})
    assert run.code == 0 and action.github.calls("actions/list-workflow-run-artifacts") == 0


def test_push_to_main_commits_the_refreshed_baseline_once(action: Action) -> None:
    """update-baseline on the default branch commits through the contents API; each push adds its run to the case
    histories (so a new commit with the same scores commits again), and a re-run of the same commit does not."""
    inputs = {"actuals": "actuals/good.json", "update-baseline": "true"}
    first = action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="e" * 40)
    assert first.code == 0, first.stdout + first.stderr
    assert [(b, p) for b, p, _ in action.github.commits] == [("main", ".evalbot/baseline.json")]
    assert b'"commit": "' + b"e" * 40 in action.github.files[("main", ".evalbot/baseline.json")]
    committed = action.github.files[("main", ".evalbot/baseline.json")]
    (action.workspace / ".evalbot").mkdir(exist_ok=True)
    (action.workspace / ".evalbot" / "baseline.json").write_bytes(committed)  # the re-run checks it out
    same = action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="e" * 40)
    assert same.code == 0 and len(action.github.commits) == 1  # a re-run of the same commit: nothing new
    assert "already has these results" in same.stdout
    following = action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="f" * 40)
    assert following.code == 0 and len(action.github.commits) == 2
    cases = json.loads(action.github.files[("main", ".evalbot/baseline.json")])["eval_sets"]["shop"]["cases"]
    assert {k: c["history"] for k, c in cases.items()} == {"greeting": "PP", "order_status": "PP", "refund": "PP"}
    criteria = json.loads(action.github.files[("main", ".evalbot/baseline.json")])["eval_sets"]["shop"]["criteria"]
    trends = {name: [p["commit"] for p in c["trend"]] for name, c in criteria.items() if "trend" in c}
    assert trends and all(commits == ["e" * 40, "f" * 40] for commits in trends.values()), trends  # the re-run replaced
    topic = action.run("push", event("push"), inputs=inputs, ref="refs/heads/topic")
    assert topic.code == 0 and len(action.github.commits) == 2
    assert "applies only to pushes to the default branch" in topic.summary


def test_push_with_an_unreadable_baseline_keeps_the_history(action: Action) -> None:
    """A push whose checked-out baseline cannot be read (here a forged history) is exit 2 naming the file and
    pointer, and commits nothing: the histories it would have continued are not dropped silently."""
    inputs = {"actuals": "actuals/good.json", "update-baseline": "true"}
    assert action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="e" * 40).code == 0
    data = json.loads(action.github.files[("main", ".evalbot/baseline.json")])
    data["eval_sets"]["shop"]["cases"]["refund"]["history"] = "P" * 11
    (action.workspace / ".evalbot").mkdir(exist_ok=True)
    (action.workspace / ".evalbot" / "baseline.json").write_text(json.dumps(data), encoding="utf-8")
    bad = action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="f" * 40)
    assert bad.code == 2 and len(action.github.commits) == 1, bad.stdout
    assert any("/eval_sets/shop/cases/refund/history" in line for line in bad.annotations())


def test_push_whose_judge_failed_keeps_the_committed_baseline(action: Action) -> None:
    """A push to main during a judge outage, or with the judge key gone, must not commit a baseline whose judged
    verdicts are "not evaluated": every later PR would leave them uncompared, so their regressions could not block."""
    inputs = {"actuals": "actuals/good.json", "update-baseline": "true"}
    assert action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="e" * 40).code == 0
    assert len(action.github.commits) == 1
    keyless = action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="f" * 40, judge_key=None)
    assert keyless.code == 3 and keyless.outputs["verdict"] == "error", keyless.stdout  # asked for, not measured
    assert len(action.github.commits) == 1
    assert "could not measure, not passing: judge credentials missing" in keyless.summary  # a push has secrets
    assert "The baseline was not refreshed: judged criteria not measured" in keyless.summary
    assert any("evalbot baseline" in a and "could not block" in a for a in keyless.annotations())
    action.gemini.responder = lambda prompt, index, request: "no verdict here"
    broken = action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="a" * 40)
    assert broken.code == 3 and len(action.github.commits) == 1  # the judge failed: error, nothing committed
    assert "The baseline was not refreshed: judge unavailable" in broken.summary


def test_the_second_stage_offers_the_selective_accept_command_and_it_runs_verbatim(
        action: Action, baseline_text: str) -> None:
    """A fork's regression, blocked by the second stage: its "What to do" downloads the pull request's recorded runs
    and writes the base commit's baseline with only the regressed case refreshed; that file, committed to the pull
    request, is accepted by the next second stage (the headline names the regression it accepts)."""
    first_stage(action, "actuals/regressed.json", baseline_text)
    run = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"})
    assert run.code == 1, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    command = what_to_do(body)
    download, _, accept = command.partition(" && ")
    assert download == f"gh run download {RUN_ID} --repo {REPO} --name evalbot-report --dir evalbot-pr-runs"
    assert accept == ("evalbot baseline evals --actuals evalbot-pr-runs/runs/0-regressed.json --accept shop/refund "
                      f"--previous {BASE_SHA}:{BASELINE} --output {BASELINE}"), accept
    assert what_to_do(run.summary) == command

    for name, data in uploaded(action.workspace / ".evalbot-out").items():  # what gh run download writes
        target = action.workspace / "evalbot-pr-runs" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    written = evalbot(action, accept, main_file(action, baseline_text))
    assert written.returncode == 0, written.stderr
    action.github.put_file(BASELINE, (action.workspace / BASELINE).read_text(encoding="utf-8"), ref=HEAD_SHA)
    again = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"})
    assert again.code == 0, action.github.comments_on(7)[0].body
    headline = action.github.comments_on(7)[0].body.splitlines()[1]
    assert headline.startswith("### ✅ evalbot: accepted by this PR's baseline update: 1 regression (shop/refund)"), \
        headline


def test_an_artifact_member_name_that_is_no_plain_path_gets_no_command(action: Action, baseline_text: str) -> None:
    """The artifact is the fork's: a recorded-runs file named with shell syntax is still re-measured (under a name
    evalbot chooses), but the trusted comment offers no command naming it."""
    first_stage(action, "actuals/regressed.json", baseline_text)
    files = uploaded(action.workspace / ".evalbot-out")
    files["runs/$(touch pwned) x.json"] = files.pop("runs/0-regressed.json")
    action.github.artifacts.clear()
    action.github.add_artifact(RUN_ID, "evalbot-report", files)
    run = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"})
    assert run.code == 1 and run.outputs["regressed"] == "1", run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    assert "**What to do**" not in body and "pwned" not in body and "gh run download" not in body
