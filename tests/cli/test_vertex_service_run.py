"""``evalbot run`` with the Vertex AI evaluation service's criteria: the credentials read from the environment as ADK
reads them, the requests through the real google-genai client to the loopback fake, the verdicts in the report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from evalbot.results import Report
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_vertex_eval import Graded, mount

DATA = Path(__file__).resolve().parents[1] / "data" / "vertex_eval" / "conversation.json"
CRITERIA = {"multi_turn_task_success_v1": 0.6, "multi_turn_tool_use_quality_v1": 0.5,
            "response_evaluation_score": 3, "safety_v1": 0.8}


def _project(tmp_path: Path) -> list[str]:
    data = json.loads(DATA.read_text(encoding="utf-8"))
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": CRITERIA}), encoding="utf-8")
    es = tmp_path / "lights.evalset.json"
    es.write_text(json.dumps({"eval_set_id": "lights", "eval_cases": [
        {"eval_id": "lights", "conversation": data["expected"]}]}), encoding="utf-8")
    actuals = tmp_path / "actuals.json"
    actuals.write_text(json.dumps({"lights": data["actual"]}), encoding="utf-8")
    return ["run", str(es), "--actuals", str(actuals), "--report", str(tmp_path / "report.json")]


def _grade(metric: str, instance: dict[str, Any]) -> Graded:
    return {"coherence": Graded(4.0), "safety_v1": Graded(1.0), "multi_turn_task_success_v1": Graded(0.5),
            "multi_turn_tool_use_quality_v1": Graded(0.9)}[metric]


def test_express_mode_from_the_environment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """GOOGLE_API_KEY and GOOGLE_VERTEX_BASE_URL: every Vertex criterion is scored by the service (task success 0.5
    under its 0.6 threshold fails the case: exit 1), coherence 4 is reported as 0.75."""
    with FakeGemini() as fake:
        route = mount(fake, _grade)
        code = main(_project(tmp_path), env={"GOOGLE_API_KEY": "express-key", "GOOGLE_VERTEX_BASE_URL": fake.url})
        requests = [(r.path, r.api_key) for r in fake.requests]
    capsys.readouterr()
    assert code == 1
    assert set(requests) == {("/v1beta1/:evaluateInstances", "express-key")}
    assert sorted(m for m, _ in route.calls) == ["coherence"] * 3 + ["multi_turn_task_success_v1",
                                                                     "multi_turn_tool_use_quality_v1"] + ["safety_v1"] * 3
    metrics = Report.model_validate_json((tmp_path / "report.json").read_text(encoding="utf-8")).eval_sets[0].cases[0].metrics
    assert {name: (m.score, m.status) for name, m in metrics.items() if name in CRITERIA} == {
        "multi_turn_task_success_v1": (0.5, "failed"), "multi_turn_tool_use_quality_v1": (0.9, "passed"),
        "response_evaluation_score": (0.75, "passed"), "safety_v1": (1.0, "passed")}


def test_without_credentials_not_evaluated_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No credentials: the config loads (no exit 2), each Vertex criterion is not_evaluated with what to set, and the
    run does not pass without measuring them (exit 3, as the Action where credentials are expected)."""
    code = main(_project(tmp_path), env={"GEMINI_API_KEY": "only-gemini"})
    err = capsys.readouterr().err
    assert code == 3, err
    assert "not passing: judge credentials missing" in err and "GOOGLE_API_KEY (Vertex AI express mode)" in err
    metrics = Report.model_validate_json((tmp_path / "report.json").read_text(encoding="utf-8")).eval_sets[0].cases[0].metrics
    assert {metrics[name].status for name in CRITERIA} == {"not_evaluated"}
