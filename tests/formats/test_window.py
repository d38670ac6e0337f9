"""Walking a large JSON file a window at a time (formats/window.py): the members, entries and cases a whole-text
read gives, whatever the window size; anything else (non-ASCII, malformed, hostile, other shapes) is left to the
whole-text reader, which names the problem as before."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evalbot.formats import window as window_module
from evalbot.formats.actuals import _lazy, lazy_mapping, lazy_mapping_file
from evalbot.formats.jsonio import MAX_INT_DIGITS, Slices
from evalbot.formats.window import Items, NotAscii, Window, _msgspec_end, walk_object
from evalbot.load import _walk_eval_set, load_eval_set
from evalbot.pipeline import read_actuals
from tests.fakes.builders import case, eval_set, inv

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=12,
)


def _walk(window: Window) -> tuple[list[Any], list[Any]]:
    """Every member's key, decoded value and place, and each item of an array member named ``items``, as an
    idempotent visitor keeps them (a member stepped again when the window grew under it is stored again)."""
    members: dict[int, Any] = {}
    items: dict[int, Any] = {}

    def item(window: Window, i: int, start: int) -> int:
        items[i], end = json.JSONDecoder().raw_decode(window.text, start)
        return end

    def member(window: Window, key: str, start: int) -> int | Items:
        if key == "items" and window.text[start : start + 1] == "[":
            members[window.base + start] = (key, "[")
            return Items(item)
        value, end = json.JSONDecoder().raw_decode(window.text, start)
        members[window.base + start] = (key, value, window.base + end)
        return end

    walk_object(window, member)
    return [members[k] for k in sorted(members)], [items[k] for k in sorted(items)]


def _file_window(tmp_path: Path, text: str, chunk: int) -> Window:
    path = tmp_path / "doc.json"
    path.write_text(text, encoding="ascii")
    return Window("", path.open("rb"), chunk=chunk)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=st.dictionaries(st.text(max_size=4).filter(lambda k: k != "items"), JSON, max_size=4),
       items=st.none() | st.lists(JSON, max_size=4), chunk=st.integers(1, 9), indent=st.sampled_from([None, 1]))
def test_any_window_size_walks_what_the_whole_text_walks(tmp_path: Path, doc: dict[str, Any], items: list[Any] | None,
                                                         chunk: int, indent: int | None) -> None:
    data = {**doc, **({"items": items} if items is not None else {})}
    text = json.dumps(data, indent=indent) + "\n "
    whole = _walk(Window(text))
    assert _walk(_file_window(tmp_path, text, chunk)) == whole
    assert [m[0] for m in whole[0]] == list(data) and whole[1] == (items or [])


@pytest.mark.parametrize("text", [
    '{"a": 1', '{"a": [1, 2}', '{"a": 1} x', '[1]', '{"a" 1}', '{"a": 12', '{"items": [1, 2', '{"a": tru}', '{,}',
    '', '   ', '{"a": 1}{', '{"items": [1,]}',
])
@pytest.mark.parametrize("chunk", [1, 2, 5, 100])
def test_malformed_documents_raise_at_any_window_size(tmp_path: Path, text: str, chunk: int) -> None:
    with pytest.raises(ValueError):
        _walk(Window(text))
    with pytest.raises(ValueError):
        _walk(_file_window(tmp_path, text, chunk))


def test_a_non_ascii_window_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text('{"a": "' + "x" * 20 + 'é"}', encoding="utf-8")
    with pytest.raises(NotAscii):
        _walk(Window("", path.open("rb"), chunk=8))


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file over 200 bytes is walked, 64 characters at a time."""
    monkeypatch.setattr(window_module, "WINDOWED_FILE_BYTES", 200)
    monkeypatch.setattr(window_module, "WINDOW_CHARS", 64)


def _entries(actuals: Any) -> dict[Any, Any]:
    def shown(entry: Any) -> Any:
        return str(entry) if isinstance(entry, Exception) else [i.model_dump() for i in entry]

    return {key: shown(actuals.entries[key]) for key in actuals.entries}


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_large_actuals_map_walked_in_windows_gives_the_same_entries(tmp_path: Path, small_windows: None,
                                                                      bom: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    data = {f"case{i}": [inv(f"question {i}", "answer " * i, [("f", {"n": i})])] for i in range(30)}
    data["bad"] = {"not": "a list"}
    data["worse"] = [{"user_content": 3}]
    data["case3"] = [inv("again")]  # a repeated key: the last one counts
    text = json.dumps(data, indent=1)
    path = tmp_path / "run.json"
    path.write_bytes(bom + text.encode())
    whole = _entries(lazy_mapping(text, path))
    for chars in (1, 3, 7, 16, 64, 100):
        monkeypatch.setattr(window_module, "WINDOW_CHARS", chars)
        walked = lazy_mapping_file(path)
        assert walked is not None and _entries(walked) == whole
    assert _entries(read_actuals([str(path)]).actuals) == whole


@pytest.mark.parametrize("data", [
    {"evalbot": {"format": "evalbot.recorded_runs"}, "c": []},  # a forged recording marker: read whole
    {"eval_case_results": [], "eval_set_id": "x"},
    {"rows": []},
])
def test_other_shapes_are_left_to_the_whole_text_reader(tmp_path: Path, small_windows: None,
                                                       data: dict[str, Any]) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data) + " " * 300, encoding="utf-8")
    assert lazy_mapping_file(path) is None


@pytest.mark.parametrize("text", [
    '{"c": [' + "[" * 300 + "]" * 300 + "]}",  # nested past the limit
    '{"c": [1, 2]' + " " * 300,  # unterminated
    '{"c": ["' + "é" * 200 + '"]}',  # not ASCII
])
def test_hostile_or_malformed_large_files_read_as_before(tmp_path: Path, small_windows: None, text: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.json"
    path.write_text(text, encoding="utf-8")
    windowed = read_actuals([str(path)])
    monkeypatch.setattr(window_module, "WINDOWED_FILE_BYTES", 1 << 40)
    whole = read_actuals([str(path)])
    assert [str(e) for e in windowed.errors] == [str(e) for e in whole.errors]
    assert _entries(windowed.actuals) == _entries(whole.actuals)
    assert windowed.errors or isinstance(windowed.actuals.entries[None, "c"], Exception)  # refused either way


def test_a_fifo_is_refused_by_name(tmp_path: Path, small_windows: None) -> None:
    fifo = tmp_path / "run.json"
    os.mkfifo(fifo)
    assert lazy_mapping_file(fifo) is None
    (error,) = read_actuals([str(fifo)]).errors
    assert "run.json" in str(error)


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_a_large_eval_set_walked_in_windows_loads_the_same_cases(tmp_path: Path, small_windows: None,
                                                                  bom: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    cases = [case(f"c{i}", inv(f"q{i}", "a " * i, [("f", {"i": i})])) for i in range(25)]
    cases.append(case("c3", inv("duplicate")))
    cases.append({"no_id": True})
    data = {"eval_set_id": "big", "extra_key": 1, "eval_cases": [{"eval_id": "dropped"}], "description": "d"}
    text = json.dumps(data)[:-1] + ', "eval_cases": ' + json.dumps(cases, indent=2) + "}"  # the last one counts
    path = tmp_path / "big.evalset.json"
    path.write_bytes(bom + text.encode())

    def shown(loaded: Any) -> Any:
        return (loaded.eval_set_id, loaded.notices, [str(e) for e in loaded.errors],
                [(c.eval_id, c.case.model_dump() if c.case is not None else str(c.error)) for c in loaded.cases])

    walked = []
    for chars in (1, 3, 7, 16, 64, 100):  # cases end at a window's end somewhere: stepped again
        monkeypatch.setattr(window_module, "WINDOW_CHARS", chars)
        walked.append(shown(load_eval_set(path)))
    monkeypatch.setattr(window_module, "WINDOWED_FILE_BYTES", 1 << 40)
    whole = shown(load_eval_set(path))
    assert walked == [whole] * len(walked)
    assert len(whole[3]) == 26 and whole[1] and whole[2]  # the duplicate dropped with an error; extra_key noted


_ODD_CASES = [
    '{"eval_id": "first", "conversation": [], "eval_id": "last"}',  # a repeated key: the last one counts
    '{"eval\\u005fid": "escaped", "conversation": []}',  # the key written with an escape
    '{"evalId": "camel", "conversation": []}',
    '{"evalId": "camel", "eval_id": "snake", "conversation": []}',
    '{"eval_id": 7, "conversation": []}',  # not a string: named by its index
    '{"eval_id": "", "conversation": []}',
    '{"eval_id": "\\ud800", "conversation": []}',  # a lone surrogate: named by its index
    '{"conversation": [{"eval_id": "nested", "user_content": {"parts": []}}]}',  # not the case's own id
    '{"eval_id": "nan", "conversation": [], "x": NaN}',  # msgspec refuses NaN: json's scan decides
    '{"eval_id": "long", "x": [' + "9" * (MAX_INT_DIGITS + 1) + "]}",
    '{"eval_id": "deep", "x": ' + "[" * 300 + "]" * 300 + "}",
    '{"eval_id": "deeper", "x": ' + "[" * 600 + "]" * 600 + "}",
    '{"eval_id": {"a": [1, "]}"]}, "conversation": []}',
    '{"\\ud800": 1, "eval_id": "lone surrogate key", "conversation": []}',  # msgspec refuses the key: scanned
    '{"\\ud83d\\ude00": 1, "eval_id": "pair key", "conversation": []}',
    '{ }',
]


@pytest.mark.parametrize("odd", _ODD_CASES)
def test_odd_cases_of_a_large_eval_set_have_the_ids_and_errors_of_the_whole_text(
        tmp_path: Path, small_windows: None, monkeypatch: pytest.MonkeyPatch, odd: str) -> None:
    """A file window takes each case's id from msgspec's raw members (Window.pick) instead of scanning its members:
    the same ids, cases and errors as the whole-text read, for ids repeated, escaped, camelCase, not strings or
    nested, and for cases msgspec refuses or json could read otherwise (NaN, long integers, deep nesting)."""
    cases = [json.dumps(case("a", inv("q"))), odd, json.dumps(case("b", inv("r")))]
    text = '{"eval_set_id": "odd", "eval_cases": [' + ", ".join(cases) + "]}"
    path = tmp_path / "odd.evalset.json"
    path.write_text(text, encoding="ascii")

    def shown(loaded: Any) -> Any:
        return (loaded.eval_set_id, loaded.notices, [str(e) for e in loaded.errors],
                [(c.eval_id, c.case.model_dump() if c.case is not None else str(c.error)) for c in loaded.cases])

    walked = []
    for chars in (1, 7, 64, 1 << 20):
        monkeypatch.setattr(window_module, "WINDOW_CHARS", chars)
        walked.append(shown(load_eval_set(path)))
    monkeypatch.setattr(window_module, "WINDOWED_FILE_BYTES", 1 << 40)
    assert walked == [shown(load_eval_set(path))] * len(walked)


def test_a_file_window_picks_ids_without_scanning_members(tmp_path: Path) -> None:
    text = '[{"eval_id": "a", "n": [1, {"eval_id": "x"}], "evalId": "b", "eval_id": "c"} , 2]'
    window = _file_window(tmp_path, text, 1 << 20)
    window.advance(0)
    assert window.pick(1, ("eval_id", "evalId")) == (text.index(" ,"), {"eval_id": "c", "evalId": "b"})
    assert window.pick(1, ("other",)) == (text.index(" ,"), {})
    assert Window(text).pick(1, ("eval_id",)) is None  # a text in memory: its members are scanned (or spanned)
    cut = _file_window(tmp_path, text, 20)  # the object runs past the window: json's scan grows it
    cut.advance(0)
    assert cut.pick(1, ("eval_id",)) is None
    nan = _file_window(tmp_path, '[{"eval_id": "a", "x": NaN}]', 1 << 20)
    nan.advance(0)
    assert nan.pick(1, ("eval_id",)) is None


def test_a_malformed_large_eval_set_is_reported_as_before(tmp_path: Path, small_windows: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.evalset.json"
    path.write_text(json.dumps(eval_set("big", *[case(f"c{i}") for i in range(20)]))[:-3], encoding="utf-8")
    walked = load_eval_set(path)
    monkeypatch.setattr(window_module, "WINDOWED_FILE_BYTES", 1 << 40)
    assert [str(e) for e in walked.errors] == [str(e) for e in load_eval_set(path).errors] != []


def _cut_everywhere(text: str) -> list[Window]:
    """Windows on ``text`` whose first window ends at every place in turn (each member and item then ends at a
    window's end in one of them, and is stepped again)."""
    return [Window(text[:k], io.BytesIO(text[k:].encode()), chunk=5) for k in range(len(text))]


def test_every_window_boundary_gives_the_cases_of_the_whole_text(tmp_path: Path) -> None:
    cases = [case("a", inv("q")), {"evalId": "b", "conversation": [inv("r")]}, case("c", inv("s"))]
    text = json.dumps({"eval_set_id": "s", "eval_cases": cases, "name": "n"}, indent=1)
    path = tmp_path / "s.evalset.json"
    path.write_text(text, encoding="ascii")

    def shown(found: Any) -> Any:
        assert found is not None
        eval_set_id, loaded, notices = found
        return eval_set_id, notices, [(c.eval_id, c.case.model_dump()) for c in loaded]

    whole = shown(_walk_eval_set(Window(text), Slices(text, path), path))
    for window in _cut_everywhere(text):
        assert shown(_walk_eval_set(window, Slices.of_file(path, 0), path)) == whole
    assert [eval_id for eval_id, _ in whole[2]] == ["a", "b", "c"]


def test_every_window_boundary_gives_the_entries_of_the_whole_text(tmp_path: Path) -> None:
    text = json.dumps({"a": [inv("q")], "b": 3, "c": [inv("r", "x")], "a ": []}, indent=1)
    path = tmp_path / "run.json"
    path.write_text(text, encoding="ascii")
    whole = _entries(lazy_mapping(text, path))
    for window in _cut_everywhere(text):
        walked = _lazy(window, Slices.of_file(path, 0), path)
        assert walked is not None and _entries(walked) == whole


# --- a file window skips arrays and objects with msgspec, exactly as json's decoder skips them --------------------

def _skips(window: Window) -> list[Any]:
    """Where ``window.skip`` ends each member's value and each item of the array member ``items``, and the members
    of the member ``b`` when it is an object (``window.members``)."""
    seen: dict[Any, int] = {}

    def item(window: Window, i: int, start: int) -> int:
        end = window.skip(start)
        seen[("item", window.base + start)] = window.base + end
        return end

    def inner(window: Window, start: int) -> int:
        """An object's members visited (each value skipped, or decoded when its key is "a"), else the value
        skipped."""
        if window.text[start : start + 1] != "{":
            return window.skip(start)

        def visit(key: str, at: int) -> int:
            end = window.decode(at)[1] if key == "a" else window.skip(at)
            seen[("member", key, window.base + at)] = window.base + end
            return end

        return window.members(start, visit)

    def member(window: Window, key: str, start: int) -> int | Items:
        if key == "items" and window.text[start : start + 1] == "[":
            return Items(item)
        end = inner(window, start) if key == "b" else window.skip(start)
        seen[(key, window.base + start)] = window.base + end
        return end

    walk_object(window, member)
    return sorted(seen.items(), key=repr)


def _skip_outcome(window: Window) -> tuple[str, Any]:
    try:
        return "ok", _skips(window)
    except ValueError:  # json.JSONDecodeError too: a file window whose value fails reads on to the end first
        return "ValueError", None
    except RecursionError:
        return "RecursionError", None


_HOSTILE_SCALAR = st.from_regex(r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,20})?([eE][+-]?[0-9]{1,4})?", fullmatch=True) | (
    st.sampled_from(['"a"', '"\\ud800"', '"\\udc00\\ud800"', '"\\x"', '"\\u12"', '"]"', '"}, {"', '"\\\\"',
                     '"\\""', '"\x01"', '"\x7f"', "true", "null", "NaN", "-Infinity", "1e400", "-0", "01", "1.",
                     ".5", "tru", '"'])
)


def _hostile_compose(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    array = st.lists(inner, max_size=4).map(lambda items: "[" + ", ".join(items) + "]")
    members = st.lists(st.tuples(st.sampled_from(['"a"', '"b"', '"\\u0061"', '"]"']), inner), max_size=4)
    obj = members.map(lambda pairs: "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}")
    return array | obj


_HOSTILE = st.recursive(_HOSTILE_SCALAR, _hostile_compose, max_leaves=10)
"""ASCII JSON values, some invalid or hostile (NaN, lone surrogates, bad escapes, control characters, duplicate
keys, brackets in strings, numbers json refuses)."""
DEEP = "[" * 600 + "]" * 600
LONG = "[" + "9" * (MAX_INT_DIGITS + 1) + "]"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docs=st.lists(_HOSTILE, min_size=3, max_size=3), space=st.sampled_from(["", " ", "\n "]),
       chunk=st.sampled_from([3, 17, 1 << 20]))
@example(docs=[DEEP, "[1]", "{}"], space="", chunk=1 << 20)
@example(docs=["[" * 1200 + "]" * 1200, "[]", "[]"], space=" ", chunk=50)
@example(docs=[LONG, '{"a": ' + LONG + "}", "[" + "9" * MAX_INT_DIGITS + "]"], space="", chunk=1 << 20)
@example(docs=["[NaN, Infinity]", '["\\ud800"]', '{"a": 1, "a": [2]}'], space="", chunk=1 << 20)
@example(docs=['["a]", "}"]', '{"a": "],"}', "[1e400, -0]"], space="\n ", chunk=5)
@example(docs=["[]", "{}", '{"a": 1, "b": [2], "a": 3}'], space="", chunk=1 << 20)
@example(docs=["[]", "{}", '{"\\u0061": "x", "b": {"c": [1]}, "]": "}"}'], space=" ", chunk=1 << 20)
@example(docs=["[]", "{}", '{"a": NaN, "b": [2]}'], space=" ", chunk=1 << 20)
def test_file_windows_skip_values_where_json_skips_them(tmp_path: Path, docs: list[str], space: str,
                                                      chunk: int) -> None:
    """Hostile values (NaN, lone surrogates, bad escapes, duplicate keys, deep nesting, long integers, brackets in
    strings) as member values, array items and members of an object, in windows of any size: the same ends and
    visits, or the same refusal, as json's decoder and scanner over the whole text."""
    a, b, c = docs
    text = f'{{"a":{space}{a},{space}"items": [{b}, {c}{space}],"b": {c}{space}}}'
    expected = _skip_outcome(Window(text))
    assert _skip_outcome(_file_window(tmp_path, text, chunk)) == expected


@pytest.mark.parametrize(("value", "fast"), [
    ('[1, {"a": [2, "]"]}]', True), ("{}", True), ("[1, NaN]", False), ("[1, [2", False), (DEEP, False),
    (LONG, False), ('["\\x"]', False), ("[" * 5000 + "]" * 5000, False),
])
def test_msgspec_finds_the_end_or_leaves_it_to_json(value: str, fast: bool) -> None:
    """The end msgspec finds is the value's, before whitespace and what follows; anything msgspec cannot say as
    json would (NaN, a value cut by the window's end, deep nesting, past msgspec's own limit too, long integers,
    invalid escapes) is None."""
    text = f"x{value} \n, 1]"
    got = _msgspec_end(text, text.encode("ascii"), 1)
    assert got == (1 + len(value) if fast else None)
