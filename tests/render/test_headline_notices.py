"""The notices under the headline (policy changes, invisible ids, the comparison's notes: reruns capped or not
possible, budgets accepted) are one list shown by the comment, the job summary and the HTML report alike."""

from __future__ import annotations

from evalbot.compare.model import Comparison, YardstickChange
from evalbot.compare.reruns import capped_note, not_possible_note
from evalbot.render.comment import render_comment, render_summary
from evalbot.render.html import render_html
from evalbot.render.words import headline_notices
from tests.fakes.comparisons import MARKER, small


def _with_notices() -> tuple[Comparison, str, str]:
    comparison = small()
    not_rerun = not_possible_note(comparison, 2)
    assert not_rerun is not None  # small() has a flipped case
    capped = capped_note(1, 3, 1, 10)
    comparison.notes += [not_rerun, capped, "a note with <b>markup</b> & a `tick`"]
    comparison.policy_changes = ["fail_on regression → never"]
    return comparison, not_rerun, capped


def test_every_notice_under_the_comments_headline_is_in_the_summary_and_the_html_report() -> None:
    comparison, not_rerun, capped = _with_notices()
    comment = render_comment(comparison, marker=MARKER)
    summary = render_summary(comparison)
    html = render_html(comparison)
    for text in (capped, not_rerun,
                 "This PR changes the gate policy: fail_on regression → never; takes effect after merge"):
        escaped_md = text.replace("_", "\\_")
        assert escaped_md in comment, text
        assert escaped_md in summary, text
        assert text.replace("'", "&#39;") in html, text
    assert "evalbot compare --agent MODULE:CALLABLE" in html  # how to enable reruns, as in the comment
    # untrusted text stays text: escaped for markdown in the comment, autoescaped in the HTML report
    assert "<b>markup</b>" not in html and "a note with &lt;b&gt;markup&lt;/b&gt; &amp; a `tick`" in html
    assert "<b>markup</b>" not in comment and "\\`tick\\`" in comment
    # the notes keep their order in every output
    assert comment.index("could not be rerun") < comment.index("reruns capped")
    assert html.index("could not be rerun") < html.index("reruns capped")


def test_the_policy_change_notice_excepts_the_budgets_the_baseline_update_accepts() -> None:
    comparison = small()
    comparison.policy_changes = ['budgets {"tokens": "+20%"} → {"tokens": "+50%"}']
    plain = headline_notices(comparison)[0][1]
    assert plain.endswith("takes effect after merge (this run uses the base commit's).")
    comparison.yardstick = [YardstickChange(kind="budget_loosened", eval_set_id="budgets", criterion="tokens",
                                            what="budget loosened from +20% to +50%", accepted=True)]
    accepted = headline_notices(comparison)[0][1]
    assert "except the budgets this PR's baseline update accepts: those apply to this run already" in accepted
    comparison.yardstick[0].accepted = False  # not accepted: the base commit's budgets apply, no exception
    assert "except" not in headline_notices(comparison)[0][1]
    # a PR changing only other settings while its budgets are accepted elsewhere: still no claim about budgets
    comparison.yardstick[0].accepted = True
    comparison.policy_changes = ["alpha 0.05 → 0.1"]
    assert "except" not in headline_notices(comparison)[0][1]
