"""``test_config.json`` (ADK's EvalConfig): criteria with thresholds and options, simulator and custom metrics.

Each criterion is kept as a :class:`CriterionSpec` whose problems are recorded on the spec itself, so one bad
criterion never hides the others (ADK silently skips such a criterion; evalbot reports it as an error).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic.alias_generators import to_snake

from evalbot.errors import InputError, json_pointer, printable, unknown_key_notice
from evalbot.formats.genconfig import config_problems

DEFAULT_CRITERIA: dict[str, Any] = {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}
"""ADK's criteria when an eval set has no ``test_config.json``."""


@dataclass(frozen=True)
class CriterionSpec:
    """One configured criterion before it is built: its name, threshold and remaining options."""

    name: str
    threshold: float | None
    options: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    """Why the criterion cannot be used, or None."""
    source: str = "<default>"
    """File and JSON pointer the criterion came from, for error messages."""


@dataclass(frozen=True)
class EvalConfig:
    """A parsed evaluation config."""

    criteria: tuple[CriterionSpec, ...]
    path: str | None = None
    user_simulator: dict[str, Any] | None = None
    custom_metrics: dict[str, Any] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    """evalbot's own settings under the ``evalbot`` key (comment template, tolerances...)."""
    notices: tuple[str, ...] = ()
    """Unknown top-level keys (ignored, as ADK ignores them), with a suggestion when a known key is close."""

    @property
    def label(self) -> str:
        """The config file that applies, or "ADK defaults"."""
        return self.path or "ADK defaults"


SIMULATOR_KEYS = ("type", "model", "model_configuration", "max_allowed_invocations", "custom_instructions",
                  "include_function_calls")
"""The ``user_simulator_config`` keys evalbot reads; ADK keeps any other key, and so does evalbot (with a notice)."""
TOP_LEVEL_KEYS = ("criteria", "custom_metrics", "user_simulator_config", "live_model_config", "evalbot")
"""The keys of ADK's EvalConfig, plus evalbot's own section."""


_USER_KEYED = frozenset({"criteria", "rating_rubric", "state", "input_variables", "metadata"})
"""Options whose keys are the user's own names (pointwise criteria, rubric ratings, session state): kept verbatim."""


def snake_keys(value: Any) -> Any:
    """Recursively convert camelCase mapping keys to snake_case (ADK accepts both spellings).

    Keys inside user-named mappings (see ``_USER_KEYED``) are not field names and are left untouched.
    """
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            name = to_snake(key) if isinstance(key, str) else key
            out[name] = item if name in _USER_KEYED else snake_keys(item)
        return out
    if isinstance(value, list):
        return [snake_keys(v) for v in value]
    return value


SECONDS_THRESHOLDS = frozenset({"latency"})
"""Criteria whose threshold is a maximum number of seconds (any finite value ≥ 0); the others are scores in 0..1."""
SCALED_THRESHOLDS: dict[str, tuple[float, float]] = {"response_evaluation_score": (1.0, 5.0)}
"""Criteria whose threshold is on ADK's own scale for them (coherence: 1 to 5), not 0..1."""


def _threshold(value: Any, name: str = "", *, ranged: bool = True) -> float:
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            pass
    if number is None:
        raise ValueError(f"threshold must be a number, got {value!r}")
    if not math.isfinite(number):  # NaN never compares; -Infinity would pass every case
        raise ValueError(f"threshold must be a finite number, got {value!r}")
    if name in SECONDS_THRESHOLDS:
        if number < 0:
            raise ValueError(f"threshold of {name} is a maximum in seconds and cannot be negative, got {value!r}")
    elif name in SCALED_THRESHOLDS:
        low, high = SCALED_THRESHOLDS[name]
        if not low <= number <= high:
            raise ValueError(f"threshold of {name} is on its {low:g}-{high:g} scale (as in ADK), got {value!r}: a "
                             f"threshold outside it would pass or fail every rated case; use a value from {low:g} "
                             f"to {high:g}")
    elif ranged and not 0.0 <= number <= 1.0:
        raise ValueError(f"threshold must be between 0 and 1 (scores are in 0..1), got {value!r}")
    return number


def parse_criterion(name: str, value: Any, source: str, *, own_scale: bool = False) -> CriterionSpec:
    """One ``criteria`` entry: a bare threshold number or an object with ``threshold`` and options."""
    if isinstance(value, dict):
        options = snake_keys(value)
        if "threshold" not in options:
            return CriterionSpec(name, None, options, "criterion object needs a 'threshold' key", source)
        raw = options.pop("threshold")
        if raw is None:
            return CriterionSpec(name, None, options, None, source)
    else:
        options, raw = {}, value
    try:
        # template and custom metrics check their own range (a rating scale, metric_info's interval)
        ranged = "metric_prompt_template" not in options and not own_scale
        return CriterionSpec(name, _threshold(raw, name, ranged=ranged), options, None, source)
    except ValueError as exc:
        return CriterionSpec(name, None, options, str(exc), source)


def parse_config(data: Any, path: str | None) -> EvalConfig:
    """Build an EvalConfig from decoded JSON; file-level problems raise InputError naming the pointer."""
    where = path or "<config>"
    if not isinstance(data, dict):
        raise InputError(where, "", f"expected a JSON object with a 'criteria' key, got {type(data).__name__}")
    criteria_raw = data.get("criteria", DEFAULT_CRITERIA)
    if not isinstance(criteria_raw, dict):
        raise InputError(where, "/criteria", "expected an object mapping criterion names to thresholds")
    raw_custom = data.get("custom_metrics", data.get("customMetrics"))
    own_scale = set(raw_custom) if isinstance(raw_custom, dict) else set()  # custom metrics check their own range
    specs = tuple(
        parse_criterion(name, value, f"{where}:{json_pointer(['criteria', name])}", own_scale=name in own_scale)
        for name, value in criteria_raw.items()
    )
    sim = data.get("user_simulator_config", data.get("userSimulatorConfig"))
    if sim is not None and not isinstance(sim, dict):
        raise InputError(where, "/user_simulator_config", "expected an object")
    _generation_only(where, criteria_raw, sim, "user_simulator_config" if "user_simulator_config" in data
                     else "userSimulatorConfig")
    custom = data.get("custom_metrics", data.get("customMetrics")) or {}
    if not isinstance(custom, dict):
        raise InputError(where, "/custom_metrics", "expected an object mapping metric names to definitions")
    extras = data.get("evalbot") or {}
    if not isinstance(extras, dict):
        raise InputError(where, "/evalbot", "expected an object of evalbot settings")
    notices = tuple(
        unknown_key_notice(
            f"{where}:{json_pointer([key])}", key, TOP_LEVEL_KEYS,
            "ignored, as ADK ignores it" + ("" if "criteria" in data else "; the criteria are ADK's defaults"),
        )
        for key in data
        if to_snake(str(key)) not in TOP_LEVEL_KEYS
    )
    notices += _option_notices(where, data, sim)
    return EvalConfig(
        criteria=specs,
        path=path,
        notices=notices,
        user_simulator=snake_keys(sim) if sim is not None else None,
        custom_metrics={name: snake_keys(entry) for name, entry in custom.items()},  # names are verbatim, as in criteria
        extras=extras,
    )


def _generation_only(where: str, criteria: dict[str, Any], sim: dict[str, Any] | None, sim_key: str) -> None:
    """InputError at the first field of a judge or simulator model config that is not a generation parameter (or
    not of its type): a config never chooses where a request goes (formats.genconfig)."""
    found = [(["criteria", name, *pointer], message) for name, value in criteria.items()
             for pointer, message in config_problems(value)]
    if sim is not None:
        found += [([sim_key, *pointer], message) for pointer, message in config_problems(sim)]
    if found:
        pointer, message = found[0]
        more = f" (and {len(found) - 1} more such field(s))" if len(found) > 1 else ""
        raise InputError(where, json_pointer(pointer), printable(message) + more)


def _option_notices(where: str, data: dict[str, Any], sim: dict[str, Any] | None) -> tuple[str, ...]:
    """Notices for ADK options evalbot accepts but does not act on: live mode, audio simulation, extra sim keys."""
    notices: list[str] = []
    if data.get("live_model_config", data.get("liveModelConfig")) is not None:
        key = "live_model_config" if "live_model_config" in data else "liveModelConfig"
        notices.append(printable(
            f"{where}:{json_pointer([key])}: live_model_config is not used: evalbot runs the agent in ordinary "
            "text turns, not in a live session"))
    if sim is None:
        return tuple(notices)
    pointer = ["user_simulator_config"]
    if snake_keys(sim).get("type") == "llm_audio":
        notices.append(printable(
            f"{where}:{json_pointer([*pointer, 'type'])}: user_simulator_config.type 'llm_audio' is not simulated "
            "(evalbot simulates users in text only): its conversation_scenario cases are not_evaluated"))
    notices.extend(
        unknown_key_notice(f"{where}:{json_pointer([*pointer, key])}", str(key), SIMULATOR_KEYS,
                           "kept and unused, as ADK keeps it")
        for key in sim if to_snake(str(key)) not in SIMULATOR_KEYS
    )
    return tuple(notices)


def default_config() -> EvalConfig:
    """ADK's default criteria, used when an eval set has no config."""
    return parse_config({"criteria": DEFAULT_CRITERIA}, None)
