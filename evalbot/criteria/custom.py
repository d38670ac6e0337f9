"""Custom metrics: the user's own Python functions as criteria (ADK's ``custom_metrics``, Vertex's ``CustomMetric``).

A criterion whose name is a key of ``custom_metrics`` in ``test_config.json`` is computed by the function named in
that entry's ``code_config.name`` (``package.module.function``).  The function is repository code, so evalbot never
imports it: a worker process does (criteria.custom_process runs ``custom_worker.py``), with the gate's import path
plus the eval set's repository root (the nearest ancestor holding ``.git``) and the working directory appended (so a
repository file never shadows an installed package), and with an environment stripped of secrets.  The gate process
sends it the cases as JSON and reads JSON answers back, so nothing the module does (monkeypatching evalbot, exiting,
crashing, printing) can change the gate: at worst its own cases are ``error``.  The Action lets it run only on the
events docs/criteria.md lists (``pull_request``, ``push``); elsewhere the criterion is ``not_evaluated`` with the reason
(criteria.NotRun), and the fork-safe second stage never builds criteria.

The function's signature chooses the contract:

* **Vertex** (one required argument): called once per invocation with an instance dict holding Vertex's columns
  (``prompt``, ``response``, ``reference``, ``predicted_trajectory``, ``reference_trajectory`` as lists of
  ``{"tool_name", "tool_input"}``, and ``latency_in_seconds`` / ``failure`` when recorded).  It returns a dict with
  the score under the metric's name (or ``score``) and optionally ``explanation`` (a bare number is accepted too).
  Per invocation ``score >= threshold``; the case score is the mean, compared the same way.
* **ADK** (four arguments ``eval_metric, actual_invocations, expected_invocations, conversation_scenario``): called
  once per case, sync or async, with google-adk's own types (needs ``evalbot[adk]``; the worker builds them from the
  case's JSON) and, as ADK does, an ``eval_metric`` whose ``threshold`` is None (the configured threshold is in
  ``eval_metric.criterion``).  Its ``EvaluationResult`` is read back as ADK's LocalEvalService reads it: the overall
  score and status and, when there is one per invocation, the per-invocation scores and statuses.  The status is the
  function's (as in ADK); a status that contradicts ``score >= threshold`` is kept and the disagreement is noted.

Scores must be finite and inside ``metric_info.metric_value_info.interval`` (default [0, 1]).  The report's score
is on the [0, 1] scale: a metric declared on another interval reports ``(value - min) / (max - min)`` (its
threshold likewise) and keeps the raw ``value`` in the details.  A function that raises or returns something
unreadable makes the metric ``error`` on that case with the message; the other criteria still run.

Batching and deadlines: ``evaluate`` queues the case and returns an awaitable; the first one awaited sends every
queued case to the worker in batches of up to ``BATCH_ITEMS`` calls, and the worker answers call by call.  Each
answer (and the import) is awaited at most ``timeout_seconds`` (an evalbot key of the ``custom_metrics`` entry, ADK
ignores it; default 30).  A worker that misses the deadline is killed with every process it started (on Linux
its supervisor ends the whole tree, ``setsid`` children included: criteria.custom_process); one that exits,
crashes or breaks the protocol is gone too.  Either way the case in flight is ``error`` with the reason and the
metric's remaining cases in that eval set are ``error`` naming that case (the worker is not restarted for them).

One worker per run: ``evaluate`` gives the run a :class:`~evalbot.criteria.custom_process.WorkerPool`, so the eval
sets naming the same function (from the same import path) share its worker, one batch at a time, and the module is
imported once per run; a worker that is gone is replaced for the other eval sets, and the pool stops them all at
the end of the run.  Without a pool (``BuildContext.workers`` None) each metric starts its own and stops it when its
cases are answered.

The criterion's fingerprint (baseline comparison) covers the function path and a hash of its code computed here, by
the gate, from the files (criteria.custom_code: the metric's module and every repository file it imports; nothing
the worker says about itself is believed), so editing the function or a helper it imports shows its cases as
"changed definition" and the change as "custom metric code changed", never as a regression.
"""

from __future__ import annotations

import asyncio
import importlib.util
import math
import threading
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any, Literal

from evalbot.criteria.base import CaseInput
from evalbot.criteria.custom_code import CodeIdentity, code_identity
from evalbot.criteria.custom_process import Started, Worker, WorkerGone, WorkerPool, worker_path
from evalbot.errors import ConfigError, install_hint
from evalbot.formats.adk import FunctionCall, Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.formats.invocations import final_text, user_text
from evalbot.formats.vertex import VertexInvocation, failure_of, trajectory_given
from evalbot.results import (
    CUSTOM_PROCESS_GONE,
    InvocationScore,
    MetricResult,
    Status,
    clean_score,
    mean,
    metric_result,
    threshold_status,
)

DEFAULT_TIMEOUT_S = 30.0
BATCH_ITEMS = 256
"""Calls sent to the worker in one message (each is answered on its own line, each with its own deadline)."""
MAX_DATA_PATTERNS = 100
"""Globs one metric's ``data_files`` may list."""
Contract = Literal["vertex", "adk"]
_ADK_STATUS: dict[int, Status] = {1: "passed", 2: "failed", 3: "not_evaluated", 4: "informational"}
_ADK_ARGS = ("eval_metric", "actual_invocations", "expected_invocations", "conversation_scenario")


class CallFailed(Exception):
    """The user's function raised, returned something unreadable, or its worker is gone."""

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
    data_files: tuple[str, ...] = ()
    """Globs (from the repository root) of the data files the function reads: hashed into its code identity, and the
    only repository files besides its code its worker may open."""


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
    return Definition(path, value_range, timeout_s, _data_files(name, raw.get("data_files", [])))


def _data_files(name: str, raw: Any) -> tuple[str, ...]:
    """``data_files``: up to :data:`MAX_DATA_PATTERNS` globs relative to the repository root, none leaving it."""
    what = f"custom_metrics.{name}.data_files"
    if not isinstance(raw, list) or len(raw) > MAX_DATA_PATTERNS:
        raise ConfigError(f"{what} must be a list of at most {MAX_DATA_PATTERNS} globs from the repository root "
                          f"(e.g. [\"evals/metrics/keywords.txt\", \"evals/metrics/data/*.json\"])")
    for index, pattern in enumerate(raw):
        if not isinstance(pattern, str) or not pattern.strip() or len(pattern) > 300 or "\x00" in pattern:
            raise ConfigError(f"{what}[{index}] must be a glob from the repository root, got {pattern!r}")
        parts = pattern.replace("\\", "/").split("/")
        if pattern.startswith(("/", "\\")) or ":" in parts[0] or ".." in parts:
            raise ConfigError(f"{what}[{index}] {pattern!r} leaves the repository: give a path from its root")
    return tuple(raw)


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


@dataclass
class _Ticket:
    """One queued case: its calls and what the answers are read against."""

    eval_id: str
    items: list[dict[str, Any]]
    invocation_ids: list[str | None]
    answers: list[Any] = field(default_factory=list)


class CustomMetric:
    """A criterion computed by the user's function in a worker process (see the module docstring)."""

    def __init__(
        self, spec: CriterionSpec, definition: Definition, worker: Worker | None, contract: Contract,
        code: CodeIdentity, roots: Sequence[Path] = (), pool: WorkerPool | None = None,
    ) -> None:
        self.name = spec.name
        self.raw_threshold = spec.threshold
        self.definition = definition
        self.contract = contract
        self.options = spec.options
        self.threshold = definition.value_range.to_unit(spec.threshold)
        self.identity = {
            "function": definition.function_path,
            "code_sha256": code.sha256,
            "contract": contract,
            "range": str(definition.value_range),
        }
        self._worker = worker
        self._code = code
        self._roots = list(roots)
        self._pool = pool
        self._key = pool_key(definition, self._roots)
        self._gone: str | None = None
        self._queue: dict[int, _Ticket] = {}
        self._results: dict[int, MetricResult] = {}
        self._numbers = count()
        self._flushing = threading.Lock()
        self._locks: dict[int, asyncio.Lock] = {}

    # -- shared -------------------------------------------------------------------------------------------------

    def evaluate(self, case: CaseInput) -> MetricResult | Awaitable[MetricResult]:
        """Queue the case for the worker; the awaitable settles once its batch has been answered."""
        if self._gone is not None:
            return self._error(self._gone)
        path = self.definition.function_path
        if self.contract == "vertex":
            items = [{"what": f"{path} on invocation #{i}", "arg": vertex_instance(case, i)}
                     for i in range(len(case.actual))]
            if not items:
                return self._vertex_result([], [])
        else:
            items = [self._adk_item(case)]
        number = next(self._numbers)
        self._queue[number] = _Ticket(case.case.eval_id, items, [a.invocation_id or None for a in case.actual])
        return self._settled(number)

    async def _settled(self, number: int) -> MetricResult:
        loop = id(asyncio.get_running_loop())
        lock = self._locks.setdefault(loop, asyncio.Lock())
        async with lock:
            if number not in self._results:
                await asyncio.to_thread(self.flush)
        return self._results.pop(number)

    def flush(self) -> None:
        """Send every queued case to the worker and read the answers (then stop the worker, its work done, or leave
        a shared one to the run's pool)."""
        with self._flushing:
            tickets, self._queue = self._queue, {}
            batch: list[tuple[int, _Ticket]] = []
            size = 0
            for number, ticket in tickets.items():
                if batch and size + len(ticket.items) > BATCH_ITEMS:
                    self._run_batch(batch)
                    batch, size = [], 0
                batch.append((number, ticket))
                size += len(ticket.items)
            if batch:
                self._run_batch(batch)
            self.close()

    def close(self) -> None:
        """Stop the worker (a later case starts a new one); a run's shared worker is left to its pool."""
        if self._worker is not None and self._pool is None:
            self._worker.close()
        self._worker = None

    def _stop_worker(self) -> None:
        """Kill the worker, shared or not: it failed, so nothing may use it again."""
        if self._worker is not None:
            self._worker.close()
        self._worker = None

    def _run_batch(self, batch: Sequence[tuple[int, _Ticket]]) -> None:
        if self._pool is None:
            self._exchange(batch)
            return
        with self._pool.lock(self._key):  # the worker is shared by the run's eval sets: one batch at a time
            self._exchange(batch)

    def _exchange(self, batch: Sequence[tuple[int, _Ticket]]) -> None:
        timeout = self.definition.timeout_s
        worker = None
        if self._gone is None:
            try:
                worker = self._live_worker()
                worker.send_items([i for _, t in batch for i in t.items], timeout, batch[0][1].items[0]["what"])
            except (WorkerGone, ConfigError) as exc:
                self._give_up(str(exc), batch[0][1].eval_id, getattr(exc, "hung", False))
                worker = None
        for number, ticket in batch:
            if worker is None or self._gone is not None:
                self._results[number] = self._error(self._gone or f"{CUSTOM_PROCESS_GONE}no process to run it")
                continue
            try:
                for item in ticket.items:
                    ticket.answers.append(self._answer(worker.receive(timeout, item["what"]), item["what"]))
                self._results[number] = self._read(ticket)
            except WorkerGone as exc:
                self._give_up(str(exc), ticket.eval_id, exc.hung)
                self._results[number] = self._error(CUSTOM_PROCESS_GONE + str(exc))
            except CallFailed as exc:
                self._results[number] = self._error(str(exc))

    def _live_worker(self) -> Worker:
        if self._worker is not None and self._worker.gone is None:
            return self._worker
        if self._pool is not None:  # another eval set's case may have killed the shared worker: the pool starts anew
            self._worker, _ = self._pool.get(self._key,
                                             lambda: start_worker(self.definition, self._roots, self._code))
        else:
            self._worker, _ = start_worker(self.definition, self._roots, self._code)
        return self._worker

    def _give_up(self, reason: str, eval_id: str, hung: bool) -> None:
        what = "hung" if hung else "failed"
        self._gone = (f"{CUSTOM_PROCESS_GONE}not run: {self.definition.function_path} {what} on case {eval_id!r} "
                      f"({reason}); its process was stopped, so the metric is skipped for the rest of this eval set")
        self._stop_worker()

    @staticmethod
    def _answer(answer: dict[str, Any], what: str) -> Any:
        if "value" in answer:
            return answer["value"]
        if isinstance(answer.get("error"), str):
            raise CallFailed(answer["error"][:4000])
        if isinstance(answer.get("unserializable"), str):
            raise CallFailed(f"{what} returned {answer['unserializable'][:100]}, which is not JSON data (return a "
                             "dict with the score, or a number)")
        raise CallFailed(f"{what}: the worker's answer is not evalbot's protocol")

    def _read(self, ticket: _Ticket) -> MetricResult:
        if self.contract == "vertex":
            return self._vertex_result(ticket.answers, ticket.invocation_ids)
        return self._read_adk(ticket.answers[0], ticket.invocation_ids)

    def _error(self, reason: str) -> MetricResult:
        return MetricResult(status="error", threshold=self.threshold, reason=reason)

    def _status(self, value: float | None) -> Status:
        return threshold_status(value, self.raw_threshold)

    def _details(self, value: float | None, extra: dict[str, Any] | None = None) -> dict[str, Any] | None:
        details = dict(extra or {})
        if not self.definition.value_range.unit:
            details.update(value=value, range=str(self.definition.value_range), threshold_value=self.raw_threshold)
        return details or None

    # -- Vertex: one instance per invocation --------------------------------------------------------------------

    def _vertex_result(self, answers: Sequence[Any], invocation_ids: Sequence[str | None]) -> MetricResult:
        path = self.definition.function_path
        scores: list[InvocationScore] = []
        values: list[float] = []
        for i, (returned, inv_id) in enumerate(zip(answers, invocation_ids, strict=True)):
            value, explanation = self._read_vertex(returned, f"{path} on invocation #{i}")
            values.append(value)
            details = self._details(value, {"explanation": explanation} if explanation is not None else None)
            unit = clean_score(self.definition.value_range.to_unit(value))
            scores.append(InvocationScore(invocation_id=inv_id, score=unit, status=self._status(value), details=details))
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

    def _adk_item(self, case: CaseInput) -> dict[str, Any]:
        path = self.definition.function_path
        return {
            "what": path, "path": path, "metric_name": self.name,
            "criterion": {**self.options, "threshold": self.raw_threshold},
            "actual": [_plain(inv) for inv in case.actual],
            "expected": None if case.expected is None else [_plain(e) for e in case.expected],
            "scenario": None if case.scenario is None else case.scenario.model_dump(mode="json", exclude_none=True),
        }

    def _read_adk(self, returned: Any, invocation_ids: Sequence[str | None]) -> MetricResult:
        """The EvaluationResult the worker read back (``overall_score``, ``overall_eval_status``,
        ``per_invocation_results`` of ``score`` and ``eval_status``), checked as untrusted data."""
        path = self.definition.function_path
        count_ = len(invocation_ids)
        per_raw = returned.get("per_invocation_results") if isinstance(returned, dict) else None
        if not isinstance(per_raw, list) or not all(isinstance(p, dict) for p in per_raw):
            raise CallFailed(f"{path}: the worker's answer is not an EvaluationResult (evalbot's protocol)")
        overall = returned.get("overall_score")
        value = None if overall is None else _score(overall, self.definition.value_range, f"{path}: overall_score")
        status = _status_of(returned.get("overall_eval_status"), f"{path}: overall_eval_status")
        per = list(per_raw)
        if status not in ("not_evaluated", "informational") and len(per) != count_:
            raise CallFailed(
                f"{path} returned {len(per)} per-invocation result(s) for {count_} invocation(s); return one per "
                "invocation (ADK aborts the whole run here)"
            )
        scores: list[InvocationScore] = []
        for i, inv_id in enumerate(invocation_ids):
            if len(per) == count_:
                item = per[i]
                inv_value = None if item.get("score") is None else _score(
                    item.get("score"), self.definition.value_range, f"{path}: per_invocation_results[{i}].score"
                )
                inv_status = _status_of(item.get("eval_status"), f"{path}: per_invocation_results[{i}].eval_status")
            else:
                inv_value, inv_status = None, "not_evaluated"
            scores.append(InvocationScore(
                invocation_id=inv_id,
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
    if isinstance(raw, int) and not isinstance(raw, bool) and raw in _ADK_STATUS:
        return _ADK_STATUS[raw]
    raise CallFailed(f"{what} is {str(raw)[:200]}, not an EvalStatus")


def _plain(invocation: Invocation) -> dict[str, Any]:
    exclude = {"failure", "trajectory_given"} if isinstance(invocation, VertexInvocation) else None
    return invocation.model_dump(mode="json", exclude_none=True, exclude=exclude)


def require_adk() -> None:
    """ConfigError when google-adk (the optional extra ``evalbot[adk]``) is not installed."""
    try:
        found = importlib.util.find_spec("google.adk") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError(
            f"this custom metric has ADK's signature ({', '.join(_ADK_ARGS)}) and is called with google-adk's "
            "types, but google-adk is not installed (No module named 'google.adk'); install it with: "
            f"{install_hint('adk')} (the evalbot Action's image does not include it: there, use Vertex's one-argument "
            "contract, or run the evalbot CLI in a job that installs evalbot[adk])"
        )


def pool_key(definition: Definition, roots: Sequence[Path]) -> tuple[str, ...]:
    """What a run's worker is shared by: the function, the import path it was imported from and the data files it
    may read."""
    return (definition.function_path, *(str(r) for r in roots), *(f"data:{p}" for p in definition.data_files))


def start_worker(definition: Definition, roots: Sequence[Path], code: CodeIdentity | None = None) -> Started:
    """A worker that has imported the function, and its answer (``contract``); ConfigError saying
    what went wrong otherwise (the worker is then stopped). The worker may read, of the repository, only the files of
    ``code`` (read now when not given)."""
    path = definition.function_path
    module_name = path.rpartition(".")[0]
    code = code if code is not None else metric_code(definition, roots)
    worker = Worker(path, roots, readable=code.paths)
    try:
        started = worker.start(definition.timeout_s, f"importing {module_name}")
    except WorkerGone as exc:
        raise ConfigError(f"{exc} (for {path})") from None
    error, message = started.get("error"), str(started.get("message", ""))[:2000]
    if error is not None or started.get("contract") not in ("vertex", "adk"):
        worker.close()
        if error == "not_found":
            searched = ", ".join(str(r) for r in roots)
            raise ConfigError(
                f"cannot import {path}: {message} (searched the installed packages and {searched}); "
                "give the module path from the repository root"
            )
        if error == "config":
            raise ConfigError(message if message.startswith(path) else f"{message} (for {path})")
        raise ConfigError(f"{path}: the worker's answer to the import is not evalbot's protocol")
    return worker, started


def build(
    spec: CriterionSpec, raw_definition: Any, origin: str | None, refused: str | None, pool: WorkerPool | None = None
) -> CustomMetric:
    """Import the function of a criterion named in ``custom_metrics`` in a new worker, or take the run's worker
    that already imported it from ``pool``; any problem raises ConfigError naming the function path."""
    definition = parse_definition(spec.name, raw_definition)
    if refused is not None:
        raise ConfigError(f"custom metric {definition.function_path} not run: {refused}")
    roots = import_roots(origin)
    code = metric_code(definition, roots, pool)  # read before the worker runs any repository code
    if pool is None:
        worker, started = start_worker(definition, roots, code)
    else:
        worker, started = pool.get(pool_key(definition, roots), lambda: start_worker(definition, roots, code))
    contract: Contract = "adk" if started["contract"] == "adk" else "vertex"
    if contract == "adk":
        try:
            require_adk()
        except ConfigError as exc:
            worker.close()  # pooled too: without google-adk no eval set can use it
            raise ConfigError(f"{definition.function_path}: {exc}") from None
    return CustomMetric(spec, definition, worker, contract, code, roots, pool)


def metric_code(definition: Definition, roots: Sequence[Path], pool: WorkerPool | None = None) -> CodeIdentity:
    """The identity of the function's module, the repository files it imports and its declared data files, read by
    this process (once per run with a ``pool``)."""
    module = definition.function_path.rpartition(".")[0]

    def compute() -> CodeIdentity:
        return code_identity(module, worker_path(roots), roots, definition.data_files)

    return compute() if pool is None else pool.identity(pool_key(definition, roots), compute)


def read_codes(pool: WorkerPool, metrics: Iterable[tuple[str, Any, str | None]]) -> None:
    """Read the code of each ``(name, custom_metrics entry, eval set path)`` into ``pool`` before any worker starts
    (a metric's module runs when imported and could rewrite another metric's files); an entry that is not valid is
    left to :func:`build` to report."""
    for name, raw, origin in metrics:
        try:
            definition = parse_definition(name, raw)
        except ConfigError:
            continue
        metric_code(definition, import_roots(origin), pool)
