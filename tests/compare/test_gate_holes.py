"""Smaller holes in the gate: look-alike ids, the commit a comment describes, the baseline file a PR updates."""

from __future__ import annotations

from evalbot.compare.accept import accept
from evalbot.compare.baseline import build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.render.comment import comment_marker, render_comment
from evalbot.render.mdsafe import escape_invisible, has_invisible
from tests.fakes.reports import TRAJ, case, eval_set, metric, report

MARKER = comment_marker()


def test_look_alike_id_is_escaped_and_flagged_in_the_headline() -> None:
    """A failing case renamed with a zero-width space no longer passes silently as "1 new" while its look-alike
    is "removed": both show, the new one escaped, and the headline flags it."""
    main = report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)}), case("greet", {TRAJ: metric(1.0)})]))
    pr = report(eval_set("shop", [case("refund\u200b", {TRAJ: metric(0.0)}), case("greet", {TRAJ: metric(1.0)})]))
    c = compare(current=pr, baseline=build_baseline(main, commit="a" * 40, created_at=None), policy=GatePolicy())
    assert c.invisible_ids == ["shop / refund\\u200b"]
    text = render_comment(c, marker=MARKER)
    headline = text.splitlines()[1]
    assert "1 id(s) with invisible characters" in headline and "1 new" in headline
    assert "refund\\\\u200b" in text  # markdown-escaped backslash: renders as refund\u200b
    assert "refund\u200b" not in text


def test_bidi_and_other_invisible_characters_are_escaped() -> None:
    assert escape_invisible("a\u202eb\u2066c\u00a0d\u3164") == "a\\u202eb\\u2066c\\u00a0d\\u3164"
    assert escape_invisible("plain id\\x") == "plain id\\x"  # nothing invisible: left as it is
    assert escape_invisible("x\u200bq\\") == "x\\u200bq\\\\"
    assert not has_invisible("café ü 日本 हिन्दी")


def test_comment_names_the_commit_it_describes() -> None:
    """The comment says which commit's results it shows (short sha)."""
    r = report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)})]))
    c = compare(current=r, baseline=None, policy=GatePolicy())
    c.commit = "0123456789abcdef" * 2 + "01234567"
    assert "Results for commit `0123456`." in render_comment(c, marker=MARKER)


def test_baseline_update_ignores_commit_and_time_and_names_a_contradicted_status() -> None:
    r = report(eval_set("shop", [case("refund", {TRAJ: metric(0.0)})]))
    main = build_baseline(report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)})])), commit="a" * 40,
                          created_at=None)
    same = build_baseline(r, commit="b" * 40, created_at="2025-01-01T00:00:00+00:00")
    honest = accept(main, same, r, GatePolicy(), "b.json")
    assert honest.update.matches and honest.cases == {("shop", "refund")}
    edited = build_baseline(report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)})])), commit="b" * 40,
                            created_at=None)
    diffs = accept(build_baseline(r, commit="a" * 40, created_at=None), edited, r, GatePolicy(), "b.json").update
    assert '/eval_sets/shop/cases/refund/metrics/tool_trajectory_avg_score/status: "passed" (score 1.0) in the file, ' \
           '"failed" (score 0.0) in this run' in diffs.differences and not diffs.matches

