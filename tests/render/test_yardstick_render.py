"""Yardstick changes in the comment and the HTML report: hostile ids (markup, pipes, mentions, invisible characters)
stay inert, and the headline never reads a plain "no regressions" while a change is unaccepted."""

from __future__ import annotations

from evalbot.compare.baseline import build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.render.comment import comment_marker, render_comment, render_summary
from evalbot.render.html import render_html
from tests.fakes.reports import TRAJ, case, eval_set, metric, report

HOSTILE = "x|y <script>alert(1)</script> @admin \u202e"


def removed_hostile_case(**policy: object) -> tuple[str, str]:
    main = report(eval_set("shop", [case(HOSTILE, {TRAJ: metric(0.0)}), case("ok", {TRAJ: metric(1.0)})]))
    pr = report(eval_set("shop", [case("ok", {TRAJ: metric(1.0)})]))
    c = compare(current=pr, baseline=build_baseline(main, commit="a" * 40, created_at=None),
                policy=GatePolicy.model_validate(policy))
    assert [(y.kind, y.main) for y in c.yardstick] == [("case_removed", "failed on main")]
    return render_comment(c, marker=comment_marker()) + render_summary(c), render_html(c)


def test_hostile_ids_in_a_yardstick_change_stay_inert() -> None:
    text, html = removed_hostile_case()
    assert "<script>alert" not in text and "@admin" not in text and "\u202e" not in text
    row = next(line for line in text.splitlines() if line.startswith("| shop / x"))
    assert row.count(" | ") == 3  # the pipe in the id did not add a column
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_the_headline_warns_and_never_says_plain_no_regressions() -> None:
    text, _ = removed_hostile_case(yardstick_changes="warn")
    headline = text.splitlines()[1]
    assert headline.startswith("### ⚠️ evalbot: no regressions · ⚠️ 1 yardstick change (shop / x") and \
        "(not blocking: yardstick\\_changes: warn)" in headline
