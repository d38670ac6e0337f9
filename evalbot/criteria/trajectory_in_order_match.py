"""``trajectory_in_order_match`` (Vertex): 1.0 when every reference call appears in the prediction in order.

A subsequence test: extra predicted calls are allowed, an empty reference always matches; rules in
evalbot.criteria.vertex_trajectory.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_trajectory import Duplicates, Key, PairMetric, build_pair, is_subsequence
from evalbot.formats.config import CriterionSpec


def score(predicted: list[Key], reference: list[Key], duplicates: Duplicates) -> float:
    """1.0 when the reference is a subsequence of the prediction (each predicted call used once)."""
    return 1.0 if is_subsequence(reference, predicted) else 0.0


def build(spec: CriterionSpec, ctx: BuildContext) -> PairMetric:
    """Factory registered under ``trajectory_in_order_match``."""
    return build_pair(spec, score)
