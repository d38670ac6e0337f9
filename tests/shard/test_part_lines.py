"""Reading a part case line by case line (``shard.parts.by_lines``, the fast path of ``part_from_bytes``) gives exactly
what validating the whole document by the Report model gives: the same report, or the same refusal naming the same
JSON pointer, whatever a forged part holds (edited, duplicated or misplaced case lines, wrong types, deep nesting,
huge values, invalid UTF-8, broken layout)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalbot.cli.commands import main
from evalbot.errors import InputError, json_pointer
from evalbot.results import CaseResult, PackedScores, Report, write_report_json
from evalbot.shard.merge import MergeError, merge_reports
from evalbot.shard.parts import by_lines, part_from_bytes
from tests.fakes.suites import write_suite
from tests.shard.forgery import forged

EXAMPLE = ["examples/evals", "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache",
           "--judge-replay"]
CASE_LINE = b'{"eval_id":'

Outcome = tuple[str, str, str]


@pytest.fixture(scope="module")
def example_parts(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """The two parts of the bundled example (judged criteria: votes, rationales and rubric details)."""
    folder = tmp_path_factory.mktemp("example")
    out = []
    for k in (1, 2):
        part = folder / f"part-{k}.json"
        assert main(["run", *EXAMPLE, "--shard", f"{k}/2", "--report", str(part)], {}) in (0, 1)
        out.append(part.read_bytes())
    return out


@pytest.fixture(scope="module")
def suite_part(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """Part 1 of 2 of a generated suite: 3 eval sets of multi-turn cases, failing ones with their turns."""
    folder = tmp_path_factory.mktemp("suite")
    evals, _, pr = write_suite(folder / "suite", cases=24, sets=3)
    part = folder / "part.json"
    assert main(["run", str(evals), "--actuals", str(pr), "--shard", "1/2", "--report", str(part)], {}) in (0, 1)
    return part.read_bytes()


def _whole(data: bytes) -> Outcome:
    """Today's reading, the reference: the whole document validated by the Report model."""
    try:
        return "ok", "", Report.model_validate_json(data.removeprefix(b"\xef\xbb\xbf")).model_dump_json()
    except ValidationError as exc:
        first = exc.errors()[0]
        return "refused", json_pointer(first["loc"]), first["msg"]


def _read(data: bytes) -> Outcome:
    try:
        return "ok", "", part_from_bytes(data, "part.json").model_dump_json()
    except InputError as exc:
        assert exc.path == "part.json" and exc.message.endswith("; give the report a shard job wrote")
        return "refused", exc.pointer, exc.message.removeprefix("not an evalbot report: ").removesuffix(
            "; give the report a shard job wrote")


def _same(data: bytes) -> Outcome:
    outcome = _read(data)
    assert outcome == _whole(data)
    return outcome


def _case_lines(data: bytes) -> list[int]:
    return [i for i, line in enumerate(data.split(b"\n")) if line.startswith(CASE_LINE)]


def _edit_line(data: bytes, nth: int, edit: Callable[[bytes], bytes]) -> bytes:
    """``data`` with its ``nth`` case line edited (the layout kept: the fast path reads it)."""
    lines = data.split(b"\n")
    index = _case_lines(data)[nth]
    lines[index] = edit(lines[index])
    return b"\n".join(lines)


def test_parts_evalbot_writes_are_read_line_by_line_into_the_same_report(example_parts: list[bytes],
                                                                          suite_part: bytes) -> None:
    for data in (*example_parts, suite_part):
        fast = by_lines(data)
        assert fast is not None  # the fast path is taken on every part a shard job writes
        whole = Report.model_validate_json(data)
        assert fast == whole and fast.model_dump_json() == whole.model_dump_json()
        assert type(fast.eval_sets[0]) is type(whole.eval_sets[0])
        assert fast.model_fields_set == whole.model_fields_set
        assert [es.model_fields_set for es in fast.eval_sets] == [es.model_fields_set for es in whole.eval_sets]
        kept = [m.per_invocation for es in fast.eval_sets for c in es.cases for m in c.metrics.values()
                if m.per_invocation]
        assert kept and all(isinstance(p, PackedScores) for p in kept)  # held compacted, as scored cases are
    assert len(_case_lines(suite_part)) == sum(len(es.cases) for es in Report.model_validate_json(suite_part)
                                               .eval_sets) > 8


@pytest.mark.parametrize(("edit", "pointer", "message"), [
    (lambda line: line.replace(b'"score":1.0', b'"score":1.5', 1), "/metrics/", "less than or equal to 1"),
    (lambda line: line.replace(b'"status":"', b'"status":5,"x":"', 1), "/status", "Input should be"),
    (lambda line: line.replace(b'"reruns":0', b'"reruns":0,"forged":true', 1), "/forged", "Extra inputs"),
    (lambda line: line.replace(b'"reruns":0', b'"reruns":"many"', 1), "/reruns", "valid integer"),
    (lambda line: line.replace(b'"reruns":0', b'"reruns":0,"reruns":[]', 1), "/reruns", "valid integer"),
    (lambda line: line.replace(b'"eval_id":"', b'"eval_id":"\xff', 1), "", "Invalid JSON"),
    (lambda line: line.replace(b'"eval_id":"', b'"eval_id":"\\ud800', 1), "", "Invalid JSON"),
    (lambda line: line.replace(b'"eval_id":"', b'"eval_id":"\n', 1), "", "Invalid JSON"),
    (lambda line: line.replace(b'"eval_id":', b'"eval_id":{"x":', 1), "", "Invalid JSON"),
    (lambda line: line[:-5], "", "Invalid JSON"),
])
def test_an_edited_case_line_is_refused_as_the_whole_document_refuses_it(
        suite_part: bytes, edit: Callable[[bytes], bytes], pointer: str, message: str) -> None:
    edited = _edit_line(suite_part, 2, edit)
    assert edited != suite_part
    state, where, said = _same(edited)
    assert state == "refused" and pointer in where and message in said, (where, said)
    if pointer:
        assert where.startswith("/eval_sets/") and "/cases/" in where


def test_a_case_nested_past_the_parsers_limit_is_refused_as_in_the_whole_document(suite_part: bytes) -> None:
    """A case line whose nesting the parser accepts alone but not at its depth in the report is refused."""
    def nested(depth: int) -> Callable[[bytes], bytes]:
        value = b"1"
        for _ in range(depth):
            value = b'{"a":' + value + b"}"
        return lambda line: line.replace(b'"details":null', b'"details":' + value, 1)

    def alone(data: bytes) -> bool:
        line = data.split(b"\n")[_case_lines(data)[0]]
        try:
            CaseResult.model_validate_json(line.removesuffix(b","))
        except ValidationError:
            return False
        return True

    deep = next(d for d in range(150, 260) if _whole(_edit_line(suite_part, 0, nested(d)))[0] == "refused")
    edited = _edit_line(suite_part, 0, nested(deep))
    assert alone(edited)  # validated alone, the line would pass
    refused = _same(edited)
    assert refused[0] == "refused" and "recursion limit" in refused[2]
    assert _same(_edit_line(suite_part, 0, nested(deep - 1)))[0] == "ok"
    assert _same(_edit_line(suite_part, 0, nested(5000)))[0] == "refused"


def test_huge_and_odd_values_in_a_case_line_read_the_same(suite_part: bytes) -> None:
    for value in (json.dumps("x" * 2_000_000), "1e999", "-0.0", json.dumps("é \u2028 \\u0000 ?sig=1 ✓"),
                  "[" * 150 + "]" * 150, json.dumps({str(i): i for i in range(20_000)})):
        edited = _edit_line(suite_part, 1, lambda line, v=value: line.replace(
            b'"details":null', b'"details":{"v":' + v.encode() + b"}", 1))
        assert _same(edited)[0] == "ok"


def test_a_duplicated_case_line_reads_as_in_the_whole_document_and_the_merge_refuses_it(suite_part: bytes) -> None:
    lines = suite_part.split(b"\n")
    first = _case_lines(suite_part)[0]
    doubled = b"\n".join([*lines[: first + 1], lines[first], *lines[first + 1:]])
    assert by_lines(doubled) is not None  # still the fast path's layout
    assert _same(doubled)[0] == "ok"
    with pytest.raises(MergeError, match="appears twice"):
        merge_reports([("part.json", part_from_bytes(doubled, "part.json"))])


def test_case_lines_out_of_their_place_are_read_as_the_whole_document_reads_them(suite_part: bytes) -> None:
    """Forged layouts: a case line inside a criterion's options or the report's errors, the placeholders' form
    written in a cases list, a second cases key, a case split over two lines, other line endings, indentation."""
    lines = suite_part.split(b"\n")
    index = _case_lines(suite_part)[0]
    case = lines[index].rstrip(b",")
    head = next(i for i, line in enumerate(lines) if line.endswith(b'"cases":['))
    variants = [
        # the first case moved into the first criterion's options; its place in the cases list taken by a string
        b"\n".join([*lines[:head], lines[head].replace(b'"options":{}', b'"options":{"k":[\n' + case + b"\n]}", 1),
                    b'"0123456789abcdef:0",', *lines[index + 1:]]),
        b"\n".join([*lines[:head], lines[head], b'"0123456789abcdef:0",', *lines[index + 1:]]),
        b"\n".join([*lines[:head], lines[head].replace(b'"cases":[', b'"cases":[\n' + case + b'\n],"cases":['),
                    *lines[head + 1:]]),
        suite_part.replace(b'"errors": [', b'"errors": [\n' + case + b",\n", 1),
        suite_part.replace(b'"errors": []', b'"errors": [\n' + case + b"\n]", 1),
        b"\n".join([*lines[:index], case[:40], case[40:] + b",", *lines[index + 1:]]),
        suite_part.replace(b"\n", b"\r\n"),
        json.dumps(json.loads(suite_part), indent=2).encode(),
        json.dumps(json.loads(suite_part)).encode(),
        b"\xef\xbb\xbf" + suite_part,
        b"  " + suite_part.replace(b"\n{", b"\n  {"),
        suite_part.replace(b'"cases":[\n', b'"cases":[', 1),
        suite_part + b"\n" + case,
    ]
    outcomes = [_same(variant) for variant in variants]
    assert outcomes[-1][0] == "refused" and outcomes[-6][0] == "ok" and outcomes[-5][0] == "ok"


def test_a_part_without_cases_or_with_empty_eval_sets_reads_the_same(suite_part: bytes) -> None:
    report = Report.model_validate_json(suite_part)
    report.eval_sets[1].cases = []
    out = io.StringIO()
    write_report_json(report, out)
    one_empty = out.getvalue().encode()
    assert b'"cases":[]}' in one_empty and by_lines(one_empty) is not None
    assert _same(one_empty)[0] == "ok"
    for es in report.eval_sets:
        es.cases = []
    out = io.StringIO()
    write_report_json(report, out)
    emptied = out.getvalue().encode()
    assert _case_lines(emptied) == [] and by_lines(emptied) is None
    assert _same(emptied)[0] == "ok"
    assert _same(b"{}")[0] == "ok"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_mutation_of_a_part_reads_as_the_whole_document_reads_it(example_parts: list[bytes],
                                                                     data: st.DataObject) -> None:
    """Random forgeries of a real part (bytes changed, inserted or cut; lines duplicated, dropped or swapped) give
    the same report or the same refusal as validating the whole document."""
    part = example_parts[data.draw(st.integers(0, 1))]
    mutated = forged(part, data)
    _same(mutated)
