"""The Action's ``mode: plan`` and ``only-affected: true`` through entrypoint.py, against the fake GitHub: the
workspace is a real git repository whose main commit is the pull request's base commit (its files published there
in the fake GitHub, as the contents API serves them), with three eval sets mapped to their agents' folders by main's
``affected_by``; the pull request changes the billing agent."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.e2e.conftest import (
    HEAD_SHA,
    MARK,
    RUN_ID,
    Action,
    event,
    pull_request_event,
    uploaded,
    workflow_run_event,
)
from tests.fakes.fake_github import READ_ONLY_TOKEN, Pull
from tests.fakes.selective import NAMES, change, commit_main, git, pr_runs, write_repo

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SETS = sorted(f"evals/{n}/{n}.evalset.json" for n in NAMES)
CARRIED = "2 of 3 eval sets unaffected: carried from main at abc123"


def publish(action: Action, sha: str) -> None:
    """Every file of commit ``sha`` in the fake GitHub at ``sha`` (what the contents API serves there)."""
    for path in git(action.workspace, "ls-tree", "-r", "--name-only", sha).splitlines():
        blob = subprocess.run(["git", "show", f"{sha}:{path}"], cwd=action.workspace, check=True, capture_output=True)
        action.github.put_file(path, blob.stdout, ref=sha)


@pytest.fixture
def base(action: Action, monkeypatch: pytest.MonkeyPatch) -> str:
    """main's commit: three eval sets, their configs with affected_by, the baseline of main's runs; the pull request
    branch checked out, changing the billing agent. Returns main's sha (the pull request's base commit)."""
    shutil.rmtree(action.workspace)
    action.workspace.mkdir()
    write_repo(action.workspace)
    monkeypatch.chdir(action.workspace)
    assert main(["baseline", "evals", "--actuals", "runs/main.json", "--output", ".evalbot/baseline.json",
                 "--commit", "abc123", "--created-at", "2025-06-01T00:00:00+00:00"], env={}) == 0
    sha = commit_main(action.workspace)
    publish(action, sha)
    change(action.workspace, "agents/billing/agent.py")
    return sha


def pr_event(base_sha: str) -> dict[str, Any]:
    payload = pull_request_event()
    payload["pull_request"]["base"]["sha"] = base_sha
    return payload


def test_mode_plan_outputs_the_affected_eval_sets(action: Action, base: str) -> None:
    run = action.run("pull_request", pr_event(base), inputs={"mode": "plan"})
    assert run.code == 0, run.stdout + run.stderr
    assert run.outputs["eval-sets"] == "evals/billing/billing.evalset.json"
    assert "plan: 1 of 3 eval set(s) affected" in run.stdout
    assert "affected: evals/billing/billing.evalset.json: agents/billing/agent.py changed (affected_by " \
           "agents/billing/**)" in run.stdout
    assert "evalbot plan: 1 of 3 eval set(s) affected" in run.summary and "unaffected" in run.summary
    assert action.github.comments_on(7) == []  # nothing is evaluated, nothing published


def test_mode_plan_with_an_unmapped_change_outputs_every_eval_set(action: Action, base: str) -> None:
    change(action.workspace, "Dockerfile", "FROM scratch\n")
    run = action.run("pull_request", pr_event(base), inputs={"mode": "plan"})
    assert run.code == 0 and run.outputs["eval-sets"].splitlines() == SETS, run.stdout + run.stderr
    assert "Dockerfile changed: no affected_by mapping covers it" in run.stdout


def test_mode_plan_on_a_push_outputs_every_eval_set(action: Action, base: str) -> None:
    run = action.run("push", event("push"), inputs={"mode": "plan"}, ref="refs/heads/main")
    assert run.code == 0 and run.outputs["eval-sets"].splitlines() == SETS, run.stdout + run.stderr
    assert "not a pull request" in run.stdout


def missing_base(action: Action, base: str) -> str:
    """A base commit the checkout lacks (actions/checkout's depth of 1), its files published in the fake GitHub."""
    missing = "d" * 40
    for (ref, path), content in list(action.github.files.items()):
        if ref == base:
            action.github.put_file(path, content, ref=missing)
    return missing


def test_without_the_base_commit_in_the_checkout_the_pull_requests_files_come_from_github(action: Action,
                                                                                        base: str) -> None:
    """git cannot diff against a base it lacks: GitHub's list of the pull request's files decides instead."""
    missing = missing_base(action, base)
    action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=missing, files=[("agents/search/agent.py", None)]))
    run = action.run("pull_request", pr_event(missing), inputs={"mode": "plan"})
    assert run.code == 0 and run.outputs["eval-sets"] == "evals/search/search.evalset.json", run.stdout
    assert action.github.calls("pulls/list-files", status=200) == 1


def test_without_git_the_pull_requests_files_come_from_github(action: Action, base: str) -> None:
    """The published image has no git: GitHub's list decides, a rename naming both folders."""
    shutil.rmtree(action.workspace / ".git")
    action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=base,
                                files=[("agents/orders/agent.py", "agents/billing/agent.py")]))
    run = action.run("pull_request", pr_event(base), inputs={"mode": "plan"})
    assert run.code == 0, run.stdout + run.stderr
    assert run.outputs["eval-sets"].splitlines() == ["evals/billing/billing.evalset.json",
                                                     "evals/orders/orders.evalset.json"]


def test_when_neither_git_nor_github_can_list_the_changes_every_eval_set_runs(action: Action, base: str) -> None:
    """No base commit in the checkout and no pull request GitHub knows: every eval set, saying how to fix it."""
    missing = missing_base(action, base)
    run = action.run("pull_request", pr_event(missing), inputs={"mode": "plan"})
    assert run.code == 0 and run.outputs["eval-sets"].splitlines() == SETS, run.stdout + run.stderr
    assert "could not be listed" in run.stdout and "fetch-depth: 0" in run.stdout
    assert "the API could not list the pull request's files" in run.stdout


def test_only_affected_carries_the_others_and_passes(action: Action, base: str) -> None:
    runs = pr_runs(action.workspace, ["billing"])
    run = action.run("pull_request", pr_event(base), inputs={"actuals": runs, "only-affected": "true"})
    (comment,) = action.github.comments_on(7)
    assert run.code == 0, comment.body
    assert comment.body.startswith(MARK)
    assert comment.body.split("\n")[1] == f"### ✅ evalbot: no regressions · {CARRIED}"
    assert "their 4 case(s) carried from main's baseline at abc123" in comment.body
    assert "removed" not in comment.body and "new" not in comment.body.split("\n")[1]
    assert CARRIED in run.summary
    assert "only-affected: 1 of 3 eval set(s) affected; 2 carried from main" in run.stdout


def test_only_affected_still_blocks_a_regression_in_an_affected_eval_set(action: Action, base: str) -> None:
    runs = pr_runs(action.workspace, ["billing"], broken=["billing-0"])
    run = action.run("pull_request", pr_event(base), inputs={"actuals": runs, "only-affected": "true"})
    assert run.code == 1, run.stdout + run.stderr
    assert run.outputs["verdict"] == "blocked" and run.outputs["regressed"] == "1"
    (comment,) = action.github.comments_on(7)
    headline = comment.body.split("\n")[1]
    assert headline == f"### ❌ evalbot: blocked: 1 regressed · {CARRIED}", headline
    assert "billing-0" in comment.body and "removed" not in comment.body
    assert "--only-affected" in comment.body  # the command that reproduces it


def test_without_only_affected_the_partial_runs_do_not_pass(action: Action, base: str) -> None:
    """The honest control: the same runs scored for every eval set leave two without runs."""
    runs = pr_runs(action.workspace, ["billing"])
    run = action.run("pull_request", pr_event(base), inputs={"actuals": runs})
    assert run.code != 0 and run.outputs.get("verdict") != "passed", run.stdout
    (comment,) = action.github.comments_on(7)
    assert "carried" not in comment.body


def test_only_affected_refuses_shards(action: Action, base: str) -> None:
    run = action.run("pull_request", pr_event(base), inputs={"only-affected": "true", "shard": "1/2"})
    assert run.code == 2 and any("input only-affected" in a for a in run.annotations()), run.stdout


def test_a_pr_changing_the_baseline_file_scores_everything(action: Action, base: str) -> None:
    """The baseline is every eval set's yardstick: this PR's update of it affects them all."""
    text = (action.workspace / ".evalbot/baseline.json").read_text(encoding="utf-8")
    change(action.workspace, ".evalbot/baseline.json", text.replace('"abc123"', '"abc124"', 1))
    runs = pr_runs(action.workspace, list(NAMES))
    run = action.run("pull_request", pr_event(base), inputs={"actuals": runs, "only-affected": "true"})
    assert "carried" not in action.github.comments_on(7)[0].body, run.stdout
    assert ".evalbot/baseline.json changed, which applies to every eval set" in run.stdout


def test_the_plan_and_the_gate_read_main_s_mapping_not_the_prs(action: Action, base: str) -> None:
    """A PR that maps every folder to nothing in its own configs is still planned with main's affected_by (its
    configs changed in their folders: every eval set is affected, and the policy change is a notice)."""
    for name in NAMES:
        path = Path(action.workspace / f"evals/{name}/test_config.json")
        path.write_text(path.read_text(encoding="utf-8").replace("agents/", "nowhere/"), encoding="utf-8")
    git(action.workspace, "commit", "-q", "-am", "narrow")
    run = action.run("pull_request", pr_event(base), inputs={"mode": "plan"})
    assert run.outputs["eval-sets"].splitlines() == SETS, run.stdout


def fork_first_stage(action: Action, base: str, runs: str) -> None:
    """A fork's pull_request run with only-affected (read-only token, no key), its report and runs uploaded."""
    payload = pull_request_event(fork=True)
    payload["pull_request"]["base"]["sha"] = base
    run = action.run("pull_request", payload, inputs={"actuals": runs, "only-affected": "true"},
                     token=READ_ONLY_TOKEN, judge_key=None)
    assert run.code in (0, 1), run.stdout + run.stderr
    action.github.add_artifact(RUN_ID, "evalbot-report", uploaded(run.workspace / ".evalbot-out"))
    action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=base, head_ref="feature", head_owner="forker",
                                files=[("agents/billing/agent.py", None)]))


def test_the_fork_safe_second_stage_carries_what_the_pull_request_cannot_affect(action: Action, base: str) -> None:
    """The second stage re-measures the first stage's runs of the affected eval sets only: the selection is its own
    (the default branch's affected_by, GitHub's list of the pull request's files), the others carried."""
    fork_first_stage(action, base, pr_runs(action.workspace, ["billing"], broken=["billing-1"]))
    run = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run", "only-affected": "true"},
                     judge_key=None)
    assert run.code == 1, run.stdout + run.stderr  # the second stage's exit code is the verdict's (the fork gate)
    (comment,) = action.github.comments_on(7)
    assert comment.body.split("\n")[1] == f"### ❌ evalbot: blocked: 1 regressed · {CARRIED}", comment.body[:600]
    status = action.github.status_of(HEAD_SHA, "evalbot")
    assert status is not None and status.state == "failure"
    assert "removed" not in comment.body and "Re-measured by this repository's trusted workflow" in comment.body
    assert action.github.calls("pulls/list-files", status=200) == 1  # GitHub's list, not the checkout's git


def test_the_second_stage_without_only_affected_does_not_pass_partial_runs(action: Action, base: str) -> None:
    fork_first_stage(action, base, pr_runs(action.workspace, ["billing"]))
    action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=None)
    (comment,) = action.github.comments_on(7)
    assert "carried" not in comment.body and "no regressions" not in comment.body.split("\n")[1], comment.body[:600]


def test_runs_of_unaffected_eval_sets_are_not_called_runs_of_no_case(action: Action, base: str) -> None:
    """The agent step ran every eval set; only billing is affected. Runs of the carried eval sets' cases are runs of
    cases the eval sets have: neither stage lists them as "ignored: no case of the eval sets" (issue 37 row 13)."""
    fork_first_stage(action, base, pr_runs(action.workspace, NAMES))
    run = action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run", "only-affected": "true"},
                     judge_key=None)
    assert run.code == 0, run.stdout + run.stderr
    (comment,) = action.github.comments_on(7)
    assert "name no case of" not in comment.body and "name no case of" not in run.stdout
