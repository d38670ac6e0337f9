"""Deciding a flipped, rerun case against main's history: the one-sided exact test, its power guard, the bound."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest

from evalbot.compare.baseline import BaselineCase
from evalbot.compare.model import AgentRuns, CaseComparison
from evalbot.compare.reruns import after_reruns, drop_p_value, fdr_cutoff, rerun_budget, rerun_cases, settle_together
from evalbot.compare.stats import fisher_less
from evalbot.results import CaseResult


def _brute_less(a: int, b: int, c: int, d: int) -> Fraction:
    """P(top-left ≤ a) by drawing the ``a + c`` passes among ``a + b + c + d`` runs without replacement."""
    n, passes, row = a + b + c + d, a + c, a + b
    return sum((Fraction(comb(row, x) * comb(n - row, passes - x), comb(n, passes))
                for x in range(0, a + 1) if passes - x <= n - row), Fraction(0))


@pytest.mark.parametrize("table", [(0, 3, 5, 0), (1, 2, 10, 0), (2, 1, 10, 0), (0, 3, 1, 0), (3, 0, 2, 8),
                                   (4, 6, 7, 3), (0, 0, 3, 1), (5, 5, 0, 0)])
def test_fisher_less_is_the_hypergeometric_lower_tail(table: tuple[int, int, int, int]) -> None:
    """Checked against the tail summed by hand; 0 of 3 against 5 of 5 is 1/56, 1 of 3 against 10 of 10 is 11/286."""
    assert fisher_less(*table) == pytest.approx(float(_brute_less(*table)) if sum(table[:2]) and sum(table[2:])
                                                else 1.0)
    assert fisher_less(0, 3, 5, 0) == pytest.approx(1 / 56) and fisher_less(1, 2, 10, 0) == pytest.approx(11 / 286)
    with pytest.raises(ValueError):
        fisher_less(-1, 0, 0, 0)


def _case(runs: str, reruns: int) -> CaseResult:
    return CaseResult(eval_id="c", status="failed", runs=runs, reruns=reruns)


def test_a_real_drop_a_bad_draw_and_a_powerless_history() -> None:
    """Against ✓×10: ✗✗✗ and ✗✓✗ are real drops (p 0.003, 0.038); ✗✓✓ is a bad draw (p 0.23, inconclusive).
    Against one ✓, no outcome of 3 runs could be significant: regressed, whatever the reruns did; against a
    history that oscillated (✓✗✓, flaky), the same runs are a bad draw; a case fixed once (✗✓) is not noisy: its
    failing again still blocks."""
    long, short = BaselineCase(status="passed", history="P" * 10), BaselineCase(status="passed", history="P")
    assert after_reruns(_case("FFF", 2), long, 0.05, False)[0] == "regressed"
    category, reason, p = after_reruns(_case("FPF", 2), long, 0.05, False)
    assert (category, round(p, 3)) == ("regressed", 0.038) and "a real drop" in reason
    category, reason, p = after_reruns(_case("FPP", 2), long, 0.05, False)
    assert (category, round(p, 2)) == ("inconclusive", 0.23) and reason.endswith("not blocking")
    assert after_reruns(_case("FPP", 2), long, 0.05, True)[1].endswith("blocking because block_inconclusive is set")
    category, reason, _ = after_reruns(_case("FPP", 2), short, 0.05, False)
    assert category == "regressed" and "too short" in reason
    assert after_reruns(_case("FFF", 2), BaselineCase(status="passed", history="PFP"), 0.05, False)[0] == "inconclusive"
    assert after_reruns(_case("FFF", 2), BaselineCase(status="passed", history="FP"), 0.05, False)[0] == "regressed"
    assert drop_p_value("FPP", "PPPFPP") > drop_p_value("FPP", "PPPPPP")  # main's own failures weaken the drop


def test_reruns_are_bounded_by_a_share_of_the_run() -> None:
    """At most a quarter of the run's case runs (10 at least), whole cases only, in order; 0 per case: none."""
    assert (rerun_budget(4), rerun_budget(4000)) == (10, 1000)
    targets = [("s", f"c{i}") for i in range(9)]
    assert rerun_cases(targets, 2, 10) == targets[:5] and rerun_cases(targets, 3, 10) == targets[:3]
    assert rerun_cases(targets, 0, 10) == []


def _rerun_case(eval_id: str, outcomes: str, p: float) -> CaseComparison:
    return CaseComparison(eval_id=eval_id, category="regressed" if p < 0.05 else "inconclusive",
                          runs=AgentRuns(outcomes=outcomes, reruns=2, main="P" * 10, p_value=p))


def test_fdr_cutoff_is_benjamini_hochberg() -> None:
    """The largest p_(k) ≤ k·q/m: 0.01, 0.02, 0.04 of 4 at q 0.05 → 0.02 (0.04 > 3·0.05/4 = 0.0375); none → 0."""
    assert fdr_cutoff([0.04, 0.01, 0.02, 0.5], 0.05) == 0.02
    assert fdr_cutoff([0.2, 0.3], 0.05) == 0.0 and fdr_cutoff([], 0.05) == 0.0


def test_flipped_cases_of_one_run_are_decided_together() -> None:
    """Among 40 bad draws (p 0.23), a 1-of-3 case (p 0.038) is one more bad draw; a case that failed every run
    (p 0.003) still blocks; when most flipped cases show 1-of-3 drops together (150 of 190) they are confirmed."""
    noise = [_rerun_case(f"n{i}", "FPP", 0.231) for i in range(40)]
    one, broken = _rerun_case("one", "FPF", 0.038), _rerun_case("broken", "FFF", 0.003)
    settle_together([*noise, one, broken], 0.05, False)
    assert (one.category, broken.category) == ("inconclusive", "regressed")
    assert one.reason is not None and "Benjamini–Hochberg" in one.reason and one.reason.endswith("not blocking")
    drops = [_rerun_case(f"d{i}", "FPF", 0.038) for i in range(150)]
    settle_together([*noise, *drops], 0.05, False)
    assert {d.category for d in drops} == {"regressed"}
