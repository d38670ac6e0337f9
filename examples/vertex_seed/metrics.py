"""The seed example's custom computation metric, in Vertex's ``CustomMetric`` contract (one instance dict per row)."""

from __future__ import annotations

from typing import Any

REQUIRED_TOOLS = ("get_devices",)


def essential_tools_present(instance: dict[str, Any]) -> dict[str, Any]:
    """The share of REQUIRED_TOOLS that the predicted trajectory calls at least once."""
    called = {call["tool_name"] for call in instance["predicted_trajectory"] or []}
    found = [tool for tool in REQUIRED_TOOLS if tool in called]
    return {"essential_tools_present": len(found) / len(REQUIRED_TOOLS),
            "explanation": f"called {len(found)} of {len(REQUIRED_TOOLS)} essential tools"}
