"""The agent's actual invocations per case, from ADK EvalSetResult files or a plain ``{eval_id: [...]}`` map.

EvalSetResult files are what ``adk eval`` writes to ``.adk/eval_history/*.evalset_result.json``; older ADK
versions wrote them double-encoded (a JSON string holding the JSON), which is accepted too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalbot.errors import InputError, json_pointer
from evalbot.formats.adk import Invocation
from evalbot.jsonio import parse_json, read_text, validate

Key = tuple[str | None, str]


@dataclass
class Actuals:
    """Actual invocations keyed by (eval_set_id or None, eval_id); unparsable entries keep their error."""

    path: str | None = None
    entries: dict[Key, list[Invocation] | InputError] = field(default_factory=dict)

    def find(self, eval_set_id: str, eval_id: str) -> list[Invocation] | InputError | None:
        """The invocations recorded for a case: set-qualified first, then by eval_id alone."""
        hit = self.entries.get((eval_set_id, eval_id))
        return hit if hit is not None else self.entries.get((None, eval_id))

    def merge(self, other: Actuals) -> None:
        """Add another file's entries (later files win)."""
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


def _from_eval_set_result(data: dict[str, Any], path: Path, actuals: Actuals) -> None:
    set_id = data.get("eval_set_id")
    results = data.get("eval_case_results")
    if not isinstance(results, list):
        raise InputError(path, "/eval_case_results", "expected a list of eval case results")
    for i, result in enumerate(results):
        base: list[str | int] = ["eval_case_results", i]
        if not isinstance(result, dict) or not isinstance(result.get("eval_id"), str):
            raise InputError(path, json_pointer([*base, "eval_id"]), "required: the case's eval_id")
        per_inv = result.get("eval_metric_result_per_invocation") or []
        if not isinstance(per_inv, list):
            raise InputError(path, json_pointer([*base, "eval_metric_result_per_invocation"]), "expected a list")
        raw = [p.get("actual_invocation") if isinstance(p, dict) else p for p in per_inv]
        found = _invocations(raw, path, [*base, "eval_metric_result_per_invocation"], ("actual_invocation",))
        case_set = result.get("eval_set_id") or set_id
        actuals.entries[(case_set if isinstance(case_set, str) else None, result["eval_id"])] = found


def actuals_from_data(data: Any, path: Path) -> Actuals:
    """Recognise the shape of decoded actuals JSON."""
    if isinstance(data, str):  # the double-encoded form older ADK versions wrote
        data = parse_json(data, path)
    actuals = Actuals(str(path))
    if isinstance(data, dict) and "eval_case_results" in data:
        _from_eval_set_result(data, path, actuals)
    elif isinstance(data, list) and data and all(isinstance(d, dict) and "eval_case_results" in d for d in data):
        for item in data:
            _from_eval_set_result(item, path, actuals)
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


def load_actuals(path: Path) -> Actuals:
    """Load one actuals file (JSON; Vertex-style ``.jsonl``/``.csv`` datasets through evalbot.formats.vertex)."""
    if path.name.endswith((".jsonl", ".csv")):
        from evalbot.formats import vertex

        return vertex.load_actuals(path)
    return actuals_from_data(parse_json(read_text(path), path), path)
