"""Run google-adk's own evaluators on an eval set + actuals + config; print the evaluate-phase wall time as JSON.

Executed by bench/bench_judge.py with ADK's interpreter (``/work/adkvenv/bin/python``); the judge is redirected to
a loopback fake through ``GOOGLE_GEMINI_BASE_URL`` in the environment. Uses ADK's defaults: ``LocalEvalService``
with ``EvaluateConfig`` parallelism 4 (cases in parallel) and each metric's ``judge_model_options``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
import warnings

warnings.filterwarnings("ignore")


async def main(eval_set_path: str, actuals_path: str, config_path: str) -> dict[str, object]:
    """Evaluate and time ADK's evaluate phase (imports and setup excluded)."""
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.evaluation.base_eval_service import (
        EvaluateConfig,
        EvaluateRequest,
        InferenceResult,
        InferenceStatus,
    )
    from google.adk.evaluation.eval_case import Invocation
    from google.adk.evaluation.eval_config import get_eval_metrics_from_config, get_evaluation_criteria_or_default
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService

    with open(eval_set_path, encoding="utf-8") as handle:
        eval_set = EvalSet.model_validate_json(handle.read())
    with open(actuals_path, encoding="utf-8") as handle:
        actuals = {k: [Invocation.model_validate(i) for i in v] for k, v in json.load(handle).items()}
    metrics = get_eval_metrics_from_config(get_evaluation_criteria_or_default(config_path))
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app_name="bench", eval_set_id=eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(app_name="bench", eval_set_id=eval_set.eval_set_id, eval_case=case)
    service = LocalEvalService(root_agent=LlmAgent(name="bench_dummy"), eval_sets_manager=manager)
    request = EvaluateRequest(
        inference_results=[
            InferenceResult(app_name="bench", eval_set_id=eval_set.eval_set_id, eval_case_id=c.eval_id,
                            inferences=actuals[c.eval_id], session_id=None, status=InferenceStatus.SUCCESS)
            for c in eval_set.eval_cases
        ],
        evaluate_config=EvaluateConfig(eval_metrics=metrics),
    )
    start = time.perf_counter()
    results = [r async for r in service.evaluate(evaluate_request=request)]
    seconds = time.perf_counter() - start
    statuses: dict[str, int] = {}
    for result in results:
        for metric in result.overall_eval_metric_results:
            key = f"{metric.metric_name}:{metric.eval_status.name.lower()}"
            statuses[key] = statuses.get(key, 0) + 1
    return {"seconds": seconds, "cases": len(results), "statuses": statuses}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("eval_set", metavar="EVALSET.json")
    parser.add_argument("actuals", metavar="ACTUALS.json", help="the agent's runs, {eval_id: [invocations]}")
    parser.add_argument("config", metavar="TEST_CONFIG.json")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.eval_set, args.actuals, args.config))))
