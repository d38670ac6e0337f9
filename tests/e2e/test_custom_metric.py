"""Custom metrics in the Action: the first stage runs the repository's function; trusted runs never import it.

The workspace holds a metrics module that leaves a marker file whenever it is imported, so each stage's behaviour is
observed from outside the process: the pull_request stage imports it and scores the metric; the fork-safe
workflow_run stage runs it only when its files are those GitHub serves at the workflow's commit (else it imports
nothing and the metric is not measured there); a pull_request_target run refuses to import it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    Action,
    Run,
    add_repo_metric,
    event,
    first_stage,
    make_baseline,
    pull_request_event,
    workflow_run_event,
)

MODULE = """
import pathlib
pathlib.Path(__file__).with_name("IMPORTED").write_text("imported")

def tools_used(instance):
    return {"tools_used": 1.0 if instance["predicted_trajectory"] else 0.0, "explanation": "any tool call"}
"""


def test_first_stage_scores_it_and_the_second_stage_imports_nothing(action: Action, baseline_text: str) -> None:
    """GitHub serves no metric files at the workflow's commit here: the trusted stage imports nothing."""
    add_repo_metric(action, MODULE)
    marker = action.workspace / "repo_metrics" / "IMPORTED"
    first_stage(action, "actuals/good.json", baseline_text)
    assert marker.exists()  # the pull_request stage ran the repository's function
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    scored = {c["eval_id"]: c["metrics"]["tools_used"] for c in report["eval_sets"][0]["cases"]}
    assert {m["status"] for m in scored.values()} <= {"passed", "failed"} and scored
    marker.unlink()

    run = action.run(
        "workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=None, sha="d" * 40,
        ref="refs/heads/main",
    )
    assert run.code == 3, run.stdout + run.stderr  # the verdict's exit code: could not measure
    assert not marker.exists()  # the trusted stage re-measures the runs but imports no repository code
    assert run.outputs["verdict"] == "error"
    (comment,) = action.github.comments_on(7)
    # The first stage's score is never shown as evalbot's: the metric is not measured here, and the headline says so.
    assert comment.body.splitlines()[1].startswith("### ⛔ evalbot: could not measure, not passing: custom metric not "
                                                   "measured on 3 case(s)"), comment.body
    assert "| tools\\_used | 0.500 | — | 0.667 |" not in comment.body  # the first stage's score is not shown
    assert "custom metric code is not run on workflow\\_run" in comment.body


def test_pull_request_target_refuses_to_import_repository_code(action: Action, baseline_text: str) -> None:
    add_repo_metric(action, MODULE)
    marker = action.workspace / "repo_metrics" / "IMPORTED"
    run = action.run("pull_request_target", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert not marker.exists()
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    (info,) = [c for c in report["eval_sets"][0]["criteria"] if c["name"] == "tools_used"]
    assert info["error"] is None
    assert {c["metrics"]["tools_used"]["status"] for c in report["eval_sets"][0]["cases"]} == {"not_evaluated"}
    assert run.code == 3, run.stdout + run.stderr


# -- issue 24: the metric runs in its own process; the gate never imports it --------------------------------------

def with_module(action: Action, source: str) -> Path:
    """Replace the metric module's source; returns the folder it records into."""
    folder = action.workspace / "repo_metrics"
    (folder / "checks.py").write_text(source, encoding="utf-8")
    return folder


def test_a_metric_that_exits_the_process_is_an_error_with_a_comment(action: Action, baseline_text: str) -> None:
    """os._exit(0) in the metric: its cases are error, the verdict is error, the step fails and the comment says so."""
    add_repo_metric(action, MODULE)
    with_module(action, "import os\ndef tools_used(instance):\n    os._exit(0)\n")
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code == 3, run.stdout + run.stderr
    assert run.outputs["verdict"] == "error", run.outputs
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    metrics = [c["metrics"]["tools_used"] for c in report["eval_sets"][0]["cases"]]
    assert metrics and all(m["status"] == "error" for m in metrics)
    assert "exited with code 0" in metrics[0]["reason"]
    assert all("exited with code 0" in m["reason"] for m in metrics[1:])  # the rest: not run, naming why
    (comment,) = action.github.comments_on(7)
    headline = comment.body.splitlines()[1]
    assert "could not measure" in headline and "custom metric not measured" in headline, headline


def test_a_module_that_exits_on_import_is_an_error_with_a_comment(action: Action, baseline_text: str) -> None:
    add_repo_metric(action, MODULE)
    with_module(action, "import os\nos._exit(0)\n")
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert run.code != 0, run.stdout + run.stderr
    assert run.outputs["verdict"] in ("error", "invalid"), run.outputs
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    (info,) = [c for c in report["eval_sets"][0]["criteria"] if c["name"] == "tools_used"]
    assert "exited with code 0" in info["error"]
    assert all(c["metrics"]["tools_used"]["status"] == "error" for c in report["eval_sets"][0]["cases"])
    assert len(action.github.comments_on(7)) == 1


MONKEYPATCH = """
import evalbot.compare.delta, evalbot.compare.gate, evalbot.results
from evalbot.compare.gate import Gate
passed = lambda *a, **k: Gate(verdict="passed", exit_code=0)
for name in dir(evalbot.compare.gate):
    if name.startswith(("decide", "gate")) and callable(getattr(evalbot.compare.gate, name)):
        setattr(evalbot.compare.gate, name, passed)
evalbot.compare.delta.decide = passed
evalbot.compare.delta._category = lambda *a, **k: ("unchanged", None)
evalbot.results.case_status = lambda statuses: "passed"

def tools_used(instance):
    return {"tools_used": 1.0}
"""


def test_monkeypatching_the_gate_from_the_module_has_no_effect(action: Action, baseline_text: str) -> None:
    """The module rewrites evalbot's gate functions when imported: that is the worker's copy; the regression
    still blocks."""
    add_repo_metric(action, MODULE)
    with_module(action, MONKEYPATCH)
    make_baseline(action, baseline_text)
    run = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert run.code == 1, run.stdout + run.stderr
    assert run.outputs["verdict"] == "blocked" and run.outputs["regressed"] == "1"
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    assert {c["metrics"]["tools_used"]["status"] for c in report["eval_sets"][0]["cases"]} == {"passed"}


@pytest.mark.parametrize(
    "event_name", ["issue_comment", "workflow_dispatch", "schedule", "merge_group", "pull_request_review"]
)
def test_events_off_the_allow_list_never_import_and_say_not_evaluated(action: Action, event_name: str) -> None:
    add_repo_metric(action, MODULE)
    marker = action.workspace / "repo_metrics" / "IMPORTED"
    run = action.run(event_name, event("push"), inputs={"actuals": "actuals/good.json"}, ref="refs/heads/feature")
    assert not marker.exists()
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    reasons = {c["metrics"]["tools_used"]["reason"] for c in report["eval_sets"][0]["cases"]}
    statuses = {c["metrics"]["tools_used"]["status"] for c in report["eval_sets"][0]["cases"]}
    assert statuses == {"not_evaluated"}
    (reason,) = reasons
    assert reason.startswith(f"not evaluated: custom metric code is not run on {event_name} "), reason
    assert run.code != 0, run.stdout + run.stderr  # not measured: never green by accident
    assert f"custom metric code is not run on {event_name}" in run.stdout + run.summary


def test_a_refused_event_on_a_pull_request_says_so_in_the_comment(action: Action, baseline_text: str) -> None:
    """mode pull_request on pull_request_review: the comment's headline says the metric was not measured."""
    add_repo_metric(action, MODULE)
    make_baseline(action, baseline_text)
    run = action.run("pull_request_review", pull_request_event(),
                     inputs={"actuals": "actuals/good.json", "mode": "pull_request"})
    assert run.code == 3, run.stdout + run.stderr
    assert run.outputs["verdict"] == "error"
    (comment,) = action.github.comments_on(7)
    headline = comment.body.splitlines()[1]
    assert "custom metric not measured" in headline and "pull\\_request\\_review" in comment.body, headline


def _second_stage(action: Action, baseline_text: str, served: str) -> tuple[Run, str, Path]:
    """The fork's first stage with MODULE checked out, then the workflow_run stage on commit ``d`` * 40, where GitHub
    serves ``served`` as the metric's module: the run, its comment and the import marker (cleared in between)."""
    add_repo_metric(action, MODULE)
    action.github.put_file("repo_metrics/__init__.py", "", ref="d" * 40)
    action.github.put_file("repo_metrics/checks.py", served, ref="d" * 40)
    marker = action.workspace / "repo_metrics" / "IMPORTED"
    first_stage(action, "actuals/good.json", baseline_text)
    marker.unlink()
    run = action.run(
        "workflow_run", workflow_run_event(), inputs={"mode": "workflow_run"}, judge_key=None, sha="d" * 40,
        ref="refs/heads/main",
    )
    (comment,) = action.github.comments_on(7)
    return run, comment.body, marker


def test_the_trusted_stage_runs_the_metric_when_its_checkout_is_the_workflows_commit(
        action: Action, baseline_text: str) -> None:
    """Every file of the metric's code is, byte for byte, the file GitHub serves at GITHUB_SHA: the fork's runs are
    re-measured with the default branch's metric (run out of process, no secret in its environment)."""
    run, body, marker = _second_stage(action, baseline_text, MODULE)
    assert run.code == 0, body + run.stderr
    assert marker.exists()  # the default branch's module ran here
    assert run.outputs["verdict"] == "passed", run.outputs
    assert "custom metric code is not run" not in body and "tools\\_used" in body
    assert action.github.calls("repos/get-content") >= 2  # each file checked against the commit


def test_a_checkout_that_is_not_the_workflows_commit_runs_no_metric_code(action: Action, baseline_text: str) -> None:
    """The workflow checked out the pull request's head (its metric edited): the files differ from GITHUB_SHA's, so
    nothing is imported and the metric is not measured, naming the file (an error status, never a pass)."""
    run, body, marker = _second_stage(action, baseline_text, MODULE.replace("1.0 if", "0.0 if"))
    assert run.code == 3 and run.outputs["verdict"] == "error", body + run.stderr
    assert not marker.exists()
    assert ("custom metric code is not run on workflow\\_run: repo\\_metrics/checks.py (code of "
            "repo\\_metrics.checks.tools\\_used) in this checkout differs from the file of commit") in body
    assert "check out the default branch" in body
