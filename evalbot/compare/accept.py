"""A pull request's own baseline update, entry by entry: what it accepts and what this run contradicts.

The PR's baseline file is compared with the base commit's entry by entry: each eval set's path, each criterion
(its definition: fingerprint, threshold, judge model, custom code), each case, and each entry it removes. An entry
the file leaves as main has it is compared with main's as usual. An entry it changes is *accepted* when a run
produced it: this run has it with the same definition and verdicts, up to the usual noise (a score that moved
without changing a verdict, a judged verdict that flipped on a split vote), and its history is main's continued or
started afresh. The run is then compared with the accepted entry instead of main's, with main's history (the flaky
history is always main's). An entry this run contradicts (a status it did not reach, a forged history, a case or
criterion it does not have, a definition it does not use) is not accepted and blocks, with the difference named.
A criterion's trend of means (drawn by the HTML report, never deciding anything) is checked like a history: main's
continued with the file's own mean, or started afresh; the run is always drawn against main's trend.
The file's ``budgets`` (the gate policy's budgets it was written under) accept the PR's removed or loosened budgets
when they are the PR's own config's budgets; budgets that are neither main's nor the PR's are a stale or forged
entry and block.
Pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from evalbot.compare.baseline import (
    BASELINE_SCHEMA_VERSION,
    STATUS_CODES,
    Baseline,
    BaselineCase,
    BaselineCriterion,
    BaselineEvalSet,
    build_baseline,
    continued_trend,
    joined_history,
    parse_baseline,
    past_trend,
    replaced_cases,
    same_measure,
    same_scores,
    split_entry,
)
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import BaselineUpdate
from evalbot.compare.votes import vote_noise
from evalbot.errors import InputError
from evalbot.results import Report

MAX_DIFFERENCES = 20


@dataclass(frozen=True)
class ProposedBaseline:
    """The pull request's own baseline file: parsed, or why it cannot be used."""

    path: str
    baseline: Baseline | None = None
    error: str | None = None


def proposed_baseline(read: Callable[[], str | None], main: Baseline | None, path: str) -> ProposedBaseline | None:
    """The PR's own baseline file (``read()``; None when there is none, or it holds what ``main`` holds, layout and
    measurement time aside); a file that cannot be read or parsed is one that cannot be used (it blocks)."""
    try:
        text = read()
        if text is None:
            return None
        mine = parse_baseline(text, path)
    except InputError as exc:
        return ProposedBaseline(path=path, error=str(exc))
    if main is not None and same_scores(mine, main) and mine.commit == main.commit:
        return None
    return ProposedBaseline(path=path, baseline=mine)


@dataclass
class Acceptance:
    """What the PR's baseline update accepts: the baseline to compare with (main's, with the accepted entries) and
    the keys of those entries."""

    effective: Baseline
    update: BaselineUpdate
    sets: set[str] = field(default_factory=set)
    """Eval sets whose path, removal or pass rule is accepted."""
    criteria: set[tuple[str, str]] = field(default_factory=set)
    cases: set[tuple[str, str]] = field(default_factory=set)
    """Cases (and removals of cases) accepted."""
    budgets: dict[str, str] | None = None
    """The PR's budgets, when the file records exactly them (its removed or loosened budgets are then accepted)."""


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)[:80]


def _definition(c: BaselineCriterion) -> dict[str, object]:
    return {"fingerprint": c.fingerprint, "threshold": c.threshold, "judged": c.judged, "judge_model": c.judge_model,
            "custom": c.custom}


def _continued(past: str | None, new: str, sep: str) -> set[str]:
    """The histories a refresh may write: main's continued (a new commit, or a re-run replacing the last entry)."""
    if not past:
        return set()
    return {joined_history(past, new, sep=sep, replace_last=rerun) for rerun in (False, True)}


def _history_problems(where: str, mine: BaselineCase, main: BaselineCase | None) -> list[str]:
    """A history (or judge vote history) that is not main's continued, nor started afresh: edited by hand."""
    out: list[str] = []
    same_case = main is not None and main.fingerprint == mine.fingerprint
    code = STATUS_CODES[mine.status]
    allowed = {code} | (_continued(main.history or STATUS_CODES[main.status], code, "") if main and same_case else set())
    if mine.history is not None and mine.history not in allowed:
        out.append(f"{where}/history: {_text(mine.history)} in the file, {_text(max(allowed, key=len))} in this run "
                   "(main's history continued: the flaky history is always main's)")
    for name, metric in mine.metrics.items():
        prior = main.metrics.get(name) if main is not None and same_case else None
        if metric.vote_history is None:
            continue
        entry = split_entry(metric.votes)
        votes_ok = {entry} | (_continued(prior.vote_history or split_entry(prior.votes), entry, " ")
                              if prior is not None else set())
        if metric.vote_history not in votes_ok:
            out.append(f"{where}/metrics/{name}/vote_history: {_text(metric.vote_history)} in the file, "
                       f"{_text(max(votes_ok, key=len))} in this run (main's votes continued)")
    return out


def _trend_problems(where: str, new: BaselineEvalSet, old: BaselineEvalSet | None, base: Baseline) -> list[str]:
    """Criteria whose trend is neither main's continued with the entry's own mean (a new commit, or a re-run
    replacing the last point), nor main's unchanged (no mean), nor started afresh with the entry's mean."""
    out: list[str] = []
    for name, c in new.criteria.items():
        prior = old.criteria.get(name) if old is not None else None
        if not c.trend or (prior is not None and c.trend == prior.trend):
            continue
        allowed = [] if c.mean is None else [c.trend[-1:]]
        if prior is not None and same_measure(prior, c):
            past = past_trend(prior, base.commit, base.created_at)
            allowed += [past] if c.mean is None else [continued_trend(past, c.trend[-1:], replace_last=r)
                                                      for r in (False, True)]
        if c.trend not in allowed:
            shown = [p.mean for p in max(allowed, key=len)] if allowed else []
            out.append(f"{where}/criteria/{name}/trend: means {_text([p.mean for p in c.trend])} in the file, "
                       f"{_text(shown)} expected (main's trend continued with the entry's mean: refresh the file "
                       "with `evalbot baseline`)")
    return out


def _verdicts(case: BaselineCase) -> tuple[object, ...]:
    """What a case entry decides: its definition, status and each criterion's status (not scores or histories)."""
    return case.fingerprint, case.status, {name: m.status for name, m in case.metrics.items()}


def _case_problems(
    where: str, mine: BaselineCase, fresh: BaselineCase, main: BaselineCase | None, judged: set[str],
    policy: GatePolicy,
) -> list[str]:
    """Where the PR's entry for a case says something this run did not produce."""
    if mine.fingerprint != fresh.fingerprint:
        return [f"{where}/fingerprint: {_text(mine.fingerprint)} in the file, {_text(fresh.fingerprint)} in this run "
                "(the case's definition)"]
    out = _history_problems(where, mine, main)
    if set(mine.metrics) != set(fresh.metrics):
        out.append(f"{where}/metrics: {_text(sorted(mine.metrics))} in the file, {_text(sorted(fresh.metrics))} in "
                   "this run")
        return out
    noise = False
    for name, metric in mine.metrics.items():
        ran = fresh.metrics[name]
        if metric.status != ran.status:
            if name in judged and policy.noise_aware and vote_noise(metric.votes, ran.votes)[0]:
                noise = True  # a judged verdict that flipped on a split vote: the usual noise rule
            else:
                out.append(f"{where}/metrics/{name}/status: {_text(metric.status)} (score {_text(metric.score)}) in "
                           f"the file, {_text(ran.status)} (score {_text(ran.score)}) in this run")
    if mine.status != fresh.status and not noise and not out:
        out.append(f"{where}/status: {_text(mine.status)} in the file, {_text(fresh.status)} in this run")
    return out


def accept(
    main: Baseline | None, mine: Baseline, report: Report, policy: GatePolicy, path: str,
    budgets: Mapping[str, str] | None = None,
) -> Acceptance:
    """Compare the PR's baseline file ``mine`` with ``main`` (the base commit's; None: there is none) entry by
    entry, and each entry it changes with what this run produced (see the module docstring). ``budgets``: the PR's
    own config's budgets (None: unknown here, the file's budgets are neither compared nor accepted)."""
    base = main if main is not None and main.compatible else Baseline()
    result = Acceptance(effective=base, update=BaselineUpdate(path=path, matches=True))
    problems: list[str] = []
    if not mine.compatible:
        problems.append(f"/schema_version: {mine.schema_version} in the file, {BASELINE_SCHEMA_VERSION} in this run")
        return _done(result, problems, changed=1)
    fresh = build_baseline(report, commit=None, created_at=None, when_read=True)  # the run's entries, read once
    changed = 0
    if sorted(mine.judge_models) != sorted(base.judge_models) and sorted(mine.judge_models) != fresh.judge_models:
        changed += 1
        problems.append(f"/judge_models: {_text(mine.judge_models)} in the file, {_text(fresh.judge_models)} in this "
                        "run")
    changed += _budgets(result, mine, base, budgets, problems)
    sets = dict(base.eval_sets)
    for key in sorted(set(base.eval_sets) | set(mine.eval_sets)):
        old, new, ran = base.eval_sets.get(key), mine.eval_sets.get(key), fresh.eval_sets.get(key)
        if new == old:
            continue
        where = f"/eval_sets/{key}"
        if new is None:
            changed += 1
            if ran is not None:
                problems.append(f"{where}: removed in the file, this run has it")
            else:
                sets.pop(key, None)
                result.sets.add(key)
            continue
        if ran is None:
            changed += 1
            problems.append(f"{where}: in the file, not in this run")
            continue
        judged = {name for name, c in ran.criteria.items() if c.judged}
        problems += _trend_problems(f"/eval_sets/{key}", new, old, base)
        merged, n = _set_entries(result, key, old, new, ran, judged, policy, problems)
        changed += n
        sets[key] = merged
    result.effective = base.model_copy(update={"eval_sets": sets})
    return _done(result, problems, changed=changed)


def _budgets(
    result: Acceptance, mine: Baseline, base: Baseline, budgets: Mapping[str, str] | None, problems: list[str]
) -> int:
    """The file's budgets: the PR's (accepted), main's unchanged, or neither (blocks); 1 when they differ from
    main's."""
    if budgets is None or mine.budgets is None:
        return 0  # unknown here, or written by an evalbot that did not record them: nothing to accept
    ours = dict(budgets)
    if mine.budgets == ours:
        result.budgets = ours
    elif mine.budgets != base.budgets:
        problems.append(f"/budgets: {_text(mine.budgets)} in the file, {_text(ours)} in this PR's config (the "
                        "budgets the update must be written under: refresh it with `evalbot baseline`)")
    return int(mine.budgets != base.budgets)


def _set_entries(
    result: Acceptance, key: str, old: BaselineEvalSet | None, new: BaselineEvalSet, ran: BaselineEvalSet,
    judged: set[str], policy: GatePolicy, problems: list[str],
) -> tuple[BaselineEvalSet, int]:
    """Main's eval set ``old`` with the entries of ``new`` this run confirms, and how many entries ``new`` changes."""
    where = f"/eval_sets/{key}"
    changed = 0
    path = old.path if old is not None else ran.path
    if old is None or new.path != old.path:
        changed += 1
        if new.path != ran.path:
            problems.append(f"{where}/path: {_text(new.path)} in the file, {_text(ran.path)} in this run")
        else:
            path = new.path
            result.sets.add(key)
    rule = old.pass_rule if old is not None else ran.pass_rule
    if old is not None and new.pass_rule != old.pass_rule:
        changed += 1
        if new.pass_rule != ran.pass_rule:
            problems.append(f"{where}/pass_rule: {_text(new.pass_rule)} in the file, {_text(ran.pass_rule)} in this "
                            "run")
        else:
            rule = new.pass_rule
            result.sets.add(key)
    criteria = dict(old.criteria) if old is not None else {}
    for name in sorted(set(criteria) | set(new.criteria)):
        was, now, got = criteria.get(name), new.criteria.get(name), ran.criteria.get(name)
        if now == was or (now is not None and was is not None and _definition(now) == _definition(was)):
            continue  # the same definition (its mean may differ): main's entry stays
        changed += 1
        at = f"{where}/criteria/{name}"
        if now is None:
            if _removed(at, got is not None, (key, name), result.criteria, problems):
                criteria.pop(name, None)
        elif got is None:
            problems.append(f"{at}: in the file, not measured by this run")
        elif _definition(now) != _definition(got):
            problems.append(f"{at}: {_text(_definition(now))} in the file, {_text(_definition(got))} in this run")
        else:
            main_trend = was.trend if was is not None and same_measure(was, now) else None
            criteria[name] = now.model_copy(update={"trend": main_trend})  # the trend drawn is always main's
            result.criteria.add((key, name))
    cases: Mapping[str, BaselineCase] = old.cases if old is not None else {}
    changes: dict[str, BaselineCase | None] = {}  # applied at the end: main's cases are read one at a time
    for name in list(dict.fromkeys([*cases, *new.cases])):
        was_case, now_case, got_case = cases.get(name), new.cases.get(name), ran.cases.get(name)
        if now_case == was_case:
            continue
        at = f"{where}/cases/{name}"
        if now_case is not None and was_case is not None and _verdicts(now_case) == _verdicts(was_case):
            problems += _history_problems(at, now_case, was_case)  # scores or histories only: main's entry stays
            continue
        changed += 1
        if now_case is None:
            if _removed(at, got_case is not None, (key, name), result.cases, problems):
                changes[name] = None
            continue
        if got_case is None:
            problems.append(f"{at}: in the file, not in this run")
            continue
        found = _case_problems(at, now_case, got_case, was_case, judged, policy)
        if found:
            problems += found
            continue
        keep = was_case.history if was_case is not None and was_case.fingerprint == now_case.fingerprint else None
        changes[name] = now_case.model_copy(update={"history": keep})  # the flaky history is always main's
        result.cases.add((key, name))
    cases = replaced_cases(cases, changes)
    if old is None:
        return BaselineEvalSet(path=path, criteria=criteria, cases=cases, pass_rule=rule), changed
    return old.model_copy(update={"path": path, "criteria": criteria, "cases": cases, "pass_rule": rule}), changed


def _removed(at: str, in_run: bool, entry: tuple[str, str], accepted: set[tuple[str, str]], problems: list[str]
             ) -> bool:
    """An entry the file removes: accepted (True: the caller drops it from the baseline compared with) when the run
    lacks it too."""
    if in_run:
        problems.append(f"{at}: removed in the file, this run has it")
        return False
    accepted.add(entry)
    return True


def _done(result: Acceptance, problems: list[str], *, changed: int) -> Acceptance:
    result.update = BaselineUpdate(
        path=result.update.path, matches=not problems, differences=problems[:MAX_DIFFERENCES],
        more=max(0, len(problems) - MAX_DIFFERENCES), changed=changed,
    )
    return result
