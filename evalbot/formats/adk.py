"""Mirror of ADK's eval-set data model (EvalSet, EvalCase, Invocation and genai Content).

Casing and strictness follow ADK 2.13: the EvalSet top level is snake_case only; every nested model
accepts snake_case and camelCase.  Invocation-level models forbid unknown keys as ADK does, but genai
``Part`` is lenient (ADK's genai version decides which Part fields exist; rejecting a field a newer
genai knows would reject files ADK accepts).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator
from pydantic.alias_generators import to_camel

from evalbot.formats.personas import BUILTIN_PERSONAS, unknown_persona_message

_CAMEL = {"alias_generator": to_camel, "populate_by_name": True}


class _Strict(BaseModel):
    model_config = ConfigDict(**_CAMEL, extra="forbid")  # type: ignore[typeddict-item]


class _Lenient(BaseModel):
    model_config = ConfigDict(**_CAMEL, extra="allow")  # type: ignore[typeddict-item]


class _Ignoring(BaseModel):
    model_config = ConfigDict(**_CAMEL, extra="ignore")  # type: ignore[typeddict-item]


class FunctionCall(_Lenient):
    """A tool call: ``args`` missing stays ``None``, which is not equal to ``{}`` (ADK semantics)."""

    name: str | None = None
    args: dict[str, Any] | None = None
    id: str | None = None


class FunctionResponse(_Lenient):
    """A tool's answer to a call."""

    name: str | None = None
    response: dict[str, Any] | None = None
    id: str | None = None


class Part(_Lenient):
    """One part of a genai Content; only the fields evalbot reads are typed."""

    text: str | None = None
    thought: bool | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None


class Content(_Lenient):
    """A genai Content: a role and its parts."""

    role: str | None = None
    parts: list[Part] | None = None


class IntermediateData(_Strict):
    """Hand-written intermediate data: tool uses, tool responses and sub-agent texts."""

    tool_uses: list[FunctionCall] = Field(default_factory=list)
    tool_responses: list[FunctionResponse] = Field(default_factory=list)
    intermediate_responses: list[tuple[str, list[Part]]] = Field(default_factory=list)


class InvocationEvent(_Ignoring):
    """One event recorded while the agent ran (any author, sub-agents included)."""

    author: str
    content: Content | None = None
    grounding_metadata: Any = None
    usage_metadata: dict[str, Any] | None = None
    model_version: str | None = None


class InvocationEvents(_Strict):
    """Intermediate data as ADK inference records it: the invocation's events."""

    invocation_events: list[InvocationEvent] = Field(default_factory=list)


def _intermediate_tag(value: Any) -> str:
    """ADK resolves the union by key: ``invocation_events`` selects the events form."""
    if isinstance(value, dict):
        return "events" if ("invocation_events" in value or "invocationEvents" in value) else "uses"
    return "events" if isinstance(value, InvocationEvents) else "uses"


_USES_KEYS = frozenset(
    ("tool_uses", "toolUses", "tool_responses", "toolResponses", "intermediate_responses", "intermediateResponses")
)

_IntermediateForms = Annotated[
    Annotated[IntermediateData, Tag("uses")] | Annotated[InvocationEvents, Tag("events")],
    Discriminator(_intermediate_tag),
]


class RubricContent(_Strict):
    """What a rubric asks of the response."""

    text_property: str | None = None


class Rubric(_Strict):
    """A yes/no property the judge checks; ``type`` selects the criterion that uses it."""

    rubric_id: str
    rubric_content: RubricContent
    description: str | None = None
    type: str | None = None


class AgentDetails(_Strict):
    """An agent's instructions and tool declarations, captured while it ran."""

    name: str
    instructions: str = ""
    tool_declarations: list[Any] = Field(default_factory=list)


class AppDetails(_Strict):
    """The agents of the app that produced an invocation."""

    agent_details: dict[str, AgentDetails] = Field(default_factory=dict)


class Invocation(_Strict):
    """One user turn and what the agent did in answer."""

    invocation_id: str = ""
    user_content: Content
    final_response: Content | None = None
    intermediate_data: _IntermediateForms | None = None
    creation_timestamp: float = 0.0
    duration: float | None = None
    model_duration: float | None = None
    tool_duration: float | None = None
    rubrics: list[Rubric] | None = None
    app_details: AppDetails | None = None

    @field_validator("intermediate_data", mode="before")
    @classmethod
    def _one_form(cls, value: Any) -> Any:
        # Without this check the events form is chosen and 'tool_uses' is reported as an unknown field.
        if isinstance(value, dict) and _intermediate_tag(value) == "events" and _USES_KEYS.intersection(value):
            raise ValueError(
                "intermediate_data mixes two forms: use either 'tool_uses'/'tool_responses'/'intermediate_responses' "
                "or 'invocation_events', not both"
            )
        return value


class UserPersona(_Lenient):
    """A simulated user's persona given as an object (an id names one of ``formats.personas.BUILTIN_PERSONAS``)."""

    id: str | None = None
    description: str | None = None


class ConversationScenario(_Strict):
    """A conversation driven by a simulated user instead of a fixed transcript."""

    starting_prompt: str
    conversation_plan: str
    user_persona: UserPersona | str | None = None

    @field_validator("user_persona")
    @classmethod
    def _known_persona(cls, value: UserPersona | str | None) -> UserPersona | str | None:
        # ADK refuses an id its registry lacks when it parses the eval set; so do we, naming the built-in ids.
        if isinstance(value, str) and value not in BUILTIN_PERSONAS:
            raise ValueError(unknown_persona_message(value))
        return value


class SessionInput(_Lenient):
    """Initial session for the case."""

    app_name: str
    user_id: str
    session_id: str | None = None
    state: dict[str, Any] = Field(default_factory=dict)


class EvalCase(_Lenient):
    """One case: a fixed conversation, or a scenario for a simulated user."""

    eval_id: str
    conversation: list[Invocation] | None = None
    conversation_scenario: ConversationScenario | None = None
    session_input: SessionInput | None = None
    creation_timestamp: float = 0.0
    rubrics: list[Rubric] | None = None
    final_session_state: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _exactly_one_source(self) -> EvalCase:
        if self.conversation is not None and self.conversation_scenario is not None:
            raise ValueError(
                "the case has both 'conversation' and 'conversation_scenario': keep the expected conversation "
                "or the simulated-user scenario, not both"
            )
        if self.conversation is None and self.conversation_scenario is None:
            raise ValueError(
                "the case needs 'conversation' (the expected invocations) or 'conversation_scenario' "
                "(a simulated-user scenario)"
            )
        return self


class EvalSet(BaseModel):
    """A named list of eval cases.  Top level is snake_case only, as in ADK."""

    model_config = ConfigDict(extra="ignore")

    eval_set_id: str
    name: str | None = None
    description: str | None = None
    eval_cases: list[EvalCase]
    creation_timestamp: float = 0.0
