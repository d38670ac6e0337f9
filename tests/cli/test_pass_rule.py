"""``pass_rule: "k/N"`` through ``evalbot baseline`` / ``compare``: a scripted fake agent run N times by evalbot, or N
recorded runs read back as actuals; the comment, job summary and HTML report show each case's runs and the rule."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.agents import scripted
from tests.fakes.builders import Writer, case, eval_set, inv

AGENT = "tests.fakes.agents:scripted"


def _config(rule: Any) -> dict[str, Any]:
    return {"criteria": {"tool_trajectory_avg_score": 1.0}, "evalbot": {"pass_rule": rule}}


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three one-turn cases (prompts q0..q2) whose expected tool call the scripted agent makes when it passes."""
    cases = [case(f"c{i}", inv(f"q{i}", "done", [("answer", {"q": f"q{i}"})])) for i in range(3)]
    write("evals/s.evalset.json", eval_set("s", *cases))
    write("evals/test_config.json", _config("2/3"))
    monkeypatch.chdir(tmp_path)
    scripted.reset()
    return tmp_path


def _script(write: Writer, monkeypatch: pytest.MonkeyPatch, name: str, cases: dict[str, Any]) -> None:
    monkeypatch.setenv("EVALBOT_FAKE_AGENT_SCRIPT", str(write(name, {"seed": 3, "cases": cases})))
    scripted.reset()


def _baseline(*extra: str) -> None:
    assert main(["baseline", "evals", "--agent", AGENT, "--num-runs", "3", "--agent-concurrency", "1",
                 "--output", "base.json", "--commit", "abc", *extra], {}) == 0


def test_k_of_n_decides_cases_from_the_agent_s_runs(proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """2/3: a case passing ✓✗✓ passes (ADK's pooling would fail it: mean 0.67 < 1.0), ✓✗✗ regresses; every output
    shows each case's runs and the rule; the baseline records the rule."""
    _script(write, monkeypatch, "main.json", {})
    _baseline()
    assert json.loads((proj / "base.json").read_text())["eval_sets"]["s"]["pass_rule"] == "2/3"
    _script(write, monkeypatch, "pr.json", {"q0": "PFP", "q1": "PFF"})
    capsys.readouterr()
    code = main(["compare", "--baseline", "base.json", "evals", "--agent", AGENT, "--num-runs", "3",
                 "--agent-concurrency", "1", "--comment", "c.md", "--summary", "s.md", "--html", "r.html",
                 "--report", "r.json"], {})
    assert code == 1
    comment = (proj / "c.md").read_text()
    assert "blocked: 1 regressed" in comment
    shown = ("Agent runs: ✓✗✗ + ✗✗ (pass rule 2/3: passed 1 of 3); 2 rerun(s) after the flip: passed 1 of 5 runs, "
             "against ✓ on main")  # the flipped case is rerun (rerun_flipped: 2) and stays regressed
    assert shown in comment
    for out in ("s.md", "r.html"):
        assert shown in (proj / out).read_text()
    report = json.loads((proj / "r.json").read_text())
    cases = {c["eval_id"]: c for c in report["eval_sets"][0]["cases"]}
    assert (cases["c0"]["status"], cases["c0"]["runs"]) == ("passed", "PFP")
    assert (cases["c1"]["status"], cases["c1"]["runs"], cases["c1"]["reruns"]) == ("failed", "PFFFF", 2)
    assert report["eval_sets"][0]["pass_rule"] == "2/3" and scripted.calls == {"q0": 3, "q1": 5, "q2": 3}


def test_recorded_runs_are_decided_by_the_same_rule(proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    """N recordings of each case in the actuals (``run --num-runs 3 --record``) decide as the live run did."""
    _script(write, monkeypatch, "main.json", {})
    _baseline()
    _script(write, monkeypatch, "pr.json", {"q0": "FFP", "q2": "PPF"})
    assert main(["run", "evals", "--agent", AGENT, "--num-runs", "3", "--agent-concurrency", "1",
                 "--record", "rec.json"], {}) in (0, 1)
    code = main(["compare", "--baseline", "base.json", "evals", "--actuals", "rec.json", "--comment", "c.md",
                 "--report", "r.json"], {})
    assert code == 1
    comment = (proj / "c.md").read_text()
    assert "blocked: 1 regressed" in comment and "Agent runs: ✗✗✓ (pass rule 2/3: passed 1 of 3)" in comment
    statuses = {c["eval_id"]: c["status"] for c in json.loads((proj / "r.json").read_text())["eval_sets"][0]["cases"]}
    assert statuses == {"c0": "failed", "c1": "passed", "c2": "passed"}


def _adk_saved(recording: Path, out: Path) -> None:
    """The recording as ADK's AgentEvaluator saves N runs: each case listed once per run, no evalbot keys."""
    data = json.loads(recording.read_text())
    data.pop("evalbot")
    for result in data["eval_case_results"]:
        result.pop("evalbot")
    out.write_text(json.dumps(data))


def test_an_adk_eval_set_result_listing_each_case_n_times_is_n_runs(proj: Path, write: Writer,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """AgentEvaluator's N runs of a case (the case listed N times) decide by the rule as N recorded runs."""
    _script(write, monkeypatch, "main.json", {})
    _baseline()
    _script(write, monkeypatch, "pr.json", {"q0": "FFP", "q2": "PPF"})
    assert main(["run", "evals", "--agent", AGENT, "--num-runs", "3", "--agent-concurrency", "1",
                 "--record", "rec.json"], {}) in (0, 1)
    _adk_saved(proj / "rec.json", proj / "adk.json")
    code = main(["compare", "--baseline", "base.json", "evals", "--actuals", "adk.json", "--comment", "c.md",
                 "--report", "r.json"], {})
    assert code == 1 and "Agent runs: ✗✗✓ (pass rule 2/3: passed 1 of 3)" in (proj / "c.md").read_text()
    cases = json.loads((proj / "r.json").read_text())["eval_sets"][0]["cases"]
    assert {c["eval_id"]: c["runs"] for c in cases} == {"c0": "FFP", "c1": "PPP", "c2": "PPF"}


def test_a_run_with_fewer_runs_than_the_rule_is_exit_2(proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """2/3 over a single run of each case: invalid input naming the eval set and the fix, never a pass."""
    _script(write, monkeypatch, "main.json", {})
    _baseline()
    code = main(["compare", "--baseline", "base.json", "evals", "--agent", AGENT, "--comment", "c.md"], {})
    assert code == 2
    comment = (proj / "c.md").read_text()
    assert "2/3 decides a case from exactly 3 run(s) of the agent, but 3 case(s) have another number" in comment
    assert "--num-runs 3" in comment


@pytest.mark.parametrize(("rule", "pointer", "says"), [
    ("0/3", "/evalbot/pass_rule", "must be at least 1"),
    ("4/3", "/evalbot/pass_rule", "cannot exceed N"),
    ("-1/2", "/evalbot/pass_rule", "must be at least 1"),
    ("1/99999999", "/evalbot/pass_rule", "must be from 1 to 1,000"),
    ("a/b", "/evalbot/pass_rule", "whole numbers"),
    ({"s": "3/2"}, "/evalbot/pass_rule/s", "cannot exceed N"),
])
def test_hostile_rules_in_the_config_are_exit_2(proj: Path, write: Writer, rule: Any, pointer: str, says: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI refuses a bad rule before running the agent, naming the config file and the JSON path."""
    write("evals/test_config.json", _config(rule))
    code = main(["compare", "--baseline", "base.json", "evals", "--agent", AGENT], {})
    err = capsys.readouterr().err
    assert code == 2 and f"evals/test_config.json:{pointer}" in err and says in err
    assert scripted.calls == {}


def test_loosening_the_rule_against_main_blocks_as_a_yardstick_change(
        proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Main decided 2/3; the PR's config says 1/3, so ✓✗✗ would pass: a yardstick change, blocking by default."""
    _script(write, monkeypatch, "main.json", {})
    _baseline()
    write("evals/test_config.json", _config("1/3"))
    _script(write, monkeypatch, "pr.json", {"q1": "PFF"})
    code = main(["compare", "--baseline", "base.json", "evals", "--agent", AGENT, "--num-runs", "3",
                 "--agent-concurrency", "1", "--comment", "c.md"], {})
    comment = (proj / "c.md").read_text()
    assert code == 1 and "pass rule 2/3 → 1/3" in comment and "1 yardstick change not accepted" in comment
