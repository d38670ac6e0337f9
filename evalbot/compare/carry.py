"""``--only-affected``: the eval sets a change cannot affect keep main's results.

The front end scores only the affected eval sets (:mod:`evalbot.selection` decides which). Here the baseline they
are compared with loses the carried eval sets, so that nothing carried reads as removed (the yardstick), new or
regressed, and :class:`Carried` counts them apart for the headline. Every other baseline eval set stays: one this
change deleted is still reported as removed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from evalbot.compare.accept import ProposedBaseline
from evalbot.compare.baseline import Baseline, restricted
from evalbot.compare.model import Carried


def _set_id(key: str, ids: set[str]) -> str | None:
    """The eval set id a baseline key stands for among ``ids`` (``name``, or ``name#2`` for a repeated id)."""
    if key in ids:
        return key
    name, _, nth = key.rpartition("#")
    return name if nth.isdigit() and name in ids else None


def carry(baseline: Baseline | None, eval_sets: Sequence[tuple[str, bool]]) -> tuple[Baseline | None, Carried]:
    """The baseline the affected eval sets are compared with, and what is carried. ``eval_sets``: every eval set of
    the run as (eval set id, affected), affected ones included; an id shared by an affected eval set is never
    carried. An unusable baseline (absent, another schema) carries nothing: its unaffected eval sets are
    ``missing``."""
    affected = {set_id for set_id, hit in eval_sets if hit}
    unaffected = list(dict.fromkeys(set_id for set_id, hit in eval_sets if not hit and set_id not in affected))
    usable = baseline is not None and baseline.compatible
    held = [s for s in unaffected if usable and baseline is not None and s in baseline.eval_sets]
    carried = Carried(
        eval_sets=held,
        cases=sum(len(baseline.eval_sets[s].cases) for s in held) if baseline is not None else 0,
        total=len(eval_sets), commit=baseline.commit if baseline is not None else None,
        missing=[s for s in unaffected if s not in held])
    return (None if baseline is None else without(baseline, unaffected)), carried


def without(baseline: Baseline, eval_sets: Sequence[str]) -> Baseline:
    """``baseline`` without the eval sets of these ids (what the run carries, and does not compare)."""
    drop = set(eval_sets)
    return restricted(baseline, {key: None for key in baseline.eval_sets if _set_id(key, drop) is None})


def carried_update(update: ProposedBaseline | None, carried: Carried) -> ProposedBaseline | None:
    """A pull request's baseline update as the affected eval sets are compared with it: without the carried ones
    (their entries are main's, carried). A changed baseline file affects every eval set, so an update that differs
    from main's while something is carried is one git did not see changed; its carried entries are not checked."""
    if update is None or update.baseline is None or not carried.eval_sets:
        return update
    return replace(update, baseline=without(update.baseline, carried.eval_sets + carried.missing))
