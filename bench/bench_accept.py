#!/usr/bin/env python3
"""``evalbot compare`` with a pull request's refreshed baseline (the accept path) against plain ``compare``.

    python bench/bench_accept.py [--invocations 3000,30000,100002] [--repeat 3] [--keep DIR | --inputs DIR] [--json]

For each size (default 1,000, 10,000 and 33,334 cases of 3 invocations), writes bench_memory's inputs (bench_engine's
synthetic suite, events form: the PR's run and main's run, another actual seed, so many cases change verdict or
score), then builds a git repository in the size's folder: its one commit holds main's baseline (``evalbot baseline``
from main's run) at ``.evalbot/baseline.json``; the PR's refreshed baseline is ``evalbot baseline`` from the PR's
run continuing main's file (README, "Accepting locally", step 2). Then runs, alternately and ``--repeat`` times
each, in a fresh child measured alone (bench_memory's wrapper: wall, CPU = user + system, peak RSS):

- ``plain``: ``evalbot compare --baseline main.json SET --actuals PR --report R --comment C --summary S`` (a file:
  no update is looked for; bench_compare's command plus the summary);
- ``ref``: the same with ``--baseline HEAD:.evalbot/baseline.json`` and the working tree's file as committed (the
  file is read and found unchanged: no update);
- ``accept``: the same with the working tree's file replaced by the refreshed one: the PR's baseline update,
  checked entry by entry against main's (``evalbot/compare/accept.py``) and compared with.

Prints the medians, ``accept``'s ratios to ``plain`` (targets: CPU <= 1.3x, peak RSS <= 1.2x) and the growth
exponent of each command's CPU time over the sizes (least-squares slope of log CPU against log cases, and from the
two largest sizes; target <= 1.1). Exit 1 if a target is missed. ``--keep DIR`` keeps the inputs and the outputs
(``<command>.report.json``, ``.comment.md``, ``.summary.md`` per size) for ``--inputs DIR``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_growth import slope  # noqa: E402
from bench_memory import _cli, sized_runs  # noqa: E402

TIME_RATIO = 1.3
"""accept's CPU time over plain compare's."""
RSS_RATIO = 1.2
"""accept's peak RSS over plain compare's."""
GROWTH = 1.1
"""Growth exponent of each command's CPU time."""
BASELINE = ".evalbot/baseline.json"
COMMANDS = ("plain", "ref", "accept")
_STAMP = ["--created-at", "2026-01-01T00:00:00+00:00"]


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args], cwd=folder,
                   check=True, capture_output=True)


def prepare(folder: Path, invocations: int) -> None:
    """The inputs, main's baseline committed in a new repository, and the PR's refreshed baseline beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(HERE / "bench_memory.py"), "--write-inputs", str(folder), str(invocations),
                    "1"], check=True)
    _cli(["baseline", "evals", "--actuals", "main.json", "--output", "main.baseline.json", "--commit", "0" * 40,
          *_STAMP, "--reset-history"], cwd=folder)  # relative paths, as the compares give them
    _cli(["baseline", "evals", "--actuals", "pr.json", "--output", "pr.baseline.json", "--previous",
          "main.baseline.json", "--commit", "1" * 40, *_STAMP], cwd=folder)
    (folder / ".evalbot").mkdir()
    shutil.copyfile(folder / "main.baseline.json", folder / BASELINE)
    _git(folder, "init", "-q")
    _git(folder, "add", BASELINE)
    _git(folder, "commit", "-q", "-m", "main's baseline")


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(r[key] for r in rows))


def one_size(folder: Path, invocations: int, repeat: int) -> dict[str, Any]:
    def argv(name: str) -> list[str]:
        baseline = "main.baseline.json" if name == "plain" else f"HEAD:{BASELINE}"
        return ["compare", "--baseline", baseline, "evals", "--actuals", "pr.json", "--report", f"{name}.report.json",
                "--comment", f"{name}.comment.md", "--summary", f"{name}.summary.md"]

    rows: dict[str, list[dict[str, Any]]] = {name: [] for name in COMMANDS}
    exits: dict[str, int] = {}
    for _ in range(repeat):  # alternated, so all three see the same load
        for name in COMMANDS:
            source = "pr.baseline.json" if name == "accept" else "main.baseline.json"
            shutil.copyfile(folder / source, folder / BASELINE)
            rows[name].append(_cli(argv(name), cwd=folder))
            exits[name] = rows[name][-1]["exit"]
    shutil.copyfile(folder / "main.baseline.json", folder / BASELINE)
    out: dict[str, Any] = {"invocations": invocations, "cases": -(-invocations // 3), "repeat": repeat, "exit": exits}
    for name in COMMANDS:
        out[name] = {key: _median(rows[name], key) for key in ("wall_s", "cpu_s", "peak_rss_mb")}
    out["ratio"] = {key: round(out["accept"][key] / out["plain"][key], 2) for key in ("wall_s", "cpu_s", "peak_rss_mb")}
    comment = (folder / "accept.comment.md").read_text(encoding="utf-8")
    out["accepted_headline"] = comment.split("\n", 3)[:3]
    return out


def _targets(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    checks = []
    for r in results:
        checks.append((f"accept/plain CPU, {r['cases']:,} cases", r["ratio"]["cpu_s"], TIME_RATIO, "x"))
        checks.append((f"accept/plain peak RSS, {r['cases']:,} cases", r["ratio"]["peak_rss_mb"], RSS_RATIO, "x"))
    if len(results) > 1:
        for name in COMMANDS:
            points = [(r["cases"], r[name]["cpu_s"]) for r in results]
            checks.append((f"{name} growth exponent (two largest sizes: {slope(points[-2:]):.2f})", slope(points),
                           GROWTH, ""))
    return [{"what": what, "value": round(value, 3), "target": target, "unit": unit, "met": value <= target}
            for what, value, target, unit in checks]


def _print(r: dict[str, Any]) -> None:
    print(f"{r['cases']:,} cases ({r['invocations']:,} invocations), median of {r['repeat']}, alternated:")
    for name in COMMANDS:
        m = r[name]
        print(f"  {name:7} wall {m['wall_s']:6.1f} s  CPU {m['cpu_s']:6.1f} s  peak RSS {m['peak_rss_mb']:7,.0f} MB"
              f"  exit {r['exit'][name]}")
    ratio = r["ratio"]
    print(f"  accept/plain: wall {ratio['wall_s']:.2f}x, CPU {ratio['cpu_s']:.2f}x, peak RSS "
          f"{ratio['peak_rss_mb']:.2f}x; accept's comment: {' / '.join(s.strip() for s in r['accepted_headline'])[:160]}")


def main(argv: list[str] | None = None) -> int:
    results, as_json = sized_runs(__doc__, "3000,30000,100002", "evalbot-accept-", prepare, one_size, _print, argv)
    targets = _targets(results)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    if as_json:
        print(json.dumps({"results": results, "targets": targets, "load_average": load}))
    else:
        for t in targets:
            print(f"target: {t['what']} {t['value']:.2f}{t['unit']} <= {t['target']:g}{t['unit']}: "
                  f"{'met' if t['met'] else 'MISSED'}")
        print(f"load average: {load}")
    return 0 if all(t["met"] for t in targets) else 1


if __name__ == "__main__":
    raise SystemExit(main())
