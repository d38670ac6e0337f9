"""Read what criteria need out of an Invocation: tool calls, tool responses, texts."""

from __future__ import annotations

from typing import Any

from evalbot.formats.adk import (
    Content,
    FunctionCall,
    FunctionResponse,
    IntermediateData,
    Invocation,
    InvocationEvents,
    Part,
)


def _event_parts(data: InvocationEvents) -> list[Part]:
    """Every part of every event's content, in order (any author)."""
    return [
        part
        for event in data.invocation_events
        if event.content is not None and event.content.parts
        for part in event.content.parts
    ]


def tool_calls(invocation: Invocation) -> list[FunctionCall]:
    """Every tool call of the invocation: ``tool_uses``, or every function_call part of every event (any author)."""
    data = invocation.intermediate_data
    if isinstance(data, IntermediateData):
        return list(data.tool_uses)
    if isinstance(data, InvocationEvents):
        return [
            call
            for event in data.invocation_events
            if event.content is not None and event.content.parts
            for part in event.content.parts
            if (call := part.function_call) is not None
        ]
    return []


CallRow = tuple[str | None, dict[str, Any] | None]
"""A tool call as (name, args): what trajectory matching compares (name equality and ``==`` on args, as ADK
compares calls) and what a report's turn shows."""


def tool_call_rows(invocation: Invocation) -> list[CallRow]:
    """:func:`tool_calls` as (name, args) rows, read in the same order without building a list of calls first."""
    data = invocation.intermediate_data
    if isinstance(data, InvocationEvents):
        return [
            (call.name, call.args)
            for event in data.invocation_events
            if (content := event.content) is not None and content.parts
            for part in content.parts
            if (call := part.function_call) is not None
        ]
    if isinstance(data, IntermediateData):
        return [(call.name, call.args) for call in data.tool_uses]
    return []


def tool_responses(invocation: Invocation) -> list[FunctionResponse]:
    """Every tool response of the invocation: ``tool_responses``, or every function_response part of every event."""
    data = invocation.intermediate_data
    if isinstance(data, IntermediateData):
        return list(data.tool_responses)
    if isinstance(data, InvocationEvents):
        return [part.function_response for part in _event_parts(data) if part.function_response is not None]
    return []


def content_text(content: Content | None) -> str:
    """ADK's text of a Content: texts of every part that has one (thought parts included), joined by newlines."""
    if content is None or not content.parts:
        return ""
    parts = content.parts
    if len(parts) == 1:  # the usual single part, without a generator and a join
        return parts[0].text or ""
    return "\n".join(part.text for part in parts if part.text)


def final_text(invocation: Invocation) -> str:
    """The final response text ("" when there is none)."""
    return content_text(invocation.final_response)


def user_text(invocation: Invocation) -> str:
    """The user's message text."""
    return content_text(invocation.user_content)


def intermediate_texts(invocation: Invocation) -> list[tuple[str, str]]:
    """Natural-language texts produced before the final response, as (author, text) pairs."""
    data = invocation.intermediate_data
    out: list[tuple[str, str]] = []
    if isinstance(data, IntermediateData):
        for author, parts in data.intermediate_responses:
            text = "\n".join(p.text for p in parts if p.text)
            if text:
                out.append((author, text))
    elif isinstance(data, InvocationEvents):
        for event in data.invocation_events:
            text = content_text(event.content)
            if text:
                out.append((event.author, text))
    return out


def model_events(invocation: Invocation) -> tuple[int | None, list[dict[str, Any]]]:
    """One pass over an invocation's events: how many carry usage metadata or a model version (None without recorded
    events), and the usage metadata of those that have it, in order."""
    data = invocation.intermediate_data
    if not isinstance(data, InvocationEvents):
        return None, []
    count = 0
    usages = []
    for event in data.invocation_events:
        usage = event.usage_metadata
        if usage is not None:
            usages.append(usage)
            count += 1
        elif event.model_version is not None:
            count += 1
    return count, usages
