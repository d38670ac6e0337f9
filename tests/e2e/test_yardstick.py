"""A PR that regresses a case and also moves the yardstick it is measured with: blocked by default, naming the change
in the headline; a warning (never a plain "no regressions") with ``yardstick_changes: warn`` at the base commit.

Each test takes main's baseline (actuals/good.json), lets the agent regress on ``refund`` (actuals/regressed.json)
and changes what the PR is measured with the way an author hiding the regression would.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.conftest import (
    BASE_SHA,
    BASELINE,
    Action,
    event,
    make_baseline,
    pull_request_event,
    read_json,
    write_json,
)

CONFIG = "evals/test_config.json"
EVAL_SET = "evals/shop.evalset.json"


def lower_thresholds(action: Action) -> None:
    config = read_json(action, CONFIG)
    config["criteria"]["tool_trajectory_avg_score"]["threshold"] = 0.0
    config["criteria"]["response_match_score"] = 0.0
    write_json(action, CONFIG, config)


def drop_criteria(action: Action) -> None:
    config = read_json(action, CONFIG)
    del config["criteria"]["tool_trajectory_avg_score"], config["criteria"]["response_match_score"]
    write_json(action, CONFIG, config)


def custom_metric_overrides_a_built_in(action: Action) -> None:
    (action.workspace / "repo_metrics").mkdir()
    (action.workspace / "repo_metrics" / "__init__.py").write_text("", encoding="utf-8")
    (action.workspace / "repo_metrics" / "lenient.py").write_text(
        "def always(instance):\n    return {'score': 1.0}\n", encoding="utf-8")
    config = read_json(action, CONFIG)
    config["custom_metrics"] = {"tool_trajectory_avg_score": {"code_config": {"name": "repo_metrics.lenient.always"}}}
    config["criteria"]["response_match_score"] = 0.0
    write_json(action, CONFIG, config)


def cases_without(action: Action, eval_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    data = read_json(action, EVAL_SET)
    (gone,) = [c for c in data["eval_cases"] if c["eval_id"] == eval_id]
    data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] != eval_id]
    return data, gone


def delete_case(action: Action) -> None:
    write_json(action, EVAL_SET, cases_without(action, "refund")[0])


def empty_eval_set(action: Action) -> None:
    data = read_json(action, EVAL_SET)
    data["eval_cases"] = []
    write_json(action, EVAL_SET, data)


def rename_case(action: Action) -> None:
    data = read_json(action, EVAL_SET)
    for case in data["eval_cases"]:
        if case["eval_id"] == "refund":
            case["eval_id"] = "refund_v2"
    write_json(action, EVAL_SET, data)
    actuals = read_json(action, "actuals/regressed.json")
    actuals["refund_v2"] = actuals.pop("refund")
    write_json(action, "actuals/regressed.json", actuals)


def rename_eval_set(action: Action) -> None:
    data = read_json(action, EVAL_SET)
    data["eval_set_id"] = "shop_v2"
    write_json(action, EVAL_SET, data)


def move_case_to_a_new_file(action: Action) -> None:
    data, gone = cases_without(action, "refund")
    write_json(action, EVAL_SET, data)
    write_json(action, "evals/refunds.evalset.json", {"eval_set_id": "refunds", "eval_cases": [gone]})


def change_expected_conversation(action: Action) -> None:
    data = read_json(action, EVAL_SET)
    bad = read_json(action, "actuals/regressed.json")["refund"]
    for case in data["eval_cases"]:
        if case["eval_id"] == "refund":
            case["conversation"] = bad
    write_json(action, EVAL_SET, data)


ROWS: list[tuple[Callable[[Action], None], str, str, list[str]]] = [
    # what the PR does; the count and the first change named in the headline (markdown-escaped); what the comment lists
    (lower_thresholds, "2 yardstick changes", "(shop / response\\_match\\_score: threshold 0.500 → 0.000, …)",
     ["| shop / tool\\_trajectory\\_avg\\_score | threshold 1.000 → 0.000 |",
      "under main's threshold 1.000: regressed: refund 0.000"]),
    (drop_criteria, "2 yardstick changes", "(shop / response\\_match\\_score: criterion removed from the config, …)",
     ["| shop / tool\\_trajectory\\_avg\\_score | criterion removed from the config | mean 1.000, 3 passed, 0 failed "
      "on main | not measured now |"]),
    (custom_metric_overrides_a_built_in, "2 yardstick changes",
     "(shop / response\\_match\\_score: threshold 0.500 → 0.000, …)",
     ["| shop / tool\\_trajectory\\_avg\\_score | the built-in criterion is now computed by this PR's custom metric "
      "repo\\_metrics.lenient.always |"]),
    (delete_case, "1 yardstick change", "(shop / refund: case removed)", ["| shop / refund | case removed | passed on "
                                                                          "main | not run |"]),
    (rename_case, "1 yardstick change", "(shop / refund: renamed to refund\\_v2)",
     ["| passed on main | failed now (as refund\\_v2) |"]),
    (rename_eval_set, "1 yardstick change", "(shop: eval set renamed to shop\\_v2)",
     ["| 3 case(s): 3 passed on main | 3 case(s): 1 failed, 2 passed (failing: refund) now (as shop\\_v2) |"]),
    (move_case_to_a_new_file, "1 yardstick change", "(shop / refund: moved to refunds / refund)",
     ["| passed on main | failed now (as refunds / refund) |"]),
    (change_expected_conversation, "1 yardstick change", "(shop / refund: expected conversation (or scenario) changed)",
     ["| passed on main | passed now (under the new definition) |"]),
]


def pr_run(action: Action) -> tuple[int, str, str]:
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    body = action.github.comments_on(7)[0].body
    return run.code, body.splitlines()[1], body


def warn_at_the_base_commit(action: Action) -> None:
    """The base commit's config (the gate's policy is read there) says ``yardstick_changes: warn``."""
    config = read_json(action, CONFIG)
    action.github.put_file(CONFIG, json.dumps({**config, "evalbot": {"yardstick_changes": "warn"}}), ref=BASE_SHA)


@pytest.mark.parametrize(("change", "count", "named", "listed"), ROWS, ids=[row[0].__name__ for row in ROWS])
def test_a_yardstick_change_blocks_by_default_and_warn_passes(
    action: Action, baseline_text: str, change: Callable[[Action], None], count: str, named: str, listed: list[str]
) -> None:
    """Blocked (exit 1) with the change named in the headline and listed with main's and the current result; then,
    with ``yardstick_changes: warn`` at the base commit, the same PR passes with the warning in the headline."""
    make_baseline(action, baseline_text)
    change(action)
    code, headline, body = pr_run(action)
    assert code == 1, body
    assert headline.startswith(f"### ❌ evalbot: blocked: ⚠️ {count} not accepted {named}"), headline
    assert "no regressions" not in headline
    assert "**⚠️ Yardstick changes (" in body and "(yardstick\\_changes: block)" in body
    for text in listed:
        assert text in body, body
    warn_at_the_base_commit(action)
    code, headline, body = pr_run(action)
    assert code == 0, body
    assert headline.startswith(f"### ⚠️ evalbot: no regressions · ⚠️ {count} {named} (not blocking: "
                               "yardstick\\_changes: warn)"), headline
    assert "✅" not in headline and "Not blocking (yardstick\\_changes: warn)." in body


@pytest.mark.parametrize("warn", [False, True])
def test_an_eval_set_emptied_is_invalid_input_naming_it(action: Action, baseline_text: str, warn: bool) -> None:
    """An eval set left with no case measures nothing: exit 2 naming it, under yardstick_changes block or warn (it
    was a yardstick change, which warn let through), and its cases are not listed as removed."""
    make_baseline(action, baseline_text)
    empty_eval_set(action)
    if warn:
        warn_at_the_base_commit(action)
    code, headline, body = pr_run(action)
    assert code == 2, body
    assert headline == ("### ⚠️ evalbot: invalid input: evals/shop.evalset.json:/eval\\_cases: the eval set holds no "
                        "case, so nothing would be measured; add at least one eval case, or leave the file out of the "
                        "run"), headline
    assert "case removed" not in body and "✅" not in body


def test_the_pr_cannot_set_warn_for_itself(action: Action, baseline_text: str) -> None:
    """``yardstick_changes: warn`` in the PR's own config is a policy change that applies after the merge."""
    make_baseline(action, baseline_text)
    delete_case(action)
    write_json(action, CONFIG, {**read_json(action, CONFIG), "evalbot": {"yardstick_changes": "warn"}})
    code, headline, body = pr_run(action)
    assert code == 1 and "1 yardstick change not accepted (shop / refund: case removed)" in headline
    assert "This PR changes the gate policy: yardstick\\_changes block → warn" in body


def test_raising_a_threshold_is_shown_and_does_not_block(action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    config = read_json(action, CONFIG)
    config["criteria"]["response_match_score"] = 0.6
    write_json(action, CONFIG, config)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    body = action.github.comments_on(7)[0].body
    assert run.code == 0, body
    assert body.splitlines()[1] == (
        "### ⚠️ evalbot: no regressions · ⚠️ 1 yardstick change (shop / response\\_match\\_score: threshold 0.500 → "
        "0.600) (not blocking: tightened thresholds and moved files only)")
    assert "threshold 0.500 → 0.600 (tightens or moves: not blocking)" in body


def test_adding_a_case_is_not_a_yardstick_change(action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    data = read_json(action, EVAL_SET)
    extra = json.loads(json.dumps(data["eval_cases"][0]))
    extra["eval_id"] = "order_status_again"
    data["eval_cases"].append(extra)
    write_json(action, EVAL_SET, data)
    actuals = read_json(action, "actuals/good.json")
    actuals["order_status_again"] = actuals["order_status"]
    write_json(action, "actuals/good.json", actuals)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    body = action.github.comments_on(7)[0].body
    assert run.code == 0 and body.splitlines()[1] == "### ✅ evalbot: no regressions · 1 new", body
    assert "Yardstick" not in body


def refresh_in_the_pr(action: Action, actuals: str) -> dict[str, Any]:
    """What the PR's author commits: ``evalbot baseline`` on the PR's branch, continuing main's file (checked out)."""
    (action.workspace / BASELINE).parent.mkdir(exist_ok=True)
    run = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": actuals}, ref="refs/heads/feature",
                     sha="e" * 40)
    assert "wrote the baseline to .evalbot/baseline.json" in run.stdout, run.stdout + run.stderr
    data: dict[str, Any] = json.loads((action.workspace / BASELINE).read_text(encoding="utf-8"))
    return data


def test_accepting_a_yardstick_change_with_a_refresh(action: Action, baseline_text: str) -> None:
    """The same deleted case, with the PR's refreshed baseline: the removal is accepted (exit 0) and listed."""
    make_baseline(action, baseline_text)
    (action.workspace / BASELINE).parent.mkdir(exist_ok=True)
    (action.workspace / BASELINE).write_text(baseline_text, encoding="utf-8")
    delete_case(action)
    refresh_in_the_pr(action, "actuals/regressed.json")
    code, headline, body = pr_run(action)
    assert code == 0, body
    assert headline == "### ✅ evalbot: accepted by this PR's baseline update: 1 removed case"
    assert "**✅ Yardstick changes accepted by this PR's baseline update (1)**" in body
    assert "| shop / refund | case removed | passed on main | not run |" in body


LIVE_GREETINGS = ("Hello! How can I help you with your orders today?",
                  "Hi! How can I help with your orders today?")


def live_recording(action: Action, name: str, greeting: str) -> str:
    """A recording of a live agent: refund regressed (the intended change), greeting worded its own way."""
    actuals = read_json(action, "actuals/regressed.json")
    actuals["greeting"][0]["final_response"]["parts"][0]["text"] = greeting
    write_json(action, f"actuals/{name}.json", actuals)
    return f"actuals/{name}.json"


def test_honest_accept_with_a_live_agent_whose_other_answers_drift(action: Action, baseline_text: str) -> None:
    """The author records the agent once and refreshes the baseline; CI records it again and the greeting is worded
    differently (its ROUGE moves, still passing). The update is still accepted: exit 0, the refund listed."""
    make_baseline(action, baseline_text)
    (action.workspace / BASELINE).parent.mkdir(exist_ok=True)
    (action.workspace / BASELINE).write_text(baseline_text, encoding="utf-8")  # the PR's branch has main's file
    first = live_recording(action, "live1", LIVE_GREETINGS[0])
    second = live_recording(action, "live2", LIVE_GREETINGS[1])
    committed = refresh_in_the_pr(action, first)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": second})
    body = action.github.comments_on(7)[0].body
    assert run.code == 0, body
    assert body.splitlines()[1] == ("### ✅ evalbot: accepted by this PR's baseline update: 1 regression "
                                    "(shop/refund)")
    assert "Accepted by this PR's baseline update (1)" in body and "<b>shop / refund</b>" in body
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    (greeting,) = [c for c in report["eval_sets"][0]["cases"] if c["eval_id"] == "greeting"]
    in_file = committed["eval_sets"]["shop"]["cases"]["greeting"]["metrics"]["response_match_score"]
    now = greeting["metrics"]["response_match_score"]
    assert in_file["status"] == now["status"] == "passed" and in_file["score"] > now["score"] + 0.1  # drifted
    assert committed["eval_sets"]["shop"]["cases"]["greeting"]["history"] == "PP"  # main's history continued


def test_an_update_accepts_only_what_it_changes(action: Action, baseline_text: str) -> None:
    """A refresh made before a second regression: the refund is accepted, the new regression (order_status, which
    the file leaves as main has it) blocks."""
    make_baseline(action, baseline_text)
    (action.workspace / BASELINE).parent.mkdir(exist_ok=True)
    (action.workspace / BASELINE).write_text(baseline_text, encoding="utf-8")
    refresh_in_the_pr(action, "actuals/regressed.json")
    worse = read_json(action, "actuals/regressed.json")
    worse["order_status"][0]["intermediate_data"]["tool_uses"] = []
    write_json(action, "actuals/worse.json", worse)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/worse.json"})
    body = action.github.comments_on(7)[0].body
    assert run.code == 1, body
    assert body.splitlines()[1].startswith("### ❌ evalbot: blocked: 1 regressed · accepted by this PR's baseline "
                                           "update: 1 regression (shop/refund)")
    assert "<b>shop / order_status</b>" in body and "Accepted by this PR's baseline update (1)" in body


def test_forged_flaky_history_blocks_even_with_warn(action: Action, baseline_text: str) -> None:
    """An honest refresh whose history was edited to invent flips on main (so that later regressions would be
    "flaky", not blocking): the entry is not accepted, the headline says so, and yardstick_changes: warn does not
    let it through (a forged entry is not a yardstick change, it is a false record)."""
    make_baseline(action, baseline_text)
    warn_at_the_base_commit(action)
    (action.workspace / BASELINE).parent.mkdir(exist_ok=True)
    (action.workspace / BASELINE).write_text(baseline_text, encoding="utf-8")
    honest = refresh_in_the_pr(action, "actuals/regressed.json")
    honest["eval_sets"]["shop"]["cases"]["order_status"]["history"] = "PFPFPFP"
    write_json(action, BASELINE, honest)
    code, headline, body = pr_run(action)
    assert code == 1, body
    assert headline.startswith("### ❌ evalbot: blocked: ⚠️ this PR's baseline update is stale (shop/order\\_status: "
                               "main changed it since)"), headline
    assert "stale: main's baseline changed shop/order\\_status since this update was written (or the file was " \
           "edited)" in body
