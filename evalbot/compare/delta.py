"""Compare a run with the baseline: per eval set × criterion deltas, per case what changed, and the gate verdict.

Pure: the current Report and the Baseline come in, a Comparison goes out. Only results measured on the same
definition are compared (same case fingerprint, same criterion fingerprint and judge model, same baseline schema);
anything else is "changed definition", never a regression.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from evalbot.compare.accept import Acceptance, ProposedBaseline, accept
from evalbot.compare.baseline import (
    DEFAULT_BASELINE_PATH,
    Baseline,
    BaselineCase,
    BaselineCriterion,
    BaselineEvalSet,
    BaselineMetric,
    create_command,
    criterion_entry,
    judge_model_of,
    past_trend,
    same_measure,
    unique_keys,
)
from evalbot.compare.efficiency import OLD_BASELINE_NOTE, EfficiencyDelta, efficiency_deltas, parse_budgets
from evalbot.compare.flaky import case_history
from evalbot.compare.gate import GatePolicy, decide
from evalbot.compare.judge_gaps import judge_gaps
from evalbot.compare.model import (
    CATEGORIES,
    AcceptedChange,
    AgentRuns,
    BaselineInfo,
    BaselineUpdate,
    CaseCategory,
    CaseComparison,
    Change,
    Comparison,
    CriterionRow,
    DeltaRow,
    EvalSetComparison,
    PackedDeltas,
    YardstickChange,
    delta_rows,
)
from evalbot.compare.passrule import apply_pass_rules
from evalbot.compare.reruns import FLIPPED, after_reruns, main_outcomes, settle_together
from evalbot.compare.stats import sign_test
from evalbot.compare.votes import invocation_votes, vote_noise
from evalbot.compare.yardstick import yardstick_changes
from evalbot.criteria import lower_is_better
from evalbot.formats.jsonio import gc_paused
from evalbot.formats.lookalike import confusable_with, escape_confusable, escape_lookalike, has_lookalike
from evalbot.formats.numbers import p_value_text
from evalbot.results import (
    CUSTOM_NOT_RUN,
    CUSTOM_PROCESS_GONE,
    CaseResult,
    CriterionInfo,
    EvalSetReport,
    MetricResult,
    Report,
    Status,
    mean,
)
from evalbot.turnpack import built

EPS = 1e-9
"""Score differences smaller than this are ties."""


def _comparable(info: CriterionInfo, base: BaselineCriterion | None) -> bool:
    return (
        base is not None
        and base.fingerprint == info.fingerprint
        and base.judge_model == judge_model_of(info)
    )


def _real(value: float | None) -> float | None:
    """A validated score as a float field holds it (pydantic's lax mode turns an int into a float)."""
    return value if value is None or type(value) is float else float(value)


def metric_delta(
    name: str, *, judged: bool, comparable: bool, base: BaselineMetric | None, cur: MetricResult | None,
    policy: GatePolicy, shared: dict[UnscoredKey, DeltaRow] | None = None,
) -> DeltaRow:
    """Classify one criterion's change on one case: the MetricDelta's values as a row (compare_case keeps a case's
    rows as its PackedDeltas). Every value comes from a validated model of the right type.

    ``shared``: the rows without scores or votes made so far (an informational criterion, one new or removed
    without a score), one tuple for each name, change and statuses: the cases of an eval set that have such a
    delta share it (a compared run of 33,334 cases has four per case). Nothing changes a delta once the comparison
    is made."""
    current_votes = invocation_votes(cur.per_invocation) if cur is not None and judged else None
    baseline_votes = base.votes if base else None
    change: Change = "unchanged"
    if cur is None:
        change = "removed"
    elif base is None:
        change = "new"
    elif not comparable:
        change = "changed_definition"
    elif cur.status in ("error", "not_evaluated", "informational"):
        change = cur.status
    elif base.status == "passed" and cur.status == "failed":
        change = "regressed"
    elif base.status in ("failed", "error") and cur.status == "passed":
        change = "fixed"
    elif cur.status == "failed":
        change = "still_failing"
    p_value = None
    if change in ("regressed", "fixed") and judged and policy.noise_aware:
        split, p_value = vote_noise(baseline_votes, current_votes)
        if split:
            change = "inconclusive"
    baseline_score, current_score = _real(base.score) if base else None, _real(cur.score) if cur else None
    baseline_status, current_status = base.status if base else None, cur.status if cur else None
    unscored = baseline_score is None and current_score is None and baseline_votes is None and current_votes is None
    key = (name, change, judged, baseline_status, current_status)
    unscored = unscored and p_value is None and shared is not None
    if unscored and shared is not None and (same := shared.get(key)) is not None:
        return same
    delta = DeltaRow(name, change, judged, baseline_score, current_score, baseline_status, current_status,
                     list(baseline_votes) if baseline_votes is not None else None, current_votes, p_value)
    if unscored and shared is not None:
        shared[key] = delta
    return delta


UnscoredKey = tuple[str, Change, bool, Status | None, Status | None]
"""A delta without scores or votes: criterion, change, judged, baseline and current status."""


def _category(cur: CaseResult, base: BaselineCase, deltas: Sequence[DeltaRow]) -> tuple[CaseCategory, str | None]:
    changes = {d.change for d in deltas}
    if cur.status == "error":
        return "error", cur.reason
    if "regressed" in changes:
        return "regressed", None
    if "inconclusive" in changes:
        return "inconclusive", "a judged verdict flipped on a split judge vote"
    if cur.status == "failed":
        failing = [d for d in deltas if d.current_status == "failed"]
        if base.status == "passed" and failing and all(d.change in ("changed_definition", "new") for d in failing):
            return "changed_definition", "fails only on criteria whose configuration changed"
        return "still_failing", None
    if cur.status == "passed" and base.status in ("failed", "error"):
        return "fixed", None
    if cur.status == "not_evaluated":
        return "not_evaluated", cur.reason
    return "unchanged", None


_UNCONFIGURED = (False, False)
"""A criterion the eval set does not configure (a case's leftover verdict): not judged, not comparable."""


def criteria_measures(
    criteria: Sequence[CriterionInfo], base_criteria: Mapping[str, BaselineCriterion]
) -> dict[str, tuple[bool, bool]]:
    """Per configured criterion of an eval set: whether it is judged, and whether it measures as the baseline's
    criterion of that name does (_comparable): the same for every case of the eval set."""
    infos = {c.name: c for c in criteria}
    return {name: (info.judged, _comparable(info, base_criteria.get(name))) for name, info in infos.items()}


def served_notices(current: Report, baseline: Baseline | None) -> list[str]:
    """``judge served gemini-X-002 on main, gemini-X-003 now (criteria)``: per judged criterion both runs' answers
    named, where the models the service said answered differ (a provider-side swap under the same configured name,
    or with it); grouped by the change. Where the configured model changed too, that is a yardstick change too
    (``judge_model``: blocking under ``yardstick_changes: block``) and the notice says so."""
    if baseline is None or not baseline.judge_served or current.usage is None:
        return []
    groups: dict[tuple[str, str, str], list[str]] = {}
    for name, row in current.usage.per_criterion.items():
        main = baseline.judge_served.get(name)
        if main is None or not row.served or not main.served or sorted(main.served) == sorted(row.served):
            continue
        configured = "" if main.configured == row.models else (
            f"; configured {', '.join(main.configured) or '?'} → {', '.join(row.models) or '?'}: a yardstick change")
        groups.setdefault((", ".join(main.served), ", ".join(row.served), configured), []).append(name)
    return [f"judge served {old} on main, {new} now ({', '.join(names[:10])}"
            f"{f' and {len(names) - 10} more' if len(names) > 10 else ''}{configured})"
            for (old, new, configured), names in groups.items()]


def compare_case(
    key: str, cur: CaseResult | None, base: BaselineCase | None, *, criteria: Sequence[CriterionInfo],
    base_criteria: dict[str, BaselineCriterion], policy: GatePolicy, rule: str | None = None,
    shared: dict[UnscoredKey, DeltaRow] | None = None, measures: Mapping[str, tuple[bool, bool]] | None = None,
) -> CaseComparison:
    """Classify one case (present in the run, the baseline, or both); ``rule``: the eval set's ``pass_rule``;
    ``shared``: see metric_delta; ``measures``: criteria_measures(criteria, base_criteria), made once per eval set
    by a caller comparing many cases."""
    if cur is None:
        return CaseComparison(eval_id=key, category="removed", baseline_status=base.status if base else None)
    if base is None:
        category: CaseCategory = "error" if cur.status == "error" else "new"
        return CaseComparison(eval_id=key, category=category, reason=cur.reason, current=cur,
                              runs=agent_runs(cur, rule))
    if cur.fingerprint is None or base.fingerprint != cur.fingerprint:
        if cur.status == "error":
            return CaseComparison(eval_id=key, category="error", reason=cur.reason, baseline_status=base.status,
                                  current=cur)
        return CaseComparison(
            eval_id=key, category="changed_definition", reason="the case's expected conversation or scenario changed",
            baseline_status=base.status, current=cur,
        )
    if measures is None:
        measures = criteria_measures(criteria, base_criteria)
    cur_metrics, base_metrics = cur.metrics, base.metrics
    deltas = []
    names = cur_metrics if cur_metrics.keys() == base_metrics.keys() else dict.fromkeys([*cur_metrics, *base_metrics])
    for name in names:  # the same criteria on both sides (the common case): the run's order, as fromkeys gives it
        judged, comparable = measures.get(name, _UNCONFIGURED)
        deltas.append(metric_delta(name, judged=judged, comparable=comparable, base=base_metrics.get(name),
                                   cur=cur_metrics.get(name), policy=policy, shared=shared))
    category, reason = _category(cur, base, deltas)
    if rule is not None and category == "still_failing" and base.status == "passed":
        category, reason = "regressed", f"failed the pass rule {rule} (no criterion alone fell below it)"
    history = case_history(base) if category == "regressed" else None
    if history is not None and history.runs < 2:
        history = None  # one recorded run says nothing about flakiness
    if history is not None and history.flaky:
        category = "flaky"
        reason = ("regressed, but it also oscillated on main within the baseline's history (flaky): "
                  + ("blocking because block_flaky is set" if policy.block_flaky else "not blocking (block_flaky: false)"))
    runs = agent_runs(cur, rule)
    if cur.reruns and category in FLIPPED and runs is not None:
        category, reason, p_value = after_reruns(cur, base, policy.alpha, policy.block_inconclusive)
        runs = runs.model_copy(update={"main": main_outcomes(base), "p_value": p_value})
    return built(CaseComparison, {  # validated parts only (see metric_delta); one per case measured on both sides
        "eval_id": key, "category": category, "reason": reason, "baseline_status": base.status, "current": cur,
        "metrics": PackedDeltas(tuple(deltas)), "history": history, "runs": runs, "main_outcomes": base.history,
    })


def agent_runs(case: CaseResult | None, rule: str | None) -> AgentRuns | None:
    """What the comment shows of a case's runs (None: it ran once and was not rerun)."""
    if case is None or case.runs is None:
        return None
    return AgentRuns(outcomes=case.runs, rule=rule, reruns=case.reruns)


def criterion_row(
    info: CriterionInfo, es: EvalSetReport, base_set: BaselineEvalSet | None, pairs: Sequence[tuple[float, float]],
    policy: GatePolicy, scored: int,
) -> CriterionRow:
    """One criterion's line of an eval set table (``scored``: the eval set's cases with a score on it)."""
    summary = es.metrics.get(info.name)
    base = base_set.criteria.get(info.name) if base_set else None
    row = CriterionRow(
        criterion=info.name,
        change="new",
        judged=info.judged,
        threshold=info.threshold,
        lower_is_better=lower_is_better(info.name, info.custom),
        baseline_mean=base.mean if base else None,
        current_mean=summary.mean if summary else None,
        scored=scored,
        passed=summary.passed if summary else 0,
        failed=summary.failed if summary else 0,
    )
    if base is None:
        return row
    if same_measure(base, criterion_entry(info, None, None, None)):
        row.trend = past_trend(base, None, None)
    if not _comparable(info, base):
        row.change = "changed_definition"
        return row
    row.paired = len(pairs)
    if not pairs:
        row.change = "not_evaluated"
        return row
    row.delta = mean(c - b for b, c in pairs)
    row.up = sum(1 for b, c in pairs if c > b + EPS)
    row.down = sum(1 for b, c in pairs if c < b - EPS)
    row.p_value = sign_test(row.up, row.down)
    significant = not policy.noise_aware or row.p_value < policy.alpha
    delta = -(row.delta or 0.0) if row.lower_is_better else row.delta or 0.0  # > 0: better
    if info.threshold is None:
        row.change = "informational"
    elif delta < -policy.tolerance - EPS:
        row.change = "regressed" if significant else "inconclusive"
    elif delta > policy.tolerance + EPS and significant:
        row.change = "improved"
    else:
        row.change = "unchanged"
    return row


def _pairs(cases: Sequence[CaseComparison]) -> dict[str, list[tuple[float, float]]]:
    """Per criterion, the (baseline, current) scores of the cases measured on both sides with the same definition,
    in case order: read from the cases' deltas (one pass, not a baseline lookup per criterion and case)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for case in cases:
        if case.current is None or case.category in _UNPAIRED:
            continue
        for d in delta_rows(case.metrics):
            if d.baseline_score is not None and d.current_score is not None:
                out.setdefault(d.criterion, []).append((d.baseline_score, d.current_score))
    return out


def compare_eval_set(
    key: str, es: EvalSetReport | None, base_set: BaselineEvalSet | None, policy: GatePolicy, *, compatible: bool
) -> EvalSetComparison:
    """Compare one eval set (``compatible`` False: the baseline's schema is unknown, so nothing is comparable)."""
    if es is None:
        assert base_set is not None
        removed = [CaseComparison(eval_id=k, category="removed", baseline_status=c.status)
                   for k, c in base_set.cases.items()]
        rows = [CriterionRow(criterion=n, change="removed", judged=c.judged, threshold=c.threshold,
                             baseline_mean=c.mean) for n, c in base_set.criteria.items()]
        return EvalSetComparison(key=key, eval_set_id=key, path=base_set.path, in_current=False, rows=rows,
                                 cases=removed)
    usable = base_set if compatible else None
    keys = unique_keys([c.eval_id for c in es.cases])
    base_cases: Mapping[str, BaselineCase] = usable.cases if usable else {}
    cases = []
    shared: dict[UnscoredKey, DeltaRow] = {}
    measures = criteria_measures(es.criteria, usable.criteria if usable else {})
    for case_key, case in zip(keys, es.cases, strict=True):
        base_case = base_cases.get(case_key)  # one at a time: a parsed baseline builds a case on each access
        if not compatible:
            cases.append(CaseComparison(
                eval_id=case_key, category="error" if case.status == "error" else "changed_definition",
                reason=case.reason if case.status == "error" else "the baseline was written by another schema version",
                current=case,
            ))
            continue
        cases.append(compare_case(case_key, case, base_case, criteria=es.criteria,
                                  base_criteria=usable.criteria if usable else {}, policy=policy, rule=es.pass_rule,
                                  shared=shared, measures=measures))
    ran = set(keys)
    cases += [CaseComparison(eval_id=k, category="removed", baseline_status=base_cases[k].status) for k in base_cases
              if k not in ran]
    pairs = _pairs(cases) if usable else {}
    scored = Counter(name for c in es.cases for name, m in c.metrics.items() if m.score is not None)
    rows = [criterion_row(info, es, usable, pairs.get(info.name, []), policy, scored[info.name])
            for info in es.criteria]
    _count_case_outcomes(rows, cases)
    if usable:
        current_names = {c.name for c in es.criteria}
        rows += [CriterionRow(criterion=n, change="removed", judged=c.judged, threshold=c.threshold,
                              baseline_mean=c.mean) for n, c in usable.criteria.items() if n not in current_names]
    return EvalSetComparison(
        key=key, eval_set_id=es.eval_set_id, path=es.path, status=es.status, in_baseline=base_set is not None,
        config=es.config, notices=es.notices, errors=es.errors, rows=rows, cases=cases,
    )


def _invalid(report: Report) -> list[str]:
    out = [f"{p.path or 'input'}{':' + p.pointer if p.pointer else ''}: {p.message}" for p in report.errors]
    for es in report.eval_sets:
        out += [f"{p.path or es.path}{':' + p.pointer if p.pointer else ''}: {p.message}" for p in es.errors]
        errors = [c for c in es.cases if c.status == "error" and not _unmeasured_only(c)]
        if errors:
            out.append(f"{es.eval_set_id}: {len(errors)} case(s) could not be evaluated (see their reasons)")
    return out


def _count_case_outcomes(rows: list[CriterionRow], cases: list[CaseComparison]) -> None:
    """Each row's counts of the cases that changed on its criterion, by the case's outcome as the headline counts
    it: a regression on a flaky or accepted case counts as flaky or accepted, not as regressed."""
    flips: Counter[tuple[str, str]] = Counter()
    for case in cases:
        for d in delta_rows(case.metrics):
            if d.change in ("regressed", "inconclusive", "fixed"):
                outcome = case.category if case.category in ("flaky", "accepted", "inconclusive") \
                    and d.change != "fixed" else d.change
                flips[d.criterion, outcome] += 1
    for row in rows:
        row.regressed_cases = flips[row.criterion, "regressed"]
        row.fixed_cases = flips[row.criterion, "fixed"]
        row.inconclusive_cases = flips[row.criterion, "inconclusive"]
        row.flaky_cases = flips[row.criterion, "flaky"]
        row.accepted_cases = flips[row.criterion, "accepted"]


def _unmeasured_only(case: CaseResult) -> bool:
    """The case's errors are all custom metric processes that died or hung: not measured, not invalid input."""
    broken = [m for m in case.metrics.values() if m.status == "error"]
    return bool(broken) and all((m.reason or "").startswith(CUSTOM_PROCESS_GONE) for m in broken)


def _gate_inputs(sets: Sequence[EvalSetComparison]) -> tuple[list[str], list[str], list[str]]:
    regressions: list[str] = []
    inconclusive: list[str] = []
    flaky: list[str] = []
    for es in sets:
        n = sum(1 for c in es.cases if c.category == "regressed")
        if n:
            regressions.append(f"{es.eval_set_id}: {n} case(s) regressed")
        f = sum(1 for c in es.cases if c.category == "flaky")
        if f:
            flaky.append(f"{es.eval_set_id}: {f} case(s) regressed that also changed outcome on main (flaky)")
        rerun = sum(1 for c in es.cases if c.category == "inconclusive" and c.runs is not None and c.runs.reruns)
        m = sum(1 for c in es.cases if c.category == "inconclusive") - rerun
        if m:
            inconclusive.append(f"{es.eval_set_id}: {m} case(s) flipped on a split judge vote")
        if rerun:
            inconclusive.append(f"{es.eval_set_id}: {rerun} case(s) failed, but their reruns show no significant "
                                "drop against main")
        for row in es.rows:
            if row.change in ("regressed", "inconclusive"):
                text = f"{es.eval_set_id}: {row.criterion} mean {row.delta or 0.0:+.3f} (sign test p = {row.p_value})"
                (regressions if row.change == "regressed" else inconclusive).append(text)
    return regressions, inconclusive, flaky


def _alerts(current: Report, policy: GatePolicy, baseline_error: str | None,
            missing_note: str | None, credentials_expected: bool = False) -> tuple[list[str], list[str]]:
    """Headline alerts, and the judge failures that make the gate an ``error`` (``judge_failures: block``); judged
    verdicts without a judge are such a failure where the credentials were ``credentials_expected``."""
    alerts: list[str] = []
    blocking: list[str] = []
    if baseline_error:
        alerts.append(f"baseline unreadable: {baseline_error}")
    elif missing_note:
        alerts.append(missing_note)
    gaps = judge_gaps(current)
    failed = gaps.failure_message()
    if failed:
        if policy.judge_failures == "block":
            blocking.append(failed)
            alerts.append(f"{failed} (judge-failures: block)")
        else:
            alerts.append(f"{failed} (judge-failures: warn; not blocking, so regressions on these may be missed)")
    no_judge = gaps.no_judge_message(expected=credentials_expected)
    if no_judge and not credentials_expected:
        alerts.append(f"{no_judge} (not blocking; regressions on these criteria cannot be detected)")
    elif no_judge and policy.judge_failures == "block":
        blocking.append(no_judge)
        alerts.append(f"{no_judge} (judge-failures: block)")
    elif no_judge:
        alerts.append(f"{no_judge} (judge-failures: warn; not blocking, so regressions on these may be missed)")
    not_run = custom_not_run(current)
    if not_run:
        blocking.append(not_run)
        alerts.append(not_run)
    return alerts, blocking


def custom_not_run(report: Report) -> str | None:
    """The headline for custom metrics this run was not allowed to execute (not measured, so the gate does not
    pass), or None."""
    reasons: dict[str, int] = {}
    for es in report.eval_sets:
        for case in es.cases:
            for name, metric in case.metrics.items():
                reason = metric.reason or ""
                if (metric.status == "not_evaluated" and reason.startswith(CUSTOM_NOT_RUN)) or (
                        metric.status == "error" and reason.startswith(CUSTOM_PROCESS_GONE)):
                    key = f"{name}: {reason.removeprefix(CUSTOM_PROCESS_GONE)}"
                    reasons[key] = reasons.get(key, 0) + 1
    if not reasons:
        return None
    total = sum(reasons.values())
    first = next(iter(reasons))
    first = first if len(first) <= 400 else first[:399] + "…"
    return f"custom metric not measured on {total} case(s) — {first}"


@gc_paused()  # millions of acyclic objects (deltas, case comparisons): no collector passes over the heap meanwhile
def compare(
    *, current: Report, baseline: Baseline | None, policy: GatePolicy, baseline_source: str = DEFAULT_BASELINE_PATH,
    baseline_error: str | None = None, create: str | None = None, proposed: ProposedBaseline | None = None,
    credentials_expected: bool = False, baseline_required: bool = False, similar: Sequence[str] = (),
    budget_changes: Sequence[tuple[str, str]] = (), pr_budgets: Mapping[str, str] | None = None,
) -> Comparison:
    """Compare ``current`` with ``baseline`` (None: absolute scores only) and decide the gate.

    ``baseline_error`` says why a baseline that exists could not be read (the gate is then ``error`` under
    ``fail_on: regression``); ``create`` is the exact command that makes the baseline for this run's inputs.
    ``proposed``: the pull request's own baseline file. The entries it changes that this run confirms are accepted
    (:mod:`evalbot.compare.accept`): the run is compared with them, and a regression or yardstick change they
    record is shown as accepted, not blocking; an entry the run contradicts blocks. Every change to what is
    measured (:mod:`evalbot.compare.yardstick`) is listed; unaccepted ones block under ``yardstick_changes: block``.
    ``credentials_expected``: the run should have had the judge's credentials (the Action anywhere but a fork's first
    stage), so judged verdicts without a judge are a judge failure (``judge_failures``), not a warning.
    ``baseline_required``: a pull request or merge queue, where no baseline at the base commit blocks (with the command
    that creates it and the ``similar`` files found there: "did you mean") unless ``proposed`` creates it.
    The policy's ``pass_rule`` decides each case from its runs first (in ``current``).
    ``budget_changes``: (name, change) for each budget of the base commit's policy the pull request removes or
    loosens (:func:`evalbot.compare.efficiency.loosened_budgets`): yardstick changes, blocking by default, accepted
    when ``proposed`` records ``pr_budgets`` (the PR's own config's budgets; None: unknown, nothing accepted); the
    accepted budgets are then the ones applied.
    """
    apply_pass_rules(current, policy.pass_rule)
    note = command = None
    info = None
    compatible = True
    path = baseline_source.rpartition(":")[2] or DEFAULT_BASELINE_PATH
    missing_note = missing_baseline = None
    if baseline is None and baseline_error:
        note = (f"The baseline at {baseline_source} could not be read (see above); showing absolute scores, and "
                "regressions cannot be detected. Re-run the job once the cause is fixed.")
    elif baseline is None and proposed is not None and proposed.baseline is not None:
        note = (f"No baseline at {baseline_source}: this PR creates {proposed.path} (baseline created by this PR), "
                "checked against this run; showing absolute scores. Later pull requests are compared with it.")
    elif baseline is None:
        command = create or create_command(path)
        guess = f" (did you mean {', '.join(similar)}?)" if similar else ""
        note = (f"No baseline at {baseline_source}{guess}; showing absolute scores. To compare pull requests with "
                f"main, create one on main and commit it: {command}")
        missing_note = (f"no baseline at {baseline_source}{guess}: regressions cannot be detected until one is "
                        f"committed on main; create it there with: {command}")
        if baseline_required:
            missing_baseline = f"no baseline at {baseline_source}{guess}"
    else:
        info = BaselineInfo(
            source=baseline_source, commit=baseline.commit, created_at=baseline.created_at,
            evalbot_version=baseline.evalbot_version, schema_version=baseline.schema_version,
        )
        compatible = baseline.compatible
        if not compatible:
            command = create_command(path)
            note = (
                f"The baseline at {baseline_source} uses schema version {baseline.schema_version}, this evalbot "
                "reads version 1: every case is shown as a changed definition. Refresh it on main: " + command
            )
        elif baseline.evalbot_version != current.evalbot_version:
            note = (
                f"The baseline was made with evalbot {baseline.evalbot_version}, this run uses "
                f"{current.evalbot_version}; refresh it if scores moved for that reason."
            )
    acceptance = update = None
    if proposed is not None and proposed.error is not None:
        update = BaselineUpdate(path=proposed.path, matches=False, changed=1,
                                differences=[f"the file cannot be used: {proposed.error}"])
    elif proposed is not None and proposed.baseline is not None:
        acceptance = accept(baseline if compatible else None, proposed.baseline, current, policy, proposed.path,
                            budgets=pr_budgets)
        update = acceptance.update
    ruler = baseline if acceptance is None or baseline is None or not compatible else acceptance.effective
    keys = unique_keys([es.eval_set_id for es in current.eval_sets])
    base_sets = dict(ruler.eval_sets) if ruler is not None and compatible else {}
    sets = [
        compare_eval_set(key, es, base_sets.pop(key, None), policy, compatible=compatible)
        for key, es in zip(keys, current.eval_sets, strict=True)
    ]
    invalid = _invalid(current)
    # With input the run could not use (a mistyped eval set path, an unreadable file), main's eval sets it lacks are
    # not "removed": that would bury the real error under a table of removals. The verdict is `invalid` (exit 2).
    unrun = sorted(base_sets) if invalid else []
    if not unrun:
        sets += [compare_eval_set(key, None, bs, policy, compatible=True) for key, bs in base_sets.items()]
    settle_together([case for es in sets for case in es.cases], policy.alpha, policy.block_inconclusive)
    for es in sets:
        _count_case_outcomes(es.rows, es.cases)
    yardstick = yardstick_changes(baseline, current) if baseline is not None else []
    if invalid:  # nor are the cases of an eval set the run could not read (its error is the headline's)
        unread = set(unrun) | {key for key, es in zip(keys, current.eval_sets, strict=True) if es.errors}
        yardstick = [y for y in yardstick if y.eval_set_id not in unread]
    yardstick += [YardstickChange(kind="budget_loosened", eval_set_id="budgets", criterion=name, what=what)
                  for name, what in budget_changes]
    if acceptance is not None and baseline is not None and compatible:
        infos = {key: es.criteria for key, es in zip(keys, current.eval_sets, strict=True)}
        rules = {key: es.pass_rule for key, es in zip(keys, current.eval_sets, strict=True)}
        _mark_accepted(sets, infos, yardstick, acceptance, baseline, policy, rules)
        for es in sets:
            _count_case_outcomes(es.rows, es.cases)
    budgets = _budgets_in_force(policy.budgets, yardstick, acceptance)
    accepted = accepted_changes(sets, yardstick)
    counts: dict[str, int] = {category: 0 for category in CATEGORIES}
    for es in sets:
        for case in es.cases:
            counts[case.category] += 1
    counts["failing"] = current.totals.failed
    counts["yardstick"] = sum(1 for y in yardstick if not y.accepted)
    counts["accepted_changes"] = counts["accepted"] + sum(1 for y in yardstick if y.accepted)
    regressions, inconclusive, flaky = _gate_inputs(sets)
    alerts, unmeasured = _alerts(current, policy, baseline_error, missing_note, credentials_expected)
    efficiency = _efficiency(sets, current, baseline if compatible else None,
                             policy.model_copy(update={"budgets": budgets}))
    over_budget, not_measured = budget_verdicts(efficiency)
    alerts += not_measured
    unmeasured += not_measured
    gate = decide(
        policy,
        invalid=invalid,
        failing_cases=current.totals.failed,
        regressions=regressions,
        inconclusive=inconclusive,
        flaky=flaky,
        have_baseline=baseline is not None,
        unmeasured=unmeasured,
        baseline_unreadable=f"baseline unreadable: {baseline_error}" if baseline_error else None,
        baseline_missing=missing_baseline,
        over_budget=over_budget,
        yardstick=[f"{y.subject}: {y.what}" for y in yardstick if y.loosens and not y.accepted],
        update_conflicts=list(update.differences) + ([f"… and {update.more} more"] if update.more else [])
        if update is not None else [],
    )
    return Comparison(
        policy=policy, baseline=info, baseline_source=baseline_source, create_command=command, baseline_note=note,
        baseline_error=baseline_error, alerts=alerts, eval_sets=sets, counts=counts, gate=gate, report=current,
        baseline_update=update, invisible_ids=invisible_ids(sets, baseline), yardstick=yardstick,
        baseline_usage=baseline.usage if baseline is not None and compatible else None, efficiency=efficiency,
        baseline_agent_usage=baseline.agent_usage if baseline is not None and compatible else None,
        served_notices=served_notices(current, baseline if compatible else None),
        efficiency_note=OLD_BASELINE_NOTE if baseline is not None and compatible and baseline.efficiency is None
        else None,
        notes=([_accepted_budgets_note(policy.budgets, budgets)] if budgets != policy.budgets else [])
        + ([_unrun_note(unrun)] if unrun else []),
        accepted=accepted,
    )


ACCEPTED_KINDS: dict[str, str] = {
    "eval_set_removed": "removed eval set", "eval_set_renamed": "renamed eval set", "eval_set_moved": "moved eval set",
    "case_removed": "removed case", "case_renamed": "renamed case", "case_definition": "definition change",
    "criterion_removed": "removed criterion", "threshold_lowered": "lowered threshold",
    "threshold_raised": "raised threshold", "criterion_changed": "criterion change",
    "custom_metric": "custom metric change", "judge_model": "judge model change", "pass_rule": "pass rule change",
    "budget_loosened": "budget change",
}
"""How the headline names an accepted yardstick change."""


def accepted_changes(sets: Sequence[EvalSetComparison], yardstick: Sequence[YardstickChange]) -> list[AcceptedChange]:
    """The changes the PR's baseline update accepts: each accepted regression (a case that regressed, flaked or
    flipped on a split vote against main), then each accepted yardstick change, by kind."""
    out = [AcceptedChange(kind="split-vote flip" if (case.reason or "").startswith("inconclusive") else "regression",
                          subject=f"{es.eval_set_id}/{case.eval_id}")
           for es in sets for case in es.cases if case.category == "accepted"]
    out += [AcceptedChange(kind=ACCEPTED_KINDS.get(y.kind, y.kind), subject=y.subject.replace(" / ", "/"))
            for y in yardstick if y.accepted]
    return out


def _unrun_note(keys: Sequence[str]) -> str:
    """Why main's eval sets that this run lacks are not listed as removed."""
    shown = ", ".join(keys[:5]) + (f" and {len(keys) - 5} more" if len(keys) > 5 else "")
    return (f"{len(keys)} eval set(s) of the baseline ({shown}) not compared: this run's input is invalid, "
            "so whether they were removed is not known; fix the input and run again")


def _accepted_budgets_note(base: Mapping[str, str], applied: Mapping[str, str]) -> str:
    """Which budgets this run applies instead of the base commit's (accepted by the PR's baseline update)."""
    changed = [f"{name} {applied.get(name, 'none')} (was {text})" for name, text in base.items()
               if applied.get(name) != text]
    return (f"The budgets this PR's baseline update accepts apply to this run: {', '.join(changed)}; the base "
            "commit's other budgets apply unchanged.")


_UNPAIRED = ("new", "removed", "changed_definition", "error")


def _efficiency(
    sets: Sequence[EvalSetComparison], current: Report, baseline: Baseline | None, policy: GatePolicy
) -> list[EfficiencyDelta]:
    """Every eval set's efficiency against main (nothing without a usable baseline: there is no main to compare
    with, and the headline already says so)."""
    if baseline is None:
        return []
    reports = dict(zip(unique_keys([es.eval_set_id for es in current.eval_sets]), current.eval_sets, strict=True))
    budgets = parse_budgets(policy.budgets)
    out: list[EfficiencyDelta] = []
    for es in sets:
        report = reports.get(es.key)
        if report is None or not es.in_baseline:
            continue  # removed: a yardstick change, its cost is not this run's; new: main has nothing to compare
        paired = [(case.eval_id, i) for i, case in enumerate(es.cases[:len(report.cases)])
                  if case.category not in _UNPAIRED and case.current is not None]
        base = baseline.efficiency.get(es.key) if baseline.efficiency is not None else None
        out += efficiency_deltas(es.eval_set_id, report, base, paired, budgets, alpha=policy.alpha,
                                 old_baseline=baseline.efficiency is None)
    return out


def _budgets_in_force(
    base: Mapping[str, str], yardstick: Sequence[YardstickChange], acceptance: Acceptance | None
) -> dict[str, str]:
    """The base commit's budgets, except those whose removal or loosening the PR's baseline update accepts (marked
    accepted in ``yardstick``): the PR's value for those, or none when the PR removes it."""
    out = dict(base)
    accepted = acceptance.budgets if acceptance is not None else None
    for y in yardstick:
        if y.kind != "budget_loosened" or accepted is None or y.criterion is None:
            continue
        y.accepted = True
        if y.criterion in accepted:
            out[y.criterion] = accepted[y.criterion]
        else:
            out.pop(y.criterion, None)
    return out


def budget_verdicts(rows: Sequence[EfficiencyDelta]) -> tuple[list[str], list[str]]:
    """The gate's reasons: budgets exceeded significantly (``shop: tokens +43% over the +20% budget (p < 0.001,
    n = 300)``), and one line per budget that could not be measured, naming its eval sets and why."""
    over = [f"{row.eval_set_id}: {row.label} {row.excess} ({p_value_text(row.budget_p_value)}, n = {row.paired})"
            for row in rows if row.status == "over_budget"]
    missing: dict[tuple[str, str], list[str]] = {}  # (eval sets, why) -> budgets
    by_budget: dict[str, list[EfficiencyDelta]] = {}
    for row in rows:
        if row.status == "not_measured":
            by_budget.setdefault(f"{row.quantity}{'_p95' if row.stat == 'p95' else ''} {row.budget}", []).append(row)
    for budget, where in by_budget.items():
        names = ", ".join(r.eval_set_id for r in where[:5]) + (f" and {len(where) - 5} more" if len(where) > 5 else "")
        missing.setdefault((names, where[0].reason or ""), []).append(budget)
    not_measured = [f"budget{'s' if len(budgets) > 1 else ''} {', '.join(budgets)} not measured on {names}: {why}"
                    for (names, why), budgets in missing.items()]
    return over, not_measured


def _mark_accepted(
    sets: Sequence[EvalSetComparison], criteria: dict[str, list[CriterionInfo]], yardstick: Sequence[YardstickChange],
    acceptance: Acceptance, main: Baseline, policy: GatePolicy, rules: dict[str, str | None],
) -> None:
    """Cases whose entry the PR's update changes (and this run confirms) are shown as they compare with main's entry:
    a regression becomes ``accepted``, a fix stays ``fixed``; yardstick changes whose entries the PR's update records
    are marked accepted."""
    for es in sets:
        base_set = main.eval_sets.get(es.key)
        for i, case in enumerate(es.cases):
            if (es.key, case.eval_id) not in acceptance.cases or case.current is None or base_set is None:
                continue
            against_main = compare_case(case.eval_id, case.current, base_set.cases.get(case.eval_id),
                                        criteria=criteria.get(es.key, []), base_criteria=base_set.criteria,
                                        policy=policy, rule=rules.get(es.key))
            if against_main.category in ("regressed", "flaky", "inconclusive"):
                was = against_main.category
                against_main.category = "accepted"
                against_main.reason = f"{was} against main; accepted by this PR's baseline update"
            es.cases[i] = against_main  # what changed since main (fixed, still failing...), confirmed by the update
    for y in yardstick:
        if y.kind == "budget_loosened":
            continue  # the policy's budgets, not an eval set's entries: _budgets_in_force
        if y.case is not None:
            y.accepted = (y.eval_set_id, y.case) in acceptance.cases
        elif y.criterion is not None:
            y.accepted = (y.eval_set_id, y.criterion) in acceptance.criteria
        else:
            y.accepted = y.eval_set_id in acceptance.sets


def invisible_ids(sets: Sequence[EvalSetComparison], main: Baseline | None = None) -> list[str]:
    """Eval set and case ids (escaped, ``set / case``) with invisible, default-ignorable, bidi-control, mixed-script or
    compatibility look-alike characters, or whose confusable skeleton is another eval set's or (in the eval set)
    another case's, in this run or in ``main``'s baseline (a case renamed to a look-alike and accepted by the PR's
    baseline update is no longer among the compared cases): ``set / \\u0441\\u043e\\u0440\\u0443 (looks like
    copy)``, whatever the scripts (evalbot.formats.lookalike)."""
    out: list[str] = []
    main_sets = main.eval_sets if main is not None and main.compatible else {}
    set_twins = confusable_with([*(es.eval_set_id for es in sets), *main_sets])
    for es in sets:
        shown = escape_lookalike(es.eval_set_id)
        twin = set_twins.get(es.eval_set_id)
        if twin is not None:
            out.append(f"{escape_confusable(es.eval_set_id)} (looks like {escape_lookalike(twin)})")
        elif has_lookalike(es.eval_set_id):
            out.append(shown)
        on_main = main_sets.get(es.key)
        twins = confusable_with([*(c.eval_id for c in es.cases), *(on_main.cases if on_main is not None else ())])
        for c in es.cases:
            twin = twins.get(c.eval_id)
            if twin is not None:
                out.append(f"{shown} / {escape_confusable(c.eval_id)} (looks like {escape_lookalike(twin)})")
            elif has_lookalike(c.eval_id):
                out.append(f"{shown} / {escape_lookalike(c.eval_id)}")
    return out


def entries_to_accept(comparison: Comparison) -> list[str]:
    """``SET/CASE`` (``SET/*/CRITERION``: a criterion's definition; ``SET/*``: an eval set's path or pass rule) of what
    blocks that a baseline update can accept (the
    regressed cases, the unaccepted yardstick changes, the stale entries), after those the PR's update already
    accepts: what ``evalbot baseline --accept`` names so that running it accepts them all (drop the ones that are not
    intended)."""
    out: list[str] = []
    blocking = {"regressed"} | ({"flaky"} if comparison.policy.block_flaky else set()) | (
        {"inconclusive"} if comparison.policy.block_inconclusive else set())
    update = comparison.baseline_update
    if update is not None:
        out += update.entries
    for es in comparison.eval_sets:
        out += [f"{es.key}/{case.eval_id}" for case in es.cases if case.category in blocking]
    for y in comparison.yardstick:
        if y.accepted or not y.loosens or y.kind == "budget_loosened":
            continue
        key = next((es.key for es in comparison.eval_sets if es.eval_set_id == y.eval_set_id), y.eval_set_id)
        out.append(f"{key}/{y.case}" if y.case is not None else f"{key}/*/{y.criterion}" if y.criterion is not None
                   else f"{key}/*")
    return list(dict.fromkeys(out))

