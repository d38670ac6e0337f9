"""Tests of the exact sign test, McNemar and Fisher tests."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbot.compare.stats import fisher_exact, mcnemar_exact, sign_test


def test_sign_test_known_values() -> None:
    """Two-sided exact binomial p-values match hand-computed ones."""
    assert sign_test(0, 0) == 1.0
    assert sign_test(0, 5) == pytest.approx(2 / 32)
    assert sign_test(0, 6) == pytest.approx(2 / 64)
    assert sign_test(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert sign_test(5, 5) == 1.0


def test_sign_test_is_symmetric_and_capped() -> None:
    """Swapping directions gives the same p; p never exceeds 1."""
    assert sign_test(3, 7) == sign_test(7, 3)
    assert sign_test(4, 5) == 1.0


def test_five_unanimous_drops_are_not_significant_but_six_are() -> None:
    """With alpha 0.05, five of five cases falling is not enough, six of six is."""
    assert sign_test(0, 5) > 0.05
    assert sign_test(0, 6) < 0.05


def test_mcnemar_is_the_sign_test_on_discordant_pairs() -> None:
    """Exact McNemar equals the sign test on (fixed, regressed)."""
    assert mcnemar_exact(2, 9) == sign_test(2, 9)


def test_sign_test_rejects_negative_counts() -> None:
    """Negative counts are a programming error."""
    with pytest.raises(ValueError):
        sign_test(-1, 2)


def test_fisher_known_values() -> None:
    """Fisher's exact test on judge-vote tables matches hand-computed values."""
    assert fisher_exact(5, 0, 0, 5) == pytest.approx(2 / 252)
    assert fisher_exact(3, 2, 2, 3) == 1.0
    assert fisher_exact(4, 1, 0, 5) == pytest.approx(0.047619, abs=1e-6)
    assert fisher_exact(3, 2, 0, 5) == pytest.approx(0.166667, abs=1e-6)


def test_fisher_degenerate_margins() -> None:
    """A table with an empty row or column carries no evidence."""
    assert fisher_exact(0, 0, 3, 2) == 1.0
    assert fisher_exact(5, 0, 5, 0) == 1.0


@given(st.integers(0, 60), st.integers(0, 60))
def test_sign_test_matches_direct_binomial_sum(up: int, down: int) -> None:
    """The p-value equals the doubled lower tail of Binomial(n, 1/2), capped at 1."""
    n = up + down
    expected = 1.0 if n == 0 else min(1.0, 2 * sum(comb(n, i) for i in range(min(up, down) + 1)) / 2**n)
    assert sign_test(up, down) == pytest.approx(expected, rel=1e-12)


@given(st.integers(0, 8), st.integers(0, 8), st.integers(0, 8), st.integers(0, 8))
def test_fisher_is_a_probability_and_symmetric(a: int, b: int, c: int, d: int) -> None:
    """p is in (0, 1] and does not depend on which row comes first."""
    p = fisher_exact(a, b, c, d)
    assert 0.0 < p <= 1.0
    assert p == pytest.approx(fisher_exact(c, d, a, b))


@settings(deadline=None, max_examples=40)  # the reference sum itself is slow at these sizes
@given(st.integers(0, 2500), st.integers(0, 2500))
def test_sign_test_is_exactly_the_fraction_of_the_binomial_sum(up: int, down: int) -> None:
    """Bit for bit the float of the exact tail sum at the sizes a large run moves (the running coefficient is exact)."""
    n = up + down
    tail = sum(comb(n, i) for i in range(min(up, down) + 1))
    expected = 1.0 if n == 0 else float(min(Fraction(2 * tail, 2**n), Fraction(1)))
    assert sign_test(up, down) == expected


def test_exceedance_test_matches_the_binomial_tail() -> None:
    """P(X >= k) for X ~ Bin(n, 1/20), against a direct sum of binomial terms (the float path above 2,000 values
    agrees with the exact one)."""
    from evalbot.compare.stats import _exceedance_float, exceedance_test

    for over, n in ((1, 1), (3, 20), (15, 300), (30, 300)):
        direct = sum(Fraction(comb(n, i)) * Fraction(1, 20) ** i * Fraction(19, 20) ** (n - i) for i in range(over, n + 1))
        assert exceedance_test(over, n) == pytest.approx(float(direct), rel=1e-12)
    assert exceedance_test(0, 10) == 1.0
    assert exceedance_test(5, 5, Fraction(1, 2)) == pytest.approx(1 / 32)
    assert _exceedance_float(120, 2000, 0.05) == pytest.approx(exceedance_test(120, 2000), rel=1e-9)
    assert exceedance_test(1600, 30_000) < 0.01 < exceedance_test(1550, 30_000)
    with pytest.raises(ValueError):
        exceedance_test(3, 2)
