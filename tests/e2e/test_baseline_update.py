"""Accepting an intended change: a PR that refreshes the baseline honestly merges; a stale or hand-edited one does not."""

from __future__ import annotations

import json
import threading

from tests.e2e.conftest import BASE_SHA, BASELINE, VALID, Action, event, make_baseline, pull_request_event

INVALID = '{"reasoning": "a fact differs", "is_the_agent_response_valid": "invalid"}'


def refresh_in_the_pr(action: Action) -> str:
    """What ``evalbot baseline`` writes for the PR's (regressed) run, committed in the PR's tree."""
    run = action.run("push", event("push"), inputs={"mode": "baseline", "actuals": "actuals/regressed.json"},
                     ref="refs/heads/feature")
    assert run.code == 0, run.stdout + run.stderr
    return (action.workspace / BASELINE).read_text(encoding="utf-8")


def test_honest_baseline_refresh_is_accepted(action: Action, baseline_text: str) -> None:
    """The PR's baseline matches its run: the regression is shown as accepted and does not block (exit 0)."""
    make_baseline(action, baseline_text)
    refresh_in_the_pr(action)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 0, run.stdout + run.stderr
    assert run.outputs["verdict"] == "passed" and run.outputs["regressed"] == "0"
    body = action.github.comments_on(7)[0].body
    assert "Accepted by this PR's baseline update (1)" in body
    assert body.splitlines()[1] == ("### ✅ evalbot: accepted by this PR's baseline update: 1 regression "
                                    "(shop/refund)")
    assert "the 1 entry it changes against the base commit's baseline is accepted" in body and "refund" in body
    assert not [a for a in run.annotations() if "title=Regression" in a]


def test_hand_edited_baseline_is_refused_with_the_differences(action: Action, baseline_text: str) -> None:
    """A PR baseline that does not match the run (hand-edited score) changes nothing: blocked, differences listed,
    and the comment ends with the commands to reproduce and to refresh."""
    make_baseline(action, baseline_text)
    honest = json.loads(refresh_in_the_pr(action))
    case = honest["eval_sets"]["shop"]["cases"]["refund"]
    metric = case["metrics"]["tool_trajectory_avg_score"]
    metric.update(score=1.0, status="passed")
    case.update(status="passed", history="P")  # a history must end with the status it records
    (action.workspace / BASELINE).write_text(json.dumps(honest, indent=2), encoding="utf-8")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    assert "does not record what this run produced (stale or hand-edited)" in body
    assert '/eval\\_sets/shop/cases/refund/metrics/tool\\_trajectory\\_avg\\_score/status: "passed" (score 1.0) in the ' \
           'file, "failed" (score 0.0) in this run' in body
    assert "the baseline update does not match this run" in body.splitlines()[1]
    assert "Accepted by this PR's baseline update" not in body
    assert f"`evalbot compare --baseline {BASE_SHA}:.evalbot/baseline.json evals --actuals actuals/regressed.json`" \
           in body
    assert "`evalbot baseline evals --actuals actuals/regressed.json --output .evalbot/baseline.json`" in body
    assert body.rstrip().splitlines()[-1].startswith("<sub>evalbot")  # the commands come last, before the footer


def test_stale_baseline_is_not_accepted(action: Action, baseline_text: str) -> None:
    """A PR that edits the baseline but keeps main's numbers (stale) is gated normally."""
    make_baseline(action, baseline_text)
    stale = json.loads(baseline_text)
    stale["commit"] = "d" * 40
    stale["judge_models"] = [*stale["judge_models"], "gemini-x"]
    (action.workspace / BASELINE).parent.mkdir(exist_ok=True)
    (action.workspace / BASELINE).write_text(json.dumps(stale), encoding="utf-8")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert "does not match this run" in action.github.comments_on(7)[0].body


def test_pr_baseline_symlinked_to_dev_zero_is_refused(action: Action, baseline_text: str) -> None:
    """A baseline the PR turned into a symlink to /dev/zero is never read (it would never end): not a match."""
    make_baseline(action, baseline_text)
    (action.workspace / BASELINE).parent.mkdir(exist_ok=True)
    (action.workspace / BASELINE).symlink_to("/dev/zero")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert "outside the workspace" in action.github.comments_on(7)[0].body


def test_forged_history_in_the_pr_baseline_is_not_accepted(action: Action, baseline_text: str) -> None:
    """An honest refresh whose history was edited to invent flips on main (which would make later regressions
    "flaky", not blocking) does not match the run: the regression blocks and the history difference is listed."""
    make_baseline(action, baseline_text)
    honest = json.loads(refresh_in_the_pr(action))
    case = honest["eval_sets"]["shop"]["cases"]["order_status"]
    assert case["history"] == "P"  # the PR's tree has no baseline here: started afresh (which also matches)
    case["history"] = "PFPFPFP"
    (action.workspace / BASELINE).write_text(json.dumps(honest, indent=2), encoding="utf-8")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    assert "this PR's baseline update is stale (shop/order\\_status: main changed it since)" in body.splitlines()[1]
    assert "stale: main's baseline changed shop/order\\_status since this update was written" in body


def test_forged_trend_in_the_pr_baseline_is_not_accepted(action: Action, baseline_text: str) -> None:
    """An honest refresh whose trend of means was edited (a made-up past drawn by the HTML report once merged) does
    not match the run: the difference is listed with its pointer and the gate blocks."""
    make_baseline(action, baseline_text)
    honest = json.loads(refresh_in_the_pr(action))
    name, crit = next((n, c) for n, c in honest["eval_sets"]["shop"]["criteria"].items() if "trend" in c)
    crit["trend"] = [{"mean": 1.0, "commit": "<b>made-up</b>"}, *crit["trend"]]
    (action.workspace / BASELINE).write_text(json.dumps(honest, indent=2), encoding="utf-8")
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    body = action.github.comments_on(7)[0].body
    shown = name.replace("_", "\\_")
    assert f"this PR's baseline update is stale (shop/\\*/{shown}: main changed it since)" in body.splitlines()[1], name


def test_push_to_main_settles_a_split_flip_before_committing(action: Action) -> None:
    """The push that refreshes the baseline settles like a pull request: a judged verdict that flipped against the
    committed baseline on a split vote (3-0 then 2-3) gets 10 more samples, and the committed baseline records the
    larger vote (2-13) and the outcome it decides, not one small noisy vote."""
    config_path = action.workspace / "evals" / "test_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["criteria"]["final_response_match_v2"]["judge_model_options"]["num_samples"] = 5
    config_path.write_text(json.dumps(config), encoding="utf-8")
    inputs = {"actuals": "actuals/good.json", "update-baseline": "true"}
    first = action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="e" * 40)
    assert first.code == 0, first.stdout + first.stderr
    committed = action.github.files[("main", ".evalbot/baseline.json")]
    (action.workspace / ".evalbot").mkdir(exist_ok=True)
    (action.workspace / ".evalbot" / "baseline.json").write_bytes(committed)  # the next push checks it out
    split = [INVALID, VALID, INVALID, VALID, INVALID]  # 1-2, then 2-3: fails on a split vote; then 0-10
    asked: dict[str, int] = {}
    lock = threading.Lock()

    def answer(prompt: str, index: int, request: object) -> str:
        with lock:  # each case's prompt counts its own samples, in the order they are asked
            k = asked[prompt] = asked.get(prompt, -1) + 1
        return split[k] if k < len(split) else INVALID

    action.gemini.responder = answer
    action.gemini.reset()
    second = action.run("push", event("push"), inputs=inputs, ref="refs/heads/main", sha="f" * 40)
    # settled, the flips are regressions against main's last run (a red check on the push), and still recorded
    assert second.code == 1 and "baseline committed" in second.stdout, second.stdout + second.stderr
    assert sorted(r.candidate_count for r in action.gemini.requests) == [2] * 6 + [3] * 3 + [8] * 3  # 10 more in batches of <= 8
    cases = json.loads(action.github.files[("main", ".evalbot/baseline.json")])["eval_sets"]["shop"]["cases"]
    judged = {k: c["metrics"]["final_response_match_v2"] for k, c in cases.items()}
    assert {k: m["votes"] for k, m in judged.items()} == {
        k: [{"yes": 2, "no": 13, "resampled": 10, "settled": True}] for k in cases}
    assert {k: m["vote_history"] for k, m in judged.items()} == {k: "3-0 2-13" for k in cases}
    assert {k: c["history"] for k, c in cases.items()} == {k: "PF" for k in cases}
