"""Judge prompt templates: Jinja files under ``evalbot/judges/prompts/``, rendered with strict undefined checks."""

from __future__ import annotations

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


def render(name: str, **variables: Any) -> str:
    """Render ``prompts/<name>`` with ``variables`` (a missing variable is an error, not an empty string)."""
    return _environment().get_template(name).render(**variables).strip() + "\n"
