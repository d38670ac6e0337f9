#!/usr/bin/env python3
"""Regenerate the custom-metric parity goldens under tests/data/adk_parity/goldens/custom/ with google-adk itself.

Run from the repository root with the ADK virtualenv (google-adk 2.13.0, as for scripts/make_adk_goldens.py)::

    PYTHONPATH=. /work/adkvenv/bin/python scripts/make_custom_metric_goldens.py

The ADK-contract functions in tests/parity/adk_custom_metrics.py are declared in ``custom_metrics`` configs
(tests/data/adk_parity/configs/custom_*.json), registered from that same config with ADK's
``register_custom_metrics_from_config`` on a fork of ADK's metric registry, and evaluated by ADK's
``LocalEvalService`` on committed sample eval sets and actuals (the files scripts/make_adk_goldens.py wrote).
Each golden records ADK's per-case verdict and, per metric, score, status, threshold and per-invocation results.
Deviation configs record what ADK does where evalbot deliberately reports ``error`` (a raising function: ADK
NOT_EVALUATED; no per-invocation results: ADK aborts the run).  Deterministic: a rerun gives an empty diff.
The parity test is tests/parity/test_custom_metric_parity.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "scripts")]

from make_adk_goldens import (  # noqa: E402  (needs the path above)
    ACTUALS,
    APP_NAME,
    CONFIGS,
    GOLDENS,
    SAMPLE_SETS,
    SAMPLES,
    _dump,
    _metric_record,
    _status,
    load_eval_set,
)

FUNCTIONS = "tests.parity.adk_custom_metrics"
OUT = GOLDENS / "custom"
SAMPLES_USED = ("v118_order_query", "v118_simple_multi_turn", "v118_trip_inquiry", "v118_roll_die",
                "v118_bigquery_simple", "main_elicitation_flow", "synthetic_edge_cases")
VARIANTS = ("expected", "tools_missing_call", "tools_extra_call", "tools_all_removed", "tool_renamed",
            "response_changed", "response_empty", "events_expected", "events_tools_missing_call")


def _entry(function: str, **extra: Any) -> dict[str, Any]:
    return {"code_config": {"name": f"{FUNCTIONS}.{function}"}, **extra}


SIGNED = {"metric_info": {"metric_name": "cm_signed", "metric_value_info": {
    "interval": {"min_value": -10.0, "max_value": 10.0}}}}

CUSTOM_CONFIGS: dict[str, dict[str, Any]] = {
    "custom_main": {
        "criteria": {"tool_trajectory_avg_score": 1.0, "cm_coverage": 0.75,
                     "cm_overlap": {"threshold": 0.6, "note": "extra keys reach the function"},
                     "cm_signed": 0.0, "cm_default_status": 0.5, "cm_always_passes": 0.9},
        "custom_metrics": {
            "cm_coverage": _entry("tool_coverage"),
            "cm_overlap": _entry("word_overlap"),
            "cm_signed": _entry("signed_coverage", **SIGNED),
            "cm_default_status": _entry("status_left_default"),
            "cm_always_passes": _entry("always_passes"),
        },
    },
    "custom_strict": {
        "criteria": {"cm_coverage": 1.0, "cm_overlap": 1.0, "cm_signed": 5.0},
        "custom_metrics": {
            "cm_coverage": _entry("tool_coverage"),
            "cm_overlap": _entry("word_overlap"),
            "cm_signed": _entry("signed_coverage", **SIGNED),
        },
    },
}
DEVIATION_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "custom_raises": (
        "ADK marks a metric whose function raises not_evaluated (the case can pass); evalbot reports `error`",
        {"criteria": {"tool_trajectory_avg_score": 1.0, "cm_raises": 0.5},
         "custom_metrics": {"cm_raises": _entry("raises_on_multi_turn")}}),
    "custom_no_per_invocation": (
        "ADK aborts the whole run when a metric returns no per-invocation results; evalbot reports `error` on the"
        " case and scores the rest",
        {"criteria": {"tool_trajectory_avg_score": 1.0, "cm_no_per_invocation": 0.5},
         "custom_metrics": {"cm_no_per_invocation": _entry("no_per_invocation")}}),
}


async def adk_evaluate(eval_set: Any, actuals: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """ADK's verdicts with the config's custom metrics registered from the config itself."""
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.evaluation.base_eval_service import (
        EvaluateConfig,
        EvaluateRequest,
        InferenceResult,
        InferenceStatus,
    )
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService
    from google.adk.evaluation.metric_evaluator_registry import (
        DEFAULT_METRIC_EVALUATOR_REGISTRY,
        register_custom_metrics_from_config,
    )

    eval_config = EvalConfig.model_validate(config)
    registry = register_custom_metrics_from_config(eval_config, DEFAULT_METRIC_EVALUATOR_REGISTRY.fork())
    metrics = [m for m in get_eval_metrics_from_config(eval_config) if m.metric_name in config["criteria"]]
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app_name=APP_NAME, eval_set_id=eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(app_name=APP_NAME, eval_set_id=eval_set.eval_set_id, eval_case=case)
    service = LocalEvalService(
        root_agent=LlmAgent(name="unused_agent"), eval_sets_manager=manager, metric_evaluator_registry=registry
    )
    inference_results = [
        InferenceResult(
            app_name=APP_NAME, eval_set_id=eval_set.eval_set_id, eval_case_id=case.eval_id,
            inferences=[Invocation.model_validate(i) for i in actuals[case.eval_id]],
            session_id=None, status=InferenceStatus.SUCCESS,
        )
        for case in eval_set.eval_cases
    ]
    request = EvaluateRequest(
        inference_results=inference_results, evaluate_config=EvaluateConfig(eval_metrics=metrics, parallelism=1)
    )
    cases: dict[str, Any] = {}
    async for result in service.evaluate(evaluate_request=request):
        cases[result.eval_id] = {
            "final_status": _status(result.final_eval_status),
            "metrics": {m.metric_name: _metric_record(result, m.metric_name)
                        for m in result.overall_eval_metric_results},
        }
    return cases


def main() -> None:
    import google.adk

    version = google.adk.__version__
    for name, cfg in {**CUSTOM_CONFIGS, **{k: v for k, (_, v) in DEVIATION_CONFIGS.items()}}.items():
        _dump(CONFIGS / f"{name}.json", cfg)
    count = metrics = 0
    for sample in SAMPLES_USED:
        eval_set_path = str(SAMPLES / SAMPLE_SETS[sample])
        eval_set, _ = load_eval_set(eval_set_path)
        for variant in VARIANTS:
            actuals_path = ACTUALS / f"{sample}__{variant}.json"
            if not actuals_path.exists():
                continue
            actuals = json.loads(actuals_path.read_text(encoding="utf-8"))
            for cfg_name, cfg in CUSTOM_CONFIGS.items():
                cases = asyncio.run(adk_evaluate(eval_set, actuals, cfg))
                _dump(OUT / f"{sample}__{variant}__{cfg_name}.json", {
                    "adk_version": version, "evalset": eval_set_path, "actuals": str(actuals_path),
                    "config_path": str(CONFIGS / f"{cfg_name}.json"), "cases": cases,
                })
                count += 1
                metrics += sum(len(c["metrics"]) for c in cases.values())
    sample = "v118_simple_multi_turn"  # multi-turn cases, where both deviations trigger
    eval_set_path = str(SAMPLES / SAMPLE_SETS[sample])
    eval_set, _ = load_eval_set(eval_set_path)
    actuals_path = ACTUALS / f"{sample}__expected.json"
    actuals = json.loads(actuals_path.read_text(encoding="utf-8"))
    for cfg_name, (behaviour, cfg) in DEVIATION_CONFIGS.items():
        golden: dict[str, Any] = {
            "adk_version": version, "evalset": eval_set_path, "actuals": str(actuals_path),
            "config_path": str(CONFIGS / f"{cfg_name}.json"), "evalbot_behaviour": behaviour,
            "adk_error": None, "cases": None,
        }
        try:
            golden["cases"] = asyncio.run(adk_evaluate(eval_set, actuals, cfg))
        except Exception as exc:
            golden["adk_error"] = f"{type(exc).__name__}: {exc}"
        _dump(OUT / "deviations" / f"{cfg_name}.json", golden)
    print(f"{count} goldens, {metrics} case-metric results, {len(DEVIATION_CONFIGS)} deviations (google-adk {version})")


if __name__ == "__main__":
    main()
