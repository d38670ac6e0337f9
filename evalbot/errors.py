"""Error types that say where the problem is, and the process exit codes."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
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


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when a known key is close to ``key``, else ""."""
    close = difflib.get_close_matches(key.lower(), sorted(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key_notice(where: str, key: str, known: Iterable[str], effect: str) -> str:
    """A notice about an unknown key: where it is, a suggestion when a known key is close, and what happens."""
    return printable(f"{where}: unknown key {key!r}{did_you_mean(key, known)}; {effect}")


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
