"""The words every output uses for a criterion row: how many cases changed, by outcome, and what the test of the
mean change found. Two vocabularies, never mixed: a case *regressed*, *fixed*, ... (its outcome against the
baseline, as the headline counts it); the mean change is *significant* or *not significant* (the sign test); each count says "case(s)" so the two never read as one."""

from __future__ import annotations

from collections.abc import Mapping

from evalbot.compare.model import Carried, Comparison
from evalbot.formats.numbers import p_value_text
from evalbot.render.mdsafe import shorten

CASE_OUTCOMES = (
    ("regressed_cases", "🔴", "regressed"),
    ("flaky_cases", "🟠", "regressed but flaky on main"),
    ("accepted_cases", "☑️", "accepted"),
    ("inconclusive_cases", "🟡", "inconclusive"),
    ("fixed_cases", "🟢", "fixed"),
)
"""A row's case counts: the field, its icon and its label (the headline's words for the same cases)."""

MEAN_CHANGE = {
    "regressed": "mean fell significantly",
    "improved": "mean rose significantly",
    "inconclusive": "mean change not significant",
}
"""What the sign test of a row's paired changes found (CriterionRow.change)."""
MEAN_CHANGE_LOWER_IS_BETTER = {
    "regressed": "mean rose significantly, lower is better",
    "improved": "mean fell significantly, lower is better",
    "inconclusive": "mean change not significant",
}
"""The same for a criterion whose threshold is a maximum (CriterionRow.lower_is_better: a rise is the regression)."""


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def case_counts(row: Mapping[str, object]) -> list[tuple[str, int, str]]:
    """The row's non-zero case counts as (icon, count, "case(s) <outcome>") in CASE_OUTCOMES order."""
    out = []
    for field, icon, label in CASE_OUTCOMES:
        n = _count(row.get(field))
        if n:
            out.append((icon, n, f"{'case' if n == 1 else 'cases'} {label}"))
    return out


def _detail(p_value: float | None, paired: object) -> str:
    n = _count(paired)
    detail = ", ".join(part for part in (p_value_text(p_value), f"n = {n}" if n else None) if part)
    return f" ({detail})" if detail else ""


def mean_change(change: object, p_value: float | None, paired: object, lower_is_better: object = False) -> str | None:
    """``mean fell significantly (p = 0.012, n = 30)`` for a tested row (n: the cases paired), else None;
    ``lower_is_better`` (only ``True`` counts: an artifact's row is untrusted): the row's criterion is a maximum."""
    words = MEAN_CHANGE_LOWER_IS_BETTER if lower_is_better is True else MEAN_CHANGE
    if not isinstance(change, str) or change not in words:
        return None
    return words[change] + _detail(p_value, paired)


def row_change(change: str, p_value: float | None, paired: object, lower_is_better: bool = False) -> str:
    """A row's change in full: the mean's test, else the change (``unchanged``, ``changed definition``...) with the
    test's p-value when there is one."""
    return mean_change(change, p_value, paired, lower_is_better) or change.replace("_", " ") + _detail(
        p_value, paired if p_value is not None else 0)


DELTA_FOOTNOTE = ("† Δ is the mean change of the cases scored on both sides with the same definition (the cases the "
                  "test pairs), not Current − Baseline: the two means are over different cases (cases added, removed, "
                  "scored on one side only, or accepted by this PR's baseline update).")
"""Under a criterion table where a Δ is not Current − Baseline (comment.delta_differs), in every output."""

POLICY_CHANGE = "This PR changes the gate policy: {changes}; takes effect after merge (this run uses the base commit's)"
ACCEPTED_BUDGETS_EXCEPT = (", except the budgets this PR's baseline update accepts: those apply to this run already "
                           "(named below)")


def headline_notices(comparison: Comparison) -> list[tuple[str, str, int]]:
    """The notices every output shows under the headline, after its alerts: (icon, plain text, length limit), in
    order: the PR's policy changes, ids with invisible characters, then the comparison's notes (reruns capped or not
    possible, budgets accepted, the working tree's baseline update, ...). The comment, the job summary (which extends
    the comment's template) and the HTML report all show this one list, each escaping it for its format."""
    out: list[tuple[str, str, int]] = []
    if comparison.policy_changes:
        changes = "; ".join(comparison.policy_changes)
        budgets_accepted = any(y.kind == "budget_loosened" and y.accepted for y in comparison.yardstick)
        changes_budgets = any(c.startswith("budgets ") for c in comparison.policy_changes)
        text = POLICY_CHANGE.format(changes=shorten(changes, 1000))
        out.append(("⚠️", text + (ACCEPTED_BUDGETS_EXCEPT if budgets_accepted and changes_budgets else "") + ".",
                    1400))
    if comparison.invisible_ids:
        ids = ", ".join(comparison.invisible_ids[:20])
        out.append(("⚠️", f"{len(comparison.invisible_ids)} id(s) hold invisible, bidi-control or look-alike characters "
                    "(another script's letter, a variation selector; shown escaped), or read as another id (the same "
                    "confusable skeleton, UTS #39; the id it reads as named after it). Such an id can pass for another: "
                    "a case renamed this way shows as new while its look-alike shows as removed. "
                    f"{shorten(ids, 1500)}", 2000))
    carried = comparison.carried
    if carried is not None:
        out += [(icon, text, 1500) for icon, text in carried_notices(carried)]
    out += [("⚠️", note, 800) for note in comparison.served_notices]
    out += [("ℹ️", note, 500) for note in comparison.notes]
    return out


def _short(commit: str | None) -> str:
    return commit[:12] if commit else "an unrecorded commit"


def carried_line(comparison: Comparison) -> str | None:
    """``9 of 12 eval sets unaffected: carried from main at abc123`` for the headline, or None."""
    carried = comparison.carried
    if carried is None or not carried.eval_sets:
        return None
    return (f"{len(carried.eval_sets)} of {carried.total} eval set{'' if carried.total == 1 else 's'} unaffected: "
            f"carried from main at {_short(carried.commit)}")


def carried_notices(carried: Carried) -> list[tuple[str, str]]:
    """What ``--only-affected`` left unscored: the carried eval sets (main's results, not compared) and the unaffected
    ones main's baseline does not hold (neither scored nor carried)."""
    out: list[tuple[str, str]] = []
    if carried.eval_sets:
        n = len(carried.eval_sets)
        out.append(("ℹ️", f"Only the eval sets this change can affect were scored (only-affected, the base commit's "
                    f"affected_by): {n} of {carried.total} unaffected, their {carried.cases} case(s) carried from "
                    f"main's baseline at {_short(carried.commit)}, not scored again and not compared: "
                    f"{shorten(', '.join(carried.eval_sets), 800)}."))
    if carried.missing:
        n = len(carried.missing)
        out.append(("⚠️", f"{n} eval set(s) this change cannot affect are not in main's baseline, so they were neither "
                    f"scored nor carried: {shorten(', '.join(carried.missing), 800)}. Refresh the baseline on main to "
                    "carry them."))
    return out
