"""Benchmark: reruns of flipped cases (``rerun_flipped``) on a simulated agent with per-case pass probabilities.

    python bench/bench_reruns.py [--cases 4000] [--trials 20] [--history 10] [--reruns 2] [--seed 27] [--json]

Each case of the simulated agent passes a run independently with its own probability, drawn once per trial from a
fixed mix (70% of cases always pass, 15% pass with 0.97, 10% with 0.9, 5% with 0.7). Main's baseline holds each
case's last ``--history`` outcomes (one run per refresh, as the Action's push mode records them) and its last status.
A pull request runs every case once, then:

- *unchanged*: the same agent; every case that regresses is a false block;
- *drop*: 5% of the cases (taken among those that always passed) now pass 1 run in 3 (3/3 → 1/3); the other cases
  are unchanged. A dropped case counts as caught when it blocks; the pull request is caught when anything blocks.

Both are decided by evalbot's own comparison (``compare.delta.compare``: categories, flaky-case memory, the gate),
without reruns (``rerun_flipped: 0``) and with them: the cases that flipped are chosen and bounded as
``pipeline.rerun_flipped`` chooses them (``compare.reruns.flipped``, ``rerun_budget``, ``rerun_cases``), rerun by
the simulated agent, and compared again (``compare.reruns.after_reruns``). Printed per scenario: blocking cases per
1,000 cases, dropped cases caught, pull requests blocked, and agent runs against a single run of every case.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalbot.compare.baseline import (  # noqa: E402
    Baseline,
    BaselineCase,
    BaselineCriterion,
    BaselineEvalSet,
    BaselineMetric,
)
from evalbot.compare.delta import compare  # noqa: E402
from evalbot.compare.gate import GatePolicy  # noqa: E402
from evalbot.compare.reruns import flipped, rerun_budget, rerun_cases  # noqa: E402
from evalbot.results import CaseResult, CriterionInfo, EvalSetReport, MetricResult, Report, totals  # noqa: E402

MIX = ((0.70, 1.0), (0.15, 0.97), (0.10, 0.9), (0.05, 0.7))
"""(share of cases, pass probability per run) of the unchanged agent."""
DROP_SHARE = 0.05
DROPPED_P = 1 / 3


@dataclass
class Outcome:
    blocking: int
    inconclusive: int
    flaky: int
    caught: int
    dropped: int
    blocked: bool
    agent_runs: int


def _probabilities(rng: random.Random, cases: int) -> list[float]:
    out: list[float] = []
    for share, p in MIX:
        out += [p] * round(share * cases)
    out = (out + [1.0] * cases)[:cases]
    rng.shuffle(out)
    return out


def _outcome(p: float, rng: random.Random) -> str:
    return "P" if rng.random() < p else "F"


def _baseline(probs: Sequence[float], history: int, rng: random.Random) -> Baseline:
    cases = {}
    for i, p in enumerate(probs):
        runs = "".join(_outcome(p, rng) for _ in range(history))
        status = "passed" if runs[-1] == "P" else "failed"
        cases[f"c{i}"] = BaselineCase(fingerprint=f"f{i}", status=status, history=runs,
                                      metrics={"m": BaselineMetric(score=1.0 if runs[-1] == "P" else 0.0,
                                                                   status=status)})
    es = BaselineEvalSet(path="s.evalset.json", cases=cases,
                         criteria={"m": BaselineCriterion(fingerprint="m", threshold=1.0)})
    return Baseline(eval_sets={"s": es})


def _case(i: int, runs: str, reruns: int = 0) -> CaseResult:
    first = runs[0]
    status = "passed" if first == "P" else "failed"
    metric = MetricResult(score=1.0 if first == "P" else 0.0, status=status, threshold=1.0)
    return CaseResult(eval_id=f"c{i}", status=status, metrics={"m": metric}, fingerprint=f"f{i}",
                      runs=runs if reruns else None, reruns=reruns)


def _report(cases: list[CaseResult]) -> Report:
    es = EvalSetReport(eval_set_id="s", path="s.evalset.json", status="passed", cases=cases,
                       criteria=[CriterionInfo(name="m", threshold=1.0, fingerprint="m")])
    return Report(eval_sets=[es], totals=totals([es]))


def _decide(report: Report, baseline: Baseline, policy: GatePolicy, dropped: set[str]) -> Outcome:
    comparison = compare(current=report, baseline=baseline, policy=policy)
    cases = comparison.eval_sets[0].cases
    blocking = {c.eval_id for c in cases if c.category == "regressed"}
    return Outcome(blocking=len(blocking), inconclusive=sum(c.category == "inconclusive" for c in cases),
                   flaky=sum(c.category == "flaky" for c in cases), caught=len(blocking & dropped),
                   dropped=len(dropped), blocked=comparison.gate.verdict == "blocked", agent_runs=len(cases))


def trial(cases: int, history: int, per_case: int, seed: int, drop: bool) -> tuple[Outcome, Outcome]:
    """One pull request: (without reruns, with reruns)."""
    rng = random.Random(seed)
    probs = _probabilities(rng, cases)
    baseline = _baseline(probs, history, rng)
    now = list(probs)
    dropped: set[str] = set()
    if drop:
        steady = [i for i, p in enumerate(probs) if p == 1.0]
        for i in rng.sample(steady, round(DROP_SHARE * cases)):
            now[i] = DROPPED_P
            dropped.add(f"c{i}")
    first = [_outcome(p, rng) for p in now]
    report = _report([_case(i, o) for i, o in enumerate(first)])
    without = _decide(report, baseline, GatePolicy(rerun_flipped=0), dropped)
    policy = GatePolicy(rerun_flipped=per_case)
    chosen = rerun_cases(flipped(compare(current=report, baseline=baseline, policy=policy)), per_case,
                         rerun_budget(cases))
    again = {int(eval_id[1:]) for _, eval_id in chosen}
    rerun = _report([_case(i, o + "".join(_outcome(now[i], rng) for _ in range(per_case)), per_case)
                     if i in again else _case(i, o) for i, o in enumerate(first)])
    with_reruns = _decide(rerun, baseline, policy, dropped)
    with_reruns.agent_runs = cases + per_case * len(chosen)
    return without, with_reruns


def summarise(outcomes: Sequence[Outcome], cases: int) -> dict[str, Any]:
    n = len(outcomes)
    dropped = sum(o.dropped for o in outcomes)
    return {
        "blocking_per_1000": round(1000 * sum(o.blocking for o in outcomes) / (n * cases), 2),
        "inconclusive_per_1000": round(1000 * sum(o.inconclusive for o in outcomes) / (n * cases), 2),
        "flaky_per_1000": round(1000 * sum(o.flaky for o in outcomes) / (n * cases), 2),
        "dropped_caught": round(sum(o.caught for o in outcomes) / dropped, 3) if dropped else None,
        "prs_blocked": round(sum(o.blocked for o in outcomes) / n, 3),
        "agent_runs_vs_single": round(sum(o.agent_runs for o in outcomes) / (n * cases), 3),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=4000)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--history", type=int, default=10)
    parser.add_argument("--reruns", type=int, default=2)
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for scenario, drop in (("unchanged", False), ("drop", True)):
        pairs = [trial(args.cases, args.history, args.reruns, args.seed * 1000 + t + (500 if drop else 0), drop)
                 for t in range(args.trials)]
        results[scenario] = {"without_reruns": summarise([p[0] for p in pairs], args.cases),
                             "with_reruns": summarise([p[1] for p in pairs], args.cases)}
    results["meta"] = {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                       "load_average": [round(x, 2) for x in os.getloadavg()], "cases": args.cases,
                       "trials": args.trials, "history": args.history, "reruns": args.reruns, "seed": args.seed,
                       "seconds": round(time.perf_counter() - started, 1)}
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    meta = results["meta"]
    print(f"{meta['cases']:,} cases × {meta['trials']} pull requests per scenario, history {meta['history']}, "
          f"rerun_flipped {meta['reruns']}; {meta['date']}, load average {meta['load_average']}, "
          f"{meta['seconds']} s")
    print("| scenario | reruns | blocking per 1,000 cases | inconclusive per 1,000 | flaky per 1,000 | dropped cases "
          "caught | PRs blocked | agent runs vs one run |")
    print("|---|---|---|---|---|---|---|---|")
    for scenario in ("unchanged", "drop"):
        for mode in ("without_reruns", "with_reruns"):
            r = results[scenario][mode]
            caught = "—" if r["dropped_caught"] is None else f"{r['dropped_caught']:.1%}"
            print(f"| {scenario} | {mode.replace('_', ' ')} | {r['blocking_per_1000']} | {r['inconclusive_per_1000']} "
                  f"| {r['flaky_per_1000']} | {caught} | {r['prs_blocked']:.0%} | {r['agent_runs_vs_single']}× |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
