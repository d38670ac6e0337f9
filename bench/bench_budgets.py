#!/usr/bin/env python3
"""Budgets on the agent's cost: does a real increase block and does noise not?

    python bench/bench_budgets.py [--cases 300] [--noise 0.10] [--trials 200] [--seed 27] [--cli] [--json]

A simulated agent: each case has its own typical token count (log-uniform, 300 to 30,000 per invocation) and seconds
(0.5 to 10 s). Main's run and the PR's run each draw every case's value with ``--noise`` relative noise (Gaussian);
the PR multiplies the typical value by a scenario's factor. Each trial builds the two runs' efficiency metrics as
evalbot's scoring reports them (``token_usage_v1``, ``invocation_duration_v1``), keeps main's with
``efficiency_of`` (what the baseline stores) and compares with ``efficiency_deltas`` (what ``compare`` does) under
the budgets ``{"tokens": "+20%", "latency_p95": "+30%"}``, alpha 0.05. Printed per scenario: how often each budget
blocked over ``--trials`` trials, and the median relative change. With ``--cli``, one trial per scenario also goes
through the real command line (``evalbot baseline`` then ``evalbot compare``) and its exit code is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalbot.compare.efficiency import efficiency_deltas, efficiency_of, parse_budgets  # noqa: E402
from evalbot.results import CaseResult, CriterionInfo, EvalSetReport, MetricResult  # noqa: E402

BUDGETS = {"tokens": "+20%", "latency_p95": "+30%"}
SCENARIOS: list[tuple[str, float, float]] = [
    # (name, token factor, latency factor)
    ("unchanged", 1.00, 1.00),
    ("tokens −5%", 0.95, 1.00),
    ("tokens +5%", 1.05, 1.00),
    ("tokens +20% (at the budget)", 1.20, 1.00),
    ("tokens +30%", 1.30, 1.00),
    ("tokens +43%", 1.43, 1.00),
    ("latency +15%", 1.00, 1.15),
    ("latency +50%", 1.00, 1.50),
]


def typical(cases: int, rng: random.Random) -> list[tuple[float, float]]:
    """Each case's typical tokens and seconds per invocation."""
    return [(300 * 100 ** rng.random(), 0.5 * 20 ** rng.random()) for _ in range(cases)]


def draw(base: list[tuple[float, float]], tokens: float, latency: float, noise: float,
         rng: random.Random) -> list[tuple[float, float]]:
    return [(max(1.0, t * tokens * rng.gauss(1, noise)), max(0.01, s * latency * rng.gauss(1, noise)))
            for t, s in base]


def eval_set(values: list[tuple[float, float]]) -> EvalSetReport:
    """The run as scoring reports it: the two informational efficiency metrics per case."""
    def case(i: int, tokens: float, seconds: float) -> CaseResult:
        return CaseResult(eval_id=f"c{i}", status="passed", metrics={
            "token_usage_v1": MetricResult(status="informational", details={
                "value": round(tokens), "token_usage_details": {"total_tokens": round(tokens)}}),
            "invocation_duration_v1": MetricResult(status="informational", details={"value": round(seconds, 3)}),
        })
    return EvalSetReport(eval_set_id="shop", path="shop.evalset.json", status="passed",
                         criteria=[CriterionInfo(name="token_usage_v1"), CriterionInfo(name="invocation_duration_v1")],
                         cases=[case(i, t, s) for i, (t, s) in enumerate(values)])


def trial(cases: int, noise: float, tokens: float, latency: float, rng: random.Random) -> dict[str, Any]:
    base = typical(cases, rng)
    main, pr = eval_set(draw(base, 1, 1, noise, rng)), eval_set(draw(base, tokens, latency, noise, rng))
    keys = [f"c{i}" for i in range(cases)]
    stored = efficiency_of(main, keys)
    rows = efficiency_deltas("shop", pr, stored, [(k, i) for i, k in enumerate(keys)], parse_budgets(BUDGETS),
                             alpha=0.05, old_baseline=False)
    budgeted = {f"{r.quantity}{'_p95' if r.stat == 'p95' else ''}": r for r in rows if r.budget is not None}
    return {name: (row.status == "over_budget", row.relative) for name, row in budgeted.items()}


def cli_trial(cases: int, noise: float, tokens: float, latency: float, rng: random.Random) -> int:
    """One trial through ``evalbot baseline`` and ``evalbot compare``; the exit code."""
    base = typical(cases, rng)

    def run(values: list[tuple[float, float]]) -> dict[str, Any]:
        return {f"c{i}": [{
            "user_content": {"role": "user", "parts": [{"text": "q"}]},
            "final_response": {"role": "model", "parts": [{"text": "ok"}]},
            "intermediate_data": {"invocation_events": [{"author": "agent", "content": {"role": "model", "parts": [
                {"text": "ok"}]}, "usage_metadata": {"prompt_token_count": round(t * 0.8),
                                                     "candidates_token_count": round(t * 0.2)}}]},
            "duration": round(s, 3)}] for i, (t, s) in enumerate(values)}

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "evals").mkdir()
        (root / "evals/shop.evalset.json").write_text(json.dumps({"eval_set_id": "shop", "eval_cases": [
            {"eval_id": f"c{i}", "conversation": [{"user_content": {"role": "user", "parts": [{"text": "q"}]},
                                                   "final_response": {"role": "model", "parts": [{"text": "ok"}]}}]}
            for i in range(cases)]}))
        (root / "evals/test_config.json").write_text(json.dumps(
            {"criteria": {"response_match_score": 0.5}, "evalbot": {"budgets": BUDGETS}}))
        (root / "main.json").write_text(json.dumps(run(draw(base, 1, 1, noise, rng))))
        (root / "pr.json").write_text(json.dumps(run(draw(base, tokens, latency, noise, rng))))
        cmd = [sys.executable, "-m", "evalbot.cli"]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        subprocess.run([*cmd, "baseline", "evals", "--actuals", "main.json", "--output", "base.json"], cwd=root,
                       env=env, check=True, capture_output=True)
        done = subprocess.run([*cmd, "compare", "evals", "--actuals", "pr.json", "--baseline", "base.json"], cwd=root,
                              env=env, capture_output=True)
        return done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--noise", type=float, default=0.10)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--cli", action="store_true", help="also one trial per scenario through the command line")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    results = []
    start = time.perf_counter()
    for name, tokens, latency in SCENARIOS:
        outcomes = [trial(args.cases, args.noise, tokens, latency, rng) for _ in range(args.trials)]
        row: dict[str, Any] = {"scenario": name}
        for budget in BUDGETS:
            row[f"{budget} blocked"] = sum(o[budget][0] for o in outcomes) / args.trials
            row[f"{budget} change"] = statistics.median(o[budget][1] or 0.0 for o in outcomes)
        if args.cli:
            row["cli exit"] = cli_trial(args.cases, args.noise, tokens, latency, rng)
        results.append(row)
    took = time.perf_counter() - start
    if args.json:
        print(json.dumps({"results": results, "seconds": took, "load": os.getloadavg()}, indent=2))
        return 0
    print(f"{args.cases} cases, {args.noise:.0%} per-case noise on each run, {args.trials} trials per scenario, "
          f"budgets {BUDGETS}, alpha 0.05")
    header = "| scenario | tokens change (median) | tokens +20% blocked | latency p95 change (median) | " \
             "latency_p95 +30% blocked |" + (" CLI exit |" if args.cli else "")
    print(header)
    print("|:--|--:|--:|--:|--:|" + ("--:|" if args.cli else ""))
    for r in results:
        cells = [r["scenario"], f"{r['tokens change']:+.1%}", f"{r['tokens blocked']:.1%}",
                 f"{r['latency_p95 change']:+.1%}", f"{r['latency_p95 blocked']:.1%}"]
        if args.cli:
            cells.append(str(r["cli exit"]))
        print("| " + " | ".join(cells) + " |")
    load = os.getloadavg()
    print(f"\n{took:.1f} s in all ({took / (len(SCENARIOS) * args.trials) * 1000:.1f} ms per trial, both runs built "
          f"and compared), load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
