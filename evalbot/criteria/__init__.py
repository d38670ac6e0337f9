"""The registry of criteria by name, and building the configured criteria of an eval set."""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

from evalbot.criteria import (
    bleu,
    custom,
    efficiency,
    exact_match,
    failure,
    final_response_match_v2,
    hallucinations,
    latency,
    multi_turn_task_success,
    multi_turn_tool_use_quality,
    multi_turn_trajectory_quality,
    pointwise_template,
    response_evaluation_score,
    response_match,
    rouge_1,
    rouge_2,
    rouge_l,
    rouge_l_sum,
    rubric_final_response_quality,
    rubric_multi_turn_trajectory_quality,
    rubric_tool_use_quality,
    safety,
    tool_call_valid,
    tool_name_match,
    tool_parameter_key_match,
    tool_parameter_kv_match,
    tool_trajectory,
    trajectory_any_order_match,
    trajectory_exact_match,
    trajectory_in_order_match,
    trajectory_precision,
    trajectory_recall,
    trajectory_single_tool_use,
    user_simulator_quality,
)
from evalbot.criteria.base import IGNORED_OPTIONS, BuildContext, CaseInput, Criterion, CriterionFactory
from evalbot.errors import ConfigError, json_pointer, printable
from evalbot.formats.config import SCALED_THRESHOLDS, CriterionSpec, EvalConfig
from evalbot.results import CriterionInfo, MetricResult

CRITERIA: dict[str, CriterionFactory] = {
    "tool_trajectory_avg_score": tool_trajectory.build,
    "response_match_score": response_match.build,
    "final_response_match_v2": final_response_match_v2.build,
    "rubric_based_final_response_quality_v1": rubric_final_response_quality.build,
    "rubric_based_tool_use_quality_v1": rubric_tool_use_quality.build,
    "rubric_based_multi_turn_trajectory_quality_v1": rubric_multi_turn_trajectory_quality.build,
    "hallucinations_v1": hallucinations.build,
    "per_turn_user_simulator_quality_v1": user_simulator_quality.build,
    "safety_v1": safety.build,
    "response_evaluation_score": response_evaluation_score.build,
    "multi_turn_task_success_v1": multi_turn_task_success.build,
    "multi_turn_trajectory_quality_v1": multi_turn_trajectory_quality.build,
    "multi_turn_tool_use_quality_v1": multi_turn_tool_use_quality.build,
    "trajectory_exact_match": trajectory_exact_match.build,
    "trajectory_in_order_match": trajectory_in_order_match.build,
    "trajectory_any_order_match": trajectory_any_order_match.build,
    "trajectory_precision": trajectory_precision.build,
    "trajectory_recall": trajectory_recall.build,
    "trajectory_single_tool_use": trajectory_single_tool_use.build,
    "rouge_1": rouge_1.build,
    "rouge_2": rouge_2.build,
    "rouge_l": rouge_l.build,
    "rouge_l_sum": rouge_l_sum.build,
    "bleu": bleu.build,
    "exact_match": exact_match.build,
    "tool_call_valid": tool_call_valid.build,
    "tool_name_match": tool_name_match.build,
    "tool_parameter_key_match": tool_parameter_key_match.build,
    "tool_parameter_kv_match": tool_parameter_kv_match.build,
    "latency": latency.build,
    "failure": failure.build,
}
"""Criteria with a threshold, by the name used in ``test_config.json``."""

INFORMATIONAL: dict[str, CriterionFactory] = {
    "tool_call_count_v1": efficiency.build_tool_call_count,
    "inference_call_count_v1": efficiency.build_inference_call_count,
    "token_usage_v1": efficiency.build_token_usage,
    "invocation_duration_v1": efficiency.build_invocation_duration,
}
"""Efficiency metrics ADK always adds; they never affect a verdict and take no threshold."""

JUDGED: set[str] = {
    "final_response_match_v2",
    "rubric_based_final_response_quality_v1",
    "rubric_based_tool_use_quality_v1",
    "rubric_based_multi_turn_trajectory_quality_v1",
    "hallucinations_v1",
    "per_turn_user_simulator_quality_v1",
    "safety_v1",
    "response_evaluation_score",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
}
"""Names of criteria that call an LLM judge or the Vertex AI evaluation service (VERTEX_SERVICE); so does any
criterion with a ``metric_prompt_template`` option."""

LOWER_IS_BETTER: frozenset[str] = frozenset({"latency", "failure"})
"""Built-in criteria on which lower is better: their threshold is a maximum (``results.maximum_status``: seconds,
a failure rate). The one place the direction is decided: the yardstick (a raised maximum loosens), the paired test
of a criterion's mean (a rise is the regression) and every output's words read it through :func:`lower_is_better`.
Every other criterion, and any custom metric, passes at ``score >= threshold``."""

VERTEX_SERVICE: frozenset[str] = frozenset({
    "safety_v1",
    "response_evaluation_score",
    "multi_turn_task_success_v1",
    "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
})
"""The criteria ADK 2.13 sends to the Vertex AI evaluation service, as evalbot does (criteria.vertex_service)."""

TOOL_CALLS: set[str] = {
    "tool_trajectory_avg_score",
    "rubric_based_tool_use_quality_v1",
    "trajectory_exact_match",
    "trajectory_in_order_match",
    "trajectory_any_order_match",
    "trajectory_precision",
    "trajectory_recall",
    "trajectory_single_tool_use",
    "tool_call_valid",
    "tool_name_match",
    "tool_parameter_key_match",
    "tool_parameter_kv_match",
    "tool_call_count_v1",
}
"""Names of criteria about the agent's tool calls: a case failing one shows its calls as a trajectory diff; the
others show expected vs actual responses."""


RUBRIC_READERS: dict[str, str] = {
    rubric_final_response_quality.RUBRIC_TYPE: "rubric_based_final_response_quality_v1",
    rubric_tool_use_quality.RUBRIC_TYPE: "rubric_based_tool_use_quality_v1",
    rubric_multi_turn_trajectory_quality.RUBRIC_TYPE: "rubric_based_multi_turn_trajectory_quality_v1",
}
"""The criterion that reads the case and invocation rubrics of each rubric ``type`` (as in ADK, a rubric without a
type, or of another type, is read by none of them)."""


_CALLS = ("expected_calls", "actual_calls")
_RESPONSES = ("expected_response", "actual_response")
READS: dict[str, tuple[str, ...]] = {
    "tool_trajectory_avg_score": _CALLS,
    "response_match_score": _RESPONSES,
    "final_response_match_v2": _RESPONSES,
    "rubric_based_final_response_quality_v1": ("actual_response",),
    "rubric_based_tool_use_quality_v1": ("actual_calls",),
    "hallucinations_v1": ("actual_response",),
    "safety_v1": ("actual_response",),
    safety.FALLBACK_NAME: ("actual_response",),
    "response_evaluation_score": ("actual_response",),
    "trajectory_exact_match": _CALLS,
    "trajectory_in_order_match": _CALLS,
    "trajectory_any_order_match": _CALLS,
    "trajectory_precision": _CALLS,
    "trajectory_recall": _CALLS,
    "trajectory_single_tool_use": ("actual_calls",),
    "rouge_1": _RESPONSES,
    "rouge_2": _RESPONSES,
    "rouge_l": _RESPONSES,
    "rouge_l_sum": _RESPONSES,
    "bleu": _RESPONSES,
    "exact_match": _RESPONSES,
}
"""The parts of a case each criterion cannot score without: ``expected_calls``, ``expected_response`` (the expected
tool calls and final response) and ``actual_calls``, ``actual_response`` (the agent's).  A dataset lacking the
column of one of them cannot be scored on that criterion (formats.vertex.column_problems).  The tool-call metrics
read the calls from the response texts or from the trajectories, so no one column is needed (vertex_tool_call)."""


def about_tool_calls(name: str) -> bool:
    """Whether criterion ``name`` is about tool calls: the registry says so for its criteria; a name it does not know
    (a custom metric, or a report from another version) is taken to be when it mentions a trajectory or a tool."""
    if name in CRITERIA or name in INFORMATIONAL:
        return name in TOOL_CALLS
    return "trajectory" in name or "tool" in name


def lower_is_better(name: str, custom: str | None = None) -> bool:
    """Whether a lower value is better on criterion ``name`` (its threshold a maximum): a built-in criterion in
    LOWER_IS_BETTER; a custom metric (``custom``: its function, as ``CriterionInfo.custom`` names it) is scored
    higher-is-better whatever its name."""
    return custom is None and name in LOWER_IS_BETTER


@dataclass(frozen=True)
class BrokenCriterion:
    """A configured criterion that cannot run: every case gets an ``error`` on it, with the reason."""

    name: str
    threshold: float | None
    reason: str
    on_case: str = "not configured correctly (the eval set's error says why)"
    """The reason given on each case."""

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Mark the case: the problem itself is reported once, as an error of the eval set."""
        return MetricResult(score=None, status="error", threshold=self.threshold, reason=self.on_case)


@dataclass(frozen=True)
class NotRun:
    """A custom metric whose code this run must not execute (the event is not on the allow-list): every case is
    ``not_evaluated`` with the reason; compare puts it in the headline and does not pass the gate."""

    name: str
    threshold: float | None
    reason: str

    def evaluate(self, case: CaseInput) -> MetricResult:
        """Not evaluated, saying why."""
        return MetricResult(score=None, status="not_evaluated", threshold=self.threshold, reason=self.reason)


CONFIG_ERROR_ON_CASE = BrokenCriterion.on_case
"""A misconfigured criterion's reason on each case; the full reason is reported once for the eval set."""


def fingerprint(spec: CriterionSpec, ignored: Sequence[str] = (), definition: dict[str, str] | None = None) -> str:
    """Stable hash of a criterion's name, threshold and options it reads (for baseline comparison).

    ``definition`` adds what else defines the criterion: a custom metric's function path and source hash.
    """
    options = {k: v for k, v in spec.options.items() if k not in ignored}
    parts: list[object] = [spec.name, spec.threshold, options]
    if definition:
        parts.append(definition)
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _build_custom(spec: CriterionSpec, config: EvalConfig, ctx: BuildContext, origin: str | None) -> Criterion:
    where = f"{config.path or '<config>'}:{json_pointer(['custom_metrics', spec.name])}"
    if ctx.custom_code_refused is not None:
        return NotRun(spec.name, spec.threshold, ctx.custom_code_refused)
    try:
        return custom.build(spec, config.custom_metrics[spec.name], origin, ctx.custom_code_refused, ctx.workers)
    except ConfigError as exc:
        return BrokenCriterion(spec.name, spec.threshold, f"{exc} ({where}; criterion at {spec.source})")


def unknown_criterion(name: str, where: str = "") -> str:
    """Why ``name`` (at ``where``) is no criterion: the closest known names (difflib), and where the full list is."""
    close = difflib.get_close_matches(name.lower(), sorted(CRITERIA), n=3, cutoff=0.8)
    guess = f"; did you mean {' or '.join(f'`{c}`' for c in close)}?" if close else ""
    return printable(f"unknown criterion {name!r}{where}{guess} (`evalbot criteria` lists the {len(CRITERIA)} known names)")


def _build_one(spec: CriterionSpec, ctx: BuildContext, config: EvalConfig, origin: str | None) -> Criterion:
    where = f" ({spec.source})"
    if spec.error:
        return BrokenCriterion(spec.name, spec.threshold, spec.error + where)
    if spec.name in config.custom_metrics:
        return _build_custom(spec, config, ctx, origin)
    if spec.name in INFORMATIONAL:
        return BrokenCriterion(
            spec.name, spec.threshold, f"{spec.name} is informational and always reported; remove it from criteria"
        )
    factory = CRITERIA.get(spec.name)
    if factory is None and "metric_prompt_template" in spec.options:
        factory = pointwise_template.build  # a Vertex-style judge metric declared under its own name
    if factory is None:
        return BrokenCriterion(spec.name, spec.threshold, unknown_criterion(spec.name, where))
    try:
        return factory(spec, ctx)
    except ConfigError as exc:
        return BrokenCriterion(spec.name, spec.threshold, f"{exc}{where}")


def _ignored_notice(spec: CriterionSpec, ignored: Sequence[tuple[str, str]]) -> str | None:
    if not ignored:
        return None
    keys = ", ".join(f"{printable(key)!r}{hint}" for key, hint in ignored)
    return (
        f"{spec.source}: {spec.name} does not read {keys}; ignored, as ADK ignores "
        f"{'it' if len(ignored) == 1 else 'them'} (the scores are ADK's)"
    )


def build_criteria(
    config: EvalConfig, ctx: BuildContext, origin: str | None = None
) -> tuple[list[Criterion], list[CriterionInfo]]:
    """The configured criteria followed by the informational ones, and a description of each for the report.

    ``origin`` is the eval set's path: custom metrics are imported from its repository (see criteria.custom).
    """
    built: list[Criterion] = []
    infos: list[CriterionInfo] = []
    for spec in config.criteria:
        ignored: list[tuple[str, str]] = []
        token = IGNORED_OPTIONS.set(ignored)
        try:
            criterion = _build_one(spec, ctx, config, origin)
        finally:
            IGNORED_OPTIONS.reset(token)
        built.append(criterion)
        error = criterion.reason if isinstance(criterion, BrokenCriterion) else None
        definition = criterion.identity if isinstance(criterion, custom.CustomMetric) else None
        if definition is None and spec.name in config.custom_metrics:
            definition = {"custom_metric": "unresolved"}
        infos.append(
            CriterionInfo(
                name=criterion.name,  # safety_v1's judge fallback is reported under its own name
                threshold=criterion.threshold if definition or spec.name in SCALED_THRESHOLDS else spec.threshold,
                options=spec.options,
                judged=spec.name in JUDGED or "metric_prompt_template" in spec.options,
                fingerprint=fingerprint(spec, [key for key, _ in ignored], definition),
                error=error,
                notice=(f"{spec.name}: {criterion.reason}" if isinstance(criterion, NotRun)
                        else _ignored_notice(spec, ignored)),
                custom=str(definition.get("function", "unresolved")) if definition else None,
                custom_code=str(definition["code_sha256"]) if definition and "code_sha256" in definition else None,
            )
        )
    configured = {spec.name for spec in config.criteria}
    for name, factory in INFORMATIONAL.items():
        if name not in configured:
            spec = CriterionSpec(name, None)
            built.append(factory(spec, ctx))
            infos.append(CriterionInfo(name=name, fingerprint=fingerprint(spec)))
    return built, infos
