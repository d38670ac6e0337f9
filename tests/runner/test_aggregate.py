"""Scoring produced runs: one run equals plain scoring, failures fail the case, several runs pool as AgentEvaluator."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria.base import BuildContext
from evalbot.formats.actuals import Actuals
from evalbot.judges.factory import JudgeStack
from evalbot.results import InvocationScore, MetricResult
from evalbot.runner.aggregate import pool, score_runs
from evalbot.runner.custom_agent import load_function_agent
from evalbot.runner.execute import RunOptions, run_agent
from evalbot.scoring import score_run
from tests.fakes import agents
from tests.fakes.builders import case, eval_set, inv, load_set

ECHO = [("echo", {"text": "hi"})]
CONFIG = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}}


def _set(tmp_path: Path, config: dict[str, Any] | None = None) -> Any:
    return load_set(tmp_path, eval_set(
        "s",
        case("one", inv("hi", "you said: hi", ECHO)),
        case("two", inv("hi", "you said: hi", ECHO), inv("yo", "you said: yo", [("echo", {"text": "yo"})])),
    ), config or CONFIG)


def test_single_run_equals_scoring_the_same_invocations(tmp_path: Path) -> None:
    """With one successful run, every case is exactly what scoring those invocations directly gives."""
    loaded = _set(tmp_path)
    runs = run_agent(load_function_agent("tests.fakes.agents:echo"), [loaded], RunOptions())
    report = score_runs([loaded], runs).report
    actuals = Actuals(entries={k: v[0].invocations for k, v in runs.runs.items()})
    direct = score_run([loaded], actuals)
    assert report.eval_sets[0].cases == direct.eval_sets[0].cases
    assert report.totals.passed == 2 and report.notices == []
    durations = report.eval_sets[0].cases[1].metrics["invocation_duration_v1"].per_invocation
    assert len(durations) == 2 and all(d.details and d.details["value"] is not None for d in durations)


def test_agent_exception_fails_only_that_case(tmp_path: Path) -> None:
    """A raising agent fails its case with the message (no criterion scores), other cases are still scored."""
    loaded = load_set(tmp_path, eval_set("s", case("ok", inv("hi", "you said: hi", ECHO)),
                                         case("bad", inv("hi", "x"), inv("boom", "y"))), CONFIG)
    runs = run_agent(load_function_agent("tests.fakes.agents:fails_on_second_turn"), [loaded], RunOptions())
    ok, bad = score_runs([loaded], runs).report.eval_sets[0].cases
    assert ok.status == "passed"
    assert bad.status == "failed" and bad.reason == "turn 2: the agent raised RuntimeError: lost the thread"
    assert "tool_trajectory_avg_score" not in bad.metrics and [t.user for t in bad.turns] == ["hi"]


def test_failure_and_latency_criteria_see_the_failed_call(tmp_path: Path) -> None:
    """Configured ``failure``/``latency`` score a failed run with the failed call flagged (failure 1, no latency)."""
    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "failure": 0.0, "latency": 10.0}}
    loaded = load_set(tmp_path, eval_set("s", case("ok", inv("hi", "you said: hi", ECHO)),
                                         case("bad", inv("hi", "x"), inv("boom", "y"))), config)
    runs = run_agent(load_function_agent("tests.fakes.agents:fails_on_second_turn"), [loaded], RunOptions())
    es = score_runs([loaded], runs).report.eval_sets[0]
    ok, bad = es.cases
    assert (ok.metrics["failure"].score, ok.metrics["failure"].status) == (0.0, "passed")
    failure = bad.metrics["failure"]
    assert (failure.score, failure.status) == (0.5, "failed")
    assert [s.score for s in failure.per_invocation] == [0.0, 1.0]
    assert [s.status for s in bad.metrics["latency"].per_invocation] == ["passed", "not_evaluated"]
    assert es.metrics["failure"].mean == 0.25 and es.metrics["failure"].failed == 1


def test_malformed_output_is_a_case_error(tmp_path: Path) -> None:
    """Malformed output makes that case an error whose reason explains the contract."""
    loaded = _set(tmp_path)
    runs = run_agent(load_function_agent("tests.fakes.agents:bad_trajectory"), [loaded], RunOptions())
    report = score_runs([loaded], runs).report
    assert [c.status for c in report.eval_sets[0].cases] == ["error", "error"]
    assert "has no 'tool_input'" in (report.eval_sets[0].cases[0].reason or "")
    assert report.totals.error == 2


def test_runs_are_pooled_per_invocation_as_agent_evaluator_does(tmp_path: Path) -> None:
    """Two runs, right then wrong: scores pool to 0.5 over both runs' invocations; each run stays in details."""
    agents.flaky.calls = 0
    loaded = load_set(tmp_path, eval_set("s", case("one", inv("hi", "you said: hi", ECHO))), CONFIG)
    runs = run_agent(load_function_agent("tests.fakes.agents:flaky"), [loaded], RunOptions(num_runs=2, concurrency=1))
    scored = score_runs([loaded], runs)
    (result,) = scored.report.eval_sets[0].cases
    traj = result.metrics["tool_trajectory_avg_score"]
    assert (traj.score, traj.status) == (0.5, "failed") and result.status == "failed"
    assert [s.invocation_id for s in traj.per_invocation] == ["run1-turn1", "run2-turn1"]
    assert traj.details == {"runs": [{"run": 1, "score": 1.0, "status": "passed"},
                                     {"run": 2, "score": 0.0, "status": "failed"}]}
    assert [t.invocation_id for t in result.turns] == ["run1-turn1", "run2-turn1"]
    assert [r.eval_sets[0].cases[0].status for r in scored.per_run] == ["passed", "failed"]
    assert "2 times per case" in scored.report.notices[0]


def test_a_failed_run_fails_the_case_even_if_other_runs_pass(tmp_path: Path) -> None:
    """As in AgentEvaluator, any run that failed makes the case fail; the reason names the run."""
    loaded = load_set(tmp_path, eval_set("s", case("one", inv("hi", "you said: hi", ECHO))), CONFIG)
    runs = run_agent(load_function_agent("tests.fakes.agents:echo"), [loaded], RunOptions(num_runs=2))
    runs.runs[("s", "one")][1].outcome = "failed"
    runs.runs[("s", "one")][1].reason = "turn 1: the agent raised X"
    (result,) = score_runs([loaded], runs).report.eval_sets[0].cases
    assert result.status == "failed" and result.reason == "run 2: turn 1: the agent raised X"
    assert result.metrics["tool_trajectory_avg_score"].score == 1.0  # pooled over the run that produced results


def _m(status: str, score: float | None, threshold: float | None, per: list[tuple[float | None, str]],
       details: dict[str, Any] | None = None) -> MetricResult:
    return MetricResult(score=score, status=status, threshold=threshold,  # type: ignore[arg-type]
                        per_invocation=[InvocationScore(score=s, status=st, details=details)  # type: ignore[arg-type]
                                        for s, st in per])


def test_pool_infers_lower_is_better_from_the_verdicts() -> None:
    """A criterion whose invocations pass below the threshold keeps that direction when pooled."""
    a = _m("passed", 0.0, 0.3, [(0.0, "passed")])
    b = _m("failed", 1.0, 0.3, [(1.0, "failed"), (0.0, "passed")])
    pooled = pool([(1, a), (2, b)])
    assert pooled.score == pytest.approx(1 / 3) and pooled.status == "failed"
    assert pool([(1, a), (2, a)]).status == "passed"


def test_pool_without_scores_keeps_values_and_worst_status() -> None:
    """Score-less metrics (seconds, counts) pool their ``value`` and fail when any run failed."""
    a = _m("passed", None, 5.0, [(None, "passed")], {"value": 1.0})
    b = _m("failed", None, 5.0, [(None, "failed")], {"value": 9.0})
    pooled = pool([(1, a), (2, b)])
    assert pooled.status == "failed" and pooled.details is not None and pooled.details["value"] == 5.0
    c = _m("error", None, 1.0, [])
    assert pool([(1, a), (2, c)]).status == "error"


def test_merged_report_keeps_the_judge_usage(tmp_path: Path, judge: JudgeStack) -> None:
    """The merged report of produced runs carries the judge's usage summary over every run (as plain scoring does)."""
    loaded = _set(tmp_path, {"criteria": {"final_response_match_v2": 0.5}})
    runs = run_agent(load_function_agent("tests.fakes.agents:echo"), [loaded], RunOptions(num_runs=2))
    scored = score_runs([loaded], runs, BuildContext(judge=judge))
    assert scored.report.usage is not None and scored.report.usage == judge.usage_summary()
    # 3 invocations x 2 runs x 2 sequential rounds (the fake judge's answers hold no verdict, so 3 samples never
    # decide the vote of 5)
    assert scored.report.usage.per_criterion["final_response_match_v2"].requests == 12


def test_a_failed_run_never_starts_a_custom_metrics_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed run is scored by the run-level criteria only: the custom metric's module is imported once (for the
    runs that are scored), not once more per failed run."""
    (tmp_path / ".git").mkdir()
    package = tmp_path / "agg_metrics_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "m.py").write_text(
        "import os, pathlib\n"
        "with pathlib.Path(__file__).with_name('imports.log').open('a') as f:\n    f.write(f'{os.getpid()}\\n')\n"
        "def ok(instance):\n    return 1.0\n", encoding="utf-8")
    config = {"criteria": {"failure": 0.0, "mine": 0.5},
              "custom_metrics": {"mine": {"code_config": {"name": "agg_metrics_pkg.m.ok"}}}}
    monkeypatch.chdir(tmp_path)
    loaded = load_set(tmp_path, eval_set("s", case("ok", inv("hi", "you said: hi", ECHO)),
                                         case("bad", inv("hi", "x"), inv("boom", "y"))), config)
    runs = run_agent(load_function_agent("tests.fakes.agents:fails_on_second_turn"), [loaded], RunOptions())
    ok, bad = score_runs([loaded], runs).report.eval_sets[0].cases
    assert ok.metrics["mine"].status == "passed" and "mine" not in bad.metrics
    assert bad.metrics["failure"].status == "failed"
    assert len((package / "imports.log").read_text(encoding="utf-8").split()) == 1
