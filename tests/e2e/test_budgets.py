"""Budgets through the Action: read at the base commit like the rest of the policy; a pull request removing or
loosening one is a yardstick change that blocks by default and is named in the headline."""

from __future__ import annotations

import json

from tests.e2e.conftest import (
    BASE_SHA,
    BASELINE,
    CONFIG,
    Action,
    event,
    make_baseline,
    pull_request_event,
    with_evalbot_section,
)


def _base_budgets(action: Action, budgets: dict[str, str]) -> None:
    data = json.loads((action.workspace / CONFIG).read_text(encoding="utf-8"))
    data["evalbot"] = {"budgets": budgets}
    action.github.put_file(CONFIG, json.dumps(data), ref=BASE_SHA)


def test_a_pr_loosening_a_budget_is_a_blocking_yardstick_change(action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    _base_budgets(action, {"tool_calls": "+1", "tool_calls_p95": "+30%"})
    with_evalbot_section(action, {"budgets": {"tool_calls": "+5"}})
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 1, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    headline = body.splitlines()[1]
    assert "blocked: ⚠️ 2 yardstick changes not accepted (budgets / tool\\_calls: budget loosened from +1 to +5" \
        in headline, headline
    assert "budget removed (was +30%)" in body
    notice = next(line for line in body.splitlines() if "This PR changes the gate policy: budgets" in line)
    assert "takes effect after merge (this run uses the base commit's)." in notice, notice
    assert "except" not in notice, notice  # nothing accepted: the PR's budgets wait for the merge


def test_the_base_commits_budget_applies_and_is_shown(action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    _base_budgets(action, {"tool_calls": "+1"})
    with_evalbot_section(action, {"budgets": {"tool_calls": "+0"}})  # tightening: not a yardstick change
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 0, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    row = next(line for line in body.splitlines() if "| tool calls |" in line)
    assert "\\+1 | ✅ within budget" in row, row  # the base commit's +1, not the PR's +0
    assert "yardstick" not in body.splitlines()[1]


BASE_BUDGETS = {"tool_calls": "+1", "tool_calls_p95": "+30%"}
PR_BUDGETS = {"tool_calls": "+5"}


def _refresh_in_the_pr(action: Action) -> dict[str, object]:
    """What the Action's mode baseline writes on the PR's branch (under the PR's config), as the PR commits it."""
    run = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": "actuals/good.json"},
                     ref="refs/heads/feature")
    assert run.code == 0, run.stdout + run.stderr
    data: dict[str, object] = json.loads((action.workspace / BASELINE).read_text(encoding="utf-8"))
    return data


def test_an_honest_baseline_update_accepts_the_loosened_budgets_in_plain_sight(
        action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    _base_budgets(action, BASE_BUDGETS)
    with_evalbot_section(action, {"budgets": PR_BUDGETS})
    assert _refresh_in_the_pr(action)["budgets"] == PR_BUDGETS  # the baseline records the policy's budgets
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 0, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    headline = body.splitlines()[1]
    assert "accepted by this PR's baseline update: 2 budget changes" in headline and "not accepted" not in headline, \
        headline
    assert "| budgets / tool\\_calls | budget loosened from +1 to +5 |" in body
    assert "| budgets / tool\\_calls\\_p95 | budget removed (was +30%) |" in body
    assert "The budgets this PR's baseline update accepts apply to this run: tool\\_calls +5 (was +1), " \
           "tool\\_calls\\_p95 none (was +30%)" in body
    row = next(line for line in body.splitlines() if "| tool calls |" in line)
    assert "\\+5 | ✅ within budget" in row, row  # the accepted budget is the one applied
    assert not any("| tool calls (p95) |" in line for line in body.splitlines())  # its removal is accepted too
    # the policy-change notice does not claim the accepted budgets wait for the merge (since 1464c08 they apply now)
    notice = next(line for line in body.splitlines() if "This PR changes the gate policy: budgets" in line)
    assert notice.endswith("takes effect after merge (this run uses the base commit's), except the budgets this "
                           "PR's baseline update accepts: those apply to this run already (named below)."), notice
    # every notice under the comment's headline is in the job summary and the HTML report too (same words)
    html = (action.workspace / ".evalbot-out" / "report.html").read_text(encoding="utf-8")
    for words in ("The budgets this PR's baseline update accepts apply to this run: tool\\_calls +5 (was +1)",
                  "except the budgets this PR's baseline update accepts: those apply to this run already"):
        assert words in run.summary, words
        assert words.replace("\\_", "_").replace("'", "&#39;") in html, words


def test_a_baseline_update_with_other_budgets_than_the_prs_config_accepts_nothing(
        action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    _base_budgets(action, BASE_BUDGETS)
    with_evalbot_section(action, {"budgets": PR_BUDGETS})
    forged = _refresh_in_the_pr(action)
    forged["budgets"] = {"tool_calls": "+9999"}  # not what the PR's config says
    (action.workspace / BASELINE).write_text(json.dumps(forged), encoding="utf-8")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 1, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    headline = body.splitlines()[1]
    assert "2 yardstick changes not accepted" in headline and "baseline update does not match" in headline, headline
    assert '/budgets: {"tool\\_calls": "+9999"} in the file, {"tool\\_calls": "+5"} in this PR\'s config' in body
    row = next(line for line in body.splitlines() if "| tool calls |" in line)
    assert "\\+1 | ✅ within budget" in row, row  # the base commit's budget still applies


def test_a_hostile_budgets_field_in_the_base_baseline_is_exit_2(action: Action, baseline_text: str) -> None:
    data = json.loads(baseline_text)
    data["budgets"] = {"tokens": "+20%", "tokenz": ["+1"]}
    make_baseline(action, json.dumps(data))
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 2, run.stdout + run.stderr
    assert ".evalbot/baseline.json:/budgets/tokenz" in run.stdout + run.stderr
