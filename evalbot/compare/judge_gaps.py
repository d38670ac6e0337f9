"""Judged verdicts a run could not obtain: how many, why, and whether the judge failed or was never configured.

Pure: reads a Report. A judged verdict is one invocation's verdict on a judged criterion (a case-level result
without per-invocation verdicts counts as one; an invocation marked ``informational`` has no verdict of its own,
as the earlier turns of a conversation judged once on its last). It is *missing* when its status is
``not_evaluated``: the judge call failed (HTTP error, timeout, deadline, garbled or empty answer), the answer
carried no usable or a conflicting verdict, or no judge was configured. The last kind (``no_judge``) is the expected state of a fork PR's
first stage, which has no secrets, and is a warning there; where the credentials are expected (a same-repository
pull request, a push, a merge queue, a baseline refresh) it is a judge failure like the others.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from evalbot.judges.budget import BUDGET_MARK
from evalbot.results import CaseView, EvalSetReport, Report

NO_JUDGE_MARK = "needs an LLM judge: "
"""What ``criteria.judged.unavailable`` puts in the reason of a criterion that had no judge to call."""
NO_SERVICE_MARK = "needs the Vertex AI evaluation service: "
"""What ``criteria.vertex_service.no_service`` puts in the reason of a criterion whose service credentials are not
set: missing credentials too, like NO_JUDGE_MARK."""
_REASON_CHARS = 300
_NO_JUDGE_CHARS = 480
"""The no-judge reason is evalbot's own message naming the variables to set: kept whole (an artifact's is capped)."""


@dataclass(frozen=True)
class JudgeGaps:
    """Counts of judged verdicts: all of them, those the judge failed to give, those without a judge at all."""

    total: int = 0
    failed: int = 0
    no_judge: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    """Why the ``failed`` ones failed, by reason text (most common first with ``most_common``)."""
    no_judge_reason: str | None = None
    budget: int = 0
    """Of the ``failed`` ones, those the run's judge budget left not evaluated (judges.budget)."""

    def failure_message(self, details: str = "the job summary") -> str | None:
        """The headline sentence for judge failures (pointing to ``details`` for the other reasons), or None when
        there were none."""
        if not self.failed:
            return None
        if self.budget:
            why = next((r for r, _ in self.reasons.most_common() if BUDGET_MARK in r), "")
            why = why.split(": ", 1)[1] if ": " in why else why
            rest = self.failed - self.budget
            more = f"; {rest} more not evaluated by other judge failures (see {details})" if rest else ""
            return f"judge budget reached: {self.budget} of {self.total} verdicts not evaluated — {why}{more}"
        top = self.reasons.most_common(2)
        why = top[0][0] if top else "no reason given"
        others = len(self.reasons) - 1
        more = f" (and {others} other reason{'s' if others > 1 else ''}; see {details})" if others > 0 else ""
        return (f"judge unavailable: {self.failed} of {self.total} judged verdict(s) not evaluated — "
                f"{why}{more}")

    def no_judge_message(self, *, expected: bool = False) -> str | None:
        """The headline sentence for judged criteria that had no judge (missing credentials), or None. ``expected``:
        the run should have had the credentials (anything but a fork's first stage): said as a failure."""
        if not self.no_judge:
            return None
        why = self.no_judge_reason or "no judge is configured"
        lead = "judge credentials missing" if expected else "judged criteria not measured"
        return f"{lead}: {self.no_judge} of {self.total} judged verdict(s) not evaluated — {why}"


def _clip(text: str, limit: int = _REASON_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters, cut at a word boundary (never mid-word) with "…"."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,;:—-") + "…"


class GapTally:
    """The judged verdicts counted one case at a time (a run that streams its cases keeps none): what
    :func:`judge_gaps` gives once every case was added in report order."""

    def __init__(self) -> None:
        self.total = self.failed = self.no_judge = self.budget = 0
        self.reasons: Counter[str] = Counter()
        self.no_judge_reason: str | None = None
        self._judged: dict[int, set[str]] = {}

    def add(self, index: int, es: EvalSetReport, case: CaseView) -> None:
        """Count the judged verdicts of one case of the ``index``-th eval set (a CaseStream)."""
        judged = self._judged.get(index)
        if judged is None:
            judged = self._judged[index] = {c.name for c in es.criteria if c.judged and c.error is None}
        if not judged:
            return
        for name, metric in case.metrics.items():
            if name not in judged or metric.status in ("error", "informational"):
                continue
            verdicts: list[tuple[str, str | None]] = [
                (v.status, v.reason) for v in metric.per_invocation if v.status != "informational"]
            verdicts = verdicts or [(metric.status, metric.reason)]
            for status, why in verdicts:
                self.total += 1
                if status != "not_evaluated":
                    continue
                reason = why or metric.reason or "the judge gave no verdict"
                mark = next((m for m in (NO_JUDGE_MARK, NO_SERVICE_MARK) if m in reason), None)
                if mark is not None:
                    self.no_judge += 1
                    self.no_judge_reason = self.no_judge_reason or _clip(
                        f"{'' if mark == NO_JUDGE_MARK else 'Vertex AI evaluation service: '}"
                        f"{reason.split(mark, 1)[1]}", _NO_JUDGE_CHARS)
                else:
                    self.failed += 1
                    self.budget += BUDGET_MARK in reason
                    self.reasons[_clip(reason)] += 1

    def absorb(self, other: GapTally) -> None:
        """Count after these verdicts those ``other`` counted over the cases that follow them in the report (``run
        --jobs``: a later job's): the same counts as adding all the cases in that order."""
        self.total += other.total
        self.failed += other.failed
        self.no_judge += other.no_judge
        self.budget += other.budget
        for reason, count in other.reasons.items():
            self.reasons[reason] += count
        self.no_judge_reason = self.no_judge_reason or other.no_judge_reason

    def gaps(self) -> JudgeGaps:
        """The counts so far."""
        return JudgeGaps(total=self.total, failed=self.failed, no_judge=self.no_judge, reasons=self.reasons,
                         no_judge_reason=self.no_judge_reason, budget=self.budget)


def judge_gaps(report: Report) -> JudgeGaps:
    """Count the run's judged verdicts and the missing ones, by cause."""
    tally = GapTally()
    for index, es in enumerate(report.eval_sets):
        if any(c.judged and c.error is None for c in es.criteria):  # else add counts nothing of its cases
            for case in es.cases:
                tally.add(index, es, case)
    return tally.gaps()


def unmeasured_for_baseline(report: Report) -> str | None:
    """Why ``report`` must not become the baseline, or None: judged verdicts it lacks (the judge failed or was not
    configured) would be stored as not evaluated, and every pull request would then leave them uncompared, so a
    regression there could never block."""
    gaps = judge_gaps(report)
    message = gaps.failure_message() or gaps.no_judge_message()
    if message is None:
        return None
    return (f"{message}; a baseline without these verdicts would leave them uncompared on every pull request "
            "(a regression there could not block)")
