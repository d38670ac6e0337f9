"""Shared builders for engine tests: ADK-shaped JSON for invocations, cases and eval sets, and a file writer."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

Call = tuple[str, dict[str, Any] | None]


def inv(
    user: str = "hi",
    response: str | None = "ok",
    calls: Sequence[Call] | None = None,
    *,
    invocation_id: str | None = None,
    events: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    """An Invocation as JSON; ``calls`` go into ``tool_uses`` (or ``invocation_events`` with ``events=True``)."""
    out: dict[str, Any] = {"user_content": {"role": "user", "parts": [{"text": user}]}}
    if invocation_id is not None:
        out["invocation_id"] = invocation_id
    if response is not None:
        out["final_response"] = {"role": "model", "parts": [{"text": response}]}
    if calls is not None:
        fcs = [{"name": name, "args": args} for name, args in calls]
        if events:
            parts = [{"author": "agent", "content": {"role": "model", "parts": [{"function_call": fc}]}} for fc in fcs]
            out["intermediate_data"] = {"invocation_events": parts}
        else:
            out["intermediate_data"] = {"tool_uses": fcs}
    out.update(extra)
    return out


def case(eval_id: str, *invocations: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """An EvalCase as JSON with a fixed conversation (one default invocation when none is given)."""
    return {"eval_id": eval_id, "conversation": list(invocations) or [inv()], **extra}


def eval_set(eval_set_id: str, *cases: dict[str, Any]) -> dict[str, Any]:
    """An EvalSet as JSON."""
    return {"eval_set_id": eval_set_id, "eval_cases": list(cases)}


Writer = Callable[[str, Any], Path]


@pytest.fixture
def write(tmp_path: Path) -> Writer:
    """Write JSON (or raw ``str``/``bytes`` content) to ``tmp_path/name`` and return the path."""

    def _write(name: str, content: Any) -> Path:
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_text(json.dumps(content, ensure_ascii=False), encoding="utf-8")
        return path

    return _write
