#!/usr/bin/env python3
"""Benchmark evalbot's engine against google-adk's LocalEvalService on the same synthetic cases.

    python bench/bench_engine.py [--cases N] [--adk-python PATH | --no-adk] [--scale-invocations M]

Each synthetic case has 3 invocations x 3 tool calls x 40-word responses; actual runs are in ADK's events form
(as real inference records them) with some reordered or extra calls and reworded responses.  Criteria:
``tool_trajectory_avg_score`` (1.0) and ``response_match_score`` (0.8), plus each tool's informational metrics.

Printed: per-case CPU times of evalbot, of the floor (json.loads of the inputs + the metric arithmetic) and of ADK,
and their ratios, then a large run (default 100,000 invocations) through
``evalbot.pipeline.evaluate`` from JSON files on disk, in a fresh process, with wall time and peak RSS.  ADK runs in
this interpreter if ``google.adk`` imports, else under ``--adk-python`` (default: /work/adkvenv/bin/python or
$ADK_PYTHON when present) as a subprocess running this same file with ``--adk-worker``.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

INVOCATIONS, TOOLS, WORDS = 3, 3, 40
CRITERIA = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
DEFAULT_ADK_PYTHON = "/work/adkvenv/bin/python"
_VOCAB = (
    "account address amount approve balance booking cancel card check city confirm customer date delivery device "
    "email flight hotel invoice item kitchen light list lookup message night number order paris payment pending "
    "price refund report request room schedule search send status summary ticket total update user weather"
).split()


# ----------------------------------------------------------------------------------------------------------------
# Synthetic data (stdlib only: the ADK worker imports this file without evalbot)
# ----------------------------------------------------------------------------------------------------------------
def _call(rng: random.Random) -> dict[str, Any]:
    return {
        "name": f"tool_{rng.randrange(10)}",
        "args": {
            "id": str(rng.randrange(10_000)),
            "count": rng.randrange(20),
            "filters": {"active": rng.random() < 0.5, "tags": rng.sample(_VOCAB, 3)},
        },
    }


def _as_events(invocation: dict[str, Any]) -> dict[str, Any]:
    """tool_uses -> invocation_events: a model event per call, then the tool's response event."""
    out = {k: v for k, v in invocation.items() if k != "intermediate_data"}
    events = []
    for i, call in enumerate(invocation["intermediate_data"]["tool_uses"]):
        fc = {"id": f"call-{i}", **call}
        events.append({"author": "agent", "content": {"role": "model", "parts": [{"function_call": fc}]}})
        response = {"id": fc["id"], "name": fc["name"], "response": {"ok": True}}
        events.append({"author": "agent", "content": {"role": "user", "parts": [{"function_response": response}]}})
    out["intermediate_data"] = {"invocation_events": events}
    return out


def synthetic(
    n_cases: int, seed: int = 7, events: bool = True, actual_seed: int | None = None, invocations: int = INVOCATIONS
) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """An EvalSet JSON of ``n_cases`` cases and the matching ``{eval_id: [actual invocations]}``.

    Actual invocations are in the events form (as ADK inference records them) unless ``events`` is False. With
    ``actual_seed``, the changes made to the actual runs come from their own random stream: the same eval set (same
    ``seed``) with two actual seeds gives two runs of one suite, e.g. a baseline's and a pull request's.
    ``invocations`` per case: 3 by default; with 4, each case's actual entry holds more than 200 brackets.
    """
    rng = random.Random(seed)
    act_rng = rng if actual_seed is None else random.Random(actual_seed)
    cases, actuals = [], {}
    for c in range(n_cases):
        expected, actual = [], []
        for t in range(invocations):
            text = " ".join(rng.choice(_VOCAB) for _ in range(WORDS))
            inv: dict[str, Any] = {
                "invocation_id": f"c{c}-t{t}",
                "user_content": {"role": "user", "parts": [{"text": f"request {c} turn {t}"}]},
                "final_response": {"role": "model", "parts": [{"text": text}]},
                "intermediate_data": {"tool_uses": [_call(rng) for _ in range(TOOLS)]},
            }
            expected.append(inv)
            act = copy.deepcopy(inv)
            roll = act_rng.random()
            if roll < 0.2:
                act["intermediate_data"]["tool_uses"].reverse()
            elif roll < 0.35:
                act["intermediate_data"]["tool_uses"].append({"name": "extra_tool", "args": {}})
            words = [w if act_rng.random() < 0.8 else act_rng.choice(_VOCAB) for w in text.split()]
            act["final_response"]["parts"][0]["text"] = " ".join(words)
            actual.append(_as_events(act) if events else act)
        cases.append({"eval_id": f"case_{c}", "conversation": expected})
        actuals[f"case_{c}"] = actual
    return {"eval_set_id": "bench", "eval_cases": cases}, actuals


def _best_of(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The least CPU time of ``repeat`` calls (``time.process_time``: all of this process's threads; steadier than
    wall time on a shared machine, and equal to it for this single-threaded work on an idle one)."""
    best, result = float("inf"), None
    for _ in range(repeat):
        t0 = time.process_time()
        result = fn()
        best = min(best, time.process_time() - t0)
    return best, result


def _peak_rss_mb() -> float:
    """This process's peak RSS. Linux: VmHWM, which starts afresh at exec.

    ``ru_maxrss`` does not: a child started by fork + exec inherits the forking parent's peak, so a worker spawned by
    a bench holding the synthetic data in memory would report the parent's size.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB, macOS bytes (not scaled)


# ----------------------------------------------------------------------------------------------------------------
# evalbot
# ----------------------------------------------------------------------------------------------------------------
def bench_evalbot(n_cases: int, repeat: int, invocations: int = INVOCATIONS) -> dict[str, Any]:
    """Per-case times for evalbot: scoring loaded cases, and loading the JSON files + scoring."""
    from evalbot.formats.actuals import Actuals
    from evalbot.formats.config import parse_config
    from evalbot.formats.loaded import LoadedCase, LoadedEvalSet
    from evalbot.load import load_actuals, load_eval_set
    from evalbot.results import write_report_json
    from evalbot.scoring import score_run

    eval_set, actuals = synthetic(n_cases, invocations=invocations)
    config = parse_config({"criteria": CRITERIA}, None)
    with tempfile.TemporaryDirectory(prefix="evalbot-bench-") as tmp:
        set_path, actuals_path = Path(tmp) / "bench.evalset.json", Path(tmp) / "actuals.json"
        set_path.write_text(json.dumps(eval_set), encoding="utf-8")
        actuals_path.write_text(json.dumps(actuals), encoding="utf-8")

        def load_and_score() -> Any:
            return score_run([load_eval_set(set_path, config)], load_actuals(actuals_path))

        lazy = load_eval_set(set_path, config)
        assert not lazy.errors and all(c.case is not None for c in lazy.cases)
        # Scoring alone is timed on parsed models, as ADK's evaluate gets them: a file's cases are otherwise parsed
        # when they are scored (and the time of that is in load+score).
        cases = tuple(LoadedCase(c.eval_id, c.case, c.error, c.actual) for c in lazy.cases)
        loaded = LoadedEvalSet(lazy.path, lazy.eval_set_id, cases, lazy.config, lazy.errors)
        recorded = Actuals(str(actuals_path), dict(load_actuals(actuals_path).entries))
        score_run([loaded], recorded)  # warm-up: imports, the stemmer's per-word cache
        score_s, report = _best_of(lambda: score_run([loaded], recorded), repeat)
        total_s, _ = _best_of(load_and_score, repeat)
        write_s, _ = _best_of(lambda: write_report_json(report, io.StringIO()), repeat)
    metrics = report.eval_sets[0].metrics
    return {
        "score_per_case_ms": 1000 * score_s / n_cases,
        "load_and_score_per_case_ms": 1000 * total_s / n_cases,
        "write_report_per_case_ms": 1000 * write_s / n_cases,
        "means": {name: metrics[name].mean for name in CRITERIA},
        "passed": report.totals.passed,
    }


def bench_floor(n_cases: int, repeat: int) -> dict[str, Any]:
    """The floor in CPython: per case, ``json.loads`` of the case's and of its run's JSON text, trajectory EXACT
    (the (name, args) lists compared), ROUGE-1 F with memoised stems (evalbot's rouge1_f, whose tokens are ADK's)
    and a minimal result tuple; no validation, fingerprint, efficiency metrics, turn rows or report.

    ``arithmetic_per_case_ms``: the same without the ``json.loads`` (the cases decoded beforehand), the counterpart of
    evalbot's and ADK's scoring times, which are taken on parsed cases too."""
    from evalbot.criteria.response_match import rouge1_f

    eval_set, actuals = synthetic(n_cases)
    pairs = [(json.dumps(case), json.dumps(actuals[case["eval_id"]])) for case in eval_set["eval_cases"]]
    parsed = [(case, actuals[case["eval_id"]]) for case in eval_set["eval_cases"]]

    def score(decode: bool = True) -> list[tuple[str, bool, bool]]:
        out = []
        for (case_text, actual_text), (case, actual) in zip(pairs, parsed, strict=True):
            if decode:
                case, actual = json.loads(case_text), json.loads(actual_text)
            trajectory = rouge = 0.0
            for expected, act in zip(case["conversation"], actual, strict=True):
                want = [(c["name"], c["args"]) for c in expected["intermediate_data"]["tool_uses"]]
                got = [(call["name"], call["args"]) for event in act["intermediate_data"]["invocation_events"]
                       for part in event["content"]["parts"] if (call := part.get("function_call")) is not None]
                trajectory += want == got
                rouge += rouge1_f(act["final_response"]["parts"][0]["text"],
                                  expected["final_response"]["parts"][0]["text"])
            out.append((case["eval_id"], trajectory / len(actual) >= 1.0, rouge / len(actual) >= 0.8))
        return out

    score()  # warm-up: the stemmer's per-word cache, as evalbot's warm-up fills it
    seconds, _ = _best_of(score, repeat)
    arithmetic, _ = _best_of(lambda: score(decode=False), repeat)
    return {"per_case_ms": 1000 * seconds / n_cases, "arithmetic_per_case_ms": 1000 * arithmetic / n_cases}


def bench_loads(n_cases: int, rounds: int = 40) -> dict[int, dict[str, float]]:
    """CPU µs per actual entry (events form) of ``json.loads`` and of ``jsonio.loads`` (json.loads plus the depth,
    number and surrogate checks), with 3 and with 4 invocations per case: the 4th takes an entry past 200 brackets.
    The two are timed alternately and the least CPU time of ``rounds`` is kept (steadier than wall time on a shared
    machine)."""
    from evalbot.formats import jsonio

    out: dict[int, dict[str, float]] = {}
    for invocations in (INVOCATIONS, INVOCATIONS + 1):
        texts = [json.dumps(entry) for entry in synthetic(n_cases, invocations=invocations)[1].values()]
        decoders: dict[str, Callable[[str], Any]] = {"json": json.loads, "jsonio": lambda t: jsonio.loads(t, "x")}
        best = dict.fromkeys(decoders, float("inf"))
        for _ in range(rounds):
            for name, decode in decoders.items():
                t0 = time.process_time()
                for text in texts:
                    decode(text)
                best[name] = min(best[name], (time.process_time() - t0) / len(texts) * 1e6)
        brackets = sum(t.count("[") + t.count("{") for t in texts) / len(texts)
        out[invocations] = {"brackets": brackets, "json_us": best["json"], "jsonio_us": best["jsonio"]}
    return out


def scale_worker(directory: str) -> None:
    """Evaluate the eval set and actuals in ``directory`` like ``evalbot run --report``; print wall time and RSS."""
    from evalbot.pipeline import evaluate
    from evalbot.results import write_report_json

    base = Path(directory)
    t0 = time.perf_counter()
    report = evaluate([str(base / "bench.evalset.json")], actuals=[str(base / "actuals.json")])
    with (base / "report.json").open("w", encoding="utf-8") as out:  # as `evalbot run --report` writes it
        write_report_json(report, out)
    wall = time.perf_counter() - t0
    invocations = sum(len(c.metrics["tool_trajectory_avg_score"].per_invocation)
                      for es in report.eval_sets for c in es.cases)
    print(json.dumps({"wall_s": wall, "peak_rss_mb": _peak_rss_mb(), "invocations": invocations,
                      "cases": report.totals.cases, "errors": report.totals.error}))


def bench_scale(invocations: int, events: bool) -> dict[str, Any]:
    """Write a run of ``invocations`` invocations to disk and evaluate it in a fresh interpreter."""
    n_cases = -(-invocations // INVOCATIONS)
    tmp = tempfile.mkdtemp(prefix="evalbot-bench-")
    try:
        eval_set, actuals = synthetic(n_cases, seed=11, events=events)
        (Path(tmp) / "bench.evalset.json").write_text(json.dumps(eval_set), encoding="utf-8")
        (Path(tmp) / "actuals.json").write_text(json.dumps(actuals), encoding="utf-8")
        sizes = {p.name: p.stat().st_size for p in Path(tmp).iterdir()}
        del eval_set, actuals
        proc = subprocess.run([sys.executable, __file__, "--scale-worker", tmp], capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"scale run failed:\n{proc.stderr}")
        result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
        result["input_mb"] = sum(sizes.values()) / 1e6
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ----------------------------------------------------------------------------------------------------------------
# ADK (google-adk's own LocalEvalService; run under an interpreter that has google-adk)
# ----------------------------------------------------------------------------------------------------------------
def _adk_request(eval_set: Any, actuals: dict[str, Any], metrics: list[Any]) -> tuple[Any, Any]:
    """ADK's LocalEvalService and an EvaluateRequest over fresh copies of the actuals (not timed)."""
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.evaluation.base_eval_service import (
        EvaluateConfig,
        EvaluateRequest,
        InferenceResult,
        InferenceStatus,
    )
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService

    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app_name="bench", eval_set_id=eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(app_name="bench", eval_set_id=eval_set.eval_set_id, eval_case=case)
    service = LocalEvalService(root_agent=LlmAgent(name="unused_agent"), eval_sets_manager=manager)
    inferences = [
        InferenceResult(
            app_name="bench", eval_set_id=eval_set.eval_set_id, eval_case_id=case.eval_id,
            inferences=copy.deepcopy(actuals[case.eval_id]), session_id=None, status=InferenceStatus.SUCCESS,
        )
        for case in eval_set.eval_cases
    ]
    return service, EvaluateRequest(inference_results=inferences, evaluate_config=EvaluateConfig(eval_metrics=metrics))


def _adk_timed(eval_set: Any, actuals: dict[str, Any], metrics: list[Any], repeat: int) -> tuple[float, list[Any]]:
    """Best time of ``LocalEvalService.evaluate`` alone (its setup and the copies of the actuals are not timed)."""
    import asyncio

    async def evaluate(service: Any, request: Any) -> list[Any]:
        return [result async for result in service.evaluate(evaluate_request=request)]

    best, results = float("inf"), []
    for _ in range(repeat):
        service, request = _adk_request(eval_set, actuals, metrics)
        t0 = time.process_time()  # CPU time, as evalbot's (see _best_of)
        results = asyncio.run(evaluate(service, request))
        best = min(best, time.process_time() - t0)
    return best, results


def adk_worker(n_cases: int, repeat: int) -> None:
    """Time ADK's evaluate phase on the synthetic cases; print JSON."""
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    t0 = time.perf_counter()
    from google.adk import version
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from google.adk.evaluation.eval_set import EvalSet

    import_s = time.perf_counter() - t0
    eval_set_json, actuals_json = synthetic(n_cases)
    raw_set, raw_actuals = json.dumps(eval_set_json), json.dumps(actuals_json)

    def parse() -> tuple[Any, dict[str, Any]]:
        parsed = {k: [Invocation.model_validate(i) for i in v] for k, v in json.loads(raw_actuals).items()}
        return EvalSet.model_validate_json(raw_set), parsed

    parse_s, (eval_set, actuals) = _best_of(parse, repeat)
    every = get_eval_metrics_from_config(EvalConfig.model_validate({"criteria": CRITERIA}))
    configured = [m for m in every if m.metric_name in CRITERIA]
    _adk_timed(eval_set, actuals, configured, 1)  # warm-up
    score_s, results = _adk_timed(eval_set, actuals, configured, repeat)
    score_all_s, _ = _adk_timed(eval_set, actuals, every, repeat)
    means = {}
    for name in CRITERIA:
        scores = [m.score for r in results for m in r.overall_eval_metric_results if m.metric_name == name]
        means[name] = statistics.fmean(s for s in scores if s is not None)
    print(json.dumps({
        "adk_version": version.__version__,
        "import_s": import_s,
        "score_per_case_ms": 1000 * score_s / n_cases,
        "score_with_efficiency_per_case_ms": 1000 * score_all_s / n_cases,
        "parse_per_case_ms": 1000 * parse_s / n_cases,
        "means": means,
        "passed": sum(1 for r in results if r.final_eval_status.name == "PASSED"),
    }))


def bench_adk(n_cases: int, repeat: int, adk_python: str | None) -> dict[str, Any] | str:
    """ADK's timings, or why they are unavailable."""
    try:
        import google.adk  # noqa: F401

        python = sys.executable
    except ImportError:
        python = adk_python or os.environ.get("ADK_PYTHON") or DEFAULT_ADK_PYTHON
        if not Path(python).exists():
            return f"google-adk is not importable here and {python} does not exist (use --adk-python)"
    cmd = [python, __file__, "--adk-worker", "--cases", str(n_cases), "--repeat", str(repeat)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return f"ADK run failed under {python}: {proc.stderr.strip().splitlines()[-1:]}"
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


# ----------------------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmarks, print a summary."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=200, help="synthetic cases for the per-case comparison")
    parser.add_argument("--repeat", type=int, default=3, help="timing repetitions (best is reported)")
    parser.add_argument("--adk-python", help=f"python with google-adk (default: this one, else {DEFAULT_ADK_PYTHON})")
    parser.add_argument("--no-adk", action="store_true", help="skip the ADK comparison")
    parser.add_argument("--scale-invocations", type=int, default=100_000, help="size of the large run (0: skip)")
    parser.add_argument("--scale-form", choices=["events", "uses"], default="events",
                        help="intermediate-data form of the large run's actual invocations")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--adk-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--scale-worker", metavar="DIR", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.adk_worker:
        adk_worker(args.cases, args.repeat)
        return 0
    if args.scale_worker:
        scale_worker(args.scale_worker)
        return 0

    shape = f"{args.cases} cases x {INVOCATIONS} invocations x {TOOLS} tool calls x {WORDS}-word responses"
    print(f"evalbot engine benchmark: {shape}; python {sys.version.split()[0]}, {os.cpu_count()} CPU(s);"
          f" CPU time per case, least of {args.repeat}; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    results: dict[str, Any] = {"cases": args.cases, "evalbot": bench_evalbot(args.cases, args.repeat)}
    ev = results["evalbot"]
    print(f"  evalbot  score {ev['score_per_case_ms']:8.3f} ms/case   load+score {ev['load_and_score_per_case_ms']:8.3f}"
          f" ms/case   report JSON {ev['write_report_per_case_ms']:6.3f} ms/case   means {_means(ev['means'])}")
    floor = results["floor"] = bench_floor(args.cases, args.repeat)
    print(f"  floor    {floor['per_case_ms']:8.3f} ms/case (json.loads of the case and its run, trajectory EXACT, ROUGE-1"
          f" with memoised stems, a result tuple): evalbot's score is {ev['score_per_case_ms'] / floor['per_case_ms']:.1f}x"
          f" it, load+score {ev['load_and_score_per_case_ms'] / floor['per_case_ms']:.1f}x")
    print(f"           {floor['arithmetic_per_case_ms']:8.3f} ms/case without the json.loads (cases parsed beforehand, as"
          f" evalbot's and ADK's scoring times are taken)")
    # A 4th invocation takes each actual entry past 200 brackets, where jsonio.loads once walked every decoded value
    # to check its depth: the cost of one invocation should not jump there.
    four = results["evalbot_4_invocations"] = bench_evalbot(args.cases, args.repeat, INVOCATIONS + 1)
    per3 = ev["load_and_score_per_case_ms"] / INVOCATIONS
    per4 = four["load_and_score_per_case_ms"] / (INVOCATIONS + 1)
    print(f"  {INVOCATIONS + 1} invocations per case: load+score {four['load_and_score_per_case_ms']:8.3f} ms/case;"
          f" per invocation {per3:.3f} ms with {INVOCATIONS}, {per4:.3f} ms with {INVOCATIONS + 1}"
          f" ({per4 / per3:.2f}x; no cliff: about 1.0)")
    loads = results["loads"] = bench_loads(args.cases)
    print("  decoding one actual entry, CPU µs: " + "; ".join(
        f"{n} invocations ({r['brackets']:.0f} brackets) json.loads {r['json_us']:.1f}, jsonio.loads {r['jsonio_us']:.1f}"
        f" ({r['jsonio_us'] - r['json_us']:+.1f})" for n, r in loads.items()))
    if not args.no_adk:
        adk = bench_adk(args.cases, args.repeat, args.adk_python)
        results["adk"] = adk
        if isinstance(adk, str):
            print(f"  ADK      skipped: {adk}")
        else:
            # Like for like: evalbot always computes the four efficiency metrics, so ADK is timed with them too.
            adk_score = adk["score_with_efficiency_per_case_ms"]
            ratio = adk_score / ev["score_per_case_ms"]
            ratio_total = (adk_score + adk["parse_per_case_ms"]) / ev["load_and_score_per_case_ms"]
            ratio_configured = adk["score_per_case_ms"] / ev["score_per_case_ms"]
            results["ratio"] = {"score": ratio, "parse_and_score": ratio_total,
                                "score_vs_adk_without_efficiency": ratio_configured}
            print(f"  ADK {adk['adk_version']} score {adk['score_per_case_ms']:8.3f} ms/case   parse+score "
                  f"{adk['score_per_case_ms'] + adk['parse_per_case_ms']:8.3f} ms/case   means {_means(adk['means'])}")
            print(f"           (with ADK's efficiency metrics: {adk['score_with_efficiency_per_case_ms']:.3f} ms/case;"
                  f" cold import {adk['import_s']:.1f} s)")
            print(f"  ratio    evalbot is {ratio:.0f}x faster scoring, {ratio_total:.0f}x faster parsing + scoring"
                  f" (target >= 50x, i.e. scoring <= {adk_score / 50:.3f} ms/case; both tools with the efficiency"
                  f" metrics; {ratio_configured:.0f}x against ADK without them); the floor is"
                  f" {adk_score / floor['per_case_ms']:.0f}x faster than ADK,"
                  f" {adk_score / floor['arithmetic_per_case_ms']:.0f}x without the json.loads")
            agree = all(abs(adk["means"][k] - ev["means"][k]) < 1e-9 for k in CRITERIA)
            print(f"  means    {'identical' if agree else 'DIFFERENT'} to 1e-9; cases passed evalbot {ev['passed']},"
                  f" ADK {adk['passed']}")
    if args.scale_invocations:
        scale = bench_scale(args.scale_invocations, args.scale_form == "events")
        results["scale"] = scale
        print(f"  large    {scale['invocations']:,} invocations ({scale['cases']:,} cases, {scale['input_mb']:.0f} MB"
              f" JSON, {args.scale_form} form) load+score+report: {scale['wall_s']:.1f} s wall,"
              f" peak RSS {scale['peak_rss_mb']:.0f} MB"
              f" (targets < 60 s, < 1024 MB)")
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


def _means(means: dict[str, float | None]) -> str:
    return ", ".join(f"{k.split('_')[0]} {v:.4f}" if v is not None else f"{k} -" for k, v in means.items())


if __name__ == "__main__":
    sys.exit(main())
