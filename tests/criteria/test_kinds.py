"""Criterion kinds are declared by the registry: judged, informational, about tool calls."""

from __future__ import annotations

from evalbot.criteria import CRITERIA, INFORMATIONAL, JUDGED, TOOL_CALLS, about_tool_calls


def test_every_declared_kind_names_a_registered_criterion() -> None:
    """JUDGED and TOOL_CALLS only name criteria the registry can build (a typo would silently change a view)."""
    known = set(CRITERIA) | set(INFORMATIONAL)
    assert JUDGED <= known and TOOL_CALLS <= known


def test_tool_call_criteria_come_from_the_registry_not_the_name() -> None:
    """A registered criterion is about tool calls only if declared so; unknown names fall back to their wording."""
    assert about_tool_calls("trajectory_recall") and about_tool_calls("tool_call_count_v1")
    assert not about_tool_calls("response_match_score") and not about_tool_calls("hallucinations_v1")
    assert about_tool_calls("essential_tools_present")  # a custom metric: read from its name
    assert not about_tool_calls("politeness")
