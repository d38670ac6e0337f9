"""Judge prompt templates: Jinja files under ``evalbot/judges/prompts/``, rendered with strict undefined checks."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

import jinja2


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FunctionLoader(_load),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # prompts are plain text for a model, never HTML
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


def _load(name: str) -> str:
    return resources.files("evalbot.judges").joinpath("prompts", name).read_text(encoding="utf-8")


_ANY_MARKER = re.compile(r"DATA-[0-9a-f]{16}")


def data_marker(variables: Mapping[str, Any]) -> str:
    """The boundary of this request's data: ``DATA-`` and 16 hex digits of a hash of everything rendered.

    Deterministic (the judge cache is keyed by the prompt) yet unforgeable: a text would have to contain the hash
    of a prompt that contains it. Any marker-shaped string inside the data is neutralised anyway."""
    material = json.dumps(variables, sort_keys=True, ensure_ascii=False, default=repr)
    return "DATA-" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def render(name: str, **variables: Any) -> str:
    """Render ``prompts/<name>`` with ``variables`` (a missing variable is an error, not an empty string).

    Templates put untrusted text through ``fence``: between ``<<<MARKER`` and ``MARKER>>>`` lines, with the
    request's own marker (``data_marker``), so the agent's or user's text cannot close the data block."""
    marker = data_marker(variables)

    def fence(value: Any) -> str:
        text = _ANY_MARKER.sub("DATA-(removed)", str(value))
        return f"<<<{marker}\n{text}\n{marker}>>>"

    context = {**variables, "fence": fence, "data_marker": marker}
    return _environment().get_template(name).render(**context).strip() + "\n"


_PLACEHOLDER = re.compile(r"<[a-z][^<>{}\n]{0,60} [^<>{}\n]{1,60}>")  # several words: never a tag such as <sentence>


@cache
def example_placeholders() -> frozenset[str]:
    """The placeholders in the answer formats our prompts show (``<one or two sentences>``, ``<yes or no>``, ...)."""
    return frozenset(placeholder for _, _, placeholder in _example_fields())


_JSON_FIELD = re.compile(r'"(\w+)"\s*:\s*"?$')
_LINE_FIELD = re.compile(r"^\s*(\w+):\s*$")
QUOTING_FIELDS = frozenset({"sentence", "property", "id", "supporting_excerpt", "contradicting_excerpt"})
"""Answer fields in which the judge copies data (a sentence, a rubric's property, an excerpt): a placeholder there
may be the agent's own text, so those fields never make an answer an echo."""


@cache
def _example_fields() -> tuple[tuple[str, str, str], ...]:
    """``(kind, key, placeholder)`` for each placeholder of our answer formats: ``json`` for ``"key": "<...>"``,
    ``line`` for a ``key: <...>`` line."""
    folder = resources.files("evalbot.judges").joinpath("prompts")
    found: set[tuple[str, str, str]] = set()
    for item in folder.iterdir():
        if not item.name.endswith(".j2"):
            continue
        for line in item.read_text(encoding="utf-8").splitlines():
            for match in _PLACEHOLDER.finditer(line):
                before = line[: match.start()]
                if (json_key := _JSON_FIELD.search(before)) is not None:
                    found.add(("json", json_key.group(1), match.group(0)))
                elif (line_key := _LINE_FIELD.match(before)) is not None:
                    found.add(("line", line_key.group(1), match.group(0)))
    return tuple(sorted(found))


@cache
def _echo_patterns() -> tuple[re.Pattern[str], ...]:
    patterns = []
    for kind, key, placeholder in _example_fields():
        if key.lower() in QUOTING_FIELDS:
            continue
        if kind == "json":  # the field itself, not an escaped quote of it inside another string (\"key\": ...)
            patterns.append(re.compile(rf'(?<!\\)"{re.escape(key)}"\s*:\s*"?{re.escape(placeholder)}"?\s*[,}}\n]'))
        else:
            patterns.append(re.compile(rf"(?mi)^[ \t]*{re.escape(key)}:[ \t]*{re.escape(placeholder)}[ \t]*$"))
    return tuple(patterns)


def echoes_example(text: str) -> bool:
    """Whether a judge's answer repeats a placeholder of the prompt's answer format as the value of one of its own
    fields (``"reasoning": "<one or two sentences>"``, a ``Verdict: <yes or no>`` line). A model that echoes the
    prompt (small models often do) has not judged, whatever verdict the copied example carries: its answer counts
    as unparseable, never as a vote. A placeholder inside a field's text (the judge quoting an agent that planted
    it) is not an echo: the agent cannot take the judge's vote away by writing the prompt's placeholder."""
    return any(pattern.search(text) for pattern in _echo_patterns())
