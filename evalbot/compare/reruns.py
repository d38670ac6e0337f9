"""Reruns of flipped cases: a real drop or a bad draw?

When evalbot runs the agent itself (``compare --agent`` / ``--adk-agent``) and a case that passed on main fails
now, the agent runs that case ``rerun_flipped`` more times (policy, default 2). The case is then decided by a
one-sided Fisher exact test of its runs here (first runs and reruns) against its outcomes on main (the baseline's
history): a pass rate significantly lower at ``alpha`` is a real drop, *regressed*; so is a case that did not oscillate
on main (the flaky-case memory's rule) whose history is too short for the test ever to be significant with these
runs (not even when every run fails: the reruns then cannot excuse anything; a case fixed once, ``FP``, that fails
again blocks as before); anything else is a bad draw, *inconclusive* (shown with its runs and p-value, blocking only with
``block_inconclusive``). The flipped cases of one run are many tests at once: a drop stays confirmed only below their
Benjamini–Hochberg cutoff at ``alpha`` (:func:`settle_together`) unless it failed every run, so an unchanged
agent's bad draws rarely block, a case that broke blocks, and a real drop on many cases is caught. Reruns are bounded
run-wide (:func:`rerun_budget`); a case left without reruns is decided as before, never passed. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from evalbot.compare.baseline import STATUS_CODES, BaselineCase
from evalbot.compare.flaky import case_history
from evalbot.compare.model import CaseCategory, CaseComparison, Comparison
from evalbot.compare.stats import fisher_less
from evalbot.formats.numbers import p_value_text, score_text
from evalbot.results import CaseResult

RERUN_SHARE = 0.25
"""Reruns one run may add, as a share of the case runs it made (so an unchanged agent costs at most 1.25×)."""
MIN_RERUN_BUDGET = 10
"""Reruns always allowed, however small the run."""
FLIPPED = ("regressed",)
"""Categories of a case that passed on main and fails now (before reruns)."""


def rerun_budget(case_runs: int) -> int:
    """The most reruns a run that made ``case_runs`` case runs may add."""
    return max(MIN_RERUN_BUDGET, int(case_runs * RERUN_SHARE))


def flipped(comparison: Comparison) -> list[tuple[str, str]]:
    """``(eval set id, eval id)`` of the cases that flipped from passed on main to failing now and were not rerun,
    in the comparison's order."""
    return [(es.eval_set_id, case.current.eval_id) for es in comparison.eval_sets for case in es.cases
            if case.category in FLIPPED and case.current is not None and not case.current.reruns]


def main_outcomes(base: BaselineCase) -> str:
    """The case's outcomes on main: its history, else its one recorded status."""
    return base.history or STATUS_CODES[base.status]


def drop_p_value(runs: str, main: str) -> float:
    """One-sided Fisher exact p-value that the pass rate of ``runs`` (here) is below that of ``main`` (letters;
    only passed and failed runs count)."""
    return fisher_less(runs.count("P"), runs.count("F"), main.count("P"), main.count("F"))


def _blocking(block_inconclusive: bool) -> str:
    return "blocking because block_inconclusive is set" if block_inconclusive else "not blocking"


def after_reruns(case: CaseResult, base: BaselineCase, alpha: float,
                 block_inconclusive: bool) -> tuple[CaseCategory, str, float]:
    """A flipped, rerun case decided against main's history: ``(category, reason, p-value)``."""
    runs, main = case.runs or "", main_outcomes(base)
    p = drop_p_value(runs, main)
    shown = p_value_text(p)
    if p < alpha:
        return "regressed", f"a real drop: its {case.reruns} rerun(s) confirm it (Fisher exact {shown})", p
    history = case_history(base)
    steady = history is None or not history.flaky
    if steady and drop_p_value("F" * (runs.count("P") + runs.count("F")), main) >= alpha:
        return "regressed", (f"main's history ({len(main)} outcome(s)) is too short for its {case.reruns} rerun(s) to "
                             "tell a bad draw from a real drop (even failing every run would not be significant), so "
                             "it counts as a regression; the history grows with each refresh of the baseline"), p
    return "inconclusive", (f"a bad draw: its {case.reruns} rerun(s) show no significant drop against main "
                            f"(Fisher exact {shown}, α {alpha:g}); {_blocking(block_inconclusive)}"), p


def fdr_cutoff(p_values: Sequence[float], q: float) -> float:
    """The Benjamini–Hochberg cutoff at false-discovery rate ``q``: the largest ``p_(k)`` with ``p_(k) ≤ k·q/m``
    (0 when there is none). Testing every flipped case of a run at ``q`` alone would block about one bad draw in
    twenty; below this cutoff at most a share ``q`` of the confirmed drops are expected to be bad draws."""
    ranked = sorted(p_values)
    m = len(ranked)
    return max((p for k, p in enumerate(ranked, start=1) if p <= k * q / m), default=0.0)


def settle_together(cases: Sequence[CaseComparison], alpha: float, block_inconclusive: bool) -> None:
    """Decide the rerun cases of one comparison together (in place). A case that failed every run, reruns
    included, keeps its own test's verdict (an agent that breaks one case must block however many cases flipped by
    chance). A case that passed some runs stays *regressed* only below the run's Benjamini–Hochberg cutoff over every
    rerun case's p-value; above it, it is a bad draw (*inconclusive*). Cases regressed because their history was too
    short are kept."""
    tested = [c for c in cases if c.runs is not None and c.runs.reruns and c.runs.p_value is not None
              and c.category in ("regressed", "inconclusive")]
    cutoff = fdr_cutoff([c.runs.p_value for c in tested if c.runs is not None and c.runs.p_value is not None], alpha)
    block = _blocking(block_inconclusive)
    for case in tested:
        if case.runs is None or case.runs.p_value is None or "P" not in case.runs.outcomes:
            continue
        p = case.runs.p_value
        if case.category == "regressed" and cutoff < p < alpha:
            case.category = "inconclusive"
            case.reason = (f"a bad draw: its own test gives {p_value_text(p)}, but not below {score_text(cutoff)}, "
                           f"the cutoff for the {len(tested)} rerun case(s) of this run tested together "
                           f"(Benjamini–Hochberg at α {alpha:g}); {block}")


def capped_note(rerun: int, wanted: int, budget: int, case_runs: int) -> str:
    """The notice when the run-wide bound left flipped cases without reruns."""
    return (f"reruns capped: {rerun} of {wanted} flipped case(s) were rerun (at most {budget:,} reruns in this run: "
            f"{RERUN_SHARE:.0%} of its {case_runs:,} case runs); the others are decided on their first runs")


def not_possible_note(comparison: Comparison, per_case: int) -> str | None:
    """With recorded runs only: that flipped cases could not be rerun, and how to have them rerun (None: no case
    flipped, or reruns are off)."""
    count = sum(1 for es in comparison.eval_sets for case in es.cases if case.category in FLIPPED)
    if not count or per_case <= 0:
        return None
    return (f"{count} flipped case(s) could not be rerun to tell a real drop from a bad draw: this run scored "
            f"recorded runs. Let evalbot run the agent (evalbot compare --agent MODULE:CALLABLE or --adk-agent "
            f"PATH) to rerun each flipped case {per_case} more time(s) (rerun_flipped)")


def note_not_rerun(comparison: Comparison, per_case: int) -> None:
    """Add :func:`not_possible_note` to ``comparison``'s notes when it applies (every comparison of recorded runs:
    the CLI without an agent, the Action's first stage and the fork-safe second stage)."""
    note = not_possible_note(comparison, per_case)
    comparison.notes = [*comparison.notes, *([note] if note else [])]


def rerun_cases(targets: Sequence[tuple[str, str]], per_case: int, budget: int) -> list[tuple[str, str]]:
    """The targets that fit in the budget, in order."""
    return list(targets[: budget // per_case]) if per_case > 0 else []
