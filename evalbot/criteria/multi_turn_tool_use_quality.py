"""``multi_turn_tool_use_quality_v1`` (ADK 2.13, Vertex AI evaluation service): the quality of the function calls
made during the conversation (reference-free). A score in [0, 1] from the service's predefined metric of that
name; the verdict is the last invocation's and the case's. Only calls recorded as ADK's ``invocation_events``
reach the service (hand-written ``tool_uses`` do not, as in ADK). Requests and scoring in
evalbot.criteria.vertex_service; untested against the real service.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_service import MultiTurnMetric, build_multi_turn
from evalbot.formats.config import CriterionSpec

NAME = "multi_turn_tool_use_quality_v1"


def build(spec: CriterionSpec, ctx: BuildContext) -> MultiTurnMetric:
    """Factory registered under ``multi_turn_tool_use_quality_v1``."""
    return build_multi_turn(spec, ctx, NAME)
