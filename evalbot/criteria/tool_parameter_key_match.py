"""``tool_parameter_key_match`` (Vertex): the share of the reference call's parameter names the predicted call has.

Position by position over the longer side, mean over positions; rules in evalbot.criteria.vertex_tool_call.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_tool_call import Call, ToolCallPairMetric, build_pair, key_share
from evalbot.formats.config import CriterionSpec


def score(predicted: Call, reference: Call) -> float:
    """Reference parameter names present in the predicted call, over the reference's count."""
    got = predicted.args or {}
    return key_share(predicted, reference, lambda key: key in got)


def build(spec: CriterionSpec, ctx: BuildContext) -> ToolCallPairMetric:
    """Factory registered under ``tool_parameter_key_match`` (it takes no option)."""
    return build_pair(spec, score)
