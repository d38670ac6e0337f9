"""How scores and p-values are written for people, in every output (comment, summary, HTML report, console,
annotations, JUnit)."""

from __future__ import annotations


def score_text(value: float | None, *, digits: int = 3, missing: str = "—") -> str:
    """``value`` with ``digits`` decimals, or ``missing`` when there is no score."""
    return missing if value is None else f"{value:.{digits}f}"


def p_value_text(value: float | None) -> str | None:
    """``p = 0.042`` (``score_text``'s three decimals), ``p < 0.001`` below that, or None without a test."""
    if value is None:
        return None
    return "p < 0.001" if value < 0.001 else f"p = {score_text(value)}"
