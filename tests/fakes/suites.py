"""A generated suite for the sharding tests and bench: eval sets of multi-turn cases and two recorded runs of them.

Cases have 1 to 4 turns, tool calls and responses; the "pr" run regresses, fixes and changes some of them so that a
comparison with the "main" run has something to say. A few cases carry a key ADK ignores (an eval set notice).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.fakes.builders import case, eval_set, inv

CONFIG = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.6}}


def _turn(set_no: int, case_no: int, turn: int, *, broken: bool) -> dict[str, Any]:
    city = f"city-{set_no}-{case_no}-{turn}"
    tool = "lookup_wrong" if broken else "lookup"
    return inv(f"what is the weather in {city}?", f"the weather in {city} is sunny and mild today",
               [(tool, {"city": city, "turn": turn})], invocation_id=f"t{turn}")


def turns_of(case_no: int) -> int:
    """Turns of case ``case_no`` (1 to 4, uneven so that the partition has to balance)."""
    return 1 + (case_no * 7) % 4


def write_suite(folder: Path, *, cases: int = 300, sets: int = 3) -> tuple[Path, Path, Path]:
    """Write ``sets`` eval sets holding ``cases`` cases in all under ``folder/evals`` and the runs of "main" and
    "pr" (``{eval_id: [invocations]}`` JSON keyed ``eval_set_id/eval_id``); returns (evals, main, pr)."""
    evals = folder / "evals"
    evals.mkdir(parents=True, exist_ok=True)
    (evals / "test_config.json").write_text(json.dumps(CONFIG), encoding="utf-8")
    main: dict[str, list[dict[str, Any]]] = {}
    pr: dict[str, list[dict[str, Any]]] = {}
    for s in range(sets):
        set_cases = []
        for c in range(s, cases, sets):
            n = turns_of(c)
            expected = [_turn(s, c, t, broken=False) for t in range(n)]
            extra = {"owner": "team-a"} if c % 50 == 7 else {}
            set_cases.append(case(f"case-{c:04d}", *expected, **extra))
            main[f"set-{s}/case-{c:04d}"] = [_turn(s, c, t, broken=c % 23 == 0) for t in range(n)]
            pr[f"set-{s}/case-{c:04d}"] = [_turn(s, c, t, broken=c % 17 == 0) for t in range(n)]
        (evals / f"set-{s}.evalset.json").write_text(json.dumps(eval_set(f"set-{s}", *set_cases)), encoding="utf-8")
    main_path, pr_path = folder / "main.json", folder / "pr.json"
    main_path.write_text(json.dumps(_plain(main)), encoding="utf-8")
    pr_path.write_text(json.dumps(_plain(pr)), encoding="utf-8")
    return evals, main_path, pr_path


def _plain(runs: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return {key.split("/", 1)[1]: invocations for key, invocations in runs.items()}
