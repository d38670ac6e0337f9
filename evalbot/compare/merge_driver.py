"""The three-way merge of two baseline files (git's merge driver: ``evalbot baseline --merge-driver %O %A %B``).

A baseline file changes on main at every refresh (every case's history, every criterion's trend) and on a branch
where a pull request accepts a change, so git's line merge of the two conflicts. Here the two sides are merged entry
by entry (an eval set's path, pass rule and criteria' definitions; each case's definition and verdicts), as
:mod:`evalbot.compare.accept` reads a baseline update: the newer side (the later ``created_at``: main's last refresh)
is taken whole, then each entry the other side changed against the common ancestor, where the newer side left it as
it was, is taken from the other side with its history continued on the newer side's. An entry both sides changed
differently is a conflict (the merge fails and git leaves the file to the user). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from evalbot.compare.baseline import (
    STATUS_CODES,
    Baseline,
    BaselineCase,
    BaselineCriterion,
    BaselineEvalSet,
    joined_history,
    replaced_cases,
    same_measure,
    split_entry,
)


@dataclass
class Merged:
    """The merged baseline, the entries taken from the older side, and the conflicts (``set/case`` each)."""

    baseline: Baseline
    taken: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


def _case_key(case: BaselineCase | None) -> object:
    """What a case entry decides (its definition and verdicts), None when absent."""
    if case is None:
        return None
    return case.fingerprint, case.status, {name: m.status for name, m in case.metrics.items()}


def _criterion_key(c: BaselineCriterion | None) -> object:
    if c is None:
        return None
    return c.fingerprint, c.threshold, c.judged, c.judge_model, c.custom


def _continued(case: BaselineCase, on: BaselineCase | None) -> BaselineCase:
    """``case`` (the older side's entry) with its history and vote histories continued on ``on`` (the newer side's
    entry for the same case): main's flaky memory, then this entry's outcome. A changed definition starts afresh."""
    if on is None or on.fingerprint != case.fingerprint:
        return case
    history = joined_history(on.history or STATUS_CODES[on.status], STATUS_CODES[case.status], sep="",
                             replace_last=False)
    metrics = {}
    for name, m in case.metrics.items():
        prior = on.metrics.get(name)
        if m.vote_history is not None and prior is not None:
            past = prior.vote_history or split_entry(prior.votes)
            m = m.model_copy(update={"vote_history": joined_history(past, split_entry(m.votes), sep=" ",
                                                                     replace_last=False)})
        metrics[name] = m
    return case.model_copy(update={"history": history, "metrics": metrics})


def merge_baselines(base: Baseline | None, ours: Baseline, theirs: Baseline) -> Merged:
    """Merge ``ours`` and ``theirs`` (git's %A and %B) with their common ancestor ``base`` (%O; None: none)."""
    ancestor = base if base is not None and base.compatible else Baseline()
    newer, older = (theirs, ours) if (theirs.created_at or "") > (ours.created_at or "") else (ours, theirs)
    result = Merged(baseline=newer)
    sets = dict(newer.eval_sets)
    for key in dict.fromkeys([*ancestor.eval_sets, *older.eval_sets, *newer.eval_sets]):
        was, old, new = ancestor.eval_sets.get(key), older.eval_sets.get(key), newer.eval_sets.get(key)
        if old is not None and was is not None and not _entries_changed(was, old):
            continue  # the older side left the eval set's entries alone: the newer side's stands
        if old is None:  # the older side removed it: removed (the newer side's refresh of it does not keep it)
            sets.pop(key, None)
            result.taken.append(f"{key}/*")
            continue
        if new is None:  # the newer side removed it
            if was is not None:
                result.conflicts.append(f"{key}/*")
            else:
                sets[key] = old  # added by the older side only
                result.taken.append(f"{key}/*")
            continue
        if was is None:  # added on both sides
            was = BaselineEvalSet(path=new.path)
        sets[key] = _merged_set(key, was, old, new, result)
    header: dict[str, object] = {"eval_sets": sets}
    for name in ("budgets", "judge_models"):  # the policy's budgets and judge models the older side changed
        if getattr(older, name) != getattr(ancestor, name):
            if getattr(newer, name) == getattr(ancestor, name):
                header[name] = getattr(older, name)
            elif getattr(newer, name) != getattr(older, name):
                result.conflicts.append(name)
    result.baseline = newer.model_copy(update=header)
    return result


def _entries_changed(was: BaselineEvalSet, now: BaselineEvalSet) -> bool:
    """Whether ``now`` changes an entry of ``was`` (a path, pass rule, criterion definition or case's definition or
    verdicts), not only scores, histories or trends."""
    if (was.path, was.pass_rule) != (now.path, now.pass_rule):
        return True
    if {n: _criterion_key(c) for n, c in was.criteria.items()} != {n: _criterion_key(c) for n, c in now.criteria.items()}:
        return True
    if list(was.cases) != list(now.cases) and set(was.cases) != set(now.cases):
        return True
    return any(_case_key(was.cases.get(name)) != _case_key(case) for name, case in now.cases.items())


def _merged_set(key: str, was: BaselineEvalSet, old: BaselineEvalSet, new: BaselineEvalSet, result: Merged
                ) -> BaselineEvalSet:
    """``new``'s eval set with the entries ``old`` changed against ``was`` and ``new`` left alone."""
    update: dict[str, object] = {}
    for name in ("path", "pass_rule"):
        if getattr(old, name) != getattr(was, name):
            if getattr(new, name) == getattr(was, name):
                update[name] = getattr(old, name)
                result.taken.append(f"{key}/*")
            elif getattr(new, name) != getattr(old, name):
                result.conflicts.append(f"{key}/*")
    criteria = dict(new.criteria)
    for name in dict.fromkeys([*was.criteria, *old.criteria, *new.criteria]):
        w, o, n = was.criteria.get(name), old.criteria.get(name), new.criteria.get(name)
        if _criterion_key(o) == _criterion_key(w):
            continue
        if _criterion_key(n) == _criterion_key(w):
            if o is None:
                criteria.pop(name, None)
            else:
                trend = n.trend if n is not None and same_measure(n, o) else o.trend
                criteria[name] = o.model_copy(update={"trend": trend})
            result.taken.append(f"{key}/*")
        elif _criterion_key(n) != _criterion_key(o):
            result.conflicts.append(f"{key}/{name}")
    update["criteria"] = criteria
    changes: dict[str, BaselineCase | None] = {}
    names: Mapping[str, None] = dict.fromkeys([*was.cases, *old.cases, *new.cases])
    for name in names:
        w_case, o_case, n_case = was.cases.get(name), old.cases.get(name), new.cases.get(name)
        if _case_key(o_case) == _case_key(w_case):
            continue  # scores or histories only on the older side: the newer side's refresh stands
        if _case_key(n_case) == _case_key(w_case):
            changes[name] = None if o_case is None else _continued(o_case, n_case)
            result.taken.append(f"{key}/{name}")
        elif _case_key(n_case) != _case_key(o_case):
            result.conflicts.append(f"{key}/{name}")
    update["cases"] = replaced_cases(new.cases, changes)
    return new.model_copy(update=update)
