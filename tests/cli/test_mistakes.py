"""The common mistakes of a first hour with evalbot (issue 39's table), each caught with the message it must give:
never a pass by accident, never a wall of repeated lines, and a "did you mean" where a name was misspelt."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from evalbot.criteria import CRITERIA

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled example (eval sets, recorded runs, judge cache, baseline), as the current directory."""
    for name in ("evals", "runs", "judge-cache", ".evalbot"):
        shutil.copytree(ROOT / "examples" / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


REPLAY = ["--judge-cache", "judge-cache", "--judge-replay"]


def test_a_misspelt_criterion_names_the_closest_one_not_the_whole_list(
        proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = proj / "evals" / "orders" / "test_config.json"
    config.write_text(config.read_text().replace('"tool_trajectory_avg_score"', '"tool_trajectory_avg_scor"'))
    assert main(["run", "evals/orders", "--actuals", "runs/pr.json"], env={}) == 2
    out = capsys.readouterr().out
    assert ("unknown criterion 'tool_trajectory_avg_scor' (evals/orders/test_config.json:/criteria/"
            "tool_trajectory_avg_scor); did you mean `tool_trajectory_avg_score`? (`evalbot criteria` lists the "
            f"{len(CRITERIA)} known names)") in out
    assert "trajectory_exact_match" not in out and "rouge_l_sum" not in out  # no list of every name


def test_a_name_like_no_criterion_gets_no_guess(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = proj / "evals" / "orders" / "test_config.json"
    config.write_text(config.read_text().replace('"tool_trajectory_avg_score"', '"zzzz"'))
    assert main(["run", "evals/orders", "--actuals", "runs/pr.json"], env={}) == 2
    out = capsys.readouterr().out
    assert "unknown criterion 'zzzz' (evals/orders/test_config.json:/criteria/zzzz) (`evalbot criteria` lists" in out
    assert "did you mean" not in out


def test_the_criteria_command_lists_every_name_on_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["criteria"], env={}) == 0
    assert capsys.readouterr().out.split() == sorted(CRITERIA)
