"""Score produced runs and merge them into one report, pooling runs as ADK's AgentEvaluator does.

Each run is scored on its own (``scoring.score_run``); answered calls carry Vertex's failure flag 0.  With one run
that succeeded the case is exactly that run's result.  With several runs, each case × criterion gets the mean of the
per-invocation scores of every run pooled together (None excluded; the mean of run scores when a criterion gives no
per-invocation scores), compared with the threshold in the criterion's own direction (as ADK's AgentEvaluator infers
it; ``>=`` by default); ``details.runs`` keeps each run's score, status, reason and details.  A run whose agent
raised or timed out makes the case ``failed`` (malformed output: ``error``), as in AgentEvaluator; such a run is
scored only by ``failure``, ``latency`` and the informational metrics, with the failed call flagged (failure 1, no
duration).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalbot.criteria import INFORMATIONAL, build_criteria
from evalbot.criteria.base import BuildContext, CaseInput, CriteriaBuilder
from evalbot.errors import InputError
from evalbot.formats.actuals import Actuals
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.loaded import LoadedEvalSet
from evalbot.formats.vertex import VertexInvocation
from evalbot.results import (
    OUTCOME_CODES,
    CaseResult,
    EvalSetReport,
    InvocationScore,
    MetricResult,
    Report,
    Status,
    TurnView,
    case_status,
    mean,
    summarize_cases,
    totals,
)
from evalbot.runner.base import CaseRun, RunSet
from evalbot.scoring import problem, score_run, turn_views
from evalbot.turnpack import PackedTurns

RUN_LEVEL = ("failure", "latency")
"""Criteria that still score a run whose agent failed (with the failed call flagged), besides the informational ones."""


@dataclass
class ScoredRuns:
    """The merged report and each run's own report (in run order)."""

    report: Report
    per_run: list[Report]


def flagged(invocations: Sequence[Invocation], failed: Invocation | None = None) -> list[Invocation]:
    """Invocations marked with Vertex's failure flag (0 for answered calls, 1 for the call that failed)."""
    out: list[Invocation] = [VertexInvocation.model_validate({**dict(inv), "failure": False}) for inv in invocations]
    if failed is not None:
        out.append(VertexInvocation.model_validate({**dict(failed), "failure": True}))
    return out


def _actuals_for_run(runs: RunSet, run: int, base: Actuals | None) -> Actuals:
    actuals = Actuals(path=f"run {run} of the agent")
    if base is not None:
        actuals.entries.update({k: v for k, v in base.entries.items() if k not in runs.runs})
    ids = [eval_id for _, eval_id in runs.runs]
    for key, case_runs in runs.runs.items():
        for case_run in case_runs:
            if case_run.run == run and case_run.outcome == "ok":
                actuals.entries[key] = flagged(case_run.invocations)
                if ids.count(key[1]) == 1:  # found by eval_id alone too, as runs.of() finds the runs
                    actuals.entries[(None, key[1])] = actuals.entries[key]
    return actuals


def failed_run_metrics(case_run: CaseRun, case: EvalCase, loaded: LoadedEvalSet,
                       ctx: BuildContext | None, criteria: CriteriaBuilder = build_criteria) -> dict[str, MetricResult]:
    """A failed run is not scored (ADK: failed, no metrics) except by ``failure``, ``latency`` and the
    informational metrics, which see the answered calls plus the failed one flagged."""
    if case_run.failed_invocation is None and not case_run.invocations:
        return {}
    # only run-level and informational criteria score a failed run: never start a custom metric's worker for it
    context = replace(ctx or BuildContext(), custom_code_refused=(ctx.custom_code_refused if ctx else None)
                      or "a failed run is not scored by custom metrics")
    built, _ = criteria(loaded.config, context, loaded.path)
    wanted = [c for c in built if c.name in RUN_LEVEL or c.name in INFORMATIONAL]
    case_input = CaseInput(loaded.eval_set_id, case, flagged(case_run.invocations, case_run.failed_invocation))
    out: dict[str, MetricResult] = {}
    for criterion in wanted:
        try:
            result = criterion.evaluate(case_input)
        except Exception as exc:  # a criterion bug must not hide the run's failure
            result = MetricResult(status="error", threshold=criterion.threshold, reason=f"{type(exc).__name__}: {exc}")
        if isinstance(result, MetricResult):
            out[criterion.name] = result
    return out


def _higher_is_better(scores: Sequence[InvocationScore], threshold: float) -> bool:
    """A criterion's direction, read off its own per-invocation verdicts (``>=`` unless they all say ``<=``)."""
    directions = {
        (s.score > threshold) == (s.status == "passed")
        for s in scores
        if s.score is not None and s.score != threshold and s.status in ("passed", "failed")
    }
    return directions.pop() if len(directions) == 1 else True


def _status_without_score(statuses: Sequence[Status]) -> Status:
    for status in ("failed", "passed", "informational"):
        if status in statuses:
            return status
    return "not_evaluated"


def pool(results: Sequence[tuple[int, MetricResult]]) -> MetricResult:
    """One criterion's results over several runs: the pooled per-invocation mean against the threshold."""
    threshold = results[0][1].threshold
    per_inv = [s for _, r in results for s in r.per_invocation]
    score = mean(s.score for s in per_inv)
    if score is None:
        score = mean(r.score for _, r in results)
    statuses = [r.status for _, r in results]
    status: Status
    if "error" in statuses:
        status = "error"
    elif score is None:
        status = _status_without_score(statuses)
    elif threshold is None:
        status = "informational"
    elif _higher_is_better(per_inv, threshold):
        status = "passed" if score >= threshold else "failed"
    else:
        status = "passed" if score <= threshold else "failed"
    reason = next((r.reason for _, r in results if r.status == status and r.reason), None)
    runs: list[dict[str, Any]] = []
    for run, r in results:
        entry: dict[str, Any] = {"run": run, "score": r.score, "status": r.status}
        if r.reason:
            entry["reason"] = r.reason
        if r.details:
            entry["details"] = r.details
        runs.append(entry)
    details: dict[str, Any] = {"runs": runs}
    values = [v for s in per_inv if s.details for v in [s.details.get("value")]
              if isinstance(v, int | float) and not isinstance(v, bool)]
    if score is None and values:  # metrics whose value is not a [0, 1] score (seconds, counts) pool it the same way
        details["value"] = mean(values)
    return MetricResult(score=score, status=status, threshold=threshold, per_invocation=per_inv, reason=reason,
                        details=details)


def _merge_case(scored: list[CaseResult], case_runs: list[CaseRun], num_runs: int, loaded: LoadedEvalSet,
                order: list[str], ctx: BuildContext | None, criteria: CriteriaBuilder) -> CaseResult:
    first = scored[0]
    case = next((c.case for c in loaded.cases if c.eval_id == first.eval_id), None)
    if not case_runs or case is None:  # never run (the case did not load): scoring already says why
        return first
    if num_runs == 1 and case_runs[0].outcome == "ok":
        return first
    by_metric: dict[str, list[tuple[int, MetricResult]]] = {}
    turns: list[TurnView] = []
    statuses: list[Status] = []
    reasons: list[str] = []
    outcomes: list[str] = []
    for case_run in case_runs:
        result = scored[case_run.run - 1]
        outcomes.append(OUTCOME_CODES[result.status if case_run.outcome == "ok" else case_run.outcome])
        prefix = f"run {case_run.run}: " if num_runs > 1 else ""
        if case_run.outcome == "ok":
            # scoring leaves out the turns of a run that passed; the pooled case needs every run's turns
            turns.extend(result.turns or turn_views(case_run.invocations, case.conversation))
            metrics = result.metrics
            if result.status == "error" and not result.metrics:
                statuses.append("error")
                reasons.append(prefix + (result.reason or "could not be scored"))
        else:
            turns.extend(turn_views(case_run.invocations, case.conversation))
            metrics = failed_run_metrics(case_run, case, loaded, ctx, criteria)
            if case_run.outcome in ("failed", "error"):
                statuses.append(case_run.outcome)
            reasons.append(prefix + (case_run.reason or case_run.outcome))
        for name, metric in metrics.items():
            by_metric.setdefault(name, []).append((case_run.run, metric))
    names = [n for n in order if n in by_metric] + [n for n in by_metric if n not in order]
    merged = {n: by_metric[n][0][1] if num_runs == 1 else pool(by_metric[n]) for n in names}
    statuses.extend(m.status for m in merged.values())
    reasons.extend(f"{n}: {m.reason}" for n, m in merged.items() if m.status == "error")
    pooled = CaseResult(eval_id=first.eval_id, status=case_status(statuses) if statuses else "not_evaluated",
                        reason="; ".join(dict.fromkeys(reasons)) or None, metrics=merged,
                        fingerprint=first.fingerprint, content=first.content)
    pooled.turns = PackedTurns.of(turns)
    if num_runs > 1:
        pooled.runs = "".join(outcomes)
    return pooled


def _merge_set(reports: list[EvalSetReport], loaded: LoadedEvalSet, runs: RunSet,
               ctx: BuildContext | None, criteria: CriteriaBuilder) -> EvalSetReport:
    base = reports[0]
    order = [c.name for c in base.criteria]
    cases = [
        _merge_case([r.cases[i] for r in reports], runs.of(loaded.eval_set_id, case.eval_id), runs.num_runs, loaded,
                    order, ctx, criteria)
        for i, case in enumerate(base.cases)
    ]
    # the set-level errors keep the set in error; otherwise its status follows the merged cases (run 1's set was
    # "error" when the agent raised on a case, as its actual was missing, though the merged case is "failed")
    status: Status = "error" if base.errors else case_status([c.status for c in cases]) if cases else base.status
    return EvalSetReport(
        eval_set_id=base.eval_set_id, path=base.path, status=status, errors=base.errors, criteria=base.criteria,
        cases=cases, metrics=summarize_cases(cases),
    )


def pooled_notice(num_runs: int) -> str | None:
    """The report notice saying how runs were combined (None for a single run)."""
    if num_runs <= 1:
        return None
    return (f"the agent ran {num_runs} times per case; each criterion's score is the mean of its per-invocation "
            "scores pooled over the runs (as ADK's AgentEvaluator does); details.runs has each run's result")


def score_runs(
    eval_sets: Sequence[LoadedEvalSet],
    runs: RunSet,
    ctx: BuildContext | None = None,
    *,
    base: Actuals | None = None,
    errors: Sequence[InputError] = (),
    notices: Sequence[str] = (),
    criteria: CriteriaBuilder = build_criteria,
) -> ScoredRuns:
    """Score every run and merge them (``base`` supplies actuals for cases the runs do not cover)."""
    per_run = [score_run(eval_sets, _actuals_for_run(runs, r, base), ctx, criteria=criteria)
               for r in range(1, runs.num_runs + 1)]
    merged = [
        _merge_set([rep.eval_sets[i] for rep in per_run], loaded, runs, ctx, criteria)
        for i, loaded in enumerate(eval_sets)
    ]
    notice = pooled_notice(runs.num_runs)
    report = Report(
        eval_sets=merged,
        errors=[problem(e) for e in errors],
        notices=[*notices, *([notice] if notice else [])],
        totals=totals(merged),
        usage=per_run[-1].usage,  # the judge's ledger is run-wide: the last run's summary covers every run
    )
    return ScoredRuns(report, per_run)
