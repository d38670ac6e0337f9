"""Recorded runs as ADK EvalSetResult JSON, written after a run and read back to re-score without the agent.

One EvalSetResult per eval set; with ``--num-runs N`` each case appears N times in run order (as AgentEvaluator
saves them).  evalbot adds an ``evalbot`` key to the EvalSetResult (format marker, number of runs, agent) and to
each EvalCaseResult (run number, outcome, reason, failed turn, why the conversation stopped); ADK ignores both.
Metric results are filled from evalbot's scores for ADK tools that display them; re-scoring reads only the
invocations and the ``evalbot`` keys.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, get_args

from evalbot.errors import InputError
from evalbot.formats.adk import Invocation
from evalbot.formats.config import EvalConfig
from evalbot.formats.jsonio import validate
from evalbot.formats.loaded import LoadedEvalSet
from evalbot.paths import write_output
from evalbot.results import Report
from evalbot.runner.base import CaseRun, RunOutcome, RunSet, Stop

FORMAT = "evalbot.recorded_runs"
VERSION = 1
ADK_STATUS = {"passed": 1, "failed": 2, "not_evaluated": 3, "error": 3, "informational": 4}
"""evalbot statuses as ADK's EvalStatus ints (ADK has no "error": it would be NOT_EVALUATED)."""
MAX_RECORDED_RUNS = 1000
"""Most runs a recording may claim (``--num-runs``' limit): each is scored, so a forged count cannot stall a run."""
_OUTCOME_STATUS = {"failed": 2, "error": 3, "not_evaluated": 3}


def _metric(name: str, threshold: float | None, score: float | None, status: str,
            config: EvalConfig) -> dict[str, Any]:
    """An ADK EvalMetricResult (``criterion`` echoes the configured options, as ADK does)."""
    spec = next((s for s in config.criteria if s.name == name), None)
    criterion = {"threshold": threshold, **spec.options} if spec and threshold is not None else None
    return {"metric_name": name, "threshold": threshold, "criterion": criterion, "score": score,
            "eval_status": ADK_STATUS[status]}


def _case_result(case_run: CaseRun, loaded: LoadedEvalSet, report: Report | None, set_index: int) -> dict[str, Any]:
    case = next((c.case for c in loaded.cases if c.eval_id == case_run.eval_id), None)
    expected = case.conversation if case is not None else None
    scored = None
    if report is not None and case_run.outcome == "ok":
        scored = next((c for c in report.eval_sets[set_index].cases if c.eval_id == case_run.eval_id), None)
    metrics = {n: m for n, m in (scored.metrics.items() if scored else []) if m.status != "error"}
    per_invocation = []
    for i, inv in enumerate(case_run.invocations):
        per_inv_metrics = [
            _metric(n, m.threshold, m.per_invocation[i].score, m.per_invocation[i].status, loaded.config)
            for n, m in metrics.items() if len(m.per_invocation) == len(case_run.invocations)
        ]
        exp = expected[i] if expected is not None and i < len(expected) else None
        per_invocation.append({
            "actual_invocation": inv.model_dump(mode="json", exclude_none=True),
            "expected_invocation": exp.model_dump(mode="json", exclude_none=True) if exp else None,
            "eval_metric_results": per_inv_metrics,
        })
    failed = case_run.failed_invocation
    if case_run.outcome != "ok":
        final = _OUTCOME_STATUS[case_run.outcome]
    else:
        final = ADK_STATUS[scored.status] if scored else 3
    return {
        "eval_set_file": case_run.eval_set_id,
        "eval_set_id": case_run.eval_set_id,
        "eval_id": case_run.eval_id,
        "final_eval_status": final,
        "overall_eval_metric_results": [_metric(n, m.threshold, m.score, m.status, loaded.config)
                                        for n, m in metrics.items()],
        "eval_metric_result_per_invocation": per_invocation,
        "session_id": case_run.session_id or f"evalbot-{case_run.eval_id}-run{case_run.run}",
        "user_id": case_run.user_id,
        "evalbot": {
            "run": case_run.run, "outcome": case_run.outcome, "reason": case_run.reason,
            "failed_turn": case_run.failed_turn, "stop": case_run.stop,
            "failed_invocation": failed.model_dump(mode="json", exclude_none=True) if failed else None,
        },
    }


def eval_set_results(eval_sets: Sequence[LoadedEvalSet], runs: RunSet,
                     per_run: Sequence[Report] = ()) -> list[dict[str, Any]]:
    """One EvalSetResult dict per eval set that has runs (``per_run`` reports supply the metric results)."""
    now = time.time()
    out = []
    for index, loaded in enumerate(eval_sets):
        cases = [
            _case_result(case_run, loaded, per_run[case_run.run - 1] if per_run else None, index)
            for run in range(1, runs.num_runs + 1)
            for c in loaded.cases
            for case_run in runs.of(loaded.eval_set_id, c.eval_id) if case_run.run == run
        ]
        if not cases:
            continue
        result_id = f"evalbot_{loaded.eval_set_id}_{now:.0f}"
        out.append({
            "eval_set_result_id": result_id,
            "eval_set_result_name": re.sub(r"[/\\]", "_", result_id),
            "eval_set_id": loaded.eval_set_id,
            "eval_case_results": cases,
            "creation_timestamp": now,
            "evalbot": {"format": FORMAT, "version": VERSION, "num_runs": runs.num_runs, "agent": runs.agent},
        })
    return out


def is_recording(data: Any) -> bool:
    """True for an EvalSetResult (or a list of them) written by evalbot's runner."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and any(
        isinstance(d, dict) and isinstance(d.get("evalbot"), dict) and d["evalbot"].get("format") == FORMAT
        for d in items
    )


def _enum(value: Any, allowed: tuple[str, ...], path: Path, pointer: str) -> Any:
    if value is not None and value not in allowed:
        raise InputError(path, pointer, f"expected one of {', '.join(allowed)}, got {value!r}")
    return value


def _read_case(raw: Any, set_id: str, num_runs: int, path: Path, base: tuple[str | int, ...]) -> CaseRun:
    where = "/".join(str(p) for p in base)
    if not isinstance(raw, dict) or not isinstance(raw.get("eval_id"), str):
        raise InputError(path, f"/{where}/eval_id", "required: the case's eval_id")
    meta = raw.get("evalbot") or {}
    if not isinstance(meta, dict):
        raise InputError(path, f"/{where}/evalbot", "expected an object")
    run = meta.get("run", 1)
    if isinstance(run, bool) or not isinstance(run, int) or not 1 <= run <= num_runs:
        raise InputError(path, f"/{where}/evalbot/run", f"expected a run number from 1 to {num_runs}, got {run!r}")
    per_inv = raw.get("eval_metric_result_per_invocation") or []
    if not isinstance(per_inv, list):
        raise InputError(path, f"/{where}/eval_metric_result_per_invocation", "expected a list")
    invocations = [
        validate(Invocation, item.get("actual_invocation") if isinstance(item, dict) else item, path,
                 (*base, "eval_metric_result_per_invocation", i, "actual_invocation"))
        for i, item in enumerate(per_inv)
    ]
    failed = meta.get("failed_invocation")
    failed_invocation = None if failed is None else validate(Invocation, failed, path, (*base, "evalbot",
                                                                                        "failed_invocation"))
    failed_turn = meta.get("failed_turn")
    if failed_turn is not None and (isinstance(failed_turn, bool) or not isinstance(failed_turn, int)):
        raise InputError(path, f"/{where}/evalbot/failed_turn", "expected a turn number or null")
    return CaseRun(
        eval_set_id=raw.get("eval_set_id") or set_id,
        eval_id=raw["eval_id"],
        run=run,
        invocations=invocations,
        outcome=_enum(meta.get("outcome", "ok"), get_args(RunOutcome), path, f"/{where}/evalbot/outcome"),
        reason=meta.get("reason"),
        failed_turn=failed_turn,
        failed_invocation=failed_invocation,
        stop=_enum(meta.get("stop"), get_args(Stop), path, f"/{where}/evalbot/stop"),
        session_id=raw.get("session_id"),
        user_id=raw.get("user_id"),
    )


def runs_from_data(data: Any, path: Path, into: RunSet | None = None) -> RunSet:
    """Read recorded runs from decoded JSON (one EvalSetResult or a list of them)."""
    runs = into or RunSet()
    items = data if isinstance(data, list) else [data]
    for index, item in enumerate(items):
        prefix: tuple[str | int, ...] = (index,) if isinstance(data, list) else ()
        if not isinstance(item, dict) or not isinstance(item.get("eval_case_results"), list):
            raise InputError(path, "/" + "/".join(map(str, (*prefix, "eval_case_results"))),
                             "expected an EvalSetResult with a list of eval_case_results")
        meta: dict[str, Any] = item["evalbot"] if isinstance(item.get("evalbot"), dict) else {}
        num_runs = meta.get("num_runs", 1)
        if isinstance(num_runs, bool) or not isinstance(num_runs, int) or not 1 <= num_runs <= MAX_RECORDED_RUNS:
            raise InputError(path, "/" + "/".join(map(str, (*prefix, "evalbot", "num_runs"))),
                             f"expected a whole number of runs from 1 to {MAX_RECORDED_RUNS:,} (as --num-runs), got "
                             f"{str(num_runs)[:40]}")
        runs.num_runs = max(runs.num_runs, num_runs)
        runs.agent = runs.agent or meta.get("agent")
        set_id = str(item.get("eval_set_id") or "")
        for i, raw in enumerate(item["eval_case_results"]):
            runs.add(_read_case(raw, set_id, num_runs, path, (*prefix, "eval_case_results", i)))
    return runs


def repeated_runs(data: Any) -> Any | None:
    """An ADK EvalSetResult (or a list of them) that lists a case several times, as AgentEvaluator saves N runs,
    marked up as a recording of that many runs (each case's n-th entry is its run n), for :func:`runs_from_data`;
    None when no case repeats (plain actuals, read as they are). The input is not changed."""
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(d, dict) and isinstance(d.get("eval_case_results"), list) for d in items):
        return None
    marked: list[dict[str, Any]] = []
    repeated = False
    for item in items:
        seen: dict[tuple[Any, Any], int] = {}
        cases = []
        for raw in item["eval_case_results"]:
            key = (raw.get("eval_set_id"), raw.get("eval_id")) if isinstance(raw, dict) else None
            if key is None or not all(k is None or isinstance(k, str) for k in key):
                return None  # malformed (not an object, or an id that is no string): the plain reader names it
            seen[key] = seen.get(key, 0) + 1
            cases.append({**raw, "evalbot": {"run": seen[key]}})
        most = max(seen.values(), default=1)
        repeated = repeated or most > 1
        if most > MAX_RECORDED_RUNS:
            return None  # the plain reader keeps one entry; a k/N rule then refuses the run
        marked.append({**item, "eval_case_results": cases, "evalbot": {"num_runs": most}})
    if not repeated:
        return None
    return marked if isinstance(data, list) else marked[0]


def write_recording(path: Path, eval_sets: Sequence[LoadedEvalSet], runs: RunSet,
                    per_run: Sequence[Report] = ()) -> Path:
    """Write the recording: one EvalSetResult object, or a list when there are several eval sets."""
    results = eval_set_results(eval_sets, runs, per_run)
    payload: Any = results[0] if len(results) == 1 else results
    write_output(path, json.dumps(payload, indent=2, ensure_ascii=False) + "\n", name="--record")
    return path
