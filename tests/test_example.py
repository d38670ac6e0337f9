"""The bundled example (README quickstart): a baseline plus a PR run with a regression, a fix and an inconclusive
judge flip, replayed from the committed judge cache without a key or network."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from evalbot.cli.commands import main
from tests.fakes.goldens import golden

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ["compare", "--baseline", "examples/.evalbot/baseline.json", "examples/evals",
              "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache", "--judge-replay"]


@pytest.fixture(autouse=True)
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """The quickstart command runs from the repository root."""
    monkeypatch.chdir(ROOT)


def test_quickstart_comment(capsys: pytest.CaptureFixture[str]) -> None:
    """The PR run is blocked by the refund regression; the fix and the split-vote flip are shown, nothing re-judged."""
    code = main(QUICKSTART, env={})
    out = capsys.readouterr().out
    assert code == 1
    assert "Regressed (1)" in out and "<b>orders / refund_damaged_item</b>" in out and "↳ amount: 25.0 → 250.0" in out
    assert "Inconclusive, not blocking (1)" in out and "judge votes (pass–fail) 7–8 (after 10 more samples), baseline 3–2" in out
    assert "**orders / track\\_package**" in out and "Still failing (1)" in out
    assert "answer(s) replayed from the cache, no requests made" in out
    golden("comment_example.md", out)


def test_main_run_matches_the_committed_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Re-making the baseline from the main run gives the committed file (so the example is not stale)."""
    committed = json.loads((ROOT / "examples/.evalbot/baseline.json").read_text(encoding="utf-8"))
    out = tmp_path / "baseline.json"
    code = main(["baseline", "examples/evals", "--actuals", "examples/runs/main.json", "--judge-cache",
                 "examples/judge-cache", "--judge-replay", "--output", str(out), "--commit", committed["commit"],
                 "--created-at", committed["created_at"]], env={})
    capsys.readouterr()
    assert code == 0
    remade = json.loads(out.read_text(encoding="utf-8"))
    remade["evalbot_version"] = committed["evalbot_version"]
    assert remade == committed, "examples/ is stale: run `python scripts/make_example.py`"


def test_main_run_compares_clean(capsys: pytest.CaptureFixture[str]) -> None:
    """Comparing main with its own baseline passes."""
    code = main([*QUICKSTART[:5], "examples/runs/main.json", *QUICKSTART[6:]], env={})
    assert code == 0 and "no regressions" in capsys.readouterr().out


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_documented_local_accept_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """docs/baselines.md "Accepting locally", step by step on a copy of the example committed in a fresh repository: blocked,
    refresh, accepted with the notice naming the file; the headlines are the ones the page quotes."""
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "main"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], check=True, capture_output=True)
    compare = ["compare", "--baseline", "HEAD:examples/.evalbot/baseline.json", *QUICKSTART[3:]]
    readme = (ROOT / "docs" / "baselines.md").read_text(encoding="utf-8")
    assert main(compare, env={}) == 1 and "blocked: 1 regressed" in capsys.readouterr().out
    assert main(["baseline", "examples/evals", "--actuals", "examples/runs/pr.json", "--judge-cache",
                 "examples/judge-cache", "--judge-replay", "--output", "examples/.evalbot/baseline.json"], env={}) == 0
    capsys.readouterr()
    assert main(compare, env={}) == 0
    out = capsys.readouterr()
    headline = out.out.splitlines()[1].removeprefix("### ✅ evalbot: ")
    assert headline == ("accepted by this PR's baseline update: 1 regression (orders/refund\\_damaged\\_item) · 1 "
                        "split-vote flip · 1 fixed · 1 still failing")
    notice = ("examples/.evalbot/baseline.json in the working tree differs from HEAD:examples/.evalbot/baseline.json: "
              "taken as this change's baseline update")
    assert notice in out.err and "in the working tree differs from REF:PATH: taken as this change's baseline update" \
        in readme
