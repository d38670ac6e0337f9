"""Flaky-case memory through the command line: ``evalbot baseline`` refreshes carry each case's history forward
(from the --output file or --previous), and ``evalbot compare`` does not block on a case that flipped on main."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import Writer, case, eval_set, inv

REFUND = [("get_order", {"id": "A17"}), ("refund", {"id": "A17", "amount": 25})]
WRONG = [REFUND[0], ("refund", {"id": "A17", "amount": 250})]
CONFIG: dict[str, Any] = {"criteria": {"tool_trajectory_avg_score": 1.0}}
GOOD = {"refund": [inv("refund A17", "Refunded.", REFUND)], "track": [inv("where is B42", "Lyon.", [("track", {})])]}
REFUND_FAILS = {"refund": [inv("refund A17", "Refunded.", WRONG)], "track": GOOD["track"]}
TRACK_FAILS = {"refund": GOOD["refund"], "track": [inv("where is B42", "No idea.", [])]}


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write("evals/test_config.json", CONFIG)
    write("evals/orders.evalset.json", eval_set(
        "orders", case("refund", inv("refund A17", "Refunded.", REFUND)),
        case("track", inv("where is B42", "Lyon.", [("track", {})])),
    ))
    write("runs/good.json", GOOD)
    write("runs/refund_fails.json", REFUND_FAILS)
    write("runs/track_fails.json", TRACK_FAILS)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv), env={})
    out = capsys.readouterr()
    return code, out.out, out.err


def refresh(capsys: pytest.CaptureFixture[str], run: str, commit: str, *extra: str,
            output: str = ".evalbot/baseline.json") -> tuple[int, str, str]:
    return cli(capsys, "baseline", "evals", "--actuals", f"runs/{run}.json", "--output", output, "--commit", commit,
               "--created-at", "2026-01-01T00:00:00+00:00", *extra)


def histories(path: str = ".evalbot/baseline.json") -> dict[str, str]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {k: c["history"] for k, c in data["eval_sets"]["orders"]["cases"].items()}


def compare(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    return cli(capsys, "compare", "evals", "--actuals", "runs/refund_fails.json", "--baseline",
               ".evalbot/baseline.json", "--comment", "comment.md", *extra)


def test_main_runs_then_a_pr(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Main refreshes where refund fails once; a PR where it fails again is flaky (exit 0, explained), and with
    --block-flaky it blocks (exit 1)."""
    for i, run in enumerate(["good", "good", "refund_fails", "good"]):
        code, out, err = refresh(capsys, run, f"c{i}")
        assert code == 0, err
    assert "history: carried forward from .evalbot/baseline.json" in out
    assert histories() == {"refund": "PPFP", "track": "PPPP"}
    code, out, err = compare(capsys)
    comment = (proj / "comment.md").read_text(encoding="utf-8")
    assert code == 0, err + comment
    assert "1 regressed but flaky on main (not blocking)" in comment.splitlines()[1]
    assert "✓✓✗✓ on main (oldest first): failed 1 of 4 runs, 2 flips in 3 transitions (67%)" in comment
    code, _, _ = compare(capsys, "--block-flaky")
    assert code == 1
    assert "blocking: block\\_flaky" in (proj / "comment.md").read_text(encoding="utf-8").splitlines()[1]


def test_config_sets_block_flaky(proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """``evalbot.block_flaky`` in the config blocks; --no-block-flaky overrides it."""
    for i, run in enumerate(["good", "refund_fails", "good"]):
        assert refresh(capsys, run, f"c{i}")[0] == 0
    write("evals/test_config.json", {**CONFIG, "evalbot": {"block_flaky": True}})
    assert compare(capsys)[0] == 1
    assert compare(capsys, "--no-block-flaky")[0] == 0


def test_stable_case_blocks(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Refund never flipped on main: its regression blocks as before."""
    for i, run in enumerate(["good", "track_fails", "good"]):
        assert refresh(capsys, run, f"c{i}")[0] == 0
    assert histories() == {"refund": "PPP", "track": "PFP"}
    code, _, _ = compare(capsys)
    comment = (proj / "comment.md").read_text(encoding="utf-8")
    assert code == 1 and "blocked: 1 regressed" in comment
    assert "✓✓✓ on main (oldest first): the same outcome in all 3 recorded runs" in comment


def test_history_capped_and_continued_from_previous(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twelve refreshes keep the last ten outcomes; --previous continues another file's history."""
    runs = ["refund_fails", "refund_fails", *["good"] * 9, "refund_fails"]
    for i, run in enumerate(runs):
        assert refresh(capsys, run, f"c{i}")[0] == 0
    assert histories()["refund"] == "PPPPPPPPPF"
    code, out, _ = refresh(capsys, "good", "next", "--previous", ".evalbot/baseline.json", output="other.json")
    assert code == 0 and "history: carried forward from .evalbot/baseline.json" in out
    assert histories("other.json")["refund"] == "PPPPPPPPFP"
    code, _, err = refresh(capsys, "good", "x", "--previous", "missing.json", output="third.json")
    assert code == 2 and "missing.json" in err and "no baseline there" in err


def test_unreadable_previous_baseline_is_not_overwritten_silently(
    proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]
) -> None:
    """A --output file that cannot be parsed (or holds a forged history) stops the refresh, saying the history
    would be lost; --reset-history starts afresh on purpose."""
    assert refresh(capsys, "good", "c0")[0] == 0
    target = proj / ".evalbot/baseline.json"
    data = json.loads(target.read_text(encoding="utf-8"))
    data["eval_sets"]["orders"]["cases"]["refund"]["history"] = "FFFFFFFFFFFFP"
    target.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = refresh(capsys, "good", "c1")
    assert code == 2
    assert "/eval_sets/orders/cases/refund/history" in err and "--reset-history" in err
    assert "cannot be carried forward" in err
    assert json.loads(target.read_text(encoding="utf-8")) == data  # left as it was
    target.write_text("{not json", encoding="utf-8")
    assert refresh(capsys, "good", "c1")[0] == 2
    code, out, _ = refresh(capsys, "good", "c1", "--reset-history")
    assert code == 0 and "started afresh (--reset-history)" in out and histories() == {"refund": "P", "track": "P"}


def test_compare_refuses_a_forged_history(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A baseline whose history does not end with its recorded status is refused with the JSON pointer."""
    for i, run in enumerate(["good", "good"]):
        assert refresh(capsys, run, f"c{i}")[0] == 0
    target = proj / ".evalbot/baseline.json"
    data = json.loads(target.read_text(encoding="utf-8"))
    data["eval_sets"]["orders"]["cases"]["refund"]["history"] = "FP" + "F"  # claims a flip, ends on fail
    target.write_text(json.dumps(data), encoding="utf-8")
    code, _, err = compare(capsys)
    assert code == 2 and "/eval_sets/orders/cases/refund" in err and "history must end" in err


def test_refreshes_keep_a_trend_of_means_drawn_by_the_html_report(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Three refreshes on main: the trajectory criterion's trend holds three means with their commits; the HTML
    report draws them with this run's; a trend edited by hand (NaN) makes the baseline unreadable, named."""
    for run, commit in (("good", "c1"), ("refund_fails", "c2"), ("good", "c3")):
        assert refresh(capsys, run, commit)[0] == 0
    data = json.loads(Path(".evalbot/baseline.json").read_text(encoding="utf-8"))
    trend = data["eval_sets"]["orders"]["criteria"]["tool_trajectory_avg_score"]["trend"]
    assert [(p["mean"], p["commit"]) for p in trend] == [(1.0, "c1"), (0.5, "c2"), (1.0, "c3")]
    code, _, _ = compare(capsys, "--html", "report.html")
    html = Path("report.html").read_text(encoding="utf-8")
    assert code == 0  # refund oscillated on main (PFP): flaky, not blocking
    assert html.count('<svg class="spark"') == 1 and html.count('class="pt"') == 3
    assert "<desc>On main, oldest first: 1.000 (c1, 2026-01-01), 0.500 (c2, 2026-01-01), 1.000 (c3, 2026-01-01). " \
           "This run: 0.500. Threshold 1.000.</desc>" in html
    text = Path(".evalbot/baseline.json").read_text(encoding="utf-8").replace('"mean": 0.5', '"mean": NaN', 1)
    Path("forged.json").write_text(text, encoding="utf-8")
    code, out, err = cli(capsys, "compare", "evals", "--actuals", "runs/good.json", "--baseline", "forged.json",
                         "--comment", "comment2.md")
    assert code == 2 and "forged.json:/eval_sets/orders/criteria/tool_trajectory_avg_score/trend/1/mean" in out + err
