"""Every benchmark script answers ``--help`` with its usage (bench/README.md tells readers to run them; a script
that took ``--help`` for a file name once crashed with a traceback), and refuses a missing argument with exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py"))


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          check=False)


def test_every_script_is_covered() -> None:
    assert len(SCRIPTS) >= 15 and "bench_engine.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_help_prints_the_usage(script: str) -> None:
    done = run(f"bench/{script}", "--help")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(f"usage: {script}"), done.stdout[:500]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("script", "missing"), [("bench_baseline_read.py", "BASELINE.json"),
                                                 ("adk_judge_runner.py", "EVALSET.json")])
def test_a_missing_argument_is_a_usage_error(script: str, missing: str) -> None:
    done = run(f"bench/{script}")
    assert done.returncode == 2 and missing in done.stderr and "Traceback" not in done.stderr


def test_a_missing_baseline_file_is_named(tmp_path: Path) -> None:
    done = run("bench/bench_baseline_read.py", str(tmp_path / "nope.json"))
    assert done.returncode == 2 and "nope.json: no such file" in done.stderr and "Traceback" not in done.stderr
