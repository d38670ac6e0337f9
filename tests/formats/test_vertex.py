"""Vertex-style datasets (JSON, JSONL, CSV) as eval cases and as actual runs, and their row-level errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalbot.errors import InputError
from evalbot.formats.adk import Invocation
from evalbot.formats.invocations import final_text, tool_calls, user_text
from evalbot.formats.loaded import LoadedCase
from evalbot.formats.vertex import (
    VertexInvocation,
    cases_from_rows,
    failure_of,
    load_actuals,
    load_dataset,
    looks_like_rows,
    trajectory_given,
)
from evalbot.load import load_eval_set
from evalbot.pipeline import evaluate
from tests.fakes.vertex_rows import call, write_csv, write_jsonl

DATA = Path(__file__).resolve().parents[1] / "data" / "vertex"
PRODUCT = DATA / "product_agent"


def only_error(cases: list[LoadedCase], eval_id: str) -> InputError:
    """The load error of one case (and assert it has one)."""
    found = next(c for c in cases if c.eval_id == eval_id)
    assert found.error is not None and found.case is None
    return found.error


@pytest.mark.parametrize("name", ["executed.jsonl", "executed.csv"])
def test_jsonl_and_csv_give_the_same_cases(name: str) -> None:
    """Both encodings of Google's executed run load into 5 one-invocation cases with their predicted side."""
    eval_set_id, cases = load_dataset(PRODUCT / name)
    assert eval_set_id == "executed"
    assert [c.eval_id for c in cases] == [f"row-{i}" for i in range(5)]
    first = cases[1]
    assert first.case is not None and first.case.conversation is not None and first.actual is not None
    expected, actual = first.case.conversation[0], first.actual[0]
    assert user_text(expected) == "Get product details and price for headphones"
    assert [(c.name, c.args) for c in tool_calls(expected)] == [
        ("get_product_details", {"product_name": "headphones"}),
        ("get_product_price", {"product_name": "headphones"}),
    ]
    assert tool_calls(actual) == tool_calls(expected)
    assert final_text(actual) == "50" and final_text(expected) == ""
    assert actual.duration == pytest.approx(2.74803)
    assert failure_of(actual) is False
    assert isinstance(actual, VertexInvocation) and actual.invocation_id == "row-1"


def test_json_list_is_routed_by_load_eval_set() -> None:
    """A JSON list of Vertex rows is an eval set whose id is the file stem, with trajectories given as lists."""
    loaded = load_eval_set(PRODUCT / "byod.json")
    assert loaded.eval_set_id == "byod" and not loaded.errors
    assert len(loaded.cases) == 5 and all(c.actual is not None and c.error is None for c in loaded.cases)
    assert loaded.config.criteria[0].name == "trajectory_exact_match"


def test_json_object_with_rows_key_is_accepted_by_load_dataset(tmp_path: Path) -> None:
    """``{"rows": [...]}`` (the shape of the shared samples) is read by load_dataset."""
    path = tmp_path / "wrapped.json"
    path.write_text(json.dumps({"_source": "x", "rows": [{"id": "a", "prompt": "p", "response": "r"}]}))
    assert [c.eval_id for c in load_dataset(path)[1]] == ["a"]


def test_eval_id_and_id_columns(tmp_path: Path) -> None:
    """``eval_id`` wins over ``id``; an integer id becomes a string; rows without one are ``row-<n>``."""
    rows = [{"eval_id": "e", "id": "i", "prompt": "p"}, {"id": 7, "prompt": "p"}, {"prompt": "p"}]
    _, cases = cases_from_rows(rows, tmp_path / "ids.json")
    assert [c.eval_id for c in cases] == ["e", "7", "row-2"]


def test_reference_only_rows_take_actuals_from_another_file(tmp_path: Path) -> None:
    """Rows without a predicted side have no actual; a Vertex JSONL actuals file supplies it by eval_id."""
    ref = write_jsonl(tmp_path / "ref.jsonl", [{"id": "a", "prompt": "p", "reference_trajectory": [call("t", x=1)]}])
    pred = write_jsonl(tmp_path / "pred.jsonl", [{"id": "a", "predicted_trajectory": [call("t", x=1.0)]}])
    assert load_dataset(ref)[1][0].actual is None
    config = tmp_path / "cfg.json"
    config.write_text(json.dumps({"criteria": {"trajectory_exact_match": 1.0}}))
    report = evaluate([str(ref)], actuals=[str(pred)], config=str(config))
    result = report.eval_sets[0].cases[0].metrics["trajectory_exact_match"]
    assert (result.score, result.status) == (1.0, "passed")


def test_actuals_rows_with_one_eval_id_form_a_multi_turn_run(tmp_path: Path) -> None:
    """Rows sharing an eval_id become that case's invocations in file order, with distinct invocation ids."""
    path = write_jsonl(
        tmp_path / "runs.jsonl",
        [{"eval_id": "c", "response": "one"}, {"eval_id": "d", "response": "x"}, {"eval_id": "c", "response": "two"}],
    )
    actuals = load_actuals(path)
    found = actuals.find("any-set", "c")
    assert isinstance(found, list) and [final_text(i) for i in found] == ["one", "two"]
    assert [i.invocation_id for i in found] == ["c#1", "c#2"]
    single = actuals.find("s", "d")
    assert isinstance(single, list) and single[0].invocation_id == "d"


def test_actuals_row_without_agent_output_is_an_error_for_that_case(tmp_path: Path) -> None:
    """An actuals row with only a prompt cannot be an actual run: its eval_id gets an error naming the row."""
    path = write_jsonl(tmp_path / "runs.jsonl", [{"eval_id": "a", "prompt": "p"}, {"eval_id": "b", "response": "r"}])
    actuals = load_actuals(path)
    bad = actuals.find("s", "a")
    assert isinstance(bad, InputError) and bad.pointer == "line 1" and "no agent output" in bad.message
    assert isinstance(actuals.find("s", "b"), list)


def test_actuals_from_csv_and_json(tmp_path: Path) -> None:
    """CSV and JSON actuals files are read with the same columns."""
    csv_path = write_csv(tmp_path / "runs.csv", ["id", "response", "failure"], [["a", "hello", "1"]])
    (inv,) = load_actuals(csv_path).entries[(None, "a")]  # type: ignore[misc]
    assert final_text(inv) == "hello" and failure_of(inv) is True
    json_path = tmp_path / "runs.json"
    json_path.write_text(json.dumps([{"id": "a", "response": "hi", "latency_in_seconds": 2}]))
    (inv,) = load_actuals(json_path).entries[(None, "a")]  # type: ignore[misc]
    assert inv.duration == 2.0 and failure_of(inv) is None


def test_empty_list_differs_from_no_trajectory(tmp_path: Path) -> None:
    """``[]`` is an empty trajectory; an absent, null or empty-cell trajectory is "not given"."""
    rows = [
        {"prompt": "p", "predicted_trajectory": [], "reference_trajectory": "[]"},
        {"prompt": "p", "response": "r", "reference_trajectory": None},
    ]
    _, cases = cases_from_rows(rows, tmp_path / "d.json")
    assert cases[0].case is not None and cases[0].actual is not None and cases[0].case.conversation is not None
    assert trajectory_given(cases[0].actual[0]) and trajectory_given(cases[0].case.conversation[0])
    assert cases[1].case is not None and cases[1].actual is not None and cases[1].case.conversation is not None
    assert not trajectory_given(cases[1].actual[0]) and not trajectory_given(cases[1].case.conversation[0])
    csv_path = write_csv(tmp_path / "d.csv", ["prompt", "response", "predicted_trajectory"], [["p", "r", ""]])
    (loaded,) = load_dataset(csv_path)[1]
    assert loaded.actual is not None and not trajectory_given(loaded.actual[0])


def test_tool_input_given_as_json_string_is_parsed(tmp_path: Path) -> None:
    """A ``tool_input`` holding a JSON object string is parsed; null arguments stay null (not ``{}``)."""
    rows = [{"prompt": "p", "reference_trajectory": [{"tool_name": "a", "tool_input": '{"n": 2}'},
                                                     {"tool_name": "b", "tool_input": None}]}]
    (loaded,) = cases_from_rows(rows, tmp_path / "d.json")[1]
    assert loaded.case is not None and loaded.case.conversation is not None
    assert [(c.name, c.args) for c in tool_calls(loaded.case.conversation[0])] == [("a", {"n": 2}), ("b", None)]


def test_bad_json_row_names_its_pointer_and_other_rows_still_load(tmp_path: Path) -> None:
    """A missing tool_input is an error on that row only, at /3/predicted_trajectory/1/tool_input."""
    good = {"prompt": "p", "predicted_trajectory": [call("a")], "reference_trajectory": [call("a")]}
    bad = {"prompt": "p", "predicted_trajectory": [call("a"), {"tool_name": "b"}]}
    path = tmp_path / "set.json"
    _, cases = cases_from_rows([good, good, good, bad, good], path)
    err = only_error(cases, "row-3")
    assert (err.path, err.pointer) == (str(path), "/3/predicted_trajectory/1/tool_input")
    assert "use {} for none" in err.message
    assert sum(c.case is not None for c in cases) == 4


def test_bad_csv_cell_names_row_and_column(tmp_path: Path) -> None:
    """CSV errors name the spreadsheet row (header = row 1) and the column, and the JSON pointer inside the cell."""
    header = ["prompt", "predicted_trajectory"]
    ok = json.dumps([call("a", x=1)])
    path = write_csv(tmp_path / "d.csv", header, [["p", ok], ["p", ok], ["p", ok], ["p", '[{"tool_input": {}}]']])
    _, cases = load_dataset(path)
    err = only_error(cases, "row-3")
    assert err.pointer == "row 5, column predicted_trajectory, /0/tool_name"
    assert str(err).startswith(f"{path}:row 5, column predicted_trajectory")


def test_bad_jsonl_lines(tmp_path: Path) -> None:
    """Invalid JSON and non-object lines are errors on their own rows; blank lines are skipped."""
    path = tmp_path / "d.jsonl"
    path.write_text('{"prompt": "a"}\n\n{"prompt": \n[1]\n{"prompt": "b", "predicted_trajectory": 5}\n')
    _, cases = load_dataset(path)
    assert [c.eval_id for c in cases] == ["row-0", "row-1", "row-2", "row-3"]
    assert only_error(cases, "row-1").pointer == "line 3" and "invalid JSON" in only_error(cases, "row-1").message
    assert "expected a JSON object per line" in only_error(cases, "row-2").message
    assert only_error(cases, "row-3").pointer == "line 5, /predicted_trajectory"


@pytest.mark.parametrize(
    ("row", "pointer", "needle"),
    [
        ({"prompt": 3}, "/0/prompt", "expected a string"),
        ({"prompt": "p", "latency_in_seconds": -1}, "/0/latency_in_seconds", "non-negative"),
        ({"prompt": "p", "latency_in_seconds": "fast"}, "/0/latency_in_seconds", "number of seconds"),
        ({"prompt": "p", "latency_in_seconds": True}, "/0/latency_in_seconds", "non-negative"),
        ({"prompt": "p", "failure": "yes"}, "/0/failure", "expected 0 or 1"),
        ({"prompt": "p", "failure": 2}, "/0/failure", "expected 0 or 1"),
        ({"prompt": "p", "eval_id": ["x"]}, "/0/eval_id", "non-empty string"),
        ({"prompt": "p", "reference_trajectory": {"tool_name": "a"}}, "/0/reference_trajectory", "expected a list"),
        ({"prompt": "p", "reference_trajectory": ["a"]}, "/0/reference_trajectory/0", "expected a {tool_name"),
        ({"prompt": "p", "reference_trajectory": [{"tool_name": "", "tool_input": {}}]},
         "/0/reference_trajectory/0/tool_name", "non-empty string"),
        ({"prompt": "p", "reference_trajectory": [{"tool_name": "a", "tool_input": [1]}]},
         "/0/reference_trajectory/0/tool_input", "JSON object of arguments"),
        ({"prompt": "p", "reference_trajectory": [{"tool_name": "a", "tool_input": "{oops"}]},
         "/0/reference_trajectory/0/tool_input", "not valid JSON"),
        ({"prompt": "p", "reference_trajectory": "[{'tool_name': 'a', 'tool_input': {}}]"},
         "/0/reference_trajectory", "Python repr"),
        ({"prompt": "p", "reference_trajectory": '[{"tool_name": "a", "tool_input": {"x": NaN}}]'},
         "/0/reference_trajectory", "not a JSON number"),
        ({"other": 1}, "/0", "none of the Vertex columns"),
    ],
)
def test_row_errors(row: dict[str, Any], pointer: str, needle: str, tmp_path: Path) -> None:
    """Each kind of bad value is reported on its row with the pointer and what was expected."""
    (loaded,) = cases_from_rows([row], tmp_path / "d.json")[1]
    assert loaded.error is not None and loaded.error.pointer == pointer
    assert needle in loaded.error.message


def test_failure_and_latency_spellings(tmp_path: Path) -> None:
    """failure accepts 0/1, booleans and their CSV spellings; NaN latency (a crashed Vertex row) is "not given"."""
    path = write_csv(
        tmp_path / "d.csv",
        ["prompt", "response", "failure", "latency_in_seconds"],
        [["p", "r", "TRUE", "nan"], ["p", "r", "0.0", "1.5"], ["p", "r", "", ""]],
    )
    actual = [c.actual[0] for c in load_dataset(path)[1] if c.actual]
    assert [failure_of(a) for a in actual] == [True, False, None]
    assert [a.duration for a in actual] == [None, 1.5, None]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("a,b\n1,2\n", "no Vertex column"),
        ("prompt,response\n", "no rows"),
    ],
)
def test_unusable_csv_files(content: str, needle: str, tmp_path: Path) -> None:
    """A CSV without Vertex columns or without rows is a file-level error."""
    path = tmp_path / "d.csv"
    path.write_text(content)
    with pytest.raises(InputError, match=needle):
        load_dataset(path)


def test_csv_row_with_extra_cells_is_an_error_on_that_row(tmp_path: Path) -> None:
    """An unquoted comma shifts cells: that row is reported, the others load."""
    path = tmp_path / "d.csv"
    path.write_text("prompt,response\na,b\nc,d,e\n")
    _, cases = load_dataset(path)
    assert cases[0].case is not None
    err = only_error(cases, "row-1")
    assert err.pointer == "row 3" and "quote cells holding commas" in err.message


def test_looks_like_rows() -> None:
    """Detection of decoded Vertex rows (used to route JSON actuals)."""
    assert looks_like_rows([{"response": "x"}])
    assert not looks_like_rows([{"query": "x"}]) and not looks_like_rows({"a": []}) and not looks_like_rows([])


def test_adk_invocation_strictness_is_unchanged() -> None:
    """An ADK invocation with a ``failure`` key is still rejected: only Vertex rows carry that flag."""
    with pytest.raises(ValidationError):
        Invocation.model_validate({"user_content": {"parts": [{"text": "x"}]}, "failure": 1})
    plain = Invocation.model_validate({"user_content": {"parts": [{"text": "x"}]}})
    assert failure_of(plain) is None and trajectory_given(plain)
