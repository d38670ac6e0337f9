"""Vertex-style custom agent functions: ``module:callable`` taking a prompt, returning a response and a trajectory.

Contract: ``fn(prompt: str) -> {"response": str, "predicted_trajectory": [{"tool_name": str, "tool_input": {...}}]}``
(the trajectory may be a JSON string, or missing when no tool was called). If the function declares a parameter
named ``history`` it also receives the earlier turns of the conversation (``[{"prompt", "response",
"predicted_trajectory"}]``), and one named ``state`` receives the case's ``session_input.state``. Sync functions run
in worker threads (they must be thread-safe when several cases run at once); async functions run on the event loop.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import inspect
import json
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalbot.errors import ConfigError
from evalbot.formats.adk import Content, EvalCase, FunctionCall, IntermediateData, Invocation, Part
from evalbot.formats.invocations import content_text
from evalbot.runner.base import AgentError

CONTRACT = (
    "return a dict {'response': str, 'predicted_trajectory': [{'tool_name': str, 'tool_input': {...}}, ...]}"
)


def load_callable(spec: str, search_path: Path | None = None) -> Callable[..., Any]:
    """Import ``module:attr`` (``attr`` may be dotted); the current directory is importable, as with ``python -m``."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"--agent {spec!r}: expected 'module:callable', e.g. 'my_agent.app:run'")
    root = str((search_path or Path.cwd()).resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(f"--agent {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}") from exc
    for name in attr.split("."):
        if not hasattr(target, name):
            raise ConfigError(f"--agent {spec!r}: {module_name!r} has no attribute {attr!r}")
        target = getattr(target, name)
    if not callable(target):
        raise ConfigError(f"--agent {spec!r}: {attr!r} is a {type(target).__name__}, not a callable")
    return target  # type: ignore[no-any-return]


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _is_async(fn: Callable[..., Any]) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects with an async __call__
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


async def call_in_daemon_thread(fn: Callable[[], Any]) -> Any:
    """Run a blocking call in a daemon thread, so a hung agent can be abandoned without blocking interpreter exit."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            ok, value = True, fn()
        except BaseException as exc:
            ok, value = False, exc
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the run already ended (the call was abandoned after its timeout)
            pass

    threading.Thread(target=work, name="evalbot-agent", daemon=True).start()
    return await future


def _trajectory(raw: Any) -> list[FunctionCall]:
    if raw is None:
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise AgentError(f"'predicted_trajectory' is a string but not JSON ({exc}); {CONTRACT}") from None
    if not isinstance(raw, list):
        raise AgentError(f"'predicted_trajectory' must be a list, got {type(raw).__name__}; {CONTRACT}")
    calls = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise AgentError(f"predicted_trajectory[{i}] must be an object, got {type(item).__name__}; {CONTRACT}")
        name = item.get("tool_name")
        if not isinstance(name, str) or not name:
            raise AgentError(f"predicted_trajectory[{i}] needs a non-empty string 'tool_name'; {CONTRACT}")
        if "tool_input" not in item:
            raise AgentError(f"predicted_trajectory[{i}] ({name}) has no 'tool_input'; use {{}} for a call without "
                             "arguments")
        args = item["tool_input"]
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except (ValueError, RecursionError):
                pass
        if args is not None and not isinstance(args, Mapping):
            raise AgentError(f"predicted_trajectory[{i}] ({name}): 'tool_input' must be an object of arguments, got "
                             f"{type(args).__name__}")
        calls.append(FunctionCall(name=name, args=dict(args) if args is not None else None))
    return calls


def invocation_from_output(output: Any, user: Content, invocation_id: str) -> Invocation:
    """Check an agent function's return value and turn it into an Invocation (AgentError when malformed)."""
    if not isinstance(output, Mapping):
        raise AgentError(f"the agent function returned {type(output).__name__}; {CONTRACT}")
    if "response" not in output:
        raise AgentError(f"the returned dict has no 'response' key (keys: {sorted(map(str, output))}); {CONTRACT}")
    response = output["response"]
    if not isinstance(response, str):
        raise AgentError(f"'response' must be a string, got {type(response).__name__}; {CONTRACT}")
    calls = _trajectory(output.get("predicted_trajectory"))
    return Invocation(
        invocation_id=invocation_id,
        user_content=user,
        final_response=Content(role="model", parts=[Part(text=response)]),
        intermediate_data=IntermediateData(tool_uses=calls),
        creation_timestamp=time.time(),
    )


def _turn(invocation: Invocation) -> dict[str, Any]:
    data = invocation.intermediate_data
    uses = data.tool_uses if isinstance(data, IntermediateData) else []
    return {
        "prompt": content_text(invocation.user_content),
        "response": content_text(invocation.final_response),
        "predicted_trajectory": [{"tool_name": c.name, "tool_input": c.args} for c in uses],
    }


class FunctionSession:
    """One conversation: remembers the earlier turns to pass as ``history``."""

    def __init__(self, agent: FunctionAgent, state: dict[str, Any]) -> None:
        self._agent = agent
        self._state = state
        self._turns: list[dict[str, Any]] = []

    @property
    def session_id(self) -> str | None:
        """Agent functions have no session."""
        return None

    @property
    def user_id(self) -> str | None:
        """Agent functions have no user id."""
        return None

    async def send(self, user: Content, invocation_id: str) -> Invocation:
        """Call the function with the user's text (and history/state when it asks for them)."""
        prompt = content_text(user)
        kwargs: dict[str, Any] = {}
        if self._agent.wants_history:
            kwargs["history"] = copy.deepcopy(self._turns)
        if self._agent.wants_state:
            kwargs["state"] = copy.deepcopy(self._state)
        fn = self._agent.fn
        if self._agent.is_async:
            output = await fn(prompt, **kwargs)
        else:
            output = await call_in_daemon_thread(lambda: fn(prompt, **kwargs))
            if inspect.isawaitable(output):
                output = await output
        invocation = invocation_from_output(output, user, invocation_id)
        self._turns.append(_turn(invocation))
        return invocation

    async def close(self) -> None:
        """Nothing to release."""


class FunctionAgent:
    """A custom agent function loaded from ``module:callable``."""

    def __init__(self, fn: Callable[..., Any], label: str) -> None:
        self.fn = fn
        self._label = label
        self.is_async = _is_async(fn)
        self.wants_history = _accepts(fn, "history")
        self.wants_state = _accepts(fn, "state")

    @property
    def label(self) -> str:
        """The ``module:callable`` spec."""
        return self._label

    async def open(self, case: EvalCase, run: int) -> FunctionSession:
        """A fresh conversation for one run of ``case``."""
        state = dict(case.session_input.state) if case.session_input else {}
        return FunctionSession(self, state)


def load_function_agent(spec: str, search_path: Path | None = None) -> FunctionAgent:
    """The agent named by ``--agent module:callable``."""
    return FunctionAgent(load_callable(spec, search_path), spec)
