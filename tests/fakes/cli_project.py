"""A small project for the command-line tests (one eval set: refund, track; its config; main and PR runs), the
``proj`` fixture that writes it, and helpers that run ``evalbot`` in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalbot.cli.commands import main
from tests.fakes.builders import Writer, case, eval_set, inv

REFUND = [("get_order", {"id": "A17"}), ("refund", {"id": "A17", "amount": 25})]
CONFIG: dict[str, Any] = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}}
MAIN = {"refund": [inv("refund A17", "Refunded 25 dollars.", REFUND)], "track": [inv("where is B42", "No idea.", [])]}
PR = {
    "refund": [inv("refund A17", "Refunded 250 dollars.", [REFUND[0], ("refund", {"id": "A17", "amount": 250})])],
    "track": [inv("where is B42", "It is in Lyon.", [("track", {"id": "B42"})])],
}


@pytest.fixture
def proj(write: Writer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with one eval set (refund, track), its config, and main / PR actuals; cwd is the project."""
    write("evals/test_config.json", CONFIG)
    write("evals/orders.evalset.json", eval_set(
        "orders",
        case("refund", inv("refund A17", "Refunded 25 dollars.", REFUND)),
        case("track", inv("where is B42", "It is in Lyon.", [("track", {"id": "B42"})])),
    ))
    write("runs/main.json", MAIN)
    write("runs/pr.json", PR)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *argv: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    code = main(list(argv), env=env or {})
    out = capsys.readouterr()
    return code, out.out, out.err


def make_baseline(capsys: pytest.CaptureFixture[str], out: str = ".evalbot/baseline.json") -> None:
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/main.json", "--output", out,
                       "--commit", "abc123", "--created-at", "2025-06-01T00:00:00+00:00")
    assert code == 0, err
