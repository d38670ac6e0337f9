"""The agent's actual invocations per case, from ADK EvalSetResult files or a plain ``{eval_id: [...]}`` map.

Files are opened by :func:`evalbot.load.load_actuals`, which also dispatches Vertex-style datasets.

EvalSetResult files (snake_case or camelCase keys, as ADK accepts both) are what ``adk eval`` writes to
``.adk/eval_history/*.evalset_result.json``; older ADK versions wrote them double-encoded (a JSON string holding the
JSON), which is accepted too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from pydantic.alias_generators import to_camel

from evalbot.errors import InputError, json_pointer
from evalbot.formats.adk import Invocation
from evalbot.formats.jsonio import (
    Slices,
    has_surrogate,
    parse_json,
    validate,
)
from evalbot.formats.window import NotAscii, Window, walk_file, walk_object, walk_text

Key = tuple[str | None, str]
Entry = list[Invocation] | InputError


_MISSING = object()


class Entries(MutableMapping[Key, Entry]):
    """Actual invocations per case; an entry read from a large file is parsed each time it is read, never kept.

    ``defer`` stores how to parse an entry (from its slice of the file's text) instead of the parsed invocations,
    so a run holds one case's invocation models at a time rather than every case's.
    """

    def __init__(self, data: dict[Key, Entry] | None = None) -> None:
        self._data: dict[Key, Entry | Callable[[], Entry]] = dict(data or {})

    def defer(self, key: Key, parse: Callable[[], Entry]) -> None:
        """Store ``parse`` to be called whenever the entry is read."""
        self._data[key] = parse

    def absorb(self, other: Entries) -> None:
        """Add another file's entries without parsing deferred ones (later files win)."""
        self._data.update(other._data)

    def __getitem__(self, key: Key) -> Entry:
        value = self._data[key]
        return value() if callable(value) else value

    def get(self, key: Key, default: Any = None) -> Any:
        """The entry, or ``default`` when there is none, without the KeyError Mapping.get raises and catches per
        missing key (every case of a plain map is looked up under its eval set's id first)."""
        value = self._data.get(key, _MISSING)
        if value is _MISSING:
            return default
        return value() if callable(value) else value

    def __contains__(self, key: object) -> bool:
        """Whether there is an entry, without parsing a deferred one (Mapping's would read and parse it)."""
        return key in self._data

    def __setitem__(self, key: Key, value: Entry) -> None:
        self._data[key] = value

    def __delitem__(self, key: Key) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[Key]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


@dataclass
class Actuals:
    """Actual invocations keyed by (eval_set_id or None, eval_id); unparsable entries keep their error."""

    path: str | None = None
    entries: MutableMapping[Key, Entry] = field(default_factory=Entries)
    unusable: list[str] = field(default_factory=list)
    """The --actuals files that could not be read (each one's error is the run's): a case without a run is put down to
    them, in one reason shared by every such case."""

    def eval_set_ids(self) -> frozenset[str]:
        """The eval sets whose runs these actuals name (EvalSetResult files name theirs; plain maps do not)."""
        return frozenset(set_id for set_id, _ in self.entries if set_id)

    def find(self, eval_set_id: str, eval_id: str) -> list[Invocation] | InputError | None:
        """The invocations recorded for a case: set-qualified first, then by eval_id alone."""
        hit = self.entries.get((eval_set_id, eval_id))
        return hit if hit is not None else self.entries.get((None, eval_id))

    def merge(self, other: Actuals) -> None:
        """Add another file's entries (later files win)."""
        if isinstance(self.entries, Entries) and isinstance(other.entries, Entries):
            self.entries.absorb(other.entries)
        else:
            self.entries.update(other.entries)


def _invocations(
    raw: Any, path: Path, base: list[str | int], inner: tuple[str, ...] = ()
) -> list[Invocation] | InputError:
    if not isinstance(raw, list):
        return InputError(path, json_pointer(base), "expected a list of invocations")
    try:
        return [validate(Invocation, item, path, (*base, i, *inner)) for i, item in enumerate(raw)]
    except InputError as exc:
        return exc


def _key(data: dict[str, Any], snake: str) -> str:
    """The spelling of a field present in ``data``: snake_case, else camelCase (EvalSetResult accepts both)."""
    camel = to_camel(snake)
    return camel if snake not in data and camel in data else snake


def _is_eval_set_result(data: Any) -> bool:
    return isinstance(data, dict) and ("eval_case_results" in data or "evalCaseResults" in data)


def _from_eval_set_result(data: dict[str, Any], path: Path, actuals: Actuals, base: list[str | int]) -> None:
    set_id = data.get(_key(data, "eval_set_id"))
    results_key = _key(data, "eval_case_results")
    results = data.get(results_key)
    if not isinstance(results, list):
        raise InputError(path, json_pointer([*base, results_key]), "expected a list of eval case results")
    for i, result in enumerate(results):
        at: list[str | int] = [*base, results_key, i]
        id_key = _key(result, "eval_id") if isinstance(result, dict) else "eval_id"
        if not isinstance(result, dict) or not isinstance(result.get(id_key), str):
            raise InputError(path, json_pointer([*at, id_key]), "required: the case's eval_id")
        per_key = _key(result, "eval_metric_result_per_invocation")
        per_inv = result.get(per_key) or []
        if not isinstance(per_inv, list):
            raise InputError(path, json_pointer([*at, per_key]), "expected a list")
        raw, inner = [], "actual_invocation"
        for p in per_inv:
            if isinstance(p, dict):
                inner = _key(p, "actual_invocation")
                raw.append(p.get(inner))
            else:
                raw.append(p)
        found = _invocations(raw, path, [*at, per_key], (inner,))
        case_set = result.get(_key(result, "eval_set_id")) or set_id
        actuals.entries[(case_set if isinstance(case_set, str) else None, result[id_key])] = found


def actuals_from_data(data: Any, path: Path) -> Actuals:
    """Recognise the shape of decoded actuals JSON."""
    if isinstance(data, str):  # the double-encoded form older ADK versions wrote
        data = parse_json(data, path)
    actuals = Actuals(str(path))
    if isinstance(data, dict) and isinstance(data.get("eval_cases"), list) and "eval_set_id" in data:
        raise InputError(path, "", EVAL_SET_GIVEN)
    if _is_eval_set_result(data):
        _from_eval_set_result(data, path, actuals, [])
    elif isinstance(data, list) and data and all(_is_eval_set_result(d) for d in data):
        for i, item in enumerate(data):
            _from_eval_set_result(item, path, actuals, [i])
    elif isinstance(data, dict):
        for eval_id, raw in data.items():
            actuals.entries[(None, eval_id)] = _invocations(raw, path, [eval_id])
    else:
        raise InputError(
            path,
            "",
            "expected actual runs: an ADK EvalSetResult (with 'eval_case_results') or an object mapping "
            "eval_id to a list of invocations",
        )
    return actuals


EVAL_SET_GIVEN = ("this file is an eval set, not a recorded run: name it as an eval set PATH; --actuals takes the "
                  "agent's recorded runs (ADK's *.evalset_result.json, {eval_id: [invocations]} or a Vertex dataset), "
                  "or let evalbot run the agent with --agent")

_NOT_A_MAPPING = frozenset(("rows", "eval_case_results", "evalCaseResults", "evalbot", "eval_cases"))
"""Top-level keys of the other shapes (a Vertex dataset, an EvalSetResult, a recording's marker): read whole."""


class _OtherShape(Exception):
    """The document is not a plain ``{eval_id: [...]}`` map."""


def _parse_later(slices: Slices, start: int, end: int, eval_id: str) -> Entry:
    try:
        raw = slices.decode(start, end, (eval_id,))
    except InputError as exc:
        return exc
    except (OSError, ValueError):
        return InputError(slices.path, json_pointer([eval_id]), "the file changed or vanished while evaluating; run again")
    return _invocations(raw, slices.path, [eval_id])


def lazy_mapping(text: str, path: Path) -> Actuals | None:
    """A plain ``{eval_id: [invocations]}`` file with each case parsed only when it is scored; None for other shapes.

    The same entries and errors as actuals_from_data, but the invocations are validated on each read.  Malformed
    JSON also gives None: the whole-document parse then reports it with json's own message.
    """
    slices = Slices(text, path)
    return walk_text(text, lambda window: _lazy(window, slices, path))


def lazy_mapping_file(path: Path) -> Actuals | None:
    """:func:`lazy_mapping` of a large pure-ASCII file walked a window at a time, never read whole (see
    :mod:`evalbot.formats.window`); None for a small or non-ASCII file and for any other shape (read it whole)."""
    return walk_file(path, lambda window, slices: _lazy(window, slices, path))


def _lazy(window: Window, slices: Slices, path: Path) -> Actuals | None:
    actuals = Actuals(str(path))
    entries = actuals.entries
    assert isinstance(entries, Entries)

    def visit(window: Window, eval_id: str, start: int) -> int:
        if eval_id in _NOT_A_MAPPING or has_surrogate(eval_id):  # has_surrogate: parse_json names it
            raise _OtherShape
        if window.text[start : start + 1] == "[":  # decoded once, when the case is scored; here only skipped
            end = window.skip(start)
            base = window.base
            entries.defer((None, eval_id), partial(_parse_later, slices, base + start, base + end, eval_id))
            return end
        value, end = window.decode(start)  # not a list: an error on this entry, decoded once here
        entries[(None, eval_id)] = _invocations(value, path, [eval_id])
        return end

    try:
        walk_object(window, visit)
    except (_OtherShape, ValueError, RecursionError, NotAscii):  # malformed or hostile JSON: parse_json names it
        return None
    return actuals
