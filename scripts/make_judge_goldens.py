"""Record google-adk's verdicts for evalbot's judged-criteria parity goldens (tests/data/judge_parity/*.json).

Run with ADK's virtualenv (google-adk 2.13.0), from the repository root::

    /work/adkvenv/bin/python scripts/make_judge_goldens.py [--out tests/data/judge_parity]
    /work/adkvenv/bin/python scripts/make_judge_goldens.py --set trajectory   # tests/data/judge_parity/trajectory

Each scenario below is an eval case, its actual invocations, a criterion config and *scripted judge answers* keyed
by tag: every judged text carries a tag like ``@@T1@@`` and the fake Gemini server (tests/fakes/fake_gemini.py)
answers a prompt from the list of its last tag. ADK's own ``LocalEvalService`` runs the criterion against that
server (``GOOGLE_GEMINI_BASE_URL``); its scores and statuses are written next to the inputs. evalbot's parity test
(tests/criteria/test_judge_parity.py) feeds the same answers to evalbot and compares. Scenarios where evalbot
deliberately differs from ADK carry an ``evalbot_expected`` block and a ``deviation`` note.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
warnings.filterwarnings("ignore")

from scripts.judge_parity_scenarios import SCENARIOS  # noqa: E402
from scripts.trajectory_parity_scenarios import scenarios as trajectory_scenarios  # noqa: E402
from tests.fakes.fake_gemini import FakeGemini, TaggedResponder  # noqa: E402

APP = "judge_parity_app"


def _configure(url: str) -> None:
    os.environ["GOOGLE_GEMINI_BASE_URL"] = url
    os.environ["GOOGLE_GENAI_USE_VERTEXAI"] = "false"
    os.environ["GOOGLE_API_KEY"] = "fake-key-for-parity"


async def _run_adk(scenario: dict[str, Any]) -> Any:
    from google.adk.agents.llm_agent import LlmAgent
    from google.adk.evaluation.base_eval_service import (
        EvaluateConfig,
        EvaluateRequest,
        InferenceResult,
        InferenceStatus,
    )
    from google.adk.evaluation.eval_case import EvalCase, Invocation
    from google.adk.evaluation.eval_config import EvalConfig, get_eval_metrics_from_config
    from google.adk.evaluation.in_memory_eval_sets_manager import InMemoryEvalSetsManager
    from google.adk.evaluation.local_eval_service import LocalEvalService

    case = EvalCase.model_validate(scenario["eval_case"])
    actual = [Invocation.model_validate(i) for i in copy.deepcopy(scenario["actual"])]
    if scenario["metric"] == "rubric_based_multi_turn_trajectory_quality_v1":
        _runtime_tools(actual)
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app_name=APP, eval_set_id="parity")
    manager.add_eval_case(app_name=APP, eval_set_id="parity", eval_case=case)
    service = LocalEvalService(root_agent=LlmAgent(name="parity_dummy"), eval_sets_manager=manager)
    metrics = get_eval_metrics_from_config(EvalConfig(criteria={scenario["metric"]: scenario["criterion"]}))
    request = EvaluateRequest(
        inference_results=[
            InferenceResult(app_name=APP, eval_set_id="parity", eval_case_id=case.eval_id, inferences=actual,
                            session_id=None, status=InferenceStatus.SUCCESS)
        ],
        evaluate_config=EvaluateConfig(eval_metrics=metrics, parallelism=1),
    )
    results = [r async for r in service.evaluate(evaluate_request=request)]
    return results[0]


def _runtime_tools(invocations: list[Any]) -> None:
    """Tool declarations as an ADK run holds them (genai Tool objects): read from JSON they stay dicts, on which
    ADK 2.13's trajectory evaluator fails (``'dict' object has no attribute 'function_declarations'``)."""
    from google.genai import types

    for invocation in invocations:
        for details in (invocation.app_details.agent_details.values() if invocation.app_details else []):
            details.tool_declarations = [types.Tool.model_validate(t) if isinstance(t, dict) else t
                                         for t in details.tool_declarations]


def _rubrics(scores: Any) -> list[dict[str, Any]] | None:
    if scores is None:
        return None
    return [{"rubric_id": s.rubric_id, "score": s.score} for s in scores]


def _summarize(result: Any, metric: str) -> dict[str, Any]:
    overall = next(m for m in result.overall_eval_metric_results if m.metric_name == metric)
    per = []
    for entry in result.eval_metric_result_per_invocation:
        m = next((x for x in entry.eval_metric_results if x.metric_name == metric), None)
        if m is None:
            continue
        per.append({"invocation_id": entry.actual_invocation.invocation_id, "score": m.score,
                    "status": m.eval_status.name.lower(), "rubric_scores": _rubrics(m.details.rubric_scores)})
    return {"score": overall.score, "status": overall.eval_status.name.lower(),
            "rubric_scores": _rubrics(overall.details.rubric_scores), "per_invocation": per}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None, help="folder of the goldens (default: tests/data/judge_parity[/SET])")
    parser.add_argument("--only", default=None, help="record only this scenario")
    parser.add_argument("--set", choices=["judged", "trajectory"], default="judged",
                        help="judged: scripts/judge_parity_scenarios.py; trajectory: the seeded scenarios of "
                             "scripts/trajectory_parity_scenarios.py")
    args = parser.parse_args()
    default = ROOT / "tests" / "data" / "judge_parity"
    out = Path(args.out) if args.out else default / "trajectory" if args.set == "trajectory" else default
    chosen = trajectory_scenarios() if args.set == "trajectory" else SCENARIOS
    out.mkdir(parents=True, exist_ok=True)
    from google.adk import version as adk_version

    with FakeGemini() as fake:
        _configure(fake.url)
        for scenario in chosen:
            if args.only and scenario["name"] != args.only:
                continue
            fake.reset()
            responder = TaggedResponder(scenario["answers"])
            fake.responder = responder
            result = asyncio.run(_run_adk(scenario))
            record = {
                **scenario,
                "adk_version": adk_version.__version__,
                "adk": _summarize(result, scenario["metric"]),
                "adk_requests": len(fake.requests),
                "adk_unrouted_prompts": len(responder.unrouted),
            }
            path = out / f"{scenario['name']}.json"
            path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            adk = record["adk"]
            print(f"{scenario['name']:<40} {adk['status']:<14} score={adk['score']} requests={len(fake.requests)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
