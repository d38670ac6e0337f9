"""Benchmark: the HTML report of a large comparison, rendered and opened in headless Chromium.

    python bench/bench_html.py [--cases 10000] [--repeat 3] [--keep OUT.html] [--all-markup] [--browser]

Builds a baseline and a PR run of ``cases`` cases in two eval sets (the second judged by final_response_match_v2
with 5 samples, rationale and votes). About 10% of cases regress, 5% are fixed, 15% keep failing and 2% flip on a
split judge vote; the rest pass. As the engine does, cases that pass without a judged criterion carry no turns; the
others carry 3 turns of 3 tool calls (nested arguments) and 40-word responses. Every case also has the four
informational efficiency metrics. The comparison is held as ``evalbot compare`` holds it: the PR's cases packed
with their turns and verdicts in a PackedSpill (a temporary file), the baseline parsed from its JSON text. Printed: render time, file size, and in headless Chromium (Debian's package,
fresh profile each time) the time to first paint and first contentful paint, DOMContentLoaded and load (from
navigation start), and the time the "regressed" filter takes to apply (style and layout forced).

From 50,000 cases on (issue 28's row: 100,000), the page is rendered once in a fresh process, written to a file in
pieces as the CLI does, and the bench prints the render's wall and CPU time, the resident memory before it (the
comparison held) and its peak while rendering (VmHWM, reset after the comparison is built), against the targets;
Chromium opens it only with ``--browser``.

``--all-markup`` also measures, in the same run, the page with every case's details written as markup (what
evalbot wrote before details beyond ``render.html.MARKUP_LIMIT`` travelled as compressed data), and prints the
ratios.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalbot.compare.baseline import build_baseline, dump_baseline, parse_baseline  # noqa: E402
from evalbot.compare.delta import compare  # noqa: E402
from evalbot.compare.gate import GatePolicy  # noqa: E402
from evalbot.pipeline import PackedSpill  # noqa: E402
from evalbot.render.html import MARKUP_LIMIT, html_chunks, render_html  # noqa: E402
from evalbot.results import (  # noqa: E402
    CaseResult,
    CriterionInfo,
    EvalSetReport,
    InvocationScore,
    MetricResult,
    Report,
    ToolCallView,
    TurnView,
    case_status,
    compacted,
    summarize_cases,
    totals,
)
from evalbot.turnpack import PackedTurns  # noqa: E402
from tests.fakes.chromium import browser, find_browser  # noqa: E402

TRAJ, RESP, JUDGE = "tool_trajectory_avg_score", "response_match_score", "final_response_match_v2"
INFO = ("tool_calls_count", "llm_calls_count", "agent_turns_count", "invocation_latency")
WORDS = ("order refund shipping address card delivery package status account tracking number store hours "
         "weekday return policy receipt label customer warehouse").split()


def words(seed: int, n: int = 40) -> str:
    return " ".join(WORDS[(seed * 7 + i * 3) % len(WORDS)] for i in range(n)).capitalize() + "."


def calls(i: int, t: int, broken: bool) -> list[ToolCallView]:
    out = [
        ToolCallView(name="find_order", args={"customer": {"id": f"C{i}", "tier": "gold"}, "turn": t}),
        ToolCallView(name="get_status", args={"order_id": f"A{i}-{t}", "fields": ["status", "eta"]}),
        ToolCallView(name="notify", args={"channel": "email", "template": {"name": "status", "lang": "en"}}),
    ]
    if broken:
        out[1] = ToolCallView(name="get_status", args={"order_id": f"A{i}-{t + 1}", "fields": ["status"]})
    return out


def metric(score: float, threshold: float | None, judged_votes: tuple[int, int] | None = None) -> MetricResult:
    status = "informational" if threshold is None else ("passed" if score >= threshold else "failed")
    per = []
    for _ in range(3):
        details: dict[str, Any] | None = None
        if judged_votes is not None:
            details = {"votes": {"yes": judged_votes[0], "no": judged_votes[1]},
                       "rationale": "The response gives the same facts as the reference, except the delivery date."}
        per.append(InvocationScore(score=score, status=status, details=details))  # type: ignore[arg-type]
    return MetricResult(score=score, status=status, threshold=threshold, per_invocation=per)  # type: ignore[arg-type]


def build(n: int, pr: bool, store: PackedSpill | None = None) -> Report:
    sets = []
    for set_index, (name, judged) in enumerate((("orders", False), ("faq", True))):
        cases = []
        size = n * 4 // 5 if set_index == 0 else n - n * 4 // 5
        for k in range(size):
            i = k * 2 + set_index
            kind = i % 100
            regressed, fixed, failing, flip = kind < 10, 10 <= kind < 15, 15 <= kind < 30, 30 <= kind < 32
            bad = (regressed and pr) or (fixed and not pr) or failing
            metrics = {TRAJ: metric(0.0 if bad else 1.0, 1.0), RESP: metric(0.4 if bad else 0.9, 0.6)}
            if judged:
                votes = (2, 3) if flip and pr else (3, 2) if flip else (0, 5) if bad else (5, 0)
                metrics[JUDGE] = metric(1.0 if votes[0] > votes[1] else 0.0, 0.8, votes)
            for info in INFO:
                metrics[info] = metric(0.5, None)
            status = case_status([m.status for m in metrics.values()])
            result = CaseResult(eval_id=f"{name}_case_{k:05d}", status=status, metrics=metrics, fingerprint=f"fp{i}")
            if status != "passed" or judged:
                result.turns = PackedTurns.of([
                    TurnView(user=f"Where is my order A{i}-{t}? " + words(i + t, 12),
                             expected_response=words(i + t), actual_response=words(i + t + (1 if bad else 0)),
                             expected_tool_calls=calls(i, t, False), actual_tool_calls=calls(i, t, bad))
                    for t in range(3)
                ])
            cases.append(compacted(result, store))  # held as the CLI's scoring keeps a case
        criteria = [*(CriterionInfo(name=n, fingerprint=n) for n in INFO),
                    CriterionInfo(name=TRAJ, threshold=1.0, fingerprint="t"),
                    CriterionInfo(name=RESP, threshold=0.6, fingerprint="r")]
        if judged:
            criteria.append(CriterionInfo(name=JUDGE, threshold=0.8, judged=True, fingerprint="j"))
        es = EvalSetReport(eval_set_id=name, path=f"evals/{name}.evalset.json",
                           status=case_status([c.status for c in cases]), criteria=criteria, cases=cases,
                           metrics=summarize_cases(cases))
        sets.append(es)
    return Report(eval_sets=sets, totals=totals(sets))


PAINT = ("JSON.stringify(Object.fromEntries(performance.getEntriesByType('paint').map(e => [e.name, e.startTime])"
         ".concat(performance.getEntriesByType('navigation').map(e => [['dcl', e.domContentLoadedEventEnd], "
         "['load', e.loadEventEnd]]).flat())))")
FILTER = ("(() => { const t = performance.now(); document.getElementById('l-regressed').click(); "
          "document.body.offsetHeight; const n = Array.from(document.querySelectorAll('.case'))"
          ".filter(c => getComputedStyle(c).display !== 'none').length; "
          "return JSON.stringify([performance.now() - t, n]); })()")


def measure(binary: str, path: Path) -> dict[str, float]:
    with browser(binary, width=1280, height=900, timeout=300) as chrome:
        chrome.open(path.as_uri())
        deadline = time.monotonic() + 30
        timings = json.loads(chrome.evaluate(PAINT))
        while "first-contentful-paint" not in timings and time.monotonic() < deadline:
            time.sleep(0.05)
            timings = json.loads(chrome.evaluate(PAINT))
        took, shown = json.loads(chrome.evaluate(FILTER))
        return {**timings, "filter_ms": took, "filter_shown": shown}


def variant(comparison: Any, limit: int, repeat: int, keep: str | None, cases: int = 0) -> dict[str, float]:
    """Render ``repeat`` times with ``limit`` cases' details as markup, open the page ``repeat`` times."""
    renders, cpus = [], []
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        html = render_html(comparison, markup_limit=limit)
        renders.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    data = html.encode("utf-8")
    out = {"render_s": statistics.median(renders), "render_min_s": min(renders), "bytes": float(len(data))}
    target_s, target_bytes, target_ms = TARGETS.get(cases, (None, None, None))
    print(f"  render_html: median {out['render_s']:.2f} s over {repeat} (min {min(renders):.2f} s, CPU median "
          f"{statistics.median(cpus):.2f} s){verdict(out['render_s'], target_s, ' s wall')}")
    print(f"  file size: {len(data) / 1e6:.1f} MB ({len(data):,} bytes){verdict(len(data) / 1e6, target_bytes and target_bytes / 1e6, ' MB')}")
    binary = find_browser()
    if binary is None:
        print("  no Chromium found: browser timings skipped (apt-get install chromium, or set EVALBOT_CHROMIUM)")
        return out
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(keep) if keep else Path(tmp) / "report.html"
        path.write_bytes(data)
        runs = [measure(binary, path) for _ in range(repeat)]
    for key, label in (("first-paint", "first paint"), ("first-contentful-paint", "first contentful paint"),
                       ("dcl", "DOMContentLoaded"), ("load", "load event"), ("filter_ms", "'regressed' filter")):
        values = [r[key] for r in runs if key in r]
        if values:
            out[key] = statistics.median(values)
            print(f"  {label}: median {statistics.median(values):,.0f} ms (min {min(values):,.0f}, "
                  f"max {max(values):,.0f}) over {len(values)} fresh browser(s)"
                  + (verdict(statistics.median(values), target_ms, " ms") if key == "dcl" else ""))
    print(f"  cases shown by the 'regressed' filter: {runs[0]['filter_shown']:.0f}")
    return out


TARGETS = {10_000: (1.0, 10e6, 1000.0), 100_000: (10.0, None, None)}
"""Issue 28's targets by size: render seconds, file bytes, interactive (DOMContentLoaded) milliseconds."""
PEAK_TARGET = 1000.0
"""Issue 28: peak memory of ``--html`` at 100,000 cases, MB."""


def verdict(value: float, target: float | None, unit: str = "") -> str:
    return "" if target is None else f"  [target <= {target:g}{unit}: {'met' if value <= target else 'NOT met'}]"


def comparison_of(cases: int) -> Any:
    """The comparison as `evalbot compare` holds it: the PR's cases with their turns and verdicts in a PackedSpill,
    the baseline parsed from its file's text."""
    text = dump_baseline(build_baseline(build(cases, pr=False), commit="0" * 40, created_at="2026-01-01T00:00:00+00:00"))
    baseline = parse_baseline(text, "main:.evalbot/baseline.json")
    del text
    pr = build(cases, pr=True, store=PackedSpill())
    return compare(current=pr, baseline=baseline, policy=GatePolicy(), baseline_source="main:.evalbot/baseline.json")


def status_kb(field: str) -> float:
    line = next(x for x in Path("/proc/self/status").read_text().splitlines() if x.startswith(field + ":"))
    return float(line.split()[1])


def fresh(cases: int, out: str) -> None:
    """In a fresh process: build the comparison, drop everything else, then render it to ``out`` in pieces (as the
    CLI does) and print one JSON line: wall and CPU seconds, bytes, RSS before and peak RSS during the render."""
    comparison = comparison_of(cases)
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # hand the inputs' freed memory back: "before" is what is held
    except OSError:
        pass
    before = status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM: the peak below is the render's
    wall, cpu = time.perf_counter(), time.process_time()
    with open(out, "w", encoding="utf-8") as handle:
        for piece in html_chunks(comparison):
            handle.write(piece)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(json.dumps({"wall": wall, "cpu": cpu, "bytes": os.path.getsize(out), "before_mb": before / 1024,
                      "peak_mb": status_kb("VmHWM") / 1024, "counts": {k: v for k, v in comparison.counts.items() if v}}))


def large(args: argparse.Namespace) -> None:
    """Render ``args.cases`` cases in a fresh process ``args.repeat`` times; print against the targets."""
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or str(Path(tmp) / "report.html")
        for _ in range(args.repeat):
            done = subprocess.run([sys.executable, __file__, "--fresh", str(args.cases), out], check=True,
                                  capture_output=True, text=True)
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
        target_s = TARGETS.get(args.cases, (None, None, None))[0]
        wall = statistics.median(r["wall"] for r in runs)
        peak = max(r["peak_mb"] for r in runs)
        print(f"cases: {args.cases:,}  counts: {json.dumps(runs[0]['counts'])}  load average: "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        print(f"  render_html to a file, fresh process: median {wall:.2f} s wall over {len(runs)} "
              f"(CPU {statistics.median(r['cpu'] for r in runs):.2f} s){verdict(wall, target_s, ' s wall')}")
        print(f"  file size: {runs[0]['bytes'] / 1e6:.1f} MB ({runs[0]['bytes']:,} bytes)")
        print(f"  resident memory: {statistics.median(r['before_mb'] for r in runs):,.0f} MB with the comparison held, "
              f"peak {peak:,.0f} MB while rendering{verdict(peak, PEAK_TARGET, ' MB')}")
        print(f"  the render's own peak (peak minus before): "
              f"{max(r['peak_mb'] - r['before_mb'] for r in runs):,.0f} MB")
        if args.browser:
            binary = find_browser()
            if binary is None:
                print("  no Chromium found: browser timings skipped")
            else:
                timings = measure(binary, Path(out))
                print(f"  DOMContentLoaded {timings['dcl']:,.0f} ms, 'regressed' filter {timings['filter_ms']:,.0f} ms "
                      f"({timings['filter_shown']:.0f} cases)")


def main() -> None:
    if sys.argv[1:2] == ["--fresh"]:
        fresh(int(sys.argv[2]), sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", metavar="OUT.html", help="also write the page here")
    parser.add_argument("--all-markup", action="store_true",
                        help="also measure the page with every case's details as markup, and print the ratios")
    parser.add_argument("--browser", action="store_true", help="from 50,000 cases: also open the page in Chromium")
    args = parser.parse_args()
    if args.cases >= 50_000:
        large(args)
        return
    comparison = comparison_of(args.cases)
    print(f"cases: {args.cases:,}  counts: {json.dumps({k: v for k, v in comparison.counts.items() if v})}  "
          f"load average: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print(f"the report (details of at most {MARKUP_LIMIT:,} cases as markup, beyond the verdict's own cases):")
    lean = variant(comparison, MARKUP_LIMIT, args.repeat, args.keep, args.cases)
    if not args.all_markup:
        return
    print("every case's details as markup:")
    full = variant(comparison, 10**9, args.repeat, None)
    print("ratios (every case as markup / the report):")
    for key in ("render_s", "bytes", "first-contentful-paint", "dcl", "filter_ms"):
        if key in lean and key in full and lean[key]:
            print(f"  {key}: {full[key] / lean[key]:.1f}x")


if __name__ == "__main__":
    main()
