"""Benchmark: evalbot's judge pipeline vs google-adk's evaluators on the same fake judge, in the same run.

    python bench/bench_judge.py [--cases 10] [--turns 10] [--samples 5] [--latency 0.2] [--concurrency N]
                                [--split-every 2] [--no-rubric] [--sampling sequential|full] [--quota Q]
                                [--adk-python /work/adkvenv/bin/python] [--no-adk]

A loopback fake Gemini server answers every ``generateContent`` request after a fixed latency. The eval set has
``cases`` x ``turns`` invocations judged by ``final_response_match_v2`` with ``num_samples`` samples and (unless
``--no-rubric``) ``rubric_based_final_response_quality_v1`` with one rubric and as many samples. Every answer is
valid, except the first sample of every ``--split-every``-th prompt: there sequential sampling's first round (3 of 5)
does not decide the majority and a second round is asked. evalbot runs through its CLI (``evalbot run``
in-process, fresh judge cache), then again on the same cache; ADK runs its own ``LocalEvalService`` with its
defaults (4 cases in parallel, samples one at a time) in a subprocess, timed from inside (ADK's ~10 s import is
excluded). Printed: wall times, HTTP requests, the judge-busy window (the fake server's first request received to
its last answer sent), the lower bound ``ceil(requests / concurrency) x latency`` set by the concurrency limit, the
window and the run against it, and the ratio to ADK. ``--concurrency`` defaults to evalbot's own default (the adaptive
limit's maximum, ``judges.limiter.DEFAULT_CONCURRENCY``). ``--quota Q`` makes the fake server refuse, with 429
RESOURCE_EXHAUSTED, any request beyond Q in flight: evalbot's limit comes down to the quota on its own, and the window
is then also shown against the bound at Q, ``ceil(answered / Q) x latency`` (the refused requests cost no latency).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import evalbot.judges.gemini  # noqa: E402, F401  (imported up front: imports are excluded on both sides)
from evalbot.cli.commands import main as evalbot_main  # noqa: E402
from evalbot.judges.limiter import DEFAULT_CONCURRENCY  # noqa: E402

_RUBRIC_ANSWER = "ID: r1\nProperty: The answer states the weather.\nRationale: It does.\nVerdict: yes\n"
ANSWER = _RUBRIC_ANSWER + (
    '{"reasoning": "The answer gives the same facts as the reference.", "is_the_agent_response_valid": "valid"}')
"""Read by both criteria: the rubric judge reads the lines, final_response_match_v2 the JSON object."""
SPLIT_ANSWER = ANSWER.replace('"valid"}', '"invalid"}')


def _content(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"text": text}]}


def write_inputs(directory: Path, cases: int, turns: int, samples: int, rubric: bool) -> tuple[Path, Path, Path]:
    """Eval set, actuals and config files for the benchmark."""
    eval_cases, actuals = [], {}
    for c in range(cases):
        expected, actual = [], []
        for t in range(turns):
            user = _content("user", f"Case {c} turn {t}: what is the weather in city {c}-{t}?")
            expected.append({"invocation_id": f"c{c}t{t}", "user_content": user,
                             "final_response": _content("model", f"It is sunny and {10 + t} C in city {c}-{t}.")})
            actual.append({"invocation_id": f"c{c}t{t}", "user_content": user,
                           "final_response": _content("model", f"Sunny, {10 + t} degrees in city {c}-{t}.")})
        eval_cases.append({"eval_id": f"case{c}", "conversation": expected})
        actuals[f"case{c}"] = actual
    eval_set = directory / "bench.evalset.json"
    eval_set.write_text(json.dumps({"eval_set_id": "bench", "eval_cases": eval_cases}), encoding="utf-8")
    actuals_path = directory / "actuals.json"
    actuals_path.write_text(json.dumps(actuals), encoding="utf-8")
    config = directory / "test_config.json"
    judge = {"judge_model": "gemini-2.5-flash", "num_samples": samples}
    criteria: dict[str, Any] = {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": judge}}
    if rubric:
        criteria["rubric_based_final_response_quality_v1"] = {
            "threshold": 0.5, "judge_model_options": judge,
            "rubrics": [{"rubric_id": "r1", "rubric_content": {"text_property": "The answer states the weather."}}]}
    config.write_text(json.dumps({"criteria": criteria}), encoding="utf-8")
    return eval_set, actuals_path, config


class FakeServer:
    """The fake Gemini server in its own process (so it does not compete for this interpreter's GIL)."""

    def __init__(self, latency: float, split_every: int = 0, quota: int | None = None) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.fake_gemini", "--latency", str(latency), "--answer", ANSWER,
             "--split-answer", SPLIT_ANSWER, "--split-every", str(split_every),
             *(["--quota", str(quota)] if quota is not None else [])],
            cwd=ROOT, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def stats(self) -> dict[str, Any]:
        """Requests served since the last reset, and the peak number in flight."""
        with urllib.request.urlopen(f"{self.url}/_stats", timeout=10) as answer:
            result: dict[str, Any] = json.loads(answer.read())
        return result

    def reset(self) -> None:
        """Clear the request log."""
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/_reset", data=b"{}"), timeout=10).close()

    def stop(self) -> None:
        """Terminate the server process."""
        self.process.terminate()
        self.process.wait(timeout=10)


@contextlib.contextmanager
def fake_server(latency: float, split_every: int = 0, quota: int | None = None) -> Iterator[FakeServer]:
    """A running FakeServer, stopped on exit."""
    server = FakeServer(latency, split_every, quota)
    try:
        yield server
    finally:
        server.stop()


def _window(stats: dict[str, Any]) -> float:
    """Seconds from the first request the server received to the last answer it sent."""
    return max(stats["finished"], default=0.0) - min(stats["started"], default=0.0)


def run_evalbot(fake: FakeServer, files: tuple[Path, Path, Path], cache: Path, concurrency: int,
                sampling: str = "sequential") -> dict[str, Any]:
    """One ``evalbot run`` in-process; wall time, requests, exit code."""
    eval_set, actuals, config = files
    fake.reset()
    env = {"GOOGLE_API_KEY": "bench-key", "GOOGLE_GEMINI_BASE_URL": fake.url}
    argv = ["run", str(eval_set), "--actuals", str(actuals), "--config", str(config), "--judge-cache", str(cache),
            "--judge-concurrency", str(concurrency), "--sampling", sampling,
            "--report", str(cache.parent / "report.json")]
    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        code = evalbot_main(argv, env)
    seconds = time.perf_counter() - start
    stats = fake.stats()
    report = json.loads((cache.parent / "report.json").read_text(encoding="utf-8"))
    statuses: dict[str, int] = {}
    for es in report["eval_sets"]:
        for case in es["cases"]:
            for name, metric in case["metrics"].items():
                key = f"{name.split('_')[0]}:{metric['status']}"
                if name in ("final_response_match_v2", "rubric_based_final_response_quality_v1"):
                    statuses[key] = statuses.get(key, 0) + 1
    return {"seconds": seconds, "requests": stats["requests"], "peak_in_flight": stats["peak_in_flight"],
            "refused": sum(status == 429 for status in stats["statuses"]), "window": _window(stats),
            "exit_code": code, "statuses": statuses, "concurrency": (report.get("usage") or {}).get("concurrency")}


def run_adk(fake: FakeServer, files: tuple[Path, Path, Path], python: str) -> dict[str, Any]:
    """ADK's evaluators in a subprocess against the same fake server."""
    fake.reset()
    env = {"GOOGLE_GEMINI_BASE_URL": fake.url, "GOOGLE_API_KEY": "bench-key", "GOOGLE_GENAI_USE_VERTEXAI": "false",
           "PATH": "/usr/bin:/bin"}
    done = subprocess.run([python, str(ROOT / "bench" / "adk_judge_runner.py"), *map(str, files)], env=env,
                          capture_output=True, text=True, check=True, timeout=1800)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    stats = fake.stats()
    result["requests"] = stats["requests"]
    result["peak_in_flight"] = stats["peak_in_flight"]
    result["window"] = _window(stats)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10)
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY,
                        help="evalbot's --judge-concurrency (default: evalbot's, %(default)s)")
    parser.add_argument("--quota", type=int, default=None,
                        help="the fake server refuses (429) requests beyond this many in flight")
    parser.add_argument("--split-every", type=int, default=2,
                        help="every N-th prompt's first sample disagrees (0: never); default %(default)s")
    parser.add_argument("--no-rubric", action="store_true", help="final_response_match_v2 only")
    parser.add_argument("--sampling", choices=["sequential", "full"], default="sequential")
    parser.add_argument("--adk-python", default="/work/adkvenv/bin/python")
    parser.add_argument("--repeat", type=int, default=3, help="evalbot fresh-cache runs; the median is reported")
    parser.add_argument("--no-adk", action="store_true", help="skip ADK (e.g. where it is not installed)")
    args = parser.parse_args()
    invocations = args.cases * args.turns
    with tempfile.TemporaryDirectory() as tmp, fake_server(args.latency, args.split_every, args.quota) as fake:
        files = write_inputs(Path(tmp), args.cases, args.turns, args.samples, not args.no_rubric)
        runs = [run_evalbot(fake, files, Path(tmp) / f"judge-cache-{k}", args.concurrency, args.sampling)
                for k in range(max(1, args.repeat))]
        first = sorted(runs, key=lambda r: r["seconds"])[len(runs) // 2]
        second = run_evalbot(fake, files, Path(tmp) / "judge-cache-0", args.concurrency, args.sampling)
        adk: dict[str, Any] | str | None = None
        if not args.no_adk:
            try:
                adk = run_adk(fake, files, args.adk_python)
            except (OSError, subprocess.SubprocessError) as exc:  # ADK missing or broken: evalbot's figures stand
                adk = f"{exc}: {getattr(exc, 'stderr', '') or ''}"[-600:]
    answered = first["requests"] - first["refused"]
    bound = math.ceil(answered / args.concurrency) * args.latency
    criteria = "final_response_match_v2" + ("" if args.no_rubric else " + rubric_based_final_response_quality_v1")
    print(f"judge latency {args.latency * 1000:.0f} ms; {args.cases} cases x {args.turns} turns = {invocations} "
          f"invocations x {args.samples} samples; {criteria}; sampling {args.sampling}; every "
          f"{args.split_every or 'no'}-th prompt split; concurrency {args.concurrency}"
          + (f"; server quota {args.quota} in flight" if args.quota is not None else ""))
    times = ", ".join(f"{r['seconds']:.2f}" for r in runs)
    windows = ", ".join(f"{r['window']:.2f}" for r in runs)
    print(f"evalbot   first run : {first['seconds']:7.2f} s  {first['requests']:5d} requests  "
          f"peak in flight {first['peak_in_flight']}  statuses {first['statuses']}  (median of {times})")
    print(f"evalbot   cached run: {second['seconds']:7.2f} s  {second['requests']:5d} requests  "
          f"statuses {second['statuses']}")
    print(f"lower bound (ceil({answered}/{args.concurrency}) x latency): {bound:.2f} s -> judge-busy window "
          f"{first['window']:.2f} s = {first['window'] / bound:.2f}x the bound (windows {windows}); whole run "
          f"{first['seconds'] / bound:.2f}x")
    if args.quota is not None:
        quota_bound = math.ceil(answered / min(args.quota, args.concurrency)) * args.latency
        print(f"rate limited: {first['refused']} requests refused (429); evalbot's limit: "
              f"{first['concurrency'] or 'never lowered'}; bound at the quota (ceil({answered}/{args.quota}) x latency) "
              f"{quota_bound:.2f} s -> window {first['window'] / quota_bound:.2f}x, whole run "
              f"{first['seconds'] / quota_bound:.2f}x")
    if isinstance(adk, str):
        print(f"ADK skipped: {adk}")
    elif adk is not None:
        print(f"ADK 2.13 defaults   : {adk['seconds']:7.2f} s  {adk['requests']:5d} requests  "
              f"peak in flight {adk['peak_in_flight']}  statuses {adk['statuses']}")
        print(f"speed-up vs ADK: {adk['seconds'] / first['seconds']:.1f}x; requests: {adk['requests']} -> "
              f"{first['requests']} ({adk['requests'] / max(first['requests'], 1):.1f}x fewer; input tokens paid "
              f"once per invocation instead of {args.samples} times)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
