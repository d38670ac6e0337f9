"""The words every output uses for a criterion row: how many cases changed, by outcome, and what the test of the
mean change found. Two vocabularies, never mixed: a case *regressed*, *fixed*, ... (its outcome against the
baseline, as the headline counts it); the mean change is *significant* or *not significant* (the sign test); each count says "case(s)" so the two never read as one."""

from __future__ import annotations

from collections.abc import Mapping

from evalbot.formats.numbers import p_value_text

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


def mean_change(change: object, p_value: float | None, paired: object) -> str | None:
    """``mean fell significantly (p = 0.012, n = 30)`` for a tested row (n: the cases paired), else None."""
    if not isinstance(change, str) or change not in MEAN_CHANGE:
        return None
    return MEAN_CHANGE[change] + _detail(p_value, paired)


def row_change(change: str, p_value: float | None, paired: object) -> str:
    """A row's change in full: the mean's test, else the change (``unchanged``, ``changed definition``...) with the
    test's p-value when there is one."""
    return mean_change(change, p_value, paired) or change.replace("_", " ") + _detail(p_value, paired if p_value
                                                                                      is not None else 0)
