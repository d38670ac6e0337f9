#!/usr/bin/env python3
"""``evalbot compare`` against ``evalbot run`` on the same inputs: issue 28's compare rows, in one command.

    python bench/bench_compare.py [--invocations 30000,100002] [--repeat 3] [--keep DIR | --inputs DIR] [--json]

For each size (default: 10,000 cases = 30,000 invocations, and 33,334 cases = 100,002 invocations), writes
bench_memory's inputs (bench_engine's synthetic suite, 3 invocations x 3 tool calls x 40 words per case, events
form, and a second actual run of it for main), makes the baseline once with ``evalbot baseline`` from main's run,
then runs, alternately and ``--repeat`` times each, ``evalbot run SET --actuals PR --report R`` and ``evalbot
compare --baseline B SET --actuals PR --report R --comment C`` (the issue's "compare with a baseline and a comment"),
each in a fresh child measured alone (bench_memory's wrapper: wall time, CPU time = user + system, peak RSS of that
one process). Prints the medians and compare's ratios to run against the targets:

- 10,000 cases x 3 invocations: compare's time <= 1.3x run's (CPU; wall printed beside it);
- 100,000 invocations: compare <= 30 s; compare's peak RSS <= 1.2x run's.

Exit 1 if a target is missed. On a shared machine CPU time is the steadier figure; the wall-clock ratios are
printed too. ``--keep DIR`` keeps the inputs (one sub-folder per size) for ``--inputs DIR``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_memory import _cli, sized_runs  # noqa: E402

TIME_RATIO = 1.3
"""compare's time over run's, at 10,000 cases (30,000 invocations)."""
RSS_RATIO = 1.2
"""compare's peak RSS over run's, at 100,000 invocations."""
WALL_100K = 30.0
"""compare's time at 100,000 invocations, seconds."""


def _inputs(folder: Path, invocations: int) -> None:
    """bench_memory's inputs (eval set, the PR's run, main's run) in ``folder``, written by a child process."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(HERE / "bench_memory.py"), "--write-inputs", str(folder), str(invocations),
                    "1"], check=True)


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in rows))


def one_size(folder: Path, invocations: int, repeat: int) -> dict[str, Any]:
    evals, pr, baseline = str(folder / "evals"), str(folder / "pr.json"), str(folder / "baseline.json")
    made = _cli(["baseline", evals, "--actuals", str(folder / "main.json"), "--output", baseline, "--commit", "0" * 40,
                 "--created-at", "2026-01-01T00:00:00+00:00", "--reset-history"])  # the same baseline every time
    run_argv = ["run", evals, "--actuals", pr, "--report", str(folder / "run.report.json"), "--jobs", "1"]  # one process
    compare_argv = ["compare", "--baseline", baseline, evals, "--actuals", pr, "--report",
                    str(folder / "compare.report.json"), "--comment", str(folder / "comment.md")]
    runs, compares = [], []
    for _ in range(repeat):  # alternated, so both see the same load
        runs.append(_cli(run_argv))
        compares.append(_cli(compare_argv))
    out: dict[str, Any] = {"invocations": invocations, "baseline": made, "repeat": repeat}
    for name, rows in (("run", runs), ("compare", compares)):
        out[name] = {key: _median(rows, key) for key in ("wall_s", "cpu_s", "peak_rss_mb")}
    out["ratio"] = {key: round(out["compare"][key] / out["run"][key], 2) for key in ("wall_s", "cpu_s", "peak_rss_mb")}
    checks = []
    if invocations <= 30_000:
        checks.append(("compare/run CPU time", out["ratio"]["cpu_s"], TIME_RATIO, "x"))
    if invocations >= 100_000:
        checks.append(("compare wall time", out["compare"]["wall_s"], WALL_100K, " s"))
        checks.append(("compare CPU time", out["compare"]["cpu_s"], WALL_100K, " s"))
        checks.append(("compare/run peak RSS", out["ratio"]["peak_rss_mb"], RSS_RATIO, "x"))
    out["targets"] = [{"what": what, "value": value, "target": target, "unit": unit, "met": value <= target}
                      for what, value, target, unit in checks]
    return out


def _print(result: dict[str, Any]) -> None:
    n = result["invocations"]
    print(f"{n:,} invocations ({-(-n // 3):,} cases), median of {result['repeat']}, alternated:")
    for name in ("run", "compare"):
        r = result[name]
        print(f"  {name:8} wall {r['wall_s']:6.1f} s  CPU {r['cpu_s']:6.1f} s  peak RSS {r['peak_rss_mb']:7,.0f} MB")
    ratio = result["ratio"]
    print(f"  compare/run: wall {ratio['wall_s']:.2f}x, CPU {ratio['cpu_s']:.2f}x, peak RSS {ratio['peak_rss_mb']:.2f}x"
          f"  (baseline step: {result['baseline']['cpu_s']} s CPU, {result['baseline']['peak_rss_mb']} MB)")
    for t in result["targets"]:
        verdict = "met" if t["met"] else "MISSED"
        print(f"  target: {t['what']} {t['value']:.2f}{t['unit']} <= {t['target']:g}{t['unit']}: {verdict}")


def main(argv: list[str] | None = None) -> int:
    results, as_json = sized_runs(__doc__, "30000,100002", "evalbot-cmp-", _inputs, one_size, _print, argv)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if as_json:
        print(json.dumps({"results": results, "load_average": load}))
    else:
        print(f"load average: {load}")
    return 0 if all(t["met"] for r in results for t in r["targets"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
