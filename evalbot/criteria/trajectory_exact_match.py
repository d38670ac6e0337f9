"""``trajectory_exact_match`` (Vertex): 1.0 when the predicted calls equal the reference calls one by one, else 0.0.

Same length and position-wise equal calls (two empty trajectories match); rules in evalbot.criteria.vertex_trajectory.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_trajectory import Duplicates, Key, PairMetric, build_pair
from evalbot.formats.config import CriterionSpec


def score(predicted: list[Key], reference: list[Key], duplicates: Duplicates) -> float:
    """1.0 for identical trajectories (order and count matter, so ``duplicates`` does not)."""
    return 1.0 if predicted == reference else 0.0


def build(spec: CriterionSpec, ctx: BuildContext) -> PairMetric:
    """Factory registered under ``trajectory_exact_match``."""
    return build_pair(spec, score)
