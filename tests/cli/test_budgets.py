"""Budgets through the real command line: ``evalbot baseline`` keeps the agent's efficiency per eval set, ``evalbot
compare`` shows the change against main in the comment, the job summary and the HTML report, and blocks on a budget
exceeded significantly; budgets that cannot be measured are an error naming why, never a silent pass."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.builders import Writer, case, eval_set, inv
from tests.fakes.cli_project import cli

BUDGETS = {"tokens": "+20%", "latency_p95": "+30%", "tool_calls": "+1"}
N = 120


def _run(scale: float, seed: int, *, tokens: bool = True) -> dict[str, list[dict[str, Any]]]:
    """One recorded run: per case one invocation with ADK events (usage_metadata) and a duration, 10% noise."""
    rng = random.Random(seed)
    out = {}
    for i in range(N):
        total = 1000 * (1 + i % 7) * scale * rng.gauss(1, 0.1)
        events: list[dict[str, Any]] = [{"author": "agent", "content": {"role": "model", "parts": [
            {"function_call": {"name": "lookup", "args": {"id": i}}}]}}]
        if tokens:
            events[0]["usage_metadata"] = {"prompt_token_count": int(total * 0.8),
                                           "candidates_token_count": int(total * 0.2)}
        out[f"c{i}"] = [inv("q", "ok", None, intermediate_data={"invocation_events": events},
                            duration=round(2.0 * rng.gauss(1, 0.1), 3))]
    return out


@pytest.fixture
def shop(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Writer:
    write("evals/shop.evalset.json", eval_set("shop", *(case(f"c{i}", inv("q", "ok")) for i in range(N))))
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5}, "evalbot": {"budgets": BUDGETS}})
    write("runs/main.json", _run(1.0, 1))
    monkeypatch.chdir(tmp_path)
    return write


def _baseline(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/main.json", "--output", "base.json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(Path("base.json").read_text())
    return data


def _compare(capsys: pytest.CaptureFixture[str], run: str, baseline: str = "base.json") -> tuple[int, str, str, str]:
    code, _, _ = cli(capsys, "compare", "evals", "--actuals", run, "--baseline", baseline, "--comment", "c.md",
                       "--summary", "s.md", "--html", "r.html")
    return code, Path("c.md").read_text(), Path("s.md").read_text(), Path("r.html").read_text()


def test_the_baseline_keeps_mean_p95_and_each_cases_values(shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    data = _baseline(capsys)
    stats = data["efficiency"]["shop"]["stats"]
    assert set(stats) == {"tokens", "tokens_in", "tokens_out", "model_calls", "tool_calls", "latency"}
    assert stats["tool_calls"] == {"mean": 1.0, "p95": 1.0, "cases": N}
    assert 3500 < stats["tokens"]["mean"] < 4500 and stats["tokens"]["p95"] > stats["tokens"]["mean"]
    assert 1.8 < stats["latency"]["mean"] < 2.2
    assert len(data["efficiency"]["shop"]["cases"]) == N
    assert data["efficiency"]["shop"]["cases"]["c0"]["tokens"] == pytest.approx(
        data["efficiency"]["shop"]["cases"]["c0"]["tokens_in"] + data["efficiency"]["shop"]["cases"]["c0"]["tokens_out"])


def test_a_token_increase_over_budget_blocks_and_every_output_names_it(
        shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    _baseline(capsys)
    shop("runs/pr.json", _run(1.4, 2))
    code, comment, summary, html = _compare(capsys, "runs/pr.json")
    assert code == 1
    headline = comment.splitlines()[1]
    assert re.fullmatch(r"### ❌ evalbot: blocked: ⛔ tokens \+[34][0-9]% over the \+20% budget", headline), headline
    assert re.search(r"- shop: tokens \+[34][0-9]% over the \+20% budget \(p &lt; 0\.001, n = 120\)", comment)
    row = next(line for line in comment.splitlines() if line.startswith("| shop | tokens |"))
    assert "rose significantly · ⛔ over budget" in row and "\\+20%" in row
    assert "<details open><summary><b>Agent cost per invocation</b>" in comment
    assert "blocked: ⛔ tokens +" in summary and "| shop | seconds (p95) |" in summary
    assert "Agent cost per invocation against main" in html and 'class="eff-over_budget"' in html
    assert "⛔ over budget" in html


def test_a_small_change_within_budget_passes_and_is_shown(shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    _baseline(capsys)
    shop("runs/pr.json", _run(1.05, 3))
    code, comment, summary, html = _compare(capsys, "runs/pr.json")
    assert code == 0, comment
    assert comment.splitlines()[1] == "### ✅ evalbot: no regressions"
    assert "✅ within budget" in next(line for line in comment.splitlines() if line.startswith("| shop | tokens |"))
    assert 'class="eff-within_budget"' in html and "| shop | tool calls |" in summary


def test_an_old_baseline_leaves_budgets_not_measured_not_passed(
        shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    data = _baseline(capsys)
    del data["efficiency"]
    shop("old.json", data)
    code, comment, _, html = _compare(capsys, "runs/main.json", "old.json")
    assert code == 3
    assert comment.splitlines()[1] == ("### ⛔ evalbot: could not measure, not passing: budgets tokens +20%, "
                                       "tool\\_calls +1, latency\\_p95 +30% not measured on shop")
    assert "written by an older evalbot): refresh it on main" in comment
    assert "⚠️ not measured" in html


def test_a_run_without_token_counts_leaves_the_token_budget_not_measured(
        shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    _baseline(capsys)
    shop("runs/pr.json", _run(1.0, 4, tokens=False))
    code, comment, _, _ = _compare(capsys, "runs/pr.json")
    assert code == 3
    assert "budget tokens +20% not measured on shop: this run recorded no tokens" in comment
    assert "budget tool_calls" not in comment and "tool\\_calls +1 not measured" not in comment  # those were measured


def test_without_budgets_the_change_is_shown_and_never_blocks(
        shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    shop("evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    _baseline(capsys)
    shop("runs/pr.json", _run(2.0, 5))
    code, comment, _, _ = _compare(capsys, "runs/pr.json")
    assert code == 0
    row = next(line for line in comment.splitlines() if line.startswith("| shop | tokens |"))
    assert "rose significantly" in row and "| — |" in row  # no budget column value


def test_a_hostile_budget_in_the_config_is_exit_2_naming_file_and_path(
        shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    _baseline(capsys)
    shop("evals/test_config.json", {"criteria": {"response_match_score": 0.5},
                                    "evalbot": {"budgets": {"tokenz": "+20%"}}})
    code, _, err = cli(capsys, "compare", "evals", "--actuals", "runs/main.json", "--baseline", "base.json")
    assert code == 2
    assert "evals/test_config.json:/evalbot/budgets/tokenz" in err and "did you mean 'tokens'?" in err


def test_the_baseline_records_the_configs_budgets(shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """What a PR's baseline update accepts a loosened budget with: the budgets it was written under."""
    assert _baseline(capsys)["budgets"] == BUDGETS
    shop("evals/test_config.json", {"criteria": {"response_match_score": 0.5}, "evalbot": {"budgets": {}}})
    assert _baseline(capsys)["budgets"] == {}


def test_a_hostile_budget_in_the_baseline_is_exit_2_naming_file_and_pointer(
        shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    data = _baseline(capsys)
    data["budgets"] = {"tokens": "+20%", "latency_p59": "+1e999"}
    Path("base.json").write_text(json.dumps(data))
    code, _, err = cli(capsys, "compare", "evals", "--actuals", "runs/main.json", "--baseline", "base.json")
    assert code == 2, err
    assert "base.json:/budgets/latency_p59" in err and "did you mean 'latency_p95'?" in err


def test_an_older_baseline_without_budgets_still_compares(shop: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    data = _baseline(capsys)
    del data["budgets"]
    Path("base.json").write_text(json.dumps(data))
    code, comment, _, _ = _compare(capsys, "runs/main.json")
    assert code == 0, comment
