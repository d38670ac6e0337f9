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

import codecs
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

import msgspec

from evalbot.formats.jsonio import (
    _WS,
    MAX_INT_DIGITS,
    Slices,
    _expect,
    _scanstring,
    _utf8,
    decode_value,
    nested_deeper_than,
    opening_brackets,
    refuse_special,
    scan_object,
    skip_value,
)

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
        self._ascii = text.encode("ascii") if file is not None and text.isascii() else None
        """A file window's text as bytes (ASCII: the same offsets), for msgspec's skip (``skip``)."""

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
        if self._ascii is not None:
            self._ascii = self._ascii[keep:] + raw
        self.base += keep

    # What visitors do with a value at a local offset of ``text`` (json's own decoder; SpanWindow overrides).
    def skip(self, start: int) -> int:
        """The end of the value at ``start``, its syntax checked as json.loads checks it (see skip_value). In a
        file's window an array or object is first skipped by msgspec (about 10x faster than json's decoder, which
        builds the value): see ``_msgspec_end``."""
        if self._ascii is not None and self.text[start : start + 1] in ("[", "{"):
            end = _msgspec_end(self.text, self._ascii, start)
            if end is not None:
                return end
        return skip_value(self.text, start)

    def decode(self, start: int) -> tuple[Any, int]:
        """The value at ``start`` and its end (see decode_value)."""
        return decode_value(self.text, start)

    def pick(self, start: int, keys: tuple[str, ...]) -> tuple[int, dict[str, Any]] | None:
        """In a file's window, the end of the object at ``start`` and the values of those of ``keys`` it has, as
        :meth:`members` visiting each member would find them (the last of repeated keys; each value decoded by
        json's decoder), without a member scan in Python: the object skipped by msgspec (``_msgspec_end``, which
        vouches that json's decoder reads it alike) and its members read as raw texts in one more C pass. None when
        that cannot be said (not a file window, msgspec refuses or stops at the window's end): use :meth:`members`."""
        if self._ascii is None:
            return None
        end = _msgspec_end(self.text, self._ascii, start)
        if end is None:
            return None
        try:
            raws = _RAW_OBJECT.decode(memoryview(self._ascii)[start:end])
        except (ValueError, RecursionError):
            return None
        return end, {key: decode_value(str(memoryview(raws[key]), "ascii"), 0)[0] for key in keys if key in raws}

    def members(self, start: int, visit: Callable[[str, int], int]) -> int:
        """Give each member of the object at ``start`` to ``visit(key, value_start)`` (see scan_object)."""
        return scan_object(self.text, start, visit)

    def walk(self, visit: MemberVisit) -> None:
        """Walk the document's top-level object (see walk_object)."""
        _Walk(self, visit).run()


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
    window.walk(visit)


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


class _Untrusted(Exception):
    """msgspec's spans do not describe the text as json's scanner would: scan again with json's."""


_RAW_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RAW_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])
_KEY = r'[ \t\n\r]*"((?:[^"\\]|\\.)*)"[ \t\n\r]*:[ \t\n\r]*'
_FIRST_MEMBER = re.compile(r"[ \t\n\r]*\{" + _KEY)
_NEXT_MEMBER = re.compile(r"[ \t\n\r]*," + _KEY)
_OPEN_ARRAY = re.compile(r"[ \t\n\r]*\[[ \t\n\r]*")
_COMMA = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_EMPTY = re.compile(r"[ \t\n\r]*(?:\{[ \t\n\r]*\}|\[[ \t\n\r]*\])")
_LONG_DIGITS = re.compile(f"(?<![0-9])[0-9]{{{MAX_INT_DIGITS + 1}}}")
_DIGIT_STRIDE = (MAX_INT_DIGITS + 1) // 2
_DIGIT_PAIR = re.compile("[0-9]{2}")
_SAFE_DEPTH = 500
"""Values nested at most this deep are skipped by json's decoder without a RecursionError (its limit is the
interpreter's, about 1,000 levels less the stack in use); deeper ones are left to json's scanner, which decides."""
_CHUNK = 1 << 16


_RAW_VALUE = msgspec.json.Decoder(msgspec.Raw)
_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_SPACE = " \t\n\r"
_CLOSER = {"[": "]", "{": "}"}


def _msgspec_end(text: str, ascii_text: bytes, start: int) -> int | None:
    """The end of the array or object at ``start`` of ``text`` (``ascii_text``: the same characters as bytes),
    found by msgspec, or None when msgspec cannot say it as json's decoder would (then json's decoder decides).

    msgspec decodes the rest of the window as one value and refuses what follows it, saying where: it reports
    trailing characters only once it has read a whole value and the whitespace after it, so the value's text is
    what comes before, trailing whitespace aside, and ends with the bracket that closes it (checked; the text is not
    decoded a second time: that was a third of the walk's msgspec time). Anything else (the value runs past the
    window, or msgspec refuses it: json's decoder then grows the window, or refuses it with its own message) is left
    to json's decoder, as is a value that json's decoder could refuse where msgspec does not (``json_could_differ``)."""
    view = memoryview(ascii_text)
    try:
        _RAW_VALUE.decode(view[start:])
        end = len(text)
    except RecursionError:  # deep nesting: json's decoder decides, as it always has
        return None
    except msgspec.DecodeError as exc:
        trailing = _TRAILING.search(str(exc))
        if trailing is None:
            return None
        end = start + int(trailing[1]) - 1  # msgspec counts the first character after the value as read
    while end > start and text[end - 1] in _SPACE:
        end -= 1
    if text[end - 1 : end] != _CLOSER[text[start]]:
        return None
    return None if json_could_differ(text, start, end) else end


def json_could_differ(text: str, start: int, end: int) -> bool:
    """Whether json's decoder could refuse the value ``text[start:end]`` that msgspec accepts: one nested deeper
    than _SAFE_DEPTH (json's limit is the interpreter's recursion limit), or holding an integer literal longer than
    MAX_INT_DIGITS (json refuses it, msgspec's skip does not)."""
    if opening_brackets(text, start, end) > _SAFE_DEPTH and nested_deeper_than(
        text[start:end], _SAFE_DEPTH
    ):
        return True
    # An integer literal of more than MAX_INT_DIGITS digits is a run of digits spanning two neighbouring
    # characters of this sample, which is searched only then.
    return (end - start > MAX_INT_DIGITS and _DIGIT_PAIR.search(text[start:end:_DIGIT_STRIDE]) is not None
            and _LONG_DIGITS.search(text, start, end) is not None)


_CLOSE_OBJECT = re.compile(r"[ \t\n\r]*\}")
_CLOSE_ARRAY = re.compile(r"[ \t\n\r]*\]")


class SpanWindow(Window):
    """A whole text in memory walked with the spans of its values found by msgspec in one C pass (about 5x faster
    than json's scanner on ADK eval sets and actuals), for the same visitors and the same visits as Window.

    A span is used only when it describes the text exactly as json's scanner would: each member's key and value
    text are matched against the text in order (a repeated key, whose earlier values msgspec drops, fails this), and
    a skipped value is refused when json's decoder could refuse it where msgspec's skip does not (nesting past
    _SAFE_DEPTH, an integer literal longer than MAX_INT_DIGITS). Otherwise _Untrusted is raised, and walk_text walks
    the text again with json's scanner. Small values (ids) are decoded by json's decoder, as Window decodes them.
    """

    def __init__(self, text: str, buffer: str | bytes) -> None:
        super().__init__(text)
        self._buffer = buffer  # what the Raw values point into
        self._spans: dict[int, tuple[int, msgspec.Raw]] = {}

    def _end(self, start: int, raw: msgspec.Raw) -> int:
        """Where ``raw``'s text ends if it is the text at ``start`` (compared in chunks, never copied whole)."""
        view = memoryview(raw)
        if len(view) <= _CHUNK:
            value = str(view, "utf-8")
            if not self.text.startswith(value, start):
                raise _Untrusted
            return start + len(value)
        utf8 = codecs.getincrementaldecoder("utf-8")()
        at = start
        for i in range(0, len(view), _CHUNK):
            piece = utf8.decode(view[i : i + _CHUNK], final=i + _CHUNK >= len(view))
            if not self.text.startswith(piece, at):
                raise _Untrusted
            at += len(piece)
        return at

    def _raw(self, start: int) -> msgspec.Raw:
        try:
            return self._spans[start][1]
        except KeyError:
            raise _Untrusted from None

    def _member_spans(self, start: int, raw: msgspec.Raw | str | bytes) -> list[tuple[str, int, int]]:
        """Key, start and end of each member of the object at ``start`` whose text msgspec read as ``raw``."""
        try:
            raws = _RAW_OBJECT.decode(raw)
        except (ValueError, RecursionError):
            raise _Untrusted from None
        text, at = self.text, start
        spans: list[tuple[str, int, int]] = []
        if not raws and _EMPTY.match(text, at) is None:
            raise _Untrusted
        pattern = _FIRST_MEMBER
        for key, value in raws.items():
            match = pattern.match(text, at)
            if match is None:
                raise _Untrusted
            written = match.group(1)
            if (written if "\\" not in written else _scanstring(f'"{written}"', 1)[0]) != key:
                raise _Untrusted
            value_start = match.end()
            at = self._end(value_start, value)
            self._spans[value_start] = (at, value)
            spans.append((key, value_start, at))
            pattern = _NEXT_MEMBER
        if raws and _CLOSE_OBJECT.match(text, at) is None:
            raise _Untrusted
        return spans

    def _item_spans(self, start: int) -> list[tuple[int, int]]:
        try:
            raws = _RAW_ARRAY.decode(self._raw(start))
        except (ValueError, RecursionError):
            raise _Untrusted from None
        text, at = self.text, start
        spans: list[tuple[int, int]] = []
        if not raws and _EMPTY.match(text, at) is None:
            raise _Untrusted
        pattern = _OPEN_ARRAY
        for raw in raws:
            match = pattern.match(text, at)
            if match is None:
                raise _Untrusted
            value_start = match.end()
            at = self._end(value_start, raw)
            self._spans[value_start] = (at, raw)
            spans.append((value_start, at))
            pattern = _COMMA
        if raws and _CLOSE_ARRAY.match(text, at) is None:
            raise _Untrusted
        return spans

    def walk(self, visit: MemberVisit) -> None:
        for key, start, end in self._member_spans(0, self._buffer):
            done = visit(self, key, start)
            if isinstance(done, Items):
                for i, (item_start, item_end) in enumerate(self._item_spans(start)):
                    if done.visit(self, i, item_start) != item_end:
                        raise _Untrusted
            elif done != end:
                raise _Untrusted

    def members(self, start: int, visit: Callable[[str, int], int]) -> int:
        end = self._spans[start][0] if start in self._spans else -1
        for key, value_start, value_end in self._member_spans(start, self._raw(start)):
            if visit(key, value_start) != value_end:
                raise _Untrusted
        return end

    def skip(self, start: int) -> int:
        end = self._spans[start][0] if start in self._spans else -1
        if end < 0:
            raise _Untrusted
        if json_could_differ(self.text, start, end):
            raise _Untrusted
        return end


def walk_text(text: str, walk: Callable[[Window], T]) -> T:
    """``walk(window)`` over a whole text in memory: first a SpanWindow (msgspec's spans), then again from scratch
    with a Window (json's scanner) when msgspec refuses the document or a span cannot be trusted, so ``walk`` must
    keep nothing from a previous call. Either way, the visits are those json's scanner makes."""
    try:
        buffer = _utf8(text)
    except UnicodeEncodeError:
        return walk(Window(text))
    try:
        return walk(SpanWindow(text, buffer))
    except _Untrusted:
        return walk(Window(text))


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
