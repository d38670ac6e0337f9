"""``evalbot run --agent/--adk-agent/--num-runs/--record`` end to end through the CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from tests.fakes.fake_gemini import FakeGemini, Scripted

EXAMPLE = "examples/agent/weather.evalset.json"
AGENT = "examples.agent.weather_agent:agent"
ENV: dict[str, str] = {}


def test_example_agent_run_record_and_rescore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The bundled example passes every case; its recording re-scores to the identical report."""
    record, first, second = tmp_path / "runs.json", tmp_path / "r1.json", tmp_path / "r2.json"
    assert main(["run", EXAMPLE, "--agent", AGENT, "--record", str(record), "--report", str(first)], ENV) == 0
    err = capsys.readouterr().err
    assert f"ran {AGENT}: 3 ok (case runs)" in err and f"recorded the runs in {record}" in err
    assert main(["run", EXAMPLE, "--actuals", str(record), "--report", str(second)], ENV) == 0
    one, two = (json.loads(p.read_text(encoding="utf-8")) for p in (first, second))
    assert one == two and one["totals"]["passed"] == 3


def test_num_runs_are_pooled_in_the_report(tmp_path: Path) -> None:
    """--num-runs 3 keeps per-run results under details.runs and says how runs were combined."""
    out = tmp_path / "r.json"
    assert main(["run", EXAMPLE, "--agent", AGENT, "--num-runs", "3", "--report", str(out)], ENV) == 0
    report = json.loads(out.read_text(encoding="utf-8"))
    traj = report["eval_sets"][0]["cases"][1]["metrics"]["tool_trajectory_avg_score"]
    assert [r["run"] for r in traj["details"]["runs"]] == [1, 2, 3] and len(traj["per_invocation"]) == 6
    assert any("3 times per case" in n for n in report["notices"])


def test_failing_agent_exits_1_and_shows_the_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A raising agent fails its cases (exit 1); the message is in the report."""
    out = tmp_path / "r.json"
    assert main(["run", EXAMPLE, "--agent", "tests.fakes.agents:raises", "--report", str(out)], ENV) == 1
    cases = json.loads(out.read_text(encoding="utf-8"))["eval_sets"][0]["cases"]
    assert {c["status"] for c in cases} == {"failed"}
    assert cases[0]["reason"] == "turn 1: the agent raised ValueError: cannot handle \"What's the weather in Paris?\""
    assert "3 failed (case runs)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--num-runs", "2"], "need --agent or --adk-agent"),
        (["--agent", AGENT, "--adk-agent", "x"], "either --agent or --adk-agent"),
        (["--agent", AGENT, "--actuals", "examples/runs/pr.json"], "--actuals scores recorded runs"),
        (["--agent", "nomodule"], "argument --agent: expected MODULE:CALLABLE"),
        (["--agent", AGENT, "--num-runs", "0"], "argument --num-runs: expected an integer from 1"),
    ],
)
def test_invalid_agent_options_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Contradictory or invalid options are input errors (exit 2) with a clear message (invalid values are refused
    while parsing, before any work: SystemExit(2) from the parser)."""
    try:
        code = main(["run", EXAMPLE, *argv], ENV)
    except SystemExit as exited:
        code = exited.code  # type: ignore[assignment]
    assert code == 2
    assert message in capsys.readouterr().err


def test_simulated_conversation_is_scored_by_the_user_simulator_criterion(
    tmp_path: Path, fake: FakeGemini, capsys: pytest.CaptureFixture[str]
) -> None:
    """Scenario + --agent: the simulator (its own model) drives the agent; the per-turn criterion scores the
    transcript; the recording re-scores to the same report."""
    fake.script(Scripted(texts=["Is it cold there?"], model="sim-model"),
                Scripted(texts=["</finished>"], model="sim-model"))
    fake.responder = lambda prompt, i, rec: '{"is_valid": true, "reasoning": "follows the plan"}'
    folder = tmp_path / "evals"
    folder.mkdir()
    (folder / "sim.evalset.json").write_text(json.dumps({"eval_set_id": "sim", "eval_cases": [
        {"eval_id": "chat", "conversation_scenario": {"starting_prompt": "Weather in Oslo?",
                                                      "conversation_plan": "Ask about Oslo, then stop."}}]}))
    (folder / "test_config.json").write_text(json.dumps({
        "criteria": {"per_turn_user_simulator_quality_v1": {
            "threshold": 0.5, "judge_model_options": {"judge_model": "judge-model", "num_samples": 1}}},
        "user_simulator_config": {"model": "sim-model"}}))
    env = {"GOOGLE_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": fake.url}
    record, first, second = tmp_path / "runs.json", tmp_path / "r1.json", tmp_path / "r2.json"
    argv = ["run", str(folder), "--agent", "tests.fakes.agents:echo", "--record", str(record)]
    assert main([*argv, "--report", str(first)], env) == 0
    report = json.loads(first.read_text(encoding="utf-8"))
    case = report["eval_sets"][0]["cases"][0]
    assert [t["user"] for t in case["turns"]] == ["Weather in Oslo?", "Is it cold there?"]
    metric = case["metrics"]["per_turn_user_simulator_quality_v1"]
    assert (metric["score"], metric["status"], len(metric["per_invocation"])) == (1.0, "passed", 2)
    assert [r.model for r in fake.requests].count("sim-model") == 2
    recorded = json.loads(record.read_text(encoding="utf-8"))["eval_case_results"][0]["evalbot"]
    assert recorded["stop"] == "stop_signal"
    assert main(["run", str(folder), "--actuals", str(record), "--report", str(second)], env) == 0
    rescored = json.loads(second.read_text(encoding="utf-8"))
    # judge usage differs by nature: the agent run also paid for the simulated user's turns
    rescored.pop("usage"), report.pop("usage")
    assert rescored == report
    assert [r.model for r in fake.requests].count("sim-model") == 2  # re-scoring does not run the simulator
