"""``latency`` (Vertex's ``latency_in_seconds``): seconds the agent took per invocation; a threshold is a maximum.

Seconds are not a [0, 1] score, so ``score`` stays null and the seconds are in ``details`` (``value`` per
invocation; ``value`` = mean and ``max`` per case).  Without a threshold the metric is informational; with one,
an invocation passes when it took at most ``threshold`` seconds and the case passes when every timed invocation
did.  The seconds come from ``Invocation.duration`` (a Vertex row's ``latency_in_seconds``, or the duration ADK
records); an invocation without one is not evaluated, and so is a case where none is timed.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalbot.criteria.base import BuildContext, CaseInput, Options, parse_options
from evalbot.formats.config import CriterionSpec
from evalbot.results import InvocationScore, MetricResult, maximum_status, mean

NO_LATENCY = "the actual run records no latency (Vertex latency_in_seconds or the invocation's duration)"


@dataclass(frozen=True)
class Latency:
    """Wall-clock seconds per invocation, checked against a maximum when a threshold is configured."""

    threshold: float | None
    name: str = "latency"

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Report each invocation's seconds; fail the case when any timed invocation exceeds the maximum."""
        per: list[InvocationScore] = []
        timed: list[float] = []
        for act in case.actual:
            inv_id = act.invocation_id or None
            if act.duration is None:
                per.append(InvocationScore(invocation_id=inv_id, status="not_evaluated", reason=NO_LATENCY))
                continue
            timed.append(act.duration)
            details = {"value": act.duration, "unit": "seconds"}
            status = maximum_status(act.duration, self.threshold)
            per.append(InvocationScore(invocation_id=inv_id, status=status, details=details))
        if not timed:
            why = NO_LATENCY if case.actual else "the case has no invocations"
            return MetricResult(status="not_evaluated", threshold=self.threshold, per_invocation=per, reason=why)
        worst = max(timed)
        untimed = len(per) - len(timed)
        reason: str | None = f"{untimed} of {len(per)} invocation(s) record no latency" if untimed else None
        if self.threshold is not None and worst > self.threshold:
            reason = f"an invocation took {worst:g} s, more than the {self.threshold:g} s allowed" + (
                f"; {reason}" if reason else ""
            )
        return MetricResult(
            status=maximum_status(worst, self.threshold),
            threshold=self.threshold,
            per_invocation=per,
            reason=reason,
            details={"value": mean(timed), "max": worst, "unit": "seconds"},
        )


def build(spec: CriterionSpec, ctx: BuildContext) -> Latency:
    """Factory registered under ``latency`` (no options)."""
    parse_options(Options, spec)
    return Latency(spec.threshold, spec.name)
