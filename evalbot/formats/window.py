"""Walking a JSON document's top-level object without holding its whole text: one window of it at a time.

A large input (an actuals file of a million invocations is 1.6 GB) read whole costs its size twice at once (the
bytes, then the text).  Walked a window at a time, a run holds a few megabytes of it: each member (and each item of
an array member the visitor descends into) is scanned from the window; one that runs past the window's end is
scanned again once more of the file is read.  Only pure-ASCII files are read this way (character offsets are byte
offsets, so a member's slice can be read back by offset, see :class:`~evalbot.formats.jsonio.Slices`); any other
file, and a document that is not an object or not valid JSON, is left to the whole-text reader, which names the
problem exactly as before.

The same walk serves a text already in memory (a window that is the whole document), so both readers share their
visitors.  A visitor may be called again for the same member when the window had to grow under it: its effects
must be idempotent (a dict entry set again, an item stored at its index).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

from evalbot.formats.jsonio import _WS, Slices, _expect, _scanstring, refuse_special

T = TypeVar("T")

WINDOW_CHARS = 1 << 24
"""Characters read at a time (16 MiB): a member longer than the window makes it grow to hold the member whole."""
WINDOWED_FILE_BYTES = 1 << 26
"""Files larger than this (64 MiB) are walked a window at a time; smaller ones are read whole, as before."""


class NotAscii(Exception):
    """The file holds non-ASCII bytes: offsets of characters and bytes differ, so it is read whole."""


class Window:
    """The characters ``[base, base + len(text))`` of a JSON document: all of a text in memory, or a window of a
    large pure-ASCII file (after its UTF-8 BOM, if any) that :meth:`advance` moves on."""

    def __init__(self, text: str, file: BinaryIO | None = None, chunk: int | None = None) -> None:
        self.text = text
        self.base = 0
        self._file = file
        self._chunk = chunk or WINDOW_CHARS

    @property
    def whole(self) -> bool:
        """Whether the rest of the document is all in ``text`` (nothing more to read)."""
        return self._file is None

    def advance(self, keep: int) -> None:
        """Drop the text before ``keep`` (a local offset; it becomes 0) and read more of the file: at least as much
        as is kept, so a member larger than the window is read in a few doublings. EOFError at the end of the file;
        NotAscii for a window holding other bytes."""
        if self._file is None:
            raise EOFError
        raw = self._file.read(max(self._chunk, len(self.text) - keep))
        if not raw:
            self._file = None
            raise EOFError
        if not raw.isascii():
            raise NotAscii
        self.text = self.text[keep:] + raw.decode("ascii")
        self.base += keep


@dataclass(frozen=True)
class Items:
    """What a member visitor returns to have the walk go through an array value item by item:
    ``visit(window, index, start)`` scans the item at local offset ``start`` of ``window.text`` and returns its end."""

    visit: Callable[[Window, int, int], int]


MemberVisit = Callable[[Window, str, int], "int | Items"]
"""``visit(window, key, start)``: scan the member's value at local offset ``start`` of ``window.text`` and return
its end, or return :class:`Items` (the value is an array, read from ``start``) to be given its items."""


def _retrying(window: Window, idx: int, step: Callable[[int], int]) -> int:
    """``step(idx)``; when it fails and more of the file could complete it, read more and step again from the same
    place (``idx`` is then 0: the window starts there)."""
    while True:
        try:
            return step(idx)
        except ValueError:
            if window.whole:
                raise
            try:
                window.advance(idx)
            except EOFError:
                raise json.JSONDecodeError("unexpected end of data", window.text, len(window.text)) from None
            idx = 0


def walk_object(window: Window, visit: MemberVisit) -> None:
    """Walk a document that must be one JSON object (nothing but whitespace after it), giving each member to
    ``visit``. Malformed JSON raises ValueError (json.JSONDecodeError), like ``scan_document``."""
    _Walk(window, visit).run()


class _Walk:
    """One walk of an object's members; each step scans from a local offset and returns where it ended (negated
    when it closed the object or array), and is stepped again from the same place when the window had to grow."""

    def __init__(self, window: Window, visit: MemberVisit) -> None:
        self.window = window
        self.visit = visit
        self.name = ""
        self.items: Items | None = None
        self.index = 0

    def run(self) -> None:
        window = self.window
        idx = _retrying(window, 0, self.opening)
        while idx >= 0:
            idx = _retrying(window, idx, self.key)
            self.items = None
            idx = _retrying(window, idx, self.value)
            if self.items is not None:
                idx = self.walk_items(idx, self.items)
                idx = _retrying(window, idx, self.after_value)
        _rest_is_space(window, -idx)

    def opening(self, idx: int) -> int:
        text = self.window.text
        _, idx = _expect(text, idx, "{")
        idx = _WS.match(text, idx).end()  # type: ignore[union-attr]
        char = text[idx : idx + 1]
        if char == "}":
            return -(idx + 1)
        if char != '"':
            raise json.JSONDecodeError("Expecting property name enclosed in double quotes", text, idx)
        return idx

    def key(self, idx: int) -> int:
        text = self.window.text
        _, idx = _expect(text, idx, '"')
        name, idx = _scanstring(text, idx)
        _, idx = _expect(text, idx, ":")
        self.name = name
        return idx

    def value(self, idx: int) -> int:
        idx = _WS.match(self.window.text, idx).end()  # type: ignore[union-attr]
        result = self.visit(self.window, self.name, idx)
        if isinstance(result, Items):
            self.items = result
            return idx
        return self.after_value(result)

    def after_value(self, idx: int) -> int:
        char, end = _expect(self.window.text, idx, ",}")
        return -end if char == "}" else end

    def walk_items(self, idx: int, items: Items) -> int:
        """Give each item of the array at ``idx`` to ``items.visit``; where the array ends."""
        self.index = 0
        idx = _retrying(self.window, idx, self.items_opening)
        while idx >= 0:
            idx = _retrying(self.window, idx, self.item)
            self.index += 1
        return -idx

    def items_opening(self, idx: int) -> int:
        text = self.window.text
        _, idx = _expect(text, idx, "[")
        idx = _WS.match(text, idx).end()  # type: ignore[union-attr]
        if text[idx : idx + 1] == "]":
            return -(idx + 1)
        if idx >= len(text):
            raise json.JSONDecodeError("unexpected end of data", text, idx)
        return idx

    def item(self, idx: int) -> int:
        assert self.items is not None
        window = self.window
        end = self.items.visit(window, self.index, int(_WS.match(window.text, idx).end()))  # type: ignore[union-attr]
        char, end = _expect(window.text, end, ",]")
        return -end if char == "]" else end


def _rest_is_space(window: Window, idx: int) -> None:
    while True:
        rest = _WS.match(window.text, idx).end()  # type: ignore[union-attr]
        if rest != len(window.text):
            raise json.JSONDecodeError("Extra data", window.text, rest)
        try:
            window.advance(len(window.text))
        except EOFError:
            return
        idx = 0


def walk_file(path: Path, walk: Callable[[Window, Slices], T | None]) -> T | None:
    """``walk(window, slices)`` over a large file, a window at a time (its first chunk read when first needed), with
    the slices that read its members back by offset; None for a file small enough to read whole (or not a regular
    file: the whole-text reader refuses it by name)."""
    try:
        refuse_special(path)
        if path.stat().st_size <= WINDOWED_FILE_BYTES:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except Exception:  # the whole-text reader reports what is wrong, as before
        return None
    with os.fdopen(fd, "rb") as file:
        shift = 3 if file.read(3) == b"\xef\xbb\xbf" else 0
        file.seek(shift)
        return walk(Window("", file), Slices.of_file(path, shift))
