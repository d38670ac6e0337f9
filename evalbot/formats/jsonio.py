"""Read JSON files and validate them into pydantic models, turning every failure into an InputError."""

from __future__ import annotations

import errno
import gc
import json
import os
import re
import stat
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

import msgspec
from pydantic import BaseModel, ValidationError
from pydantic.alias_generators import to_camel, to_snake

from evalbot.errors import InputError, json_pointer
from evalbot.paths import problem_leaving_workspace

M = TypeVar("M", bound=BaseModel)


_kept_frozen = False
"""Whether :func:`freeze_for_good` froze what was alive on purpose. Kept here, not asked of the collector:
``gc.get_freeze_count()`` walks every frozen object (measured: 15 ms a call in a run forked from a process that froze
its imports, 0.1 s after an in-process merge), and :func:`gc_paused` runs several times per command."""


def freeze_for_good() -> None:
    """Freeze everything alive out of the cyclic collector's passes for the rest of the process (``gc.freeze``); later
    :func:`gc_paused` blocks leave it frozen."""
    global _kept_frozen
    _kept_frozen = True
    gc.freeze()


def thaw() -> None:
    """Undo :func:`freeze_for_good` (and any ``gc.freeze``): for a process that goes on after a command, as tests do."""
    global _kept_frozen
    _kept_frozen = False
    gc.unfreeze()


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause CPython's cyclic garbage collector while building large, acyclic structures (loading, scoring).

    Parsing and scoring allocate millions of small objects and free almost none, so the collector re-scans the
    growing heap again and again (measured: 30,000 invocations loaded and scored in 56 s with it, 7.5 s without).
    Reference counting still frees everything that is not part of a cycle; the previous state is restored.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            # Everything allocated meanwhile is still in the youngest generation: re-enabled as it is, the collector's
            # next pass would walk every object that survived the pause (the whole report, about 30 µs per scored
            # case). Frozen and unfrozen at once, they move to the oldest generation without being walked: still
            # collectable, walked only by a full collection, as long-lived objects are. Not after freeze_for_good
            # (evalbot merge): unfreezing would release what it froze too.
            if not _kept_frozen:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def file_kind(mode: int) -> str:
    """What a non-regular file is, for messages ("a directory", "a FIFO"...)."""
    for test, name in (
        (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def refuse_special(path: Path, what: str = "a JSON file") -> os.stat_result | None:
    """Raise InputError unless ``path`` is a regular file (symlinks followed); never opens it, so a FIFO cannot hang.
    Its status (None for a missing file).

    A missing file is left to the caller's own message. In the Action, a file in the workspace that resolves
    outside it (a committed symbolic link) is refused too (evalbot.paths.confined_to).
    """
    if (outside := problem_leaving_workspace(path)) is not None:
        raise InputError(path, "", f"{path} {outside}")  # named in the text: a config's error shows on its eval set
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(path, "", f"cannot read file: {exc.strerror or exc}") from None
    if not stat.S_ISREG(status.st_mode):
        raise InputError(path, "", f"is {file_kind(status.st_mode)}, not a file; expected {what}")
    return status


def read_text(path: Path) -> str:
    """A file's UTF-8 text (a BOM is tolerated); unreadable, non-UTF-8 or empty files raise InputError."""
    refuse_special(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, "", "file not found; check the path") from None
    except OSError as exc:
        raise InputError(path, "", f"cannot read file: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise InputError(
            path, "", f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at line {line}); save the file as UTF-8"
        ) from None
    if not text.strip():
        raise InputError(path, "", "file is empty; expected JSON")
    return text


MAX_DEPTH = 200
"""Deepest nesting of arrays and objects accepted in an input file (ADK's data needs a dozen levels; deeper input
would exhaust the interpreter's recursion limit in the decoder or in whatever walks the value later)."""
MAX_INT_DIGITS = 4300
"""Longest integer literal accepted (CPython's default limit for converting digits to an int)."""

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]|[^\s\[\]{}:,"]+')


def _locate(text: str, stop: Callable[[str, int], bool]) -> str:
    """The JSON pointer of the first token of ``text`` for which ``stop(token, depth)`` holds ("" if none).

    A slow walk over the tokens, used only to say where a document that failed to decode went wrong.
    """
    steps: list[str | int] = []
    kinds: list[str] = []
    expect_key = False
    pending_key: str | None = None
    for match in _TOKEN.finditer(text):
        tok = match.group()
        if stop(tok, len(kinds)):
            return json_pointer(steps)
        if tok in "[{":
            kinds.append(tok)
            steps.append(0 if tok == "[" else "")
            expect_key = tok == "{"
        elif tok in "]}":
            if kinds:
                kinds.pop()
                steps.pop()
            expect_key = False
        elif tok == ",":
            if kinds and kinds[-1] == "[" and isinstance(steps[-1], int):
                steps[-1] += 1
            expect_key = bool(kinds) and kinds[-1] == "{"
        elif tok == ":":
            if pending_key is not None and steps:
                steps[-1] = pending_key
            pending_key = None
        elif expect_key and tok.startswith('"'):
            try:
                pending_key = json.loads(tok)
            except ValueError:
                pending_key = tok[1:-1]
            expect_key = False
    return json_pointer(steps)


def _joined(base: tuple[int | str, ...], pointer: str) -> str:
    full = json_pointer(base) + pointer if base else pointer
    steps = full.split("/")
    return "/".join([*steps[:12], "…", *steps[-2:]]) if len(steps) > 16 else full


def _find(value: Any, bad: Callable[[Any, int], bool]) -> str:
    """The JSON pointer of the first node of a decoded value for which ``bad(node, depth)`` holds (keys included)."""
    stack: list[tuple[Any, int, tuple[int | str, ...]]] = [(value, 0, ())]
    while stack:
        node, depth, where = stack.pop()
        if bad(node, depth):
            return json_pointer(where)
        if isinstance(node, dict):
            for key, item in node.items():
                if bad(key, depth + 1):
                    return json_pointer((*where, key))
                stack.append((item, depth + 1, (*where, key)))
        elif isinstance(node, list):
            stack.extend((item, depth + 1, (*where, i)) for i, item in enumerate(node))
    return ""


def _too_deep(node: Any, depth: int) -> bool:
    return depth >= MAX_DEPTH and isinstance(node, dict | list)


def has_surrogate(node: Any) -> bool:
    """A string holding a lone UTF-16 surrogate (possible in decoded JSON, unprintable and unhashable as UTF-8)."""
    return _has_surrogate(node)


def _has_surrogate(node: Any) -> bool:
    return isinstance(node, str) and not node.isascii() and _SURROGATE.search(node) is not None


_BRACKETS = bytes.maketrans(b"[{]}", b"(())")
_NOT_STRUCTURE = bytes(c for c in range(256) if c not in b'[]{}"')


def nested_deeper_than(text: str, limit: int) -> bool:
    """Whether the JSON document ``text`` (one that json.loads accepts) nests arrays and objects more than ``limit``
    levels deep, measured on the text with C-level bytes operations instead of walking the decoded value in Python.

    Escaped backslashes and quotes are removed first (in valid JSON a backslash occurs only inside a string, and a
    run of them pairs up from its left); what is left of each string is its brackets between two quotes. Deleting
    everything but brackets and quotes, then any two adjacent quotes (neither changes which brackets are inside a
    string), leaves quotes only around strings that hold brackets; those pieces are dropped. Each pass over the
    remaining brackets removes the innermost pairs, one level of nesting; n brackets nest at most n / 2 levels.
    """
    raw = text.encode("utf-8", "surrogatepass")
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = raw.translate(_BRACKETS, _NOT_STRUCTURE).replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = b"".join(skeleton.split(b'"')[::2])
    done = 0
    while len(skeleton) > 2 * (limit - done):  # else too few brackets are left to nest deeper than the rest
        if done == limit:
            return True
        skeleton = skeleton.replace(b"()", b"")
        done += 1
    return False


_ALL_BUT_OPENING = bytes(c for c in range(256) if c not in b"[{")
_COPY_CHARS = 1 << 20
"""Up to this many characters, an ASCII text's brackets are counted on a copy of it as bytes (see opening_brackets)."""


def opening_brackets(text: str, start: int = 0, end: int | None = None) -> int:
    """``text.count("[", start, end) + text.count("{", start, end)``: for an ASCII stretch of up to _COPY_CHARS
    characters (every case and actuals entry of a usual file) counted as the length of its bytes with everything
    else deleted, one C pass (about 1.8 against 3.1 us for two counts over a 4.8 KB actuals entry); a longer one (a
    whole document) is counted in place, never copied."""
    stop = len(text) if end is None else end
    if stop - start <= _COPY_CHARS and text.isascii():
        return len(text[start:stop].encode("ascii").translate(None, _ALL_BUT_OPENING))
    return text.count("[", start, stop) + text.count("{", start, stop)


def _escape(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


_FAST = msgspec.json.Decoder()
"""msgspec's JSON decoder: about twice as fast as json.loads on ADK cases and actuals, and the same values whenever
it accepts a document (arbitrary-precision integers, correctly rounded floats, the last of duplicate keys at the first
one's place). It refuses everything json.loads would refuse, and also NaN/Infinity, numbers out of a float's range,
integers over 4,300 characters, lone surrogates and very deep nesting: those documents take json's path, which gives
the value or the error exactly as before (tests/formats/test_jsonio_fast.py compares the two on hostile input)."""


def _utf8(text: str) -> str | bytes:
    """What msgspec reads: an ASCII str as it is (its bytes are its UTF-8), any other str encoded here. msgspec would
    otherwise cache a UTF-8 copy inside the str object, for as long as the caller keeps the text. A lone surrogate
    raises UnicodeEncodeError (a ValueError), as msgspec itself would."""
    return text if text.isascii() else text.encode("utf-8")


FAST_DECODER = _FAST
"""The decoder :func:`loads` tries first, for a reader that decodes a document's values one at a time (the baseline's
cases): whatever it accepts, json.loads accepts with the same value."""
utf8_for_msgspec = _utf8


def loads(
    text: str, path: Path | str, base: tuple[int | str, ...] = (), parse_constant: Callable[[str], Any] | None = None
) -> Any:
    """Decode JSON text that a user or a PR controls.

    Nesting deeper than MAX_DEPTH, integer literals longer than MAX_INT_DIGITS and lone UTF-16 surrogates
    (``"\\ud800"``: valid JSON, but not encodable as UTF-8, so nothing could print or hash it) raise InputError naming
    the JSON pointer (``base`` is prepended: where ``text`` sits in its file).  Syntax errors raise json's
    JSONDecodeError for the caller to phrase.
    """
    try:
        value = _FAST.decode(_utf8(text))
    except (ValueError, RecursionError):  # anything msgspec refuses: json's path decides, as it always did
        return loads_stdlib(text, path, base, parse_constant)
    # Accepted: no NaN/Infinity (so parse_constant is never needed), no integer past the limit, no lone surrogate
    # (refused as escapes, and a text holding one cannot be encoded for msgspec); only the depth is left to check.
    _refuse_deep(text, value, path, base)
    return value


def loads_stdlib(
    text: str, path: Path | str, base: tuple[int | str, ...] = (), parse_constant: Callable[[str], Any] | None = None
) -> Any:
    """loads through json.loads alone: the path for every document msgspec refuses, and the reference its fast path
    is tested against."""
    try:
        value = json.loads(text, parse_constant=parse_constant)
    except RecursionError:
        where = _locate(text, lambda tok, depth: depth >= MAX_DEPTH and tok in "[{")
        raise InputError(path, _joined(base, where), _deep_message()) from None
    except json.JSONDecodeError:
        raise
    except ValueError as exc:
        if "integer string conversion" not in str(exc):  # e.g. parse_constant's own refusal
            raise
        where = _locate(text, lambda tok, _: tok.lstrip("-")[:1].isdigit() and len(tok) > MAX_INT_DIGITS)
        raise InputError(
            path, _joined(base, where),
            f"number too long ({_escape(str(exc)).split(':')[0].lower()}); "
            f"write numbers of at most {MAX_INT_DIGITS:,} digits (or as strings)",
        ) from None
    _refuse_deep(text, value, path, base)
    if _SURROGATE_ESCAPE.search(text) is not None:
        where = _find(value, lambda node, _: _has_surrogate(node))
        if where or _has_surrogate(value):
            raise InputError(
                path, json_pointer(base) + where,
                "text holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), which is not valid "
                "Unicode; remove it or write the character itself",
            )
    return value


def _refuse_deep(text: str, value: Any, path: Path | str, base: tuple[int | str, ...]) -> None:
    """InputError naming the first value nested deeper than MAX_DEPTH in the decoded ``value`` of ``text``."""
    if opening_brackets(text) > MAX_DEPTH and nested_deeper_than(text, MAX_DEPTH):
        raise InputError(path, _joined(base, _find(value, _too_deep)), _deep_message())


def _deep_message() -> str:
    return f"nested more than {MAX_DEPTH} levels deep; evalbot reads at most {MAX_DEPTH} levels of arrays and objects"


def parse_json(text: str, path: Path | str) -> Any:
    """Decode JSON text (see loads); syntax errors name the line and column."""
    try:
        return loads(text, path)
    except json.JSONDecodeError as exc:
        raise InputError(path, "", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None


_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_scanstring: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


_SKIPPER = json.JSONDecoder(object_pairs_hook=len)
"""json's own decoder, but each object becomes its member count: the objects are never built."""


def skip_value(text: str, idx: int) -> int:
    """The end of the JSON value starting at ``idx``, its syntax checked exactly as json.loads checks it, without
    building its objects (about 1.5-2x faster than decoding it; measured on ADK cases and actuals)."""
    return int(_SKIPPER.raw_decode(text, idx)[1])


def decode_value(text: str, idx: int) -> tuple[Any, int]:
    """The JSON value starting at ``idx`` and where it ends."""
    value, end = _DECODER.raw_decode(text, idx)
    return value, int(end)


def _expect(text: str, idx: int, chars: str) -> tuple[str, int]:
    idx = _WS.match(text, idx).end()  # type: ignore[union-attr]
    char = text[idx : idx + 1]
    if not char or char not in chars:
        raise json.JSONDecodeError(f"expected one of {chars!r}", text, idx)
    return char, idx + 1


def scan_object(text: str, idx: int, visit: Callable[[str, int], int]) -> int:
    """Walk the members of the JSON object at ``idx`` without building it; returns where the object ends.

    ``visit(key, value_start)`` consumes each value (see skip_value / decode_value / scan_array) and returns its end.
    Malformed JSON raises JSONDecodeError (decode the whole text for json's own message).
    """
    _, idx = _expect(text, idx, "{")
    char, idx = _expect(text, idx, '"}')
    if char == "}":
        return idx
    while True:  # idx is just after a key's opening quote
        key, idx = _scanstring(text, idx)
        _, idx = _expect(text, idx, ":")
        idx = visit(key, _WS.match(text, idx).end())  # type: ignore[union-attr]
        char, idx = _expect(text, idx, ",}")
        if char == "}":
            return idx
        _, idx = _expect(text, idx, '"')


def scan_array(text: str, idx: int, visit: Callable[[int, int], int]) -> int:
    """Walk the items of the JSON array at ``idx``: ``visit(index, item_start)`` returns each item's end."""
    _, idx = _expect(text, idx, "[")
    idx = _WS.match(text, idx).end()  # type: ignore[union-attr]
    if text[idx : idx + 1] == "]":
        return idx + 1
    i = 0
    while True:
        idx = visit(i, _WS.match(text, idx).end())  # type: ignore[union-attr]
        char, idx = _expect(text, idx, ",]")
        if char == "]":
            return idx
        i += 1


def scan_document(text: str, visit: Callable[[str, int], int]) -> None:
    """scan_object over a whole document that must be one JSON object (nothing but whitespace after it)."""
    end = scan_object(text, 0, visit)
    rest = _WS.match(text, end).end()  # type: ignore[union-attr]
    if rest != len(text):
        raise json.JSONDecodeError("Extra data", text, rest)


KEEP_TEXT_CHARS = 1 << 20
"""Files up to this many characters keep their text for their slices (read once); larger ASCII files are read back
by offset."""


class Slices:
    """Re-reads parts of a large JSON file's text by offset, so its text need not stay in memory.

    A pure-ASCII text longer than KEEP_TEXT_CHARS is read back from the file (character offsets are byte offsets);
    any other text is kept, so a usual eval set file is opened once.  A file that changed since it was scanned
    raises ValueError when a slice no longer decodes.
    """

    def __init__(self, text: str, path: Path) -> None:
        self.path = path
        self._file = path.absolute()  # re-read even if the working directory changes meanwhile
        self._text: str | None = text
        self._shift = 0
        self._fd: tuple[int, tuple[int, int], Callable[[], object]] | None = None
        if len(text) > KEEP_TEXT_CHARS and text.isascii():
            with self._file.open("rb") as f:
                self._shift = 3 if f.read(3) == b"\xef\xbb\xbf" else 0
            self._text = None

    @classmethod
    def of_file(cls, path: Path, shift: int) -> Slices:
        """Slices of a pure-ASCII file that was scanned a window at a time (its text never held whole); ``shift``:
        the length of its UTF-8 BOM."""
        slices = cls("", path)
        slices._text, slices._shift = None, shift
        return slices

    def decode(self, start: int, end: int, base: tuple[int | str, ...] = ()) -> Any:
        """The JSON value at ``start:end`` of the scanned text (``base``: its place in the file, for errors).

        Hostile values raise InputError (see loads); a slice that no longer decodes raises ValueError.
        """
        if self._text is not None:
            return loads(self._text[start:end], self.path, base)
        status = refuse_special(self._file)
        if status is None:
            raise FileNotFoundError(errno.ENOENT, "the file vanished", str(self._file))
        return loads(self._pread(status, end - start, start + self._shift).decode("utf-8"), self.path, base)

    def _pread(self, status: os.stat_result, size: int, offset: int) -> bytes:
        """``size`` bytes at ``offset`` of the file ``status`` describes (checked as a regular file just before):
        through the descriptor kept from the last read while the path still names the same file (one pread, no
        open and close per slice), else through a new one. A file changed in place reads as a new descriptor would
        read it; a file replaced, removed or refused is caught by the check, as on every read."""
        kept = self._fd
        if kept is None or kept[1] != (status.st_dev, status.st_ino):
            fd = os.open(self._file, os.O_RDONLY | os.O_CLOEXEC)
            opened = os.fstat(fd)
            if kept is not None:
                kept[2]()  # close the descriptor of the file the path named before
            kept = self._fd = (fd, (opened.st_dev, opened.st_ino), weakref.finalize(self, os.close, fd))
        return os.pread(kept[0], size, offset)


def read_json(path: Path) -> Any:
    """Read and decode a JSON file."""
    return parse_json(read_text(path), path)


def pointer_for(data: Any, loc: tuple[int | str, ...], base: tuple[int | str, ...] = ()) -> str:
    """JSON pointer of a pydantic error ``loc`` in the *input* document.

    pydantic locations contain union tags and field aliases that do not exist in the file; walk the input and
    keep only the steps that do (trying both snake_case and camelCase spellings).
    """
    node = data
    steps: list[int | str] = list(base)
    for i, part in enumerate(loc):
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            steps.append(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and i == len(loc) - 1:
            steps.append(part)  # a missing element, e.g. the second item of a [author, parts] pair
            node = None
        elif isinstance(node, dict) and isinstance(part, str):
            for key in (part, to_camel(part), to_snake(part)):
                if key in node:
                    steps.append(key)
                    node = node[key]
                    break
            else:
                if i == len(loc) - 1 or not _looks_like_tag(part):
                    steps.append(to_snake(part))  # a missing field: name it as ADK writes it (snake_case)
                    node = None
        # anything else is a union tag or model name: not part of the document
    return json_pointer(steps)


def _looks_like_tag(part: str) -> bool:
    return part in ("uses", "events", "str") or "[" in part or part[:1].isupper()


def describe(err: dict[str, Any]) -> str:
    """A pydantic error message with the offending value, phrased for a human."""
    msg = str(err.get("msg", "invalid value"))
    kind = err.get("type", "")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field (check its spelling; this object does not allow extra keys)"
    if kind == "value_error":  # our own validators' messages are already phrased for a human
        return msg.removeprefix("Value error, ")
    value = err.get("input")
    shown = json.dumps(value, default=str)[:80] if not isinstance(value, dict | list) else type(value).__name__
    return f"{msg} (got {shown})"


def validate(model: type[M], data: Any, path: Path, base: tuple[int | str, ...] = ()) -> M:
    """Validate decoded JSON into ``model``; the first error becomes an InputError with its pointer."""
    try:
        # model_validate's own body, without its keyword plumbing (4 calls per case on a run's hot path)
        return cast(M, model.__pydantic_validator__.validate_python(data))
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        more = f" (and {len(errors) - 1} more problem(s) in the same object)" if len(errors) > 1 else ""
        pointer = pointer_for(data, tuple(first["loc"]), base)
        raise InputError(path, pointer, describe(dict(first)) + more) from None
