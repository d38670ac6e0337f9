"""Budgets through the Action: read at the base commit like the rest of the policy; a pull request removing or
loosening one is a yardstick change that blocks by default and is named in the headline."""

from __future__ import annotations

import json

from tests.e2e.conftest import BASE_SHA, CONFIG, Action, make_baseline, pull_request_event, with_evalbot_section


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
    assert "This PR changes the gate policy: budgets" in body


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
