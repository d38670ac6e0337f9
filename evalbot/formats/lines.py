"""Where each case sits in an eval set file: the line of its ``"eval_id": "<id>"``, found while the file is loaded.

The loader computes this from the text it has already read, so nothing reads the file again to place an annotation.
A case's line is the first line holding ``"eval_id"`` (or ``evalId``, ``eval_Id``...) followed by the id written as
``json.dumps`` writes it; an id written differently (``\\u`` escapes of ASCII, a literal non-ASCII character) has no
line, and neither has a key split over two lines.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import Iterator

_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""The characters ``str.splitlines`` breaks lines at (``\\r\\n`` counts as one break)."""
_SPACE = rf"[^\S{_BREAKS}]*"
_ID_KEY = re.compile(rf'"eval_?[iI]d"{_SPACE}:{_SPACE}("(?:[^"\\{_BREAKS}]|\\[^{_BREAKS}])*")')
_BREAK = re.compile(rf"\r\n|[{_BREAKS}]")


class CaseLines:
    """The 1-based line of each case id in one file's text (computed once, when the file is loaded)."""

    __slots__ = ("_lines",)

    def __init__(self, text: str) -> None:
        self._lines: dict[str, int] = {}
        for literal, line in _id_literals(text):
            self._lines.setdefault(literal, line)

    def line(self, eval_id: str) -> int | None:
        """The line of ``"eval_id": "<eval_id>"``, or None when the file has no such line."""
        return self._lines.get(json.dumps(eval_id))


def _matches(text: str) -> Iterator[re.Match[str]]:
    """``_ID_KEY`` matches in order; ``str.find`` jumps between candidates (a regex scan of a 250 MB file alone
    took 1.7 s, this 0.4 s)."""
    at = text.find('"eval')
    while at >= 0:
        match = _ID_KEY.match(text, at)
        if match is None:
            at = text.find('"eval', at + 1)
        else:
            yield match
            # From the id's literal, not past it: in '"eval_id":"eval_id":"x"' the value is also the next key.
            at = text.find('"eval', match.start(1))


def _id_literals(text: str) -> Iterator[tuple[str, int]]:
    """Each ``"eval_id": <string literal>`` in ``text`` with its line, in file order."""
    matches = _matches(text)
    first = next(matches, None)
    if first is None:
        return
    others = _BREAKS[1:7] if text.isascii() else _BREAKS[1:]
    if not any(b in text for b in others):  # only "\n": count them between matches (fast, in C)
        line, at = 1, 0
        for match in (first, *matches):
            line += text.count("\n", at, match.start())
            at = match.start()
            yield match.group(1), line
        return
    starts = [0] + [m.end() for m in _BREAK.finditer(text)]  # where each line starts
    for match in (first, *matches):
        yield match.group(1), bisect_right(starts, match.start())
