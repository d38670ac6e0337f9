"""Builders of ADK-shaped JSON (invocations, cases, eval sets) and of loaded eval sets, shared by the tests."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evalbot.formats.loaded import LoadedEvalSet
from evalbot.load import load_eval_set

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


def load_set(tmp_path: Path, data: dict[str, Any], config: dict[str, Any] | None = None,
             name: str = "set.evalset.json") -> LoadedEvalSet:
    """Write an eval set (and its test_config.json) and load it as evalbot does."""
    folder = tmp_path / name.split(".")[0]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    if config is not None:
        (folder / "test_config.json").write_text(json.dumps(config), encoding="utf-8")
    return load_eval_set(path)
