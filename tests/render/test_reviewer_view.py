"""What a reviewer sees first (issue 39, "What the reviewer sees"): case details lead with the turns, eval sets are
listed most severe first, the HTML header's counts add up, the Δ column says what it is, shas are copyable, the
trend charts read without hovering, and informational criteria take one line."""

from __future__ import annotations

import re

from evalbot.compare.model import Comparison
from evalbot.render.comment import render_comment, render_summary
from evalbot.render.html import render_html
from evalbot.render.mdsafe import JOINER, cell, code, finish, html, inline, no_pings, sha, soften, span
from evalbot.render.views import SEVERITY, by_severity, set_severity
from evalbot.results import Report
from tests.fakes import markdown as md_structure
from tests.fakes.comparisons import LINKS, MARKER, REFUND, compared
from tests.fakes.reports import JUDGE, TRAJ, case, eval_set, metric, report, turn

WRONG_REFUND = [REFUND[0], ("refund", {"order_id": "A17", "amount": 250.0})]


def five_sets(pr: bool) -> Report:
    """Five eval sets in the reverse of their severity: unchanged, fixed, inconclusive, an error, a regression (a
    judged one with votes, and a wrong tool call)."""
    calm = eval_set("calm", [case("same", {TRAJ: metric(1.0)})])
    better = eval_set("better", [case("mended", {TRAJ: metric(1.0 if pr else 0.0)})])
    wobbly = eval_set("wobbly", [case("split", {JUDGE: metric(0.0 if pr else 1.0, 0.8,
                                                               votes=[(2, 3) if pr else (3, 2)])})])
    crash = metric(None, status="error", reason="tool server down") if pr else metric(1.0)
    broken = eval_set("broken", [case("crash", {TRAJ: crash})])
    worse = eval_set("worse", [case("refund", {
        TRAJ: metric(0.0 if pr else 1.0),
        JUDGE: metric(0.0 if pr else 1.0, 0.8, votes=[(0, 5) if pr else (5, 0)]),
    }, turns=[turn(expected_calls=REFUND, actual_calls=WRONG_REFUND if pr else REFUND)])])
    return report(calm, better, wobbly, broken, worse)


def severities() -> Comparison:
    return compared(five_sets(False), five_sets(True))


EXPECTED_ORDER = ["worse", "broken", "wobbly", "better", "calm"]


# 1. details: the turns first, the statistics after

def details_of(text: str, title: str) -> str:
    start = text.index(title)
    return text[start:text.index("</details>", start)]


def test_a_regressed_case_shows_its_trajectory_diff_before_its_votes() -> None:
    for text in (render_comment(severities(), marker=MARKER, links=LINKS), render_summary(severities())):
        block = details_of(text, "<b>worse / refund</b>")
        diff, votes = block.index("Tool calls, expected (−) vs actual (+)"), block.index("judge votes (pass–fail)")
        assert block.index("**Turn 1**") < diff < votes
        assert "Fisher exact p" in block[votes:]


def test_an_inconclusive_case_shows_its_judge_rationale_before_its_votes() -> None:
    block = details_of(render_comment(severities(), marker=MARKER, links=LINKS), "<b>wobbly / split</b>")
    assert block.index("**Turn 1**") < block.index("Judge on ") < block.index("judge votes (pass–fail) 2–3")


def test_the_html_case_body_shows_the_turns_before_the_noise_check() -> None:
    page = render_html(severities())
    body = page[page.index('<span class="cid">refund</span>'):]
    body = body[:body.index("</details>")]
    assert body.index('<div class="turn">') < body.index('<p class="noise">Noise check')
    assert body.index('<table class="m">') < body.index('<div class="turn">')


# 2. eval sets most severe first

def test_severity_classes_of_the_five_sets() -> None:
    c = severities()
    got = {es.eval_set_id: SEVERITY[set_severity(es, c.policy)] for es in c.eval_sets}
    assert got == {"calm": "unchanged", "better": "fixed", "wobbly": "inconclusive", "broken": "error",
                   "worse": "regression"}


def test_comment_and_summary_list_eval_sets_most_severe_first() -> None:
    c = severities()
    assert [es.eval_set_id for es in c.eval_sets] == EXPECTED_ORDER[::-1]  # given in the reverse order
    for text in (render_comment(c, marker=MARKER, links=LINKS), render_summary(c)):
        assert re.findall(r"^#### (\w+)", text, re.M) == EXPECTED_ORDER


def test_html_lists_eval_sets_most_severe_first() -> None:
    page = render_html(severities())
    assert re.findall(r'<h2>(\w+) <small>', page) == EXPECTED_ORDER


def test_the_order_is_stable_within_a_class() -> None:
    def run(pr: bool) -> Report:
        return report(*(eval_set(name, [case("c", {TRAJ: metric(0.0 if pr and name in ("b", "d") else 1.0)})])
                        for name in ("a", "b", "c", "d", "e")))

    c = compared(run(False), run(True))
    assert [c.eval_sets[i].eval_set_id for i in by_severity(c.eval_sets, c.policy)] == ["b", "d", "a", "c", "e"]
    assert re.findall(r'<h2>(\w+) <small>', render_html(c)) == ["b", "d", "a", "c", "e"]


def test_an_inconclusive_set_counts_as_a_regression_when_the_policy_blocks_on_it() -> None:
    c = compared(five_sets(False), five_sets(True), block_inconclusive=True)
    wobbly = next(es for es in c.eval_sets if es.eval_set_id == "wobbly")
    assert SEVERITY[set_severity(wobbly, c.policy)] == "regression"


# 5. copyable shas

SHA = "1a2b3c4d5e6f7a8b"  # the baseline commit of tests.fakes.comparisons.compared
HEX_RUN = re.compile(r"(?<![A-Za-z0-9.])[0-9A-Fa-f]{7,}(?![A-Za-z0-9])")
FORGED = f"{chr(0xE000)}{'0' * 32}`deadbeefcafe1234`{chr(0xE001)}"
"""A sha token as mdsafe.sha writes it, with a guessed secret."""


def baseline_line(text: str) -> str:
    return next(line for line in text.split("\n") if line.startswith("Compared with the baseline"))


def test_the_baseline_sha_is_a_code_span_without_a_joiner() -> None:
    c = severities()
    for text in (render_comment(c, marker=MARKER, links=LINKS), render_summary(c)):
        line = baseline_line(text)
        assert f" at `{SHA[:12]}` (" in line and JOINER not in line
        assert not md_structure.problems(text, MARKER if text.startswith(MARKER) else None)


def test_a_baseline_commit_that_is_not_hex_is_inline_text() -> None:
    c = severities()
    assert c.baseline is not None
    c.baseline.commit = "`deadbeefcafe` @org/team #12"
    line = baseline_line(render_comment(c, marker=MARKER, links=LINKS))
    assert "`deadbeefcafe`" not in line and f"@{JOINER}org" in line
    assert not md_structure.live_references([line])


def test_sha_filter_output() -> None:
    assert finish(sha("ABCDEF0123456789", 12)) == "`abcdef012345`"
    assert finish(sha("abcdef0", 3)) == "`abcdef0`"  # never fewer than 7 digits
    for hostile in ("abc", "abcdefg123", "`abcdef0123`", "abcdef0123\n@x", 1234567890, None):
        out = finish(sha(hostile))
        assert "`" not in out.replace("\\`", "") and not md_structure.live_references([out])


def test_soften_keeps_only_this_processes_tokens() -> None:
    """A macro's output goes through soften: the sha filter's token survives it, a forged one (its secret guessed)
    does not, and neither do the token's characters in any filter's output."""
    mine = sha("deadbeefcafe1234")
    assert finish(soften(f"at {mine} and deadbeefcafe1234")) == f"at `deadbeefcafe` and {no_pings('deadbeefcafe1234')}"
    for out in (soften(FORGED), inline(FORGED), html(FORGED), cell(FORGED), span(FORGED), code(FORGED)):
        text = finish(out)
        assert chr(0xE000) not in text and chr(0xE001) not in text
    for out in (soften(FORGED), inline(FORGED), html(FORGED), cell(FORGED)):
        assert not HEX_RUN.search(finish(out)), out


def test_a_forged_token_in_untrusted_text_printed_without_a_filter_stays_broken() -> None:
    """A custom template printing a case's reason (PR data) unfiltered, directly, in a macro and inside raw HTML:
    the forged token is not taken for a trusted sha; the only unbroken sha is the baseline's, in its code span."""
    c = severities()
    c.eval_sets[0].cases[0].reason = f"x {FORGED} y"
    template = (
        '{% import "macros.md.j2" as m with context %}{% macro raw(v) %}<details><summary>{{ v }}</summary>\n\n'
        '</details>{% endmacro %}'
        "{{ marker }}\n{{ m.baseline_line(c) }}\n\n{% for es in c.eval_sets %}{% for x in es.cases %}"
        "{% if x.reason %}{{ x.reason }}\n\n{{ raw(x.reason) }}\n\n{% endif %}{% endfor %}{% endfor %}"
    )
    text = render_comment(c, marker=MARKER, template=template)
    assert "\nx " in text and "<summary>x " in text and "deadbe" in text  # printed, broken
    assert [m.group(0) for m in HEX_RUN.finditer(text)] == [SHA[:12]]
    assert f"`{SHA[:12]}`" in text and chr(0xE000) not in text and chr(0xE001) not in text
    assert not md_structure.problems(text, MARKER)
