#!/usr/bin/env python3
"""Growth: how ``evalbot baseline``, ``compare`` (with a baseline and a comment, with and without ``--html``) and
``merge`` scale with the cases.

    python bench/bench_growth.py [--cases 1000,10000,30000] [--repeat 1] [--shards 4] [--json]

For each size N, builds N synthetic cases (bench_engine's: 3 invocations x 3 tool calls with nested arguments x
40-word responses, actual runs in ADK's events form) and two actual runs of that one suite, with independent
changes: a baseline's and a pull request's, so nearly every case's ROUGE score moves and ~35% of trajectories
differ. Then, each in a fresh interpreter:

1. ``evalbot baseline SET --actuals BASE --output baseline.json`` (fixed commit and timestamp);
2. ``evalbot compare SET --actuals PR --baseline baseline.json --comment comment.md --report report.json``;
3. the same with ``--html report.html``;
4. ``evalbot merge PART... --eval-sets SET --actuals PR --baseline baseline.json --comment merged.md --report
   report.json`` of the PR run scored as ``--shards`` parts (``evalbot run --shard K/N --report PART``, not timed):
   the sharded workflow's second job. Its comment must equal compare's byte for byte.

Printed per size and command: the child's CPU time (user + system, from ``getrusage``; under a loaded machine this
is steadier than wall time, printed too) and then the growth exponent of each command: the least-squares slope of
log(CPU time) against log(N). Linear work gives 1.0; the target is <= 1.1 for every command (exit 1 otherwise). The
fixed start-up (imports, ~1-2 s) flattens the slope at small N, so the exponent is also printed from the two largest
sizes alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import synthetic  # noqa: E402


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalbot.cli", *args]


def _timed(argv: list[str]) -> tuple[float, float]:
    """Run ``argv`` in a fresh interpreter; (child CPU seconds, wall seconds). Exit 0 or 1 (blocked) is expected."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def slope(points: list[tuple[int, float]]) -> float:
    """Least-squares slope of log(time) against log(size)."""
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


COMMANDS = ("baseline", "compare", "compare_html", "merge")


def one_size(tmp: Path, n: int, repeat: int, shards: int) -> dict[str, Any]:
    eval_set, base = synthetic(n, seed=11, actual_seed=12)
    _, pr = synthetic(n, seed=11, actual_seed=13)
    suite, base_file, pr_file = tmp / "bench.evalset.json", tmp / "base.json", tmp / "pr.json"
    suite.write_text(json.dumps(eval_set), encoding="utf-8")
    base_file.write_text(json.dumps(base), encoding="utf-8")
    pr_file.write_text(json.dumps(pr), encoding="utf-8")
    del eval_set, base, pr
    parts = [tmp / f"part{k}.json" for k in range(1, shards + 1)]
    for k, part in enumerate(parts, 1):
        _timed(_cli("run", str(suite), "--actuals", str(pr_file), "--shard", f"{k}/{shards}", "--report", str(part)))
    baseline = tmp / "baseline.json"
    compare_argv = _cli("compare", str(suite), "--actuals", str(pr_file), "--baseline", str(baseline),
                        "--comment", str(tmp / "comment.md"), "--report", str(tmp / "report.json"))
    argvs = {
        "baseline": _cli("baseline", str(suite), "--actuals", str(base_file), "--output", str(baseline),
                         "--commit", "0" * 40, "--created-at", "2026-01-01T00:00:00+00:00", "--reset-history"),
        "compare": compare_argv,
        "compare_html": [*compare_argv, "--html", str(tmp / "report.html")],
        "merge": _cli("merge", *map(str, parts), "--eval-sets", str(suite), "--actuals", str(pr_file),
                      "--baseline", str(baseline), "--comment", str(tmp / "merged.md"),
                      "--report", str(tmp / "report.json")),
    }
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in COMMANDS}
    for _ in range(repeat):
        baseline.unlink(missing_ok=True)
        for name in COMMANDS:
            runs[name].append(_timed(argvs[name]))
    if (tmp / "comment.md").read_bytes() != (tmp / "merged.md").read_bytes():
        raise SystemExit(f"{n} cases: the merged parts' comment differs from compare's")
    out: dict[str, Any] = {"cases": n, "comment_bytes": (tmp / "comment.md").stat().st_size,
                           "html_bytes": (tmp / "report.html").stat().st_size}
    for name, times in runs.items():
        cpu, wall = min(times)
        out[name] = {"cpu_s": round(cpu, 2), "wall_s": round(wall, 2)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="1000,10000,30000", help="comma-separated sizes (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per size and command; the best is kept")
    parser.add_argument("--shards", type=int, default=4, help="parts that merge reads (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args(argv)
    sizes = sorted(int(s) for s in args.cases.split(","))
    results = []
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="evalbot-growth-") as tmp:
            results.append(one_size(Path(tmp), n, args.repeat, args.shards))
        if not args.json:
            r = results[-1]
            print(f"{n:>7,} cases: " + "   ".join(f"{name} {r[name]['cpu_s']:.2f} s CPU ({r[name]['wall_s']:.2f} s wall)"
                                                  for name in COMMANDS)
                  + f"   comment {r['comment_bytes']:,} bytes, HTML {r['html_bytes']:,} bytes", flush=True)
    summary: dict[str, Any] = {"load_average": [round(x, 2) for x in os.getloadavg()], "sizes": results}
    for name in COMMANDS:
        points = [(r["cases"], r[name]["cpu_s"]) for r in results]
        summary[f"{name}_exponent"] = round(slope(points), 3) if len(points) > 1 else None
        summary[f"{name}_exponent_top2"] = round(slope(points[-2:]), 3) if len(points) > 1 else None
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for name in COMMANDS:
            print(f"{name}: growth exponent {summary[f'{name}_exponent']} "
                  f"(two largest sizes: {summary[f'{name}_exponent_top2']}; target <= 1.1)")
        print(f"load average at the end: {summary['load_average']}")
    exponents = [summary[f"{name}_exponent"] for name in COMMANDS]
    return 0 if all(e is None or e <= 1.1 for e in exponents) else 1


if __name__ == "__main__":
    sys.exit(main())
