"""Shared machinery of Vertex AI's trajectory metrics: tool-call identity, matching rules and per-invocation scoring.

Vertex computes these metrics in its service and publishes only one-line definitions, so evalbot chooses (and
docs/vertex.md explains) the rules below.  They apply to Vertex datasets and to ADK eval sets alike.

* **Call identity.** Two calls match when the tool names are equal and the arguments are deeply equal as parsed
  JSON: object key order is ignored, numbers compare by value (``1`` equals ``1.0``), booleans are not numbers
  (``true`` differs from ``1``), strings are not numbers (``"1"`` differs from ``1``), and ``null`` arguments
  differ from ``{}``.  Vertex sends ``json.dumps`` strings, whose comparison is unknown; parsed values make key
  order and ``23`` vs ``23.0`` irrelevant.  Option ``ignore_args: true`` compares names only.
* **Duplicates.** ``duplicates: "membership"`` (default, the literal reading of Vertex's docs): a call counts as
  matched when an equal call appears anywhere on the other side, so ``[a, a]`` against ``[a]`` has precision 1.0.
  ``duplicates: "multiset"``: each call matches at most one call on the other side (precision 0.5 there).
  ``trajectory_in_order_match`` is a subsequence test and ``trajectory_exact_match`` a position-wise test in both.
* **Empty trajectories** get explicit scores (Vertex rejects such rows and silently drops them from its means):
  an empty reference is matched by any prediction in ``in_order``/``any_order`` (1.0) and fully recalled (1.0);
  ``exact`` is 1.0 only when both are empty; ``precision`` of an empty prediction is 1.0 when the reference is
  empty too, else 0.0 (an agent that skips every expected call must not look precise).
* **Missing trajectories.** A Vertex row without ``predicted_trajectory`` / ``reference_trajectory`` is
  ``not_evaluated`` with the reason, except that an invocation that failed (``failure`` = 1) with no predicted
  trajectory is scored as an empty one.  ADK invocations without intermediate data have an empty trajectory.
* **Scores and verdicts.** Per invocation a score in [0, 1] (exact doubles, not Vertex's float32: 1/3, not
  0.33333334); the case score is the mean.  No threshold: ``informational``; with one: ``score >= threshold``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalbot.criteria.base import CaseInput, Options, need_expected, not_evaluated, parse_options, score_invocation
from evalbot.formats.adk import FunctionCall, Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.formats.vertex import failure_of, trajectory_given
from evalbot.results import InvocationScore, MetricResult, clean_score, mean, metric_result, threshold_status

Duplicates = Literal["membership", "multiset"]
Key = tuple[Hashable, ...]


class PairOptions(Options):
    """Options of the five reference-based trajectory metrics."""

    ignore_args: bool = False
    duplicates: Duplicates = "membership"


def canonical(value: Any) -> Hashable:
    """A hashable form of parsed JSON in which equal values (per the rules above) are equal."""
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):  # Python compares int and float exactly by value, with equal hashes
        return ("nan",) if isinstance(value, float) and math.isnan(value) else ("number", value)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return ("object", frozenset((str(k), canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(canonical(v) for v in value))
    return ("other", repr(value))


def call_key(call: FunctionCall, ignore_args: bool) -> Key:
    """What identifies a call: its name, plus its canonical arguments unless they are ignored."""
    return (call.name,) if ignore_args else (call.name, canonical(call.args))


def matched(side: Sequence[Key], other: Sequence[Key], duplicates: Duplicates) -> int:
    """How many calls of ``side`` are found in ``other`` (each ``other`` call used once when ``multiset``)."""
    if duplicates == "multiset":
        return sum((Counter(side) & Counter(other)).values())
    present = set(other)
    return sum(1 for key in side if key in present)


def is_subsequence(reference: Sequence[Key], predicted: Sequence[Key]) -> bool:
    """The reference calls appear in the prediction in the same order (extra calls allowed)."""
    it = iter(predicted)
    return all(any(p == r for p in it) for r in reference)


def given_calls(
    invocation: Invocation, calls: Sequence[FunctionCall], side: str
) -> tuple[Sequence[FunctionCall] | None, str | None]:
    """The invocation's ``calls``, or None with the reason when the row gave no trajectory (a failed invocation's
    missing prediction is empty, with a note saying so)."""
    if trajectory_given(invocation):
        return calls, None
    if side == "predicted" and failure_of(invocation):
        return [], "the agent failed on this invocation (failure = 1); no predicted_trajectory: scored as empty"
    return None, f"the row gives no {side}_trajectory"


def _trajectory(
    invocation: Invocation, calls: Sequence[FunctionCall], side: str, ignore_args: bool
) -> tuple[list[Key] | None, str | None]:
    """The keys of the invocation's ``calls``, or None with the reason when the row gave no trajectory."""
    given, note = given_calls(invocation, calls, side)
    return (None if given is None else [call_key(c, ignore_args) for c in given]), note


def summarize(scores: list[InvocationScore], threshold: float | None) -> MetricResult:
    """Case result: mean of the invocation scores; when none could be scored, the first reason says why."""
    overall = clean_score(mean(s.score for s in scores))
    reason = None
    if overall is None:
        reason = next((s.reason for s in scores if s.reason), "the case has no invocations to score")
    return metric_result(overall, threshold_status(overall, threshold), threshold, scores, reason)


PairScorer = Callable[[list[Key], list[Key], Duplicates], float]
"""Scores (predicted keys, reference keys, duplicates rule) in [0, 1]."""


@dataclass(frozen=True)
class PairMetric:
    """A reference-based trajectory metric: predicted calls against the expected invocation's calls."""

    name: str
    threshold: float | None
    options: PairOptions
    scorer: PairScorer

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Score each invocation against the expected one; the case score is the mean."""
        try:
            expected = need_expected(case, self.name)
        except ValueError as exc:
            return not_evaluated(self.threshold, str(exc), len(case.actual))
        ignore = self.options.ignore_args
        expected_calls = case.expected_calls or []  # a list whenever there is an expected conversation
        scores: list[InvocationScore] = []
        pairs = zip(case.actual, case.actual_calls, expected, expected_calls, strict=True)
        for act, act_calls, exp, exp_calls in pairs:
            predicted, p_note = _trajectory(act, act_calls, "predicted", ignore)
            reference, r_note = _trajectory(exp, exp_calls, "reference", ignore)
            if reference is None or predicted is None:
                scores.append(score_invocation(None, self.threshold, act, reason=r_note or p_note))
                continue
            details = {"predicted_calls": len(predicted), "reference_calls": len(reference)}
            score = self.scorer(predicted, reference, self.options.duplicates)
            scores.append(score_invocation(score, self.threshold, act, reason=p_note, details=details))
        return summarize(scores, self.threshold)


def build_pair(spec: CriterionSpec, scorer: PairScorer) -> PairMetric:
    """Factory body shared by the five reference-based metrics (invalid options raise ConfigError)."""
    return PairMetric(spec.name, spec.threshold, parse_options(PairOptions, spec), scorer)
