"""jsonio.loads decodes with msgspec and falls back to json.loads for anything msgspec refuses: on any text, hostile
or not, it must give exactly what the json-only path (loads_stdlib, the decoder before msgspec) gives: the same value
(types, float bits, key order) or the same error (type, message, JSON pointer)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from evalbot.errors import InputError
from evalbot.formats.jsonio import MAX_DEPTH, MAX_INT_DIGITS, loads, loads_stdlib, read_json, read_text
from evalbot.formats.window import Items, Window, walk_object, walk_text


def _same(a: Any, b: Any) -> bool:
    """Identical decoded values: same types all the way down, floats bit for bit (-0.0, nan), same key order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return math.copysign(1.0, a) == math.copysign(1.0, b) and (a == b or (math.isnan(a) and math.isnan(b)))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return bool(a == b)


def _outcome(decode: Any, text: str, **kwargs: Any) -> tuple[str, Any]:
    try:
        return "value", decode(text, "in.json", ("base", 3), **kwargs)
    except InputError as exc:
        return "InputError", (str(exc.path), exc.pointer, exc.message)
    except json.JSONDecodeError as exc:
        return "JSONDecodeError", (exc.msg, exc.pos, exc.lineno, exc.colno)
    except ValueError as exc:
        return type(exc).__name__, str(exc)


def _assert_same_outcome(text: str, **kwargs: Any) -> tuple[str, Any]:
    fast, slow = _outcome(loads, text, **kwargs), _outcome(loads_stdlib, text, **kwargs)
    assert fast[0] == slow[0], (text[:200], fast, slow)
    if fast[0] == "value":
        assert _same(fast[1], slow[1]), (text[:200], fast, slow)
    else:
        assert fast[1] == slow[1]
    return fast


_NUMBER = st.from_regex(r"-?(0|[1-9][0-9]{0,45})(\.[0-9]{1,40})?([eE][+-]?[0-9]{1,4})?", fullmatch=True)
_LONG_INT = st.integers(MAX_INT_DIGITS - 3, MAX_INT_DIGITS + 3).flatmap(
    lambda n: st.sampled_from(["9" * n, "-" + "9" * n, "1" * n, "-1" + "0" * (n - 1), "0." + "5" * n, "1" * n + ".5"])
)
_ESCAPE = st.sampled_from([
    "\\ud800", "\\udfff", "\\uDBFF", "\\udc00\\ud800", "\\ud83d\\ude00", "\\ud83d", "\\ude00", "\\u0000", "\\u00e9",
    "\\n", '\\"', "\\\\", "\\/", "\\x", "\\u12", "\\uzzzz", "\\",
])
_RAW_CHAR = st.sampled_from(["a", "é", "\ud800", "\udfff", "\U0001f600", "\x00", "\x01", "\x7f", "\u2028", "\ufeff", " "])
_STRING = st.lists(_ESCAPE | _RAW_CHAR, max_size=5).map(lambda parts: '"' + "".join(parts) + '"')
_SCALAR = _NUMBER | _STRING | st.sampled_from(["true", "false", "null", "NaN", "Infinity", "-Infinity", "1e400"])


def _compose(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    array = st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]")
    members = st.lists(st.tuples(_STRING | st.sampled_from(['"a"', '"b"']), inner), max_size=4)  # duplicates too
    obj = members.map(lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}")
    return array | obj


_DOC = st.recursive(_SCALAR, _compose, max_leaves=10)
_MANGLE = st.sampled_from(["", "\ufeff", " ", ",", "]", "}", "x", "\n\t ", "\x0c", "\xa0", "\u3000", '"', "0"])


@settings(max_examples=600, deadline=None)
@given(doc=_DOC, before=_MANGLE, after=_MANGLE, cut=st.integers(0, 3))
@example(doc='{"a": 1, "a": 2, "b": 3}', before="", after="", cut=0)
@example(doc='{"a": 1, "b": 2, "a": 3}', before="", after="", cut=0)
@example(doc='"\\ud800"', before="", after="", cut=0)
@example(doc='{"\\udc00": 1}', before="", after="", cut=0)
@example(doc='["\ud800"]', before="", after="", cut=0)
@example(doc="[NaN, Infinity, -Infinity]", before="", after="", cut=0)
@example(doc="[1e400, -1e400, 1e-400, -0, -0.0]", before="", after="", cut=0)
@example(doc="[18446744073709551616, -9223372036854775809]", before="", after="", cut=0)
@example(doc="{}", before="\ufeff", after="", cut=0)
def test_hostile_text_decodes_exactly_as_json_alone(doc: str, before: str, after: str, cut: int) -> None:
    """Generated documents: numbers of any size, strings with lone/paired/broken surrogate escapes and raw
    surrogates, control characters, BOMs, duplicate keys, NaN/Infinity, stray characters before and after,
    truncation."""
    text = before + doc + after
    _assert_same_outcome(text[: len(text) - cut] if cut else text)


@settings(max_examples=300, deadline=None)
@given(number=_NUMBER | _LONG_INT)
def test_numbers_decode_as_json_decodes_them(number: str) -> None:
    """Integers of any length up to and past 4,300 digits, and floats at and past a double's range."""
    kind, value = _assert_same_outcome(f'{{"n": [{number}]}}')
    if kind == "InputError":
        assert value[1] == "/base/3/n/0" and "number too long" in value[2]


@pytest.mark.parametrize("levels", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 999, 1000, 5000, 100_000])
@pytest.mark.parametrize("shape", ["array", "object", "mixed"])
def test_deep_nesting_is_refused_at_the_same_place(levels: int, shape: str) -> None:
    """Nesting near the limit, near msgspec's own recursion limit and far past the interpreter's: same pointer."""
    open_, close = {"array": ("[", "]"), "object": ('{"k": ', "}"), "mixed": ('[{"k": ', "}]")}[shape]
    depth = levels if shape != "mixed" else levels // 2
    text = '{"ok": [1, 2], "deep": ' + open_ * depth + "0" + close * depth + "}"
    kind, value = _assert_same_outcome(text)
    expected_deep = depth * (2 if shape == "mixed" else 1) + 1 > MAX_DEPTH
    assert (kind == "InputError") == expected_deep
    if expected_deep:
        assert "nested more than 200 levels" in value[2] and value[1].startswith("/base/3/deep/")


def test_parse_constant_still_sees_nan_and_infinity() -> None:
    """A caller's parse_constant refusal (Vertex rows refuse NaN) is raised as before: msgspec never accepts NaN."""
    seen: list[str] = []

    def refuse(name: str) -> Any:
        seen.append(name)
        raise ValueError(f"refused {name}")

    assert _assert_same_outcome('{"a": [1, NaN]}', parse_constant=refuse) == ("ValueError", "refused NaN")
    assert seen == ["NaN", "NaN"]
    assert _assert_same_outcome('{"a": [1, 2]}', parse_constant=refuse)[0] == "value"
    assert seen == ["NaN", "NaN"]


def test_lone_surrogates_are_refused_with_their_pointer() -> None:
    """Escaped lone surrogates are refused with their pointer (a raw one cannot come from a UTF-8 file; loads passes
    it through, msgspec's path or not)."""
    for text in ('{"a": ["x", "\\ud800"]}', '{"a": {"\\udfff": 1}}', '{"a": ["\\ud83d\\ud83d"]}'):
        kind, (_, pointer, message) = _assert_same_outcome(text)
        assert kind == "InputError" and "lone UTF-16 surrogate" in message
        assert pointer.startswith("/base/3/a")
    assert _assert_same_outcome('{"a": ["x", "\ud800"]}') == ("value", {"a": ["x", "\ud800"]})


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=40) | _DOC.map(lambda d: d.encode("utf-8", "surrogatepass")))
def test_files_of_any_bytes_read_as_before(tmp_path_factory: pytest.TempPathFactory, raw: bytes) -> None:
    """read_json on arbitrary bytes (invalid UTF-8, BOMs, empty files) gives what read_text + the json path gives."""
    path = tmp_path_factory.mktemp("bytes") / "in.json"
    path.write_bytes(raw)

    def through(decode: Any) -> tuple[str, Any]:
        try:
            return "value", decode(read_text(path), path)
        except InputError as exc:
            return "InputError", (exc.pointer, exc.message)
        except json.JSONDecodeError as exc:
            return "JSONDecodeError", (exc.msg, exc.pos)

    def via_read_json(text: str, where: Path) -> Any:
        return read_json(where)

    def old(text: str, where: Path) -> Any:
        try:
            return loads_stdlib(text, where)
        except json.JSONDecodeError as exc:
            raise InputError(where, "", f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None

    fast, slow = through(via_read_json), through(old)
    assert fast[0] == slow[0]
    assert _same(fast[1], slow[1]) if fast[0] == "value" else fast[1] == slow[1]


def _walk(window: Window) -> list[tuple[Any, ...]]:
    """Every visit of a walk as load.py's eval set reading makes them: top-level members, the items of array members,
    the members of objects among those items; ids decoded, everything else skipped."""
    seen: list[tuple[Any, ...]] = []

    def member(key: str, start: int) -> int:
        if key in ("eval_id", "id"):
            value, end = window.decode(start)
            seen.append(("decoded", key, start, end, json.dumps(value)))
            return end
        end = window.skip(start)
        seen.append(("skipped", key, start, end))
        return end

    def item(window: Window, i: int, start: int) -> int:
        end = window.members(start, member) if window.text[start] == "{" else window.skip(start)
        seen.append(("item", i, start, end))
        return end

    def top(window: Window, key: str, start: int) -> int | Items:
        seen.append(("top", key, start))
        return Items(item) if window.text[start] == "[" else member(key, start)

    walk_object(window, top)
    return seen


def _scan_outcome(text: str, fast: bool) -> tuple[str, Any]:
    try:
        return "visits", walk_text(text, _walk) if fast else _walk(Window(text))
    except (ValueError, RecursionError) as exc:
        return "refused", type(exc).__name__


_KEY = _STRING | st.sampled_from(['"a"', '"b"', '"eval_id"', '"eval\\u005fid"', '"id"', '"\\u00e9"', '"é"'])
_CASE = st.lists(st.tuples(_KEY, _DOC), max_size=4).map(
    lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"
) | _DOC
_SPACE = st.sampled_from(["", " ", "\n  ", "\t"])


@settings(max_examples=400, deadline=None)
@given(
    members=st.lists(st.tuples(_KEY, st.lists(_CASE, max_size=3) | _DOC), max_size=4),
    space=_SPACE, before=st.sampled_from(["", " ", "\ufeff"]), after=st.sampled_from(["", " \n", " x", ","]),
)
@example(members=[('"a"', "[1]"), ('"a"', "[1]")], space="", before="", after="")  # a repeated key, same text
@example(members=[('"a"', "[1, 2]"), ('"a"', "[1]")], space="", before="", after="")  # ... and different texts
@example(members=[('"a"', "1"), ('"b"', "2"), ('"a"', "1")], space="", before="", after="")
@example(members=[('"eval_cases"', ['{"eval_id": "x", "eval\\u005fid": "y"}'])], space="", before="", after="")
@example(members=[('"a"', "[" + "9" * (MAX_INT_DIGITS + 1) + "]")], space="", before="", after="")
@example(members=[('"a"', "[" + "9" * MAX_INT_DIGITS + "]")], space="", before="", after="")
@example(members=[('"a"', '["' + "9" * (MAX_INT_DIGITS + 5) + '"]')], space="", before="", after="")
@example(members=[('"a"', ['{"b": ' + "[" * 700 + "]" * 700 + "}"])], space="", before="", after="")
def test_msgspec_spans_visit_exactly_as_json_scanner(
    members: list[tuple[str, list[str] | str]], space: str, before: str, after: str
) -> None:
    """walk_text (msgspec's spans, else json's scanner) makes the same visits at the same offsets with the same decoded
    values as json's scanner alone, or refuses what it refuses: repeated keys, escaped keys, non-ASCII text, numbers
    past 4,300 digits, deep nesting, lone surrogates, stray text."""
    parts = []
    for key, value in members:
        shown = value if isinstance(value, str) else "[" + f",{space}".join(value) + "]"
        parts.append(f"{space}{key}{space}:{space}{shown}")
    text = before + "{" + ",".join(parts) + space + "}" + after
    assert _scan_outcome(text, fast=True) == _scan_outcome(text, fast=False)


@pytest.mark.parametrize("levels", [400, 501, 980, 985, 990, 995, 1000, 5000])
def test_deep_values_are_left_to_json_scanner(levels: int) -> None:
    """Nesting near the interpreter's recursion limit, where json's scanner may refuse a value msgspec accepts:
    msgspec's spans are not used past 500 levels, so the outcome is json's."""
    deep = "[" * levels + "]" * levels
    for text in (f'{{"a": {deep}}}', f'{{"eval_cases": [{{"eval_id": "x", "conversation": {deep}}}]}}'):
        assert _scan_outcome(text, fast=True) == _scan_outcome(text, fast=False)


def test_large_values_are_compared_in_chunks() -> None:
    """Values longer than the comparison chunk (with multi-byte characters across chunk edges) scan as json's."""
    long_text = "é" * 40_000 + "a" * 70_001 + "\U0001f600" * 30_000
    text = json.dumps({"a": [long_text, {"eval_id": "x", "b": [long_text]}], "c": long_text}, ensure_ascii=False)
    fast = _scan_outcome(text, fast=True)
    assert fast == _scan_outcome(text, fast=False) and fast[0] == "visits"


_VALID = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from(list('ab"\\/{}[],: é\u2028\U0001f600\n')), max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "eval_id", "é", '"']), inner,
                                                                max_size=3),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(
    cases=st.lists(st.dictionaries(st.sampled_from(["eval_id", "conversation", "x", "ü"]), _VALID, max_size=3),
                   max_size=4),
    top=st.dictionaries(st.sampled_from(["eval_set_id", "name", "b"]), _VALID, max_size=2),
    indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans(), repeat=st.sampled_from([None, "name", "eval_cases"]),
)
def test_valid_documents_scan_with_msgspec_as_with_json(
    cases: list[dict[str, Any]], top: dict[str, Any], indent: int | None, ascii_only: bool, repeat: str | None
) -> None:
    """Well-formed eval-set-like documents (json.dumps in any layout, a top-level key repeated or not): msgspec's
    spans are used, and visit what json's scanner visits."""
    text = json.dumps({**top, "eval_cases": cases}, indent=indent, ensure_ascii=ascii_only)
    if repeat is not None:
        text = text[: text.rindex("}")] + f', "{repeat}": {json.dumps(cases)}' + "}"
    fast = _scan_outcome(text, fast=True)
    assert fast == _scan_outcome(text, fast=False) and fast[0] == "visits"
