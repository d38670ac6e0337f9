"""The pydantic mirror of ADK's eval-set model: casing, strictness and the intermediate-data union."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from evalbot.formats.adk import EvalCase, EvalSet, IntermediateData, Invocation, InvocationEvents, UserPersona
from tests.fakes.builders import case, inv


def test_intermediate_union_is_chosen_by_key() -> None:
    """``{}`` and ``tool_uses`` select IntermediateData; ``invocation_events`` (either casing) selects the events form."""
    assert isinstance(Invocation.model_validate(inv(intermediate_data={})).intermediate_data, IntermediateData)
    uses = Invocation.model_validate(inv(calls=[("f", {})])).intermediate_data
    assert isinstance(uses, IntermediateData) and uses.tool_uses[0].name == "f"
    for key in ("invocation_events", "invocationEvents"):
        data = Invocation.model_validate(inv(intermediate_data={key: []})).intermediate_data
        assert isinstance(data, InvocationEvents)


@pytest.mark.parametrize("uses_key", ["tool_uses", "toolResponses", "intermediate_responses"])
def test_both_intermediate_forms_are_rejected(uses_key: str) -> None:
    """Mixing the two forms is an error on intermediate_data itself, as in ADK (which also rejects it)."""
    with pytest.raises(ValidationError) as info:
        Invocation.model_validate(inv(intermediate_data={uses_key: [], "invocationEvents": []}))
    (err,) = info.value.errors()
    assert err["loc"] == ("intermediate_data",) and "mixes two forms" in err["msg"]


def test_nested_camel_case_is_accepted() -> None:
    """Every model below EvalSet accepts camelCase, as ADK's EvalBaseModel does."""
    raw = {
        "invocationId": "i1",
        "userContent": {"parts": [{"text": "hi"}]},
        "finalResponse": {"parts": [{"text": "yo"}]},
        "intermediateData": {"toolUses": [{"name": "f", "args": {"a": 1}}],
                             "intermediateResponses": [["sub", [{"text": "t"}]]]},
    }
    got = Invocation.model_validate(raw)
    assert got.invocation_id == "i1" and isinstance(got.intermediate_data, IntermediateData)
    assert got.intermediate_data.intermediate_responses[0][0] == "sub"


def test_invocation_forbids_unknown_keys_but_part_and_case_allow_them() -> None:
    """Invocation rejects extras (ADK does); genai Part and EvalCase tolerate them (newer genai fields, UI extras)."""
    with pytest.raises(ValidationError):
        Invocation.model_validate(inv(latency=3))
    lenient = inv(user_content={"parts": [{"text": "x", "video_metadata": {"fps": 1}}]})
    assert Invocation.model_validate(lenient).user_content.parts is not None
    assert EvalCase.model_validate(case("c", ui_note="kept")).eval_id == "c"


def test_event_ignores_unknown_keys() -> None:
    """InvocationEvent ignores extras such as the UI's ``invocationIndex``."""
    raw = inv(intermediate_data={"invocation_events": [{"author": "a", "invocationIndex": 0}]})
    data = Invocation.model_validate(raw).intermediate_data
    assert isinstance(data, InvocationEvents) and data.invocation_events[0].author == "a"


@pytest.mark.parametrize(("args", "expected"), [({"args": None}, None), ({}, None), ({"args": {}}, {})])
def test_missing_args_stay_none(args: dict[str, Any], expected: dict[str, Any] | None) -> None:
    """A call without args has ``args=None``, distinct from ``{}``."""
    raw = inv(intermediate_data={"tool_uses": [{"name": "f", **args}]})
    data = Invocation.model_validate(raw).intermediate_data
    assert isinstance(data, IntermediateData) and data.tool_uses[0].args == expected
    assert (data.tool_uses[0].args is None) == (expected is None)


def test_scenario_persona_as_string_or_object() -> None:
    """user_persona may be a prebuilt id or an object."""
    personas = []
    for persona in ("NOVICE", {"id": "custom", "description": "d"}):
        raw = {"eval_id": "s", "conversation_scenario": {"starting_prompt": "a", "conversation_plan": "b",
                                                         "user_persona": persona}}
        scenario = EvalCase.model_validate(raw).conversation_scenario
        assert scenario is not None
        personas.append(scenario.user_persona)
    assert personas[0] == "NOVICE" and isinstance(personas[1], UserPersona)
    assert (personas[1].id, personas[1].description) == ("custom", "d")


def test_eval_set_top_level_is_snake_case_only() -> None:
    """camelCase at the EvalSet top level is not a spelling of its fields (ADK ignores it and fails)."""
    with pytest.raises(ValidationError):
        EvalSet.model_validate({"evalSetId": "x", "evalCases": []})
    assert EvalSet.model_validate({"eval_set_id": "x", "eval_cases": [case("a")]}).eval_cases[0].eval_id == "a"
