"""Benchmark: a pull request touching one agent of a 12-eval-set repository, run in full and with ``--only-affected``.

    python bench/bench_selective.py [--sets 12] [--cases 10] [--json]

A temporary git repository holds ``--sets`` eval sets (``evals/sNN/``, ``--cases`` one-turn cases each, criteria
``tool_trajectory_avg_score`` and the judged ``final_response_match_v2``), one agent folder per eval set
(``agents/sNN/``) and main's gate policy mapping each eval set folder to its agent's folder and ``shared/``
(``affected_by``). main's baseline is measured with the agent (``evalbot baseline --agent``) and committed; a branch
then changes ``agents/s03/``. The pull request is measured twice, in this process, the agent (``--agent``, a
counting function) and the judge (a loopback fake Gemini server, no latency, no judge cache) both real:

- *full*: ``evalbot compare evals --agent ... --baseline main:.evalbot/baseline.json`` (what every pull request
  paid before: every eval set run and judged);
- *selective*: ``evalbot plan evals --base main`` (timed as CI runs it, a fresh interpreter, wall clock; and the
  planning alone, in this process once evalbot is imported) then the same compare with ``--only-affected``.

Printed: agent runs and judge requests of each, their ratios (target: one eval set of ``--sets``, 1/12), the plan's
wall time (target < 1 s), the verdicts and headlines (the selective one names what it carried).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from evalbot.cli.commands import main as evalbot_main  # noqa: E402
from tests.fakes.fake_gemini import FakeGemini  # noqa: E402

VALID = '{"reasoning": "same facts", "is_the_agent_response_valid": "valid"}'
CHANGED = 3
"""The eval set whose agent the pull request changes."""

AGENT = '''"""The agent under test: answers each question as expected; counts its runs."""
import threading

CALLS = 0
_LOCK = threading.Lock()


def run(prompt: str) -> dict:
    global CALLS
    with _LOCK:
        CALLS += 1
    name, k = prompt.split()[0], prompt.split()[-1]
    return {"response": f"{name} answer {k}", "predicted_trajectory": [{"tool_name": f"{name}_tool",
                                                                         "tool_input": {"k": int(k)}}]}
'''


def _git(where: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=bench@example.com", "-c",
                           "commit.gpgsign=false", *args], cwd=where, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _case(name: str, k: int) -> dict[str, Any]:
    return {"eval_id": f"{name}-{k}", "conversation": [{
        "user_content": {"role": "user", "parts": [{"text": f"{name} question {k}"}]},
        "final_response": {"role": "model", "parts": [{"text": f"{name} answer {k}"}]},
        "intermediate_data": {"tool_uses": [{"name": f"{name}_tool", "args": {"k": k}}]}}]}


def make_repo(root: Path, sets: int, cases: int) -> list[str]:
    """The repository's files; returns the eval set names."""
    names = [f"s{i:02d}" for i in range(sets)]
    section = {"affected_by": {f"evals/{n}": [f"agents/{n}/**", "shared/**"] for n in names}}
    for name in names:
        folder = root / "evals" / name
        folder.mkdir(parents=True)
        (folder / f"{name}.evalset.json").write_text(json.dumps(
            {"eval_set_id": name, "eval_cases": [_case(name, k) for k in range(cases)]}), encoding="utf-8")
        (folder / "test_config.json").write_text(json.dumps({"criteria": {
            "tool_trajectory_avg_score": 1.0, "final_response_match_v2": 0.5}, "evalbot": section}), encoding="utf-8")
        (root / "agents" / name).mkdir(parents=True)
        (root / "agents" / name / "prompt.md").write_text(f"You are the {name} agent.\n", encoding="utf-8")
    (root / "shared").mkdir()
    (root / "shared" / "tools.py").write_text("TOOLS = []\n", encoding="utf-8")
    (root / "bench_agent.py").write_text(AGENT, encoding="utf-8")
    return names


def evalbot(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = evalbot_main(argv, env)
    return code, out.getvalue()


def measure(argv: list[str], env: dict[str, str], fake: FakeGemini) -> dict[str, Any]:
    """One compare in this process: agent runs, judge requests, wall seconds, exit code, headline."""
    agent = sys.modules["bench_agent"]
    agent.CALLS = 0  # type: ignore[attr-defined]
    fake.reset()
    started = time.perf_counter()
    code, out = evalbot(argv, env)
    seconds = time.perf_counter() - started
    headline = next((line for line in out.splitlines() if line.startswith("### ")), "")
    return {"agent_runs": agent.CALLS, "judge_requests": len(fake.requests),  # type: ignore[attr-defined]
            "seconds": round(seconds, 2), "exit_code": code, "headline": headline}


def plan_wall(root: Path, repeat: int = 3) -> tuple[float, list[str]]:
    """``evalbot plan evals --base main`` in a fresh interpreter, as a workflow step runs it: best wall of
    ``repeat``, and what it printed."""
    best, printed = float("inf"), []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "evalbot.cli", "plan", "evals", "--base", "main"], cwd=root,
                              env=env, capture_output=True, text=True, check=True)
        best = min(best, time.perf_counter() - started)
        printed = done.stdout.splitlines()
    return best, printed


def plan_in_process(env: dict[str, str], repeat: int = 3) -> float:
    """The planning alone (the imports done): best wall of ``repeat`` in this process."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        code, _ = evalbot(["plan", "evals", "--base", "main"], env)
        best = min(best, time.perf_counter() - started)
        assert code == 0
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", type=int, default=12, help="eval sets in the repository (default 12)")
    parser.add_argument("--cases", type=int, default=10, help="cases per eval set (default 10)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeGemini(responder=lambda prompt, index, request: VALID) as fake:
        root = Path(tmp)
        names = make_repo(root, args.sets, args.cases)
        os.chdir(root)
        sys.path.insert(0, str(root))
        env = {"GOOGLE_API_KEY": "bench-key", "GOOGLE_GEMINI_BASE_URL": fake.url}
        code, _ = evalbot(["baseline", "evals", "--agent", "bench_agent:run", "--output", ".evalbot/baseline.json",
                           "--commit", "main"], env)
        assert code == 0, "the baseline could not be measured"
        _git(root, "init", "-q", "-b", "main")
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "main")
        _git(root, "checkout", "-q", "-b", "pr")
        changed = names[CHANGED]
        (root / "agents" / changed / "prompt.md").write_text(f"You are the better {changed} agent.\n",
                                                             encoding="utf-8")
        _git(root, "commit", "-q", "-am", f"improve {changed}")
        compare = ["compare", "evals", "--agent", "bench_agent:run", "--baseline", "main:.evalbot/baseline.json",
                   "--comment", str(root / "comment.md")]
        full = measure(compare, env, fake)
        full["headline"] = (root / "comment.md").read_text(encoding="utf-8").splitlines()[1]
        plan_s, planned = plan_wall(root)
        plan_own = plan_in_process(env)
        selective = measure([*compare, "--only-affected"], env, fake)
        selective["headline"] = (root / "comment.md").read_text(encoding="utf-8").splitlines()[1]
        os.chdir(ROOT)
    target = 1 / args.sets
    result = {
        "sets": args.sets, "cases_per_set": args.cases, "changed": f"agents/{changed}/",
        "planned": planned, "plan_wall_s": round(plan_s, 3), "plan_in_process_s": round(plan_own, 3), "full": full, "selective": selective,
        "agent_runs_ratio": round(selective["agent_runs"] / full["agent_runs"], 4),
        "judge_requests_ratio": round(selective["judge_requests"] / full["judge_requests"], 4),
        "target_ratio": round(target, 4),
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{args.sets} eval sets x {args.cases} cases; the pull request changes agents/{changed}/")
    print(f"plan: {plan_s:.2f} s wall in a fresh interpreter, imports included; {plan_own:.3f} s planning alone "
          f"(best of 3 each; target < 1 s) -> {', '.join(planned)}")
    print(f"{'':>12} {'agent runs':>11} {'judge requests':>15} {'seconds':>8}  exit")
    for label, row in (("full", full), ("selective", selective)):
        print(f"{label:>12} {row['agent_runs']:>11} {row['judge_requests']:>15} {row['seconds']:>8.2f}  "
              f"{row['exit_code']}")
    print(f"{'ratio':>12} {result['agent_runs_ratio']:>11.4f} {result['judge_requests_ratio']:>15.4f}"
          f"   (target 1/{args.sets} = {target:.4f})")
    print(f"full:      {full['headline']}")
    print(f"selective: {selective['headline']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
