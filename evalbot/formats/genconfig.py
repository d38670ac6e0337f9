"""What a config may ask of the judge: generation parameters only.

A config is data a pull request writes, and ``judge_model_config`` (ADK's per-criterion ``GenerateContentConfig``)
and ``user_simulator_config.model_configuration`` go into every request the judge stack sends.  google-genai reads
``http_options`` there (a base URL, headers, an ``extra_body``) per request, so a config could send the prompts and
the workflow's API key to a host of its choosing, and have the steered answers cached under the address of a request
main makes.  So a config chooses **how the model generates** and nothing else: the fields of :data:`GENERATION_FIELDS`
(either spelling, ``topP`` or ``top_p``), each of the expected type.  Every other field (``http_options``,
``base_url``, headers, ``extra_body``, keys, tools, labels, cached content...) is refused at load time, with the file
and the JSON pointer; endpoints and keys come only from the Action's inputs and the environment.  Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic.alias_generators import to_snake

GENERATION_FIELDS = frozenset({
    "temperature", "top_p", "top_k", "max_output_tokens", "candidate_count", "seed", "stop_sequences",
    "presence_penalty", "frequency_penalty", "response_mime_type", "response_schema", "response_json_schema",
    "thinking_config", "system_instruction",
})
"""The ``GenerateContentConfig`` fields (snake_case) a config may set: how the model generates, never where the
request goes or what travels with it."""
THINKING_FIELDS = frozenset({"thinking_budget", "thinking_level", "include_thoughts"})
MAX_CANDIDATES = 64
MAX_STOP_SEQUENCES = 16
CONFIG_KEYS = frozenset({"judge_model_config", "model_configuration"})
"""Where a config holds generation parameters: a criterion's ``judge_model_options.judge_model_config``, the
simulated user's ``user_simulator_config.model_configuration``."""

Problem = tuple[tuple[str, ...], str]
"""Where in the checked object (its keys as written) and what is wrong."""

_REFUSED = ("a config chooses generation parameters only ({fields}); the judge's endpoint, headers and keys come "
            "from the Action's inputs and the environment (remove it)")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _integer(value: Any, low: int, high: int | None = None) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low and (high is None or value <= high)


def _text_parts(value: Any) -> Iterator[Problem]:
    """A system instruction given as content: ``{"role", "parts": [{"text": ...}]}``, text parts only."""
    for key in value:
        if to_snake(str(key)) not in ("role", "parts"):
            yield (str(key),), "a system instruction holds only role and text parts"
    parts_key = next((k for k in value if to_snake(str(k)) == "parts"), None)
    parts = value.get(parts_key) if parts_key is not None else []
    if not isinstance(parts, list):
        yield (str(parts_key),), "expected a list of {\"text\": ...} parts"
        return
    for index, part in enumerate(parts):
        if not isinstance(part, dict) or set(part) != {"text"} or not isinstance(part["text"], str):
            yield (str(parts_key), str(index)), "a system instruction part is {\"text\": \"...\"} only (no files, " \
                                                "URIs or inline data)"


def _field(name: str, value: Any) -> Iterator[Problem]:
    """Problems with one allowed field's value (its pointer relative to the field)."""
    if value is None:
        return
    if name in ("temperature", "top_p", "top_k", "presence_penalty", "frequency_penalty"):
        if not _number(value):
            yield (), f"expected a finite number, got {value!r:.80}"
    elif name == "seed":
        if not _integer(value, -(2**63)):
            yield (), f"expected an integer, got {value!r:.80}"
    elif name == "max_output_tokens":
        if not _integer(value, 1):
            yield (), f"expected a positive integer, got {value!r:.80}"
    elif name == "candidate_count":
        if not _integer(value, 1, MAX_CANDIDATES):
            yield (), f"expected an integer from 1 to {MAX_CANDIDATES}, got {value!r:.80}"
    elif name == "stop_sequences":
        if not isinstance(value, list) or len(value) > MAX_STOP_SEQUENCES or not all(isinstance(s, str) for s in value):
            yield (), f"expected a list of at most {MAX_STOP_SEQUENCES} strings"
    elif name == "response_mime_type":
        if not isinstance(value, str):
            yield (), "expected a MIME type such as \"application/json\""
    elif name in ("response_schema", "response_json_schema"):
        if not isinstance(value, dict | bool):
            yield (), "expected a schema object"
    elif name == "thinking_config":
        if not isinstance(value, dict):
            yield (), "expected an object (thinking_budget, thinking_level, include_thoughts)"
            return
        for key in value:
            if to_snake(str(key)) not in THINKING_FIELDS:
                yield (str(key),), f"not a thinking parameter (allowed: {', '.join(sorted(THINKING_FIELDS))})"
    elif name == "system_instruction":
        if isinstance(value, list):
            for index, item in enumerate(value):
                if not isinstance(item, str):
                    yield (str(index),), "expected text"
        elif isinstance(value, dict):
            yield from _text_parts(value)
        elif not isinstance(value, str):
            yield (), "expected text"


def generation_problems(config: Any) -> list[Problem]:
    """What is wrong with a ``judge_model_config`` / ``model_configuration`` (keys in either spelling): fields
    outside :data:`GENERATION_FIELDS` and allowed fields of the wrong type; empty when it may be sent."""
    if config is None:
        return []
    if not isinstance(config, Mapping):
        return [((), f"expected an object of generation parameters, got {type(config).__name__}")]
    problems: list[Problem] = []
    fields = ", ".join(sorted(GENERATION_FIELDS))
    for key, value in config.items():
        name = to_snake(str(key))
        if name not in GENERATION_FIELDS:
            problems.append(((str(key),), f"{str(key)[:80]!r} is not a generation parameter: "
                             + _REFUSED.format(fields=fields)))
            continue
        problems.extend(((str(key), *where), f"{name}: {message}") for where, message in _field(name, value))
    return problems


def config_problems(value: Any) -> Iterator[Problem]:
    """The problems of every generation config inside ``value`` (a criterion's object, a ``user_simulator_config``),
    found under the keys of :data:`CONFIG_KEYS` at any depth, with their pointers from ``value``."""
    stack: list[tuple[tuple[str, ...], Any]] = [((), value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, dict):
            for key, inner in reversed(item.items()):
                here = (*where, str(key))
                if isinstance(key, str) and to_snake(key) in CONFIG_KEYS:
                    for pointer, message in generation_problems(inner):
                        yield (*here, *pointer), message
                else:
                    stack.append((here, inner))
        elif isinstance(item, list):
            stack.extend(((*where, str(i)), inner) for i, inner in reversed(list(enumerate(item))))
