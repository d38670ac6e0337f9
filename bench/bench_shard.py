#!/usr/bin/env python3
"""Sharded runs: one job versus four shards in parallel processes on an agent-bound run, and the merge's cost.

    python bench/bench_shard.py [--cases 300] [--latency 0.2] [--shards 4] [--merge-invocations 100000] [--json]
    python bench/bench_shard.py --merge-only [--parts DIR] [--repeat 3]    # part 2 alone, against the 5 s target

1. Agent-bound run. The generated suite (tests/fakes/suites.py: multi-turn cases of 1 to 4 turns) is run with
   ``evalbot run --agent bench.bench_shard:agent``, a fake agent that sleeps ``--latency`` seconds per turn, one case
   at a time (``--agent-concurrency 1``: a job's agent capacity is fixed, so the run is agent-bound). Once as one job,
   then as ``--shards`` jobs started together (``--shard K/N --report PART``), then ``evalbot merge`` of the parts.
   Printed: both wall times (each from process start to exit, the merge included on the sharded side) and the ratio
   (target >= 3.5x with 4 shards), and whether the merged report equals the one job's (timing fields aside).
2. Merge at scale. A suite of ``--merge-invocations`` invocations (recorded runs, no agent) is scored as ``--shards``
   parts in parallel; then ``evalbot merge PART... --report OUT`` runs in a fresh process. Printed: its wall time and
   the in-process split (reading and validating the parts, merging, writing the report).
   ``--merge-only`` skips part 1 and prints the merge's wall time, CPU time and peak RSS (the ``evalbot merge``
   process alone, measured by a bare wrapper process) against the target (<= 5 s), the median of ``--repeat`` runs;
   ``--parts DIR`` keeps the scored parts there and reuses them on the next run (scoring them takes a minute).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_memory import MEASURE  # noqa: E402  (the wrapper that reads one child's peak RSS)

LATENCY_ENV = "EVALBOT_BENCH_TURN_LATENCY"
TIMING_METRICS = ("invocation_duration_v1", "latency")
"""Criteria that measure time: they differ between any two runs of an agent."""


def agent(prompt: str) -> dict[str, Any]:
    """The fake agent: a fixed latency per turn, then the answer the suite expects (so cases pass)."""
    time.sleep(float(os.environ.get(LATENCY_ENV, "0.1")))
    city = prompt.removeprefix("what is the weather in ").removesuffix("?")
    return {"response": f"the weather in {city} is sunny and mild today",
            "predicted_trajectory": [{"tool_name": "lookup",
                                      "tool_input": {"city": city, "turn": int(city.rpartition("-")[2] or 0)}}]}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalbot.cli", *args]


def _env(latency: float) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), LATENCY_ENV: str(latency)}


def _run(argv: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return time.perf_counter() - start


def _parallel(commands: list[list[str]], env: dict[str, str]) -> float:
    start = time.perf_counter()
    procs = [subprocess.Popen(c, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for c in commands]
    for proc, command in zip(procs, commands, strict=True):
        _, err = proc.communicate()
        if proc.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(command)} failed ({proc.returncode}): {err[-2000:]}")
    return time.perf_counter() - start


def _without_timing(report: dict[str, Any]) -> dict[str, Any]:
    for es in report["eval_sets"]:
        for name in TIMING_METRICS:
            es["metrics"].pop(name, None)
        for case in es["cases"]:
            for name in TIMING_METRICS:
                case["metrics"].pop(name, None)
    return report


def agent_bound(tmp: Path, cases: int, latency: float, shards: int) -> dict[str, Any]:
    from tests.fakes.suites import write_suite

    evals, _, _ = write_suite(tmp / "suite", cases=cases)
    env = _env(latency)
    common = [str(evals), "--agent", "bench.bench_shard:agent", "--agent-concurrency", "1"]
    one_report = tmp / "one.json"
    one = _run(_cli("run", *common, "--report", str(one_report)), env)
    parts = [tmp / "parts" / f"part-{k}.json" for k in range(1, shards + 1)]
    start = time.perf_counter()
    jobs = _parallel([_cli("run", *common, "--shard", f"{k}/{shards}", "--report", str(p))
                      for k, p in enumerate(parts, start=1)], env)
    merged = tmp / "merged.json"
    merge = _run(_cli("merge", *map(str, parts), "--report", str(merged)), env)
    sharded = time.perf_counter() - start
    same = _without_timing(json.loads(one_report.read_text())) == _without_timing(json.loads(merged.read_text()))
    turns = sum(1 + (c * 7) % 4 for c in range(cases))
    return {"cases": cases, "turns": turns, "latency_s": latency, "one_job_s": round(one, 2),
            "shards": shards, "shard_jobs_s": round(jobs, 2), "merge_s": round(merge, 2),
            "sharded_s": round(sharded, 2), "ratio": round(one / sharded, 2), "same_report": same}


MERGE_TARGET_S = 5.0
"""Issue 28: `evalbot merge` of 4 parts, 100,000 invocations."""



def _measured(argv: list[str], env: dict[str, str]) -> dict[str, float]:
    """Wall time, CPU time (user + system) and peak RSS of one command, run by a bare wrapper process."""
    done = subprocess.run([sys.executable, "-c", MEASURE, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, check=False)
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else {}
    if row.get("exit") not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed: {row or done.stderr[-2000:]}")
    return {"wall_s": row["wall_s"], "cpu_s": row["cpu_s"], "peak_rss_mb": row["peak_rss_mb"]}


def scored_parts(base: Path, invocations: int, shards: int) -> tuple[list[Path], int, int, float | None]:
    """The parts of a ``invocations`` run scored as ``shards`` jobs in parallel under ``base`` (reused when a run
    of the same size left them there): the part files, the invocations, the cases and the scoring time (None when
    reused)."""
    from tests.fakes.suites import write_suite

    cases = round(invocations / 2.5)  # 1 to 4 turns, 2.5 on average
    total = sum(1 + (c * 7) % 4 for c in range(cases))
    parts = [base / "bigparts" / f"part-{k}.json" for k in range(1, shards + 1)]
    stamp = base / "bigparts" / "made.json"
    made = {"invocations": invocations, "shards": shards}
    if stamp.exists() and json.loads(stamp.read_text()) == made and all(p.exists() for p in parts):
        return parts, total, cases, None
    evals, _, pr = write_suite(base / "big", cases=cases, sets=4)
    score = _parallel([_cli("run", str(evals), "--actuals", str(pr), "--shard", f"{k}/{shards}", "--report", str(p))
                       for k, p in enumerate(parts, start=1)], _env(0))
    stamp.write_text(json.dumps(made))
    return parts, total, cases, score


def merge_only(base: Path, invocations: int, shards: int, repeat: int) -> dict[str, Any]:
    """``evalbot merge PART... --report OUT`` alone, ``repeat`` times: the median wall, CPU and peak RSS."""
    parts, total, cases, score = scored_parts(base, invocations, shards)
    runs = [_measured(_cli("merge", *map(str, parts), "--report", str(base / "merged.json")), _env(0))
            for _ in range(repeat)]
    median = {key: sorted(r[key] for r in runs)[len(runs) // 2] for key in runs[0]}
    return {"invocations": total, "cases": cases, "parts": shards,
            "parts_mb": round(sum(p.stat().st_size for p in parts) / 1e6, 1),
            "scoring_shards_s": None if score is None else round(score, 1), "repeat": repeat,
            "wall_s": round(median["wall_s"], 2), "cpu_s": round(median["cpu_s"], 2),
            "peak_rss_mb": round(median["peak_rss_mb"]), "target_s": MERGE_TARGET_S,
            "met": median["wall_s"] <= MERGE_TARGET_S,
            "runs": [{k: round(v, 2) for k, v in r.items()} for r in runs], "load_average": os.getloadavg()}


def merge_at_scale(tmp: Path, invocations: int, shards: int) -> dict[str, Any]:
    from evalbot.results import write_report_json
    from evalbot.shard.merge import merge_reports
    from evalbot.shard.parts import read_part

    parts, total, cases, score = scored_parts(tmp, invocations, shards)
    env = _env(0)
    merged = tmp / "big-merged.json"
    wall = _run(_cli("merge", *map(str, parts), "--report", str(merged)), env)
    t0 = time.perf_counter()
    loaded = [(str(p), read_part(p)) for p in parts]
    t1 = time.perf_counter()
    report = merge_reports(loaded)
    t2 = time.perf_counter()
    with (tmp / "again.json").open("w", encoding="utf-8") as out:
        write_report_json(report, out)
    t3 = time.perf_counter()
    return {"invocations": total, "cases": cases, "parts_mb": round(sum(p.stat().st_size for p in parts) / 1e6, 1),
            "scoring_shards_s": None if score is None else round(score, 1), "merge_cli_s": round(wall, 2), "read_validate_s": round(t1 - t0, 2),
            "merge_s": round(t2 - t1, 2), "write_s": round(t3 - t2, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per agent turn")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--merge-invocations", type=int, default=100_000, help="0 skips the merge at scale")
    parser.add_argument("--merge-only", action="store_true",
                        help="only the merge at scale: wall, CPU and peak RSS of `evalbot merge` against the target")
    parser.add_argument("--parts", type=Path, metavar="DIR", help="with --merge-only: keep and reuse the parts here")
    parser.add_argument("--repeat", type=int, default=3, help="with --merge-only: runs (the median is printed)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.merge_only:
        with tempfile.TemporaryDirectory(prefix="bench-shard-") as scratch:
            base = args.parts or Path(scratch)
            base.mkdir(parents=True, exist_ok=True)
            m = merge_only(base, args.merge_invocations or 100_000, args.shards, max(1, args.repeat))
        if args.json:
            print(json.dumps({"merge_only": m}, indent=2))
            return 0
        scored = "reused" if m["scoring_shards_s"] is None else f"scored in {m['scoring_shards_s']} s"
        print(f"merge: {m['invocations']:,} invocations in {m['cases']:,} cases, {m['parts']} parts "
              f"({m['parts_mb']} MB, {scored}); median of {m['repeat']}, load average "
              f"{' '.join(f'{x:.1f}' for x in m['load_average'])}")
        print(f"  evalbot merge --report  wall {m['wall_s']:.2f} s  CPU {m['cpu_s']:.2f} s  peak RSS "
              f"{m['peak_rss_mb']} MB  (target <= {m['target_s']:.0f} s: {'met' if m['met'] else 'NOT met'})")
        print("  runs: " + "; ".join(f"{r['wall_s']} s wall / {r['cpu_s']} s CPU / {r['peak_rss_mb']:.0f} MB"
                                     for r in m["runs"]))
        return 0
    with tempfile.TemporaryDirectory(prefix="bench-shard-") as scratch:
        tmp = Path(scratch)
        results: dict[str, Any] = {"agent_bound": agent_bound(tmp, args.cases, args.latency, args.shards)}
        a = results["agent_bound"]
        if not args.json:
            print(f"agent-bound: {a['cases']} cases, {a['turns']} turns x {a['latency_s']} s, agent concurrency 1")
            print(f"  one job            {a['one_job_s']:8.2f} s")
            print(f"  {a['shards']} shards + merge   {a['sharded_s']:8.2f} s  (jobs {a['shard_jobs_s']} s, merge "
                  f"{a['merge_s']} s)")
            print(f"  ratio              {a['ratio']:8.2f}x  (target >= 3.5x); merged report equals the one job's: "
                  f"{a['same_report']}")
        if args.merge_invocations:
            results["merge"] = m = merge_at_scale(tmp, args.merge_invocations, args.shards)
            if not args.json:
                print(f"merge: {m['invocations']:,} invocations in {m['cases']:,} cases, {args.shards} parts "
                      f"({m['parts_mb']} MB)")
                print(f"  evalbot merge (fresh process)  {m['merge_cli_s']:6.2f} s")
                print(f"  in process: read + validate {m['read_validate_s']} s, merge {m['merge_s']} s, write "
                      f"{m['write_s']} s")
        if args.json:
            print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
