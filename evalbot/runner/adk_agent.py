"""Run an ADK agent package (its ``agent`` module's ``root_agent`` or ``app``) the way ``adk eval`` does.

Needs the optional extra ``evalbot[adk]``; google.adk is imported here only, and only when an ADK agent is run.
Each case × run gets a fresh in-memory session built from ``session_input`` (ADK's defaults otherwise); the events of
each turn become the invocation's ``invocation_events`` (the final response's text lives in ``final_response``, as in
ADK), and a plugin records every agent's instructions and tool declarations into ``app_details`` for judge prompts.
"""

from __future__ import annotations

import importlib
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from evalbot.errors import ConfigError, install_hint
from evalbot.formats.adk import (
    AgentDetails,
    AppDetails,
    Content,
    EvalCase,
    Invocation,
    InvocationEvent,
    InvocationEvents,
)

DEFAULT_APP_NAME = "EvaluationGenerator"
DEFAULT_USER_ID = "test_user_id"
"""ADK's session defaults when a case has no session_input."""


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigError(f"--adk-agent needs google-adk ({exc}); install it with: {install_hint('adk')}") from exc


def _instructions(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts = getattr(value, "parts", None)
    if parts is not None:
        return "\n".join(p.text for p in parts if getattr(p, "text", None))
    if isinstance(value, list):
        return "\n".join(_instructions(v) for v in value)
    return str(getattr(value, "text", None) or value)


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    return dump(mode="json", exclude_none=True) if callable(dump) else value


def _capture_plugin() -> Any:
    base = _import("google.adk.plugins.base_plugin").BasePlugin

    class AppDetailsCapture(base):  # type: ignore[misc, valid-type]
        """Remembers, per invocation and agent, the instructions and tools the model was given."""

        def __init__(self) -> None:
            super().__init__(name="evalbot_app_details")
            self.seen: dict[str, dict[str, AgentDetails]] = {}

        async def before_model_callback(self, *, callback_context: Any, llm_request: Any) -> None:
            agents = self.seen.setdefault(callback_context.invocation_id, {})
            name = callback_context.agent_name
            if name not in agents:
                config = llm_request.config
                tools = [_dump(t) for t in (getattr(config, "tools", None) or [])]
                agents[name] = AgentDetails(
                    name=name, instructions=_instructions(getattr(config, "system_instruction", None)),
                    tool_declarations=tools,
                )

    return AppDetailsCapture()


def _has_payload(content: Any) -> bool:
    return any(p.function_call or p.function_response or p.text or getattr(p, "inline_data", None)
               for p in (content.parts or []))


def events_to_invocation(user: Content, events: list[Any], app_details: AppDetails | None, invocation_id: str,
                         started: float) -> Invocation:
    """One turn's ADK events as an Invocation in events form (ADK's conversion rules)."""
    agent_events = [e for e in events if (e.author or "").lower() != "user"]
    final = None
    for event in agent_events:
        if event.content is not None and event.content.parts and event.is_final_response():
            final = event
    recorded = []
    for event in agent_events:
        has_content = event.content is not None and bool(event.content.parts) and _has_payload(event.content)
        if not has_content and event.grounding_metadata is None:
            continue
        keep_content = has_content and (event is not final or bool(final.get_function_calls()))
        recorded.append(InvocationEvent(
            author=event.author,
            content=Content.model_validate(_dump(event.content)) if keep_content else None,
            grounding_metadata=_dump(event.grounding_metadata),
            usage_metadata=_dump(event.usage_metadata),
            model_version=event.model_version,
        ))
    return Invocation(
        invocation_id=invocation_id,
        user_content=user,
        final_response=Content.model_validate(_dump(final.content)) if final is not None else None,
        intermediate_data=InvocationEvents(invocation_events=recorded),
        creation_timestamp=started,
        app_details=app_details,
    )


class AdkSession:
    """One ADK session (one case, one run) with its runner."""

    def __init__(self, runner: Any, capture: Any, session: Any) -> None:
        self._runner = runner
        self._capture = capture
        self._session = session

    @property
    def session_id(self) -> str | None:
        """The ADK session id."""
        return str(self._session.id)

    @property
    def user_id(self) -> str | None:
        """The ADK user id."""
        return str(self._session.user_id)

    async def send(self, user: Content, invocation_id: str) -> Invocation:
        """Run one invocation and convert its events."""
        types = _import("google.genai.types")
        message = types.Content.model_validate(user.model_dump(mode="json", exclude_none=True))
        started = time.time()
        events = [
            event
            async for event in self._runner.run_async(
                user_id=self._session.user_id, session_id=self._session.id, new_message=message
            )
        ]
        adk_ids = {e.invocation_id for e in events if e.invocation_id}
        agents: dict[str, AgentDetails] = {}
        for adk_id in adk_ids:
            agents.update(self._capture.seen.pop(adk_id, {}))
        details = AppDetails(agent_details=agents) if agents else None
        return events_to_invocation(user, events, details, invocation_id, started)

    async def close(self) -> None:
        """Close the runner (its plugins and services)."""
        await self._runner.close()


class AdkAgent:
    """An ADK root agent (optionally wrapped in an App) and how it was named."""

    def __init__(self, root_agent: Any, app: Any, module: ModuleType, label: str) -> None:
        self.root_agent = root_agent
        self.app = app
        self.module = module
        self._label = label

    @property
    def label(self) -> str:
        """The --adk-agent argument."""
        return self._label

    async def open(self, case: EvalCase, run: int) -> AdkSession:
        """A fresh in-memory session from the case's session_input, and a runner with the capture plugin."""
        runners = _import("google.adk.runners")
        sessions = _import("google.adk.sessions")
        apps = _import("google.adk.apps")
        reset = getattr(self.module, "reset_data", None)
        if callable(reset):
            reset()
        given = case.session_input
        service = sessions.InMemorySessionService()
        session = await service.create_session(
            app_name=given.app_name if given else DEFAULT_APP_NAME,
            user_id=given.user_id if given else DEFAULT_USER_ID,
            state=dict(given.state) if given else {},
            session_id=given.session_id if given and given.session_id else None,
        )
        capture = _capture_plugin()
        if self.app is not None:
            app = self.app.model_copy(update={"plugins": [*self.app.plugins, capture], "root_agent": self.root_agent})
        else:
            app = apps.App(name="evalbot_eval", root_agent=self.root_agent, plugins=[capture])
        runner = runners.Runner(app=app, app_name=session.app_name, session_service=service)
        return AdkSession(runner, capture, session)


def load_adk_agent(target: str) -> AdkAgent:
    """``target``: an agent package directory (as for ``adk eval``) or an importable dotted module name."""
    path = Path(target)
    if path.is_dir():
        parent = str(path.resolve().parent)
        if parent not in sys.path:
            sys.path.insert(0, parent)
        module_name = path.resolve().name
    else:
        module_name = target
    apps = _import("google.adk.apps")
    try:
        package = importlib.import_module(module_name)
        module = getattr(package, "agent", None)
        if not isinstance(module, ModuleType):
            try:
                module = importlib.import_module(f"{module_name}.agent")
            except ModuleNotFoundError:
                module = package
    except Exception as exc:
        raise ConfigError(f"--adk-agent {target!r}: cannot import {module_name!r}: {type(exc).__name__}: {exc}") from exc
    app = getattr(module, "app", None)
    if isinstance(app, apps.App):
        return AdkAgent(app.root_agent, app, module, target)
    root = getattr(module, "root_agent", None)
    if root is None:
        raise ConfigError(f"--adk-agent {target!r}: {module.__name__} defines no 'root_agent' (or ADK 'app')")
    return AdkAgent(root, None, module, target)
