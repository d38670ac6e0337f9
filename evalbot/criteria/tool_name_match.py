"""``tool_name_match`` (Vertex): 1.0 when the predicted call has the reference call's tool name.

Position by position over the longer side, mean over positions; rules in evalbot.criteria.vertex_tool_call.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_tool_call import Call, ToolCallPairMetric, build_pair
from evalbot.formats.config import CriterionSpec


def score(predicted: Call, reference: Call) -> float:
    """1.0 for equal names."""
    return 1.0 if predicted.name == reference.name else 0.0


def build(spec: CriterionSpec, ctx: BuildContext) -> ToolCallPairMetric:
    """Factory registered under ``tool_name_match`` (it takes no option)."""
    return build_pair(spec, score)
