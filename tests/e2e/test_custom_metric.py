"""Custom metrics in the Action: the first stage runs the repository's function; trusted runs never import it.

The workspace holds a metrics module that leaves a marker file whenever it is imported, so each stage's behaviour is
observed from outside the process: the pull_request stage imports it and scores the metric, the fork-safe
workflow_run stage renders that score from the artifact without importing anything, and a pull_request_target run
refuses to import it.
"""

from __future__ import annotations

import json

from tests.e2e.conftest import Action, pull_request_event
from tests.e2e.test_two_stage import first_stage, workflow_run_event

MODULE = """
import pathlib
pathlib.Path(__file__).with_name("IMPORTED").write_text("imported")

def tools_used(instance):
    return {"tools_used": 1.0 if instance["predicted_trajectory"] else 0.0, "explanation": "any tool call"}
"""


def add_custom_metric(action: Action) -> None:
    (action.workspace / "repo_metrics").mkdir()
    (action.workspace / "repo_metrics" / "__init__.py").write_text("", encoding="utf-8")
    (action.workspace / "repo_metrics" / "checks.py").write_text(MODULE, encoding="utf-8")
    config_path = action.workspace / "evals" / "test_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["criteria"]["tools_used"] = 0.5
    config["custom_metrics"] = {"tools_used": {"code_config": {"name": "repo_metrics.checks.tools_used"}}}
    config_path.write_text(json.dumps(config), encoding="utf-8")


def test_first_stage_scores_it_and_the_second_stage_imports_nothing(action: Action, baseline_text: str) -> None:
    add_custom_metric(action)
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
    assert run.code == 0, run.stdout + run.stderr
    assert not marker.exists()  # the trusted stage read the scores from the artifact only
    (comment,) = action.github.comments_on(7)
    assert "| tools\\_used | 0.500 | — | 0.667 |" in comment.body  # the first stage's score, rendered


def test_pull_request_target_refuses_to_import_repository_code(action: Action, baseline_text: str) -> None:
    add_custom_metric(action)
    marker = action.workspace / "repo_metrics" / "IMPORTED"
    run = action.run("pull_request_target", pull_request_event(), inputs={"actuals": "actuals/good.json"})
    assert not marker.exists()
    report = json.loads((action.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8"))
    (info,) = [c for c in report["eval_sets"][0]["criteria"] if c["name"] == "tools_used"]
    assert "does not import repository code" in info["error"]
    assert run.code == 2, run.stdout + run.stderr
