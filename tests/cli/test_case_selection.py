"""``FILE:case1,case2`` selects cases as ``adk eval`` does, on ``run``, ``baseline`` and ``compare``; unknown ids
exit 2 naming the file, the id and the nearest known id."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from evalbot.load import discover_selected, split_case_selection
from evalbot.pipeline import load_inputs
from evalbot.render.words import DELTA_FOOTNOTE

ROOT = Path(__file__).resolve().parents[2]
ORDERS = "examples/evals/orders/orders.evalset.json"
FAQ = "examples/evals/faq/faq.evalset.json"
REPLAY = ["--judge-cache", "examples/judge-cache", "--judge-replay"]


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)


def case_ids(paths: list[str]) -> dict[str, list[str]]:
    inputs = load_inputs(paths)
    return {es.eval_set_id: [c.eval_id for c in es.cases] for es in inputs.eval_sets}


def test_split_as_adk_reads_it(tmp_path: Path) -> None:
    """The first colon whose left part exists splits; blank ids dropped, spaces trimmed, duplicates once."""
    f = tmp_path / "a.evalset.json"
    f.write_text("{}")
    assert split_case_selection(str(f)) == (str(f), None)
    assert split_case_selection(f"{f}:x, y,,x ,") == (str(f), ("x", "y"))
    assert split_case_selection(f"{f}:") == (str(f), ())
    assert split_case_selection(str(tmp_path / "missing.json:x")) == (str(tmp_path / "missing.json:x"), None)
    # A file whose name holds a colon is a path, never split.
    colon = tmp_path / "b:c.evalset.json"
    colon.write_text("{}")
    assert split_case_selection(str(colon)) == (str(colon), None)
    assert split_case_selection(f"{colon}:k") == (str(colon), ("k",))


def test_selection_keeps_file_order_and_adds_up_as_in_adk() -> None:
    assert case_ids([f"{ORDERS}:track_package,refund_damaged_item"]) == {
        "orders": ["refund_damaged_item", "track_package"]}
    # Named twice: the ids add up; named with and without ids: only the ids (ADK's rule).
    assert case_ids([f"{ORDERS}:cancel_order", f"{ORDERS}:track_package", ORDERS]) == {
        "orders": ["track_package", "cancel_order"]}
    # FILE: selects nothing in particular, so every case; other files are untouched.
    every = case_ids([ORDERS])["orders"]
    assert len(every) == 4
    assert case_ids([f"{ORDERS}:", f"{FAQ}:store_hours"]) == {"orders": every, "faq": ["store_hours"]}


def test_selection_on_a_directory_is_an_error() -> None:
    files, selected, errors = discover_selected(["examples/evals:store_hours"])
    assert (files, selected) == ([], {})
    assert [(e.path, e.message) for e in errors] == [
        ("examples/evals:store_hours", "a case selection (FILE:case1,case2) applies to one eval set file, not a "
                                       "directory; name the file")]


def test_run_scores_only_the_selected_cases(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code = main(["run", f"{ORDERS}:refund_damaged_item,cancel_order", "--actuals", "examples/runs/pr.json",
                 "--report", str(report)], env={})
    out = capsys.readouterr().out
    assert code == 1  # refund_damaged_item fails on the PR run
    (orders,) = json.loads(report.read_text())["eval_sets"]
    assert [c["eval_id"] for c in orders["cases"]] == ["refund_damaged_item", "cancel_order"]
    assert "case selection: 2 of 4 case(s) of this eval set are run" in out


def test_unknown_ids_exit_2_naming_file_id_and_nearest(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The known selected case is still scored; the bad id is the eval set's error."""
    report = tmp_path / "r.json"
    code = main(["run", f"{ORDERS}:cancel_order,track_packge,nothing_like_it", "--actuals", "examples/runs/pr.json",
                 "--report", str(report)], env={})
    out = capsys.readouterr().out
    assert code == 2
    assert (f"{ORDERS}: no case with eval_id 'track_packge' (did you mean 'track_package'?); 'nothing_like_it' in "
            "this eval set (selected with FILE:case1,case2); it holds 4 case(s)") in out
    (orders,) = json.loads(report.read_text())["eval_sets"]
    assert [c["eval_id"] for c in orders["cases"]] == ["cancel_order"]
    assert orders["cases"][0]["status"] == "passed"


def test_hostile_ids_are_shown_inert_and_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    ids = ",".join([f"<b>x{i}</b>\x1b[31m" for i in range(40)])
    code = main(["run", f"{ORDERS}:{ids}", "--actuals", "examples/runs/pr.json"], env={})
    out = capsys.readouterr().out
    assert code == 2
    assert "\x1b[31m" not in out and "and 30 more" in out


def test_missing_file_with_a_selection_is_no_such_file(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "examples/evals/nope.evalset.json:a"], env={})
    assert code == 2 and "examples/evals/nope.evalset.json:a: no such file or directory" in capsys.readouterr().out


def test_compare_covers_only_what_was_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline's other cases and eval sets are left out of the comparison, not reported as removed."""
    code = main(["compare", "--baseline", "examples/.evalbot/baseline.json", f"{ORDERS}:refund_damaged_item",
                 "--actuals", "examples/runs/pr.json", *REPLAY], env={})
    out = capsys.readouterr().out
    assert code == 1 and "blocked: 1 regressed" in out
    # the Δ footnote (385326f) names removals among the reasons means can differ; no case or eval set is removed
    assert "removed" not in out.replace(DELTA_FOOTNOTE, "").lower() and "faq" not in out
    clean = main(["compare", "--baseline", "examples/.evalbot/baseline.json", f"{ORDERS}:cancel_order",
                  "--actuals", "examples/runs/pr.json", *REPLAY], env={})
    assert clean == 0 and "no regressions" in capsys.readouterr().out


def test_baseline_writes_the_selected_cases_with_a_warning(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    code = main(["baseline", f"{FAQ}:return_window", "--actuals", "examples/runs/main.json", *REPLAY,
                 "--output", str(out), "--commit", "a" * 40, "--reset-history"], env={})
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "the baseline written holds only the cases run" in captured.err
    assert "drops every other case and `evalbot compare` reads that as removals" in captured.err
    assert "use --accept SET/CASE" in captured.err
    written = json.loads(out.read_text())
    assert {k: list(v["cases"]) for k, v in written["eval_sets"].items()} == {"faq": ["return_window"]}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_selection_on_a_fifo_is_refused_without_opening_it(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "pipe.evalset.json"
    os.mkfifo(fifo)
    code = main(["run", f"{fifo}:a"], env={})
    out = capsys.readouterr().out
    assert code == 2 and f"{fifo}:a" in out and "one eval set file" in out
