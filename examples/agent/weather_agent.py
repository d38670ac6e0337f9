"""A small deterministic weather agent for ``evalbot run --agent`` (no network, no LLM).

It follows the custom agent function contract: it takes the user's message (and, because it declares ``history``,
the earlier turns of the conversation) and returns the response and the tool calls it made.

    evalbot run examples/agent/weather.evalset.json --agent examples.agent.weather_agent:agent
"""

from __future__ import annotations

from typing import Any

FORECASTS: dict[str, tuple[float, str]] = {"paris": (21.0, "sunny"), "london": (14.0, "rainy"), "tokyo": (26.0, "humid")}


def get_weather(city: str, unit: str = "C") -> dict[str, Any]:
    """The agent's only tool: a canned forecast."""
    temp_c, sky = FORECASTS[city.lower()]
    temp = temp_c if unit == "C" else round(temp_c * 9 / 5 + 32)
    return {"city": city, "temperature": temp, "unit": unit, "sky": sky}


def _city(text: str) -> str | None:
    return next((name.title() for name in FORECASTS if name in text.lower()), None)


def agent(prompt: str, history: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Answer weather questions; a follow-up like "and in Fahrenheit?" reuses the city of the earlier turns."""
    city = _city(prompt)
    for turn in reversed(history or []):
        if city is None:
            calls = turn["predicted_trajectory"]
            city = calls[-1]["tool_input"]["city"] if calls else _city(turn["prompt"])
    if city is None:
        return {"response": "Which city would you like the weather for?", "predicted_trajectory": []}
    unit = "F" if "fahrenheit" in prompt.lower() else "C"
    forecast = get_weather(city, unit)
    return {
        "response": f"It is {forecast['sky']} and {forecast['temperature']:g}°{unit} in {city}.",
        "predicted_trajectory": [{"tool_name": "get_weather", "tool_input": {"city": city, "unit": unit}}],
    }
