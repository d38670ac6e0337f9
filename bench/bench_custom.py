#!/usr/bin/env python3
"""Custom metrics: the cost of running them in a worker process instead of in the gate's process.

    python bench/bench_custom.py [--cases 1000] [--turns 2] [--repeat 3] [--in-process-rev 0f7bac1] [--json]

Builds a repository with one eval set of ``--cases`` cases of ``--turns`` invocations each, their recorded runs, and a
Vertex-contract custom metric (the seed's ``essential_tools_present``) next to ``tool_trajectory_avg_score``. Each
variant is timed as ``evalbot.pipeline.evaluate`` in a fresh interpreter (best of ``--repeat``, the interpreter's
start and evalbot's imports not counted):

* ``no custom metric``: the same run without it (what the rest of the run costs);
* ``in process``: evalbot at ``--in-process-rev`` (the last commit that imported the metric into the gate and called
  it in a thread per call), extracted with ``git archive``;
* ``worker``: this tree (one worker process per metric and eval set; cases sent in batches of 256 calls).

Printed: each wall time, the custom metric's own cost in both (the difference with the run without it), per case,
and the worker's extra cost; and whether both gave the same scores.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

METRIC = '''
def essential_tools_present(instance, required_tools=["get_order", "create_refund"]):
    trajectory = instance["predicted_trajectory"] or []
    tools_present = [tool_used["tool_name"] for tool_used in trajectory]
    score = sum(1 for tool in required_tools if tool in tools_present)
    return {"essential_tools_present": score / len(required_tools), "explanation": f"saw {tools_present}"}
'''

TIMER = '''
import json, sys, time
sys.path.insert(0, sys.argv[1])
from evalbot.pipeline import evaluate
best, scores = None, None
for _ in range(int(sys.argv[4])):
    start = time.perf_counter()
    report = evaluate([sys.argv[2]], actuals=[sys.argv[3]])
    took = time.perf_counter() - start
    best = took if best is None else min(best, took)
    scores = [[c.eval_id, {k: m.score for k, m in c.metrics.items()}] for c in report.eval_sets[0].cases]
print(json.dumps({"seconds": best, "scores": scores}))
'''


def _invocation(i: int, turn: int, tools: list[str]) -> dict[str, Any]:
    return {
        "invocation_id": f"c{i}-t{turn}",
        "user_content": {"role": "user", "parts": [{"text": f"order {i} turn {turn}"}]},
        "final_response": {"role": "model", "parts": [{"text": f"done with order {i}"}]},
        "intermediate_data": {"tool_uses": [{"name": t, "args": {"order": i}} for t in tools]},
    }


def build(folder: Path, cases: int, turns: int, custom: bool) -> tuple[Path, Path]:
    """The repository: eval set, recorded runs and (with ``custom``) the metric; returns the eval dir and actuals."""
    (folder / ".git").mkdir(parents=True)
    (folder / "bench_metrics").mkdir()
    (folder / "bench_metrics" / "__init__.py").write_text("", encoding="utf-8")
    (folder / "bench_metrics" / "checks.py").write_text(METRIC, encoding="utf-8")
    evals = folder / "evals"
    evals.mkdir()
    expected, actual = [], {}
    for i in range(cases):
        want = [_invocation(i, t, ["get_order", "create_refund"]) for t in range(turns)]
        got = [_invocation(i, t, ["get_order"] if (i + t) % 3 == 0 else ["get_order", "create_refund"])
               for t in range(turns)]
        expected.append({"eval_id": f"case-{i}", "conversation": want})
        actual[f"case-{i}"] = got
    (evals / "bench.evalset.json").write_text(json.dumps({"eval_set_id": "bench", "eval_cases": expected}),
                                              encoding="utf-8")
    config: dict[str, Any] = {"criteria": {"tool_trajectory_avg_score": 1.0}}
    if custom:
        config["criteria"]["essential_tools_present"] = 0.5
        config["custom_metrics"] = {
            "essential_tools_present": {"code_config": {"name": "bench_metrics.checks.essential_tools_present"}}}
    (evals / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    runs = folder / "actuals.json"
    runs.write_text(json.dumps(actual), encoding="utf-8")
    return evals, runs


def timed(tree: Path, evals: Path, runs: Path, repeat: int) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", TIMER, str(tree), str(evals), str(runs), str(repeat)],
                          cwd=evals.parent, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"timing failed: {done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--in-process-rev", default="0f7bac1")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        old = base / "old"
        old.mkdir()
        archive = subprocess.run(["git", "archive", args.in_process_rev, "evalbot"], cwd=ROOT, capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        plain = timed(ROOT, *build(base / "plain", args.cases, args.turns, custom=False), args.repeat)
        evals, runs = build(base / "custom", args.cases, args.turns, custom=True)
        inproc = timed(old, evals, runs, args.repeat)
        worker = timed(ROOT, evals, runs, args.repeat)
    calls = args.cases * args.turns
    out = {
        "cases": args.cases, "calls": calls,
        "no_custom_s": plain["seconds"], "in_process_s": inproc["seconds"], "worker_s": worker["seconds"],
        "metric_in_process_ms_per_case": (inproc["seconds"] - plain["seconds"]) * 1000 / args.cases,
        "metric_worker_ms_per_case": (worker["seconds"] - plain["seconds"]) * 1000 / args.cases,
        "worker_extra_s": worker["seconds"] - inproc["seconds"],
        "same_scores": inproc["scores"] == worker["scores"],
    }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"{args.cases} cases x {args.turns} invocations = {calls} custom metric calls (best of {args.repeat})")
    print(f"  no custom metric            {out['no_custom_s']:.3f} s")
    print(f"  in process ({args.in_process_rev})      {out['in_process_s']:.3f} s   metric "
          f"{out['metric_in_process_ms_per_case']:.3f} ms/case")
    print(f"  worker process              {out['worker_s']:.3f} s   metric {out['metric_worker_ms_per_case']:.3f} ms/case")
    print(f"  worker's extra cost         {out['worker_extra_s']:+.3f} s; same scores: {out['same_scores']}")


if __name__ == "__main__":
    main()
