"""The process entry (console script, ``python -m evalbot.cli``) runs main and leaves what the command kept alive
frozen out of the collector for the interpreter's exit; the command's output and exit code are main's."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ["compare", "--baseline", "examples/.evalbot/baseline.json", "examples/evals", "--actuals",
              "examples/runs/pr.json", "--judge-cache", "examples/judge-cache", "--judge-replay"]


def test_python_m_evalbot_cli_runs_the_quickstart(tmp_path: Path) -> None:
    comment = tmp_path / "comment.md"
    done = subprocess.run([sys.executable, "-m", "evalbot.cli", *QUICKSTART, "--comment", str(comment)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stderr
    assert "evalbot: blocked" in done.stdout and comment.read_text(encoding="utf-8").startswith("<!-- evalbot")


def test_entry_freezes_what_the_command_left_and_returns_its_exit_code(tmp_path: Path) -> None:
    script = ("import gc, sys\nfrom evalbot.cli.commands import entry\n"
              f"sys.argv = ['evalbot', *{QUICKSTART!r}, '--comment', {str(tmp_path / 'c.md')!r}]\n"
              "code = entry()\nprint('exit', code, 'frozen', gc.get_freeze_count() > 0)\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.stdout.strip().splitlines()[-1] == "exit 1 frozen True", done.stderr
