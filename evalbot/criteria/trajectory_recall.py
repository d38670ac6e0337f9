"""``trajectory_recall`` (Vertex): the share of reference calls that also appear in the predicted trajectory.

An empty reference is fully recalled (1.0) whatever the prediction (extra calls show in trajectory_precision);
rules in evalbot.criteria.vertex_trajectory.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_trajectory import Duplicates, Key, PairMetric, build_pair, matched
from evalbot.formats.config import CriterionSpec


def score(predicted: list[Key], reference: list[Key], duplicates: Duplicates) -> float:
    """Matched reference calls divided by the number of reference calls."""
    if not reference:
        return 1.0
    return matched(reference, predicted, duplicates) / len(reference)


def build(spec: CriterionSpec, ctx: BuildContext) -> PairMetric:
    """Factory registered under ``trajectory_recall``."""
    return build_pair(spec, score)
