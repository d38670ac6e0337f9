"""Benchmark: judge samples, requests and output tokens per verdict, full vs sequential sampling; and how many
inconclusive verdicts settling split votes (``resample_split``) removes.

    python bench/bench_sampling.py [--invocations 4000] [--samples 5] [--agree 0.9] [--noisy-agree 0.8]
                                   [--history 10] [--seed 7] [--json]

Part 1 runs ``final_response_match_v2``'s vote (criteria.judged.judge_verdict) through evalbot's real judge stack
(judges.factory.build_stack: metering, sequential layer, candidate_count sampling, retries, limiter) on a simulated
judge, once with ``sampling: full`` and once with ``sampling: sequential``. The simulated judge answers sample ``i``
of an invocation from a seeded generator keyed by (invocation, i), so both modes see the same answers at the same
indices; every answer costs 400 input tokens per request and 60 output tokens per sample. Two judge models:

- ``independent``: each sample agrees with the invocation's true verdict with probability ``--agree``;
- ``unanimous``: an invocation's samples are all the same with probability ``--agree``, else each is a coin flip.

Part 2 scores a main run (the baseline) and a PR run of the same agent (so every flip is judge noise) with
``final_response_match_v2`` through ``pipeline.evaluate`` and compares them with ``compare.delta.compare``, before
and after ``pipeline.settle_split_votes`` (``resample_split`` 10). The noisy judge: each invocation's answer is
truly valid with probability 0.7, and each sample agrees with that truth with probability ``--noisy-agree``
(independently per run and sample). Printed: inconclusive verdicts per 1,000 invocations before and after settling,
the flips decided as regressions or fixes (the agent did not change: each is the noise of one vote, mostly the
baseline's, which cannot be resampled) and the extra samples asked. It does so twice: with a baseline built from one
main run, and with one built from ``--history`` main runs in turn (each carrying the previous one's history forward,
as the Action's push mode does, each settling its own split flips against the previous baseline first), where a
regression on a case that changed outcome on main is *flaky*; for both it prints the cases that would block the
merge (regressed) and the flaky ones, before and after settling, and the samples the main runs asked.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalbot.criteria.final_response_match_v2 import parse_verdict  # noqa: E402
from evalbot.criteria.judged import JudgeCall, JudgeModelOptions, judge_verdict  # noqa: E402
from evalbot.formats.adk import Invocation  # noqa: E402
from evalbot.judges.base import JudgeReply, JudgeRequest, Sampling, Usage  # noqa: E402
from evalbot.judges.factory import build_stack  # noqa: E402

VALID = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'
INVALID = '{"reasoning": "a fact differs", "is_the_agent_response_valid": "invalid"}'
INPUT_TOKENS, OUTPUT_TOKENS = 400, 60

Answer = Callable[[int, int], bool]
"""(invocation, sample index) -> the sample says valid."""


def independent(seed: int, agree: float) -> Answer:
    """Each sample agrees with the invocation's true verdict with probability ``agree``."""
    def answer(invocation: int, index: int) -> bool:
        truth = random.Random(f"{seed}/{invocation}/truth").random() < 0.7
        return truth if random.Random(f"{seed}/{invocation}/{index}").random() < agree else not truth
    return answer


def unanimous(seed: int, agree: float) -> Answer:
    """All samples of an invocation agree with probability ``agree``; otherwise each is a fair coin."""
    def answer(invocation: int, index: int) -> bool:
        rng = random.Random(f"{seed}/{invocation}/kind")
        truth, consistent = rng.random() < 0.7, rng.random() < agree
        return truth if consistent else random.Random(f"{seed}/{invocation}/{index}").random() < 0.5
    return answer


class SimulatedJudge:
    """A judge backend answering sample ``first_sample + i`` of the invocation named in the prompt."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        invocation = int(request.prompt.rsplit("#", 1)[1])
        first = request.first_sample
        texts = tuple(VALID if self.answer(invocation, first + i) else INVALID for i in range(request.num_samples))
        return JudgeReply(texts, Usage(INPUT_TOKENS, OUTPUT_TOKENS * len(texts), 1), 0)


@dataclass
class Run:
    verdicts: list[float | None]
    samples: int
    requests: int
    output_tokens: int
    input_tokens: int


def run(mode: Sampling, answer: Answer, invocations: int, samples: int) -> Run:
    """Judge every invocation through the real stack in ``mode``."""
    stack = build_stack(SimulatedJudge(answer), sampling=mode)
    call = JudgeCall(stack, JudgeModelOptions(num_samples=samples), "final_response_match_v2")
    inv = Invocation.model_validate({"invocation_id": "i", "user_content": {"role": "user", "parts": [{"text": "q"}]}})

    async def all_verdicts() -> list[float | None]:
        scores = await asyncio.gather(*(judge_verdict(call, f"prompt #{i}", parse_verdict, 0.5, inv, "unreadable")
                                        for i in range(invocations)))
        return [s.score for s in scores]

    verdicts = asyncio.run(all_verdicts())
    total = stack.usage_summary().total
    asked = total.output_tokens // OUTPUT_TOKENS
    return Run(verdicts, asked, total.requests, total.output_tokens, total.input_tokens)


def sampling_bench(invocations: int, samples: int, agree: float, seed: int) -> dict[str, Any]:
    """Full vs sequential on both judge models."""
    out: dict[str, Any] = {}
    for name, model in (("independent", independent), ("unanimous", unanimous)):
        answer = model(seed, agree)
        full = run("full", answer, invocations, samples)
        seq = run("sequential", answer, invocations, samples)
        out[name] = {
            "same_verdicts": full.verdicts == seq.verdicts,
            "full": {"samples": full.samples / invocations, "requests": full.requests / invocations,
                     "output_tokens": full.output_tokens / invocations, "input_tokens": full.input_tokens / invocations},
            "sequential": {"samples": seq.samples / invocations, "requests": seq.requests / invocations,
                           "output_tokens": seq.output_tokens / invocations,
                           "input_tokens": seq.input_tokens / invocations},
            "output_ratio": seq.output_tokens / full.output_tokens,
        }
    return out


class NoisyJudge:
    """Answers sample ``first_sample + i`` of the (run, invocation) named in the prompt's agent response."""

    def __init__(self, seed: int, agree: float) -> None:
        self.seed, self.agree = seed, agree

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        tag = request.prompt.split("@@", 2)[1]  # "<run>-<invocation>"
        invocation = tag.split("-", 1)[1]
        truth = random.Random(f"{self.seed}/{invocation}/truth").random() < 0.7
        texts = tuple(
            VALID if (truth if random.Random(f"{self.seed}/{tag}/{request.first_sample + i}").random() < self.agree
                      else not truth) else INVALID
            for i in range(request.num_samples))
        return JudgeReply(texts, Usage(INPUT_TOKENS, OUTPUT_TOKENS * len(texts), 1), 0)


def settle_bench(invocations: int, samples: int, seed: int, agree: float, history: int = 1) -> dict[str, Any]:
    """Inconclusive verdicts before and after settling, on a run that changed nothing but the judge's noise; the
    baseline is built from ``history`` main runs."""
    import tempfile

    from evalbot.compare.baseline import build_baseline
    from evalbot.compare.delta import compare
    from evalbot.compare.gate import GatePolicy
    from evalbot.criteria.base import BallotBox, BuildContext
    from evalbot.pipeline import ballots_for, evaluate, settle_split_votes

    def content(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "parts": [{"text": text}]}

    def changes(report: Any, baseline: Any, policy: GatePolicy) -> dict[str, int]:
        """Per-criterion changes, and the cases' categories under ``case:`` keys."""
        comparison = compare(current=report, baseline=baseline, policy=policy)
        out: dict[str, int] = {}
        for es in comparison.eval_sets:
            for case in es.cases:
                out[f"case:{case.category}"] = out.get(f"case:{case.category}", 0) + 1
                for d in case.metrics:
                    out[d.change] = out.get(d.change, 0) + 1
        return out

    policy = GatePolicy()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cases = [{"eval_id": f"c{i}", "conversation": [{"invocation_id": "t", "user_content": content("user", f"q{i}"),
                                                        "final_response": content("model", f"reference {i}")}]}
                 for i in range(invocations)]
        (root / "set.evalset.json").write_text(json.dumps({"eval_set_id": "bench", "eval_cases": cases}))
        (root / "test_config.json").write_text(json.dumps({"criteria": {"final_response_match_v2": {
            "threshold": 0.5, "judge_model_options": {"num_samples": samples}}}}))
        runs = [f"main{h}" for h in range(history)] + ["pr"]
        for run in runs:
            actuals = {f"c{i}": [{"invocation_id": "t", "user_content": content("user", f"q{i}"),
                                  "final_response": content("model", f"answer @@{run}-{i}@@")}]
                       for i in range(invocations)}
            (root / f"{run}.json").write_text(json.dumps(actuals))
        judge = NoisyJudge(seed, agree)
        baseline = None
        main_samples = 0
        for run in runs[:-1]:  # each main run refreshes the baseline, carrying the history forward
            main_stack = build_stack(judge)
            main_ctx = BuildContext(judge=main_stack, ballots=ballots_for(baseline, policy))
            refresh = evaluate([str(root / "set.evalset.json")], actuals=[str(root / f"{run}.json")], ctx=main_ctx)
            settle_split_votes(refresh, baseline, main_ctx, policy)  # as evalbot baseline and the Action's push do
            main_samples += main_stack.usage_summary().total.output_tokens // OUTPUT_TOKENS
            baseline = build_baseline(refresh, commit=None, created_at=None, previous=baseline)
        assert baseline is not None
        stack = build_stack(judge)
        ctx = BuildContext(judge=stack, ballots=BallotBox())
        report = evaluate([str(root / "set.evalset.json")], actuals=[str(root / "pr.json")], ctx=ctx)
        before = changes(report, baseline, policy)
        asked_before = stack.usage_summary().total.output_tokens // OUTPUT_TOKENS
        resampled = settle_split_votes(report, baseline, ctx, policy)
        after = changes(report, baseline, policy)
        asked_after = stack.usage_summary().total.output_tokens // OUTPUT_TOKENS
    per = 1000 / invocations
    lines = [
        f"settling split votes ({invocations} invocations, judge agreement {agree}, the agent unchanged, baseline "
        f"from {history} main run(s)):",
        f"  inconclusive per 1,000 verdicts: {before.get('inconclusive', 0) * per:.1f} before -> "
        f"{after.get('inconclusive', 0) * per:.1f} after "
        f"({after.get('inconclusive', 0) / max(1, before.get('inconclusive', 0)):.2f}x)",
        f"  decided flips of an unchanged agent's verdicts: regressed {before.get('regressed', 0)} -> "
        f"{after.get('regressed', 0)}, fixed {before.get('fixed', 0)} -> {after.get('fixed', 0)} (one of the "
        "two votes was wrong)",
        f"  cases that block the merge (regressed) {before.get('case:regressed', 0)} -> "
        f"{after.get('case:regressed', 0)}; flaky, not blocking {before.get('case:flaky', 0)} -> "
        f"{after.get('case:flaky', 0)}",
        f"  main runs: {main_samples / invocations / history:.2f} samples per verdict (split flips against the "
        "previous baseline settled on main too)",
        f"  {resampled} invocations resampled, {asked_after - asked_before} extra samples "
        f"({(asked_after - asked_before) / invocations:.2f} per verdict on top of {asked_before / invocations:.2f})",
    ]
    return {"history": history, "main_samples": main_samples, "before": before, "after": after,
            "resampled": resampled, "extra_samples": asked_after - asked_before, "samples_before": asked_before,
            "lines": lines}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--invocations", type=int, default=4000)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--agree", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--noisy-agree", type=float, default=0.8, help="the noisy judge's agreement (part 2)")
    parser.add_argument("--history", type=int, default=10,
                        help="main runs behind the second settling measurement's baseline (part 2)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"sampling": sampling_bench(args.invocations, args.samples, args.agree, args.seed)}
    result["settling"] = [settle_bench(args.invocations, args.samples, args.seed, args.noisy_agree, history)
                          for history in sorted({1, max(1, args.history)})]
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{args.invocations} invocations, num_samples {args.samples}, judge agreement {args.agree}")
    for name, row in result["sampling"].items():
        f, s = row["full"], row["sequential"]
        print(f"  {name:12} per verdict: samples {f['samples']:.2f} -> {s['samples']:.2f}, requests "
              f"{f['requests']:.2f} -> {s['requests']:.2f}, output tokens {f['output_tokens']:.0f} -> "
              f"{s['output_tokens']:.0f} ({row['output_ratio']:.3f}x), input tokens {f['input_tokens']:.0f} -> "
              f"{s['input_tokens']:.0f}; same verdicts: {row['same_verdicts']}")
    for settled in result["settling"]:
        for line in settled["lines"]:
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
