#!/usr/bin/env python3
"""Regenerate the ADK parity goldens under tests/data/adk_parity/ by running google-adk's own evaluator.

Run from anywhere with the ADK virtualenv (google-adk 2.13.0, rouge-score 0.1.2, nltk 3.10)::

    /work/adkvenv/bin/python scripts/make_adk_goldens.py                 # everything
    /work/adkvenv/bin/python scripts/make_adk_goldens.py --public-only   # only the public corpus (samples/public)

For every sample eval set in tests/data/adk_parity/samples/ it derives deterministic "actuals" files
({eval_id: [Invocation JSON, ...]}) from the expected conversation (unchanged, perturbed, and in the
``invocation_events`` form that ADK inference emits), feeds each through ADK's ``LocalEvalService``
evaluate phase under several criteria configs, and records ADK's scores and statuses as JSON goldens.
It also records ADK's ROUGE tokenizer output and ROUGE-1 scores for a fixed list of strings.

Everything is deterministic (no clock, no randomness, sorted keys), so a rerun gives an empty diff.
The parity test (tests/parity/test_adk_parity.py) replays the same inputs through evalbot.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import os
import re
import shutil
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)  # ADK logs the exceptions it turns into not_evaluated

REPO = Path(__file__).resolve().parent.parent
BASE = Path("tests/data/adk_parity")
SAMPLES = BASE / "samples"
ACTUALS = BASE / "actuals"
CONFIGS = BASE / "configs"
GOLDENS = BASE / "goldens"
APP_NAME = "evalbot_parity"
ROOT_AGENT = "root_agent"

# sample name -> eval set path relative to SAMPLES (test_config.json, if any, sits next to it).
SAMPLE_SETS: dict[str, str] = {
    "v118_order_query": "evalset_v1.18/tests/integration/fixture/ecommerce_customer_service_agent/"
    "order_query.test.json",
    "v118_roll_die": "evalset_v1.18/tests/integration/fixture/hello_world_agent/roll_die.test.json",
    "v118_simple_multi_turn": "evalset_v1.18/tests/integration/fixture/home_automation_agent/test_files/"
    "simple_multi_turn_conversation.test.json",
    "v118_trip_inquiry": "evalset_v1.18/tests/integration/fixture/trip_planner_agent/"
    "trip_inquiry_multi_turn.test.json",
    "v118_bigquery_simple": "evalset_v1.18/tests/integration/fixture/bigquery_agent/simple.test.json",
    "legacy_order_query": "legacy_v0.5.0/tests/integration/fixture/ecommerce_customer_service_agent/"
    "order_query.test.json",
    "legacy_dependent_tool_calls": "legacy_v0.5.0/tests/integration/fixture/home_automation_agent/"
    "test_files/dependent_tool_calls.test.json",
    "main_elicitation_flow": "main_index/tests/integration/fixture/elicitation_agent/elicitation_flow.test.json",
    "synthetic_edge_cases": "synthetic/edge_cases.evalset.json",
    "synthetic_float_boundary": "synthetic/float_boundary/float_boundary.evalset.json",
}

# Hand-picked actual responses whose per-invocation ROUGE-1 F values average to within one ulp of a
# threshold: ADK sums them with a running float total, so the exact summation order decides the verdict.
BOUNDARY_RESPONSES: dict[str, list[str]] = {
    "mean_just_below_half": ["alpha zzz0", "alpha zzz0 zzz1", "alpha zzz0 zzz1"],  # 2/3, 1/2, 1/3
    "mean_just_above_0_8": ["alpha zzz0", "alpha beta zzz0", "alpha beta gamma delta epsilon zeta eta zzz0"],
    "mean_just_below_0_9": ["alpha", "alpha beta gamma delta epsilon zeta zzz0 zzz1",
                            "alpha beta gamma delta epsilon zeta eta theta iota zzz0 zzz1"],
}
SAMPLE_EXTRA_CONFIGS: dict[str, dict[str, dict[str, Any]]] = {
    "synthetic_float_boundary": {
        "rouge_080": {"criteria": {"response_match_score": 0.8}},
        "rouge_090": {"criteria": {"response_match_score": 0.9}},
    },
}

# Extra trajectory-only configs (ADK appends its informational efficiency metrics to every config).
TRAJ_CONFIGS: dict[str, dict[str, Any]] = {
    f"traj_{mt.lower()}{'_ignore_args' if ignore else ''}": {
        "criteria": {
            "tool_trajectory_avg_score": {
                "threshold": 0.5 if ignore else 1.0,
                "match_type": mt,
                "ignore_args": ignore,
            }
        }
    }
    for ignore in (False, True)
    for mt in ("EXACT", "IN_ORDER", "ANY_ORDER")
}

EFFICIENCY_METRICS = ("tool_call_count_v1", "inference_call_count_v1", "token_usage_v1", "invocation_duration_v1")
ALL_TRAJ = list(TRAJ_CONFIGS)
MATCH_TYPES_ONLY = [n for n in TRAJ_CONFIGS if not n.endswith("_ignore_args")]
ARG_SENSITIVE = {"expected", "tool_renamed", "events_args_null", "events_arg_float"}

Inv = dict[str, Any]
Actuals = dict[str, list[Inv]]

# --------------------------------------------------------------------------------------------------
# Perturbations: each takes one case's invocations (tool_uses form) and returns a changed deep copy.
# --------------------------------------------------------------------------------------------------
EXTRA_CALL = {"name": "lookup_extra", "args": {"q": "extra", "limit": 3}}
MULTISCRIPT_FRAGMENTS = (
    "今天天气很好，我们去公园散步吧。",
    "東京の天気は晴れです。ありがとうございます",
    "カタカナ と ひらがな",
    "서울의 날씨는 맑습니다",
    "สวัสดีครับ วันนี้อากาศดี",
    "Le café est naïve et déjà fermé.",
    "It's 10,000 steps; they've cancelled device_2.",
    "ភាសាខ្មែរ မြန်မာဘာသာ",
)


def _calls(inv: Inv) -> list[dict[str, Any]]:
    idata = inv.setdefault("intermediate_data", {})
    if "invocation_events" in idata:  # a conversation recorded in events form: its tool calls stay as they are
        return []
    return idata.setdefault("tool_uses", [])  # type: ignore[no-any-return]


def _first_inv_with_calls(invs: list[Inv], min_calls: int = 1) -> Inv | None:
    return next((i for i in invs if len(_calls(i)) >= min_calls), None)


def _first_call_with_args(invs: list[Inv]) -> dict[str, Any] | None:
    return next((c for i in invs for c in _calls(i) if c.get("args")), None)


def p_tools_reordered(invs: list[Inv]) -> None:
    inv = _first_inv_with_calls(invs, 2)
    if inv is not None:
        inv["intermediate_data"]["tool_uses"] = list(reversed(_calls(inv)))


def p_tools_extra_call(invs: list[Inv]) -> None:
    inv = _first_inv_with_calls(invs) or invs[0]
    calls = _calls(inv)
    calls.insert(len(calls) // 2, copy.deepcopy(EXTRA_CALL))


def p_tools_extra_call_every_turn(invs: list[Inv]) -> None:
    for inv in invs:
        _calls(inv).append(copy.deepcopy(EXTRA_CALL))


def p_tools_missing_call(invs: list[Inv]) -> None:
    inv = _first_inv_with_calls(invs)
    if inv is not None:
        _calls(inv).pop()


def p_tools_all_removed(invs: list[Inv]) -> None:
    for inv in invs:
        inv["intermediate_data"] = {}


def p_tools_repeated_call(invs: list[Inv]) -> None:
    inv = _first_inv_with_calls(invs)
    if inv is not None:
        calls = _calls(inv)
        calls.insert(1, copy.deepcopy(calls[0]))


def p_tool_renamed(invs: list[Inv]) -> None:
    inv = _first_inv_with_calls(invs)
    if inv is not None:
        call = _calls(inv)[-1]
        call["name"] = call["name"].upper()


def p_arg_changed(invs: list[Inv]) -> None:
    call = _first_call_with_args(invs)
    if call is not None:
        key = sorted(call["args"])[0]
        value = call["args"][key]
        call["args"][key] = f"{value}_changed" if isinstance(value, str) else [value]


def _numeric_target(invs: list[Inv]) -> tuple[dict[str, Any], str, int] | None:
    """First (args, key, n) whose value is numeric-like; else the first arg with n = 1."""
    first: tuple[dict[str, Any], str, int] | None = None
    for inv in invs:
        for call in _calls(inv):
            for key, value in sorted((call.get("args") or {}).items()):
                if isinstance(value, (bool, int, float)) and float(value).is_integer():
                    return call["args"], key, int(value)
                if isinstance(value, str) and re.fullmatch(r"-?\d+", value):
                    return call["args"], key, int(value)
                if first is None:
                    first = (call["args"], key, 1)
    return first


def _typed_arg(kind: str) -> Callable[[list[Inv]], None]:
    def apply(invs: list[Inv]) -> None:
        target = _numeric_target(invs)
        if target is not None:
            args, key, n = target
            args[key] = {"int": n, "float": float(n), "str": str(n), "bool": n != 0}[kind]

    return apply


def p_arg_types_swapped_all(invs: list[Inv]) -> None:
    """int -> float, float -> int, bool -> int, numeric string -> int, everywhere."""
    for inv in invs:
        for call in _calls(inv):
            args = call.get("args") or {}
            for key, value in list(args.items()):
                if isinstance(value, bool):
                    args[key] = int(value)
                elif isinstance(value, int):
                    args[key] = float(value)
                elif isinstance(value, float) and value.is_integer():
                    args[key] = int(value)
                elif isinstance(value, str) and re.fullmatch(r"-?\d+", value):
                    args[key] = int(value)


def p_args_null(invs: list[Inv]) -> None:
    call = _first_call_with_args(invs)
    if call is not None:
        call["args"] = None
    for inv in invs:  # and calls that had {} get an explicit null too
        for c in _calls(inv):
            if c.get("args") == {}:
                c["args"] = None


def p_args_empty(invs: list[Inv]) -> None:
    call = _first_call_with_args(invs)
    if call is not None:
        call["args"] = {}
    for inv in invs:  # and calls without args get {}
        for c in _calls(inv):
            if c.get("args") is None:
                c["args"] = {}


def p_arg_extra(invs: list[Inv]) -> None:
    call = _first_call_with_args(invs)
    if call is not None:
        call["args"]["extra_arg"] = "unexpected"


def p_arg_keys_reordered(invs: list[Inv]) -> None:
    for inv in invs:
        for call in _calls(inv):
            if call.get("args"):
                call["args"] = dict(reversed(list(call["args"].items())))


def _texts(inv: Inv) -> list[dict[str, Any]]:
    parts = (inv.get("final_response") or {}).get("parts") or []
    return [p for p in parts if p.get("text")]


def _reword(text: str) -> str:
    words = text.split()
    if len(words) >= 2:
        return " ".join("banana" if i % 3 == 1 else w for i, w in enumerate(words))
    return text[: max(1, len(text) // 2)] + " banana"


def p_response_changed(invs: list[Inv]) -> None:
    for inv in invs:
        for part in _texts(inv):
            part["text"] = _reword(part["text"])


def p_response_empty(invs: list[Inv]) -> None:
    for idx, inv in enumerate(invs):
        form = idx % 3
        if form == 0:
            inv["final_response"] = {"role": "model", "parts": [{"text": ""}]}
        elif form == 1:
            inv.pop("final_response", None)
        else:
            inv["final_response"] = {"role": "model", "parts": []}


def p_response_multiscript_appended(invs: list[Inv]) -> None:
    for idx, inv in enumerate(invs):
        fragment = MULTISCRIPT_FRAGMENTS[idx % len(MULTISCRIPT_FRAGMENTS)]
        texts = _texts(inv)
        if texts:
            texts[-1]["text"] = f"{texts[-1]['text']} {fragment}"
        else:
            inv["final_response"] = {"role": "model", "parts": [{"text": fragment}]}


def p_response_multiscript_replaced(invs: list[Inv]) -> None:
    for idx, inv in enumerate(invs):
        fragment = MULTISCRIPT_FRAGMENTS[(idx + 3) % len(MULTISCRIPT_FRAGMENTS)]
        inv["final_response"] = {"role": "model", "parts": [{"text": fragment}]}


def p_response_thought_part(invs: list[Inv]) -> None:
    for inv in invs:
        fr = inv.setdefault("final_response", {"role": "model", "parts": []})
        parts = fr.get("parts") or []
        fr["parts"] = [{"text": "Thinking: the user wants the status first.", "thought": True}, *parts]


def p_response_split_parts(invs: list[Inv]) -> None:
    for inv in invs:
        texts = _texts(inv)
        if texts:
            words = texts[0]["text"].split(" ")
            half = len(words) // 2
            if half:
                fr = inv["final_response"]
                idx = fr["parts"].index(texts[0])
                fr["parts"][idx : idx + 1] = [
                    {"text": " ".join(words[:half])},
                    {"text": None},
                    {"text": " ".join(words[half:])},
                ]


def p_response_case_punct(invs: list[Inv]) -> None:
    for inv in invs:
        for part in _texts(inv):
            part["text"] = "¡" + part["text"].upper().replace(" ", " -- ") + "!!"


TOOL_VARIANTS: dict[str, Callable[[list[Inv]], None]] = {
    "tools_reordered": p_tools_reordered,
    "tools_extra_call": p_tools_extra_call,
    "tools_extra_call_every_turn": p_tools_extra_call_every_turn,
    "tools_missing_call": p_tools_missing_call,
    "tools_all_removed": p_tools_all_removed,
    "tools_repeated_call": p_tools_repeated_call,
    "tool_renamed": p_tool_renamed,
}
ARG_VARIANTS: dict[str, Callable[[list[Inv]], None]] = {
    "arg_changed": p_arg_changed,
    "arg_int": _typed_arg("int"),
    "arg_float": _typed_arg("float"),
    "arg_str": _typed_arg("str"),
    "arg_bool": _typed_arg("bool"),
    "arg_types_swapped_all": p_arg_types_swapped_all,
    "args_null": p_args_null,
    "args_empty": p_args_empty,
    "arg_extra": p_arg_extra,
    "arg_keys_reordered": p_arg_keys_reordered,
}
RESPONSE_VARIANTS: dict[str, Callable[[list[Inv]], None]] = {
    "response_changed": p_response_changed,
    "response_empty": p_response_empty,
    "response_multiscript_appended": p_response_multiscript_appended,
    "response_multiscript_replaced": p_response_multiscript_replaced,
    "response_thought_part": p_response_thought_part,
    "response_split_parts": p_response_split_parts,
    "response_case_punct": p_response_case_punct,
}
# events-form variants: (name, base perturbation or None, add a sub-agent transfer_to_agent call)
EVENT_VARIANTS: list[tuple[str, str | None, bool]] = [
    ("events_expected", None, False),
    ("events_transfer_extra", None, True),
    ("events_tools_reordered", "tools_reordered", False),
    ("events_tools_missing_call", "tools_missing_call", False),
    ("events_args_null", "args_null", False),
    ("events_arg_float", "arg_float", False),
    ("events_response_changed", "response_changed", False),
    ("events_response_multiscript_appended", "response_multiscript_appended", False),
]


# --------------------------------------------------------------------------------------------------
# invocation_events form (what ADK inference records) and camelCase spelling
# --------------------------------------------------------------------------------------------------
def _usage(inv_idx: int, step: int) -> dict[str, int]:
    prompt, cand = 100 + 10 * inv_idx + step, 5 + step
    usage = {"prompt_token_count": prompt, "candidates_token_count": cand}
    if step % 2 == 1:
        usage["thoughts_token_count"] = 3
    if inv_idx % 2 == 1:
        usage["tool_use_prompt_token_count"] = 7
    usage["total_token_count"] = sum(usage.values())
    return usage


def to_events(inv: Inv, inv_idx: int, transfer_extra: bool) -> Inv:
    """Rewrites tool_uses / intermediate_responses into invocation_events, ADK-inference style."""
    inv = copy.deepcopy(inv)
    idata = inv.pop("intermediate_data", None) or {}
    calls = list(idata.get("tool_uses") or [])
    author = ROOT_AGENT
    events: list[dict[str, Any]] = []
    step = 0
    i = 0
    while i < len(calls):
        # Parallel calls: the 2nd and 3rd call of a turn share one model event.
        group = [calls[i]]
        if i == 1 and len(calls) >= 3:
            group.append(calls[i + 1])
        parts: list[dict[str, Any]] = []
        if i == 0:
            parts.append({"text": "Let me look that up."})
        for j, call in enumerate(group):
            fc = {"id": f"call-{inv_idx}-{i + j}", **call}
            parts.append({"function_call": fc})
        events.append({
            "author": author,
            "content": {"role": "model", "parts": parts},
            "usage_metadata": _usage(inv_idx, step),
            "model_version": "gemini-2.5-flash",
        })
        step += 1
        for j, call in enumerate(group):
            events.append({
                "author": author,
                "content": {"role": "user", "parts": [{"function_response": {
                    "id": f"call-{inv_idx}-{i + j}", "name": call.get("name"), "response": {"result": "ok"}}}]},
            })
            if call.get("name") == "transfer_to_agent":
                author = str((call.get("args") or {}).get("agent_name", "sub_agent"))
        i += len(group)
    for r_author, r_parts in idata.get("intermediate_responses") or []:
        events.append({"author": r_author, "content": {"role": "model", "parts": r_parts}})
    if transfer_extra and inv_idx == 0:
        events.append({
            "author": "helper_sub_agent",
            "content": {"role": "model", "parts": [{"function_call": {
                "id": "call-transfer-back", "name": "transfer_to_agent", "args": {"agent_name": ROOT_AGENT}}}]},
            "model_version": "gemini-2.5-flash",
        })
    # Final model turn: ADK keeps the text in final_response and leaves the event content empty.
    final: dict[str, Any] = {"author": author, "content": None, "model_version": "gemini-2.5-flash"}
    if inv_idx % 3 != 2:
        final["usage_metadata"] = _usage(inv_idx, step)
    events.append(final)
    inv["intermediate_data"] = {"invocation_events": events}
    if inv_idx % 3 == 0:
        inv.update(duration=1.5 + inv_idx / 4, model_duration=0.75, tool_duration=0.25)
    elif inv_idx % 3 == 1:
        inv["duration"] = 2.0
    return inv


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


OPAQUE_KEYS = {"args", "response", "state"}


def to_camel(obj: Any) -> Any:
    """camelCases model keys (ADK accepts both spellings) but leaves tool args/responses untouched."""
    if isinstance(obj, list):
        return [to_camel(x) for x in obj]
    if isinstance(obj, dict):
        return {_camel(k): (v if k in OPAQUE_KEYS else to_camel(v)) for k, v in obj.items()}
    return obj


# --------------------------------------------------------------------------------------------------
# Loading eval sets the way ADK does, and running ADK's evaluate phase
# --------------------------------------------------------------------------------------------------
LOADER_EVALSET = "EvalSet"
LOADER_TURNS = "AgentEvaluator legacy list-of-turns"
LOADER_SESSIONS = "adk eval legacy list-of-sessions"


def load_eval_set(rel_path: str) -> tuple[Any, bool]:
    """Returns (EvalSet, is_legacy).  Legacy files go through the ADK loader that reads their shape."""
    eval_set, loader = load_eval_set_with_loader(rel_path)
    return eval_set, loader != LOADER_EVALSET


def load_eval_set_with_loader(rel_path: str) -> tuple[Any, str]:
    """Returns (EvalSet, loader).  Schema-valid files are EvalSets; a legacy list of ``{name, data}`` sessions
    goes through ``adk eval``'s converter, any other legacy list (of turns) through AgentEvaluator's loader."""
    from google.adk.evaluation.agent_evaluator import AgentEvaluator
    from google.adk.evaluation.eval_set import EvalSet
    from google.adk.evaluation.local_eval_sets_manager import convert_eval_set_to_pydantic_schema
    from pydantic import ValidationError

    text = Path(rel_path).read_text(encoding="utf-8")
    try:
        return EvalSet.model_validate_json(text), LOADER_EVALSET
    except ValidationError:
        data = json.loads(text)
        if isinstance(data, list) and data and isinstance(data[0], dict) and "data" in data[0]:
            return convert_eval_set_to_pydantic_schema(rel_path, data), LOADER_SESSIONS
        config = AgentEvaluator.find_config_for_test_file(rel_path)
        return AgentEvaluator._load_eval_set_from_file(rel_path, config, {}), LOADER_TURNS


def expected_actuals(eval_set: Any, is_legacy: bool) -> Actuals:
    out: Actuals = {}
    for case in eval_set.eval_cases:
        invs = []
        for idx, inv in enumerate(case.conversation or []):
            d = inv.model_dump(mode="json", exclude_none=True)
            d.pop("creation_timestamp", None)
            d.pop("rubrics", None)
            if is_legacy:  # the legacy converter invents random uuids
                d["invocation_id"] = f"legacy-turn-{idx}"
            invs.append(d)
        out[case.eval_id] = invs
    return out


def _status(status: Any) -> str:
    return str(status.name).lower()


def _metric_record(case_result: Any, metric_name: str) -> dict[str, Any]:
    overall = next(m for m in case_result.overall_eval_metric_results if m.metric_name == metric_name)
    rec: dict[str, Any] = {"score": overall.score, "status": _status(overall.eval_status),
                           "threshold": overall.threshold}
    details = overall.details.model_dump(mode="json", exclude_none=True)
    if details:
        rec["details"] = details
    per_inv = []
    for idx, per in enumerate(case_result.eval_metric_result_per_invocation):
        m = next((x for x in per.eval_metric_results if x.metric_name == metric_name), None)
        if m is None:
            continue
        entry: dict[str, Any] = {"index": idx, "invocation_id": per.actual_invocation.invocation_id,
                                 "score": m.score, "status": _status(m.eval_status)}
        d = m.details.model_dump(mode="json", exclude_none=True)
        if d:
            entry["details"] = d
        per_inv.append(entry)
    rec["per_invocation"] = per_inv
    return rec


async def _adk_evaluate(
    eval_set: Any, actuals: Actuals, config: dict[str, Any], with_efficiency: bool
) -> dict[str, Any]:
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

    metrics = get_eval_metrics_from_config(EvalConfig.model_validate(config))
    if not with_efficiency:  # informational only: they never change a verdict
        metrics = [m for m in metrics if m.metric_name not in EFFICIENCY_METRICS]
    manager = InMemoryEvalSetsManager()
    manager.create_eval_set(app_name=APP_NAME, eval_set_id=eval_set.eval_set_id)
    for case in eval_set.eval_cases:
        manager.add_eval_case(app_name=APP_NAME, eval_set_id=eval_set.eval_set_id, eval_case=case)
    # The evaluate phase never runs the agent; LocalEvalService only wants one to exist.
    service = LocalEvalService(root_agent=LlmAgent(name="unused_agent"), eval_sets_manager=manager)
    inference_results = [
        InferenceResult(
            app_name=APP_NAME,
            eval_set_id=eval_set.eval_set_id,
            eval_case_id=case.eval_id,
            inferences=[Invocation.model_validate(i) for i in actuals[case.eval_id]],
            session_id=None,
            status=InferenceStatus.SUCCESS,
        )
        for case in eval_set.eval_cases
    ]
    request = EvaluateRequest(
        inference_results=inference_results,
        evaluate_config=EvaluateConfig(eval_metrics=metrics, parallelism=1),
    )
    cases: dict[str, Any] = {}
    async for result in service.evaluate(evaluate_request=request):
        cases[result.eval_id] = {
            "final_status": _status(result.final_eval_status),
            "metric_order": [m.metric_name for m in result.overall_eval_metric_results],
            "metrics": {m.metric_name: _metric_record(result, m.metric_name)
                        for m in result.overall_eval_metric_results},
        }
    return cases


# --------------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------------
def _compact(obj: Any, indent: str = "") -> str:
    """Stable JSON: sorted keys; any object or array that fits in 150 chars stays on one line."""
    flat = json.dumps(obj, sort_keys=True, ensure_ascii=False)
    if len(flat) <= 150 or not isinstance(obj, (dict, list)) or not obj:
        return flat
    inner = indent + " "
    if isinstance(obj, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_compact(obj[k], inner)}" for k in sorted(obj)]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    return "[\n" + ",\n".join(inner + _compact(v, inner) for v in obj) + "\n" + indent + "]"


def _dump(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_compact(data) + "\n", encoding="utf-8")


def boundary_actuals(base: Actuals) -> Actuals:
    out = copy.deepcopy(base)
    for eval_id, texts in BOUNDARY_RESPONSES.items():
        for inv, text in zip(out[eval_id], texts, strict=True):
            inv["final_response"] = {"role": "model", "parts": [{"text": text}]}
    return out


def build_variants(sample: str, base: Actuals) -> dict[str, tuple[Actuals, str]]:
    """variant name -> (actuals, kind) where kind is 'tools', 'args', 'response', 'events' or 'boundary'."""
    variants: dict[str, tuple[Actuals, str]] = {"expected": (base, "tools")}
    if sample == "synthetic_float_boundary":  # a ROUGE-only set: the other variants would add nothing
        variants["rouge_mean_on_threshold"] = (boundary_actuals(base), "boundary")
        return variants
    perturbed: dict[str, Actuals] = {}
    for kind, table in (("tools", TOOL_VARIANTS), ("args", ARG_VARIANTS), ("response", RESPONSE_VARIANTS)):
        for name, fn in table.items():
            actuals = copy.deepcopy(base)
            for invs in actuals.values():
                fn(invs)
            perturbed[name] = actuals
            if actuals != base:  # skip variants that do not apply to this sample
                variants[name] = (actuals, kind)
    for name, source, transfer in EVENT_VARIANTS:
        src = base if source is None else perturbed[source]
        if source is not None and src == base:
            continue
        variants[name] = (
            {eid: [to_events(inv, idx, transfer) for idx, inv in enumerate(invs)] for eid, invs in src.items()},
            "events",
        )
    camel = variants["events_expected"][0]
    variants["events_expected_camel"] = ({eid: to_camel(invs) for eid, invs in camel.items()}, "events")
    return variants


ADK_DEFAULT_CONFIG: dict[str, Any] = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.8}}


def make_sample_goldens(sample: str, rel_eval_set: str) -> tuple[int, int, int]:
    return _make_goldens(sample, str(SAMPLES / rel_eval_set), public=False)


def _own_config(sample: str, eval_set_path: str, public: bool) -> tuple[str, dict[str, Any], str | None]:
    """(name, config, path) of the config ADK finds beside the eval set, or ADK's defaults without one.  A public
    set's judged criteria are dropped (judges are out of scope here): its deterministic rest is stored apart."""
    config_path = Path(eval_set_path).parent / "test_config.json"
    if not config_path.exists():
        return "adk_default", ADK_DEFAULT_CONFIG, None
    config: dict[str, Any] = json.loads(config_path.read_text(encoding="utf-8"))
    criteria = config.get("criteria") or {}
    if not public or set(criteria) <= DETERMINISTIC_CRITERIA:
        return "own", config, str(config_path)
    kept = {"criteria": {k: v for k, v in criteria.items() if k in DETERMINISTIC_CRITERIA}}
    kept_path = CONFIGS / "public" / f"{sample}__own_deterministic.json"
    _dump(kept_path, kept)
    return "own_deterministic", kept, str(kept_path)


def _config_names(variant: str, kind: str, own_name: str, extra: dict[str, Any], public: bool) -> list[str]:
    """Which configs a variant is scored under: every variant under the set's own; trajectory configs where the
    variant changes tool calls (for public sets only the unchanged and arg-changed actuals, to stay compact)."""
    if public:
        return [own_name, *PUBLIC_TRAJ_CONFIGS.get(variant, [])]
    if kind in ("boundary", "response"):
        return [own_name, *extra]
    if kind == "args" or variant in ARG_SENSITIVE:
        return [own_name, *ALL_TRAJ]
    return [own_name, *MATCH_TYPES_ONLY]


def _make_goldens(sample: str, eval_set_path: str, public: bool) -> tuple[int, int, int]:
    eval_set, loader = load_eval_set_with_loader(eval_set_path)
    own_name, own_config, own_path = _own_config(sample, eval_set_path, public)
    configs: dict[str, tuple[dict[str, Any], str | None]] = {own_name: (own_config, own_path)}
    for name, cfg in TRAJ_CONFIGS.items():
        configs[name] = (cfg, str(CONFIGS / f"{name}.json"))
    extra = {} if public else SAMPLE_EXTRA_CONFIGS.get(sample, {})
    for name, cfg in extra.items():
        configs[name] = (cfg, str(CONFIGS / f"{name}.json"))
    actuals_dir, goldens_dir = (ACTUALS / "public", GOLDENS / "public") if public else (ACTUALS, GOLDENS)

    n_goldens = n_cases = n_metrics = 0
    base = expected_actuals(eval_set, loader != LOADER_EVALSET)
    for variant, (actuals, kind) in build_variants(sample, base).items():
        if public and variant not in PUBLIC_VARIANTS:
            continue
        actuals_path = actuals_dir / f"{sample}__{variant}.json"
        _dump(actuals_path, actuals)
        for cfg_name in _config_names(variant, kind, own_name, extra, public):
            cfg, cfg_path = configs[cfg_name]
            with_efficiency = cfg_name == own_name
            cases = asyncio.run(_adk_evaluate(eval_set, actuals, cfg, with_efficiency))
            golden = {
                "adk_version": ADK_VERSION,
                "evalset": eval_set_path,
                "evalset_loader": loader,
                "legacy_eval_id_is_path_passed": eval_set_path if loader == LOADER_TURNS else None,
                "actuals": str(actuals_path),
                "variant": variant,
                "config_name": cfg_name,
                "config_path": cfg_path,
                "config": cfg,
                "efficiency_metrics_included": with_efficiency,
                "cases": cases,
            }
            _dump(goldens_dir / f"{sample}__{variant}__{cfg_name}.json", golden)
            n_goldens += 1
            n_cases += len(cases)
            n_metrics += sum(len(c["metrics"]) for c in cases.values())
    return n_goldens, n_cases, n_metrics


# --------------------------------------------------------------------------------------------------
# Public corpus: real eval sets from public ADK projects (samples/public/, provenance in sources.json)
# --------------------------------------------------------------------------------------------------
PUBLIC = SAMPLES / "public"
DETERMINISTIC_CRITERIA = {"tool_trajectory_avg_score", "response_match_score"}
PUBLIC_VARIANTS = {
    "expected", "tools_reordered", "tools_extra_call", "tools_missing_call", "tool_renamed", "arg_changed",
    "arg_float", "args_null", "response_changed", "response_empty", "response_multiscript_appended",
    "response_split_parts", "events_expected", "events_expected_camel", "events_transfer_extra",
    "events_tools_missing_call",
}
PUBLIC_TRAJ_CONFIGS = {"expected": MATCH_TYPES_ONLY, "arg_changed": ALL_TRAJ}


def public_sets() -> list[tuple[str, str]]:
    """(sample name, eval set path) for every collected public file, in sources.json order; the name is stable
    and short: ``pub`` + its index + the file's stem."""
    rows = json.loads((PUBLIC / "sources.json").read_text(encoding="utf-8"))
    out = []
    for idx, row in enumerate(rows):
        stem = re.sub(r"[^a-z0-9]+", "_", Path(row["path"]).name.removesuffix(".json").lower()).strip("_")
        out.append((f"pub{idx:02d}_{stem[:40]}", str(PUBLIC / row["repo"].replace("/", "__") / row["path"])))
    return out


def _evalset_error(path: str) -> str:
    """The first lines of ADK's EvalSet validation error (what it says before trying a legacy loader)."""
    from google.adk.evaluation.eval_set import EvalSet
    from pydantic import ValidationError

    try:
        EvalSet.model_validate_json(Path(path).read_text(encoding="utf-8"))
    except ValidationError as exc:
        return "\n".join(str(exc).splitlines()[:3])
    return ""


def make_public_goldens() -> tuple[int, int, int, int, int]:
    """Goldens for every public set ADK loads; ADK's load error for the others (goldens/public/unloadable.json).
    Returns (sets scored, unloadable, goldens, cases, metric results)."""
    for d in (ACTUALS / "public", CONFIGS / "public", GOLDENS / "public"):
        shutil.rmtree(d, ignore_errors=True)
    totals = [0, 0, 0]
    unloadable: list[dict[str, str]] = []
    scored = 0
    for sample, path in public_sets():
        try:
            eval_set, _ = load_eval_set_with_loader(path)
        except Exception as exc:  # ADK's own loader refuses the file: record its errors, no goldens
            unloadable.append({"evalset": path, "adk_error": f"{type(exc).__name__}: {str(exc)[:300]}",
                               "adk_evalset_error": _evalset_error(path)})
            continue
        if not any(case.conversation for case in eval_set.eval_cases):
            unloadable.append({"evalset": path, "adk_error": "no eval case has a fixed conversation"})
            continue
        counts = _make_goldens(sample, path, public=True)
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        scored += 1
        print(f"{sample}: {counts[0]} goldens, {counts[1]} cases, {counts[2]} metric results", file=sys.stderr)
    _dump(GOLDENS / "public" / "unloadable.json", {"adk_version": ADK_VERSION, "files": unloadable})
    return scored, len(unloadable), *totals


# --------------------------------------------------------------------------------------------------
# Documented deviations: inputs where evalbot deliberately reports `error` instead of mimicking ADK
# --------------------------------------------------------------------------------------------------
DEVIATION_SAMPLE = "v118_order_query"
DEVIATIONS: dict[str, tuple[str, dict[str, Any] | None]] = {
    # name -> (what evalbot does instead, config or None for the sample's own config)
    "count_mismatch": (
        "ADK aborts the whole run; evalbot reports the case as `error` and scores the other cases", None),
    "invalid_match_type": (
        "ADK marks the metric not_evaluated and lets the case pass; evalbot reports the criterion and case as"
        " `error`",
        {"criteria": {"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "SOMETIMES"},
                      "response_match_score": 0.5}}),
    "unknown_metric": (
        "ADK marks the metric not_evaluated; evalbot reports the criterion and case as `error`",
        {"criteria": {"tool_trajectory_avg_scor": 1.0, "response_match_score": 0.5}}),
    "threshold_on_efficiency_metric": (
        "ADK marks the metric not_evaluated; evalbot reports the criterion and case as `error`",
        {"criteria": {"tool_call_count_v1": 2.0, "response_match_score": 0.5}}),
}


def make_deviation_goldens() -> int:
    rel = str(SAMPLES / SAMPLE_SETS[DEVIATION_SAMPLE])
    eval_set, is_legacy = load_eval_set(rel)
    base = expected_actuals(eval_set, is_legacy)
    own_path = str(Path(rel).parent / "test_config.json")
    for name, (evalbot_behaviour, cfg) in DEVIATIONS.items():
        actuals = base
        if name == "count_mismatch":
            actuals = {eid: invs[:-1] for eid, invs in base.items()}
        actuals_path = ACTUALS / f"deviation_{name}.json"
        _dump(actuals_path, actuals)
        cfg_path = own_path
        if cfg is None:
            cfg = json.loads(Path(own_path).read_text(encoding="utf-8"))
        else:
            cfg_path = str(CONFIGS / f"deviation_{name}.json")
            _dump(Path(cfg_path), cfg)
        golden: dict[str, Any] = {
            "adk_version": ADK_VERSION, "evalset": rel, "actuals": str(actuals_path), "config_path": cfg_path,
            "config": cfg, "deviation": name, "evalbot_behaviour": evalbot_behaviour,
            "efficiency_metrics_included": True, "adk_error": None, "cases": None,
        }
        try:
            golden["cases"] = asyncio.run(_adk_evaluate(eval_set, actuals, cfg, True))
        except Exception as exc:  # ADK aborting is the recorded behaviour
            golden["adk_error"] = f"{type(exc).__name__}: {exc}"
        _dump(GOLDENS / "deviations" / f"{name}.json", golden)
    return len(DEVIATIONS)


# --------------------------------------------------------------------------------------------------
# ROUGE tokenizer golden
# --------------------------------------------------------------------------------------------------
ROUGE_STRINGS: list[str] = [
    "device_2 in the Bedroom.", "It's 10,000 steps.", "cancelled", "canceled", "running runs ran runner",
    "studies studying studied", "The cat sat on the mat", "a an the is at by of", "go do be ok it us",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "ＡＢＣ１２３ｘｙｚ", "ﬁle ﬂow ﬀ ﬃ", "café naïve déjà vu",
    "cafe\u0301 nai\u0308ve", "Crème brûlée à la carte", "résumé resume", "Straße STRASSE",
    "İstanbul ıi", "ǅungla Ǆ", "Ω ohm Å angstrom K kelvin", "Ⅻ ⅻ ① ²³ ½", "x²+y²=z²",
    "𝐁𝐨𝐥𝐝 𝑖𝑡𝑎𝑙𝑖𝑐", "今天天气很好，我们去公园散步吧。", "東京の天気は晴れです", "ありがとうございます",
    "カタカナ テスト", "ｶﾀｶﾅ", "서울의 날씨는 맑습니다", "한국어와 English 혼합", "mixed日本語and English",
    "สวัสดีครับ วันนี้อากาศดี", "ไทยlanguage", "ភាសាខ្មែរ", "မြန်မာဘာသာ", "ພາສາລາວ",
    "Привет, мир! Как дела?", "مرحبا بالعالم", "١٢٣ ٤٥٦", "नमस्ते दुनिया", "Ελληνικά γράμματα",
    "Hello 👋 world 🌍!", "👨\u200d👩\u200d👧 family", "\u200bzero\u200bwidth", "", "   \t\n  ",
    "!!! ??? ...", "e-mail re-enter co-operate", "U.S.A. e.g. i.e.", "3.14159 -42 +7 1e10",
    "user_a@example.com", "https://example.com/path?q=1&r=2", "CamelCaseWord snake_case_word kebab-case-word",
    "don't won't can't shouldn't", "Order ID: 1 is FINISHED.",
    "I have checked your orders and order 4 was in pending status, so I have cancelled it.",
    "generously organizational relational conditional", "caresses ponies ties caress cats",
    "feed agreed plastered bled motoring sing", "happy happiness happily", "ALL CAPS SHOUTING",
    "tab\tseparated\nnew line", "a", "I",
]

ROUGE_PAIRS: list[tuple[str, str]] = [  # (candidate = actual response, reference = expected response)
    ("cancelled", "canceled"), ("running", "runs"), ("studies", "studying"), ("", ""), ("", "hello"),
    ("hello", ""), ("!!!", "???"), ("The cat sat on the mat", "The cat sat on the mat"),
    ("the the the the", "the cat"), ("mat the on sat cat The", "The cat sat on the mat"),
    ("café naïve", "cafe naive"), ("cafe\u0301 nai\u0308ve", "café naïve"), ("Ｃａｆｅ １２３", "cafe 123"),
    ("ﬁle ﬂow", "file flow"), ("Straße", "strasse"), ("Ⅻ ①", "XII 1"),
    ("今天天气很好", "今天天气不好"), ("東京の天気は晴れです", "東京の天気は雨です"),
    ("ｶﾀｶﾅ", "カタカナ"), ("서울의 날씨는 맑습니다", "서울의 날씨는 흐립니다"),
    ("สวัสดีครับ วันนี้อากาศดี", "สวัสดีค่ะ วันนี้อากาศร้อน"), ("ភាសាខ្មែរ", "ភាសា"),
    ("Привет мир", "привет, МИР!"), ("Привет миры", "Привет мир"), ("नमस्ते दुनिया", "नमस्ते"),
    ("device_2 is off", "device 2 is off"), ("It's 10,000 steps", "it s 10 000 steps"),
    ("Order 1 is FINISHED", "Your order with ID 1 is FINISHED."),
    ("I have set the device_2 status to off.", "I have set the device 2 status to off."),
    ("Email sent to alice@example.com for user id user_a.", "Email sent to alice@example.com for user_a"),
    ("The answer is 42.", "Let me multiply the numbers.\nThe answer is 42."),
    ("I cancelled order 4; order 1 was already finished.",
     "I have checked your orders and order 4 was in pending status, so I have cancelled it."),
    ("Hello 👋 world", "hello world"), ("mixed日本語and English", "mixed 日本語 and english"),
    ("ไทยlanguage", "ไทย language"), ("don't", "do not"), ("running runner runs", "run run run"),
    ("happily", "happy"), ("a b c", "a b c d"), ("generously organizational", "generous organization"),
    ("le café est fermé", "Le café est naïve et déjà fermé."),
]


def make_rouge_golden() -> int:
    from google.adk.evaluation.final_response_match_v1 import _calculate_rouge_1_scores, _UnicodeAwareTokenizer

    tok = _UnicodeAwareTokenizer(use_stemmer=True)
    pairs = []
    for cand, ref in ROUGE_PAIRS:
        s = _calculate_rouge_1_scores(cand, ref)
        pairs.append({"candidate": cand, "reference": ref, "precision": s.precision, "recall": s.recall,
                      "fmeasure": s.fmeasure})
    _dump(GOLDENS / "rouge_tokens.json", {
        "adk_version": ADK_VERSION,
        "tokenizer": "google.adk.evaluation.final_response_match_v1._UnicodeAwareTokenizer(use_stemmer=True)",
        "tokens": [{"text": s, "tokens": tok.tokenize(s)} for s in ROUGE_STRINGS],
        "rouge1_pairs": pairs,
    })
    return len(pairs)


def main() -> int:
    global ADK_VERSION
    os.chdir(REPO)  # every path recorded in the goldens is repo-relative
    from google.adk import version

    ADK_VERSION = version.__version__
    if ADK_VERSION != "2.13.0":
        print(f"warning: goldens are meant for google-adk 2.13.0, found {ADK_VERSION}", file=sys.stderr)
    if sys.argv[1:] != ["--public-only"]:
        make_derived_goldens()
    for name, cfg in TRAJ_CONFIGS.items():  # the public goldens score under these too
        _dump(CONFIGS / f"{name}.json", cfg)
    scored, unloadable, *counts = make_public_goldens()
    print(f"public: {scored} real eval sets scored, {unloadable} that ADK cannot load or score; {counts[0]} goldens, "
          f"{counts[1]} cases, {counts[2]} metric results", file=sys.stderr)
    return 0


def make_derived_goldens() -> None:
    """The goldens for the sample and synthetic sets in SAMPLE_SETS, the deviations and the ROUGE tokenizer.  What
    scripts/make_custom_metric_goldens.py wrote (goldens/custom/, configs/custom_*.json) is left in place."""
    for d in (ACTUALS, CONFIGS, GOLDENS):
        for old in d.glob("*"):
            if old.name in ("custom", "public") or old.name.startswith("custom_"):
                continue
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink()
    for name, cfg in TRAJ_CONFIGS.items():
        _dump(CONFIGS / f"{name}.json", cfg)
    for extra in SAMPLE_EXTRA_CONFIGS.values():
        for name, cfg in extra.items():
            _dump(CONFIGS / f"{name}.json", cfg)
    totals = [0, 0, 0]
    for sample, rel in SAMPLE_SETS.items():
        counts = make_sample_goldens(sample, rel)
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        print(f"{sample}: {counts[0]} goldens, {counts[1]} cases, {counts[2]} metric results", file=sys.stderr)
    n_deviations = make_deviation_goldens()
    n_pairs = make_rouge_golden()
    print(f"total: {totals[0]} goldens, {totals[1]} cases, {totals[2]} metric results; "
          f"{n_deviations} deviation goldens; rouge: {len(ROUGE_STRINGS)} strings, {n_pairs} pairs", file=sys.stderr)


ADK_VERSION = ""

if __name__ == "__main__":
    sys.exit(main())
