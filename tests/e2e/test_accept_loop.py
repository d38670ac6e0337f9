"""The accept loop through entrypoint.py against the fake GitHub: a PR's baseline update says WHICH entries it accepts,
their values are the run's (issue 38; issue 37 row 1).

The PR makes one intended change (refund also notifies: its expected trajectory and its recorded run updated) and
one accidental regression (order_status asks for the wrong order). Its baseline update is written as the comment's
"What to do" says, with the command-line evalbot as a process (the base commit's file given as --previous: the
workspace is no git repository)."""

from __future__ import annotations

import json

from tests.e2e.conftest import (
    BASE_SHA,
    BASELINE,
    Action,
    evalbot,
    event,
    main_file,
    make_baseline,
    pull_request_event,
    read_json,
    what_to_do,
    write_json,
)

EVALS = "evals/shop.evalset.json"
NOTIFY = {"name": "notify_customer", "args": {"order_id": "77"}}


def pr_changes(action: Action, *, accident: bool) -> None:
    """The PR's tree: refund's expected trajectory gains the notification; actuals/pr.json is its run (with the
    wrong order id in order_status when ``accident``)."""
    evals = read_json(action, EVALS)
    refund = next(c for c in evals["eval_cases"] if c["eval_id"] == "refund")
    refund["conversation"][0]["intermediate_data"]["tool_uses"].append(NOTIFY)
    write_json(action, EVALS, evals)
    runs = read_json(action, "actuals/good.json")
    runs["refund"][0]["intermediate_data"]["tool_uses"].append(NOTIFY)
    if accident:
        runs["order_status"][0]["intermediate_data"]["tool_uses"][0]["args"]["order_id"] = "1043"
    write_json(action, "actuals/pr.json", runs)


def pr_run(action: Action) -> tuple[int, str, str, str]:
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/pr.json"})
    body = action.github.comments_on(7)[0].body
    return run.code, body.splitlines()[1], body, run.stdout


def test_accepting_only_the_intended_change_keeps_the_accident_blocking(action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    pr_changes(action, accident=True)
    code, headline, body, _ = pr_run(action)
    assert code == 1 and headline.startswith("### ❌ evalbot: blocked: 1 regressed"), headline
    command = what_to_do(body)
    assert "--accept shop/order_status --accept shop/refund" in command or \
        "--accept shop/refund --accept shop/order_status" in command, command
    assert f"--previous {BASE_SHA}:{BASELINE}" in command
    main = main_file(action, baseline_text)

    selective = evalbot(action, command.replace(" --accept shop/order_status", ""), main)
    assert selective.returncode == 0, selective.stderr
    assert "passed → failed" not in selective.stderr
    code, headline, body, _ = pr_run(action)
    assert code == 1, body
    assert headline == ("### ❌ evalbot: blocked: 1 regressed · accepted by this PR's baseline update: 1 definition "
                        "change"), headline

    everything = evalbot(action, command, main)  # as offered: the accident is accepted too, and said so
    assert "shop/order_status: passed → failed recorded" in everything.stderr
    code, headline, body, _ = pr_run(action)
    assert code == 0, body
    assert headline == ("### ✅ evalbot: accepted by this PR's baseline update: 1 regression (shop/order\\_status) · 1 "
                        "definition change"), headline
    assert "<b>shop / order_status</b>" in body and "1043" in body  # the accepted regression's trajectory diff


def refresh_main(action: Action, previous: str, actuals: str, sha: str) -> str:
    """main's push workflow refreshing its baseline (update-baseline: the file it continues is checked out)."""
    write_json(action, BASELINE, json.loads(previous))
    run = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": actuals}, ref="refs/heads/main",
                     sha=sha)
    assert "wrote the baseline to .evalbot/baseline.json" in run.stdout, run.stdout + run.stderr
    return (action.workspace / BASELINE).read_text(encoding="utf-8")


def test_an_update_made_before_mains_three_refreshes_passes_and_a_stale_one_is_named(
        action: Action, baseline_text: str) -> None:
    make_baseline(action, baseline_text)
    main_now = baseline_text
    for sha in ("1" * 40, "2" * 40, "3" * 40):
        main_now = refresh_main(action, main_now, "actuals/good.json", sha)
    # and later main changes an entry itself: order_status fails there, and main's refresh records it
    runs = read_json(action, "actuals/good.json")
    runs["order_status"][0]["intermediate_data"]["tool_uses"][0]["args"]["order_id"] = "9"
    write_json(action, "actuals/main-changed.json", runs)
    main_changed = refresh_main(action, main_now, "actuals/main-changed.json", "4" * 40)
    (action.workspace / BASELINE).unlink()
    pr_changes(action, accident=False)
    made = evalbot(action, f"evalbot baseline evals --actuals actuals/pr.json --accept shop/refund --previous "
                           f"{BASE_SHA}:{BASELINE} --output {BASELINE}", main_file(action, baseline_text))
    assert made.returncode == 0, made.stderr
    update = (action.workspace / BASELINE).read_text(encoding="utf-8")

    action.github.put_file(BASELINE, main_now, ref=BASE_SHA)  # the base commit is main after its three refreshes
    code, headline, body, _ = pr_run(action)
    assert code == 0, body
    assert headline == "### ✅ evalbot: accepted by this PR's baseline update: 1 definition change", headline

    # then main changes an entry the update holds as main had it (order_status fails on main now): stale
    action.github.put_file(BASELINE, main_changed, ref=BASE_SHA)
    assert (action.workspace / BASELINE).read_text(encoding="utf-8") == update
    code, headline, body, stdout = pr_run(action)
    assert code == 1, body
    assert "this PR's baseline update is stale (shop/order\\_status: main changed it since)" in headline, headline
    (line,) = [x for x in stdout.splitlines() if "stale baseline update" in x]
    assert "stale: main's baseline changed shop/order_status since this update was written" in line
    command = what_to_do(body)
    assert command in line and "--accept shop/order_status" in command
    fixed = evalbot(action, command, main_file(action, main_changed, "main-changed.json"))
    assert fixed.returncode == 0, fixed.stderr
    code, headline, body, _ = pr_run(action)
    assert code == 0, body


def drift_set(action: Action, cases: list[str]) -> None:
    write_json(action, "evals/drift.evalset.json", {"eval_set_id": "drift", "eval_cases": [
        {"eval_id": c, "conversation": [{"invocation_id": f"{c}-1", "user_content": {"role": "user", "parts": [
            {"text": f"item {c}?"}]}, "final_response": {"role": "model", "parts": [
                {"text": f"alpha beta gamma delta epsilon {c}"}]}, "intermediate_data": {"tool_uses": []}}]}
        for c in cases]})


def drift_runs(action: Action, cases: list[str], drifted: set[str], name: str) -> None:
    runs = read_json(action, "actuals/good.json")
    for c in cases:
        text = f"alpha beta gamma delta {c}" if c in drifted else f"alpha beta gamma delta epsilon {c}"
        runs[c] = [{"invocation_id": f"{c}-1", "user_content": {"role": "user", "parts": [{"text": f"item {c}?"}]},
                    "final_response": {"role": "model", "parts": [{"text": text}]},
                    "intermediate_data": {"tool_uses": []}}]
    write_json(action, name, runs)


def test_invented_scores_in_an_update_cannot_cancel_a_drift(action: Action) -> None:
    """Issue 37 row 1: ten cases drift (still passing) while the update records two new cases with an invented score
    of 0.0 (the run scored 1.0): blocked as without the update; -3.0 is refused with its pointer."""
    drifting = [f"d{i}" for i in range(10)]
    drift_set(action, drifting)
    drift_runs(action, drifting, set(), "actuals/main-drift.json")
    made = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": "actuals/main-drift.json"},
                      ref="refs/heads/main", sha=BASE_SHA)
    assert made.code == 0, made.stdout + made.stderr
    make_baseline(action, (action.workspace / BASELINE).read_text(encoding="utf-8"))
    (action.workspace / BASELINE).unlink()
    drift_set(action, [*drifting, "n1", "n2"])
    drift_runs(action, [*drifting, "n1", "n2"], set(drifting), "actuals/pr.json")
    plain, plain_headline, _, _ = pr_run(action)
    assert plain == 1 and "blocked" in plain_headline
    refreshed = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": "actuals/pr.json"},
                           ref="refs/heads/feature", sha="e" * 40)
    assert refreshed.code == 0, refreshed.stdout + refreshed.stderr
    forged = read_json(action, BASELINE)
    for new in ("n1", "n2"):
        forged["eval_sets"]["drift"]["cases"][new]["metrics"]["response_match_score"]["score"] = 0.0
    write_json(action, BASELINE, forged)
    code, headline, body, _ = pr_run(action)
    assert code == 1, body
    assert "drift: response\\_match\\_score mean -0." in body and "✅" not in headline, headline
    for new in ("n1", "n2"):
        forged["eval_sets"]["drift"]["cases"][new]["metrics"]["response_match_score"]["score"] = -3.0
    write_json(action, BASELINE, forged)
    code, headline, body, _ = pr_run(action)
    assert code == 1 and "the file cannot be used" in body, body
    assert "/eval\\_sets/drift/cases/n1/metrics/response\\_match\\_score/score" in body
