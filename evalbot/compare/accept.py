"""A pull request's own baseline update: which entries it accepts. The file says WHICH entries; their values are
always this run's.

The PR's baseline file is compared with main's baseline (the base commit's) entry by entry: each eval set's path and
pass rule, each criterion's definition (fingerprint, threshold, judge model, custom code), each case's definition and
verdicts (its fingerprint, status and each criterion's status), and each entry it removes. Scores, histories, trends,
usage and efficiency are not entries: a refresh that only moves them changes nothing. An entry the file changes is
*accepted*: the run is compared with main everywhere else, and the accepted entry is shown as it compares with main
(an accepted regression is named as one in the headline), never paired into a criterion's mean, never compared with
the file's own numbers. So invented scores in the file cannot cancel a drift elsewhere.

What the file records must still be what a run produced, since it becomes main's baseline once merged: an accepted
entry's definition and verdicts are this run's (up to the usual noise: a judged flip on a split vote), and every
history, judge vote history and trend of means in the file is main's continued, either from main's current
entry or from an earlier state of it (an update written before main refreshed again still applies), or started
afresh. An entry whose history continues a state main's entry never had, or one written before main changed that
entry's outcome, is *stale*: one line names those entries and the command that rewrites the update on main's current
baseline. The file's ``budgets`` accept the PR's removed or loosened budgets when they are the PR's own config's
budgets; budgets that are neither main's nor the PR's block.
Pure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from evalbot.compare.baseline import (
    BASELINE_SCHEMA_VERSION,
    STATUS_CODES,
    Baseline,
    BaselineCase,
    BaselineCriterion,
    BaselineEvalSet,
    TrendPoint,
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
    """What the PR's baseline update accepts: the baseline to compare with (main's, without the accepted cases, with
    the accepted definitions as this run has them) and the keys of the accepted entries."""

    effective: Baseline
    update: BaselineUpdate
    sets: set[str] = field(default_factory=set)
    """Eval sets whose path, removal or pass rule is accepted."""
    criteria: set[tuple[str, str]] = field(default_factory=set)
    cases: set[tuple[str, str]] = field(default_factory=set)
    """Cases (and removals of cases) accepted."""
    budgets: dict[str, str] | None = None
    """The PR's budgets, when the file records exactly them (its removed or loosened budgets are then accepted)."""
    stale: list[str] = field(default_factory=list)
    """``set/case`` (``set/*``: the eval set's criteria) whose entry in the file continues a state of main's entry that
    main has left (main changed it since the update was written)."""
    entries: list[str] = field(default_factory=list)
    """``set/case`` or ``set/*`` of every entry the file changes: what ``evalbot baseline --accept`` rewrites."""


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)[:80]


def _definition(c: BaselineCriterion) -> dict[str, object]:
    return {"fingerprint": c.fingerprint, "threshold": c.threshold, "judged": c.judged, "judge_model": c.judge_model,
            "custom": c.custom}


def _states(entries: Sequence[str]) -> list[list[str]]:
    """The states a history went through that can be verified from it: itself, then with its most recent entries
    dropped (main refreshed since)."""
    return [list(entries[:i]) for i in range(len(entries), 0, -1)]


def _split(history: str, sep: str) -> list[str]:
    return history.split(sep) if sep else list(history)


def _provenance(mine: str, main: str | None, sep: str, rerun: bool) -> tuple[str, str | None] | None:
    """Where a history in the file comes from: ("state", last) main's history as it is (last: None) or as it was
    before main's later refreshes (last: its last entry then), the entry untouched; ("continued", last) main's
    history, as it is or was, continued with one new entry; ("fresh", None) started afresh; None: neither (edited,
    or written against an entry main has since replaced). ``rerun``: the file was written for the commit main's was
    (its last entry may replace main's last)."""
    entries = _split(mine, sep)
    states = _states(_split(main, sep)) if main else []
    for depth, state in enumerate(states):
        if entries == state:
            return "state", None if depth == 0 else state[-1]
    new = entries[-1]
    for depth, state in enumerate(states):
        for replace in (False, True) if rerun and depth == 0 else (False,):
            if _split(joined_history(sep.join(state), new, sep=sep, replace_last=replace), sep) == entries:
                return "continued", None if depth == 0 else state[-1]
    return ("fresh", None) if len(entries) == 1 else None


def _trend_provenance(mine: list[TrendPoint], main: list[TrendPoint], has_mean: bool, rerun: bool) -> bool:
    """Whether a trend in the file is main's (current or an earlier state) continued with the file's own last point,
    main's as it was, or started afresh with that point."""
    if has_mean and len(mine) == 1:
        return True
    states = [main[:i] for i in range(len(main), 0, -1)]
    if mine in states:
        return True
    return has_mean and any(continued_trend(state, mine[-1:], replace_last=replace) == mine
                            for depth, state in enumerate(states)
                            for replace in ((False, True) if rerun and depth == 0 else (False,)))


def _verdicts(case: BaselineCase) -> tuple[object, ...]:
    """What a case entry decides: its definition, status and each criterion's status (not scores or histories)."""
    return case.fingerprint, case.status, {name: m.status for name, m in case.metrics.items()}


class _Check:
    """The problems and stale entries found while reading the file."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.stale: dict[str, None] = {}

    def history(self, entry: str, mine: BaselineCase, main: BaselineCase | None, rerun: bool) -> None:
        """The case's history and each judged criterion's vote history: main's continued, or started afresh."""
        same = main is not None and main.fingerprint == mine.fingerprint
        if mine.history is not None:
            found = _provenance(mine.history, (main.history or STATUS_CODES[main.status]) if main and same else None,
                                "", rerun)
            if found is None:
                self.stale[entry] = None
            elif found[1] is not None and main is not None and _verdicts(mine) != _verdicts(main) and (
                    found[0] == "state" or found[1] != STATUS_CODES[main.status]):
                self.stale[entry] = None  # main changed this entry's outcome since the update was written
        for name, metric in mine.metrics.items():
            if metric.vote_history is None:
                continue
            prior = main.metrics.get(name) if main is not None and same else None
            past = (prior.vote_history or split_entry(prior.votes)) if prior is not None else None
            if _provenance(metric.vote_history, past, " ", rerun) is None:
                self.stale[entry] = None


def _case_problems(
    where: str, mine: BaselineCase, fresh: BaselineCase, judged: set[str], policy: GatePolicy,
) -> list[str]:
    """Where the PR's entry for a case records something this run did not produce: another definition, or another
    verdict (beyond a judged flip on a split vote): once merged, the file is main's baseline."""
    if mine.fingerprint != fresh.fingerprint:
        return [f"{where}/fingerprint: {_text(mine.fingerprint)} in the file, {_text(fresh.fingerprint)} in this run "
                "(the case's definition)"]
    if set(mine.metrics) != set(fresh.metrics):
        return [f"{where}/metrics: {_text(sorted(mine.metrics))} in the file, {_text(sorted(fresh.metrics))} in "
                "this run"]
    out: list[str] = []
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
    check = _Check()
    if not mine.compatible:
        check.problems.append(f"/schema_version: {mine.schema_version} in the file, {BASELINE_SCHEMA_VERSION} in this "
                              "run")
        return _done(result, check, changed=1)
    fresh = build_baseline(report, commit=None, created_at=None, when_read=True)  # the run's entries, read once
    changed = 0
    if sorted(mine.judge_models) != sorted(base.judge_models) and sorted(mine.judge_models) != fresh.judge_models:
        changed += 1
        check.problems.append(f"/judge_models: {_text(mine.judge_models)} in the file, {_text(fresh.judge_models)} "
                              "in this run")
    changed += _budgets(result, mine, base, budgets, check.problems)
    sets = dict(base.eval_sets)
    for key in sorted(set(base.eval_sets) | set(mine.eval_sets)):
        old, new, ran = base.eval_sets.get(key), mine.eval_sets.get(key), fresh.eval_sets.get(key)
        if new == old:
            continue
        where = f"/eval_sets/{key}"
        if new is None:
            changed += 1
            result.entries.append(f"{key}/*")
            if ran is not None:
                check.problems.append(f"{where}: removed in the file, this run has it")
            else:
                sets.pop(key, None)
                result.sets.add(key)
            continue
        if ran is None:
            changed += 1
            check.problems.append(f"{where}: in the file, not in this run")
            continue
        judged = {name for name, c in ran.criteria.items() if c.judged}
        rerun = mine.commit is not None and mine.commit == base.commit
        _trend_problems(key, new, old, base, check, rerun)
        merged, n = _set_entries(result, key, old, new, ran, judged, policy, check, rerun)
        changed += n
        if merged is None:
            sets.pop(key, None)  # a new eval set: its cases are new, compared with nothing
        else:
            sets[key] = merged
    result.effective = base.model_copy(update={"eval_sets": sets})
    return _done(result, check, changed=changed)


def _trend_problems(key: str, new: BaselineEvalSet, old: BaselineEvalSet | None, base: Baseline, check: _Check,
                    rerun: bool) -> None:
    """Criteria whose trend is neither main's (current or earlier) continued with the entry's own mean, nor main's as
    it was, nor started afresh with the entry's mean: stale (the eval set's criteria are rewritten with ``set/*``)."""
    for name, c in new.criteria.items():
        prior = old.criteria.get(name) if old is not None else None
        if not c.trend or (prior is not None and c.trend == prior.trend):
            continue
        past = past_trend(prior, base.commit, base.created_at) if prior is not None and same_measure(prior, c) else []
        if not _trend_provenance(list(c.trend), past, c.mean is not None, rerun):
            check.stale[f"{key}/*/{name}"] = None


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
    judged: set[str], policy: GatePolicy, check: _Check, rerun: bool,
) -> tuple[BaselineEvalSet | None, int]:
    """Main's eval set ``old`` with the definitions ``new`` changes as this run has them and without the cases it
    accepts (None for a new eval set), and how many entries ``new`` changes."""
    where = f"/eval_sets/{key}"
    problems = check.problems
    changed = 0
    path = old.path if old is not None else ran.path
    if old is None or new.path != old.path:
        changed += 1
        result.entries.append(f"{key}/*")
        if new.path != ran.path:
            problems.append(f"{where}/path: {_text(new.path)} in the file, {_text(ran.path)} in this run")
        else:
            path = ran.path
            result.sets.add(key)
    rule = old.pass_rule if old is not None else ran.pass_rule
    if old is not None and new.pass_rule != old.pass_rule:
        changed += 1
        result.entries.append(f"{key}/*")
        if new.pass_rule != ran.pass_rule:
            problems.append(f"{where}/pass_rule: {_text(new.pass_rule)} in the file, {_text(ran.pass_rule)} in this "
                            "run")
        else:
            rule = ran.pass_rule
            result.sets.add(key)
    criteria = dict(old.criteria) if old is not None else {}
    for name in sorted(set(criteria) | set(new.criteria)):
        was, now, got = criteria.get(name), new.criteria.get(name), ran.criteria.get(name)
        if now == was or (now is not None and was is not None and _definition(now) == _definition(was)):
            continue  # the same definition (its mean may differ): main's entry stays
        changed += 1
        result.entries.append(f"{key}/*/{name}")
        at = f"{where}/criteria/{name}"
        if now is None:
            if _removed(at, got is not None, (key, name), result.criteria, problems):
                criteria.pop(name, None)
        elif got is None:
            problems.append(f"{at}: in the file, not measured by this run")
        elif _definition(now) != _definition(got):
            problems.append(f"{at}: {_text(_definition(now))} in the file, {_text(_definition(got))} in this run")
        else:
            main_trend = was.trend if was is not None and same_measure(was, got) else None
            criteria[name] = got.model_copy(update={"trend": main_trend})  # this run's entry, main's trend
            result.criteria.add((key, name))
    cases: Mapping[str, BaselineCase] = old.cases if old is not None else {}
    changes: dict[str, BaselineCase | None] = {}  # applied at the end: main's cases are read one at a time
    for name in list(dict.fromkeys([*cases, *new.cases])):
        was_case, now_case, got_case = cases.get(name), new.cases.get(name), ran.cases.get(name)
        if now_case == was_case:
            continue
        entry, at = f"{key}/{name}", f"{where}/cases/{name}"
        if now_case is not None and was_case is not None and _verdicts(now_case) == _verdicts(was_case):
            check.history(entry, now_case, was_case, rerun)  # scores or histories only: main's entry stays
            continue
        changed += 1
        result.entries.append(entry)
        if now_case is None:
            if _removed(at, got_case is not None, (key, name), result.cases, problems):
                changes[name] = None
            continue
        if got_case is None:
            problems.append(f"{at}: in the file, not in this run")
            continue
        check.history(entry, now_case, was_case, rerun)
        found = _case_problems(at, now_case, got_case, judged, policy)
        if found:
            problems += found
            continue
        if was_case is not None:
            changes[name] = None  # compared with main's entry as an accepted change, never paired or with the file's
            result.cases.add((key, name))
    cases = replaced_cases(cases, changes)
    if old is None:
        return None, changed
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


def _done(result: Acceptance, check: _Check, *, changed: int) -> Acceptance:
    problems = list(check.problems)
    result.stale = list(check.stale)
    result.entries = list(dict.fromkeys(result.entries))
    if result.stale:
        problems.insert(0, f"stale: main's baseline changed {_named(result.stale)} since this update was written (or "
                           "the file was edited)")
    result.update = BaselineUpdate(
        path=result.update.path, matches=not problems, differences=problems[:MAX_DIFFERENCES],
        more=max(0, len(problems) - MAX_DIFFERENCES), changed=changed, stale=result.stale[:MAX_DIFFERENCES],
        entries=list(dict.fromkeys([*result.entries, *result.stale])),
    )
    return result


def _named(entries: Sequence[str]) -> str:
    shown = ", ".join(entries[:5])
    return shown + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
