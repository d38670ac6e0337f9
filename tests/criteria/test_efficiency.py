"""ADK's informational efficiency metrics: values in details, ADK's aggregation rules, parity with ADK's goldens."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evalbot.criteria import INFORMATIONAL, build_criteria
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import CriterionSpec, parse_config
from evalbot.load import load_actuals
from evalbot.results import MetricResult

REPO = Path(__file__).resolve().parents[2]
GOLDENS = REPO / "tests" / "data" / "adk_parity" / "goldens"
NAMES = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")


def event(usage: dict[str, Any] | None = None, model: str | None = None, calls: int = 0) -> dict[str, Any]:
    """An invocation event with optional usage metadata, model version and function calls."""
    parts: list[dict[str, Any]] = [{"function_call": {"name": f"t{i}", "args": {}}} for i in range(calls)]
    parts = parts or [{"text": "x"}]
    out: dict[str, Any] = {"author": "agent", "content": {"role": "model", "parts": parts}}
    if usage is not None:
        out["usage_metadata"] = usage
    if model is not None:
        out["model_version"] = model
    return out


def events_inv(*events: dict[str, Any], **extra: Any) -> Invocation:
    """An invocation in ADK's recorded-events form."""
    return Invocation.model_validate(
        {"user_content": {"parts": [{"text": "q"}]}, "intermediate_data": {"invocation_events": list(events)}, **extra}
    )


def uses_inv(n: int, **extra: Any) -> Invocation:
    """An invocation in the hand-written ``tool_uses`` form with n calls."""
    calls = [{"name": "t", "args": {"i": i}} for i in range(n)]
    return Invocation.model_validate(
        {"user_content": {"parts": [{"text": "q"}]}, "intermediate_data": {"tool_uses": calls}, **extra}
    )


def measure(name: str, *actual: Invocation) -> MetricResult:
    """One efficiency metric on one case."""
    criterion = INFORMATIONAL[name](CriterionSpec(name, None), BuildContext())
    result = criterion.evaluate(CaseInput("s", EvalCase(eval_id="c", conversation=[]), list(actual)))
    assert isinstance(result, MetricResult)
    return result


def values(result: MetricResult) -> list[Any]:
    """Per-invocation values."""
    return [(p.details or {}).get("value") for p in result.per_invocation]


def test_always_added_informational_never_scored() -> None:
    """The four metrics are added to every eval set, informational, with a null score."""
    config = parse_config({"criteria": {"tool_trajectory_avg_score": 1.0}}, None)
    _, infos = build_criteria(config, BuildContext())
    assert [i.name for i in infos] == ["tool_trajectory_avg_score", *NAMES]
    result = measure("tool_call_count_v1", uses_inv(3), uses_inv(0))
    assert (result.score, result.status, result.details) == (None, "informational", {"value": 1.5})
    assert values(result) == [3.0, 0.0] and {p.status for p in result.per_invocation} == {"informational"}


def test_inference_calls_count_events_with_usage_or_model_version() -> None:
    """Events with usage metadata (even empty) or a model version count; hand-written data has no value."""
    result = measure("inference_call_count_v1", events_inv(event({}), event(model="m"), event()), uses_inv(1))
    assert values(result) == [2.0, None] and result.details == {"value": 2.0}
    none = measure("inference_call_count_v1", uses_inv(1))
    assert none.status == "informational" and none.details == {"value": None}
    assert "records its events" in (none.reason or "")


def test_token_usage_sums_events_and_keeps_unreported_counts_null() -> None:
    """input = prompt + tool-use, output = candidates + thoughts; camelCase keys read; unreported stays null."""
    inv = events_inv(
        event({"prompt_token_count": 100, "candidates_token_count": 10}),
        event({"promptTokenCount": 50, "toolUsePromptTokenCount": 5, "thoughtsTokenCount": 3}),
        event({"total_token_count": 999}),
    )
    result = measure("token_usage_v1", inv)
    assert result.per_invocation[0].details == {
        "value": 168.0,
        "token_usage_details": {
            "total_tokens": 168, "input_tokens": 155, "prompt_tokens": 150, "tool_use_tokens": 5,
            "output_tokens": 13, "candidates_tokens": 10, "reasoning_tokens": 3,
        },
    }


def test_token_usage_case_mean_divides_by_every_invocation() -> None:
    """ADK's special rule: a count an invocation did not report counts as 0 in the case mean."""
    first = events_inv(event({"prompt_token_count": 10, "candidates_token_count": 2, "thoughts_token_count": 4}))
    second = events_inv(event({"prompt_token_count": 20, "candidates_token_count": 4}))
    result = measure("token_usage_v1", first, second, uses_inv(0))
    assert result.details == {
        "value": 40 / 3,
        "token_usage_details": {
            "total_tokens": 40 / 3, "input_tokens": 10.0, "prompt_tokens": 10.0,
            "output_tokens": 10 / 3, "candidates_tokens": 2.0, "reasoning_tokens": 4 / 3,
        },
    }
    assert values(result) == [16, 24, None]


def test_invocation_duration_split_and_rounding() -> None:
    """Framework time = total - model - tool (clamped, ms-rounded); the case mean skips untimed invocations."""
    result = measure(
        "invocation_duration_v1",
        uses_inv(0, duration=1.0, model_duration=0.7, tool_duration=0.4),
        uses_inv(0, duration=2.0005),
        uses_inv(0),
    )
    assert values(result) == [1.0, 2.0005, None]
    assert result.per_invocation[0].details == {
        "value": 1.0,
        "duration_details": {"total_seconds": 1.0, "model_seconds": 0.7, "tool_seconds": 0.4, "framework_seconds": 0.0},
    }
    assert result.details == {
        "value": 1.5,
        "duration_details": {"total_seconds": 1.5, "model_seconds": 0.7, "tool_seconds": 0.4, "framework_seconds": 0.0},
    }


def test_no_invocations() -> None:
    """A case without invocations reports no value and says why."""
    result = measure("tool_call_count_v1")
    assert result.details == {"value": None} and result.reason == "the case has no invocations"


@cache
def _golden_inputs() -> list[tuple[str, dict[str, Any]]]:
    """(actuals path, golden) for every distinct actuals file whose golden includes efficiency metrics."""
    seen: dict[str, dict[str, Any]] = {}
    for path in sorted(GOLDENS.glob("*__*__*.json")):
        golden = json.loads(path.read_text(encoding="utf-8"))
        if golden.get("efficiency_metrics_included") and golden["actuals"] not in seen:
            seen[golden["actuals"]] = golden
    return sorted(seen.items())


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    return math.isclose(a, b, rel_tol=0.0, abs_tol=1e-9)


def _same_breakdown(adk: dict[str, Any], ours: dict[str, Any]) -> bool:
    return set(adk) == set(ours) and all(_close(v, ours[k]) for k, v in adk.items())


@pytest.mark.skipif(not GOLDENS.is_dir(), reason="ADK parity goldens not present")
def test_values_and_breakdowns_equal_adk_goldens() -> None:
    """On every recorded actuals file, values and token/duration breakdowns equal google-adk 2.13.0's."""
    inputs = _golden_inputs()
    assert len(inputs) > 100
    problems: list[str] = []
    compared = 0
    for actuals_path, golden in inputs:
        actuals = load_actuals(REPO / actuals_path)
        for case_id, adk_case in golden["cases"].items():
            found = next(v for (_, eval_id), v in actuals.entries.items() if eval_id == case_id)
            assert isinstance(found, list)
            for name in NAMES:
                adk, ours = adk_case["metrics"][name], measure(name, *found)
                compared += 1
                assert ours.details is not None
                pairs = [(adk, ours.details)] + [
                    (a, o.details or {}) for a, o in zip(adk["per_invocation"], ours.per_invocation, strict=True)
                ]
                for a, o in pairs:
                    ok = _close(a["score"], o["value"]) and all(
                        _same_breakdown(a["details"][k], o[k]) for k in (a.get("details") or {})
                    )
                    if not ok:
                        problems.append(f"{actuals_path} {case_id} {name}: ADK {a} evalbot {o}")
    assert compared > 1000 and not problems, "\n".join(problems[:10])


def test_case_metrics_read_each_invocations_events_once_as_the_per_invocation_rules() -> None:
    """inference_call_count_v1 and token_usage_v1 share one pass over a case's events (CaseInput.actual_model_events);
    their values equal the per-invocation rules on every form: events with usage (empty too), with only a model
    version, with neither, tool_uses, no intermediate data."""
    from evalbot.criteria.efficiency import inference_call_count, inference_call_counts, token_usage, token_usages

    actual = [
        events_inv(event({}), event(model="m"), event(), event({"prompt_token_count": 7}, model="m")),
        events_inv(event(), event(calls=2)),
        events_inv(),
        uses_inv(2),
        Invocation.model_validate({"user_content": {"parts": [{"text": "q"}]}}),
    ]
    case = CaseInput("s", EvalCase(eval_id="c", conversation=[]), actual)
    assert inference_call_counts(case) == [inference_call_count(inv) for inv in actual]
    assert inference_call_counts(case) == [(3.0, {}), (0.0, {}), (0.0, {}), (None, {}), (None, {})]
    assert token_usages(case) == [token_usage(inv) for inv in actual]
    assert [value for value, _ in token_usages(case)] == [7, None, None, None, None]
