"""No baseline is not a pass on a pull request (issue 23, item 6): a PR whose base commit has no baseline at the
configured path blocks (exit 1) with the exact command that creates it and the other baselines found there ("did you
mean"), unless the PR itself adds the baseline file ("baseline created by this PR", exit 0)."""

from __future__ import annotations

import json

from evalbot.errors import RetryPolicy
from tests.e2e.conftest import BASE_SHA, BASELINE, Action, make_baseline, pull_request_event

COMMAND = "evalbot baseline evals --actuals actuals/good.json --output .evalbot/baseline.json"


def headline(body: str) -> str:
    """The comment's headline, without the zero-width joiners that keep GitHub from linking a commit sha."""
    return body.splitlines()[1].replace("\u200d", "")


def test_no_baseline_at_the_base_commit_blocks_with_the_command(action: Action) -> None:
    """Nothing at the base commit, nothing in the PR: exit 1, the headline says why, the command is exact."""
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert run.outputs["verdict"] == "blocked"
    body = action.github.comments_on(7)[0].body
    assert headline(body) == f"### ❌ evalbot: blocked: no baseline at {BASE_SHA[:12]}:.evalbot/baseline.json"
    assert COMMAND in body
    assert "did you mean" not in body


def test_a_mistyped_baseline_path_names_the_baselines_that_exist(action: Action, baseline_text: str) -> None:
    """``baseline-path: .evalbot/basline.json`` while main has ``.evalbot/baseline.json``: every PR used to pass with
    a ⚠️; now it blocks and says which file was probably meant (listed at the base commit, through the API)."""
    make_baseline(action, baseline_text)
    action.github.put_file(".evalbot/notes.txt", "not a baseline", ref=BASE_SHA)
    run = action.run("pull_request", pull_request_event(),
                     inputs={"actuals": "actuals/regressed.json", "baseline-path": ".evalbot/basline.json"})
    assert run.code == 1, run.stdout + run.stderr
    top = headline(action.github.comments_on(7)[0].body)
    assert top == (f"### ❌ evalbot: blocked: no baseline at {BASE_SHA[:12]}:.evalbot/basline.json (did you mean "
                   ".evalbot/baseline.json?)"), top
    assert "notes.txt" not in action.github.comments_on(7)[0].body


def test_a_mistyped_folder_finds_the_default_baseline(action: Action, baseline_text: str) -> None:
    """A typo in the folder (``.evalbott/``): the default baseline's folder is searched too."""
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(),
                     inputs={"actuals": "actuals/good.json", "baseline-path": ".evalbott/baseline.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert "(did you mean .evalbot/baseline.json?)" in headline(action.github.comments_on(7)[0].body)


def test_the_pr_that_creates_the_baseline_passes(action: Action, baseline_text: str) -> None:
    """The PR adds the file (made from this run): exit 0, "baseline created by this PR"."""
    (action.workspace / ".evalbot").mkdir()
    (action.workspace / BASELINE).write_text(baseline_text, encoding="utf-8")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 0, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    assert body.splitlines()[1] == "### ✅ evalbot: baseline created by this PR; 3 of 3 case(s) passed"
    assert "this PR creates .evalbot/baseline.json (baseline created by this PR)" in body


def test_a_created_baseline_this_run_contradicts_blocks(action: Action, baseline_text: str) -> None:
    """A created file claiming a status the run did not reach is no way around the rule: it blocks."""
    data = json.loads(baseline_text)
    (action.workspace / ".evalbot").mkdir()
    (action.workspace / BASELINE).write_text(json.dumps(data), encoding="utf-8")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert "does not match this run" in action.github.comments_on(7)[0].body.splitlines()[1]


def test_the_base_listing_unavailable_still_blocks(action: Action) -> None:
    """The "did you mean" listing is a hint: GitHub refusing it (and no git) leaves the block and the command."""
    # GitHub's Retry-After, which PyGithub's retry honours: each retry waits 1 s instead of the doubling backoff
    action.github.fail("GET", r"/contents/\.evalbot$", 503, headers={"Retry-After": "1"}, times=50)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert COMMAND in action.github.comments_on(7)[0].body
    assert action.github.calls("repos/get-content", status=503) == RetryPolicy().attempts  # one read, every retry made
