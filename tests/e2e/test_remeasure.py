"""Issue 24, item 3: the fork-safe second stage re-measures the fork's recorded runs instead of repeating the fork's
report. Each attack is carried as written: the fork uploads a forged report (the regressed case flipped to passed),
or just ``{}``, or leaves a case out; the artifacts go through the fake GitHub's artifact API, the stages through
entrypoint.py."""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.conftest import (
    BASE_SHA,
    HEAD_SHA,
    RUN_ID,
    Action,
    make_baseline,
    pull_request_event,
    uploaded,
    workflow_run_event,
)
from tests.fakes.fake_github import READ_ONLY_TOKEN, Pull

UNMEASURED = "### ⛔ evalbot: could not measure, not passing: "


def fork_run(action: Action, actuals: str, baseline_text: str) -> dict[str, bytes]:
    """The fork's pull_request run (read-only token, no key); the files its upload step would upload."""
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(fork=True), inputs={"actuals": actuals},
                     token=READ_ONLY_TOKEN, judge_key=None)
    assert run.code in (0, 1), run.stdout + run.stderr
    files = uploaded(run.workspace / ".evalbot-out")
    assert [name for name in files if name.startswith("runs/")] == ["runs/0-" + actuals.rsplit("/", 1)[-1]]
    return files


def second_stage(action: Action, files: dict[str, bytes], *, judge_key: str | None = None) -> Any:
    action.github.artifacts.clear()
    action.github.add_artifact(RUN_ID, "evalbot-report", files)
    if not action.github.pulls:
        action.github.add_pull(Pull(7, head_sha=HEAD_SHA, base_sha=BASE_SHA, head_ref="feature", head_owner="forker"))
    return action.run("workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=judge_key,
                      sha="d" * 40, ref="refs/heads/main")


def _report(files: dict[str, bytes]) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(files["report.json"])
    return data


def test_forged_report_with_the_regressed_case_flipped_to_passed_is_re_measured(action: Action,
                                                                                baseline_text: str) -> None:
    """The fork's run regressed "refund"; it uploads its report with that case replaced by a passing one (scores,
    statuses and totals of the good run). The old stage posted "✅ no regressions"; now the runs are re-scored: blocked,
    refund named, and the comment says it was re-measured."""
    good = _report(fork_run(action, "actuals/good.json", baseline_text))
    files = fork_run(action, "actuals/regressed.json", baseline_text)
    forged = _report(files)
    passing = {c["eval_id"]: c for es in good["eval_sets"] for c in es["cases"]}
    for es, good_es in zip(forged["eval_sets"], good["eval_sets"], strict=True):
        es["cases"] = [passing[c["eval_id"]] if c["eval_id"] == "refund" else c for c in es["cases"]]
        es["metrics"], es["status"] = good_es["metrics"], good_es["status"]
    forged["totals"] = good["totals"]
    files["report.json"] = json.dumps(forged).encode()
    run = second_stage(action, files)
    assert run.code == 1, run.stdout + run.stderr  # this stage's exit is its verdict's (issue 37 row 7)
    assert run.outputs["verdict"] == "blocked" and run.outputs["regressed"] == "1", run.stdout
    (comment,) = action.github.comments_on(7)
    headline = comment.body.splitlines()[1]
    assert "✅" not in headline and "regressed" in headline and "refund" in comment.body
    assert "Re-measured by this repository's trusted workflow from the recorded runs" in comment.body


def test_an_empty_report_artifact_is_error(action: Action, baseline_text: str) -> None:
    """``{}`` as the report, with the fork's runs (inconsistent) or alone (empty): verdict error, exit 3, the headline
    says why. The old stage posted "✅ no regressions"."""
    files = fork_run(action, "actuals/regressed.json", baseline_text)
    with_runs = {**files, "report.json": b"{}"}
    run = second_stage(action, with_runs)
    assert run.code == 3 and run.outputs["verdict"] == "error", run.stdout + run.stderr
    (comment,) = action.github.comments_on(7)
    assert comment.body.splitlines()[1] == UNMEASURED + "artifact evalbot-report is empty (no case in its report)"
    alone = second_stage(action, {"report.json": b"{}"})
    assert alone.code == 3 and alone.outputs["verdict"] == "error"
    (comment,) = action.github.comments_on(7)
    assert comment.body.splitlines()[1] == UNMEASURED + "artifact evalbot-report is empty (no case in its report)"
    assert "✅" not in comment.body


def test_report_without_its_runs_or_runs_without_the_report_is_error(action: Action, baseline_text: str) -> None:
    """Artifacts of the old shape (report only) and a report whose runs were swapped for another case list."""
    files = fork_run(action, "actuals/regressed.json", baseline_text)
    report_only = second_stage(action, {"report.json": files["report.json"]})
    assert report_only.code == 3 and report_only.outputs["verdict"] == "error"
    (comment,) = action.github.comments_on(7)
    assert comment.body.splitlines()[1] == UNMEASURED + "artifact evalbot-report is empty (no recorded run)"

    runs = json.loads(files["runs/0-regressed.json"])
    runs["smuggled"] = runs.pop("greeting")
    swapped = second_stage(action, {**files, "runs/0-regressed.json": json.dumps(runs).encode()})
    assert swapped.code == 3
    (comment,) = action.github.comments_on(7)
    headline = comment.body.splitlines()[1]
    assert headline.startswith(UNMEASURED + "artifact evalbot-report is inconsistent"), headline
    assert "greeting" in comment.body and "smuggled" in comment.body


def test_a_partial_artifact_is_error_naming_the_case(action: Action, baseline_text: str) -> None:
    """The fork's eval set and runs leave out the regressed case (consistent with each other): the default branch's
    eval sets still have it, so it cannot be re-measured: exit 3, named."""
    evals = action.workspace / "evals" / "shop.evalset.json"
    original = evals.read_bytes()
    data = json.loads(original)
    data["eval_cases"] = [c for c in data["eval_cases"] if c["eval_id"] != "refund"]
    evals.write_text(json.dumps(data), encoding="utf-8")
    runs = json.loads((action.workspace / "actuals" / "regressed.json").read_text(encoding="utf-8"))
    del runs["refund"]
    (action.workspace / "actuals" / "partial.json").write_text(json.dumps(runs), encoding="utf-8")
    files = fork_run(action, "actuals/partial.json", baseline_text)
    evals.write_bytes(original)  # the trusted stage's checkout: the default branch
    run = second_stage(action, files)
    assert run.code == 3 and run.outputs["verdict"] == "error", run.stdout + run.stderr
    (comment,) = action.github.comments_on(7)
    headline = comment.body.splitlines()[1]
    assert headline.startswith(UNMEASURED + "1 case(s) of the default branch's eval sets have no recorded run"), headline
    assert "shop/refund" in comment.body


def test_cases_the_fork_adds_are_new_not_gated_and_the_definitions_are_the_default_branchs(
        action: Action, baseline_text: str) -> None:
    """The fork adds a case and loosens refund's expected tools in its eval set: the trusted stage measures refund
    against the default branch's definition (blocked) and lists the added case as new, not gated."""
    evals = action.workspace / "evals" / "shop.evalset.json"
    original = evals.read_bytes()
    data = json.loads(original)
    extra = json.loads(json.dumps(next(c for c in data["eval_cases"] if c["eval_id"] == "greeting")))
    extra["eval_id"] = "fork_added"
    data["eval_cases"].append(extra)
    for case in data["eval_cases"]:
        if case["eval_id"] == "refund":
            for turn in case["conversation"]:
                turn.get("intermediate_data", {})["tool_uses"] = []
    evals.write_text(json.dumps(data), encoding="utf-8")
    runs = json.loads((action.workspace / "actuals" / "regressed.json").read_text(encoding="utf-8"))
    runs["fork_added"] = runs["greeting"]
    (action.workspace / "actuals" / "added.json").write_text(json.dumps(runs), encoding="utf-8")
    files = fork_run(action, "actuals/added.json", baseline_text)
    evals.write_bytes(original)
    run = second_stage(action, files)
    assert run.code == 1 and run.outputs["verdict"] == "blocked", run.stdout + run.stderr
    (comment,) = action.github.comments_on(7)
    assert "1 case(s) this pull request adds are new and not gated: shop/fork\\_added" in comment.body


def test_the_trusted_stage_judges_with_its_own_key(action: Action, baseline_text: str) -> None:
    """The fork's run had no key (judged criteria not evaluated); the trusted stage's judge scores them."""
    files = fork_run(action, "actuals/good.json", baseline_text)
    claimed = _report(files)
    judged = [m for es in claimed["eval_sets"] for c in es["cases"] for n, m in c["metrics"].items()
              if n == "final_response_match_v2"]
    assert judged and all(m["status"] == "not_evaluated" for m in judged)
    before = len(action.gemini.requests)
    run = second_stage(action, files, judge_key="fake-gemini-key")
    assert run.code == 0 and run.outputs["verdict"] == "passed", run.stdout + run.stderr
    assert len(action.gemini.requests) - before == 3  # one verdict per case, asked by the trusted stage
    (comment,) = action.github.comments_on(7)
    assert "no judge" not in comment.body.lower() and "✅" in comment.body.splitlines()[1]


def test_unreadable_runs_are_error(action: Action, baseline_text: str) -> None:
    """Hostile run files: invalid UTF-8 is unreadable (exit 3); a path-traversing member name is refused by the
    download (exit 2); a member named like markup or a shell command is read under a name evalbot chooses."""
    files = fork_run(action, "actuals/good.json", baseline_text)
    bad = {**files, "runs/0-good.json": b"\xff\xfe{not json"}
    run = second_stage(action, bad)
    assert run.code == 3 and "recorded runs in artifact evalbot-report are unreadable" in run.stdout
    traversing = {"report.json": files["report.json"], "../../runs/../runs/escape.json": files["runs/0-good.json"]}
    escaped = second_stage(action, traversing)  # refused by the download itself
    assert escaped.code == 2 and "unsafe path" in escaped.stdout, escaped.stdout + escaped.stderr
    odd = {"report.json": files["report.json"], "x/runs/.. `$(id)` <b>.json": files["runs/0-good.json"]}
    renamed = second_stage(action, odd)  # any member of a runs/ folder, written under a name evalbot chooses
    assert renamed.code == 0 and renamed.outputs["verdict"] == "passed", renamed.stdout + renamed.stderr


def test_runs_of_cases_in_no_eval_set_are_ignored_with_a_notice_by_both_stages(action: Action,
                                                                              baseline_text: str) -> None:
    """Issue 37, row 13 (honest): one recorded-runs file for several suites holds runs of cases the eval sets do not
    have. The first stage scored and passed (saying nothing of them); the trusted stage refused the artifact, "its
    report and its recorded runs name different cases" (exit 3). Now both ignore those runs with the same notice,
    and the trusted stage passes: it has a run for every case of the default branch's eval sets."""
    runs = json.loads((action.workspace / "actuals" / "good.json").read_text(encoding="utf-8"))
    runs["billing_suite_case"] = runs["greeting"]
    runs["billing_suite_refund"] = runs["refund"]
    (action.workspace / "actuals" / "suites.json").write_text(json.dumps(runs), encoding="utf-8")
    make_baseline(action, baseline_text)
    first = action.run("pull_request", pull_request_event(fork=True), inputs={"actuals": "actuals/suites.json"},
                       token=READ_ONLY_TOKEN, judge_key=None)
    assert first.code == 0 and first.outputs["verdict"] == "passed", first.stdout + first.stderr
    ignored = "2 recorded run(s) name no case of the eval sets and were ignored: billing_suite_case, billing_suite_refund"
    assert ignored in first.summary.replace("\\_", "_")
    assert any(c.startswith("::notice") and ignored in c for c in first.commands), first.stdout
    files = uploaded(first.workspace / ".evalbot-out")
    run = second_stage(action, files, judge_key="fake-gemini-key")
    assert run.code == 0 and run.outputs["verdict"] == "passed", run.stdout + run.stderr
    (comment,) = action.github.comments_on(7)
    assert "✅" in comment.body.splitlines()[1]
    trusted = ignored.replace("of the eval sets", "of the default branch's eval sets")
    assert trusted in comment.body.replace("\\_", "_") and trusted in run.summary.replace("\\_", "_")
    status = action.github.status_of(HEAD_SHA, "evalbot")
    assert status is not None and status.state == "success"

    del runs["refund"]  # still required: a run of every case of the default branch's eval sets
    files["runs/0-suites.json"] = json.dumps(runs).encode()
    partial = second_stage(action, files, judge_key="fake-gemini-key")
    assert partial.code == 3 and partial.outputs["verdict"] == "error", partial.stdout
    assert "shop/refund" in action.github.comments_on(7)[0].body
