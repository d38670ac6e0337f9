"""``trajectory_any_order_match`` (Vertex): 1.0 when every reference call appears in the prediction, in any order.

Extra predicted calls are allowed and an empty reference always matches.  With ``duplicates: "multiset"`` a
reference holding a call twice needs two such predicted calls; rules in evalbot.criteria.vertex_trajectory.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_trajectory import Duplicates, Key, PairMetric, build_pair, matched
from evalbot.formats.config import CriterionSpec


def score(predicted: list[Key], reference: list[Key], duplicates: Duplicates) -> float:
    """1.0 when all reference calls are found in the prediction."""
    return 1.0 if matched(reference, predicted, duplicates) == len(reference) else 0.0


def build(spec: CriterionSpec, ctx: BuildContext) -> PairMetric:
    """Factory registered under ``trajectory_any_order_match``."""
    return build_pair(spec, score)
