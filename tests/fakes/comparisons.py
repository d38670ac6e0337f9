"""Comparisons the rendering tests share: a small PR-vs-main comparison, its marker and links."""

from __future__ import annotations

from evalbot.compare.baseline import build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison
from evalbot.render.comment import (
    Links,
    comment_marker,
)
from evalbot.results import Report
from tests.fakes.reports import JUDGE, RESP, TRAJ, case, eval_set, metric, report, turn

MARKER = comment_marker()


LINKS = Links(summary="https://github.com/acme/shop/actions/runs/42", report="evalbot-report.json")


def compared(main: Report | None, pr: Report, **policy: object) -> Comparison:
    baseline = build_baseline(main, commit="1a2b3c4d5e6f7a8b", created_at="2025-06-01T12:00:00+00:00") if main else None
    return compare(current=pr, baseline=baseline, policy=GatePolicy.model_validate(policy),
                   baseline_source="origin/main:.evalbot/baseline.json")


REFUND = [("get_order", {"order_id": "A17"}), ("refund", {"order_id": "A17", "amount": 25.0})]


def small() -> Comparison:
    main = report(eval_set("orders", [
        case("refund_damaged", {TRAJ: metric(1.0), RESP: metric(0.9, 0.6)}, turns=[turn(expected_calls=REFUND)]),
        case("track_package", {TRAJ: metric(0.0), RESP: metric(0.3, 0.6)}),
        case("store_hours", {JUDGE: metric(1.0, 0.8, votes=[(3, 2)])}),
        case("cancel", {TRAJ: metric(1.0)}),
    ]))
    pr = report(eval_set("orders", [
        case("refund_damaged", {TRAJ: metric(0.0), RESP: metric(0.8, 0.6)}, turns=[turn(
            expected_calls=REFUND, actual_calls=[REFUND[0], ("refund", {"order_id": "A17", "amount": 250.0})],
            expected_response="I refunded $25.00 to your card.", actual_response="I refunded $250.00 to your card.",
        )]),
        case("track_package", {TRAJ: metric(1.0), RESP: metric(0.8, 0.6)}),
        case("store_hours", {JUDGE: metric(0.0, 0.8, votes=[(2, 3)], rationale="The reference says 9 to 5; the "
                                                                               "response says 9 to 6.")},
             turns=[turn(user="When are you open?", expected_response="9am to 5pm, Monday to Friday.",
                         actual_response="We're open 9am to 6pm on weekdays.")]),
        case("cancel", {TRAJ: metric(1.0)}),
        case("gift_card", {TRAJ: metric(0.0)}, turns=[turn(expected_calls=[("balance", {"card": "G1"})],
                                                          actual_calls=[])]),
    ]), usage=USAGE)
    return compared(main, pr)


USAGE = {"total": {"requests": 3, "input_tokens": 12345, "output_tokens": 678, "cached_samples": 2,
                   "estimated_cost_usd": 0.0054}, "prices": "evalbot's list prices as of 2025-12"}
