"""``trajectory_single_tool_use`` (Vertex): 1.0 when the predicted trajectory calls the tool named in ``tool_name``.

Name only: arguments, order and the number of calls do not matter; no reference is needed, so scenario cases are
scored too.  An empty prediction scores 0.0; a Vertex row without ``predicted_trajectory`` is not evaluated
(see evalbot.criteria.vertex_trajectory).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import Field

from evalbot.criteria.base import BuildContext, CaseInput, Options, parse_options, score_invocation
from evalbot.criteria.vertex_trajectory import summarize
from evalbot.formats.config import CriterionSpec
from evalbot.formats.vertex import failure_of, trajectory_given
from evalbot.results import InvocationScore, MetricResult


class SingleToolUseOptions(Options):
    """The tool to look for (required, as in Vertex's TrajectorySingleToolUse)."""

    tool_name: str = Field(min_length=1)


@dataclass(frozen=True)
class SingleToolUse:
    """Per invocation 1.0 if any predicted call has the tool's name, else 0.0; the case score is the mean."""

    name: str
    threshold: float | None
    tool_name: str

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Look for the tool in every actual invocation."""
        scores: list[InvocationScore] = []
        for act, calls in zip(case.actual, case.actual_calls, strict=True):
            if not trajectory_given(act) and not failure_of(act):
                reason = "the row gives no predicted_trajectory"
                scores.append(score_invocation(None, self.threshold, act, reason=reason))
                continue
            used = sum(1 for call in calls if call.name == self.tool_name)
            details = {"tool_name": self.tool_name, "calls": used}
            scores.append(score_invocation(1.0 if used else 0.0, self.threshold, act, details=details))
        return summarize(scores, self.threshold)


def build(spec: CriterionSpec, ctx: BuildContext) -> SingleToolUse:
    """Factory registered under ``trajectory_single_tool_use`` (a missing ``tool_name`` raises ConfigError)."""
    return SingleToolUse(spec.name, spec.threshold, parse_options(SingleToolUseOptions, spec).tool_name)
