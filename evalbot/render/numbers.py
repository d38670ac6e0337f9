"""How scores are written for people, in every output (comment, summary, console, annotations, JUnit)."""

from __future__ import annotations


def score_text(value: float | None, *, digits: int = 3, missing: str = "—") -> str:
    """``value`` with ``digits`` decimals, or ``missing`` when there is no score."""
    return missing if value is None else f"{value:.{digits}f}"
