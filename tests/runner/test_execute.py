"""Running every case × run with bounded concurrency; problems stay on their own case."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalbot.errors import ConfigError
from evalbot.runner.custom_agent import load_function_agent
from evalbot.runner.execute import RunOptions, run_agent
from tests.fakes import agents
from tests.fakes.builders import case, eval_set, inv, load_set


def test_concurrency_is_bounded_and_every_run_is_kept(tmp_path: Path) -> None:
    """8 cases × 2 runs with concurrency 3: never more than 3 calls at once, 16 runs kept in run order."""
    agents.IN_FLIGHT.update(now=0, peak=0)
    loaded = load_set(tmp_path, eval_set("s", *[case(f"c{i}", inv(f"q{i}")) for i in range(8)]))
    runs = run_agent(load_function_agent("tests.fakes.agents:counting"), [loaded],
                     RunOptions(num_runs=2, concurrency=3))
    assert agents.IN_FLIGHT["peak"] == 3
    assert len(runs.runs) == 8 and all([r.run for r in rs] == [1, 2] for rs in runs.runs.values())
    assert runs.agent == "tests.fakes.agents:counting" and runs.num_runs == 2


def test_a_hanging_case_does_not_stop_the_others(tmp_path: Path) -> None:
    """The hung case times out as failed while the rest complete."""
    loaded = load_set(tmp_path, eval_set("s", case("slow", inv("hang")), case("fast", inv("hi"))))
    runs = run_agent(load_function_agent("tests.fakes.agents:counting"), [loaded],
                     RunOptions(timeout=0.3, concurrency=2))
    assert runs.of("s", "slow")[0].outcome == "failed" and runs.of("s", "fast")[0].outcome == "ok"


def test_unloadable_cases_are_skipped(tmp_path: Path) -> None:
    """A case that failed to load is not run (scoring reports its error)."""
    loaded = load_set(tmp_path, eval_set("s", case("ok", inv("hi")), {"eval_id": "broken", "conversation": 3}))
    runs = run_agent(load_function_agent("tests.fakes.agents:echo"), [loaded], RunOptions())
    assert list(runs.runs) == [("s", "ok")]


def test_scenarios_without_an_llm_or_with_a_bad_config(tmp_path: Path) -> None:
    """No judge: the scenario is not evaluated with the reason; an invalid simulator config is an error."""
    scenario = {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p"}}
    loaded = load_set(tmp_path, eval_set("s", scenario))
    runs = run_agent(load_function_agent("tests.fakes.agents:echo"), [loaded],
                     RunOptions(judge_unavailable_reason="no judge credentials"))
    (result,) = runs.of("s", "sim")
    assert result.outcome == "not_evaluated" and result.reason is not None and "no judge credentials" in result.reason
    bad = load_set(tmp_path, eval_set("s2", scenario), {"criteria": {}, "user_simulator_config": {"type": "text"}},
                   name="bad.evalset.json")
    (result,) = run_agent(load_function_agent("tests.fakes.agents:echo"), [bad], RunOptions(judge=object())).of(
        "s2", "sim")
    assert result.outcome == "error" and "'text' is not a simulator type" in (result.reason or "")


def test_an_audio_simulator_scenario_is_not_evaluated_naming_the_option(tmp_path: Path) -> None:
    """``user_simulator_config.type: llm_audio`` (ADK's voice simulator): the scenario is not_evaluated with a reason
    naming the option, no turn is run for it, and the fixed-conversation cases still run."""
    scenario = {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p"}}
    loaded = load_set(tmp_path, eval_set("s", scenario, case("fixed", inv("hi"))),
                      {"criteria": {}, "user_simulator_config": {"type": "llm_audio"}})
    runs = run_agent(load_function_agent("tests.fakes.agents:echo"), [loaded], RunOptions(judge=object()))
    (sim,), (fixed,) = runs.of("s", "sim"), runs.of("s", "fixed")
    assert sim.outcome == "not_evaluated" and "user_simulator_config.type 'llm_audio'" in (sim.reason or "")
    assert sim.invocations == [] and fixed.outcome == "ok" and len(fixed.invocations) == 1


def test_an_unknown_persona_id_is_a_case_error_naming_the_file_pointer_and_known_ids(tmp_path: Path) -> None:
    """ADK refuses an id its persona registry lacks; evalbot says where and which ids exist, and the set's other
    cases still load."""
    scenario = {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p",
                                                            "user_persona": "GRUMPY"}}
    loaded = load_set(tmp_path, eval_set("s", case("fixed", inv("hi")), scenario))
    fixed, sim = loaded.cases
    assert fixed.error is None and sim.error is not None
    assert str(sim.error) == (
        f"{loaded.path}:/eval_cases/1/conversation_scenario/user_persona: unknown user_persona id 'GRUMPY'; the "
        "built-in ids are EVALUATOR, EXPERT, NOVICE (or give an object with 'description' and 'behaviors')")
    for known in ("EXPERT", "NOVICE", "EVALUATOR"):
        ok = {"eval_id": known, "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "p",
                                                          "user_persona": known}}
        assert load_set(tmp_path / known, eval_set("s", ok)).cases[0].error is None


@pytest.mark.parametrize("kwargs", [{"num_runs": 0}, {"concurrency": 0}, {"timeout": 0.0}])
def test_invalid_options(kwargs: dict[str, float]) -> None:
    """Non-positive run counts, concurrency or timeouts are rejected."""
    with pytest.raises(ConfigError):
        RunOptions(**kwargs)  # type: ignore[arg-type]
