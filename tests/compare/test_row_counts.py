"""A criterion row counts each case that changed on it by the case's outcome as the headline counts it (a flaky or
accepted regression is not "regressed"), in the comment, the summary and the HTML report alike; and the row's words
keep case outcomes ("1 case regressed") apart from the mean's test ("mean change not significant")."""

from __future__ import annotations

import re

from evalbot.action.publish import regressed_cases
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison
from evalbot.render.comment import comment_marker, render_comment, render_summary
from evalbot.render.html import context, delta_text, render_html
from evalbot.render.words import row_change
from tests.fakes.reports import TRAJ, main_refreshes, wobbly_main_run

MARKER = comment_marker()


def flaky_and_regressed() -> Comparison:
    """On main ``wobbly`` oscillated and ``steady`` always passed; the PR fails both on the same criterion."""
    baseline = main_refreshes([wobbly_main_run(wobbly=w) for w in (True, True, False, True, True)])
    return compare(current=wobbly_main_run(wobbly=False, steady=False), baseline=baseline, policy=GatePolicy(),
                   baseline_source="main:.evalbot/baseline.json")


def test_the_row_counts_agree_with_the_headline() -> None:
    c = flaky_and_regressed()
    assert c.counts["regressed"] == 1 and c.counts["flaky"] == 1
    (row,) = [r for es in c.eval_sets for r in es.rows if r.criterion == TRAJ]
    assert (row.regressed_cases, row.flaky_cases) == (1, 1)  # it said 2 regressed, 0 flaky
    comment = render_comment(c, marker=MARKER)
    headline = comment.splitlines()[1]
    assert "1 regressed" in headline and "1 regressed but flaky on main" in headline
    for text in (comment, render_summary(c)):
        line = next(ln for ln in text.splitlines() if ln.startswith("| tool\\_trajectory"))
        assert "🔴 1 case regressed · 🟠 1 case regressed but flaky on main" in line
        assert not re.search(r"🔴 2 ", line)
    (html_row,) = [r for s in context(c)["sets"] for r in s["rows"] if r["criterion"] == TRAJ]
    assert html_row["outcomes"] == ["1 case regressed", "1 case regressed but flaky on main"]
    assert "1 case regressed · 1 case regressed but flaky on main" in render_html(c)
    assert [eval_id for _, eval_id, _ in regressed_cases(c)] == ["steady"]  # annotations: the regressed case only


def test_mean_change_words_are_not_case_words() -> None:
    """The HTML row used to say "inconclusive (p = …)", the word of its Inconclusive case filter."""
    assert row_change("inconclusive", 1.0, 2) == "mean change not significant (p = 1.000, n = 2)"
    assert row_change("regressed", 0.0001, 30) == "mean fell significantly (p < 0.001, n = 30)"
    assert row_change("unchanged", None, 0) == "unchanged"
    c = flaky_and_regressed()
    for s in context(c)["sets"]:
        for r in s["rows"]:
            assert not r["change"].startswith("inconclusive")


def test_a_lower_is_better_row_says_which_way_is_worse() -> None:
    """Issue 37 row 6: on a criterion whose threshold is a maximum the regression is a rise, in every output's words
    and the HTML's colour (``down``: worse, red), while the arrow stays the number's."""
    assert row_change("regressed", 0.008, 8, True) == "mean rose significantly, lower is better (p = 0.008, n = 8)"
    assert row_change("improved", 0.008, 8, True) == "mean fell significantly, lower is better (p = 0.008, n = 8)"
    assert delta_text(0.25, True) == ("▲ +0.250", "down") and delta_text(0.25) == ("▲ +0.250", "up")
    assert delta_text(-0.25, True) == ("▼ −0.250", "up")
