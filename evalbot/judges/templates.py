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
    folder = resources.files("evalbot.judges").joinpath("prompts")
    return frozenset(found for item in folder.iterdir() if item.name.endswith(".j2")
                     for found in _PLACEHOLDER.findall(item.read_text(encoding="utf-8")))


def echoes_example(text: str) -> bool:
    """Whether a judge's answer repeats a placeholder of the prompt's answer format. A model that echoes the prompt
    (small models often do) has not judged, whatever verdict the copied example carries: its answer counts as
    unparseable, never as a vote."""
    return any(placeholder in text for placeholder in example_placeholders())
