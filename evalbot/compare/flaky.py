"""Flaky-case memory: what a case's outcomes on main say about a regression on a pull request.

The baseline keeps each case's last outcomes on main (``BaselineCase.history``, e.g. ``PPFPPPFPPP``). A case that
regresses on a pull request although it *oscillated* on main within that window (changed outcome at least twice:
passed, failed, passed again, or failed, passed, failed again) is *flaky*: its failure here may be the same noise,
so it is shown with its history and does not block unless ``block_flaky`` is set. One change of outcome is not
flakiness: a case that was broken and then fixed (``FFFPP``), or whose accepted regression was then fixed, changed
once, for a reason, so a pull request that reverts the fix blocks as any regression does. Pure.
"""

from __future__ import annotations

from itertools import pairwise

from evalbot.compare.baseline import BaselineCase
from evalbot.results import StrictModel

FLAKY_FLIPS = 2
"""Changes of outcome on main (passed ↔ failed) that make a regressed case flaky: it must have oscillated."""
SYMBOLS = {"P": "✓", "F": "✗", "E": "!", "N": "·", "I": "i"}
"""How each recorded outcome is drawn in the comment (passed, failed, error, not evaluated, informational)."""


def symbols(outcomes: str) -> str:
    """Recorded outcomes (``PPFPP``) as drawn: ``✓✓✗✓✓``."""
    return "".join(SYMBOLS.get(ch, "?") for ch in outcomes)


class CaseHistory(StrictModel):
    """A case's recorded outcomes on main, oldest first, and what they say."""

    outcomes: str
    """One character per run (see :data:`evalbot.compare.baseline.STATUS_CODES`)."""
    runs: int
    """Runs recorded."""
    failed: int
    """Runs in which the case failed."""
    flips: int
    """Changes between passed and failed from one decided run to the next (errors and unevaluated runs skipped)."""
    decided: int
    """Runs that passed or failed."""

    @property
    def flaky(self) -> bool:
        """Whether the case oscillated on main within the window (changed outcome at least twice)."""
        return self.flips >= FLAKY_FLIPS

    @property
    def symbols(self) -> str:
        """``✓✓✗✓✓``."""
        return symbols(self.outcomes)

    @property
    def flip_rate(self) -> float:
        """Flips per transition between decided runs (0 when fewer than two)."""
        return self.flips / (self.decided - 1) if self.decided > 1 else 0.0

    def describe(self) -> str:
        """``✓✓✗✓✓✓✗✓✓✓ on main (oldest first): failed 2 of 10 runs, 4 flips in 9 transitions (44%)``."""
        if not self.flips:
            return f"{self.symbols} on main (oldest first): the same outcome in all {self.runs} recorded runs"
        if not self.flaky:
            return (f"{self.symbols} on main (oldest first): failed {self.failed} of {self.runs} runs, one change of "
                    "outcome (a single change is not flakiness)")
        flips = f"{self.flips} flip{'s' if self.flips != 1 else ''}"
        return (f"{self.symbols} on main (oldest first): failed {self.failed} of {self.runs} runs, {flips} in "
                f"{self.decided - 1} transition{'s' if self.decided != 2 else ''} ({self.flip_rate:.0%})")


def case_history(case: BaselineCase | None) -> CaseHistory | None:
    """The history a baseline case records, or None (a baseline written before evalbot kept one)."""
    if case is None or not case.history:
        return None
    outcomes = case.history
    decided = [ch for ch in outcomes if ch in "PF"]
    flips = sum(1 for a, b in pairwise(decided) if a != b)
    return CaseHistory(outcomes=outcomes, runs=len(outcomes), failed=outcomes.count("F"), flips=flips,
                       decided=len(decided))
