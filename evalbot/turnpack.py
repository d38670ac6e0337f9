"""A case's turns (prompts, responses, expected and actual tool calls) packed into one compact bytes object.

A large run keeps the turns of every case that did not pass, for the PR comment.  As Python objects they cost
about 16 KB per 3-turn case (each tool call's arguments are a tree of small dicts, lists and strings); packed with
``marshal`` the same data is one bytes object of about 3 KB that is built faster than the objects it replaces.
The packed form lives only in memory (``marshal``'s format is specific to the Python version): reports are written
and read as JSON.
"""

from __future__ import annotations

import marshal
from typing import Any

CallRow = tuple[str | None, Any]
"""A tool call: name and arguments (JSON values)."""
TurnRow = tuple[str | None, str, str | None, str | None, list[CallRow] | None, list[CallRow]]
"""A turn: invocation id, user prompt, expected response, actual response, expected calls (None: no expected
conversation), actual calls."""

_VERSION = 4


def pack(rows: list[TurnRow]) -> bytes | list[TurnRow]:
    """The rows as bytes; values marshal cannot hold (not JSON-like, or nested too deep) keep the rows as they are."""
    try:
        return marshal.dumps(rows, _VERSION)
    except ValueError:
        return rows


def unpack(packed: bytes | list[TurnRow]) -> list[TurnRow]:
    """The rows given to :func:`pack` (as new objects when they were packed)."""
    if isinstance(packed, bytes):
        rows: list[TurnRow] = marshal.loads(packed)
        return rows
    return packed
