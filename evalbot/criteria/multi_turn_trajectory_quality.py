"""``multi_turn_trajectory_quality_v1`` (ADK 2.13, Vertex AI evaluation service): how well did the agent get there,
over the whole conversation (reference-free; unlike task success, the path counts)? A score in [0, 1] from the
service's predefined metric of that name; the verdict is the last invocation's and the case's. Requests and scoring
in evalbot.criteria.vertex_service; untested against the real service.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_service import MultiTurnMetric, build_multi_turn
from evalbot.formats.config import CriterionSpec

NAME = "multi_turn_trajectory_quality_v1"


def build(spec: CriterionSpec, ctx: BuildContext) -> MultiTurnMetric:
    """Factory registered under ``multi_turn_trajectory_quality_v1``."""
    return build_multi_turn(spec, ctx, NAME)
