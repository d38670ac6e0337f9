"""``--only-affected``: the eval sets a change cannot affect keep main's results.

The front end scores only the affected eval sets (:mod:`evalbot.selection` decides which). Here the baseline they
are compared with loses the carried eval sets, so that nothing carried reads as removed (the yardstick), new or
regressed, and :class:`Carried` counts them apart for the headline. Every other baseline eval set stays: one this
change deleted is still reported as removed.
"""

from __future__ import annotations

from collections.abc import Sequence

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
    if baseline is None:
        return None, carried
    drop = set(unaffected)
    kept = {key: None for key in baseline.eval_sets if _set_id(key, drop) is None}
    return restricted(baseline, kept), carried
