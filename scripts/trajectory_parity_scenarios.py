"""Scenarios for the ``rubric_based_multi_turn_trajectory_quality_v1`` parity goldens (seeded, reproducible).

Each scenario is a conversation of 1-4 invocations (tool calls as events or as tool_uses, sometimes app details),
rubrics drawn from every scope ADK reads (criterion; case, last invocation and last expected invocation typed
``TRAJECTORY_QUALITY``) plus rubrics no scope reads (other types, untyped, typed ones on a scope ADK does not read for
this metric are left out: that is a documented difference), and scripted judge answers per sample: verdicts by id or
by property text, unknown rubrics, unparseable or incomplete answers, verdict spellings, judge errors. The one
``@@tag@@`` of a scenario is in its first user message, so ADK's and evalbot's prompts route to the same answers.
"""

from __future__ import annotations

import random
from typing import Any

from scripts.judge_parity_scenarios import inv, rubric, text

METRIC = "rubric_based_multi_turn_trajectory_quality_v1"
TQ = "TRAJECTORY_QUALITY"
SEED = 2613
COUNT = 140

PROPERTIES = [
    "The agent asks for the destination before booking.",
    "The agent calls the search tool with the city the user named.",
    "The agent confirms the booking details with the user before finalizing.",
    "The agent never invents a price the tools did not return.",
    "The final summary lists every booked item.",
    "The agent corrects its earlier mistake when the user points it out.",
    "The agent's tone stays polite throughout the conversation.",
    "The agent uses the unit of measure the user asked for.",
    "The agent does not call any tool twice with the same arguments.",
    "The agent answers each user question in the same turn it was asked.",
]
VERDICTS = ["yes", "no", "Yes", "No.", "YES", "no, it does not", "yes - clearly", "maybe", "unclear", "not applicable"]
TOOLS = [("search_flights", {"city": "Paris"}, {"flights": 3}), ("book", {"id": "F1"}, {"ok": True}),
         ("get_price", {"id": "F1"}, {"eur": 120}), ("get_weather", {"city": "Rome", "unit": "C"}, {"temp": 21})]


def _app(rng: random.Random) -> dict[str, Any]:
    agents = {}
    for name in rng.sample(["planner", "booker", "helper"], rng.randint(1, 2)):
        fns = [{"name": n, "description": f"{n} tool"} for n, _, _ in rng.sample(TOOLS, rng.randint(0, 2))]
        agents[name] = {"name": name, "instructions": f"You are the {name}.",
                        "tool_declarations": [{"function_declarations": fns}] if fns else []}
    return {"agent_details": agents}


def _events(rng: random.Random, iid: str) -> list[dict[str, Any]]:
    author = rng.choice(["planner", "booker"])
    events: list[dict[str, Any]] = []
    for k, (name, args, resp) in enumerate(rng.sample(TOOLS, rng.randint(0, 2))):
        events.append({"author": author, "content": {"role": "model", "parts": [
            {"function_call": {"name": name, "args": args, "id": f"{iid}-{k}"}}]}})
        events.append({"author": author, "content": {"role": "user", "parts": [
            {"function_response": {"name": name, "response": resp, "id": f"{iid}-{k}"}}]}})
    if rng.random() < 0.4:
        events.append({"author": author, "content": text("model", "Let me check that.")})
    return events


def _invocation(rng: random.Random, i: int, user: str, rubrics: list[dict[str, Any]] | None,
                app: dict[str, Any] | None) -> dict[str, Any]:
    iid = f"t{i + 1}"
    form = rng.choice(["events", "tools", "none"])
    out = inv(iid, user, rng.choice(["Done.", "Here is your plan.", "Booked flight F1 for 120 EUR.", None]),
              tools=rng.sample(TOOLS, rng.randint(0, 2)) if form == "tools" else None,
              events=_events(rng, iid) if form == "events" else None, rubrics=rubrics)
    if app is not None:
        out["app_details"] = app
    return out


def _block(rng: random.Random, rid: str | None, prop: str) -> str:
    shown = prop
    if rid is None:  # matched by property text, with the decoration judges add
        shown = rng.choice([prop, f"**{prop}**", prop.upper(), f"  {prop}  "])
    lines = ([f"ID: {rid}"] if rid is not None else []) + [f"Property: {shown}", f"Rationale: turn {rng.randint(1, 4)}",
                                                           f"Verdict: {rng.choice(VERDICTS)}"]
    return "\n".join(lines)


def _answer(rng: random.Random, rubrics: list[tuple[str, str]]) -> Any:
    kind = rng.choices(["full", "partial", "unknown", "garbage", "mismatch", "error"], [60, 15, 8, 6, 6, 2])[0]
    if kind == "error":
        return {"error": 400, "message": "judge request rejected by the test"}
    if kind == "garbage":
        return rng.choice(["I cannot evaluate this.", "All properties hold.", "{\"verdict\": \"yes\"}"])
    chosen = list(rubrics)
    rng.shuffle(chosen)
    if kind == "partial" and chosen:
        chosen = chosen[: rng.randint(0, len(chosen) - 1)]
    blocks = [_block(rng, rid if rng.random() < 0.8 else None, prop) for rid, prop in chosen]
    if kind == "unknown":
        blocks.insert(rng.randint(0, len(blocks)), _block(rng, "zz_unknown", "A property nobody asked about."))
    if kind == "mismatch":
        blocks.append("Property: a dangling property without a verdict")
    return "\n\n".join(blocks)


def scenario(rng: random.Random, k: int) -> dict[str, Any]:
    """One random scenario."""
    n = rng.choice([1, 1, 2, 2, 3, 4])
    props = rng.sample(PROPERTIES, rng.randint(1, 6))
    ids = [f"r{k}_{j}" for j in range(len(props))]
    where: dict[str, list[dict[str, Any]]] = {"criterion": [], "case": [], "last": [], "expected": [], "other": []}
    for rid, prop in zip(ids, props, strict=True):
        scope = rng.choice(["criterion", "criterion", "case", "last", "expected"])
        where[scope].append(rubric(rid, prop, None if scope == "criterion" else TQ))
    if rng.random() < 0.12:  # only rubrics no scope reads: "Rubrics are required."
        where = {"criterion": [], "case": [], "last": [], "expected": [], "other": []}
    distractors = [rubric(f"d{k}_{j}", "The response is concise.", t)
                   for j, t in enumerate(rng.sample(["FINAL_RESPONSE_QUALITY", "TOOL_USE_QUALITY", None], rng.randint(0, 2)))]
    effective = [(r["rubric_id"], r["rubric_content"]["text_property"])
                 for scope in ("criterion", "case", "last", "expected") for r in where[scope]]
    app = _app(rng) if rng.random() < 0.5 else None
    users = [f"@@S{k}@@ I need a trip to Paris." if i == 0 else rng.choice(["And a hotel?", "Use Celsius.", "Thanks."])
             for i in range(n)]
    actual = [_invocation(rng, i, users[i], where["last"] or None if i == n - 1 else None, app) for i in range(n)]
    expected = [inv(f"t{i + 1}", users[i], "ok", rubrics=where["expected"] or None if i == n - 1 else None)
                for i in range(n)]
    samples = rng.randint(1, 5)
    answers = [_answer(rng, effective) for _ in range(samples)]
    criterion: dict[str, Any] = {"threshold": rng.choice([0.0, 0.3, 0.5, 0.6, 0.75, 1.0]),
                                 "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": samples}}
    if where["criterion"]:
        criterion["rubrics"] = where["criterion"]
    case: dict[str, Any] = {"eval_id": f"traj{k}", "conversation": expected}
    if where["case"] or distractors:
        case["rubrics"] = where["case"] + distractors
    return {"name": f"traj_{k:03d}", "metric": METRIC, "criterion": criterion, "eval_case": case, "actual": actual,
            "answers": {f"S{k}": answers}}


def scenarios() -> list[dict[str, Any]]:
    """All scenarios, the same on every run."""
    rng = random.Random(SEED)
    return [scenario(rng, k) for k in range(COUNT)]
