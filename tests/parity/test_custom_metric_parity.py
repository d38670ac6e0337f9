"""ADK-contract custom metrics score in evalbot exactly as google-adk 2.13.0's LocalEvalService scores them.

The goldens (tests/data/adk_parity/goldens/custom/, made by scripts/make_custom_metric_goldens.py) hold ADK's
verdicts for the functions in tests/parity/adk_custom_metrics.py registered from the same configs; evalbot imports
the same functions (from this repository's root) and every case, metric and invocation is compared: statuses
exactly, scores to 1e-9 on the metric's own scale (a metric declared on [-10, 10] is compared by its raw value).
The functions are called with google-adk's types, so these tests need google-adk (the ``evalbot[adk]`` extra).
The goldens share one run's worker pool, as the eval sets of one run do: each function's worker imports it (and
google-adk, seconds) once for the module, not once per golden.
"""

from __future__ import annotations

import importlib.util
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria.base import BuildContext
from evalbot.criteria.custom_process import WorkerPool
from evalbot.pipeline import evaluate
from evalbot.results import MetricResult

REPO = Path(__file__).resolve().parents[2]
GOLDENS = REPO / "tests/data/adk_parity/goldens/custom"
GOLDEN_FILES = sorted(p.name for p in GOLDENS.glob("*.json"))
DEVIATIONS = sorted(p.name for p in (GOLDENS / "deviations").glob("*.json"))
TOL = 1e-9
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("google.adk") is None, reason="google-adk (evalbot[adk]) is not installed"
)


@pytest.fixture(scope="module")
def run() -> Iterator[BuildContext]:
    """One worker pool for every golden (stopped at the end), like one run scoring many eval sets."""
    pool = WorkerPool()
    yield BuildContext(workers=pool)
    pool.close()


def _golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDENS / name).read_text(encoding="utf-8"))
    return data


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0.0, abs_tol=TOL)


def _raw(score: float | None, details: dict[str, Any] | None) -> float | None:
    """A score on the metric's own scale: evalbot keeps the raw value of a non-[0, 1] metric in the details."""
    return details["value"] if details and "range" in details else score


def _diffs(where: str, adk: dict[str, Any], ours: MetricResult) -> list[str]:
    out = []
    if not _same(adk["score"], _raw(ours.score, ours.details)):
        out.append(f"{where}: score ADK {adk['score']!r} evalbot {ours.score!r} {ours.details}")
    if adk["status"] != ours.status:
        out.append(f"{where}: status ADK {adk['status']} evalbot {ours.status} ({ours.reason})")
    threshold = ours.details["threshold_value"] if ours.details and "range" in ours.details else ours.threshold
    if not _same(adk["threshold"], threshold):
        out.append(f"{where}: threshold ADK {adk['threshold']!r} evalbot {threshold!r}")
    if len(adk["per_invocation"]) != len(ours.per_invocation):
        return [*out, f"{where}: {len(adk['per_invocation'])} ADK invocations, {len(ours.per_invocation)} evalbot"]
    for a, o in zip(adk["per_invocation"], ours.per_invocation, strict=True):
        at = f"{where} invocation #{a['index']}"
        if not _same(a["score"], _raw(o.score, o.details)):
            out.append(f"{at}: score ADK {a['score']!r} evalbot {o.score!r}")
        if a["status"] != o.status:
            out.append(f"{at}: status ADK {a['status']} evalbot {o.status} ({o.reason})")
    return out


@pytest.mark.parametrize("name", GOLDEN_FILES)
def test_custom_metric_verdicts_match_adk(name: str, run: BuildContext, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    golden = _golden(name)
    report = evaluate([golden["evalset"]], actuals=[golden["actuals"]], config=golden["config_path"], ctx=run)
    (eval_set,) = report.eval_sets
    assert not report.errors and not eval_set.errors
    assert not [c.error for c in eval_set.criteria if c.error]
    ours = {c.eval_id: c for c in eval_set.cases}
    assert sorted(ours) == sorted(golden["cases"])
    problems: list[str] = []
    for case_id, adk_case in golden["cases"].items():
        case = ours[case_id]
        if case.status != adk_case["final_status"]:
            problems.append(f"{name} {case_id}: status ADK {adk_case['final_status']} evalbot {case.status}")
        for metric, adk_metric in adk_case["metrics"].items():
            problems += _diffs(f"{name} {case_id} {metric}", adk_metric, case.metrics[metric])
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", DEVIATIONS)
def test_documented_deviations_are_errors(name: str, run: BuildContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where ADK hides a broken function (not_evaluated) or aborts the run, evalbot reports `error` on the case."""
    monkeypatch.chdir(REPO)
    golden = _golden(f"deviations/{name}")
    report = evaluate([golden["evalset"]], actuals=[golden["actuals"]], config=golden["config_path"], ctx=run)
    (eval_set,) = report.eval_sets
    metric = next(n for n in json.loads(Path(golden["config_path"]).read_text(encoding="utf-8"))["criteria"]
                  if n.startswith("cm_"))
    multi = [c for c in eval_set.cases if len(c.metrics["tool_trajectory_avg_score"].per_invocation) > 1]
    assert multi
    for case in multi:
        assert case.status == "error" and case.metrics[metric].status == "error", case
        assert case.metrics["tool_trajectory_avg_score"].status == "passed"
    if golden["adk_error"] is None:
        adk = {k: v["metrics"][metric]["status"] for k, v in golden["cases"].items()}
        assert {adk[c.eval_id] for c in multi} == {"not_evaluated"}
    else:
        assert "per invocation" in golden["adk_error"] or "results for each invocation" in golden["adk_error"]


def test_goldens_are_present() -> None:
    assert len(GOLDEN_FILES) >= 60 and len(DEVIATIONS) == 2
    assert {_golden(n)["adk_version"] for n in GOLDEN_FILES} == {"2.13.0"}
