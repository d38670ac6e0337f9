"""The one place that evaluates: inputs loaded once, recordings told from plain actuals, the agent run, criteria passed in."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evalbot import pipeline
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.errors import InputError
from evalbot.pipeline import AgentRun, evaluate, exit_code, load_inputs, read_actuals
from evalbot.results import CriterionInfo, JudgeUsage, MetricResult
from evalbot.runner.custom_agent import load_function_agent
from evalbot.runner.execute import RunOptions
from tests.fakes.builders import Writer, case, eval_set, inv

TRAJ = {"criteria": {"tool_trajectory_avg_score": 1.0}}


def _project(write: Writer) -> tuple[Path, Path]:
    write("evals/test_config.json", {**TRAJ, "evalbot": {"fail_on": "threshold"}})
    es = write("evals/a.evalset.json", eval_set("a", case("c1", inv("hi", "ok", [("t", {})]))))
    write("evals/b.evalset.json", eval_set("b", case("c2", inv("yo", "ok", [("t", {})]))))
    return es.parent, write("actuals.json", {"c1": [inv("hi", "ok", [("t", {})])], "c2": [inv("yo", "ok", [])]})


def test_configs_are_read_once_and_the_evalbot_section_comes_with_the_inputs(write: Writer) -> None:
    """Two eval sets beside one test_config.json share one parsed config; its evalbot section is the settings."""
    folder, _ = _project(write)
    inputs = load_inputs([str(folder)])
    first, second = inputs.eval_sets
    assert first.config is second.config
    settings, source = inputs.settings()
    assert settings == {"fail_on": "threshold"} and source == folder / "test_config.json"


def test_an_unreadable_explicit_config_stops_the_run(write: Writer) -> None:
    """An explicit --config that cannot be read is an InputError before anything is scored."""
    folder, _ = _project(write)
    bad = write("bad.json", "{not json")
    with pytest.raises(InputError):
        load_inputs([str(folder)], config=str(bad))


def test_plain_actuals_are_scored_and_the_exit_code_follows_the_cases(write: Writer) -> None:
    """Plain actuals: one case passes, the other misses its tool call and fails (exit 1)."""
    folder, actuals = _project(write)
    report = evaluate([str(folder)], actuals=[str(actuals)])
    statuses = {c.eval_id: c.status for es in report.eval_sets for c in es.cases}
    assert statuses == {"c1": "passed", "c2": "failed"} and exit_code(report) == 1


def test_a_recording_is_decided_by_the_pipeline_and_scored_as_recorded(write: Writer, tmp_path: Path) -> None:
    """A file written by an agent run with --record is read back as runs (pooled over --num-runs), not as plain
    actuals; a plain file next to it still supplies the cases the recording does not cover."""
    folder, _ = _project(write)
    record = tmp_path / "rec.json"
    said: list[str] = []
    agent = AgentRun(load_function_agent("tests.fakes.agents:echo"), RunOptions(num_runs=2), record)
    first = evaluate([str(folder / "a.evalset.json")], agent=agent, say=said.append)
    assert said[0].startswith("ran tests.fakes.agents:echo: 2 ok") and said[1] == f"recorded the runs in {record}"
    read = read_actuals([str(record)])
    assert read.runs is not None and read.runs.num_runs == 2 and read.errors == read.recording_errors == []
    plain = write("more.json", {"c2": [inv("yo", "ok", [("t", {})])]})
    again = evaluate([str(folder)], actuals=[str(record), str(plain)])
    assert any("ran 2 times" in n for n in again.notices)
    by_id = {c.eval_id: c for es in again.eval_sets for c in es.cases}
    assert by_id["c1"].metrics == first.eval_sets[0].cases[0].metrics
    assert by_id["c2"].status == "passed"


def test_criteria_are_passed_in_not_patched(write: Writer) -> None:
    """The criteria builder given to evaluate decides what is scored (no monkeypatching of scoring)."""
    folder, actuals = _project(write)

    class Always:
        name, threshold = "always", 0.5

        def evaluate(self, case: CaseInput) -> MetricResult:
            return MetricResult(score=1.0, status="passed", threshold=0.5)

    def only_always(config: Any, ctx: BuildContext, origin: str) -> tuple[list[Any], list[CriterionInfo]]:
        return [Always()], [CriterionInfo(name="always", threshold=0.5)]

    report = evaluate([str(folder)], actuals=[str(actuals)], criteria=only_always)
    assert {n for es in report.eval_sets for c in es.cases for n in c.metrics} == {"always"}
    assert exit_code(report) == 0


def test_judge_notices_are_kept_only_when_a_judged_criterion_is_configured(write: Writer) -> None:
    """Why there is no judge (and the judge's setup notes) is reported only if some criterion needed a judge."""
    folder, actuals = _project(write)
    ctx = BuildContext(judge=None, judge_unavailable_reason="no judge credentials")
    assert evaluate([str(folder)], actuals=[str(actuals)], ctx=ctx).notices == []
    write("judged/test_config.json", {"criteria": {"final_response_match_v2": 0.5}})
    write("judged/j.evalset.json", eval_set("j", case("c1", inv("hi", "ok"))))
    report = evaluate([str(folder.parent / "judged")], actuals=[str(actuals)], ctx=ctx)
    assert report.notices == ["no judge credentials"]
    stack = SimpleNamespace(notes=["vertex note"], vertex_service=None, vertex_unavailable=None, usage_summary=JudgeUsage,
                            cap_requests=lambda limit, why: None)
    noted = BuildContext(judge=stack, judge_unavailable_reason=None)  # type: ignore[arg-type]
    assert evaluate([str(folder)], actuals=[str(actuals)], ctx=noted).notices == []


def test_each_actuals_file_is_read_once(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recording is recognised from the text already read: one read per actuals file, recordings included."""
    folder, actuals = _project(write)
    record = tmp_path / "rec.json"
    evaluate([str(folder / "a.evalset.json")], agent=AgentRun(load_function_agent("tests.fakes.agents:echo"),
                                                               record=record))
    reads: list[str] = []
    real = pipeline.read_text

    def spy(path: Path) -> str:  # counts the pipeline's reads; the reading itself is the real one
        reads.append(path.name)
        return real(path)

    monkeypatch.setattr(pipeline, "read_text", spy)
    read = read_actuals([str(actuals), str(record)])
    assert reads == [actuals.name, record.name]
    assert read.runs is not None and read.actuals.find("a", "c1") is not None
