"""``tool_trajectory_avg_score``: ADK's per-invocation tool-call match (EXACT, IN_ORDER, ANY_ORDER), averaged."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import field_validator

from evalbot.criteria.base import (
    BuildContext,
    CaseInput,
    Options,
    from_score_rows,
    need_expected,
    not_evaluated,
    parse_options,
)
from evalbot.formats.config import CriterionSpec
from evalbot.formats.invocations import CallRow
from evalbot.results import MetricResult, ScoreRow, threshold_status

MatchType = Literal["EXACT", "IN_ORDER", "ANY_ORDER"]
_BY_INT: dict[int, MatchType] = {0: "EXACT", 1: "IN_ORDER", 2: "ANY_ORDER"}


class TrajectoryOptions(Options):
    """ADK's ToolTrajectoryCriterion options (plus ADK's ignored ``include_intermediate_responses_in_final``)."""

    match_type: MatchType = "EXACT"
    ignore_args: bool = False
    include_intermediate_responses_in_final: bool = False

    @field_validator("match_type", mode="before")
    @classmethod
    def _normalise(cls, value: object) -> object:
        # ADK: case-insensitive, '-' and ' ' read as '_', enum ints 0/1/2 accepted (but not the string "1").
        if isinstance(value, bool):
            raise ValueError("match_type must be EXACT, IN_ORDER or ANY_ORDER")
        if isinstance(value, int):
            if value in _BY_INT:
                return _BY_INT[value]
            raise ValueError("match_type must be EXACT, IN_ORDER or ANY_ORDER (or 0, 1, 2)")
        if isinstance(value, str):
            return value.strip().upper().replace("-", "_").replace(" ", "_")
        return value


def calls_equal(actual: CallRow, expected: CallRow, ignore_args: bool) -> bool:
    """Name equality plus Python ``==`` on args (1 == 1.0, None != {}), as ADK compares calls."""
    if actual[0] != expected[0]:
        return False
    return ignore_args or actual[1] == expected[1]


def exact_match(actual: Sequence[CallRow], expected: Sequence[CallRow], ignore_args: bool) -> bool:
    """Same length and pairwise equal in order."""
    if not ignore_args:  # the rows' own equality: the names', then the args' ``==`` (calls_equal, in C)
        return actual == expected
    return len(actual) == len(expected) and all(a[0] == e[0] for a, e in zip(actual, expected, strict=True))


def in_order_match(actual: Sequence[CallRow], expected: Sequence[CallRow], ignore_args: bool) -> bool:
    """Expected is a subsequence of actual (extra actual calls allowed)."""
    it = iter(actual)
    return all(any(calls_equal(a, e, ignore_args) for a in it) for e in expected)


def any_order_match(actual: Sequence[CallRow], expected: Sequence[CallRow], ignore_args: bool) -> bool:
    """Every expected call consumes one equal actual call (multiset containment)."""
    remaining = list(actual)
    for e in expected:
        for i, a in enumerate(remaining):
            if calls_equal(a, e, ignore_args):
                del remaining[i]
                break
        else:
            return False
    return True


_MATCHERS = {"EXACT": exact_match, "IN_ORDER": in_order_match, "ANY_ORDER": any_order_match}


@dataclass(frozen=True)
class ToolTrajectory:
    """Binary per-invocation match of actual against expected tool calls; case score is the mean."""

    threshold: float | None
    options: TrajectoryOptions
    name: str = "tool_trajectory_avg_score"

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Score every invocation 1.0 or 0.0."""
        try:
            need_expected(case, self.name)
        except ValueError as exc:
            return not_evaluated(self.threshold, str(exc), len(case.actual))
        match = _MATCHERS[self.options.match_type]
        ignore = self.options.ignore_args
        expected_calls = case.expected_call_rows or []  # a list whenever there is an expected conversation
        hit, miss = threshold_status(1.0, self.threshold), threshold_status(0.0, self.threshold)
        rows: list[ScoreRow] = [
            (invocation_id, 1.0, hit, None, None) if match(act_calls, exp_calls, ignore)
            else (invocation_id, 0.0, miss, None, None)
            for invocation_id, act_calls, exp_calls in zip(
                case.invocation_ids, case.actual_call_rows, expected_calls, strict=True)
        ]
        return from_score_rows(rows, self.threshold)


def build(spec: CriterionSpec, ctx: BuildContext) -> ToolTrajectory:
    """Factory registered under ``tool_trajectory_avg_score``."""
    return ToolTrajectory(spec.threshold, parse_options(TrajectoryOptions, spec), spec.name)
