"""Exact small-sample tests for paired outcomes: the sign test (exact McNemar) and Fisher's exact test.

Everything is computed with integer arithmetic (``math.comb``) so p-values are exact for the sample sizes evals have
(a few to a few thousand cases, a handful of judge votes); no scipy.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb, exp, lgamma, log, log1p


def sign_test(up: int, down: int) -> float:
    """Two-sided exact sign test: p-value of ``up`` increases vs ``down`` decreases under "no change" (p = 1/2).

    Ties are not passed in (they carry no information about the direction). With pass/fail outcomes, ``up`` and
    ``down`` are the discordant pairs (fail→pass, pass→fail) and this is the exact McNemar test.
    """
    if up < 0 or down < 0:
        raise ValueError(f"counts must be non-negative, got {up}, {down}")
    n = up + down
    if n == 0:
        return 1.0
    k = min(up, down)
    return float(min(Fraction(2 * _binomial_tail(n, k), 2**n), Fraction(1)))


def _binomial_tail(n: int, k: int) -> int:
    """``sum(comb(n, i) for i in range(k + 1))``, each coefficient from the previous one (linear in ``k``).

    Calling ``comb`` for every term costs O(k) big-integer products each, which made the sign test quadratic in the
    number of moved cases (2 s at 10,000, 41 s at 30,000); the running coefficient gives the same integer.
    """
    coefficient = 1
    total = 1
    for i in range(1, k + 1):
        coefficient = coefficient * (n - i + 1) // i
        total += coefficient
    return total


EXACT_LIMIT = 2_000
"""Above this many values the exceedance test sums its terms in floating point (the integers grow as d**n)."""


def _exceedance_float(over: int, n: int, q: float) -> float:
    """``exceedance_test`` for large ``n``: the upper tail's terms in log space, summed from the largest."""
    logs = [lgamma(n + 1) - lgamma(i + 1) - lgamma(n - i + 1) + i * log(q) + (n - i) * log1p(-q)
            for i in range(over, n + 1)]
    top = max(logs)
    return min(1.0, exp(top) * sum(exp(x - top) for x in logs))


def exceedance_test(over: int, n: int, share: Fraction = Fraction(1, 20)) -> float:
    """One-sided exact binomial test: p-value of ``over`` or more of ``n`` values above a limit when at most
    ``share`` of them may lie above it (``share`` 1/20: the limit is a 95th percentile).

    The sign test is this test's two-sided form at ``share`` 1/2; both sum the same running binomial coefficient
    (integers only, so the p-value is exact).
    """
    if over < 0 or n < 0 or over > n:
        raise ValueError(f"need 0 <= over <= n, got {over}, {n}")
    if not 0 < share < 1:
        raise ValueError(f"share must lie strictly between 0 and 1, got {share}")
    if over == 0:
        return 1.0
    if n > EXACT_LIMIT:
        return _exceedance_float(over, n, float(share))
    a, d = share.numerator, share.denominator
    b = d - a
    # P(X >= over) = 1 - P(X <= over - 1); the lower tail sums comb(n, i) a^i b^(n-i) over i < over.
    coefficient, a_power, b_power = 1, 1, b**n
    lower = b_power
    for i in range(1, over):
        coefficient = coefficient * (n - i + 1) // i
        a_power *= a
        b_power //= b  # exact: b**(n - i)
        lower += coefficient * a_power * b_power
    return float(max(Fraction(0), 1 - Fraction(lower, d**n)))


def mcnemar_exact(fixed: int, regressed: int) -> float:
    """Exact McNemar test on discordant pairs: ``fixed`` (fail→pass) vs ``regressed`` (pass→fail)."""
    return sign_test(fixed, regressed)


def fisher_exact(a: int, b: int, c: int, d: int) -> float:
    """Two-sided Fisher exact test of the 2×2 table ``[[a, b], [c, d]]``.

    The p-value sums the probabilities of every table with the same margins that is no more likely than the
    observed one (the usual "minimum likelihood" definition). Used for judge votes: ``a`` pass and ``b`` fail votes
    in the baseline against ``c`` pass and ``d`` fail votes now.
    """
    if min(a, b, c, d) < 0:
        raise ValueError(f"counts must be non-negative, got {a}, {b}, {c}, {d}")
    row1, row2, col1 = a + b, c + d, a + c
    if row1 == 0 or row2 == 0 or col1 == 0 or col1 == row1 + row2:
        return 1.0
    low, high = max(0, col1 - row2), min(row1, col1)
    # Probabilities share the denominator comb(n, col1): compare numerators exactly.
    weights = {x: comb(row1, x) * comb(row2, col1 - x) for x in range(low, high + 1)}
    observed = weights[a]
    extreme = sum(w for w in weights.values() if w <= observed)
    return float(min(Fraction(extreme, sum(weights.values())), Fraction(1)))


def fisher_less(a: int, b: int, c: int, d: int) -> float:
    """One-sided Fisher exact test of the 2×2 table ``[[a, b], [c, d]]``: the chance, with the margins fixed, of
    ``a`` or fewer in the top-left cell. With ``a`` passes and ``b`` failures now against ``c`` and ``d`` on main,
    a small value says the pass rate really fell."""
    if min(a, b, c, d) < 0:
        raise ValueError(f"counts must be non-negative, got {a}, {b}, {c}, {d}")
    row1, row2, col1 = a + b, c + d, a + c
    if row1 == 0 or row2 == 0:
        return 1.0
    low = max(0, col1 - row2)
    tail = sum(comb(row1, x) * comb(row2, col1 - x) for x in range(low, a + 1))
    return float(min(Fraction(tail, comb(row1 + row2, col1)), Fraction(1)))
