#!/usr/bin/env python3
"""Per-case cost of Vertex's text metrics (``bleu``, ``rouge_l_sum``, ``rouge_1``, ``rouge_l``, ``exact_match``) next
to ADK's ``response_match_score``, on the same cases.

    python bench/bench_text_metrics.py [--cases 200] [--words 40 400] [--repeat 5] [--json]

The cases are bench_engine.py's synthetic ones (3 invocations each; the actual responses reword about 20% of the
expected words), with responses of each ``--words`` length. Each criterion is built alone and times
``criterion.evaluate`` over fresh ``CaseInput``s (so each pays for reading the final texts, as in a run); the time
is the best of ``--repeat`` runs after a warm-up (imports, rouge-score's and sacrebleu's set-up, the stem cache).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench_engine

from evalbot.criteria import CRITERIA
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.results import MetricResult

NAMES = ["response_match_score", "bleu", "rouge_l_sum", "rouge_1", "rouge_l", "exact_match"]


def cases(n_cases: int, words: int) -> list[tuple[EvalCase, list[Invocation]]]:
    """bench_engine's synthetic cases with ``words``-word responses, parsed."""
    bench_engine.WORDS = words
    eval_set, actuals = bench_engine.synthetic(n_cases, events=False)
    return [(EvalCase.model_validate(c), [Invocation.model_validate(i) for i in actuals[c["eval_id"]]])
            for c in eval_set["eval_cases"]]


def time_criterion(name: str, data: list[tuple[EvalCase, list[Invocation]]], repeat: int) -> tuple[float, float]:
    """(best seconds per case, mean score) of criterion ``name`` over ``data``."""
    criterion = CRITERIA[name](CriterionSpec(name, None, {}), BuildContext())

    def once() -> list[MetricResult]:
        out = []
        for case, actual in data:
            result = criterion.evaluate(CaseInput("bench", case, actual))
            assert isinstance(result, MetricResult)
            out.append(result)
        return out

    results = once()  # warm-up
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        once()
        best = min(best, time.perf_counter() - start)
    scores = [r.score for r in results if r.score is not None]
    return best / len(data), sum(scores) / len(scores)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--words", type=int, nargs="+", default=[40, 400])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    table: dict[int, dict[str, dict[str, Any]]] = {}
    for words in args.words:
        data = cases(args.cases, words)
        table[words] = {}
        for name in NAMES:
            seconds, mean = time_criterion(name, data, args.repeat)
            table[words][name] = {"per_case_ms": 1000 * seconds, "mean": mean}
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"{args.cases} cases x 3 invocations, best of {args.repeat}; per case (ms), and x response_match_score")
    for words, rows in table.items():
        base = rows["response_match_score"]["per_case_ms"]
        print(f"\n{words}-word responses")
        for name, row in rows.items():
            ratio = row["per_case_ms"] / base
            print(f"  {name:22} {row['per_case_ms']:9.3f} ms  {ratio:6.1f}x   mean {row['mean']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
