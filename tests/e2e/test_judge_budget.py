"""The judge budget through entrypoint.py (issue 40 item 3): the base commit's ``judge_budget`` (or the
judge-budget-requests input, which can only lower it) stops the requests at exactly N on the fake Gemini server; the
verdicts left are not_evaluated and the run is exit 3 with "judge budget reached" in the comment's headline."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import BASE_SHA, CONFIG, Action, pull_request_event, with_evalbot_section


@pytest.mark.parametrize(("section", "inputs"), [
    ({"judge_budget": {"requests": 1}}, {}),
    ({}, {"judge-budget-requests": "1"}),
    ({"judge_budget": {"requests": 1}}, {"judge-budget-requests": "50"}),  # an input never raises main's budget
])
def test_the_budget_stops_the_judge_and_the_run_is_exit_3(action: Action, baseline_text: str,
                                                           section: dict[str, object], inputs: dict[str, str]) -> None:
    action.github.put_file(".evalbot/baseline.json", baseline_text, ref=BASE_SHA)
    main_config = with_evalbot_section(action, {})  # the PR's own tree has no budget: main's decides
    base = json.loads(main_config)
    base["evalbot"] = section
    action.github.put_file(CONFIG, json.dumps(base), ref=BASE_SHA)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json", **inputs})
    assert len(action.gemini.requests) == 1
    assert run.code == 3, run.stdout + run.stderr
    assert run.outputs["verdict"] == "error"
    body = action.github.comments_on(7)[0].body
    alert = "judge budget reached: 2 of 3 verdicts not evaluated"
    assert alert in body and alert in run.summary, body
    assert any(alert in a for a in run.annotations("error")), run.commands
