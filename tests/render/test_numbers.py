"""The one formatter of scores and p-values (formats/numbers.py), and the outputs that use it."""

from __future__ import annotations

from evalbot.formats.numbers import p_value_text, score_text
from evalbot.render.html import context
from tests.fakes.comparisons import small


def test_scores_and_p_values() -> None:
    """Three decimals; p-values below 0.001 are not written as zero; no value is no text."""
    assert score_text(0.04249) == "0.042" and score_text(None) == "—" and score_text(1.0, digits=2) == "1.00"
    assert p_value_text(None) is None
    assert p_value_text(0.0009) == "p < 0.001" and p_value_text(0.001) == "p = 0.001"
    assert p_value_text(0.04249) == "p = 0.042" and p_value_text(1.0) == "p = 1.000"


def test_html_report_writes_p_values_with_the_shared_formatter() -> None:
    """Every p-value the HTML report shows is p_value_text of the comparison's number."""
    comparison = small()
    data = context(comparison)
    shown = [r["change"] for s in data["sets"] for r in s["rows"]]
    expected = [p_value_text(r.p_value) for es in comparison.eval_sets for r in es.rows]
    assert len(shown) == len(expected) and any(p is not None for p in expected)
    for text, p in zip(shown, expected, strict=True):
        assert p is None or f"({p}, n = " in text
