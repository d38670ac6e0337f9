"""An LLM-backed simulated user for ``conversation_scenario`` cases, driven through the Judge protocol.

Semantics follow ADK's ``llm_backed`` user simulator: the starting prompt is sent verbatim as the first message; each
later message is generated from the conversation plan, the persona and the conversation so far; the conversation ends
when the generated text contains the stop signal (case-insensitive) or after ``max_allowed_invocations`` messages
(the starting prompt counts; -1 means no limit).  The prompt is evalbot's own (``prompts/user_simulator.j2``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import jinja2
import jinja2.meta
import jinja2.sandbox

from evalbot.errors import ConfigError
from evalbot.formats.adk import ConversationScenario, Invocation, UserPersona
from evalbot.formats.invocations import content_text, intermediate_texts, tool_calls, tool_responses
from evalbot.formats.personas import BUILTIN_PERSONAS, unknown_persona_message
from evalbot.judges.base import Judge, JudgeError, JudgeRequest
from evalbot.runner.base import SimulatorError, Stop

STOP_SIGNAL = "</finished>"
"""What the simulated user writes when the conversation is over (fixed, as in ADK)."""
PURPOSE = "user_simulator"
"""Usage accounting label of the simulator's LLM calls."""
_DEFAULT_MODEL_CONFIGURATION: dict[str, Any] = {"thinking_config": {"include_thoughts": True, "thinking_budget": 10240}}
_REQUIRED_PLACEHOLDERS = ("stop_signal", "conversation_plan", "conversation_history")
AUDIO_REASON = ("user_simulator_config.type 'llm_audio' simulates the user by voice (speech synthesis and a live "
                "audio model); evalbot simulates users in text only, so this scenario is not evaluated: use "
                "'llm_backed' to run it in text")


@dataclass(frozen=True)
class SimulatorConfig:
    """``user_simulator_config`` of type ``llm_backed`` (ADK's defaults)."""

    model: str = "gemini-2.5-flash"
    model_configuration: Mapping[str, Any] = field(default_factory=lambda: dict(_DEFAULT_MODEL_CONFIGURATION))
    max_allowed_invocations: int = 20
    custom_instructions: str | None = None
    include_function_calls: bool = False
    unsupported: str | None = None
    """Why scenarios under this config cannot be simulated (``type: llm_audio``), or None."""


def parse_simulator_config(raw: Mapping[str, Any] | None, source: str) -> SimulatorConfig:
    """Validate a (snake_case) ``user_simulator_config``; problems raise ConfigError naming the key."""
    if raw is None:
        return SimulatorConfig()
    where = f"{source}:/user_simulator_config"
    # Keys evalbot does not read are kept, as ADK keeps them; parse_config already gave a notice for each.
    kind = raw.get("type") or "llm_backed"
    if kind == "llm_audio":
        return SimulatorConfig(unsupported=AUDIO_REASON)
    if kind != "llm_backed":
        raise ConfigError(f"{where}/type: {kind!r} is not a simulator type; use 'llm_backed' (or ADK's 'llm_audio')")
    model = raw.get("model", SimulatorConfig.model)
    if not isinstance(model, str) or not model:
        raise ConfigError(f"{where}/model: expected a model name such as 'gemini-2.5-flash'")
    configuration = raw.get("model_configuration", _DEFAULT_MODEL_CONFIGURATION)
    if not isinstance(configuration, Mapping):
        raise ConfigError(f"{where}/model_configuration: expected an object of GenerateContentConfig fields")
    limit = raw.get("max_allowed_invocations", 20)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < -1:
        raise ConfigError(f"{where}/max_allowed_invocations: expected an integer >= 1, or -1 for no limit")
    custom = raw.get("custom_instructions")
    if custom is not None:
        if not isinstance(custom, str):
            raise ConfigError(f"{where}/custom_instructions: expected a Jinja template string")
        missing = [p for p in _REQUIRED_PLACEHOLDERS if not _mentions(custom, p)]
        if missing:
            raise ConfigError(f"{where}/custom_instructions: the template must use "
                              + ", ".join("{{ " + p + " }}" for p in missing))
    include = raw.get("include_function_calls", False)
    if not isinstance(include, bool):
        raise ConfigError(f"{where}/include_function_calls: expected true or false")
    return SimulatorConfig(model, dict(configuration), limit, custom, include)


def _mentions(template: str, name: str) -> bool:
    try:
        parsed = jinja2.Environment().parse(template)
    except jinja2.TemplateSyntaxError as exc:
        raise ConfigError(f"custom_instructions is not a valid Jinja template: {exc}") from None
    return name in jinja2.meta.find_undeclared_variables(parsed)


@cache
def _environment() -> jinja2.Environment:
    def load(name: str) -> str:
        return resources.files("evalbot.runner").joinpath("prompts", name).read_text(encoding="utf-8")

    return jinja2.Environment(
        loader=jinja2.FunctionLoader(load), undefined=jinja2.StrictUndefined, autoescape=False,
        trim_blocks=True, lstrip_blocks=True,
    )


def builtin_personas() -> dict[str, Any]:
    """The personas a scenario may name by id (EXPERT, NOVICE, EVALUATOR)."""
    return dict(BUILTIN_PERSONAS)


def resolve_persona(persona: UserPersona | str | None) -> dict[str, Any] | None:
    """The persona as a dict for the prompt: a built-in id is looked up, an object is used as given."""
    if persona is None:
        return None
    if isinstance(persona, str):
        found = BUILTIN_PERSONAS.get(persona)
        if found is None:
            raise SimulatorError(unknown_persona_message(persona))
        return dict(found)
    data = persona.model_dump(mode="json", exclude_none=True)
    if not data.get("description"):
        raise SimulatorError("user_persona needs a 'description'")
    behaviors = data.get("behaviors") or []
    if not isinstance(behaviors, list):
        raise SimulatorError("user_persona.behaviors must be a list")
    data["behaviors"] = [
        {"name": b.get("name", ""), "description": b.get("description", ""),
         "behavior_instructions": list(b.get("behavior_instructions") or b.get("behaviorInstructions") or [])}
        for b in behaviors if isinstance(b, dict)
    ]
    return data


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def history_lines(invocations: Sequence[Invocation], *, include_tools: bool = False) -> list[tuple[str, str]]:
    """The conversation so far as (speaker, text) lines: user messages, agent texts and optionally tool traffic."""
    lines: list[tuple[str, str]] = []
    for inv in invocations:
        lines.append(("user", content_text(inv.user_content)))
        if include_tools:
            for call in tool_calls(inv):
                lines.append(("tool call", f"{call.name}({_compact(call.args)})"))
            for resp in tool_responses(inv):
                lines.append(("tool result", f"{resp.name}: {_compact(resp.response)}"))
        for author, text in intermediate_texts(inv):
            lines.append((author, text))
        final = content_text(inv.final_response) if inv.final_response else ""
        if final:
            lines.append(("agent", final))
    return lines


def render_history(invocations: Sequence[Invocation], include_tools: bool) -> str:
    """The conversation so far, one ``speaker: text`` paragraph per message."""
    return "\n\n".join(f"{who}: {text}" for who, text in history_lines(invocations, include_tools=include_tools))


def render_prompt(config: SimulatorConfig, scenario: ConversationScenario, persona: dict[str, Any] | None,
                  invocations: Sequence[Invocation]) -> str:
    """The prompt asking the LLM for the user's next message."""
    variables = {
        "conversation_plan": scenario.conversation_plan,
        "conversation_history": render_history(invocations, config.include_function_calls),
        "stop_signal": STOP_SIGNAL,
        "persona": persona,
    }
    if config.custom_instructions is not None:
        sandbox = jinja2.sandbox.SandboxedEnvironment(undefined=jinja2.ChainableUndefined, autoescape=False)
        return sandbox.from_string(config.custom_instructions).render(**variables)
    return _environment().get_template("user_simulator.j2").render(**variables).strip() + "\n"


class SimulatedUser:
    """Produces the user's messages for one run of one scenario."""

    def __init__(self, judge: Judge, config: SimulatorConfig, scenario: ConversationScenario) -> None:
        self._judge = judge
        self._config = config
        self._scenario = scenario
        self._persona = resolve_persona(scenario.user_persona)
        self.sent = 0
        """Messages produced so far (the starting prompt included)."""
        self.stop: Stop | None = None

    async def next_message(self, invocations: Sequence[Invocation]) -> str | None:
        """The next user message, or None when the conversation is over (``stop`` says why)."""
        limit = self._config.max_allowed_invocations
        if limit >= 0 and self.sent >= limit:
            self.stop = "invocation_limit"
            return None
        if self.sent == 0:
            self.sent = 1
            return self._scenario.starting_prompt
        prompt = render_prompt(self._config, self._scenario, self._persona, invocations)
        request = JudgeRequest(self._config.model, prompt, self._config.model_configuration, 1, PURPOSE)
        try:
            reply = await self._judge.generate(request)
        except JudgeError as exc:
            raise SimulatorError(f"the simulated user's LLM call failed: {exc}") from exc
        self.sent += 1
        text = reply.texts[0].strip() if reply.texts else ""
        if STOP_SIGNAL.lower() in text.lower():
            self.stop = "stop_signal"
            return None
        if not text:
            raise SimulatorError(f"the simulated user's LLM ({self._config.model}) returned an empty message")
        return text
