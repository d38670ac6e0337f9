"""Builders of Report objects for comparison and rendering tests (no evaluation needed)."""

from __future__ import annotations

from typing import Any

from evalbot.compare.baseline import Baseline, build_baseline, dump_baseline, parse_baseline
from evalbot.results import (
    CaseResult,
    CriterionInfo,
    EvalSetReport,
    InvocationScore,
    MetricResult,
    Report,
    Status,
    ToolCallView,
    TurnView,
    case_status,
    summarize_cases,
    threshold_status,
    totals,
)

TRAJ = "tool_trajectory_avg_score"
RESP = "response_match_score"
JUDGE = "final_response_match_v2"


def votes_details(yes: int, no: int, rationale: str = "looks fine") -> dict[str, Any]:
    """Per-invocation details of a judged criterion with a vote split."""
    return {"votes": {"yes": yes, "no": no}, "rationale": rationale}


def metric(
    score: float | None,
    threshold: float | None = 1.0,
    *,
    status: Status | None = None,
    votes: list[tuple[int, int]] | None = None,
    rationale: str = "the judge's reasons",
    reason: str | None = None,
) -> MetricResult:
    """A criterion result with one invocation per vote pair (one invocation when no votes are given)."""
    st = status or threshold_status(score, threshold)
    per = [
        InvocationScore(
            score=(1.0 if y > n else 0.0), status=threshold_status(1.0 if y > n else 0.0, threshold),
            details=votes_details(y, n, rationale),
        )
        for y, n in (votes or [])
    ] or [InvocationScore(score=score, status=st, reason=reason)]
    return MetricResult(score=score, status=st, threshold=threshold, per_invocation=per, reason=reason)


def turn(
    user: str = "refund order A1",
    expected_calls: list[tuple[str, dict[str, Any]]] | None = None,
    actual_calls: list[tuple[str, dict[str, Any]]] | None = None,
    expected_response: str | None = "Done.",
    actual_response: str = "Done.",
) -> TurnView:
    """A turn view with tool calls given as (name, args) pairs."""
    exp = [ToolCallView(name=n, args=a) for n, a in (expected_calls or [])]
    act = [ToolCallView(name=n, args=a) for n, a in (actual_calls if actual_calls is not None else expected_calls or [])]
    return TurnView(
        user=user, expected_response=expected_response, actual_response=actual_response,
        expected_tool_calls=exp, actual_tool_calls=act,
    )


def case(
    eval_id: str, metrics: dict[str, MetricResult], *, fingerprint: str | None = None,
    turns: list[TurnView] | None = None, status: Status | None = None, reason: str | None = None,
) -> CaseResult:
    """A case whose status follows ADK's rule unless given."""
    return CaseResult(
        eval_id=eval_id,
        status=status or case_status([m.status for m in metrics.values()]),
        reason=reason,
        metrics=metrics,
        turns=turns if turns is not None else [turn()],
        fingerprint=fingerprint if fingerprint is not None else f"fp-{eval_id}",
    )


def criterion(name: str, threshold: float | None = 1.0, *, judged: bool = False, fingerprint: str | None = None,
              options: dict[str, Any] | None = None) -> CriterionInfo:
    """A configured criterion."""
    return CriterionInfo(name=name, threshold=threshold, judged=judged, fingerprint=fingerprint or f"cfg-{name}",
                         options=options or {})


def eval_set(eval_set_id: str, cases: list[CaseResult], criteria: list[CriterionInfo] | None = None,
             path: str | None = None) -> EvalSetReport:
    """An eval set report with summaries computed from the cases."""
    names = list(dict.fromkeys(n for c in cases for n in c.metrics))
    first = {n: next(c.metrics[n].threshold for c in cases if n in c.metrics) for n in names}
    infos = criteria if criteria is not None else [criterion(n, first[n], judged=n == JUDGE) for n in names]
    return EvalSetReport(
        eval_set_id=eval_set_id, path=path or f"evals/{eval_set_id}.evalset.json",
        status=case_status([c.status for c in cases]) if cases else "not_evaluated",
        criteria=infos, cases=cases, metrics=summarize_cases(cases),
    )


def report(*sets: EvalSetReport, usage: dict[str, Any] | None = None) -> Report:
    """A report over the given eval sets."""
    return Report(eval_sets=list(sets), totals=totals(sets), usage=usage)


def wobbly_main_run(*, wobbly: bool, steady: bool = True, judge_votes: tuple[int, int] = (5, 0)) -> Report:
    """One run of the ``orders`` eval set: ``wobbly`` and ``steady`` pass or fail as told (tool trajectory);
    ``judged`` carries a judge vote split."""
    yes, no = judge_votes
    return report(eval_set("orders", [
        case("wobbly", {TRAJ: metric(1.0 if wobbly else 0.0)}),
        case("steady", {TRAJ: metric(1.0 if steady else 0.0)}),
        case("judged", {JUDGE: metric(1.0 if yes > no else 0.0, 0.5, votes=[(yes, no)])}),
    ]))


def main_refreshes(runs: list[Report], previous: Baseline | None = None) -> Baseline:
    """Each run on main refreshes the baseline, continuing the previous one's histories (as push mode does)."""
    baseline = previous
    for i, run in enumerate(runs):
        baseline = build_baseline(run, commit=f"{i:040x}", created_at=f"2026-01-{i + 1:02d}T00:00:00+00:00",
                                  previous=baseline)
        baseline = parse_baseline(dump_baseline(baseline), "baseline.json")  # through the file, as on main
    assert baseline is not None
    return baseline
