"""The Vertex seed's own EvalTask example (``metrics=["rouge_l_sum", "bleu", custom, "trajectory_exact_match",
"trajectory_precision", single_tool_use, response_follows_trajectory]``) as a dataset plus config: ``evalbot run``
scores it end to end, the judged metric replayed from the committed judge cache without a key or network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rouge_score import rouge_scorer
from sacrebleu import sentence_bleu

from evalbot.cli.commands import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "vertex_seed"
RUN = ["run", "examples/vertex_seed/eval.jsonl", "--judge-cache", "examples/vertex_seed/judge-cache", "--judge-replay"]


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def test_seed_example_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report_path = tmp_path / "report.json"
    code = main([*RUN, "--report", str(report_path)], env={})
    out = capsys.readouterr().out
    assert code == 1, out  # thermostat_preference fails its thresholds; nothing is an error
    report = json.loads(report_path.read_text(encoding="utf-8"))
    (eval_set,) = report["eval_sets"]
    cases = {c["eval_id"]: c for c in eval_set["cases"]}
    assert {k: c["status"] for k, c in cases.items()} == {
        "bedroom_ac_schedule": "passed", "living_room_lights_off": "failed", "thermostat_preference": "failed",
        "garage_door_status": "passed"}
    for case in cases.values():
        for name in ["rouge_l_sum", "bleu", "essential_tools_present", "trajectory_exact_match",
                     "trajectory_precision", "trajectory_single_tool_use", "response_follows_trajectory"]:
            assert case["metrics"][name]["score"] is not None, (case["eval_id"], name)
    # The text metrics are the libraries' numbers on the dataset's rows.
    rows = {r["eval_id"]: r for r in map(json.loads, (EXAMPLE / "eval.jsonl").read_text().splitlines())}
    scorer = rouge_scorer.RougeScorer(["rougeLsum"])
    for eval_id, row in rows.items():
        metrics = cases[eval_id]["metrics"]
        assert metrics["rouge_l_sum"]["score"] == scorer.score(row["reference"], row["response"])["rougeLsum"].fmeasure
        bleu = sentence_bleu(row["response"], [row["reference"]], use_effective_order=False).score / 100
        assert metrics["bleu"]["score"] == pytest.approx(min(bleu, 1.0), abs=1e-15)
    judged = [cases[k]["metrics"]["response_follows_trajectory"]["score"] for k in rows]
    assert judged == [1.0, 1.0, 0.0, 1.0]
    assert "4 answers from cache" in out
