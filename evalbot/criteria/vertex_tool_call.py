"""Shared machinery of Vertex AI's tool-call metrics: ``tool_call_valid``, ``tool_name_match``,
``tool_parameter_key_match`` and ``tool_parameter_kv_match``.

Vertex reads the calls from the ``response`` and ``reference`` columns, each a JSON object
``{"content": "...", "tool_calls": [{"name": ..., "arguments": {...}}]}``, computes the metrics in its service and
publishes only one-line definitions; evalbot's reading (docs/vertex.md):

* **Where the calls come from.** When the response or the reference of an invocation is such a JSON object (an
  object with a ``tool_calls`` key), both sides are read from those texts, as Vertex does. Otherwise the calls are
  the invocation's tool calls: a Vertex row's ``predicted_trajectory`` / ``reference_trajectory`` (``tool_name``,
  ``tool_input``), an ADK invocation's function calls.
* **A valid call** has a non-empty string name and arguments that are a JSON object (absent arguments are ``{}``;
  ``arguments`` given as a JSON string holding an object, as OpenAI writes them, is read as that object).
  ``tool_call_valid`` is 1.0 when the prediction holds at least one call and every call is valid, else 0.0 (an
  unparseable response text is 0.0). It needs no reference.
* **Pairing.** Calls are compared position by position over the longer side; a position with a call on one side
  only scores 0. With one call per side, as in every example Google publishes, this is Vertex's comparison of the
  call against the reference call. Two empty sides score 1.0 (nothing expected, nothing called).
* **Per position.** ``tool_name_match``: 1.0 when the names are equal. ``tool_parameter_key_match``: the share of
  the reference call's parameter names that the predicted call has (1.0 when the reference has none and the
  prediction has none either, else 0.0 then). ``tool_parameter_kv_match``: the share of the reference parameters
  the predicted call has with an equal value. Values are equal as parsed JSON (evalbot.criteria.vertex_trajectory's
  rules); unless ``use_strict_string_match`` is true (Vertex's option, default false), values whose text forms are
  equal after trimming and case folding also match (``"2"`` and ``2``, ``"London "`` and ``"london"``). Parameters
  the reference does not have are not penalised. The invocation score is the mean over positions.
* A Vertex row with neither a tool-call text nor the trajectory on a side is ``not_evaluated`` with the reason
  (a failed invocation's missing prediction is empty).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalbot.criteria.base import CaseInput, Options, need_expected, not_evaluated, parse_options, score_invocation
from evalbot.criteria.vertex_trajectory import canonical, given_calls, summarize
from evalbot.formats.adk import FunctionCall, Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.results import InvocationScore, MetricResult


@dataclass(frozen=True)
class Call:
    """One tool call as the metrics see it: ``args`` is None when the arguments are not a JSON object."""

    name: str | None
    args: dict[str, Any] | None

    @property
    def valid(self) -> bool:
        """A non-empty name and object arguments."""
        return bool(self.name) and self.args is not None


class NotToolCallText(ValueError):
    """The text is not Vertex's tool-call JSON (an object with a ``tool_calls`` key)."""


def _json_args(value: Any) -> dict[str, Any] | None:
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None


def parse_tool_call_text(text: str) -> list[Call] | None:
    """The calls of Vertex's tool-call JSON text; None when the object's ``tool_calls`` is not a list.

    Raises NotToolCallText when the text is not a JSON object with a ``tool_calls`` key.
    """
    if not text.lstrip().startswith("{"):
        raise NotToolCallText("not a JSON object")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise NotToolCallText("not valid JSON") from None
    if not isinstance(data, dict) or "tool_calls" not in data:
        raise NotToolCallText("no tool_calls key")
    items = data["tool_calls"]
    if not isinstance(items, list):
        return None
    calls = []
    for item in items:
        if not isinstance(item, dict):
            calls.append(Call(None, None))
            continue
        name = item.get("name")
        calls.append(Call(name if isinstance(name, str) else None, _json_args(item.get("arguments"))))
    return calls


def is_tool_call_text(text: str) -> bool:
    """Whether ``text`` is Vertex's tool-call JSON (then both sides of the invocation are read from their texts)."""
    try:
        parse_tool_call_text(text)
    except NotToolCallText:
        return False
    return True


def _from_text(text: str) -> list[Call] | None:
    try:
        return parse_tool_call_text(text)
    except NotToolCallText:
        return None


def _from_calls(calls: Sequence[FunctionCall]) -> list[Call]:
    return [Call(c.name, {} if c.args is None else c.args) for c in calls]


def side_calls(
    invocation: Invocation, text: str, calls: Sequence[FunctionCall], side: str, text_mode: bool
) -> tuple[list[Call] | None, str | None]:
    """One side's calls (from its text in text mode, else its trajectory), or None with the reason."""
    column = "response" if side == "predicted" else "reference"
    if text_mode:
        parsed = _from_text(text)
        if parsed is None:
            return None, f"the {column} is not a tool-call JSON object with a tool_calls list"
        return parsed, None
    given, note = given_calls(invocation, calls, side)
    return (None if given is None else _from_calls(given)), note


def loose_text(value: Any) -> str:
    """A value's text form for the loose comparison: strings as they are, other values as compact JSON."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
    return text.strip().casefold()


def values_equal(predicted: Any, reference: Any, strict: bool) -> bool:
    """Equal as parsed JSON; unless ``strict``, also equal as trimmed, case-folded text."""
    if canonical(predicted) == canonical(reference):
        return True
    return not strict and loose_text(predicted) == loose_text(reference)


PositionScorer = Callable[[Call, Call], float]
"""Scores a predicted call against the reference call at the same position, in [0, 1]."""


def pair_score(predicted: list[Call], reference: list[Call], scorer: PositionScorer) -> float:
    """Mean of the position scores over the longer side (an unpaired position scores 0; both empty: 1.0)."""
    positions = max(len(predicted), len(reference))
    if positions == 0:
        return 1.0
    return sum(scorer(p, r) for p, r in zip(predicted, reference, strict=False)) / positions


def key_share(predicted: Call, reference: Call, matches: Callable[[str], bool]) -> float:
    """The share of the reference call's parameters for which ``matches(name)`` holds."""
    ref_args = reference.args or {}
    if not ref_args:
        return 1.0 if not predicted.args else 0.0
    return sum(1 for key in ref_args if matches(key)) / len(ref_args)


class KvOptions(Options):
    """Vertex's ``ToolParameterKVMatchSpec`` option."""

    use_strict_string_match: bool = False


class NoOptions(Options):
    """The other three tool-call metrics have no settings."""


@dataclass(frozen=True)
class ToolCallPairMetric:
    """A reference-based tool-call metric: predicted calls against the reference calls, position by position."""

    name: str
    threshold: float | None
    scorer: PositionScorer

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Score each invocation; the case score is the mean."""
        try:
            expected = need_expected(case, self.name)
        except ValueError as exc:
            return not_evaluated(self.threshold, str(exc), len(case.actual))
        expected_calls = case.expected_calls or []
        expected_texts = case.expected_texts or []
        scores: list[InvocationScore] = []
        rows = zip(case.actual, case.actual_texts, case.actual_calls, expected, expected_texts, expected_calls,
                   strict=True)
        for act, act_text, act_calls, exp, exp_text, exp_calls in rows:
            text_mode = is_tool_call_text(act_text) or is_tool_call_text(exp_text)
            reference, r_note = side_calls(exp, exp_text, exp_calls, "reference", text_mode)
            predicted, p_note = side_calls(act, act_text, act_calls, "predicted", text_mode)
            if reference is None:
                scores.append(score_invocation(None, self.threshold, act, reason=r_note))
                continue
            details = {"source": "text" if text_mode else "trajectory"}
            if predicted is None:
                # A response that is not tool-call JSON matches nothing (0.0); a row without its trajectory is
                # not evaluated.
                value = 0.0 if text_mode else None
                scores.append(score_invocation(value, self.threshold, act, reason=p_note, details=details))
                continue
            score = pair_score(predicted, reference, self.scorer)
            scores.append(score_invocation(score, self.threshold, act, reason=p_note, details=details))
        return summarize(scores, self.threshold)


def build_pair(spec: CriterionSpec, scorer: PositionScorer) -> ToolCallPairMetric:
    """Factory body of ``tool_name_match`` and ``tool_parameter_key_match`` (they take no option)."""
    parse_options(NoOptions, spec)
    return ToolCallPairMetric(spec.name, spec.threshold, scorer)


def build_kv(spec: CriterionSpec) -> ToolCallPairMetric:
    """Factory body of ``tool_parameter_kv_match``."""
    strict = parse_options(KvOptions, spec).use_strict_string_match

    def scorer(predicted: Call, reference: Call) -> float:
        got = predicted.args or {}
        ref = reference.args or {}
        return key_share(predicted, reference, lambda key: key in got and values_equal(got[key], ref[key], strict))

    return ToolCallPairMetric(spec.name, spec.threshold, scorer)


@dataclass(frozen=True)
class ToolCallValid:
    """Per invocation 1.0 when the prediction holds at least one call and all its calls are valid, else 0.0."""

    name: str
    threshold: float | None

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Check every actual invocation's calls (no reference needed)."""
        expected_texts = case.expected_texts or [""] * len(case.actual)
        scores: list[InvocationScore] = []
        for act, act_text, act_calls, exp_text in zip(
            case.actual, case.actual_texts, case.actual_calls, expected_texts, strict=True
        ):
            text_mode = is_tool_call_text(act_text) or is_tool_call_text(exp_text)
            predicted, note = side_calls(act, act_text, act_calls, "predicted", text_mode)
            if predicted is None and not text_mode:
                scores.append(score_invocation(None, self.threshold, act, reason=note))
                continue
            calls = predicted or []
            valid = bool(calls) and all(call.valid for call in calls)
            details = {"source": "text" if text_mode else "trajectory", "calls": len(calls)}
            scores.append(score_invocation(1.0 if valid else 0.0, self.threshold, act, reason=note, details=details))
        return summarize(scores, self.threshold)


def build_valid(spec: CriterionSpec) -> ToolCallValid:
    """Factory body of ``tool_call_valid``."""
    parse_options(NoOptions, spec)
    return ToolCallValid(spec.name, spec.threshold)
