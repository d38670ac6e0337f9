#!/usr/bin/env python3
"""Peak memory of ``evalbot run`` (and optionally ``evalbot compare``) on a large synthetic run.

    python bench/bench_memory.py [--invocations N] [--jobs N[,N...]] [--compare] [--keep DIR | --inputs DIR]

Writes an eval set and the matching actual run of N invocations (default 1,000,000; bench_engine's synthetic cases:
3 invocations x 3 tool calls x 40-word responses, events form) to a temporary folder, then runs the real CLI,
``evalbot run PATH --actuals FILE --report OUT.json``, in a child process and prints its wall time, CPU time and
peak RSS (``ru_maxrss`` of that one child, measured by a small wrapper process, so neither this process nor the
input writer counts; a forked child's ``ru_maxrss`` starts at its parent's size).  With ``--compare``, the same
run is then gated against a baseline written by ``evalbot baseline`` from a second run (another actual seed) of
the same suite, with ``evalbot compare ... --report OUT.json``; that measures the baseline step and the compare.

``--jobs 1,2`` measures ``evalbot run --jobs N`` for each N in turn (default: 1, one process; ``default``: ``run``
without --jobs, which is auto for large inputs) and checks that every N wrote the same report, byte for byte. With N > 1, the CPU time is that of every process (the jobs and the
parent that merges their parts) and the peak RSS that of the largest one: ``ru_maxrss`` of waited-for children is
their maximum, and the jobs are the parent's children; the machine holds up to N + 1 of them at once.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def write_inputs(directory: str, invocations: int, baseline_run: bool) -> None:
    """Child: the eval set, the PR's actual run and (for compare) a main run (other seed) of N invocations."""
    sys.path.insert(0, str(HERE))
    from bench_engine import INVOCATIONS, synthetic

    n_cases = -(-invocations // INVOCATIONS)
    base = Path(directory)
    eval_set, actuals = synthetic(n_cases, seed=11, actual_seed=12)
    (base / "evals").mkdir()
    with (base / "evals" / "bench.evalset.json").open("w", encoding="utf-8") as f:
        json.dump(eval_set, f)
    with (base / "pr.json").open("w", encoding="utf-8") as f:
        json.dump(actuals, f)
    del actuals
    if not baseline_run:
        return
    _, main_actuals = synthetic(n_cases, seed=11, actual_seed=13)
    with (base / "main.json").open("w", encoding="utf-8") as f:
        json.dump(main_actuals, f)


# Measures its one child: a wrapper of its own, so no other child of the bench (the input writer) counts.
MEASURE = (
    "import json, resource, subprocess, sys, time\n"
    "t0 = time.perf_counter()\n"
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
    "ru = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(json.dumps({'exit': code, 'wall_s': time.perf_counter() - t0, 'cpu_s': ru.ru_utime + ru.ru_stime,\n"
    "                  'peak_rss_mb': ru.ru_maxrss / 1024}))\n"  # Linux: KiB
)


def sized_runs(
    doc: str | None, default_sizes: str, prefix: str, prepare: Callable[[Path, int], None],
    one_size: Callable[[Path, int, int], dict[str, Any]], show: Callable[[dict[str, Any]], None],
    argv: list[str] | None = None,
) -> tuple[list[dict[str, Any]], bool]:
    """The command line shared by the benches that time evalbot commands at several sizes: parse ``--invocations``,
    ``--repeat``, ``--keep``, ``--inputs`` and ``--json``; for each size write the inputs (``prepare(folder, n)``, unless
    ``--inputs`` names an earlier ``--keep``), time them (``one_size(folder, n, repeat)``) and show each result unless
    ``--json``. The results, and whether ``--json`` was given."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--invocations", default=default_sizes, help="comma-separated sizes (default %(default)s)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command per size; medians (default 3)")
    parser.add_argument("--keep", help="write the inputs to this new folder and keep them")
    parser.add_argument("--inputs", help="a folder written by an earlier --keep: reuse its inputs")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.invocations.split(",")]
    root = Path(args.keep or args.inputs or tempfile.mkdtemp(prefix=prefix))
    if args.keep:
        root.mkdir(parents=True)
    results = []
    try:
        for n in sizes:
            folder = root / str(n)
            if not args.inputs:
                prepare(folder, n)
            results.append(one_size(folder, n, args.repeat))
            if not args.json:
                show(results[-1])
    finally:
        if not args.keep and not args.inputs:
            shutil.rmtree(root, ignore_errors=True)
    return results, bool(args.json)


def _cli(args: list[str], cwd: Path | None = None) -> dict[str, Any]:
    """Run ``evalbot ARGS`` in a child (in ``cwd``, default this one); its wall time, CPU time, peak RSS and exit code.

    ``ru_maxrss`` of waited-for children is their maximum, and a forked child starts at its parent's size: the
    wrapper (a bare interpreter, ~10 MB) has one child, evalbot, whose peak is what it reports.
    """
    exe = Path(sys.executable).parent / "evalbot"  # the console script of this venv, else the one on PATH
    cmd = [sys.executable, "-c", MEASURE, str(exe) if exe.exists() else "evalbot", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    row: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0 else {}
    if row.get("exit") not in (0, 1):
        raise SystemExit(f"evalbot {args[0]} failed: {row or proc.stderr[-4000:]}")
    return {"command": args[0], "exit": row["exit"], "wall_s": round(row["wall_s"], 1),
            "cpu_s": round(row["cpu_s"], 1), "peak_rss_mb": round(row["peak_rss_mb"])}


TARGETS = {1_000_000: (1024, 90.0), 300_000: (None, 25.0)}
"""Issue 28's targets for ``evalbot run --report``, by invocations: peak RSS (MB) and wall time (s)."""


def against_target(invocations: int, row: dict[str, Any]) -> str:
    """The run's peak RSS and wall time against issue 28's target at this size (the nearest size at or below)."""
    size = max((n for n in TARGETS if n <= invocations), default=None)
    if size is None:
        return f"target: none below {min(TARGETS):,} invocations"
    peak, wall = TARGETS[size]
    parts = []
    if peak is not None:
        parts.append(f"peak {row['peak_rss_mb']:,} MB vs <= {peak:,} MB: {'met' if row['peak_rss_mb'] <= peak else 'MISSED'}")
    parts.append(f"wall {row['wall_s']} s (CPU {row['cpu_s']} s) vs <= {wall:g} s: "
                 f"{'met' if row['wall_s'] <= wall else 'MISSED'}")
    return f"target ({size:,} invocations): " + "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--invocations", type=int, default=1_000_000, help="invocations in the run (default 1M)")
    parser.add_argument("--compare", action="store_true", help="also measure `evalbot baseline` and `compare`")
    parser.add_argument("--keep", help="write the inputs and reports to this new folder and keep them")
    parser.add_argument("--inputs", help="a folder written by an earlier --keep: run on its inputs (same --invocations)")
    parser.add_argument("--jobs", default="1", help="comma-separated --jobs values to measure `run` with (default 1); "
                        "`default` runs it without --jobs (its default: auto when the inputs are large)")
    parser.add_argument("--write-inputs", nargs=3, metavar=("DIR", "N", "MAIN"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.write_inputs:
        write_inputs(args.write_inputs[0], int(args.write_inputs[1]), args.write_inputs[2] == "1")
        return
    tmp = args.keep or args.inputs or tempfile.mkdtemp(prefix="evalbot-mem-")
    if args.keep:
        os.makedirs(tmp)
    try:
        t0 = time.perf_counter()
        if not args.inputs:
            subprocess.run([sys.executable, __file__, "--write-inputs", tmp, str(args.invocations),
                            str(int(args.compare))], check=True)
        base = Path(tmp)
        inputs = [*(base / "evals").glob("*.json"), base / "pr.json", *[base / "main.json"] * args.compare]
        sizes = sum(p.stat().st_size for p in inputs)
        made = f"read from {base}" if args.inputs else f"written in {time.perf_counter() - t0:.0f} s"
        print(f"inputs: {args.invocations:,} invocations, {sizes / 1e6:,.0f} MB, {made}", flush=True)
        evals, pr = str(base / "evals"), str(base / "pr.json")
        rows = []
        reports: dict[str, Path] = {}
        for jobs in [n.strip() for n in args.jobs.split(",")]:
            reports[jobs] = base / f"run-{jobs}.report.json"
            rows.append(_cli(["run", evals, "--actuals", pr, "--report", str(reports[jobs]),
                              *(["--jobs", jobs] if jobs != "default" else [])]))
            rows[-1]["jobs"] = int(jobs) if jobs.isdigit() else jobs
            print(json.dumps(rows[-1]), flush=True)
            print(against_target(args.invocations, rows[-1]), flush=True)
        if len(reports) > 1:
            first, *rest = reports.values()
            same = all(filecmp.cmp(first, other, shallow=False) for other in rest)
            print(f"reports of --jobs {args.jobs}: {'identical' if same else 'DIFFERENT'}", flush=True)
            if not same:
                raise SystemExit(1)
        if args.compare:
            rows.append(_cli(["baseline", evals, "--actuals", str(base / "main.json"),
                              "--output", str(base / "baseline.json")]))
            print(json.dumps(rows[-1]), flush=True)
            rows.append(_cli(["compare", "--baseline", str(base / "baseline.json"), evals, "--actuals", pr,
                              "--report", str(base / "compare.report.json"),
                              "--comment", str(base / "comment.md")]))
            print(json.dumps(rows[-1]), flush=True)
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        if not args.keep and not args.inputs:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
