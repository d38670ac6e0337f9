"""Vertex AI-style agent datasets (JSON list, JSONL, CSV rows) as one-invocation eval cases and as actual runs.

A row has the columns ``prompt``, ``response``, ``reference``, ``predicted_trajectory``, ``reference_trajectory``
(a list of ``{"tool_name", "tool_input"}`` or that list as a JSON string, as CSV cells are) and optionally
``latency_in_seconds``, ``failure`` and ``eval_id`` (or ``id``).  Other columns are ignored.  A value that is
absent, ``null`` or an empty CSV cell is "not given": a trajectory that is not given is different from ``[]``.

As an eval set each row becomes a case with one expected invocation (prompt, reference, reference_trajectory) and,
when the row has a predicted side (response, predicted_trajectory, latency or failure), that side as the actual
run.  As actuals, rows sharing an eval_id become that case's invocations in file order.  A bad row is an error on
that row's case only, naming the file and where: ``/3/predicted_trajectory/1/tool_input`` (JSON),
``line 4, /predicted_trajectory`` (JSONL), ``row 5, column predicted_trajectory`` (CSV, header = row 1).
"""

from __future__ import annotations

import csv
import difflib
import io
import json
import math
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalbot.errors import InputError, json_pointer, printable
from evalbot.formats.actuals import Actuals
from evalbot.formats.adk import Content, EvalCase, FunctionCall, IntermediateData, Invocation, Part
from evalbot.formats.jsonio import loads, parse_json, read_json, read_text
from evalbot.formats.loaded import LoadedCase

KNOWN = ("prompt", "response", "reference", "predicted_trajectory", "reference_trajectory")
PREDICTED = ("response", "predicted_trajectory", "latency_in_seconds", "failure")
ALL_COLUMNS = (*KNOWN, "latency_in_seconds", "failure", "eval_id", "id")
"""Every column evalbot reads; any other is ignored (with a notice)."""
COLUMN_OF = {
    "expected_calls": "reference_trajectory",
    "expected_response": "reference",
    "actual_calls": "predicted_trajectory",
    "actual_response": "response",
}
"""The column holding each part of a case that a criterion may read (criteria.READS names the parts)."""
_TRUE = ("1", "1.0", "true")
_FALSE = ("0", "0.0", "false")


class VertexInvocation(Invocation):
    """An Invocation carrying what a Vertex row records beyond ADK's model (ADK's own parsing is unchanged).

    Any producer of actual runs may use it: ``failure`` is True when the agent raised on this invocation, and
    ``trajectory_given`` is False when the row gave no trajectory at all (which is not the same as ``[]``).
    """

    failure: bool | None = None
    trajectory_given: bool = True


def failure_of(invocation: Invocation) -> bool | None:
    """Whether the agent failed on this invocation, or None when the run does not record it."""
    return invocation.failure if isinstance(invocation, VertexInvocation) else None


def trajectory_given(invocation: Invocation) -> bool:
    """False only for a Vertex row without a trajectory; ADK invocations always have one (possibly empty)."""
    return invocation.trajectory_given if isinstance(invocation, VertexInvocation) else True


Where = Callable[[str | None, str], str]
"""Turns (column or None for the whole row, JSON pointer inside the value) into a location for messages."""


@dataclass(frozen=True)
class _Row:
    index: int
    values: dict[str, Any] | None
    where: Where
    problem: str | None = None
    cells: bool = False
    """CSV: every value is text and an empty cell means "not given"."""


class _Bad(Exception):
    def __init__(self, column: str | None, inner: str, message: str) -> None:
        super().__init__(message)
        self.column, self.inner, self.message = column, inner, message


def looks_like_rows(data: Any) -> bool:
    """Decoded JSON that is a Vertex dataset: a non-empty list of objects, the first with a Vertex column."""
    return (
        isinstance(data, list) and bool(data) and isinstance(data[0], dict) and any(k in data[0] for k in KNOWN)
    )


def _json_rows(data: list[Any]) -> list[_Row]:
    def where_for(i: int) -> Where:
        return lambda col, inner: json_pointer([i] if col is None else [i, col]) + inner

    return [
        _Row(i, row, where_for(i)) if isinstance(row, dict)
        else _Row(i, None, where_for(i), f"expected an object (a row), got {type(row).__name__}")
        for i, row in enumerate(data)
    ]


def _jsonl_rows(text: str) -> list[_Row]:
    rows: list[_Row] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue

        def where(col: str | None, inner: str, lineno: int = lineno) -> str:
            return f"line {lineno}" + ("" if col is None else f", {json_pointer([col])}{inner}")

        try:
            value = loads(line, f"line {lineno}")
        except json.JSONDecodeError as exc:
            rows.append(_Row(len(rows), None, where, f"invalid JSON at column {exc.colno}: {exc.msg}"))
            continue
        except InputError as exc:
            rows.append(_Row(len(rows), None, where, f"{exc.pointer or 'the row'}: {exc.message}"))
            continue
        problem = None if isinstance(value, dict) else f"expected a JSON object per line, got {type(value).__name__}"
        rows.append(_Row(len(rows), value if isinstance(value, dict) else None, where, problem))
    return rows


def _csv_rows(text: str, path: Path) -> list[_Row]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except (StopIteration, csv.Error) as exc:
        raise InputError(path, "", f"cannot read the CSV header: {exc}") from None
    if not any(col in KNOWN for col in header):
        raise InputError(path, "row 1", f"no Vertex column in the header; expected some of: {', '.join(KNOWN)}")
    rows: list[_Row] = []
    shown = 1  # spreadsheet row number of the record just read (the header is row 1)
    try:
        for record in reader:
            shown += 1
            if not any(cell.strip() for cell in record):
                continue
            n = len(rows)

            def where(col: str | None, inner: str, shown: int = shown) -> str:
                return f"row {shown}" + ("" if col is None else f", column {col}") + (f", {inner}" if inner else "")

            if len(record) > len(header):
                problem = f"{len(record)} cells but the header has {len(header)} columns; quote cells holding commas"
                rows.append(_Row(n, None, where, problem, cells=True))
                continue
            padded = record + [""] * (len(header) - len(record))  # a short record's missing cells are empty
            rows.append(_Row(n, dict(zip(header, padded, strict=True)), where, cells=True))
    except csv.Error as exc:
        raise InputError(path, f"line {reader.line_num}", f"invalid CSV: {exc}") from None
    return rows


def _read_rows(path: Path, text: str | None, data: Any) -> list[_Row]:
    if path.name.endswith(".csv"):
        rows = _csv_rows(read_text(path) if text is None else text, path)
    elif path.name.endswith(".jsonl"):
        rows = _jsonl_rows(read_text(path) if text is None else text)
    else:
        if data is None:
            data = read_json(path) if text is None else parse_json(text, path)
        if isinstance(data, dict) and isinstance(data.get("rows"), list):
            data = data["rows"]
        if not isinstance(data, list):
            raise InputError(path, "", "expected a list of rows (objects with prompt, response, trajectories...)")
        rows = _json_rows(data)
    if not rows:
        raise InputError(path, "", "the dataset has no rows")
    return rows


def _given(row: _Row, column: str) -> Any:
    assert row.values is not None
    value = row.values.get(column)
    if value is None or (row.cells and value == "") or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _text(row: _Row, column: str) -> str | None:
    value = _given(row, column)
    if value is not None and not isinstance(value, str):
        raise _Bad(column, "", f"expected a string, got {json.dumps(value)[:60]}")
    return value


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _decode(column: str, inner: str, text: str, what: str) -> Any:
    try:
        return loads(text, column, parse_constant=_reject_constant)
    except InputError as exc:
        raise _Bad(column, inner, f"{what} is a string holding JSON that cannot be used: {exc.message}") from None
    except ValueError as exc:
        hint = ""
        if "'" in text and '"' not in text:
            hint = " (this looks like a Python repr with single quotes: write the value with json.dumps)"
        raise _Bad(column, inner, f"{what} is a string that is not valid JSON: {exc}{hint}") from None


def _trajectory(row: _Row, column: str) -> list[FunctionCall] | None:
    value = _given(row, column)
    if value is None:
        return None
    if isinstance(value, str):
        value = _decode(column, "", value, "the trajectory")
    if not isinstance(value, list):
        raise _Bad(column, "", f"expected a list of {{tool_name, tool_input}} objects, got {type(value).__name__}")
    calls: list[FunctionCall] = []
    for i, item in enumerate(value):
        if not isinstance(item, dict):
            raise _Bad(column, f"/{i}", f"expected a {{tool_name, tool_input}} object, got {type(item).__name__}")
        name = item.get("tool_name")
        if not isinstance(name, str) or not name:
            raise _Bad(column, f"/{i}/tool_name", "required: the tool's name as a non-empty string")
        if "tool_input" not in item:
            raise _Bad(column, f"/{i}/tool_input", "required: the tool's arguments as a JSON object (use {} for none)")
        args = item["tool_input"]
        if isinstance(args, str):
            args = _decode(column, f"/{i}/tool_input", args, "tool_input")
        if args is not None and not isinstance(args, dict):
            raise _Bad(column, f"/{i}/tool_input", f"expected a JSON object of arguments, got {type(args).__name__}")
        calls.append(FunctionCall(name=name, args=args))
    return calls


def _number(row: _Row, column: str) -> float | None:
    value = _given(row, column)
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            raise _Bad(column, "", f"expected a number of seconds, got {value[:40]!r}") from None
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise _Bad(column, "", f"expected a non-negative number of seconds, got {json.dumps(value)[:40]}")
    return float(value)


def _failure(row: _Row) -> bool | None:
    value = _given(row, "failure")
    if value is None or isinstance(value, bool):
        return value
    flag = str(value).strip().lower() if isinstance(value, str | int | float) else None
    if flag in _TRUE:
        return True
    if flag in _FALSE:
        return False
    raise _Bad("failure", "", f"expected 0 or 1 (or true/false), got {json.dumps(value)[:40]}")


def _eval_id(row: _Row, *, strict: bool = False) -> str:
    fallback = f"row-{row.index}"
    if row.values is None:
        return fallback
    for column in ("eval_id", "id"):
        value = _given(row, column)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if value is not None and strict:
            raise _Bad(column, "", f"expected the case's id as a non-empty string, got {json.dumps(value)[:40]}")
    return fallback


def _content(role: str, text: str | None) -> Content | None:
    return None if text is None else Content(role=role, parts=[Part(text=text)])


def _invocation(
    invocation_id: str, prompt: str | None, text: str | None, calls: list[FunctionCall] | None, **extra: Any
) -> VertexInvocation:
    return VertexInvocation(
        invocation_id=invocation_id,
        user_content=Content(role="user", parts=[Part(text=prompt or "")]),
        final_response=_content("model", text),
        intermediate_data=None if calls is None else IntermediateData(tool_uses=calls),
        trajectory_given=calls is not None,
        **extra,
    )


def _has_predicted(row: _Row) -> bool:
    return any(_given(row, column) is not None for column in PREDICTED)


def _actual(row: _Row, invocation_id: str) -> VertexInvocation:
    return _invocation(
        invocation_id,
        _text(row, "prompt"),
        _text(row, "response"),
        _trajectory(row, "predicted_trajectory"),
        duration=_number(row, "latency_in_seconds"),
        failure=_failure(row),
    )


def _error(row: _Row, path: Path, column: str | None, inner: str, message: str) -> InputError:
    return InputError(path, row.where(column, inner), message)


def _case(row: _Row, path: Path) -> LoadedCase:
    eval_id = _eval_id(row)
    if row.values is None:
        return LoadedCase(eval_id, error=_error(row, path, None, "", row.problem or "unreadable row"))
    if not any(_given(row, column) is not None for column in KNOWN):
        message = f"the row has none of the Vertex columns ({', '.join(KNOWN)})"
        return LoadedCase(eval_id, error=_error(row, path, None, "", message))
    try:
        _eval_id(row, strict=True)
        expected = _invocation(
            eval_id, _text(row, "prompt"), _text(row, "reference"), _trajectory(row, "reference_trajectory")
        )
        actual: list[Invocation] | None = [_actual(row, eval_id)] if _has_predicted(row) else None
    except _Bad as bad:
        return LoadedCase(eval_id, error=_error(row, path, bad.column, bad.inner, bad.message))
    return LoadedCase(eval_id, EvalCase(eval_id=eval_id, conversation=[expected]), actual=actual)


def _cases(rows: list[_Row], path: Path) -> tuple[str, list[LoadedCase]]:
    return path.stem, [_case(row, path) for row in rows]


@dataclass(frozen=True)
class Dataset:
    """A dataset file read as an eval set: its id, cases and columns."""

    eval_set_id: str
    cases: list[LoadedCase]
    columns: tuple[str, ...]
    """The CSV header, or every key of the JSON rows, in the order first seen."""


def _columns(rows: list[_Row], header: Iterable[str] = ()) -> tuple[str, ...]:
    seen = dict.fromkeys(header)
    for row in rows:
        if row.values is not None:
            seen.update(dict.fromkeys(row.values))
    return tuple(seen)


def read_dataset(path: Path, text: str | None = None, data: Any = None) -> Dataset:
    """A dataset file as cases plus the columns it has (``text``, ``data`` as for load_dataset)."""
    rows = _read_rows(path, text, data)
    eval_set_id, cases = _cases(rows, path)
    return Dataset(eval_set_id, cases, _columns(rows))


def _shown(column: str) -> str:
    return repr(column if len(column) <= 60 else column[:57] + "...")


def _listed(columns: Collection[str]) -> str:
    shown = [_shown(c) for c in list(columns)[:20]]
    return ", ".join(shown) + (f" and {len(columns) - 20} more" if len(columns) > 20 else "")


@dataclass(frozen=True)
class MissingColumn:
    """A column that some criteria need and the dataset lacks."""

    column: str
    criteria: tuple[str, ...]
    misspelt: str | None
    """The dataset's unknown column that is most likely this one misspelt, if any."""
    message: str


def column_problems(
    path: str, columns: Collection[str], reads: Mapping[str, Collection[str]], own_runs: bool
) -> tuple[list[MissingColumn], list[str]]:
    """What a dataset lacks for its criteria, and the columns it has that evalbot does not read.

    ``reads``: criterion name -> the parts of a case it reads (keys of COLUMN_OF); ``own_runs``: whether some case
    takes its run from the dataset itself (else the predicted columns are not needed).  Returns each missing column
    needed by some criterion (its message names the column, the criteria and the nearest column the file has, not
    the path) and a notice per unknown column that is not already named as a likely misspelling.
    """
    needed: dict[str, list[str]] = {}
    for name, parts in reads.items():
        for part in parts:
            column = COLUMN_OF[part]
            if column not in columns and (own_runs or part.startswith("expected")):
                needed.setdefault(column, []).append(name)
    unknown = [c for c in columns if c not in ALL_COLUMNS]
    missing: list[MissingColumn] = []
    for column, names in needed.items():
        close = difflib.get_close_matches(column, unknown, n=1, cutoff=0.75)
        if close:
            hint = f"the file has a column {_shown(close[0])}: did you mean {column!r}? Rename that column"
        else:
            hint = f"its columns are: {_listed(columns) or 'none'}; add the column"
        need = "needs" if len(names) == 1 else "need"
        message = (f"no column {column!r}, which {', '.join(names)} {need} to score this dataset; {hint}, "
                   "or choose other criteria in test_config.json")
        missing.append(MissingColumn(column, tuple(names), close[0] if close else None, printable(message)))
    claimed = {m.misspelt for m in missing}
    ignored = []
    for column in unknown:
        if column not in claimed:
            close = difflib.get_close_matches(column, ALL_COLUMNS, n=1, cutoff=0.75)
            ignored.append(_shown(column) + (f" (nearest known column: {close[0]!r})" if close else ""))
    notices = []
    if ignored:
        more = f" and {len(ignored) - 10} more" if len(ignored) > 10 else ""
        notices.append(printable(f"{path}: unknown column(s) {', '.join(ignored[:10])}{more}, ignored; evalbot "
                                 f"reads {', '.join(ALL_COLUMNS)}"))
    return missing, notices


def cases_from_rows(rows: list[Any], path: Path) -> tuple[str, list[LoadedCase]]:
    """Eval cases from decoded JSON rows; the eval set id is the file's stem."""
    if not rows:
        raise InputError(path, "", "the dataset has no rows")
    return _cases(_json_rows(rows), path)


def load_dataset(path: Path, text: str | None = None, data: Any = None) -> tuple[str, list[LoadedCase]]:
    """Eval cases from a ``.jsonl``, ``.csv`` or ``.json`` (list, or ``{"rows": [...]}``) dataset file (``text``:
    the file's text, ``data``: a JSON file decoded, when the caller has read it already)."""
    dataset = read_dataset(path, text, data)
    return dataset.eval_set_id, dataset.cases


def _actuals(rows: list[_Row], path: Path) -> Actuals:
    groups: dict[str, list[_Row]] = {}
    for row in rows:
        groups.setdefault(_eval_id(row), []).append(row)
    actuals = Actuals(str(path))
    for eval_id, members in groups.items():
        found: list[Invocation] | InputError = []
        for k, row in enumerate(members):
            invocation_id = eval_id if len(members) == 1 else f"{eval_id}#{k + 1}"
            try:
                if row.values is None:
                    raise _Bad(None, "", row.problem or "unreadable row")
                _eval_id(row, strict=True)
                if not _has_predicted(row):
                    raise _Bad(None, "", "the row records no agent output: give response and/or predicted_trajectory")
                assert isinstance(found, list)
                found.append(_actual(row, invocation_id))
            except _Bad as bad:
                found = _error(row, path, bad.column, bad.inner, bad.message)
                break
        actuals.entries[(None, eval_id)] = found
    return actuals


def load_actuals(path: Path, text: str | None = None, data: Any = None) -> Actuals:
    """Actual runs from a Vertex dataset file (``.jsonl``, ``.csv`` or ``.json``; ``text`` and ``data`` as for
    load_dataset)."""
    return _actuals(_read_rows(path, text, data), path)
