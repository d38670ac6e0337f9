"""A Vertex-style pointwise template metric and the case it scores, shared by the criteria tests."""

from __future__ import annotations

from typing import Any

from evalbot.criteria import build_criteria
from evalbot.criteria.base import BuildContext
from evalbot.formats.config import parse_config
from tests.fakes.judged import inv

TEMPLATE = {
    "criteria": {"Follows trajectory": "The response matches the tools that were called."},
    "rating_rubric": {"1": "Follows", "0": "Does not follow"},
    "input_variables": ["prompt", "predicted_trajectory"],
}
CASE = {"eval_id": "c", "conversation": [inv("t", "q", "ref")]}
ACTUAL = [inv("t", "Weather in Paris?", "Sunny.", intermediate_data={
    "tool_uses": [{"name": "get_weather", "args": {"city": "Paris"}}]})]


def pointwise_criteria(options: dict[str, Any], judge: Any) -> list[Any]:
    config = parse_config({"criteria": {"follows": {"threshold": 0.5, **options}}}, "test_config.json")
    built, infos = build_criteria(config, BuildContext(judge=judge))
    assert infos[0].judged is True
    return built


_criteria = pointwise_criteria
