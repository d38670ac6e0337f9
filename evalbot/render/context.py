"""The comparison as plain data for comment templates (``c``), each case dumped only when a template reaches it.

A template sees dicts, lists, strings, numbers, booleans and None, never a model (pydantic models carry methods
such as ``parse_raw`` that a template could call). ``c`` is ``Comparison.model_dump(mode="json")`` without the
report's eval sets, with one difference in kind: each eval set's ``cases`` is a :class:`CaseList`, a read-only
sequence whose items are made when they are reached (the case's comparison, its current result and unpacked turns,
as JSON-mode data, its ids escaped as everywhere else). The built-in templates only count the cases' statuses, so
at 10,000 cases the comment no longer dumps every case at once (62 MB traced at 2,000 cases, about 350 MB of RSS
at 10,000). A CaseList has a list's read-only behaviour in a template: length, iteration, indexing (negative too)
and slicing (to a plain list), ``in``, ``+`` and ``*`` (giving plain lists), equality with a list, ``index``,
``count`` and ``copy``, and it prints, ``tojson``s and ``pprint``s as the list it stands for. Its item is a new
dict at each access (``is sameas`` between two accesses is false), so nothing is kept beyond the render.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from evalbot.compare.model import CaseComparison, Comparison
from evalbot.formats.lookalike import escape_lookalike
from evalbot.render.views import by_severity


def case_data(case: CaseComparison) -> dict[str, Any]:
    """One case's comparison as a template sees it: its JSON-mode dump, the ids escaped (evalbot.formats.lookalike)."""
    data: dict[str, Any] = case.model_dump(mode="json")
    data["eval_id"] = escape_lookalike(data["eval_id"])
    current = data.get("current")
    if isinstance(current, dict) and isinstance(current.get("eval_id"), str):
        current["eval_id"] = escape_lookalike(current["eval_id"])
    return data


class CaseList(Sequence[dict[str, Any]]):
    """An eval set's cases in a template context: each item is :func:`case_data` of the case, made on access.

    The models are held in a slot whose name starts with an underscore, which Jinja's sandbox never lets a template
    read; the only public methods are a list's read-only ones, and they return plain data.
    """

    __slots__ = ("_cases",)

    def __init__(self, cases: Sequence[CaseComparison]) -> None:
        self._cases = cases

    def __len__(self) -> int:
        return len(self._cases)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [case_data(case) for case in self._cases[index]]
        return case_data(self._cases[operator.index(index)])  # a string is a TypeError, as for a list

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for case in self._cases:
            yield case_data(case)

    def __reversed__(self) -> Iterator[dict[str, Any]]:
        for case in reversed(self._cases):
            yield case_data(case)

    def copy(self) -> list[dict[str, Any]]:
        """The cases as a plain list (``list.copy``)."""
        return list(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CaseList | list):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # unhashable, as a list

    def __add__(self, other: object) -> list[Any]:
        if isinstance(other, CaseList | list):
            return [*self, *other]
        return NotImplemented

    def __radd__(self, other: object) -> list[Any]:
        if isinstance(other, list):
            return [*other, *self]
        return NotImplemented

    def __mul__(self, times: object) -> list[Any]:
        if isinstance(times, int):
            return list(self) * times
        return NotImplemented

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return repr(list(self))


def materialized(value: Any) -> Any:
    """``value`` with every CaseList in it replaced by the plain list it stands for (dicts and lists copied)."""
    if isinstance(value, CaseList):
        return list(value)
    if isinstance(value, dict):
        return {k: materialized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [materialized(v) for v in value]
    return value


def json_default(value: object) -> Any:
    """``json.dumps``' ``default`` for templates' ``tojson``: a CaseList is written as its list."""
    if isinstance(value, CaseList):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def comparison_data(comparison: Comparison) -> dict[str, Any]:
    """The comparison as plain data for templates (the report without its eval sets: cases are under ``eval_sets``,
    each set's ``cases`` a :class:`CaseList`; the eval sets most severe first, as every output lists them:
    evalbot.render.views.by_severity).

    pydantic's JSON mode already yields plain data only (dicts with ``str`` keys, lists, and exact ``str``, ``int``,
    ``float``, ``bool`` or None: subclasses, tuples and enums come out as those), so the dump is not walked again.
    """
    data: dict[str, Any] = comparison.model_dump(
        mode="json", exclude={"report": {"eval_sets"}, "eval_sets": {"__all__": {"cases"}}})
    for es, model in zip(data["eval_sets"], comparison.eval_sets, strict=True):
        es["eval_set_id"] = escape_lookalike(es["eval_set_id"])  # shown escaped (and flagged in the headline)
        es["cases"] = CaseList(model.cases)  # the last field of EvalSetComparison: the keys keep their order
    data["eval_sets"] = [data["eval_sets"][i] for i in by_severity(comparison.eval_sets, comparison.policy)]
    for change in data["yardstick"]:
        for key in ("eval_set_id", "case", "criterion", "what", "current"):
            if isinstance(change.get(key), str):
                change[key] = escape_lookalike(change[key])
    return data


def case_statuses(cases: object) -> Iterator[object]:
    """The current status of each case of ``cases`` (a CaseList, or a list of plain case dicts from a template) that
    is in this run."""
    if isinstance(cases, CaseList):  # read from the models: nothing dumped
        yield from (case.current.status for case in cases._cases if case.current is not None)
        return
    for case in cases if isinstance(cases, list) else []:
        current = case.get("current") if isinstance(case, Mapping) else getattr(case, "current", None)
        if current is not None:
            yield current.get("status") if isinstance(current, Mapping) else getattr(current, "status", None)
