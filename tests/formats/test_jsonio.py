"""Reading JSON files and turning validation failures into InputErrors with the document's own pointer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbot.errors import InputError
from evalbot.formats import jsonio
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.jsonio import (
    MAX_DEPTH,
    decode_value,
    loads,
    nested_deeper_than,
    pointer_for,
    read_json,
    scan_array,
    scan_document,
    skip_value,
    validate,
)
from tests.fakes.builders import Writer, case, inv


def _error(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        read_json(path)
    return info.value


def test_invalid_json_names_line_and_column(write: Writer) -> None:
    """A syntax error reports the file, the line and the column."""
    path = write("bad.json", '{\n  "a": 1,\n  oops\n}')
    err = _error(path)
    assert (err.path, err.pointer) == (str(path), "")
    assert "invalid JSON at line 3, column 3" in err.message


def test_non_utf8_names_the_byte_and_line(write: Writer) -> None:
    """Latin-1 bytes are rejected with the offending byte, its line and the fix."""
    path = write("latin1.json", '{"a":\n "caf\xe9"}'.encode("latin-1"))
    err = _error(path)
    assert err.message == "not valid UTF-8 (byte 0xe9 at line 2); save the file as UTF-8"


def test_utf8_bom_is_tolerated(write: Writer) -> None:
    """A UTF-8 byte-order mark (as Windows editors write) does not break parsing."""
    assert read_json(write("bom.json", b'\xef\xbb\xbf{"a": "\xc3\xa9"}')) == {"a": "é"}


@pytest.mark.parametrize("content", ["", "  \n\t"])
def test_empty_file_is_an_error(write: Writer, content: str) -> None:
    """Empty and whitespace-only files say they are empty rather than 'invalid JSON at column 1'."""
    assert _error(write("empty.json", content)).message == "file is empty; expected JSON"


def test_missing_file(tmp_path: Path) -> None:
    """A missing file is named with a hint."""
    err = _error(tmp_path / "nope.json")
    assert err.path.endswith("nope.json") and "file not found" in err.message


def test_pointer_uses_the_spelling_in_the_file() -> None:
    """camelCase keys in the input stay camelCase in the pointer (pydantic reports the snake_case alias)."""
    data = {"userContent": {"parts": [{"functionCall": {"name": "f", "args": [1]}}]}}
    loc = ("user_content", "parts", 0, "function_call", "args")
    assert pointer_for(data, loc) == "/userContent/parts/0/functionCall/args"


def test_pointer_escapes_rfc6901() -> None:
    """'/' and '~' inside keys are escaped as ~1 and ~0."""
    assert pointer_for({"a/b": {"c~d": 1}}, ("a/b", "c~d")) == "/a~1b/c~0d"


def test_validate_reports_first_problem_with_base_and_count(tmp_path: Path) -> None:
    """The first error's pointer is prefixed by ``base``; further problems are counted."""
    bad = inv(foo=1, creation_timestamp="yesterday")
    with pytest.raises(InputError) as info:
        validate(Invocation, bad, tmp_path / "x.json", ("runs", 2))
    assert info.value.pointer in ("/runs/2/foo", "/runs/2/creation_timestamp")
    assert "(and 1 more problem(s) in the same object)" in info.value.message


def test_wrong_type_shows_the_value(tmp_path: Path) -> None:
    """A wrong scalar type quotes the offending value."""
    bad = case("c", inv(user_content={"parts": [{"text": 5}]}))
    with pytest.raises(InputError) as info:
        validate(EvalCase, bad, tmp_path / "x.json")
    assert info.value.pointer == "/conversation/0/user_content/parts/0/text"
    assert info.value.message == "Input should be a valid string (got 5)"


def test_gc_paused_restores_the_previous_state() -> None:
    """The collector is off inside the block and back to its previous state after it, even on error."""
    import gc

    from evalbot.formats.jsonio import gc_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_gc_paused_moves_what_it_built_to_the_oldest_generation_still_collectable() -> None:
    """Objects that survive the pause are not walked by the next young collection: they are in the oldest
    generation, nothing stays frozen, and a cycle built during the pause is still freed by a full collection. A
    caller's own frozen objects stay frozen."""
    import gc
    import weakref

    from evalbot.formats.jsonio import freeze_for_good, gc_paused, thaw

    class Node:
        def __init__(self) -> None:
            self.me = self

    thaw()  # an in-process merge earlier in this test process (shard.loading_parts) leaves what it kept frozen
    gc.collect()
    with gc_paused():
        kept = [[i] for i in range(100)]
        cycle = Node()
        gone = weakref.ref(cycle)
        del cycle
    oldest = {id(o) for o in gc.get_objects(generation=2)}
    assert all(id(item) in oldest for item in kept) and id(kept) in oldest
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert gone() is not None  # only a cycle: reference counting cannot free it
    gc.collect()
    assert gone() is None

    try:
        with gc_paused():
            frozen = [[1]]
            freeze_for_good()
            later = [[2]]
        assert gc.get_freeze_count() > 0 and id(frozen) not in {id(o) for o in gc.get_objects()}
        assert id(later) in {id(o) for o in gc.get_objects(generation=0)}
        with gc_paused():  # a later pause leaves them frozen too
            pass
        assert id(frozen) not in {id(o) for o in gc.get_objects()}
    finally:
        thaw()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=150, deadline=None)
@given(doc=st.dictionaries(st.text(max_size=4), _JSON, max_size=4), indent=st.sampled_from([None, 1]))
def test_scanning_members_finds_each_value_as_json_loads_does(doc: dict[str, Any], indent: int | None) -> None:
    """scan_document / scan_array visit every member and item at offsets that decode to json.loads's values."""
    text = json.dumps(doc, indent=indent, ensure_ascii=False) + "\n"
    seen: dict[str, Any] = {}

    def visit(key: str, start: int) -> int:
        if text[start] == "[":
            items: list[Any] = []

            def item(i: int, at: int) -> int:
                value, end = decode_value(text, at)
                items.append(value)
                return end

            seen[key] = items
            return scan_array(text, start, item)
        seen[key], end = decode_value(text, start)
        return end

    scan_document(text, visit)
    assert seen == json.loads(text)


@pytest.mark.parametrize("text", ["{", '{"a": 1,}', '{"a": 1} x', '{"a" 1}', "[1]", '{"a": [1,]}', '{"a": [1 2]}'])
def test_scanning_malformed_json_raises_decode_errors(text: str) -> None:
    """Malformed documents raise JSONDecodeError (callers then parse the whole text for json's own message)."""
    with pytest.raises(json.JSONDecodeError):
        scan_document(text, lambda key, at: scan_array(text, at, lambda i, a: skip_value(text, a))
                      if text[at] == "[" else skip_value(text, at))


def _levels(value: Any) -> int:
    """Levels of arrays and objects in a decoded value (the oracle for nested_deeper_than)."""
    if isinstance(value, dict):
        return 1 + max(map(_levels, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_levels, value), default=0)
    return 0


_TRICKY_TEXT = st.text(alphabet=st.sampled_from(list('[]{}"\\/ab\n\u00e9\ud800\U0001f600')), max_size=6)
_NESTED = st.recursive(
    st.none() | st.integers() | _TRICKY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY_TEXT, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(doc=_NESTED, indent=st.sampled_from([None, 1]), ascii_only=st.booleans(), limit=st.integers(0, 8))
def test_nesting_measured_on_the_text_matches_the_decoded_value(
    doc: Any, indent: int | None, ascii_only: bool, limit: int
) -> None:
    """Brackets, quotes and backslashes inside strings and keys (escaped or raw, lone surrogates too) never count."""
    text = json.dumps(doc, indent=indent, ensure_ascii=ascii_only)
    assert nested_deeper_than(text, limit) == (_levels(json.loads(text)) > limit)


@pytest.mark.parametrize("levels", [MAX_DEPTH, MAX_DEPTH + 1])
def test_nesting_at_the_limit_amid_strings_full_of_brackets(levels: int) -> None:
    """200 levels decode; 201 are refused with the pointer of the first too-deep value, however wide the document."""
    noise = ["]]]}}} \\\\", '\\"[[[', "{", "\\"] * 60  # each string holds brackets, escaped quotes or backslashes
    inner: Any = noise
    for _ in range(levels - 2):
        inner = [inner, "]"]
    text = json.dumps({"wide": [noise] * 50, "deep": inner})
    assert (text.count("[") + text.count("{")) > MAX_DEPTH
    if levels == MAX_DEPTH:
        assert loads(text, "doc.json") == json.loads(text)
        return
    with pytest.raises(InputError) as info:
        loads(text, "doc.json")
    assert "nested more than 200 levels" in info.value.message
    assert info.value.pointer.startswith("/deep/0/0/0/")


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.sampled_from('[]{}"\\ aé\u20ac'), max_size=60), data=st.data())
def test_opening_brackets_counts_as_two_counts_do(text: str, data: st.DataObject) -> None:
    """The brackets counted for the depth checks: the same number as ``str.count`` twice, over any stretch, ASCII
    or not, copied as bytes (short) or counted in place (past _COPY_CHARS)."""
    start = data.draw(st.integers(0, len(text)))
    end = data.draw(st.none() | st.integers(start, len(text)))
    expected = text.count("[", start, end) + text.count("{", start, end)
    assert jsonio.opening_brackets(text, start, end) == expected
    assert jsonio.opening_brackets(text[start:end]) == expected
    limit = jsonio._COPY_CHARS
    try:
        jsonio._COPY_CHARS = 3  # a longer stretch is counted in place
        assert jsonio.opening_brackets(text, start, end) == expected
    finally:
        jsonio._COPY_CHARS = limit
