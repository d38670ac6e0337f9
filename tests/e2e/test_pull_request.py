"""Pull request runs end to end: comment created then edited in place, regression gate, fork degradation."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.conftest import BASE_SHA, BASELINE, MARK, Action, make_baseline, pull_request_event
from tests.fakes.fake_github import READ_ONLY_TOKEN, FakeGitHub


def test_baseline_mode_writes_the_file_it_measured(baseline_text: str) -> None:
    """Mode baseline wrote main's scores with the commit it measured (the other tests compare with it)."""
    data = json.loads(baseline_text)
    assert data["commit"] == BASE_SHA and "shop" in data["eval_sets"]


def test_comment_created_then_edited_in_place_and_the_gate_blocks(action: Action, baseline_text: str) -> None:
    """Passing PR: exit 0 and one comment; regressing push to it: exit 1, the same comment edited, annotations."""
    make_baseline(action, baseline_text)
    ok = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert ok.code == 0, ok.stdout + ok.stderr
    (comment,) = action.github.comments_on(7)
    first_body = comment.body
    assert first_body.startswith(MARK) and comment.login == "github-actions[bot]"
    assert ok.outputs["verdict"] == "passed" and ok.outputs["regressed"] == "0"
    assert ok.outputs["comment-url"].endswith(f"#issuecomment-{comment.id}")
    assert action.github.calls("repos/get-content") >= 1  # baseline read through the API at base.sha

    bad = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert bad.code == 1, bad.stdout + bad.stderr
    assert bad.outputs["verdict"] == "blocked" and bad.outputs["regressed"] == "1"
    assert [c.id for c in action.github.comments_on(7)] == [comment.id]
    edited = action.github.comments[comment.id].body
    assert edited != first_body and edited.startswith(MARK) and "refund" in edited
    assert action.github.calls("issues/update-comment") == 1
    assert action.github.calls("issues/create-comment") == 1
    regression = [a for a in bad.annotations() if "title=Regression" in a]
    assert regression and regression[0].startswith("::error file=evals/shop.evalset.json,line=")
    assert "refund" in bad.summary


def test_rerun_with_the_same_result_does_not_edit(action: Action, baseline_text: str) -> None:
    """A re-run that renders the same comment sends no PATCH."""
    make_baseline(action, baseline_text)
    action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    again = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert again.code == 0 and len(action.github.comments_on(7)) == 1
    assert action.github.calls("issues/update-comment") == 0


def test_fork_pull_request_degrades_to_the_job_summary(action: Action, baseline_text: str) -> None:
    """Read-only token and no judge key: no comment, a clear notice, judged criteria not_evaluated, no crash."""
    make_baseline(action, baseline_text)
    run = action.run(
        "pull_request",
        pull_request_event(fork=True),
        inputs={"actuals": "actuals/good.json"},
        token=READ_ONLY_TOKEN,
        judge_key=None,
    )
    assert run.code == 0, run.stdout + run.stderr
    assert action.github.comments_on(7) == []
    assert run.outputs["comment-url"] == "" and run.outputs["verdict"] == "passed"
    assert "could not comment on this pull request" in run.summary
    assert any(line.startswith("::warning") and "read-only" in line for line in run.commands)
    report = json.loads((run.workspace / ".evalbot-out" / "report.json").read_text())
    assert any("no judge credentials" in n for n in report["notices"])
    judged = [c["metrics"]["final_response_match_v2"]["status"] for c in report["eval_sets"][0]["cases"]]
    assert judged == ["not_evaluated"] * 3


def test_baseline_falls_back_to_git_show_when_the_api_refuses(
    action: Action, github: FakeGitHub, baseline_text: str
) -> None:
    """If the contents API cannot be used, the baseline is read with git show at base.sha from the checkout."""
    text = make_baseline(action, baseline_text)
    github.files.clear()
    ws = action.workspace
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    (ws / BASELINE).parent.mkdir(exist_ok=True)
    (ws / BASELINE).write_text(text)
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=ws, check=True)
    base = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, check=True, capture_output=True, text=True)
    (ws / BASELINE).unlink()  # the PR deleted it in its own tree: only base.sha counts
    github.fail("GET", r"/contents/", 403, body={"message": "Resource not accessible by integration"}, times=5)
    payload = pull_request_event()
    payload["pull_request"]["base"]["sha"] = base.stdout.strip()
    run = action.run("pull_request", payload, inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr  # the regression was found against the git baseline
    assert run.outputs["regressed"] == "1"


def test_missing_baseline_reports_absolute_scores_and_blocks(action: Action) -> None:
    """No baseline at base.sha: absolute scores, exit 1 (nothing to compare with is not a pass; see
    test_no_baseline.py), and the comment says how to create one."""
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert "evalbot baseline evals --actuals actuals/regressed.json" in action.github.comments_on(7)[0].body


def test_workspace_is_left_with_report_and_junit(action: Action) -> None:
    """The report and JUnit files land in the workspace for upload-artifact and other CI systems."""
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    out = Path(run.workspace) / ".evalbot-out"
    assert (out / "report.json").is_file() and (out / "junit.xml").is_file()


def test_api_outage_with_a_depth_1_checkout_fails_closed(action: Action, baseline_text: str) -> None:
    """The contents API keeps answering 503 and the checkout is depth 1 (it lacks base.sha, so git says the path
    "does not exist in" it): the baseline is unreadable, not absent. Verdict error, exit 3, the cause in the
    comment's headline, the job summary and an error annotation; never "no baseline" with exit 0."""
    make_baseline(action, baseline_text)
    ws = action.workspace
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "-A"], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "merge commit (depth 1: no parents here)"], cwd=ws, check=True)
    action.github.fail("GET", r"/contents/", 503, headers={"Retry-After": "1"}, times=100)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 3, run.stdout + run.stderr
    assert run.outputs["verdict"] == "error"
    (comment,) = action.github.comments_on(7)
    headline = comment.body.splitlines()[1]
    assert headline.startswith("### ⛔ evalbot: could not measure, not passing: baseline unreadable"), headline
    print(comment.body)
    assert "is not in this checkout" in comment.body and "No baseline at" not in comment.body
    assert "baseline unreadable" in run.summary and "is not in this checkout" in run.summary
    assert any("baseline unreadable" in a and "HTTP 503" in a for a in run.annotations("error"))


def requests_logged(run_stdout: str) -> int:
    """The request count the run printed as a ::debug:: line."""
    (line,) = [x for x in run_stdout.splitlines() if x.startswith("::debug::evalbot: ") and "GitHub API" in x]
    return int(line.split()[1])


def test_api_requests_are_counted_and_minimal(action: Action, baseline_text: str) -> None:
    """A PR run lists the eval-sets folder at base.sha (where its eval sets and their configs are), reads the gate
    settings (test_config.json) and the baseline there, lists the comments and creates one (then lists again: another
    run may have raced it), or edits it on a re-run; never GET /user. The count is logged at debug level and matches
    what GitHub (the fake) received."""
    make_baseline(action, baseline_text)
    first = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert first.code == 0, first.stdout + first.stderr
    assert requests_logged(first.stdout) == len(action.github.exchanges) == 6
    second = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert second.code == 1
    assert requests_logged(second.stdout) == len(action.github.exchanges) - 6 == 5
    ops = [e.operation for e in action.github.exchanges]
    reads = ["repos/get-content"] * 3  # the eval-sets folder, the config's gate settings, then the baseline
    first_ops = [*reads, "issues/list-comments", "issues/create-comment", "issues/list-comments"]
    assert ops == [*first_ops, *reads, "issues/list-comments", "issues/update-comment"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the container runs as root; handing files over needs root")
def test_files_written_into_the_workspace_belong_to_its_owner(action: Action, baseline_text: str) -> None:
    """As in the container (root) with a workspace owned by the runner's user (uid 1001): every file and directory
    evalbot created there is owned by 1001 -- after a blocking run and after an invalid-input run alike."""
    make_baseline(action, baseline_text)
    ws = action.workspace
    for path in [ws, *ws.rglob("*")]:
        os.lchown(path, 1001, 1001)
    before = set(ws.rglob("*"))
    bad = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json",
                                                                   "judge-cache": "cache/judge"})
    assert bad.code == 1
    invalid = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/missing.json",
                                                                       "report-path": "out2/deep/report.json"})
    assert invalid.code == 2, invalid.stdout
    made = set(ws.rglob("*")) - before
    assert {p.relative_to(ws).as_posix() for p in made} >= {
        ".evalbot-out", ".evalbot-out/report.json", ".evalbot-out/junit.xml", ".evalbot-out/runs",
        ".evalbot-out/runs/0-regressed.json", "cache", "cache/judge",
        "out2", "out2/deep", "out2/deep/report.json"}
    assert {(p.relative_to(ws).as_posix(), p.lstat().st_uid, p.lstat().st_gid) for p in made} == {
        (p.relative_to(ws).as_posix(), 1001, 1001) for p in made}
