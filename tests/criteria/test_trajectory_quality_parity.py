"""``rubric_based_multi_turn_trajectory_quality_v1`` against google-adk 2.13.0's own evaluator.

The goldens under tests/data/judge_parity/trajectory/ were recorded by scripts/make_judge_goldens.py
(``--set trajectory``) running ADK's ``LocalEvalService`` on the seeded scenarios of
scripts/trajectory_parity_scenarios.py with scripted judge answers. evalbot is fed the same answers through the real
judge clients and a loopback fake server: the case score and status, the last invocation's score, status and rubric
verdicts must equal ADK's (1e-9). The earlier invocations, NOT_EVALUATED in ADK, are ``informational`` in evalbot
(no verdict of their own; the README's differences table says why).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria import rubric_multi_turn_trajectory_quality as traj
from evalbot.judges.base import Sampling
from evalbot.results import MetricResult
from tests.fakes.fake_gemini import TaggedResponder
from tests.fakes.judged import Judged, build, case_input

FOLDER = Path(__file__).parent.parent / "data" / "judge_parity" / "trajectory"
GOLDENS = sorted(FOLDER.glob("*.json"))
TOL = 1e-9


def _close(a: float | None, b: float | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= TOL)


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_there_are_enough_goldens_and_they_cover_every_outcome() -> None:
    """At least 100 scenarios, recorded by google-adk 2.13.0, with passes, fails and not-evaluated cases, single- and
    multi-turn conversations, and rubrics from every scope ADK reads."""
    goldens = [_load(p) for p in GOLDENS]
    assert len(goldens) >= 100
    assert {g["adk_version"] for g in goldens} == {"2.13.0"}
    assert {g["adk"]["status"] for g in goldens} == {"passed", "failed", "not_evaluated"}
    assert {len(g["actual"]) for g in goldens} >= {1, 2, 3, 4}
    assert any("rubrics" in g["criterion"] for g in goldens)
    assert any("rubrics" in g["eval_case"] for g in goldens)
    assert any(g["actual"][-1].get("rubrics") for g in goldens)
    assert any(g["eval_case"]["conversation"][-1].get("rubrics") for g in goldens)


def _diffs(golden: dict[str, Any], result: MetricResult, requests: int, unrouted: list[str]) -> list[str]:
    """What differs between evalbot's ``result`` and ADK's recorded one (empty: equal)."""
    adk, out = golden["adk"], []
    if unrouted:
        out.append(f"{len(unrouted)} prompt(s) without a scripted answer")
    if result.status != adk["status"] or not _close(result.score, adk["score"]):
        out.append(f"case: ADK {adk['status']} {adk['score']!r}, evalbot {result.status} {result.score!r} "
                   f"({result.reason})")
    if len(result.per_invocation) != len(adk["per_invocation"]):
        return [*out, f"{len(result.per_invocation)} invocations, ADK {len(adk['per_invocation'])}"]
    *earlier, last = result.per_invocation
    for mine, theirs in zip(earlier, adk["per_invocation"][:-1], strict=True):
        if theirs["status"] != "not_evaluated" or theirs["score"] is not None:
            out.append(f"ADK scored an earlier invocation: {theirs}")
        if (mine.status, mine.score, mine.reason) != ("informational", None, traj.EARLIER_TURN):
            out.append(f"earlier invocation {mine.invocation_id}: {mine.status} {mine.score!r}")
    theirs = adk["per_invocation"][-1]
    if (last.status, last.invocation_id) != (theirs["status"], theirs["invocation_id"]) or not _close(
            last.score, theirs["score"]):
        out.append(f"last invocation: ADK {theirs['status']} {theirs['score']!r}, evalbot {last.status} "
                   f"{last.score!r} ({last.reason})")
    if theirs["rubric_scores"]:
        mine_rubrics = {r["rubric_id"]: r["score"] for r in (last.details or {}).get("rubrics", [])}
        if mine_rubrics != {r["rubric_id"]: r["score"] for r in theirs["rubric_scores"]}:
            out.append(f"rubric verdicts: ADK {theirs['rubric_scores']}, evalbot {mine_rubrics}")
    if requests > golden["adk_requests"]:
        out.append(f"{requests} judge requests, ADK made {golden['adk_requests']}")
    return out


@pytest.mark.parametrize("sampling", ["full", "sequential"])
def test_every_golden_scores_as_adk_scored_it(sampling: Sampling, judged_on: Judged) -> None:
    """Same answers, same verdicts as ADK on every golden (full sampling: ADK's; sequential: the same answers in the
    same order), never more judge requests than ADK made; one fake server for all goldens, reset between them."""
    goldens = [_load(p) for p in GOLDENS]
    failures: dict[str, list[str]] = {}
    with judged_on(None, sampling=sampling) as (fake, stack):

        async def check_all() -> None:  # one event loop for all goldens (a loop per golden costs 4x the time)
            for golden in goldens:
                fake.reset()
                responder = TaggedResponder(golden["answers"])
                fake.responder = responder
                criterion = build(traj.build, golden["metric"], golden["criterion"], stack)
                scored = criterion.evaluate(case_input(golden["eval_case"], golden["actual"]))
                result = scored if isinstance(scored, MetricResult) else await scored
                diffs = _diffs(golden, result, len(fake.requests), responder.unrouted)
                if diffs:
                    failures[golden["name"]] = diffs

        asyncio.run(check_all())
    assert not failures, json.dumps(failures, indent=1)[:4000]
