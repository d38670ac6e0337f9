"""``tool_parameter_kv_match`` (Vertex): the share of the reference call's parameters the predicted call has with an
equal value.

Option ``use_strict_string_match`` (Vertex's; default false); position by position over the longer side, mean over
positions; rules in evalbot.criteria.vertex_tool_call.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_tool_call import ToolCallPairMetric, build_kv
from evalbot.formats.config import CriterionSpec


def build(spec: CriterionSpec, ctx: BuildContext) -> ToolCallPairMetric:
    """Factory registered under ``tool_parameter_kv_match``."""
    return build_kv(spec)
