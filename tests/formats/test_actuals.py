"""Actual invocations from ADK EvalSetResult files (plain, double-encoded, camelCase) and plain mapping files."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from evalbot.errors import InputError
from evalbot.formats.actuals import Actuals
from evalbot.formats.invocations import final_text, tool_calls
from evalbot.formats.jsonio import KEEP_TEXT_CHARS
from evalbot.load import load_actuals
from tests.fakes.builders import Writer, inv


def result_file(*cases: tuple[str, list[dict[str, Any]]], set_id: str = "s") -> dict[str, Any]:
    """An EvalSetResult as ``adk eval`` writes it (snake_case)."""
    return {
        "eval_set_result_id": f"app_{set_id}_1",
        "eval_set_id": set_id,
        "eval_case_results": [
            {
                "eval_set_id": set_id,
                "eval_id": eval_id,
                "final_eval_status": 1,
                "eval_metric_result_per_invocation": [
                    {"actual_invocation": a, "expected_invocation": a, "eval_metric_results": []} for a in actual
                ],
            }
            for eval_id, actual in cases
        ],
    }


def camel(value: Any) -> Any:
    """Recursively camelCase every key (ADK's EvalSetResult accepts that spelling too)."""
    from pydantic.alias_generators import to_camel

    if isinstance(value, dict):
        return {to_camel(k): camel(v) for k, v in value.items()}
    if isinstance(value, list):
        return [camel(v) for v in value]
    return value


def invocations(actuals: Actuals, key: tuple[str | None, str]) -> list[Any]:
    """The entry for ``key``, asserting it parsed."""
    found = actuals.entries[key]
    assert not isinstance(found, InputError), found
    return found


RESULT = result_file(("a", [inv("q1", "r1", [("f", {"x": 1})]), inv("q2", "r2")]), ("b", [inv(events=True, calls=[("g", None)])]))


@pytest.mark.parametrize("encode", ["plain", "double_encoded", "camel_case", "list_of_results"])
def test_eval_set_result_forms(write: Writer, encode: str) -> None:
    """Every form ADK reads gives the same actual invocations keyed by (eval_set_id, eval_id)."""
    content: Any = {
        "plain": RESULT,
        "double_encoded": json.dumps(RESULT),
        "camel_case": camel(RESULT),
        "list_of_results": [RESULT],
    }[encode]
    actuals = load_actuals(write("r.evalset_result.json", content))
    assert set(actuals.entries) == {("s", "a"), ("s", "b")}
    first, second = invocations(actuals, ("s", "a"))
    assert final_text(first) == "r1" and [c.args for c in tool_calls(first)] == [{"x": 1}]
    assert final_text(second) == "r2"
    (event_form,) = invocations(actuals, ("s", "b"))
    assert [(c.name, c.args) for c in tool_calls(event_form)] == [("g", None)]


def test_plain_mapping_accepts_both_intermediate_forms(write: Writer) -> None:
    """``{eval_id: [Invocation]}`` with tool_uses and with invocation_events; keys are not set-qualified."""
    path = write("a.json", {"x": [inv(calls=[("f", {})])], "y": [inv(calls=[("f", {})], events=True)]})
    actuals = load_actuals(path)
    assert actuals.path == str(path)
    for eval_id in ("x", "y"):
        (one,) = invocations(actuals, (None, eval_id))
        assert [(c.name, c.args) for c in tool_calls(one)] == [("f", {})]


def test_find_prefers_the_set_qualified_entry() -> None:
    """``find`` looks up (set, id) first, then the id alone; later merged files win."""
    a, b = Actuals(entries={(None, "c"): []}), Actuals(entries={("s", "c"): [], (None, "d"): []})
    a.merge(b)
    assert a.find("s", "c") is b.entries[("s", "c")] and a.find("other", "c") is a.entries[(None, "c")]
    assert a.find("s", "zzz") is None


def test_bad_entry_is_an_error_for_that_case_only(write: Writer) -> None:
    """A malformed invocation makes that case's entry an InputError with the pointer; other cases still load."""
    path = write("a.json", {"ok": [inv()], "typo": [inv(), inv(final_respnse={})], "scalar": "hello"})
    actuals = load_actuals(path)
    assert len(invocations(actuals, (None, "ok"))) == 1
    typo, scalar = actuals.entries[(None, "typo")], actuals.entries[(None, "scalar")]
    assert isinstance(typo, InputError) and isinstance(scalar, InputError)
    assert (typo.path, typo.pointer) == (str(path), "/typo/1/final_respnse")
    assert "unknown field" in typo.message
    assert (scalar.pointer, scalar.message) == ("/scalar", "expected a list of invocations")


def same(value: Any) -> Any:
    """The document unchanged (snake_case)."""
    return value


@pytest.mark.parametrize("spelling", [same, camel])
def test_eval_set_result_pointer_reaches_the_actual_invocation(write: Writer, spelling: Any) -> None:
    """In an EvalSetResult the pointer goes through eval_case_results and actual_invocation, in the file's casing."""
    bad = result_file(("a", [inv(), inv(user_content=3)]))
    path = write("r.json", spelling(bad))
    err = load_actuals(path).entries[("s", "a")]
    assert isinstance(err, InputError)
    if spelling is camel:
        assert err.pointer == "/evalCaseResults/0/evalMetricResultPerInvocation/1/actualInvocation/userContent"
    else:
        assert err.pointer == "/eval_case_results/0/eval_metric_result_per_invocation/1/actual_invocation/user_content"


@pytest.mark.parametrize(
    ("content", "pointer", "message"),
    [
        ([1, 2], "", "expected actual runs: an ADK EvalSetResult"),
        (json.dumps([1]), "", "expected actual runs: an ADK EvalSetResult"),
        (json.dumps("{oops"), "", "invalid JSON at line 1, column 2"),
        ({"eval_case_results": {}}, "/eval_case_results", "expected a list of eval case results"),
        ({"eval_case_results": [{"eval_id": 3}]}, "/eval_case_results/0/eval_id", "required: the case's eval_id"),
        ({"evalCaseResults": [{}]}, "/evalCaseResults/0/eval_id", "required: the case's eval_id"),
        ({"eval_case_results": [{"eval_id": "a", "eval_metric_result_per_invocation": {"x": 1}}]},
         "/eval_case_results/0/eval_metric_result_per_invocation", "expected a list"),
        ("", "", "file is empty"),
    ],
)
def test_unusable_actuals_file_raises_with_pointer(write: Writer, content: Any, pointer: str, message: str) -> None:
    """A file that is not actuals at all raises InputError naming the file and the pointer."""
    path = write("r.json", content)
    with pytest.raises(InputError) as info:
        load_actuals(path)
    assert (info.value.path, info.value.pointer) == (str(path), pointer)
    assert message in info.value.message


def test_plain_mapping_is_parsed_per_read_and_merges_without_parsing(write: Writer) -> None:
    """Large plain maps keep no models: each read validates the case's slice again; merging does not parse."""
    path = write("a.json", {"x": [inv("q1")], "bad": [inv(final_respnse={})]})
    loaded = load_actuals(path)
    first, again = loaded.find("s", "x"), loaded.find("s", "x")
    assert isinstance(first, list) and isinstance(again, list) and first == again and first is not again
    merged = Actuals()
    merged.merge(loaded)
    err = merged.find("s", "bad")
    assert isinstance(err, InputError) and err.pointer == "/bad/0/final_respnse"


def test_malformed_plain_mapping_reports_json_message(write: Writer) -> None:
    """A syntax error late in a plain map is still one file error with json's line and column."""
    path = write("a.json", '{"x": [],\n "y": [}')
    with pytest.raises(InputError, match="invalid JSON at line 2, column 8"):
        load_actuals(path)


def test_ascii_file_is_read_back_by_offset_and_a_changed_file_is_an_error(write: Writer) -> None:
    """Slices of a large ASCII file (BOM or not) are re-read from disk; a file rewritten mid-run is a clear error."""
    doc = json.dumps({"x": [inv("q1")]}) + " " * KEEP_TEXT_CHARS  # trailing whitespace: larger than what is kept
    path = write("a.json", b"\xef\xbb\xbf" + doc.encode())
    loaded = load_actuals(path)
    found = loaded.find("s", "x")
    assert isinstance(found, list) and found[0].user_content.parts is not None
    path.write_text("{}", encoding="utf-8")
    err = loaded.find("s", "x")
    assert isinstance(err, InputError) and err.pointer == "/x" and "changed" in err.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_read_back_file_replaced_by_a_fifo_or_removed_is_an_error_not_a_hang(write: Writer) -> None:
    """The offset read refuses a FIFO swapped in mid-run (opening it would block) and names a vanished file."""
    doc = json.dumps({"x": [inv("q1")], "y": [inv("q2")]}) + " " * KEEP_TEXT_CHARS
    path = write("a.json", doc)
    loaded = load_actuals(path)
    path.unlink()
    gone = loaded.find("s", "y")
    assert isinstance(gone, InputError) and gone.pointer == "/y" and "vanished" in gone.message
    os.mkfifo(path)
    fifo = loaded.find("s", "x")
    assert isinstance(fifo, InputError) and "FIFO" in fifo.message


def test_read_backs_share_one_descriptor_until_the_path_names_another_file(write: Writer) -> None:
    """Slices read back through one descriptor while the path names the same file (changes in place are read as a
    fresh open reads them); a file renamed over it is opened anew and the old descriptor closed; dropping the
    slices closes the last one."""
    import gc

    from evalbot.formats.jsonio import Slices

    first = json.dumps({"x": [inv("q1")], "y": [inv("q2")]})
    doc = first + " " * KEEP_TEXT_CHARS
    path = write("a.json", doc)
    slices = Slices(doc, path)
    x, y = (first.index('"x": ') + 5, first.index(', "y"')), (first.index('"y": ') + 5, len(first) - 1)
    assert slices.decode(*x)[0]["user_content"]["parts"][0]["text"] == "q1"
    assert slices._fd is not None
    kept = slices._fd[0]
    assert slices.decode(*y)[0]["user_content"]["parts"][0]["text"] == "q2" and slices._fd[0] == kept
    with path.open("r+b") as f:  # the same file, changed in place: read as it is now
        f.seek(first.index("q2"))
        f.write(b"Q2")
    assert slices.decode(*y)[0]["user_content"]["parts"][0]["text"] == "Q2" and slices._fd[0] == kept
    other = path.with_name("b.json")
    other.write_text(doc.replace("q1", "z1"), encoding="utf-8")
    os.replace(other, path)  # another file under the same name
    assert slices.decode(*x)[0]["user_content"]["parts"][0]["text"] == "z1"
    with pytest.raises(OSError):
        os.fstat(kept)
    last = slices._fd[0]
    del slices
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(last)
