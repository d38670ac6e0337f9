"""Agent functions for the runner tests, importable as ``tests.fakes.agents:<name>``."""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
from pathlib import Path
from typing import Any

RELEASE = threading.Event()
"""Set by the tests' teardown so that hung sync agents finish."""


def echo(prompt: str) -> dict[str, Any]:
    """Answers with the prompt and one tool call carrying it."""
    return {"response": f"you said: {prompt}", "predicted_trajectory": [{"tool_name": "echo", "tool_input": {"text": prompt}}]}


async def async_echo(prompt: str) -> dict[str, Any]:
    """The async twin of ``echo``."""
    await asyncio.sleep(0)
    return echo(prompt)


def with_history(prompt: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    """Reports how many earlier turns it was given and the previous prompt."""
    previous = history[-1]["prompt"] if history else None
    return {"response": f"turn {len(history) + 1}; previous: {previous}", "predicted_trajectory": []}


def with_state(prompt: str, state: dict[str, Any]) -> dict[str, Any]:
    """Answers with the session state it was given."""
    return {"response": f"user is {state.get('user_name')}"}


def json_trajectory(prompt: str) -> dict[str, Any]:
    """Returns the trajectory as a JSON string, as Google's notebooks do."""
    return {"response": "ok", "predicted_trajectory": '[{"tool_name": "lookup", "tool_input": {"id": 7}}]'}


def raises(prompt: str) -> dict[str, Any]:
    """Always fails."""
    raise ValueError(f"cannot handle {prompt!r}")


def fails_on_second_turn(prompt: str, history: list[dict[str, Any]]) -> dict[str, Any]:
    """Answers the first turn, raises on the second."""
    if history:
        raise RuntimeError("lost the thread")
    return echo(prompt)


def hangs(prompt: str) -> dict[str, Any]:
    """Blocks until the test releases it (a hung agent)."""
    RELEASE.wait(30)
    return echo(prompt)


async def async_hangs(prompt: str) -> dict[str, Any]:
    """Never answers (cancelled by the timeout)."""
    await asyncio.sleep(3600)
    return echo(prompt)


def returns_string(prompt: str) -> Any:
    """Breaks the contract: a bare string."""
    return "just text"


def bad_trajectory(prompt: str) -> dict[str, Any]:
    """Breaks the contract: a tool call without tool_input."""
    return {"response": "ok", "predicted_trajectory": [{"tool_name": "lookup"}]}


class Flaky:
    """Right on odd calls, wrong on even calls (deterministic when cases run one at a time)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, prompt: str) -> dict[str, Any]:
        self.calls += 1
        if self.calls % 2:
            return echo(prompt)
        return {"response": "something else entirely", "predicted_trajectory": [{"tool_name": "other", "tool_input": {}}]}


flaky = Flaky()

NOT_CALLABLE = 42


IN_FLIGHT = {"now": 0, "peak": 0}


async def counting(prompt: str) -> dict[str, Any]:
    """Records how many calls are in flight at once."""
    IN_FLIGHT["now"] += 1
    IN_FLIGHT["peak"] = max(IN_FLIGHT["peak"], IN_FLIGHT["now"])
    await asyncio.sleep(0.03)
    IN_FLIGHT["now"] -= 1
    if "hang" in prompt:
        await asyncio.sleep(3600)
    return echo(prompt)


class Scripted:
    """Passes each case with the probability a script gives its prompt (``{"seed": 7, "cases": {"q1": 0.5}}`` in the
    file named by ``EVALBOT_FAKE_AGENT_SCRIPT``; prompts not named always pass), or as a string of outcomes spells
    it (``"PFP"``: pass on the first call, fail on the second..., the last one repeated). Each answer is drawn from
    (seed, prompt, how many times that prompt was asked), so a run is reproducible in whatever order cases run.
    ``calls`` counts the agent calls per prompt (reruns included)."""

    def __init__(self) -> None:
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def reset(self) -> None:
        with self.lock:
            self.calls.clear()

    def __call__(self, prompt: str) -> dict[str, Any]:
        script = json.loads(Path(os.environ["EVALBOT_FAKE_AGENT_SCRIPT"]).read_text(encoding="utf-8"))
        with self.lock:
            n = self.calls.get(prompt, 0)
            self.calls[prompt] = n + 1
        plan = script.get("cases", {}).get(prompt, 1.0)
        if isinstance(plan, str):
            ok = plan[min(n, len(plan) - 1)] == "P"
        else:
            ok = random.Random(f"{script.get('seed', 0)}:{prompt}:{n}").random() < float(plan)
        return {"response": "done", "predicted_trajectory": [{"tool_name": "answer" if ok else "wrong",
                                                              "tool_input": {"q": prompt}}]}


scripted = Scripted()
