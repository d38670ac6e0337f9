"""``tool_call_valid`` (Vertex): 1.0 when the prediction holds at least one well-formed tool call and no malformed one.

A call is well formed with a non-empty name and object arguments; no reference is needed, so scenario cases are
scored too.  Rules (where the calls come from) in evalbot.criteria.vertex_tool_call.
"""

from __future__ import annotations

from evalbot.criteria.base import BuildContext
from evalbot.criteria.vertex_tool_call import ToolCallValid, build_valid
from evalbot.formats.config import CriterionSpec


def build(spec: CriterionSpec, ctx: BuildContext) -> ToolCallValid:
    """Factory registered under ``tool_call_valid`` (it takes no option)."""
    return build_valid(spec)
