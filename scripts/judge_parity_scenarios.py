"""Scenarios for the judged-criteria parity goldens: cases, actual invocations, configs and scripted judge answers.

Used by scripts/make_judge_goldens.py (which runs google-adk on them); the goldens it writes are self-contained.
"""

from __future__ import annotations

from typing import Any


def text(role: str, value: str) -> dict[str, Any]:
    """A genai Content with one text part."""
    return {"role": role, "parts": [{"text": value}]}


def inv(
    iid: str,
    user: str,
    final: str | None,
    *,
    tools: list[tuple[str, dict[str, Any], dict[str, Any]]] | None = None,
    events: list[dict[str, Any]] | None = None,
    rubrics: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """An invocation: tool calls as tool_uses/tool_responses, or explicit events."""
    out: dict[str, Any] = {"invocation_id": iid, "user_content": text("user", user)}
    if final is not None:
        out["final_response"] = text("model", final)
    if tools is not None:
        out["intermediate_data"] = {
            "tool_uses": [{"name": n, "args": a, "id": f"{iid}-c{k}"} for k, (n, a, _) in enumerate(tools)],
            "tool_responses": [{"name": n, "response": r, "id": f"{iid}-c{k}"} for k, (n, _, r) in enumerate(tools)],
        }
    if events is not None:
        out["intermediate_data"] = {"invocation_events": events}
    if rubrics is not None:
        out["rubrics"] = rubrics
    return out


def rubric(rid: str, prop: str, rtype: str | None = None) -> dict[str, Any]:
    """A rubric, typed or not."""
    out: dict[str, Any] = {"rubric_id": rid, "rubric_content": {"text_property": prop}}
    if rtype is not None:
        out["type"] = rtype
    return out


def verdicts(*items: tuple[str, str, str]) -> str:
    """A rubric-judge answer: (id, property, verdict) blocks in the ID/Property/Rationale/Verdict format."""
    return "\n\n".join(f"ID: {i}\nProperty: {p}\nRationale: checked {i}\nVerdict: {v}" for i, p, v in items)


def frm(label: str) -> str:
    """A final_response_match_v2 answer with the given label."""
    return '{\n  "reasoning": "compared with the reference",\n  "is_the_agent_response_valid": "' + label + '"\n}'


def labels(tag: str, *items: str) -> str:
    """A hallucinations validator answer: one block per (sentence k, label)."""
    return "\n\n".join(
        f"sentence: Claim {k} @@{tag}@@\nlabel: {lab}\nrationale: because {k}\n"
        f"supporting_excerpt: null\ncontradicting_excerpt: null"
        for k, lab in enumerate(items)
    )


def sentences(tag: str, n: int) -> str:
    """A hallucinations segmenter answer with n sentences tagged for the validator."""
    return "\n".join(f"<sentence>Claim {k} @@{tag}@@</sentence>" for k in range(n))


def valid(flag: str) -> str:
    """A user-simulator-quality answer."""
    return '{"reasoning": "checked against the plan", "is_valid": ' + flag + "}"


JUDGE = {"judge_model": "gemini-2.5-flash", "num_samples": 5}
FRQ = "FINAL_RESPONSE_QUALITY"
TUQ = "TOOL_USE_QUALITY"

CONCISE = "The response is concise."
POLITE = "The response is polite."
TEMP = "The response states the temperature."
WEATHER_TOOL = "The agent calls get_weather for the requested city."
UNIT = "The agent passes the unit the user asked for."

SCENARIOS: list[dict[str, Any]] = [
    # ------------------------------------------------------------------ final_response_match_v2
    {
        "name": "frm_v2_majority_and_tie",
        "metric": "final_response_match_v2",
        "criterion": {"threshold": 0.5, "judge_model_options": JUDGE},
        "eval_case": {"eval_id": "frm1", "conversation": [
            inv("t1", "@@T1@@ Weather in Paris?", "Sunny, 20C."),
            inv("t2", "@@T2@@ And tomorrow?", "Rain, 15C."),
        ]},
        "actual": [inv("t1", "@@T1@@ Weather in Paris?", "It is sunny and 20 degrees."),
                   inv("t2", "@@T2@@ And tomorrow?", "Expect showers.")],
        "answers": {
            "T1": [frm("valid"), frm("invalid"), frm("valid"), frm("valid"), frm("invalid")],
            "T2": [frm("valid"), frm("invalid"), "no label here", frm("valid"), frm("invalid")],
        },
    },
    {
        "name": "frm_v2_label_forms",
        "metric": "final_response_match_v2",
        "criterion": {"threshold": 0.6, "judge_model_options": {**JUDGE, "num_samples": 3}},
        "eval_case": {"eval_id": "frm2", "conversation": [
            inv("a", "@@A@@ q1", "r1"), inv("b", "@@B@@ q2", "r2"), inv("c", "@@C@@ q3", "r3"),
            inv("d", "@@D@@ q4", "r4"),
        ]},
        "actual": [inv("a", "@@A@@ q1", "x1"), inv("b", "@@B@@ q2", "x2"), inv("c", "@@C@@ q3", "x3"),
                   inv("d", "@@D@@ q4", "x4")],
        "answers": {
            # bracketed and bare labels, "true", and the inverted key
            "A": ['{"is_the_agent_response_valid": ["valid"]}', '{"is_the_agent_response_valid": true}',
                  '{"is_the_agent_response_valid": "partially valid"}'],
            # upper-case labels are not recognised by ADK: no scored sample at all -> not evaluated
            "B": ['{"is_the_agent_response_valid": "VALID"}'],
            "C": ['{"is_the_agent_response_invalid": "true"}', '{"is_the_agent_response_invalid": false}',
                  '{"is_the_agent_response_valid": "almost"}'],
            "D": [frm("valid"), frm("valid"), frm("invalid")],
        },
    },
    {
        "name": "frm_v2_judge_error",
        "metric": "final_response_match_v2",
        "criterion": {"threshold": 0.5, "judge_model_options": {**JUDGE, "num_samples": 2}},
        "eval_case": {"eval_id": "frm3", "conversation": [inv("e1", "@@E1@@ q", "r"), inv("e2", "@@E2@@ q", "r")]},
        "actual": [inv("e1", "@@E1@@ q", "x"), inv("e2", "@@E2@@ q", "x")],
        "answers": {"E1": [{"error": 400, "message": "request rejected by the test"}],
                    "E2": [frm("invalid")]},
    },
    # ------------------------------------------------------------------ rubric_based_final_response_quality_v1
    {
        "name": "rubric_frq_pooled_typed",
        "metric": "rubric_based_final_response_quality_v1",
        "criterion": {"threshold": 0.6, "judge_model_options": {**JUDGE, "num_samples": 3},
                      "rubrics": [rubric("concise", CONCISE)]},
        "eval_case": {
            "eval_id": "frq1",
            "rubrics": [rubric("polite", POLITE, FRQ), rubric("untyped", "Ignored: no type."),
                        rubric("tool_only", WEATHER_TOOL, TUQ)],
            "conversation": [
                inv("r1", "@@R1@@ Weather in Paris?", "Sunny, 20C.", rubrics=[rubric("temp", TEMP, FRQ)]),
                inv("r2", "@@R2@@ And Rome?", "Cloudy, 18C.", rubrics=[rubric("temp", TEMP, FRQ)]),
            ],
        },
        "actual": [inv("r1", "@@R1@@ Weather in Paris?", "Sunny and 20C in Paris, enjoy!"),
                   inv("r2", "@@R2@@ And Rome?", "Rome: cloudy.")],
        "answers": {
            "R1": [
                verdicts(("concise", CONCISE, "yes"), ("polite", POLITE, "yes"), ("temp", TEMP, "yes")),
                verdicts(("concise", CONCISE, "no"), ("polite", POLITE, "yes"), ("temp", TEMP, "yes")),
                # matched by property text (no ID line); "not applicable" counts as "no" in ADK
                "Property: The response is concise.\nRationale: short\nVerdict: not applicable\n\n"
                "Property: **The response is polite.**\nRationale: kind\nVerdict: Yes.\n\n"
                "Property: The response states the temperature.\nRationale: 20C\nVerdict: yes",
            ],
            "R2": [
                verdicts(("concise", CONCISE, "yes"), ("polite", POLITE, "no"), ("temp", TEMP, "no")),
                # markdown-bold verdict lines are not matched: counts differ -> the whole sample is discarded
                "ID: concise\nProperty: The response is concise.\nRationale: ok\n**Verdict:** yes\n\n"
                "ID: polite\nProperty: The response is polite.\nRationale: ok\nVerdict: yes",
                verdicts(("concise", CONCISE, "yes"), ("polite", POLITE, "yes"), ("temp", TEMP, "no")),
            ],
        },
    },
    {
        "name": "rubric_frq_last_invocation_bug",
        "metric": "rubric_based_final_response_quality_v1",
        "criterion": {"threshold": 0.5, "judge_model_options": {**JUDGE, "num_samples": 1},
                      "rubrics": [rubric("concise", CONCISE)]},
        "eval_case": {"eval_id": "frq2", "conversation": [
            inv("b1", "@@B1@@ Weather in Paris?", "Sunny, 20C.", rubrics=[rubric("temp", TEMP, FRQ)]),
            inv("b2", "@@B2@@ Thanks!", "You're welcome."),
        ]},
        "actual": [inv("b1", "@@B1@@ Weather in Paris?", "Sunny."),
                   inv("b2", "@@B2@@ Thanks!", "You're welcome.")],
        "answers": {
            "B1": [verdicts(("concise", CONCISE, "yes"), ("temp", TEMP, "no"))],
            "B2": [verdicts(("concise", CONCISE, "yes"))],
        },
        "deviation": (
            "ADK 2.13 keeps the effective rubric list in evaluator state and matches every invocation's answers "
            "against the LAST invocation's list, so the 'temp' verdict on b1 is dropped ('Rubric not found') and "
            "the case scores 1.0. evalbot matches each invocation against its own rubrics: b1 = mean(1, 0) = 0.5, "
            "pooled case score = (1 + 0 + 1) / 3."
        ),
        "evalbot_expected": {"score": 2 / 3, "status": "passed", "per_invocation": [
            {"score": 0.5, "status": "passed"}, {"score": 1.0, "status": "passed"}]},
    },
    {
        "name": "rubric_frq_no_rubrics",
        "metric": "rubric_based_final_response_quality_v1",
        "criterion": {"threshold": 0.5, "judge_model_options": {**JUDGE, "num_samples": 1}},
        "eval_case": {"eval_id": "frq3", "rubrics": [rubric("tool_only", WEATHER_TOOL, TUQ)],
                      "conversation": [inv("n1", "@@N1@@ hi", "hello")]},
        "actual": [inv("n1", "@@N1@@ hi", "hello")],
        "answers": {"N1": [verdicts(("x", "x", "yes"))]},
    },
    # ------------------------------------------------------------------ rubric_based_tool_use_quality_v1
    {
        "name": "rubric_tool_use",
        "metric": "rubric_based_tool_use_quality_v1",
        "criterion": {"threshold": 0.7, "judge_model_options": {**JUDGE, "num_samples": 4},
                      "rubrics": [rubric("weather_tool", WEATHER_TOOL)]},
        "eval_case": {
            "eval_id": "tuq1",
            "rubrics": [rubric("unit", UNIT, TUQ), rubric("frq_only", CONCISE, FRQ)],
            "conversation": [inv("u1", "@@U1@@ Paris in C?", "20C"), inv("u2", "@@U2@@ Rome in F?", "64F")],
        },
        "actual": [
            inv("u1", "@@U1@@ Paris in C?", "20C",
                tools=[("get_weather", {"city": "Paris", "unit": "C"}, {"temp": 20})]),
            inv("u2", "@@U2@@ Rome in F?", "64F",
                tools=[("get_weather", {"city": "Rome", "unit": "C"}, {"temp": 18})]),
        ],
        "answers": {
            # 2 yes / 2 no on weather_tool: a tie counts as "no"
            "U1": [verdicts(("weather_tool", WEATHER_TOOL, "yes"), ("unit", UNIT, "yes")),
                   verdicts(("weather_tool", WEATHER_TOOL, "no"), ("unit", UNIT, "yes")),
                   verdicts(("weather_tool", WEATHER_TOOL, "yes"), ("unit", UNIT, "no")),
                   verdicts(("weather_tool", WEATHER_TOOL, "no"), ("unit", UNIT, "yes"))],
            "U2": [verdicts(("weather_tool", WEATHER_TOOL, "yes"), ("unit", UNIT, "no")),
                   verdicts(("weather_tool", WEATHER_TOOL, "yes"), ("unit", UNIT, "no")),
                   "I cannot judge this.",
                   verdicts(("weather_tool", WEATHER_TOOL, "yes"), ("unit", UNIT, "yes"))],
        },
    },
    # ------------------------------------------------------------------ hallucinations_v1
    {
        "name": "hallucinations_intermediate_steps",
        "metric": "hallucinations_v1",
        "criterion": {"threshold": 0.5, "evaluate_intermediate_nl_responses": True,
                      "judge_model_options": {"judge_model": "gemini-2.5-flash"}},
        "eval_case": {"eval_id": "hal1", "conversation": [inv("h1", "weather?", "x"), inv("h2", "more?", "y")]},
        "actual": [
            inv("h1", "Weather in Paris?", "It is 20C and sunny @@S2@@.", events=[
                {"author": "root", "content": text("model", "Let me check the weather @@S1@@.")},
                {"author": "root", "content": {"role": "model", "parts": [
                    {"function_call": {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}}}]}},
                {"author": "root", "content": {"role": "user", "parts": [
                    {"function_response": {"id": "c1", "name": "get_weather", "response": {"temp": 20}}}]}},
            ]),
            inv("h2", "Anything else?", "Paris has 3 million bikes @@S3@@."),
        ],
        "answers": {
            "S1": [sentences("S1v", 2)], "S1v": [labels("S1v", "supported", "unsupported")],
            "S2": [sentences("S2v", 4)],
            "S2v": [labels("S2v", "supported", "not_applicable", "contradictory", "maybe")],
            "S3": [sentences("S3v", 1)], "S3v": [labels("S3v", "disputed")],
        },
    },
    {
        "name": "hallucinations_final_only_and_gaps",
        "metric": "hallucinations_v1",
        "criterion": {"threshold": 0.8, "judge_model_options": {"judge_model": "gemini-2.5-flash"}},
        "eval_case": {"eval_id": "hal2", "conversation": [inv("g1", "a", "b"), inv("g2", "c", "d"),
                                                          inv("g3", "e", "f")]},
        "actual": [
            inv("g1", "Weather?", "Sunny @@F1@@.", events=[
                {"author": "root", "content": text("model", "Checking @@SKIP@@.")}]),
            inv("g2", "Hello?", None),
            inv("g3", "Bye?", "Goodbye @@F3@@.", tools=[("log", {"x": 1}, {"ok": True})]),
        ],
        "answers": {
            "F1": [sentences("F1v", 2)], "F1v": [labels("F1v", "supported", "supported")],
            "F3": [sentences("F3v", 1)], "F3v": ["the validator rambled without any labelled block"],
        },
    },
    {
        "name": "hallucinations_step_error",
        "metric": "hallucinations_v1",
        "criterion": {"threshold": 0.5, "evaluate_intermediate_nl_responses": True,
                      "judge_model_options": {"judge_model": "gemini-2.5-flash"}},
        "eval_case": {"eval_id": "hal3", "conversation": [inv("k1", "a", "b")]},
        "actual": [inv("k1", "Weather?", "Sunny @@K2@@.", events=[
            {"author": "root", "content": text("model", "Checking @@K1@@.")}])],
        "answers": {"K1": [{"error": 400, "message": "segmenter rejected by the test"}],
                    "K2": [sentences("K2v", 1)], "K2v": [labels("K2v", "supported")]},
        "deviation": (
            "ADK catches a failed judge call for one step and scores the invocation from the other steps (1.0 "
            "here). evalbot never lets a failed call disappear: the invocation is not_evaluated with the reason."
        ),
        "evalbot_expected": {"score": None, "status": "not_evaluated",
                             "per_invocation": [{"score": None, "status": "not_evaluated"}]},
    },
    # ------------------------------------------------------------------ per_turn_user_simulator_quality_v1
    {
        "name": "user_sim_majority_and_stop",
        "metric": "per_turn_user_simulator_quality_v1",
        "criterion": {"threshold": 0.6, "judge_model_options": {**JUDGE, "num_samples": 3}},
        "eval_case": {"eval_id": "sim1", "conversation_scenario": {
            "starting_prompt": "@@U0@@ I need to book a flight.",
            "conversation_plan": "Book SFO->LAX next Tuesday under $150, confirm, then stop."}},
        "actual": [
            inv("s0", "@@U0@@ I need to book a flight.", "Sure, from where? @@A0@@"),
            inv("s1", "@@U1@@ From SFO to LAX next Tuesday.", "Found one for $120. Book it? @@A1@@"),
            inv("s2", "@@U2@@ What about hotels?", "I only do flights. @@A2@@"),
        ],
        "answers": {
            "U1": [valid("true"), valid("true"), valid("false")],
            "U2": [valid("false"), valid("false"), valid("true")],
            "A2": [valid("true"), valid("false"), valid("true")],
        },
    },
    {
        "name": "user_sim_bad_start_and_failed_stop",
        "metric": "per_turn_user_simulator_quality_v1",
        "criterion": {"threshold": 0.5, "stop_signal": "</done>",
                      "judge_model_options": {**JUDGE, "num_samples": 1}},
        "eval_case": {"eval_id": "sim2", "conversation_scenario": {
            "starting_prompt": "@@V0@@ Hello there",
            "conversation_plan": "Ask for the weather in Paris, then stop.",
            "user_persona": {"id": "custom", "description": "A terse user.", "behaviors": [
                {"name": "terse", "description": "Writes short messages.",
                 "behavior_instructions": ["Use at most ten words."],
                 "violation_rubrics": ["The message is longer than ten words."]}]}}},
        "actual": [
            inv("v0", "@@V0@@ Hello there!", "Hi! @@B0@@"),
            inv("v1", "@@V1@@ Weather in Paris?", "Sunny. @@B1@@"),
        ],
        "answers": {"V1": [valid('"valid"')], "B1": [valid("false")]},
    },
    {
        "name": "user_sim_unparseable_turn",
        "metric": "per_turn_user_simulator_quality_v1",
        "criterion": {"threshold": 0.5, "judge_model_options": {**JUDGE, "num_samples": 2}},
        "eval_case": {"eval_id": "sim3", "conversation_scenario": {
            "starting_prompt": "@@W0@@ Start", "conversation_plan": "Say start, then ask two things, then stop."}},
        "actual": [inv("w0", "@@W0@@ Start", "ok @@C0@@"), inv("w1", "@@W1@@ thing one", "ok @@C1@@"),
                   inv("w2", "@@W2@@ thing two", "ok @@C2@@")],
        "answers": {"W1": ["I am not sure."], "W2": [valid("true")], "C2": [valid("true")]},
        "deviation": (
            "ADK counts a turn whose judge answers were all unparseable in the denominator (score (1 + 1) / 3); "
            "evalbot reports that turn not_evaluated and leaves it out: (1 + 1) / 2."
        ),
        "evalbot_expected": {"score": 1.0, "status": "passed", "per_invocation": [
            {"score": 1.0, "status": "passed"}, {"score": None, "status": "not_evaluated"},
            {"score": 1.0, "status": "passed"}]},
    },
]
