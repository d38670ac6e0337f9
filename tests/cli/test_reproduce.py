"""The comment's "Reproduce locally" command, run verbatim in the same checkout, gives the same verdict and headline:
after a plain compare (judge cache and replay, gate options) and after ``evalbot merge`` of a sharded run."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalbot.cli.commands import main

ROOT = Path(__file__).resolve().parents[2]
JUDGE = ["--judge-cache", "examples/judge-cache", "--judge-replay"]
RUN = ["examples/evals", "--actuals", "examples/runs/pr.json"]
BASELINE = ["--baseline", "examples/.evalbot/baseline.json"]


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def reproduce_command(comment: str) -> str:
    found = re.findall(r"^- Reproduce locally: `(.+)`$", comment, re.MULTILINE)
    assert len(found) == 1, comment[-2000:]
    return found[0]


def run_verbatim(command: str, where: Path) -> tuple[int, str]:
    """The command as a user pastes it into a shell in the checkout (this environment's evalbot, no credentials)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GOOGLE_", "GEMINI_", "OPENAI_", "EVALBOT_"))}
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    done = subprocess.run(["bash", "-c", command], cwd=where, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    return done.returncode, done.stdout


def headline(comment: str) -> str:
    return next(line for line in comment.splitlines() if line.startswith("### "))


def test_reproduce_after_compare(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """It used to drop --judge-cache/--judge-replay (and gate options): the judged criterion then could not be
    measured and the command gave another comment."""
    code = main(["compare", *BASELINE, *RUN, *JUDGE, "--alpha", "0.1", "--comment", "comment.md"], env={})
    capsys.readouterr()
    assert code == 1
    comment = (checkout / "comment.md").read_text(encoding="utf-8")
    command = reproduce_command(comment)
    assert "--judge-replay" in command and "--alpha 0.1" in command
    again, printed = run_verbatim(command, checkout)
    assert again == code
    assert headline(printed) == headline(comment)


def test_reproduce_after_a_sharded_merge(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The merge's command names the eval sets, runs and judge options given to the merge, and runs as an unsharded
    compare with the same verdict and headline."""
    for k in (1, 2):
        assert main(["compare", *RUN, *JUDGE, *BASELINE, "--shard", f"{k}/2", "--report", f"part{k}.json"],
                    env={}) == 0
    code = main(["merge", "part1.json", "part2.json", "--eval-sets", "examples/evals", "--actuals",
                 "examples/runs/pr.json", *JUDGE, *BASELINE, "--comment", "comment.md"], env={})
    capsys.readouterr()
    assert code == 1
    comment = (checkout / "comment.md").read_text(encoding="utf-8")
    command = reproduce_command(comment)
    assert command.startswith("evalbot compare --baseline examples/.evalbot/baseline.json examples/evals --actuals")
    again, printed = run_verbatim(command, checkout)
    assert again == code
    assert headline(printed) == headline(comment)


def test_merge_without_eval_sets_shows_no_broken_command(checkout: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --eval-sets the merge does not know the eval sets: no command that would fail with exit 2."""
    for k in (1, 2):
        assert main(["compare", *RUN, *JUDGE, *BASELINE, "--shard", f"{k}/2", "--report", f"part{k}.json"],
                    env={}) == 0
    assert main(["merge", "part1.json", "part2.json", *BASELINE, "--comment", "comment.md"], env={}) == 1
    capsys.readouterr()
    assert "Reproduce locally" not in (checkout / "comment.md").read_text(encoding="utf-8")
