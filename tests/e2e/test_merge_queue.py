"""Merge queues (issue 23, item 4): a ``merge_group`` run reads the baseline and the gate policy at the group's
``base_sha`` (never the queue's tree, which holds the PR's edits), gates like a pull request, says "merge queue" in
its headline, and has no PR to comment on."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.conftest import BASE_SHA, BASELINE, CONFIG, Action, event, make_baseline, with_evalbot_section

QUEUE_SHA = "9" * 40


def merge_group_event() -> dict[str, Any]:
    """``merge_group`` / ``checks_requested`` as GitHub sends it for a queue entry on main."""
    head_ref = f"refs/heads/gh-readonly-queue/main/pr-7-{BASE_SHA}"
    return {
        "action": "checks_requested",
        "merge_group": {
            "head_sha": QUEUE_SHA, "head_ref": head_ref, "base_sha": BASE_SHA, "base_ref": "refs/heads/main",
            "head_commit": {"id": QUEUE_SHA, "tree_id": "8" * 40, "message": "Merge pull request #7"},
        },
        "repository": event("push")["repository"],
    }


def headline(summary: str) -> str:
    """The job summary's verdict line."""
    return next(line for line in summary.splitlines() if line.startswith("### "))


def queue_run(action: Action, actuals: str, **inputs: str) -> Any:
    return action.run("merge_group", merge_group_event(), inputs={"actuals": actuals, **inputs}, sha=QUEUE_SHA,
                      ref=merge_group_event()["merge_group"]["head_ref"])


def test_merge_queue_blocks_a_regression_against_the_base_commit(action: Action, baseline_text: str) -> None:
    """The queue's tree carries the PR's ``fail_on: never`` and a baseline edited to the regressed scores; both are
    ignored: main's baseline and policy at base_sha decide, exit 1, "merge queue" in the headline, no comment."""
    make_baseline(action, baseline_text)
    original = with_evalbot_section(action, {"fail_on": "never"})
    action.github.put_file(CONFIG, original, ref=BASE_SHA)
    forged = json.loads(baseline_text)
    forged["eval_sets"]["shop"]["cases"]["refund"]["status"] = "failed"  # the PR's hand edit, in the queue's tree
    (action.workspace / ".evalbot").mkdir()
    (action.workspace / BASELINE).write_text(json.dumps(forged), encoding="utf-8")
    run = queue_run(action, "actuals/regressed.json")
    assert run.code == 1, run.stdout + run.stderr
    assert run.outputs["verdict"] == "blocked" and run.outputs["regressed"] == "1"
    top = headline(run.summary)
    assert top.startswith("### ❌ evalbot: merge queue: blocked: 1 regressed"), top
    assert "fail-on: regression" in run.summary  # the base commit's policy, not the queue tree's "never"
    assert "This PR changes the gate policy: fail\\_on regression → never" in run.summary
    assert "evalbot: merge queue: blocked (exit 1)" in run.stdout
    assert action.github.calls("issues/create-comment") == 0 and action.github.comments == {}
    assert action.github.commits == []  # a queue run never refreshes the baseline


def test_merge_queue_passes_a_clean_group(action: Action, baseline_text: str) -> None:
    """Nothing regressed against base_sha: exit 0, the headline says where it ran."""
    make_baseline(action, baseline_text)
    run = queue_run(action, "actuals/good.json")
    assert run.code == 0, run.stdout + run.stderr
    assert headline(run.summary) == "### ✅ evalbot: merge queue: no regressions"


def test_merge_queue_without_a_baseline_at_the_base_commit_blocks(action: Action) -> None:
    """No baseline at base_sha is not a pass in the queue either."""
    run = queue_run(action, "actuals/good.json")
    assert run.code == 1, run.stdout + run.stderr
    assert headline(run.summary).startswith("### ❌ evalbot: merge queue: blocked: no baseline at ")
