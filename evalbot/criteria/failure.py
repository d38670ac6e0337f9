"""``failure`` (Vertex's ``failure`` column): 1.0 when the agent failed on an invocation, 0.0 when it did not.

The case score is the failure rate (lower is better, as in Vertex's ``failure/mean``).  Without a threshold the
metric is informational; a threshold is the maximum failure rate: an invocation or case passes when its score is
``<= threshold`` (so ``0`` fails any case with a failure).  Only runs that record failures (Vertex rows with a
``failure`` value) are evaluated; other invocations are not evaluated, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalbot.criteria.base import BuildContext, CaseInput, Options, parse_options
from evalbot.formats.config import CriterionSpec
from evalbot.formats.vertex import failure_of
from evalbot.results import InvocationScore, MetricResult, maximum_status, mean

NO_FAILURE_FLAG = "the actual run records no failure flag (Vertex 'failure' column)"


@dataclass(frozen=True)
class Failure:
    """Failure flag per invocation; the case score is the failure rate, checked against a maximum rate."""

    threshold: float | None
    name: str = "failure"

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Score 1.0 per failed invocation; the case score is their mean."""
        per: list[InvocationScore] = []
        flags: list[float] = []
        for act in case.actual:
            inv_id = act.invocation_id or None
            failed = failure_of(act)
            if failed is None:
                per.append(InvocationScore(invocation_id=inv_id, status="not_evaluated", reason=NO_FAILURE_FLAG))
                continue
            value = 1.0 if failed else 0.0
            flags.append(value)
            status = maximum_status(value, self.threshold)
            per.append(InvocationScore(invocation_id=inv_id, score=value, status=status))
        rate = mean(flags)
        if rate is None:
            why = NO_FAILURE_FLAG if case.actual else "the case has no invocations"
            return MetricResult(status="not_evaluated", threshold=self.threshold, per_invocation=per, reason=why)
        failures = int(sum(flags))
        reason: str | None = f"the agent failed on {failures} of {len(flags)} invocation(s)" if failures else None
        return MetricResult(
            score=rate,
            status=maximum_status(rate, self.threshold),
            threshold=self.threshold,
            per_invocation=per,
            reason=reason,
            details={"value": rate, "failures": failures, "lower_is_better": True},
        )


def build(spec: CriterionSpec, ctx: BuildContext) -> Failure:
    """Factory registered under ``failure`` (no options)."""
    parse_options(Options, spec)
    return Failure(spec.threshold, spec.name)
