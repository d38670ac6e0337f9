#!/usr/bin/env python3
"""Sharded runs: one job versus four shards in parallel processes on an agent-bound run, and the merge's cost.

    python bench/bench_shard.py [--cases 300] [--latency 0.2] [--shards 4] [--merge-invocations 100000] [--json]

1. Agent-bound run. The generated suite (tests/fakes/suites.py: multi-turn cases of 1 to 4 turns) is run with
   ``evalbot run --agent bench.bench_shard:agent``, a fake agent that sleeps ``--latency`` seconds per turn, one case
   at a time (``--agent-concurrency 1``: a job's agent capacity is fixed, so the run is agent-bound). Once as one job,
   then as ``--shards`` jobs started together (``--shard K/N --report PART``), then ``evalbot merge`` of the parts.
   Printed: both wall times (each from process start to exit, the merge included on the sharded side) and the ratio
   (target >= 3.5x with 4 shards), and whether the merged report equals the one job's (timing fields aside).
2. Merge at scale. A suite of ``--merge-invocations`` invocations (recorded runs, no agent) is scored as ``--shards``
   parts in parallel; then ``evalbot merge PART... --report OUT`` runs in a fresh process. Printed: its wall time and
   the in-process split (reading and validating the parts, merging, writing the report).
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


def merge_at_scale(tmp: Path, invocations: int, shards: int) -> dict[str, Any]:
    from evalbot.results import write_report_json
    from evalbot.shard import merge_reports, read_part
    from tests.fakes.suites import write_suite

    cases = round(invocations / 2.5)  # 1 to 4 turns, 2.5 on average
    evals, _, pr = write_suite(tmp / "big", cases=cases, sets=4)
    env = _env(0)
    parts = [tmp / "bigparts" / f"part-{k}.json" for k in range(1, shards + 1)]
    score = _parallel([_cli("run", str(evals), "--actuals", str(pr), "--shard", f"{k}/{shards}", "--report", str(p))
                       for k, p in enumerate(parts, start=1)], env)
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
    total = sum(1 + (c * 7) % 4 for c in range(cases))
    return {"invocations": total, "cases": cases, "parts_mb": round(sum(p.stat().st_size for p in parts) / 1e6, 1),
            "scoring_shards_s": round(score, 1), "merge_cli_s": round(wall, 2), "read_validate_s": round(t1 - t0, 2),
            "merge_s": round(t2 - t1, 2), "write_s": round(t3 - t2, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per agent turn")
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--merge-invocations", type=int, default=100_000, help="0 skips the merge at scale")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
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
