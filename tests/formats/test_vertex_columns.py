"""A Vertex dataset's columns against its criteria, and a dataset that records its own run given --actuals too.

* --actuals wins over the dataset's own predicted columns, matched by eval_id (docs/vertex.md), with a notice.
* A column a configured criterion needs is missing or misspelt: exit 2 naming the file, the column and the nearest
  column the file has; the other criteria are still scored.  An unknown column is a notice.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from evalbot.load import load_actuals, load_eval_set
from evalbot.scoring import score_run
from evalbot.shard.partition import Shard, plan_shards, shard_eval_sets
from tests.fakes.vertex_rows import call, write_csv, write_jsonl

CALLS = [call("lookup", city="Paris")]
TRAJ = json.dumps(CALLS)
ROWS = [
    {"eval_id": "a", "prompt": "capital of France?", "reference": "Paris", "response": "Paris",
     "reference_trajectory": CALLS, "predicted_trajectory": CALLS},
    {"eval_id": "b", "prompt": "capital of Italy?", "reference": "Rome", "response": "Rome",
     "reference_trajectory": CALLS, "predicted_trajectory": CALLS},
]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any], str]:
    """``evalbot run ... --report`` in the current directory: exit code, report, printed output."""
    code = main(["run", *argv, "--report", "report.json"], env={})
    out = capsys.readouterr()
    return code, json.loads(Path("report.json").read_text(encoding="utf-8")), out.out + out.err


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_actuals_win_over_the_datasets_own_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The dataset's own answers are right, the --actuals run is wrong: the wrong run is scored (it used to be
    ignored, exit 0); a case the actuals do not hold keeps its own run; a notice names the replaced case."""
    write_jsonl(tmp_path / "d.jsonl", ROWS)
    write_jsonl(tmp_path / "runs.jsonl", [{"eval_id": "a", "response": "Berlin, certainly",
                                           "predicted_trajectory": [call("lookup", city="Berlin")]}])
    code, report, _ = run(capsys, "d.jsonl", "--actuals", "runs.jsonl")
    assert code == 1
    (es,) = report["eval_sets"]
    status = {c["eval_id"]: c["status"] for c in es["cases"]}
    assert status == {"a": "failed", "b": "passed"}
    a = next(c for c in es["cases"] if c["eval_id"] == "a")
    assert a["metrics"]["response_match_score"]["score"] == 0.0
    assert a["metrics"]["tool_trajectory_avg_score"]["score"] == 0.0
    (notice,) = [n for n in es["notices"] if "--actuals" in n]
    assert "1 of the 2" in notice and "'a'" in notice and "runs.jsonl" in notice and "--actuals wins" in notice


def test_without_actuals_the_datasets_own_run_is_scored(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_jsonl(tmp_path / "d.jsonl", ROWS)
    code, report, _ = run(capsys, "d.jsonl")
    assert code == 0
    assert not [n for n in report["eval_sets"][0]["notices"] if "--actuals" in n]


def test_misspelt_csv_column_is_exit_2_naming_file_column_and_nearest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``predicted_trajectroy``: trajectory criteria used to score 0.000 with no reason; now the eval set's error
    names the file, the missing column and the misspelt one, the criterion is an error on each case, and the
    response criterion is still scored."""
    write_csv(tmp_path / "d.csv",
              ["eval_id", "prompt", "reference", "response", "reference_trajectory", "predicted_trajectroy"],
              [["a", "hi", "hello", "hello", TRAJ, TRAJ]])
    code, report, out = run(capsys, "d.csv")
    assert code == 2
    (es,) = report["eval_sets"]
    (error,) = es["errors"]
    assert error["path"] == "d.csv"
    assert "'predicted_trajectory'" in error["message"] and "'predicted_trajectroy'" in error["message"]
    assert "tool_trajectory_avg_score" in error["message"]
    metrics = es["cases"][0]["metrics"]
    assert metrics["tool_trajectory_avg_score"]["status"] == "error"
    assert metrics["tool_trajectory_avg_score"]["score"] is None
    assert metrics["response_match_score"]["score"] == 1.0
    assert "predicted_trajectroy" in out
    assert not [n for n in es["notices"] if "unknown column" in n]  # named once, in the error


def test_configured_criterion_missing_reference_trajectory_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = [{k: v for k, v in row.items() if k != "reference_trajectory"} for row in ROWS]
    (tmp_path / "d.json").write_text(json.dumps(rows), encoding="utf-8")
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {
        "trajectory_recall": 1.0, "trajectory_single_tool_use": {"threshold": 1.0, "tool_name": "lookup"},
    }}), encoding="utf-8")
    code, report, _ = run(capsys, "d.json")
    assert code == 2
    (es,) = report["eval_sets"]
    (error,) = es["errors"]
    assert error["path"] == "d.json" and "'reference_trajectory'" in error["message"]
    assert "trajectory_recall" in error["message"] and "trajectory_single_tool_use" not in error["message"]
    for case in es["cases"]:
        assert case["metrics"]["trajectory_recall"]["status"] == "error"
        assert case["metrics"]["trajectory_single_tool_use"]["score"] == 1.0  # needs no reference: still scored


def test_missing_response_needed_by_a_configured_criterion(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{k: v for k, v in row.items() if k != "response"} for row in ROWS]
    write_jsonl(tmp_path / "d.jsonl", rows)
    (tmp_path / "test_config.json").write_text(json.dumps({"criteria": {"response_match_score": 0.8}}),
                                               encoding="utf-8")
    code, report, _ = run(capsys, "d.jsonl")
    assert code == 2
    assert "'response'" in report["eval_sets"][0]["errors"][0]["message"]


def test_predicted_columns_are_not_needed_when_actuals_hold_every_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refs = [{k: v for k, v in row.items() if k in ("eval_id", "prompt", "reference", "reference_trajectory")}
            for row in ROWS]
    write_jsonl(tmp_path / "refs.jsonl", refs)
    runs = [{"eval_id": r["eval_id"], "response": r["response"], "predicted_trajectory": CALLS} for r in ROWS]
    write_jsonl(tmp_path / "runs.jsonl", runs)
    code, report, _ = run(capsys, "refs.jsonl", "--actuals", "runs.jsonl")
    assert code == 0
    assert report["eval_sets"][0]["errors"] == []


def test_unknown_column_is_a_notice_with_the_nearest_known(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{**row, "latency_in_secs": 1.5, "notes": "x"} for row in ROWS]
    write_jsonl(tmp_path / "d.jsonl", rows)
    code, report, _ = run(capsys, "d.jsonl")
    assert code == 0
    (notice,) = [n for n in report["eval_sets"][0]["notices"] if "unknown column" in n]
    assert "'latency_in_secs' (nearest known column: 'latency_in_seconds')" in notice and "'notes'" in notice


def test_adk_default_criterion_without_its_column_is_not_applied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No test_config.json and no ``reference`` column (Google's BYOD sample): ADK's default response_match_score
    used to score 0.000 on every row; it is left out with a notice, the trajectory default still applies."""
    rows = [{k: v for k, v in row.items() if k != "reference"} for row in ROWS]
    write_jsonl(tmp_path / "d.jsonl", rows)
    code, report, _ = run(capsys, "d.jsonl")
    assert code == 0
    (es,) = report["eval_sets"]
    assert [c["name"] for c in es["criteria"] if c["name"].endswith("score")] == ["tool_trajectory_avg_score"]
    assert any("response_match_score is not applied" in n and "'reference'" in n for n in es["notices"])


def test_hostile_column_names_give_one_bounded_notice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Thousands of unknown (huge, markup) column names: one notice of bounded length."""
    extra = {f"<b>col{i}</b>" + "x" * 5000: 1 for i in range(2000)}
    write_jsonl(tmp_path / "d.jsonl", [{**ROWS[0], **extra}])
    code, report, _ = run(capsys, "d.jsonl")
    assert code == 0
    (notice,) = [n for n in report["eval_sets"][0]["notices"] if "unknown column" in n]
    assert len(notice) < 2000 and "and 1990 more" in notice


def test_every_shard_reports_the_same_dataset_errors_and_notices(tmp_path: Path) -> None:
    """Decided over the whole file and --actuals, not the shard's cases, so the parts of a sharded run agree (some
    parts hold only cases whose run --actuals replaces, others only cases scored on their own run)."""
    own = {k: v for k, v in ROWS[0].items() if k != "predicted_trajectory"}
    write_jsonl(tmp_path / "d.jsonl", [{**own, "eval_id": f"c{i}", "predicted_trajectroy": "[]"} for i in range(6)])
    write_jsonl(tmp_path / "runs.jsonl", [{"eval_id": f"c{i}", "response": "Paris"} for i in (0, 1, 2)])
    sets = [load_eval_set(tmp_path / "d.jsonl")]
    actuals = load_actuals(tmp_path / "runs.jsonl")
    run_plan = plan_shards(sets, 3)
    seen = set()
    for k in (1, 2, 3):
        part = shard_eval_sets(sets, run_plan, Shard(k, 3))
        es = score_run(part, actuals).eval_sets[0]
        assert len(es.cases) == 2
        seen.add((json.dumps([e.model_dump() for e in es.errors]), tuple(es.notices)))
    assert len(seen) == 1
    ((errors, notices),) = seen
    assert "predicted_trajectroy" in errors
    assert any("3 of the 6" in n for n in notices)
