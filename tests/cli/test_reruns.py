"""Reruns of flipped cases (``rerun_flipped``) through ``evalbot compare --agent``: a scripted fake agent (pass
probability or outcome sequence per case, seeded) whose flipped cases are rerun and decided against main's
history with an exact test; bounded run-wide; with recorded runs, the comment says reruns were not possible."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.agents import scripted
from tests.fakes.builders import Writer, case, eval_set, inv

AGENT = "tests.fakes.agents:scripted"
REFRESHES = 5


def _project(write: Writer, cases: int, evalbot: dict[str, Any] | None = None) -> None:
    write("evals/s.evalset.json", eval_set("s", *[case(f"c{i}", inv(f"q{i}", "done", [("answer", {"q": f"q{i}"})]))
                                                  for i in range(cases)]))
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}, "evalbot": evalbot or {}})


def _script(write: Writer, monkeypatch: pytest.MonkeyPatch, name: str, cases: dict[str, Any], seed: int = 3) -> None:
    monkeypatch.setenv("EVALBOT_FAKE_AGENT_SCRIPT", str(write(name, {"seed": seed, "cases": cases})))
    scripted.reset()


def _main_history(write: Writer, monkeypatch: pytest.MonkeyPatch, refreshes: int = REFRESHES) -> None:
    """Refresh the baseline ``refreshes`` times with an agent that always passes: every history is ✓✓✓✓✓."""
    _script(write, monkeypatch, "main.json", {})
    for n in range(refreshes):
        assert main(["baseline", "evals", "--agent", AGENT, "--output", "base.json", "--commit", f"{n:040x}"],
                    {}) == 0


def _compare(*extra: str) -> int:
    return main(["compare", "--baseline", "base.json", "evals", "--agent", AGENT, "--agent-concurrency", "1",
                 "--comment", "c.md", "--report", "r.json", "--summary", "s.md", "--html", "r.html", *extra], {})


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    scripted.reset()
    return tmp_path


def test_a_real_drop_regresses_and_a_bad_draw_is_inconclusive(proj: Path, write: Writer,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """c0 fails its run and both reruns (0 of 3 against 5 of 5 on main, p = 0.018): regressed, blocking. c1 fails
    once and passes both reruns (2 of 3, p = 0.375): inconclusive, shown with its runs and p-value, not blocking.
    Each flipped case ran 3 times, the others once."""
    _project(write, 4)
    _main_history(write, monkeypatch)
    _script(write, monkeypatch, "pr.json", {"q0": "F", "q1": "FP"})
    assert _compare() == 1
    assert scripted.calls == {"q0": 3, "q1": 3, "q2": 1, "q3": 1}
    comment = (proj / "c.md").read_text()
    assert "blocked: 1 regressed · 1 inconclusive (not blocking)" in comment
    assert "a real drop: its 2 rerun(s) confirm it (Fisher exact p = 0.018)" in comment
    assert ("Agent runs: ✗ + ✗✗ (the first run failed); 2 rerun(s) after the flip: passed 0 of 3 runs, against "
            "✓✓✓✓✓ on main, Fisher exact p = 0.018") in comment
    assert "Agent runs: ✗ + ✓✓ (the first run failed); 2 rerun(s) after the flip: passed 2 of 3 runs" in comment
    assert "a bad draw: its 2 rerun(s) show no significant drop against main (Fisher exact p = 0.375" in comment
    for out in ("s.md", "r.html"):
        assert "✗ + ✓✓ (the first run failed)" in (proj / out).read_text()
    cases = {c["eval_id"]: c for c in json.loads((proj / "r.json").read_text())["eval_sets"][0]["cases"]}
    assert (cases["c0"]["runs"], cases["c0"]["reruns"], cases["c1"]["runs"]) == ("FFF", 2, "FPP")


def test_only_bad_draws_pass_the_gate(proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A flip the reruns do not confirm leaves the gate green (exit 0), and block_inconclusive makes it block."""
    _project(write, 2)
    _main_history(write, monkeypatch)
    _script(write, monkeypatch, "pr.json", {"q1": "FP"})
    assert _compare() == 0
    assert "1 inconclusive (not blocking)" in (proj / "c.md").read_text()
    _project(write, 2, {"block_inconclusive": True})
    scripted.reset()
    assert _compare() == 1
    assert "blocked: s: 1 case(s) failed, but their reruns show no significant drop" in (proj / "c.md").read_text()


def test_rerun_flipped_0_turns_reruns_off(proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    """With rerun_flipped: 0 a flipped case is run once and regresses as before."""
    _project(write, 2, {"rerun_flipped": 0})
    _main_history(write, monkeypatch)
    _script(write, monkeypatch, "pr.json", {"q1": "FP"})
    assert _compare() == 1
    assert scripted.calls == {"q0": 1, "q1": 1} and "blocked: 1 regressed" in (proj / "c.md").read_text()


@pytest.mark.parametrize(("value", "says"), [(-1, "greater than or equal to 0"), (21, "less than or equal to 20"),
                                             ("2", "valid integer"), (10**12, "less than or equal to 20")])
def test_hostile_rerun_counts_are_exit_2(proj: Path, write: Writer, value: Any, says: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A negative, huge or non-integer rerun_flipped is exit 2 naming the file and pointer, before any run."""
    _project(write, 1, {"rerun_flipped": value})
    assert _compare() == 2
    err = capsys.readouterr().err
    assert "evals/test_config.json:/evalbot/rerun_flipped" in err and says in err and scripted.calls == {}


def test_reruns_are_bounded_run_wide(proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    """12 cases all failing now: at most 10 reruns in a run of 12 case runs, so 5 cases are rerun twice; the
    others stay regressed (never passed for want of reruns) and the comment says the cap was hit."""
    _project(write, 12)
    _main_history(write, monkeypatch)
    _script(write, monkeypatch, "pr.json", {f"q{i}": "F" for i in range(12)})
    assert _compare() == 1
    assert sum(scripted.calls.values()) == 12 + 10
    comment = (proj / "c.md").read_text()
    assert "reruns capped: 5 of 12 flipped case(s) were rerun (at most 10 reruns in this run" in comment
    assert "blocked: 12 regressed" in comment


def test_a_short_history_cannot_excuse_a_flip(proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against one recorded outcome on main even 0 of 3 runs is not significant (p = 0.250): the test has no power,
    so reruns excuse nothing: both flipped cases regress, whatever their reruns did."""
    _project(write, 2)
    _main_history(write, monkeypatch, refreshes=1)
    _script(write, monkeypatch, "pr.json", {"q0": "F", "q1": "FFP"})
    assert _compare() == 1
    comment = (proj / "c.md").read_text()
    assert "blocked: 2 regressed" in comment and "inconclusive" not in comment
    assert "main's history (1 outcome(s)) is too short for its 2 rerun(s) to tell a bad draw" in comment


def test_recorded_runs_say_reruns_were_not_possible(proj: Path, write: Writer, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring recorded runs, a flipped case cannot be rerun: the comment says so and how to enable reruns."""
    _project(write, 2)
    _main_history(write, monkeypatch)
    _script(write, monkeypatch, "pr.json", {"q1": "F"})
    assert main(["run", "evals", "--agent", AGENT, "--record", "rec.json"], {}) == 1
    assert main(["compare", "--baseline", "base.json", "evals", "--actuals", "rec.json", "--comment", "c.md"], {}) == 1
    comment = (proj / "c.md").read_text()
    assert "1 flipped case(s) could not be rerun to tell a real drop from a bad draw" in comment
    assert "evalbot compare --agent MODULE:CALLABLE" in comment


def test_seeded_pass_probabilities_tell_drops_from_noise(proj: Path, write: Writer,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """80 cases passing on main 5 refreshes out of 5: 4 now pass with probability 0 (a real drop), 76 with 0.95
    (noise). Every dropped case regresses, no noisy one does, and every flip was rerun (within the bound)."""
    _project(write, 80)
    _main_history(write, monkeypatch)
    probabilities = {f"q{i}": 0.0 if i < 4 else 0.95 for i in range(80)}
    _script(write, monkeypatch, "pr.json", probabilities, seed=11)
    assert _compare() == 1
    cases = json.loads((proj / "r.json").read_text())["eval_sets"][0]["cases"]
    rerun = {c["eval_id"] for c in cases if c["reruns"]}
    assert {f"c{i}" for i in range(4)} < rerun  # the drops, and some noisy flips
    comment = (proj / "c.md").read_text()
    assert "blocked: 4 regressed" in comment and f"{len(rerun) - 4} inconclusive" in comment
    assert "reruns capped" not in comment
