"""Issue 26's "done when": a config naming every ADK 2.13 metric that takes a threshold (the 13 of its
``PrebuiltMetrics``; the 4 efficiency metrics are reported without being named) and every Vertex name evalbot
serves loads and builds with zero unknown-criterion or configuration errors, with or without a judge."""

from __future__ import annotations

import pytest

from evalbot.criteria import CRITERIA, INFORMATIONAL, build_criteria
from evalbot.criteria.base import BuildContext
from evalbot.formats.config import parse_config
from tests.fakes.judged import judged

ADK_2_13 = {  # google.adk.evaluation.eval_metrics.PrebuiltMetrics, 2.13.0
    "tool_trajectory_avg_score": 1.0, "response_evaluation_score": 3.5, "response_match_score": 0.8,
    "safety_v1": 0.8, "final_response_match_v2": 0.8, "rubric_based_final_response_quality_v1": 0.8,
    "hallucinations_v1": 0.8, "rubric_based_tool_use_quality_v1": 0.8, "per_turn_user_simulator_quality_v1": 0.8,
    "multi_turn_task_success_v1": 0.8, "multi_turn_trajectory_quality_v1": 0.8, "multi_turn_tool_use_quality_v1": 0.8,
    "rubric_based_multi_turn_trajectory_quality_v1": 0.8,
}
VERTEX = ["rouge_1", "rouge_2", "rouge_l", "rouge_l_sum", "bleu", "exact_match", "tool_call_valid", "tool_name_match",
          "tool_parameter_key_match", "tool_parameter_kv_match", "trajectory_exact_match", "trajectory_in_order_match",
          "trajectory_any_order_match", "trajectory_precision", "trajectory_recall"]


@pytest.mark.parametrize("with_judge", [False, True])
def test_every_adk_and_vertex_name_loads(with_judge: bool) -> None:
    """All 13 + the Vertex names: registered, and no criterion of the config is an error."""
    assert len(ADK_2_13) == 13 and set(ADK_2_13) | set(VERTEX) <= set(CRITERIA)
    assert {"tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1"} == set(
        INFORMATIONAL)
    criteria = {**ADK_2_13, **{name: None for name in VERTEX}}
    config = parse_config({"criteria": {k: {"threshold": v} for k, v in criteria.items()}}, "test_config.json")
    with judged() as (_, stack):
        _, infos = build_criteria(config, BuildContext(judge=stack if with_judge else None))
    assert [(i.name, i.error) for i in infos if i.error] == []
    assert {i.name for i in infos} >= set(criteria)
