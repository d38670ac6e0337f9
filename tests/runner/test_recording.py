"""Recorded runs: ADK EvalSetResult JSON that re-scores to the same report without running the agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.formats.adk import Invocation
from evalbot.load import load_actuals
from evalbot.pipeline import evaluate, read_actuals
from evalbot.runner.aggregate import score_runs
from evalbot.runner.custom_agent import load_function_agent
from evalbot.runner.execute import RunOptions, run_agent
from evalbot.runner.recording import FORMAT, repeated_runs, write_recording
from tests.fakes import agents
from tests.fakes.builders import case, eval_set, inv, load_set

CONFIG = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5, "failure": 0.0}}


def _record(tmp_path: Path, spec: str, num_runs: int = 1) -> tuple[Path, Any, Path]:
    loaded = load_set(tmp_path, eval_set(
        "s",
        case("one", inv("hi", "you said: hi", [("echo", {"text": "hi"})])),
        case("two", inv("a", "x"), inv("b", "y")),
    ), CONFIG)
    runs = run_agent(load_function_agent(spec), [loaded], RunOptions(num_runs=num_runs, concurrency=1))
    scored = score_runs([loaded], runs)
    out = write_recording(tmp_path / "out" / "recorded.json", [loaded], runs, scored.per_run)
    return out, scored.report, Path(loaded.path)


@pytest.mark.parametrize(("spec", "num_runs"), [("echo", 1), ("fails_on_second_turn", 1), ("flaky", 3)])
def test_rescoring_the_recording_gives_the_same_report(tmp_path: Path, spec: str, num_runs: int) -> None:
    """`evalbot run PATH --actuals recorded.json` reproduces the report of the run, failures and runs included."""
    agents.flaky.calls = 0
    out, report, path = _record(tmp_path, f"tests.fakes.agents:{spec}", num_runs)
    again = evaluate([str(path)], actuals=[str(out)])
    assert again.model_dump() == report.model_dump()


def test_recording_is_an_adk_eval_set_result(tmp_path: Path) -> None:
    """Snake_case EvalSetResult: one case result per case and run, ADK status ints, invocations, evalbot extras."""
    out, _, _ = _record(tmp_path, "tests.fakes.agents:fails_on_second_turn")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["eval_set_id"] == "s" and data["evalbot"]["format"] == FORMAT and data["evalbot"]["num_runs"] == 1
    one, two = data["eval_case_results"]
    assert (one["eval_id"], one["final_eval_status"], two["final_eval_status"]) == ("one", 1, 2)
    assert [m["metric_name"] for m in one["overall_eval_metric_results"]][:3] == [
        "tool_trajectory_avg_score", "response_match_score", "failure"]
    assert one["overall_eval_metric_results"][0]["criterion"] == {"threshold": 1.0}
    per = one["eval_metric_result_per_invocation"][0]
    assert Invocation.model_validate(per["actual_invocation"]).invocation_id == "run1-turn1"
    assert per["expected_invocation"]["final_response"]["parts"][0]["text"] == "you said: hi"
    assert per["eval_metric_results"][0]["eval_status"] == 1
    assert two["evalbot"]["outcome"] == "failed" and two["evalbot"]["failed_turn"] == 2
    assert two["overall_eval_metric_results"] == [] and len(two["eval_metric_result_per_invocation"]) == 1


def test_plain_actuals_loader_reads_a_successful_single_run(tmp_path: Path) -> None:
    """Tools that only know EvalSetResult files get the same invocations from the recording."""
    out, _, _ = _record(tmp_path, "tests.fakes.agents:echo")
    actuals = load_actuals(out)
    found = actuals.find("s", "two")
    assert isinstance(found, list) and [i.invocation_id for i in found] == ["run1-turn1", "run1-turn2"]


def test_several_eval_sets_are_written_as_a_list(tmp_path: Path) -> None:
    """Two eval sets give a JSON list of two EvalSetResults, which read back into one run set."""
    sets = [load_set(tmp_path, eval_set(name, case("c", inv("hi"))), name=f"{name}.evalset.json")
            for name in ("a", "b")]
    runs = run_agent(load_function_agent("tests.fakes.agents:echo"), sets, RunOptions())
    out = write_recording(tmp_path / "rec.json", sets, runs)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert [d["eval_set_id"] for d in data] == ["a", "b"]
    read = read_actuals([str(out)])
    again, problems = read.runs, read.recording_errors
    assert problems == [] and again is not None and sorted(again.runs) == [("a", "c"), ("b", "c")]


def test_ordinary_actuals_are_not_recordings(tmp_path: Path) -> None:
    """Files without the evalbot marker (or unreadable ones) leave scoring to the ordinary loader."""
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"c": [inv()]}), encoding="utf-8")
    read = read_actuals([str(plain), str(tmp_path / "missing.json")])
    assert (read.runs, read.recording_errors) == (None, [])
    assert [str(e.path) for e in read.errors] == [str(tmp_path / "missing.json")]


def test_a_broken_recording_names_the_pointer(tmp_path: Path) -> None:
    """A run number outside 1..num_runs is reported with the file and JSON pointer."""
    out, _, path = _record(tmp_path, "tests.fakes.agents:echo")
    data = json.loads(out.read_text(encoding="utf-8"))
    data["eval_case_results"][1]["evalbot"]["run"] = 5
    out.write_text(json.dumps(data), encoding="utf-8")
    report = evaluate([str(path)], actuals=[str(out)])
    assert [e.pointer for e in report.errors] == ["/eval_case_results/1/evalbot/run"]
    assert "from 1 to 1" in report.errors[0].message


@pytest.mark.parametrize("claimed", [10**9, 1001, 0, "3"])
def test_a_forged_number_of_runs_is_refused(tmp_path: Path, claimed: Any) -> None:
    """A recording claiming a billion runs (each would be scored) or a non-count is an error at its pointer."""
    out, _, path = _record(tmp_path, "tests.fakes.agents:echo")
    data = json.loads(out.read_text(encoding="utf-8"))
    data["evalbot"]["num_runs"] = claimed
    out.write_text(json.dumps(data), encoding="utf-8")
    report = evaluate([str(path)], actuals=[str(out)])
    assert [e.pointer for e in report.errors] == ["/evalbot/num_runs"]
    assert "from 1 to 1,000" in report.errors[0].message


def test_only_an_eval_set_result_repeating_a_case_is_read_as_runs() -> None:
    """A case listed 3 times is runs 1-3 (num_runs 3), the input untouched; no repeat, a non-result, a malformed
    entry or more repeats than --num-runs allows: None (read as plain actuals)."""
    data = {"eval_set_id": "s", "eval_case_results": [{"eval_id": "a"}, {"eval_id": "b"}, {"eval_id": "a"},
                                                      {"eval_id": "a"}]}
    marked = repeated_runs(data)
    assert marked["evalbot"] == {"num_runs": 3}
    assert [r["evalbot"]["run"] for r in marked["eval_case_results"]] == [1, 1, 2, 3]
    assert "evalbot" not in data and "evalbot" not in data["eval_case_results"][0]
    assert repeated_runs({"eval_case_results": [{"eval_id": "a"}, {"eval_id": "b"}]}) is None
    assert repeated_runs({"a": []}) is None and repeated_runs(None) is None
    assert repeated_runs({"eval_case_results": ["x", "x"]}) is None
    # an id that is no string (found by tests/test_fuzz_inputs.py: an unhashable list crashed with exit 70)
    assert repeated_runs({"eval_case_results": [{"eval_id": []}, {"eval_id": "c2"}, {"eval_id": "c2"}]}) is None
    assert repeated_runs({"eval_case_results": [{"eval_id": "a", "eval_set_id": {"x": 1}}] * 2}) is None
    assert repeated_runs({"eval_case_results": [{"eval_id": "a"}] * 1001}) is None


def test_recording_validates_as_adk_eval_set_result(tmp_path: Path) -> None:
    """When google-adk is installed, ADK's own EvalSetResult model accepts the recording."""
    eval_result = pytest.importorskip("google.adk.evaluation.eval_result")
    out, _, _ = _record(tmp_path, "tests.fakes.agents:fails_on_second_turn")
    parsed = eval_result.EvalSetResult.model_validate_json(out.read_text(encoding="utf-8"))
    assert [c.eval_id for c in parsed.eval_case_results] == ["one", "two"]


def test_recording_of_a_legacy_file_rescored_under_another_path(tmp_path: Path) -> None:
    """A legacy list-of-cases file's eval set id is its path; its recording applies when the path is spelled
    differently (the case names are unique)."""
    legacy = tmp_path / "legacy" / "hello.test.json"
    legacy.parent.mkdir()
    turn = {"query": "hi", "expected_tool_use": [{"tool_name": "echo", "tool_input": {"text": "hi"}}],
            "reference": "you said: hi"}
    legacy.write_text(json.dumps([{"name": "greeting", "data": [turn]}]), encoding="utf-8")
    (legacy.parent / "test_config.json").write_text(json.dumps({"criteria": {"tool_trajectory_avg_score": 1.0}}))
    from evalbot.load import load_eval_set

    loaded = load_eval_set(legacy)
    runs = run_agent(load_function_agent("tests.fakes.agents:echo"), [loaded], RunOptions())
    out = write_recording(tmp_path / "rec.json", [loaded], runs)
    other_spelling = str(tmp_path / "legacy" / ".." / "legacy" / "hello.test.json")
    report = evaluate([other_spelling], actuals=[str(out)])
    assert report.totals.passed == 1, report.eval_sets[0].cases[0].reason


def test_an_eval_id_that_is_no_string_is_invalid_input_not_a_crash(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The fuzzer's find: an EvalSetResult whose first case's eval_id is a list, and another case listed twice.
    ``evalbot run`` exits 2 naming the file and the pointer (it crashed with exit 70)."""
    import json

    from evalbot.cli.commands import main

    (tmp_path / "fz").mkdir()
    (tmp_path / "fz" / "fz.evalset.json").write_text(json.dumps(
        {"eval_set_id": "fz", "eval_cases": [{"eval_id": "c2", "conversation": [inv("q", "hello", [])]}]}),
        encoding="utf-8")
    run = {"final_response": {"role": "model", "parts": [{"text": "hello"}]},
           "user_content": {"role": "user", "parts": [{"text": "q"}]}}
    bad = tmp_path / "runs.json"
    bad.write_text(json.dumps({"eval_set_id": "fz", "eval_case_results": [
        {"eval_id": [], "eval_metric_result_per_invocation": [{"actual_invocation": run}]},
        {"eval_id": "c2", "eval_metric_result_per_invocation": [{"actual_invocation": run}]},
        {"eval_id": "c2", "eval_metric_result_per_invocation": [{"actual_invocation": run}]}]}), encoding="utf-8")
    assert main(["run", str(tmp_path / "fz"), "--actuals", str(bad)], env={}) == 2
    shown = capsys.readouterr().out
    assert "runs.json:/eval_case_results/0/eval_id: required: the case's eval_id" in shown, shown
