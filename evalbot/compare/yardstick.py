"""What a pull request changed in what it is measured with: its eval sets, cases and criteria against the base
commit's baseline.

A regression can be hidden by moving the yardstick instead of fixing the agent: lowering a threshold, dropping a
criterion, recomputing a built-in criterion with custom code, deleting or renaming a failing case, or rewriting a
case's expected conversation. Each such difference is named here, with the result on main and in this run, so the
gate can decide (``yardstick_changes``) and the comment can show it. Adding cases, eval sets or criteria, and
tightening a threshold, tighten the yardstick: they are shown (a tightened threshold) or counted as new, never
blocking. Which way a threshold tightens is the criterion's (``criteria.lower_is_better``): raising a minimum score
tightens, raising a maximum (``latency``'s seconds, ``failure``'s rate) loosens. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalbot.compare.baseline import (
    Baseline,
    BaselineCase,
    BaselineCriterion,
    BaselineEvalSet,
    case_marks,
    judge_model_of,
    options_hash,
    unique_keys,
)
from evalbot.compare.model import YardstickChange
from evalbot.compare.passrule import loosens
from evalbot.criteria import lower_is_better
from evalbot.formats.numbers import score_text
from evalbot.results import CaseResult, CriterionInfo, EvalSetReport, MetricResult, Report

MAX_NAMED = 5
"""Cases named in one change's result (the rest are counted)."""


def _status(status: str | None) -> str:
    return (status or "unknown").replace("_", " ")


def _case_result(case: BaselineCase | CaseResult | None, *, where: str) -> str:
    if case is None:
        return "not run" if where == "now" else "not on main"
    return f"{_status(case.status)} {where}"


def _set_summary(statuses: Sequence[tuple[str, str]], *, where: str) -> str:
    """``3 case(s): 2 passed, 1 failed (refund) on main``."""
    if not statuses:
        return f"no cases {where}"
    counts: dict[str, int] = {}
    for _, status in statuses:
        counts[status] = counts.get(status, 0) + 1
    parts = ", ".join(f"{n} {_status(s)}" for s, n in sorted(counts.items()))
    bad = [key for key, status in statuses if status in ("failed", "error")]
    named = f" (failing: {', '.join(bad[:MAX_NAMED])}{'…' if len(bad) > MAX_NAMED else ''})" if bad else ""
    return f"{len(statuses)} case(s): {parts}{named} {where}"


def _criterion_result(base: BaselineCriterion) -> str:
    return f"mean {score_text(base.mean)}, {base.passed} passed, {base.failed} failed on main"


def _current_criterion(es: EvalSetReport, name: str) -> str:
    summary = es.metrics.get(name)
    if summary is None:
        return "not measured now"
    return f"mean {score_text(summary.mean)}, {summary.passed} passed, {summary.failed} failed now"


def _checked_value(metric: MetricResult) -> float | None:
    """The value a criterion held against its threshold: the score, else (seconds, counts: not a [0, 1] score) the
    worst invocation's value, else the case's value (``details``)."""
    if metric.score is not None:
        return metric.score
    details = metric.details if isinstance(metric.details, dict) else {}
    for key in ("max", "value"):
        value = details.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def _fails_under(
    es: EvalSetReport, name: str, threshold: float | None, base: BaselineEvalSet, *, maximum: bool = False
) -> str:
    """The cases of ``es`` passing ``name`` now that main's ``threshold`` fails (a score below it; above it when the
    threshold is a ``maximum``): those that passed it on main (regressed under main's definition) and those already
    failing there."""
    if threshold is None:
        return ""
    regressed: list[str] = []
    failing: list[str] = []
    for key, case in zip(unique_keys([c.eval_id for c in es.cases]), es.cases, strict=True):
        metric = case.metrics.get(name)
        value = _checked_value(metric) if metric is not None and metric.status == "passed" else None
        if value is None or (value <= threshold if maximum else value >= threshold):
            continue
        old = base.cases.get(key)
        was = old.metrics.get(name) if old is not None else None
        (regressed if was is not None and was.status == "passed" else failing).append(f"{key} {score_text(value)}")
    parts = [f"{label} {', '.join(names[:MAX_NAMED])}" + (f" and {len(names) - MAX_NAMED} more"
                                                          if len(names) > MAX_NAMED else "")
             for label, names in (("regressed:", regressed), ("still failing:", failing)) if names]
    where = "over main's maximum" if maximum else "under main's threshold"
    return f"; {where} {score_text(threshold)}: " + "; ".join(parts) if parts else ""


def _criterion_change(
    key: str, es: EvalSetReport, name: str, base: BaselineCriterion, info: CriterionInfo | None,
    base_set: BaselineEvalSet,
) -> YardstickChange | None:
    """How criterion ``name`` of eval set ``key`` changed (None: it did not)."""
    main = _criterion_result(base)
    if info is None or info.threshold is None:
        return YardstickChange(kind="criterion_removed", eval_set_id=key, criterion=name,
                               what="criterion removed from the config", main=main, current="not measured now")
    model = judge_model_of(info)
    if info.fingerprint == base.fingerprint and model == base.judge_model:
        return None
    current = _current_criterion(es, name)

    def change(kind: str, what: str, *, loosens: bool = True) -> YardstickChange:
        return YardstickChange.model_validate({"kind": kind, "eval_set_id": key, "criterion": name, "what": what,
                                               "main": main, "current": current, "loosens": loosens})

    if info.custom is not None and info.custom != base.custom:
        if base.custom is None:
            return change("custom_metric", f"the built-in criterion is now computed by this PR's custom metric "
                                           f"{info.custom}")
        return change("custom_metric", f"computed by {info.custom} instead of {base.custom}")
    if info.custom is None and base.custom is not None:
        return change("criterion_changed", f"computed by the built-in criterion instead of custom metric {base.custom}")
    if model != base.judge_model:
        return change("judge_model", f"judge model {base.judge_model or 'none'} → {model or 'none'}")
    options_same = base.options_sha is not None and base.options_sha == options_hash(info.options)
    moved = f"threshold {score_text(base.threshold)} → {score_text(info.threshold)}"
    if not options_same:
        detail = "options changed" if base.options_sha is not None else \
            "definition changed (this older baseline does not record which options)"
        return change("criterion_changed", detail + (f"; {moved}" if base.threshold != info.threshold else ""))
    if base.threshold is not None and info.threshold != base.threshold:
        maximum = lower_is_better(name, info.custom)  # the criterion's direction, never the config's say
        lowered = info.threshold < base.threshold
        if lowered != maximum:  # a lower minimum score or a higher maximum lets more cases pass: loosens
            current += _fails_under(es, name, base.threshold, base_set, maximum=maximum)
            return change("threshold_lowered" if lowered else "threshold_raised",
                          moved + (" (a maximum: raising it loosens)" if maximum else ""))
        return change("threshold_lowered" if lowered else "threshold_raised",
                      moved + (" (a maximum: lowering it tightens)" if maximum else ""), loosens=False)
    if info.custom is not None:
        if base.custom_code is None and info.custom_code is not None:
            return change("custom_metric", f"custom metric code not comparable ({info.custom}): main's baseline was "
                                           "written before evalbot read a metric's code from its files; refresh it "
                                           "on main")
        return change("custom_metric", f"custom metric code changed ({info.custom})")
    return change("criterion_changed", "definition changed")


def _criteria_changes(key: str, es: EvalSetReport, base: BaselineEvalSet) -> list[YardstickChange]:
    infos = {c.name: c for c in es.criteria}
    out = []
    for name, criterion in base.criteria.items():
        if criterion.threshold is None:
            continue  # informational on main: nothing was gated on it
        found = _criterion_change(key, es, name, criterion, infos.get(name), base)
        if found is not None:
            out.append(found)
    return out


Located = tuple[str, str, CaseResult]
"""An eval set key, a case key and the case."""


def yardstick_changes(base: Baseline, report: Report) -> list[YardstickChange]:
    """Every difference between what ``base`` measured and what ``report`` measures (see the module docstring).

    A base eval set missing from the run is *renamed* when a new eval set has its path or any of its cases (same
    definition), else *removed*; a base case missing from its eval set is *renamed* (or moved) when a case new to
    the run has its definition (``content``, the fingerprint without the id; older baselines lack it, so only a
    case moved with its id is found), else *removed*.
    """
    if not base.compatible:
        return []
    current = dict(zip(unique_keys([es.eval_set_id for es in report.eval_sets]), report.eval_sets, strict=True))
    cases: dict[str, dict[str, CaseResult]] = {
        key: dict(zip(unique_keys([c.eval_id for c in es.cases]), es.cases, strict=True)) for key, es in current.items()
    }
    new_by_fingerprint: dict[str, list[Located]] = {}
    for key, found in cases.items():
        old = base.eval_sets.get(key)
        for case_key, case in found.items():
            if old is None or case_key not in old.cases:
                for print_ in {case.fingerprint, case.content} - {None}:
                    new_by_fingerprint.setdefault(str(print_), []).append((key, case_key, case))
    out: list[YardstickChange] = []
    for key, old in base.eval_sets.items():
        es = current.get(key)
        if es is None:  # main's statuses only here: each read of a parsed baseline's case builds it
            out.append(_set_gone(key, old, current, cases, base, [(k, c.status) for k, c in old.cases.items()]))
            continue
        if es.path != old.path:
            out.append(YardstickChange(kind="eval_set_moved", eval_set_id=key, what=f"moved from {old.path} to "
                                       f"{es.path}", loosens=False))
        out += _rule_change(key, es, old)
        out += _criteria_changes(key, es, old)
        out += _case_changes(key, old, cases[key], new_by_fingerprint)
    return out


def _rule_change(key: str, es: EvalSetReport, old: BaselineEvalSet) -> list[YardstickChange]:
    """The eval set's ``pass_rule`` against the one main's baseline was decided with (a looser one blocks)."""
    if es.pass_rule == old.pass_rule:
        return []
    what = f"pass rule {old.pass_rule or 'ADK pooling'} → {es.pass_rule or 'ADK pooling'}"
    main_cases = [(k, c.status) for k, c in old.cases.items()]
    now = [(k, c.status) for k, c in zip(unique_keys([c.eval_id for c in es.cases]), es.cases, strict=True)]
    return [YardstickChange(kind="pass_rule", eval_set_id=key, what=what,
                            main=_set_summary(main_cases, where="on main"), current=_set_summary(now, where="now"),
                            loosens=loosens(old.pass_rule, es.pass_rule))]


def _set_gone(
    key: str, old: BaselineEvalSet, current: Mapping[str, EvalSetReport], cases: Mapping[str, Mapping[str, CaseResult]],
    base: Baseline, main_cases: Sequence[tuple[str, str]],
) -> YardstickChange:
    prints = {p for c in old.cases.values() for p in (c.fingerprint, c.content) if p is not None}
    for other, es in current.items():
        if other in base.eval_sets:
            continue
        if es.path == old.path or prints & {p for c in es.cases for p in (c.fingerprint, c.content) if p is not None}:
            now = [(k, c.status) for k, c in cases[other].items()]
            return YardstickChange(kind="eval_set_renamed", eval_set_id=key, what=f"eval set renamed to {other}",
                                   main=_set_summary(main_cases, where="on main"),
                                   current=_set_summary(now, where="now") + f" (as {other})")
    return YardstickChange(kind="eval_set_removed", eval_set_id=key, what=f"eval set removed ({old.path})",
                           main=_set_summary(main_cases, where="on main"), current="not run")


def _case_changes(
    key: str, old: BaselineEvalSet, found: Mapping[str, CaseResult], new_by_fingerprint: Mapping[str, list[Located]]
) -> list[YardstickChange]:
    out: list[YardstickChange] = []
    for case_key, fingerprint, content, status in case_marks(old.cases):  # no case's models built
        main = f"{_status(status)} on main"  # _case_result's
        case = found.get(case_key)
        if case is None:
            twins = [twin for print_ in (content, fingerprint) if print_ is not None
                     for twin in new_by_fingerprint.get(print_, [])]
            if twins:
                where, twin_key, twin = twins[0]
                target = twin_key if where == key else f"{where} / {twin_key}"
                out.append(YardstickChange(kind="case_renamed", eval_set_id=key, case=case_key,
                                           what=f"renamed to {target}" if where == key else f"moved to {target}",
                                           main=main, current=f"{_status(twin.status)} now (as {target})"))
            else:
                empty = " (the eval set has no cases left)" if not found else ""
                out.append(YardstickChange(kind="case_removed", eval_set_id=key, case=case_key,
                                           what="case removed" + empty, main=main, current="not run"))
        elif case.fingerprint is not None and fingerprint is not None and case.fingerprint != fingerprint:
            out.append(YardstickChange(kind="case_definition", eval_set_id=key, case=case_key,
                                       what="expected conversation (or scenario) changed", main=main,
                                       current=_case_result(case, where="now") + " (under the new definition)"))
    return out
