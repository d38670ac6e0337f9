"""ADK's two legacy ``*.test.json`` shapes, converted to EvalCases.

1. A list of turns (``query``, ``expected_tool_use``, ``reference``...): one file is one case whose eval_id is
   the file path relative to the repository root (ADK's AgentEvaluator uses the path as passed: the same string when
   run from the root), so the id does not depend on the working directory.
2. A list of ``{name, data: [turns], initial_session}``: one case per item, named by ``name``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalbot.errors import InputError, json_pointer
from evalbot.formats.adk import EvalCase
from evalbot.formats.jsonio import validate
from evalbot.formats.loaded import LoadedCase


def _turn_to_invocation(turn: Any, index: int, path: Path, base: list[str | int]) -> dict[str, Any]:
    where = [*base, index]
    if not isinstance(turn, dict):
        raise InputError(path, json_pointer(where), "expected a turn object with 'query'")
    query = turn.get("query")
    if not isinstance(query, str):
        raise InputError(path, json_pointer([*where, "query"]), "required: the user's message as a string")
    uses = turn.get("expected_tool_use", [])
    if not isinstance(uses, list):
        raise InputError(path, json_pointer([*where, "expected_tool_use"]), "expected a list of tool uses")
    calls = []
    for j, use in enumerate(uses):
        at = [*where, "expected_tool_use", j]
        if not isinstance(use, dict) or not isinstance(use.get("tool_name"), str):
            raise InputError(path, json_pointer([*at, "tool_name"]), "required: the tool's name as a string")
        if "tool_input" not in use:
            raise InputError(
                path, json_pointer([*at, "tool_input"]), "required: the tool's arguments (use {} for none)"
            )
        if not isinstance(use["tool_input"], dict | None):
            raise InputError(
                path, json_pointer([*at, "tool_input"]), "expected the tool's arguments as an object (or null)"
            )
        calls.append({"name": use["tool_name"], "args": use["tool_input"]})
    reference = turn.get("reference")
    if reference is not None and not isinstance(reference, str):
        raise InputError(path, json_pointer([*where, "reference"]), "expected the reference response as a string")
    intermediate = []
    responses = turn.get("expected_intermediate_agent_responses") or []
    if not isinstance(responses, list):
        pointer = json_pointer([*where, "expected_intermediate_agent_responses"])
        raise InputError(path, pointer, "expected a list of {author, text} objects")
    for j, resp in enumerate(responses):
        at = [*where, "expected_intermediate_agent_responses", j]
        if not isinstance(resp, dict):
            raise InputError(path, json_pointer(at), "expected {author, text}")
        for key in ("author", "text"):
            if not isinstance(resp.get(key, ""), str):
                raise InputError(path, json_pointer([*at, key]), "expected a string")
        intermediate.append([resp.get("author", ""), [{"text": resp.get("text", "")}]])
    return {
        "invocation_id": f"turn-{index + 1}",
        "user_content": {"role": "user", "parts": [{"text": query}]},
        "final_response": {"role": "model", "parts": [{"text": reference or ""}]},
        "intermediate_data": {"tool_uses": calls, "intermediate_responses": intermediate},
    }


def _case(eval_id: str, turns: Any, session: Any, path: Path, base: list[str | int]) -> EvalCase:
    if not isinstance(turns, list):
        raise InputError(path, json_pointer(base), "expected a list of turns")
    raw: dict[str, Any] = {
        "eval_id": eval_id,
        "conversation": [_turn_to_invocation(t, i, path, base) for i, t in enumerate(turns)],
    }
    if session is not None and not isinstance(session, dict):
        raise InputError(path, json_pointer([*base[:-1], "initial_session"]), "expected an object")
    if session:
        for key, kind, name in (("app_name", str, "a string"), ("user_id", str, "a string"), ("state", dict, "an object")):
            if key in session and not isinstance(session[key], kind):
                raise InputError(path, json_pointer([*base[:-1], "initial_session", key]), f"expected {name}")
        raw["session_input"] = {
            "app_name": session.get("app_name", ""),
            "user_id": session.get("user_id", ""),
            "state": session.get("state", {}),
        }
    return validate(EvalCase, raw, path)


def case_from_turns(data: list[Any], path: Path, eval_id: str) -> LoadedCase:
    """The list-of-turns shape: one case named after the file (``eval_id``: its stable path, from load.py)."""
    try:
        return LoadedCase(eval_id, _case(eval_id, data, None, path, []))
    except InputError as exc:
        return LoadedCase(eval_id, error=exc)


def cases_from_named(data: list[Any], path: Path) -> list[LoadedCase]:
    """The list-of-cases shape ``[{name, data, initial_session}]``."""
    cases: list[LoadedCase] = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or "data" not in item:
            err = InputError(
                path,
                json_pointer([i]),
                "not a recognised eval set: expected an object with 'eval_set_id' and 'eval_cases', "
                "a list of turns with 'query', or a list of cases with 'name' and 'data'",
            )
            cases.append(LoadedCase(f"#{i}", error=err))
            continue
        try:
            cases.append(LoadedCase(item["name"], _case(item["name"], item["data"], item.get("initial_session"),
                                                        path, [i, "data"])))
        except InputError as exc:
            cases.append(LoadedCase(item["name"], error=exc))
    return cases
