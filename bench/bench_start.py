"""Start-up time: the README's `evalbot compare` on the bundled example, the Action's entrypoint on that example
against the fake GitHub, and where the imports' time goes (``python -X importtime``).

    python bench/bench_start.py [--runs 3] [--before REF] [--json]

Each command runs ``--runs`` times in a fresh interpreter; the median wall time is printed. ``--before REF``
runs the same commands with the source of git ref REF (exported with ``git archive`` to a scratch directory) and
prints the ratio. The import breakdown sums ``-X importtime``'s cumulative time per top-level package imported by
the compare command (nested packages count in the package that imported them first).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXAMPLE = ROOT / "examples"
COMPARE = [
    "-m", "evalbot.cli", "compare", "--baseline", ".evalbot/baseline.json", "evals",
    "--actuals", "runs/pr.json", "--judge-cache", "judge-cache", "--judge-replay",
]
_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def timed(argv: list[str], *, cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def source_env(src: Path) -> dict[str, str]:
    """The environment that makes a fresh interpreter import evalbot from ``src``."""
    return {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": ""}


def compare_times(src: Path, runs: int) -> list[float]:
    env = source_env(src)
    times = []
    for _ in range(runs):
        took, done = timed([sys.executable, *COMPARE], cwd=EXAMPLE, env=env)
        if done.returncode != 1:
            raise SystemExit(f"compare exited {done.returncode}, expected 1:\n{done.stderr[-2000:]}")
        times.append(took)
    return times


def action_times(src: Path, runs: int) -> tuple[list[float], int]:
    """The entrypoint on the example's PR against the fake GitHub; (wall times, API requests of the first run)."""
    from scripts.serve_fake_github import BASE_SHA, HEAD_SHA, NUMBER, REPO, pull_request_event
    from tests.fakes.fake_github import APP_TOKEN, FakeGitHub, Pull

    times, first_requests = [], -1
    with tempfile.TemporaryDirectory() as tmp, FakeGitHub(repo=REPO) as fake:
        fake.put_file(".evalbot/baseline.json", (EXAMPLE / ".evalbot/baseline.json").read_bytes(), ref=BASE_SHA)
        fake.add_pull(Pull(NUMBER, HEAD_SHA, BASE_SHA))
        event, output = Path(tmp) / "event.json", Path(tmp) / "output"
        event.write_text(json.dumps(pull_request_event()), encoding="utf-8")
        env = {
            **source_env(src), "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
            "GITHUB_EVENT_PATH": str(event), "GITHUB_REPOSITORY": REPO, "GITHUB_SHA": HEAD_SHA,
            "GITHUB_REF": "refs/pull/7/merge", "GITHUB_WORKSPACE": str(EXAMPLE), "GITHUB_API_URL": fake.base_url,
            "GITHUB_OUTPUT": str(output), "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9",
            "INPUT_EVAL-SETS": "evals", "INPUT_ACTUALS": "runs/pr.json", "INPUT_JUDGE-CACHE": "judge-cache",
            "INPUT_GITHUB-TOKEN": APP_TOKEN, "INPUT_JUDGE-API-KEY": "bench-key",
            "INPUT_REPORT-PATH": str(Path(tmp) / "report.json"), "INPUT_JUNIT-PATH": str(Path(tmp) / "junit.xml"),
        }
        for n in range(runs):
            before = len(fake.exchanges)
            took, done = timed([sys.executable, str(src / "entrypoint.py")], cwd=EXAMPLE, env=env)
            if done.returncode != 1:
                raise SystemExit(f"entrypoint exited {done.returncode}, expected 1:\n{done.stdout[-3000:]}")
            if n == 0:
                first_requests = len(fake.exchanges) - before
            times.append(took)
    return times, first_requests


def import_breakdown(src: Path) -> tuple[float, list[tuple[str, float]]]:
    """Total import time of the compare command and the packages it goes to, in seconds: each module's own time
    (``-X importtime``'s "self" column) summed per top-level package, so pydantic's time spent building evalbot's
    models counts for evalbot and NLTK's own modules count for nltk."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *COMPARE], cwd=EXAMPLE, env=source_env(src),
        capture_output=True, text=True, check=False,
    )
    per: dict[str, float] = {}
    total = 0.0
    for line in done.stderr.splitlines():
        found = _LINE.match(line)
        if found:
            seconds = int(found.group(1)) / 1e6
            total += seconds
            top = found.group(4).split(".")[0]
            per[top] = per.get(top, 0.0) + seconds
    return total, sorted(per.items(), key=lambda kv: -kv[1])[:12]


def export(ref: str, into: Path) -> Path:
    """The tree of ``ref`` (evalbot/, entrypoint.py) in a scratch directory."""
    data = subprocess.run(["git", "archive", ref, "evalbot", "entrypoint.py"], cwd=ROOT, capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=BytesIO(data)) as archive:
        archive.extractall(into, filter="data")
    return into


def measure(src: Path, runs: int) -> dict[str, object]:
    compare = compare_times(src, runs)
    action, requests = action_times(src, runs)
    total, top = import_breakdown(src)
    return {
        "compare_s": statistics.median(compare), "compare_runs_s": compare,
        "action_s": statistics.median(action), "action_runs_s": action, "api_requests": requests,
        "imports_s": total, "imports_top_s": top,
    }


def show(name: str, result: dict[str, object]) -> None:
    print(f"== {name}")
    runs = ", ".join(f"{t:.2f}" for t in result["compare_runs_s"])  # type: ignore[attr-defined]
    print(f"evalbot compare (README quickstart), median: {result['compare_s']:.2f} s  [{runs}]")
    runs = ", ".join(f"{t:.2f}" for t in result["action_runs_s"])  # type: ignore[attr-defined]
    print(f"entrypoint on the example's PR, median:       {result['action_s']:.2f} s  [{runs}]"
          f"  GitHub API requests: {result['api_requests']}")
    print(f"imports of the compare command:               {result['imports_s']:.2f} s")
    for top, seconds in result["imports_top_s"]:  # type: ignore[attr-defined]
        print(f"    {top:<28} {seconds:6.3f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", metavar="REF", help="also measure git ref REF and print the ratios")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = {"now": measure(ROOT, args.runs)}
    if args.before:
        with tempfile.TemporaryDirectory() as tmp:
            results["before"] = measure(export(args.before, Path(tmp)), args.runs)
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    for name, result in results.items():
        show(name if name == "now" else f"before ({args.before})", result)
    if "before" in results:
        b, n = results["before"], results["now"]
        for key, label in (("compare_s", "compare"), ("action_s", "entrypoint"), ("imports_s", "imports")):
            print(f"{label}: {b[key]:.2f} s -> {n[key]:.2f} s ({b[key] / n[key]:.1f}x faster)")  # type: ignore[operator]
    return 0


if __name__ == "__main__":
    sys.exit(main())
