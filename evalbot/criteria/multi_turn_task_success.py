"""``multi_turn_task_success_v1`` (ADK 2.13, Vertex AI evaluation service): did the agent achieve the goals of the
conversation? A score in [0, 1] from the service's predefined metric of that name, which generates rubrics and
judges them on the whole conversation; the verdict is the last invocation's (the earlier ones carry none) and the
case's. Requests and scoring in evalbot.criteria.vertex_service; untested against the real service.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_service import MultiTurnMetric, build_multi_turn
from evalbot.formats.config import CriterionSpec

NAME = "multi_turn_task_success_v1"


def build(spec: CriterionSpec, ctx: BuildContext) -> MultiTurnMetric:
    """Factory registered under ``multi_turn_task_success_v1``."""
    return build_multi_turn(spec, ctx, NAME)
