"""Custom metrics: the user's own Python functions as criteria (ADK's ``custom_metrics``, Vertex's ``CustomMetric``).

A criterion whose name is a key of ``custom_metrics`` in ``test_config.json`` is computed by the function named in
that entry's ``code_config.name`` (``package.module.function``).  The module is imported from the repository: the
eval set's repository root (the nearest ancestor holding ``.git``) and the working directory are appended to
``sys.path`` (appended, so a repository file never shadows an installed package).  Importing it **runs repository
code**: evalbot does this only where scoring runs with the repository checked out (the CLI, the Action's first
stage) and refuses in a trusted context (``pull_request_target``); the fork-safe second stage never builds criteria
(it reads scores from the report artifact).

The function's signature chooses the contract:

* **Vertex** (one required argument): called once per invocation with an instance dict holding Vertex's columns
  (``prompt``, ``response``, ``reference``, ``predicted_trajectory``, ``reference_trajectory`` as lists of
  ``{"tool_name", "tool_input"}``, and ``latency_in_seconds`` / ``failure`` when recorded).  It returns a dict with
  the score under the metric's name (or ``score``) and optionally ``explanation`` (a bare number is accepted too).
  Per invocation ``score >= threshold``; the case score is the mean, compared the same way.
* **ADK** (four arguments ``eval_metric, actual_invocations, expected_invocations, conversation_scenario``): called
  once per case, sync or async, with google-adk's own types (needs ``evalbot[adk]``) and, as ADK does, an
  ``eval_metric`` whose ``threshold`` is None (the configured threshold is in ``eval_metric.criterion``).  Its
  ``EvaluationResult`` is read back as ADK's LocalEvalService reads it: the overall score and status and, when
  there is one per invocation, the per-invocation scores and statuses.  The status is the function's (as in ADK);
  a status that contradicts ``score >= threshold`` is kept and the disagreement is noted in the reason.

Scores must be finite and inside ``metric_info.metric_value_info.interval`` (default [0, 1]).  The report's score
is on the [0, 1] scale: a metric declared on another interval reports ``(value - min) / (max - min)`` (its
threshold likewise) and keeps the raw ``value`` in the details.  A function that raises, returns something
unreadable, or runs past ``timeout_seconds`` (an evalbot key of the ``custom_metrics`` entry, ADK ignores it;
default 30) makes the metric ``error`` on that case with the message; the other criteria still run.

Timeouts: each call runs in a daemon worker thread and evalbot waits for it with a deadline.  Python cannot stop a
thread, so a function that hangs keeps running in the background until it returns or the process exits (a daemon
thread never delays exit); to bound the cost, once a call of a metric has hung, the metric is not called again for
that eval set and its remaining cases are ``error`` too, naming the case that hung.  Importing the module (its
top-level code) has the same deadline.

The criterion's fingerprint (baseline comparison) covers the function path and a hash of the function's source, so
editing the function shows its cases as "changed definition", never as a regression.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import math
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from evalbot.criteria.base import CaseInput
from evalbot.errors import ConfigError
from evalbot.formats.adk import FunctionCall, Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.formats.invocations import final_text, user_text
from evalbot.formats.vertex import VertexInvocation, failure_of, trajectory_given
from evalbot.results import InvocationScore, MetricResult, Status, clean_score, mean, metric_result, threshold_status

DEFAULT_TIMEOUT_S = 30.0
Contract = Literal["vertex", "adk"]
_ADK_STATUS: dict[int, Status] = {1: "passed", 2: "failed", 3: "not_evaluated", 4: "informational"}
_IMPORT_LOCK = threading.Lock()
_ADK_ARGS = ("eval_metric", "actual_invocations", "expected_invocations", "conversation_scenario")


class CallFailed(Exception):
    """The user's function raised, returned something unreadable, or did not return in time."""


class _Hung(CallFailed):
    pass


@dataclass(frozen=True)
class ValueRange:
    """The interval a metric's scores live in (ADK's ``metric_value_info.interval``)."""

    low: float = 0.0
    high: float = 1.0
    open_low: bool = False
    open_high: bool = False

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies in the interval (open ends excluded)."""
        above = value > self.low if self.open_low else value >= self.low
        below = value < self.high if self.open_high else value <= self.high
        return above and below

    @property
    def unit(self) -> bool:
        """The interval is [0, 1]: scores are reported as they are."""
        return self.low == 0.0 and self.high == 1.0

    def to_unit(self, value: float | None) -> float | None:
        """``value`` on the report's [0, 1] scale."""
        if value is None or self.unit:
            return value
        return min(1.0, max(0.0, (value - self.low) / (self.high - self.low)))

    def __str__(self) -> str:
        return f"{'(' if self.open_low else '['}{self.low:g}, {self.high:g}{')' if self.open_high else ']'}"


@dataclass(frozen=True)
class Definition:
    """One ``custom_metrics`` entry: where the function is and what its scores look like."""

    function_path: str
    value_range: ValueRange = ValueRange()
    timeout_s: float = DEFAULT_TIMEOUT_S


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def parse_definition(name: str, raw: Any) -> Definition:
    """Validate a ``custom_metrics`` entry (keys already snake_case); problems raise ConfigError."""
    if not isinstance(raw, dict):
        raise ConfigError(f"custom_metrics.{name} must be an object with code_config.name, got {type(raw).__name__}")
    code = raw.get("code_config")
    path = code.get("name") if isinstance(code, dict) else None
    if not isinstance(path, str) or "." not in path.strip(".") or any(not p.isidentifier() for p in path.split(".")):
        raise ConfigError(
            f"custom_metrics.{name}.code_config.name must name a function as 'package.module.function', got {path!r}"
        )
    value_range = ValueRange()
    info = raw.get("metric_info")
    if info is not None:
        interval = (info.get("metric_value_info") or {}).get("interval") if isinstance(info, dict) else None
        if isinstance(interval, dict):
            low = _number(interval.get("min_value"), f"custom_metrics.{name}...interval.min_value")
            high = _number(interval.get("max_value"), f"custom_metrics.{name}...interval.max_value")
            if not low < high:
                raise ConfigError(f"custom_metrics.{name}: the interval's min_value must be below max_value")
            value_range = ValueRange(low, high, bool(interval.get("open_at_min")), bool(interval.get("open_at_max")))
        elif interval is not None or not isinstance(info, dict):
            raise ConfigError(f"custom_metrics.{name}.metric_info must be an object (metric_value_info.interval)")
    timeout = raw.get("timeout_seconds", DEFAULT_TIMEOUT_S)
    timeout_s = _number(timeout, f"custom_metrics.{name}.timeout_seconds")
    if timeout_s <= 0:
        raise ConfigError(f"custom_metrics.{name}.timeout_seconds must be positive, got {timeout!r}")
    return Definition(path, value_range, timeout_s)


def repository_root(start: Path) -> Path | None:
    """The nearest directory at or above ``start`` holding ``.git``."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


def import_roots(origin: str | None) -> list[Path]:
    """Where a custom metric's module is looked for: the eval set's repository root, then the working directory."""
    roots: list[Path] = []
    if origin:
        root = repository_root(Path(origin).parent)
        if root is not None:
            roots.append(root)
    cwd = Path.cwd().resolve()
    if cwd not in roots:
        roots.append(cwd)
    return roots


def resolve(function_path: str, roots: Sequence[Path], timeout_s: float = DEFAULT_TIMEOUT_S) -> Callable[..., Any]:
    """Import ``package.module.function`` with ``roots`` on the import path; ConfigError saying what went wrong.

    The import runs the module's top-level code, so it gets the same deadline as a call.
    """
    module_name, _, attr = function_path.rpartition(".")
    with _IMPORT_LOCK:
        for root in roots:
            if str(root) not in sys.path:
                sys.path.append(str(root))
    try:
        module = call_with_deadline(lambda: importlib.import_module(module_name), timeout_s, f"importing {module_name}")
    except CallFailed as exc:
        cause = exc.__cause__
        if isinstance(cause, ModuleNotFoundError):
            searched = ", ".join(str(r) for r in roots)
            raise ConfigError(
                f"cannot import {function_path}: {cause} (searched the installed packages and {searched}); "
                "give the module path from the repository root"
            ) from None
        raise ConfigError(f"{exc} (for {function_path})") from None
    where = getattr(module, "__file__", None) or module_name
    try:
        function = getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"{function_path}: {where} defines no {attr!r}") from None
    if not callable(function):
        raise ConfigError(f"{function_path} ({where}) is a {type(function).__name__}, not a function")
    return function  # type: ignore[no-any-return]


def contract_of(function: Callable[..., Any], function_path: str) -> Contract:
    """``vertex`` for one required argument (an instance), ``adk`` for ADK's four; ConfigError otherwise."""
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{function_path}: cannot read its signature ({exc})") from None
    positional = [
        p for p in signature.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    required_kw = [p for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    if not required_kw and len(positional) == 1:
        return "vertex"
    if not required_kw and len(positional) == 4:
        return "adk"
    raise ConfigError(
        f"{function_path}{signature} has the wrong signature: a custom metric takes one argument (Vertex: an "
        f"instance dict per invocation) or four (ADK: {', '.join(_ADK_ARGS)})"
    )


def source_hash(function: Callable[..., Any]) -> str:
    """Hash of the function's source (its compiled code when the source cannot be read)."""
    try:
        text = inspect.getsource(function).encode()
    except (OSError, TypeError):
        code = getattr(function, "__code__", None)
        text = repr((code.co_code, code.co_consts) if code is not None else function).encode()
    return hashlib.sha256(text).hexdigest()[:16]


def call_with_deadline(call: Callable[[], Any], timeout_s: float, what: str) -> Any:
    """Run ``call`` in a daemon thread and wait at most ``timeout_s``; coroutines are run to completion there."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            value = call()
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
            outcome["value"] = value
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=work, name=f"evalbot-custom-metric {what}", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise _Hung(f"{what} did not return within {timeout_s:g} s (timeout_seconds)")
    if "error" in outcome:
        exc = outcome["error"]
        raise CallFailed(f"{what} raised {type(exc).__name__}: {exc}") from exc
    return outcome.get("value")


async def _awaited(value: Any) -> Any:
    return await value


def _score(value: Any, value_range: ValueRange, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CallFailed(f"{what} is {value!r}, not a number")
    if not math.isfinite(value):
        raise CallFailed(f"{what} is {value!r}, not a finite number")
    if not value_range.contains(value):
        raise CallFailed(f"{what} {value!r} is outside the metric's range {value_range} (metric_info interval)")
    return float(value)


def _trajectory(calls: Sequence[FunctionCall]) -> list[dict[str, Any]]:
    return [{"tool_name": c.name, "tool_input": c.args} for c in calls]


def vertex_instance(case: CaseInput, index: int) -> dict[str, Any]:
    """The Vertex row of one invocation, as a ``CustomMetric`` function receives it."""
    act = case.actual[index]
    expected = case.expected[index] if case.expected is not None and index < len(case.expected) else None
    instance: dict[str, Any] = {
        "prompt": user_text(act) or (user_text(expected) if expected is not None else ""),
        "response": final_text(act) if act.final_response is not None else None,
        "predicted_trajectory": _trajectory(case.actual_calls[index]) if trajectory_given(act) else None,
        "reference": None,
        "reference_trajectory": None,
    }
    if expected is not None:
        instance["reference"] = final_text(expected) if expected.final_response is not None else None
        exp_calls = case.expected_calls[index] if case.expected_calls is not None else []
        instance["reference_trajectory"] = _trajectory(exp_calls) if trajectory_given(expected) else None
    if act.duration is not None:
        instance["latency_in_seconds"] = act.duration
    failure = failure_of(act)
    if failure is not None:
        instance["failure"] = int(failure)
    return instance


class CustomMetric:
    """A criterion computed by the user's function (see the module docstring for both contracts)."""

    def __init__(
        self, spec: CriterionSpec, definition: Definition, function: Callable[..., Any], contract: Contract
    ) -> None:
        self.name = spec.name
        self.raw_threshold = spec.threshold
        self.definition = definition
        self.function = function
        self.contract = contract
        self.options = spec.options
        self.threshold = definition.value_range.to_unit(spec.threshold)
        self.identity = {
            "function": definition.function_path,
            "source_sha256": source_hash(function),
            "contract": contract,
            "range": str(definition.value_range),
        }
        self._hung: str | None = None
        self._adk: Any = None

    # -- shared -------------------------------------------------------------------------------------------------

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Call the function on the case; anything it does wrong is an ``error`` on this case, never a crash."""
        if self._hung is not None:
            return self._error(f"not run: {self._hung}; a call that hangs cannot be stopped, so the metric is skipped")
        try:
            if self.contract == "vertex":
                return self._vertex(case)
            return self._adk_case(case)
        except _Hung as exc:
            self._hung = f"{self.definition.function_path} hung on case {case.case.eval_id!r}"
            return self._error(str(exc))
        except CallFailed as exc:
            return self._error(str(exc))

    def _error(self, reason: str) -> MetricResult:
        return MetricResult(status="error", threshold=self.threshold, reason=reason)

    def _call(self, what: str, *args: Any) -> Any:
        return call_with_deadline(lambda: self.function(*args), self.definition.timeout_s, what)

    def _status(self, value: float | None) -> Status:
        return threshold_status(value, self.raw_threshold)

    def _details(self, value: float | None, extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
        details = dict(extra or {})
        if not self.definition.value_range.unit:
            details.update(value=value, range=str(self.definition.value_range), threshold_value=self.raw_threshold)
        return details or None

    # -- Vertex: one instance per invocation --------------------------------------------------------------------

    def _vertex(self, case: CaseInput) -> MetricResult:
        path = self.definition.function_path
        scores: list[InvocationScore] = []
        values: list[float] = []
        for i, act in enumerate(case.actual):
            returned = self._call(f"{path} on invocation #{i}", vertex_instance(case, i))
            value, explanation = self._read_vertex(returned, f"{path} on invocation #{i}")
            values.append(value)
            details = self._details(value, {"explanation": explanation} if explanation is not None else None)
            unit = clean_score(self.definition.value_range.to_unit(value))
            scores.append(InvocationScore(
                invocation_id=act.invocation_id or None, score=unit, status=self._status(value), details=details,
            ))
        overall = mean(values)
        reason = None if scores else "the case has no invocations to score"
        return metric_result(
            clean_score(self.definition.value_range.to_unit(overall)), self._status(overall), self.threshold,
            scores, reason, self._details(overall),
        )

    def _read_vertex(self, returned: Any, what: str) -> tuple[float, str | None]:
        if isinstance(returned, dict):
            key = self.name if self.name in returned else "score" if "score" in returned else None
            if key is None:
                keys = ", ".join(repr(k) for k in list(returned)[:8]) or "none"
                raise CallFailed(f"{what} returned a dict without the score: put it under {self.name!r} (keys: {keys})")
            explanation = returned.get("explanation")
            return _score(returned[key], self.definition.value_range, f"{what}: score"), (
                None if explanation is None else str(explanation)[:2000]
            )
        if isinstance(returned, int | float) and not isinstance(returned, bool):
            return _score(returned, self.definition.value_range, f"{what}: score"), None
        raise CallFailed(
            f"{what} returned {type(returned).__name__}, expected a dict {{{self.name!r}: score, 'explanation': ...}}"
        )

    # -- ADK: one call per case with ADK's types ----------------------------------------------------------------

    def _adk_case(self, case: CaseInput) -> MetricResult:
        adk = self._adk or adk_types()
        self._adk = adk
        path = self.definition.function_path
        try:
            criterion = adk.BaseCriterion.model_validate({**self.options, "threshold": self.raw_threshold})
            eval_metric = adk.EvalMetric(
                metric_name=self.name, threshold=None, criterion=criterion, custom_function_path=path
            )
            actual = [adk.Invocation.model_validate(_plain(inv)) for inv in case.actual]
            expected = None if case.expected is None else [adk.Invocation.model_validate(_plain(e)) for e in case.expected]
            scenario = None
            if case.scenario is not None:
                scenario = adk.ConversationScenario.model_validate(case.scenario.model_dump(mode="json", exclude_none=True))
        except Exception as exc:  # our data in ADK's models: should not fail, but must not crash the run
            raise CallFailed(f"the case could not be given to {path} as ADK objects: {type(exc).__name__}: {exc}") from None
        returned = self._call(path, eval_metric, actual, expected, scenario)
        return self._read_adk(returned, len(case.actual), case.actual)

    def _read_adk(self, returned: Any, count: int, actual: Sequence[Invocation]) -> MetricResult:
        path = self.definition.function_path
        adk = self._adk
        try:
            result = adk.EvaluationResult.model_validate(returned, from_attributes=True)
        except Exception as exc:
            raise CallFailed(
                f"{path} returned {type(returned).__name__}, not an EvaluationResult ({str(exc).splitlines()[0]})"
            ) from None
        value = None if result.overall_score is None else _score(
            result.overall_score, self.definition.value_range, f"{path}: overall_score"
        )
        status = _status_of(result.overall_eval_status, f"{path}: overall_eval_status")
        per = list(result.per_invocation_results or [])
        if status not in ("not_evaluated", "informational") and len(per) != count:
            raise CallFailed(
                f"{path} returned {len(per)} per-invocation result(s) for {count} invocation(s); return one per "
                "invocation (ADK aborts the whole run here)"
            )
        scores: list[InvocationScore] = []
        for i, act in enumerate(actual):
            if len(per) == count:
                item = per[i]
                inv_value = None if item.score is None else _score(
                    item.score, self.definition.value_range, f"{path}: per_invocation_results[{i}].score"
                )
                inv_status = _status_of(item.eval_status, f"{path}: per_invocation_results[{i}].eval_status")
            else:
                inv_value, inv_status = None, "not_evaluated"
            scores.append(InvocationScore(
                invocation_id=act.invocation_id or None,
                score=clean_score(self.definition.value_range.to_unit(inv_value)),
                status=inv_status,
                details=self._details(inv_value),
            ))
        reason = None
        if status == "not_evaluated":
            reason = f"{path} returned overall_eval_status NOT_EVALUATED"
            if value is not None:
                reason += " with a score (ADK's default status: set PASSED or FAILED to count it)"
        elif status in ("passed", "failed") and self._status(value) not in (status, "informational"):
            rule = "no score" if value is None else f"score {value:g} vs threshold {self.raw_threshold:g}"
            reason = f"{path} says {status} although score >= threshold says otherwise ({rule}); its status is kept, as in ADK"
        return metric_result(
            clean_score(self.definition.value_range.to_unit(value)), status, self.threshold, scores, reason,
            self._details(value),
        )


def _status_of(raw: Any, what: str) -> Status:
    number = getattr(raw, "value", raw)
    if isinstance(number, int) and number in _ADK_STATUS:
        return _ADK_STATUS[number]
    raise CallFailed(f"{what} is {raw!r}, not an EvalStatus")


def _plain(invocation: Invocation) -> dict[str, Any]:
    exclude = {"failure", "trajectory_given"} if isinstance(invocation, VertexInvocation) else None
    return invocation.model_dump(mode="json", exclude_none=True, exclude=exclude)


@dataclass(frozen=True)
class _AdkTypes:
    BaseCriterion: Any
    EvalMetric: Any
    Invocation: Any
    ConversationScenario: Any
    EvaluationResult: Any


def adk_types() -> _AdkTypes:
    """google-adk's evaluation models (the optional extra ``evalbot[adk]``); ConfigError when it is missing."""
    try:
        case = importlib.import_module("google.adk.evaluation.eval_case")
        metrics = importlib.import_module("google.adk.evaluation.eval_metrics")
        evaluator = importlib.import_module("google.adk.evaluation.evaluator")
    except ImportError as exc:
        raise ConfigError(
            f"this custom metric has ADK's signature ({', '.join(_ADK_ARGS)}) and is called with google-adk's "
            f"types, but google-adk is not installed ({exc}); install it with: pip install 'evalbot[adk]' (the "
            "evalbot Action's image does not include it: there, use Vertex's one-argument contract, or run the evalbot "
            "CLI in a job that installs evalbot[adk])"
        ) from None
    return _AdkTypes(
        metrics.BaseCriterion, metrics.EvalMetric, case.Invocation, case.ConversationScenario,
        evaluator.EvaluationResult,
    )


def build(spec: CriterionSpec, raw_definition: Any, origin: str | None, refused: str | None) -> CustomMetric:
    """Resolve a criterion named in ``custom_metrics``; any problem raises ConfigError naming the function path."""
    definition = parse_definition(spec.name, raw_definition)
    if refused is not None:
        raise ConfigError(f"custom metric {definition.function_path} not run: {refused}")
    function = resolve(definition.function_path, import_roots(origin), definition.timeout_s)
    contract = contract_of(function, definition.function_path)
    metric = CustomMetric(spec, definition, function, contract)
    if contract == "adk":
        try:
            metric._adk = adk_types()
        except ConfigError as exc:
            raise ConfigError(f"{definition.function_path}: {exc}") from None
    return metric
