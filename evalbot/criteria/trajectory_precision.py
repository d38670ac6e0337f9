"""``trajectory_precision`` (Vertex): the share of predicted calls that also appear in the reference trajectory.

An empty prediction scores 1.0 against an empty reference and 0.0 otherwise (Vertex leaves it undefined);
rules in evalbot.criteria.vertex_trajectory.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_trajectory import Duplicates, Key, PairMetric, build_pair, matched
from evalbot.formats.config import CriterionSpec


def score(predicted: list[Key], reference: list[Key], duplicates: Duplicates) -> float:
    """Matched predicted calls divided by the number of predicted calls."""
    if not predicted:
        return 0.0 if reference else 1.0
    return matched(predicted, reference, duplicates) / len(predicted)


def build(spec: CriterionSpec, ctx: BuildContext) -> PairMetric:
    """Factory registered under ``trajectory_precision``."""
    return build_pair(spec, score)
