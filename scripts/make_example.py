"""Regenerate the bundled example under examples/: eval sets, the recorded "main" and "PR" runs, the judge answers
(recorded into examples/judge-cache through evalbot's own cache, so the example replays without a key or network),
and the committed baseline made from the main run with ``evalbot baseline``.

Run from the repository root: ``python scripts/make_example.py``. Re-run it when a judge prompt template changes
(the cache is keyed by the full prompt, so old answers stop matching and tests/test_example.py fails).
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from evalbot.cli.commands import main as evalbot_main
from evalbot.compare.baseline import build_baseline
from evalbot.compare.gate import GatePolicy
from evalbot.criteria.base import BallotBox, BuildContext
from evalbot.judges.base import JudgeReply, JudgeRequest, Usage
from evalbot.judges.factory import build_stack
from evalbot.pipeline import evaluate, settle_split_votes

ROOT = Path(__file__).resolve().parent.parent / "examples"
COMMIT = "4f2c9e1d8b7a6c5e4f3a2b1c0d9e8f7a6b5c4d3e"
CREATED_AT = "2026-11-01T09:00:00+00:00"

Call = tuple[str, dict[str, Any]]


def inv(user: str, response: str, calls: list[Call]) -> dict[str, Any]:
    """An ADK Invocation (snake_case, tool calls in intermediate_data.tool_uses)."""
    return {
        "user_content": {"role": "user", "parts": [{"text": user}]},
        "final_response": {"role": "model", "parts": [{"text": response}]},
        "intermediate_data": {"tool_uses": [{"name": n, "args": a} for n, a in calls]},
    }


# eval_id: (user prompt, expected calls, expected response, main run (calls, response), PR run (calls, response))
ORDERS: dict[str, tuple[str, list[Call], str, tuple[list[Call], str], tuple[list[Call], str]]] = {
    "refund_damaged_item": (
        "The mug in order A17 arrived broken. Can I get my money back?",
        [("get_order", {"order_id": "A17"}), ("issue_refund", {"order_id": "A17", "amount": 25.0, "reason": "damaged"})],
        "I'm sorry the mug arrived broken. I've refunded $25.00 for order A17 to your original payment method.",
        ([("get_order", {"order_id": "A17"}),
          ("issue_refund", {"order_id": "A17", "amount": 25.0, "reason": "damaged"})],
         "Sorry about the broken mug! I've refunded $25.00 for order A17 to your original payment method."),
        ([("get_order", {"order_id": "A17"}),
          ("issue_refund", {"order_id": "A17", "amount": 250.0, "reason": "damaged"})],
         "Sorry about the broken mug! I've refunded $250.00 for order A17 to your original payment method."),
    ),
    "track_package": (
        "Where is my package for order B42?",
        [("get_order", {"order_id": "B42"}), ("track_shipment", {"tracking_id": "1Z999AA1"})],
        "Your package 1Z999AA1 is in Lyon and should arrive on Thursday.",
        ([("get_order", {"order_id": "B42"})], "Order B42 has shipped. You will receive it soon."),
        ([("get_order", {"order_id": "B42"}), ("track_shipment", {"tracking_id": "1Z999AA1"})],
         "Your package 1Z999AA1 is in Lyon and should arrive on Thursday."),
    ),
    "cancel_order": (
        "Please cancel order C7, I ordered it by mistake.",
        [("get_order", {"order_id": "C7"}), ("cancel_order", {"order_id": "C7"})],
        "Done: order C7 is cancelled and you have not been charged.",
        ([("get_order", {"order_id": "C7"}), ("cancel_order", {"order_id": "C7"})],
         "Done: order C7 is cancelled and you have not been charged."),
        ([("get_order", {"order_id": "C7"}), ("cancel_order", {"order_id": "C7"})],
         "Done: order C7 is cancelled and you have not been charged."),
    ),
    "gift_card_balance": (
        "How much is left on gift card GC-9?",
        [("check_gift_card", {"card_id": "GC-9"})],
        "Gift card GC-9 has $40.00 left.",
        ([("get_order", {"order_id": "GC-9"})], "I could not find an order GC-9."),
        ([("get_order", {"order_id": "GC-9"})], "I could not find an order GC-9."),
    ),
}

# eval_id: (user prompt, expected response, main response, PR response)
FAQ: dict[str, tuple[str, str, str, str]] = {
    "store_hours": (
        "When is your store open?",
        "We are open from 9am to 5pm, Monday to Friday.",
        "We are open 9am to 5pm from Monday to Friday.",
        "We are open from 9am to 5pm on weekdays, and some Saturdays too.",
    ),
    "return_window": (
        "How long do I have to return something?",
        "You can return any item within 30 days of delivery.",
        "You can return any item within 30 days of delivery.",
        "You can return any item within 30 days of delivery.",
    ),
}

# Judge votes (pass, fail) per distinct agent response; the answers are worded for this example.
VOTES: dict[str, tuple[int, int]] = {
    "We are open 9am to 5pm from Monday to Friday.": (3, 2),
    "We are open from 9am to 5pm on weekdays, and some Saturdays too.": (2, 3),
    "You can return any item within 30 days of delivery.": (5, 0),
}
MORE_VOTES: dict[str, list[bool]] = {
    # samples 5..14 of the PR's split answer, asked when evalbot settles its flip: 5-5, so 7-8 stays split
    "We are open from 9am to 5pm on weekdays, and some Saturdays too.": [True, False] * 5,
}
WHY = {
    True: "The response gives the same facts as the reference; wording differences do not matter.",
    False: "The response adds or changes a fact the reference does not support, so it does not match.",
}


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_inputs() -> None:
    """Eval sets, their configs and the two recorded runs."""
    write_json(ROOT / "evals/orders/orders.evalset.json", {
        "eval_set_id": "orders",
        "description": "Support agent: order look-ups, refunds, cancellations (tool-call trajectories).",
        "eval_cases": [{"eval_id": k, "conversation": [inv(u, r, c)]} for k, (u, c, r, _, _) in ORDERS.items()],
    })
    write_json(ROOT / "evals/orders/test_config.json", {
        "criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5},
        "evalbot": {"fail_on": "regression", "tolerance": 0.0},
    })
    write_json(ROOT / "evals/faq/faq.evalset.json", {
        "eval_set_id": "faq",
        "description": "Support agent: store policy questions, judged by an LLM against reference answers.",
        "eval_cases": [{"eval_id": k, "conversation": [inv(u, r, [])]} for k, (u, r, _, _) in FAQ.items()],
    })
    write_json(ROOT / "evals/faq/test_config.json", {
        "criteria": {
            "response_match_score": 0.4,
            "final_response_match_v2": {
                "threshold": 0.8, "judge_model_options": {"judge_model": "gemini-2.5-flash", "num_samples": 5},
            },
        },
        "evalbot": {"fail_on": "regression", "tolerance": 0.0},
    })
    for run, index in (("main", 3), ("pr", 4)):
        actuals: dict[str, Any] = {}
        for k, row in ORDERS.items():
            calls, response = row[index]  # type: ignore[misc]
            actuals[k] = [inv(row[0], response, calls)]
        for k, (user, _, main_text, pr_text) in FAQ.items():
            actuals[k] = [inv(user, main_text if run == "main" else pr_text, [])]
        write_json(ROOT / f"runs/{run}.json", actuals)


def alternating(yes: int, no: int) -> list[bool]:
    """The votes in alternating order, the larger side first (3-2 is valid, invalid, valid, invalid, valid): a split
    vote's first three samples do not decide it, so sequential sampling asks all five and shows the split."""
    major, minor = (True, False) if yes >= no else (False, True)
    big, small = max(yes, no), min(yes, no)
    out: list[bool] = []
    for i in range(big):
        out.append(major)
        if i < small:
            out.append(minor)
    return out


class RecordedAnswers:
    """A judge backend answering from VOTES: finds which agent response the prompt is about."""

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        response = next((r for r in VOTES if r in request.prompt), None)
        if response is None:
            raise SystemExit(f"no recorded votes for prompt:\n{request.prompt[:500]}")
        yes, no = VOTES[response]
        labels = alternating(yes, no) + MORE_VOTES.get(response, [])
        first = request.first_sample
        texts = tuple(
            json.dumps({"reasoning": WHY[ok], "is_the_agent_response_valid": "valid" if ok else "invalid"})
            for ok in labels[first: first + request.num_samples]
        )
        return JudgeReply(texts, Usage(input_tokens=400, output_tokens=60 * len(texts), requests=1), 0)


def record_judge_answers() -> None:
    """Score both runs once with the recorded answers behind evalbot's on-disk cache; the PR run's split flip is
    settled as `evalbot compare` settles it (resample_split 10), so its extra samples are recorded too."""
    cache = ROOT / "judge-cache"
    shutil.rmtree(cache, ignore_errors=True)
    baseline = None
    for run in ("main", "pr"):
        stack = build_stack(RecordedAnswers(), cache_dir=cache, sampling="full")  # every sample, for either mode
        ctx = BuildContext(judge=stack, ballots=BallotBox())
        report = evaluate([str(ROOT / "evals")], actuals=[str(ROOT / f"runs/{run}.json")], ctx=ctx)
        bad = [c.eval_id for es in report.eval_sets for c in es.cases if c.status == "error"]
        if bad:
            raise SystemExit(f"{run}: cases in error: {bad}")
        if baseline is None:
            baseline = build_baseline(report, commit=COMMIT, created_at=CREATED_AT)
        elif settle_split_votes(report, baseline, ctx, GatePolicy()) != 1:
            raise SystemExit("pr: the split flip of faq / store_hours was not resampled")


def make_baseline() -> None:
    """``evalbot baseline`` on the main run, replaying the recorded judge answers: a fresh file (its case histories
    hold this one run, not the previous example's)."""
    (ROOT / ".evalbot" / "baseline.json").unlink(missing_ok=True)
    code = evalbot_main([
        "baseline", "examples/evals", "--actuals", "examples/runs/main.json",
        "--judge-cache", "examples/judge-cache", "--judge-replay",
        "--output", "examples/.evalbot/baseline.json", "--commit", COMMIT, "--created-at", CREATED_AT,
    ], env={})
    if code != 0:
        raise SystemExit(f"evalbot baseline exited {code}")


if __name__ == "__main__":
    write_inputs()
    record_judge_answers()
    make_baseline()
    sys.exit(0)
