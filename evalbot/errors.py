"""Error types that say where the problem is, and the process exit codes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

EXIT_OK = 0
"""Every case passed (or the gate let the run through)."""
EXIT_FAILED = 1
"""Some case failed, or the comparison gate found a regression."""
EXIT_INVALID_INPUT = 2
"""Invalid command line, configuration or input files; nothing could be scored."""
EXIT_UNAVAILABLE = 3
"""GitHub or the judge were unavailable after retries in a way that prevents a verdict."""
EXIT_INTERNAL = 70
"""A bug in evalbot."""


def json_pointer(loc: Sequence[str | int]) -> str:
    """RFC 6901 pointer for a pydantic ``loc`` tuple (``~`` and ``/`` escaped)."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in loc]
    return "/" + "/".join(parts) if parts else ""


def printable(text: str) -> str:
    """``text`` with lone surrogates (a JSON ``"\\ud800"`` escape, a file name's non-UTF-8 byte) written as
    backslash escapes, so that it can be printed, hashed and posted."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


class EvalbotError(Exception):
    """Base class of every error evalbot reports to the user."""


class InputError(EvalbotError):
    """A file could not be used: names the file, the JSON pointer and what was expected."""

    def __init__(self, path: Path | str, pointer: str, message: str) -> None:
        self.path = printable(str(path))
        self.pointer = printable(pointer)
        self.message = printable(message)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"{self.path}:{self.pointer}" if self.pointer else self.path
        return f"{where}: {self.message}"


class ConfigError(EvalbotError):
    """A criterion or option in the evaluation config is invalid."""
