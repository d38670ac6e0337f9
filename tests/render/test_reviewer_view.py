"""What a reviewer sees first (issue 39, "What the reviewer sees"): case details lead with the turns, eval sets are
listed most severe first, the HTML header's counts add up, the Δ column says what it is, shas are copyable, the
trend charts read without hovering, and informational criteria take one line."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison
from evalbot.render.comment import delta_differs, render_comment, render_summary
from evalbot.render.console import render_text
from evalbot.render.html import render_html
from evalbot.render.mdsafe import JOINER, cell, code, finish, html, inline, no_pings, sha, soften, span
from evalbot.render.views import SEVERITY, by_severity, set_severity
from evalbot.results import Report
from tests.fakes import markdown as md_structure
from tests.fakes.chromium import browser, find_browser
from tests.fakes.comparisons import LINKS, MARKER, REFUND, compared, small
from tests.fakes.reports import JUDGE, RESP, TRAJ, case, criterion, eval_set, main_refreshes, metric, report, turn

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


# 6. trend charts that read without hovering

def trend_page() -> str:
    def run(resp: float) -> Report:
        return report(eval_set("s", [case(f"c{i}", {TRAJ: metric(1.0), RESP: metric(resp, 0.5)}) for i in range(2)],
                                criteria=[criterion(TRAJ), criterion(RESP, 0.5)]))

    main = main_refreshes([run(0.6), run(0.9), run(0.7)])
    return render_html(compare(current=run(0.35), baseline=main, policy=GatePolicy(), baseline_source="main:b.json"))


def test_a_trend_chart_is_wide_and_labels_its_axis_and_this_runs_value() -> None:
    chart = next(c for c in re.findall(r'<svg class="spark".*?</svg>', trend_page(), flags=re.S) if RESP in c)
    width, height = (int(v) for v in re.search(r'width="(\d+)" height="(\d+)"', chart).groups())  # type: ignore[union-attr]
    assert width >= 160 and height >= 40
    texts = re.findall(r'<text class="(\w+)"[^>]*>([^<]*)</text>', chart)
    assert ("nv", "0.350") in texts  # this run's value, written beside its dot
    ticks = [float(t) for cls, t in texts if cls == "tk"]
    assert len(ticks) == 2 and ticks[0] >= 0.9 and ticks[1] <= 0.35  # the axis: top and bottom values
    assert '<line class="ax"' in chart


# 7. informational criteria on one line

LATENCY, TOKENS = "invocation_duration_v1", "token_usage_v1"


def informational_run(pr: bool) -> Report:
    crits = [criterion(TRAJ), criterion(LATENCY, None), criterion(TOKENS, None)]
    return report(eval_set("s", [
        case(f"c{i}", {TRAJ: metric(1.0), LATENCY: metric(0.25 if pr else 0.5, None)}) for i in range(2)
    ], criteria=crits))


def test_html_shows_informational_criteria_on_one_line() -> None:
    c = compared(informational_run(False), informational_run(True))
    page = render_html(c)
    table = page[page.index('<table class="crit">'):page.index("</table>")]
    assert TRAJ in table and LATENCY not in table and TOKENS not in table and "not evaluated" not in table
    lines = re.findall(r'<p class="info">(Informational, no threshold[^<]*)</p>', page)
    assert lines == [f"Informational, no threshold (not gated): {LATENCY} 0.250 (main 0.500) · {TOKENS} (no value)"]


def test_the_comment_collapses_informational_rows_with_a_value() -> None:
    c = compared(informational_run(False), informational_run(True))
    for text in (render_comment(c, marker=MARKER, links=LINKS), render_summary(c)):
        rows = [line for line in text.split("\n") if line.startswith("| ")]
        assert any("tool\\_trajectory" in r for r in rows) and not any("invocation\\_duration" in r for r in rows)
        line = next(line for line in text.split("\n") if line.startswith("Informational"))
        assert line == "Informational, no threshold (not gated): invocation\\_duration\\_v1 0.250 (main 0.500)"


def test_the_comment_has_no_informational_line_without_a_value() -> None:
    def run(pr: bool) -> Report:
        return report(eval_set("s", [case("c", {TRAJ: metric(0.0 if pr else 1.0)})],
                               criteria=[criterion(TRAJ), criterion(TOKENS, None)]))

    text = render_comment(compared(run(False), run(True)), marker=MARKER, links=LINKS)
    assert "Informational" not in text and "token\\_usage" not in text


# 3. counts that agree with each other

def header(page: str) -> str:
    return page[page.index("<header>"):page.index("</header>")]


def counts_of(line: str) -> list[tuple[int, str]]:
    return [(int(n.replace(",", "")), label) for n, label in re.findall(r'<span class="count k-\w+">([\d,]+) ([^<]+)</span>', line)]


def test_the_html_header_counts_add_up_and_agree_with_the_filters() -> None:
    """Against main: the cases by outcome (summing to All); this run: by status (failed + errors = the Failed
    filter). No count of another kind (the run's failing cases beside the outcome "still failing") in the line."""
    def run(pr: bool) -> Report:
        return report(eval_set("s", [
            case("regressed", {TRAJ: metric(0.0 if pr else 1.0)}),
            case("still", {TRAJ: metric(0.0)}),
            case("fixed", {TRAJ: metric(1.0 if pr else 0.0)}),
            case("same", {TRAJ: metric(1.0)}),
            case("crash", {TRAJ: metric(None, status="error", reason="down") if pr else metric(1.0)}),
        ]))

    page = render_html(compared(run(False), run(True)))
    head = header(page)
    against, this_run = head.split('<p class="meta counts">', 1)[1].split("</p>", 1)[0].split("<br>")
    assert "5 cases against main:" in against and "This run, 5 cases:" in this_run
    outcomes, statuses = counts_of(against), counts_of(this_run)
    assert sum(n for n, _ in outcomes) == 5 == sum(n for n, _ in statuses)
    assert dict((label, n) for n, label in outcomes) == {
        "regressed": 1, "could not be evaluated": 1, "fixed": 1, "still failing": 1, "unchanged": 1}
    assert dict((label, n) for n, label in statuses) == {"passed": 2, "failed": 2, "could not be evaluated": 1}
    filters = dict(re.findall(r'id="l-(\w+)">[^<]+ <b>(\d+)</b>', head))
    assert filters["all"] == "5" and filters["failing"] == "3"  # 2 failed + 1 could not be evaluated
    assert 'id="l-failing">Failed or error <b>3</b>' in head


def test_without_errors_the_filter_is_called_failed_as_the_count() -> None:
    def run(pr: bool) -> Report:
        return report(eval_set("s", [case("c", {TRAJ: metric(0.0 if pr else 1.0)}), case("d", {TRAJ: metric(1.0)})]))

    head = header(render_html(compared(run(False), run(True))))
    assert 'id="l-failing">Failed <b>1</b>' in head and '<span class="count k-failed">1 failed</span>' in head


def test_without_a_baseline_only_this_runs_counts() -> None:
    page = render_html(compared(None, five_sets(True)))
    assert "against main" not in header(page) and "This run, 5 cases:" in header(page)


def test_the_console_says_what_its_not_evaluated_counts_count() -> None:
    """The run's summary: n/e in the table counts criteria per case; the totals count cases. When the column holds
    more, the totals line says so (it read "0 not evaluated" under "n/e 2")."""
    unscored = metric(None, 0.5, status="not_evaluated", reason="no reference")
    r = report(eval_set("s", [case(f"c{i}", {TRAJ: metric(1.0), RESP: unscored}) for i in range(2)]))
    text = render_text(r)
    row = next(line for line in text.split("\n") if line.strip().startswith(RESP))
    assert row.split()[-2:] == ["2", "0"]  # n/e 2, err 0
    assert text.split("\n")[-1] == (
        "2 case(s): 2 passed, 0 failed, 0 not evaluated, 0 error(s); the n/e column counts criteria: 2 criterion "
        "verdict(s) not evaluated (a case counts as not evaluated only when no criterion passed or failed it)")
    plain = render_text(report(eval_set("s", [case("c", {TRAJ: metric(1.0)})])))
    assert plain.split("\n")[-1] == "1 case(s): 1 passed, 0 failed, 0 not evaluated, 0 error(s)"


@pytest.mark.skipif(find_browser() is None, reason="no Chromium found (apt-get install chromium)")
def test_the_chart_as_chromium_draws_it(tmp_path: Path) -> None:
    """Laid out in a real browser: the chart is at least 160 px wide and its axis values and this run's value are
    drawn inside it (not clipped, not only in a tooltip)."""
    binary = find_browser()
    assert binary is not None
    path = tmp_path / "trend.html"
    path.write_text(trend_page(), encoding="utf-8")
    with browser(binary, width=1280, height=900) as chrome:
        chrome.open(path.as_uri())
        got = json.loads(chrome.evaluate(
            "JSON.stringify(Array.from(document.querySelectorAll('svg.spark')).map(function(s){"
            "var b=s.getBoundingClientRect();return {w:b.width,texts:Array.from(s.querySelectorAll('text')).map("
            "function(t){var r=t.getBoundingClientRect();return {c:t.getAttribute('class'),t:t.textContent,"
            "inside:r.width>0&&r.left>=b.left-0.5&&r.right<=b.right+0.5&&r.top>=b.top-0.5&&r.bottom<=b.bottom+0.5};})};}))"))
    assert got and all(chart["w"] >= 160 for chart in got)
    resp = next(chart for chart in got if any(t["t"] == "0.350" for t in chart["texts"]))
    assert [t["c"] for t in resp["texts"]] == ["tk", "tk", "nv"] and all(t["inside"] for t in resp["texts"])


# 4. a Δ that is not Current − Baseline says so

def test_a_delta_over_matched_cases_is_marked_and_explained_in_every_output() -> None:
    """small(): the trajectory mean is 0.667 on main (3 cases) and 0.500 here (4 cases, one new): Δ over the 3
    matched cases is ±0.000, not −0.167; the response row's Δ is its Current − Baseline and carries no mark."""
    c = small()
    for text in (render_comment(c, marker=MARKER, links=LINKS), render_summary(c)):
        rows = {line.split(" | ")[0]: line for line in text.split("\n") if line.startswith("| ")}
        assert "| 0.667 | 0.500 | ±0.000† |" in rows["| tool\\_trajectory\\_avg\\_score"]
        assert "| 0.600 | 0.800 | ▲ +0.200 |" in rows["| response\\_match\\_score"]
        table_end = text.index("\n\n", text.index("| response\\_match\\_score"))
        assert text[table_end:].lstrip("\n").startswith("† Δ is the mean change of the cases scored on both sides")
        assert "not Current − Baseline" in text
    page = render_html(c)
    assert '<td>0.667</td><td>0.500</td><td class="d-flat">±0.000†</td>' in page
    assert '<td>0.600</td><td>0.800</td><td class="d-up">▲ +0.200</td>' in page
    assert page.count('<p class="note">† Δ is the mean change of the cases scored on both sides') == 1


def test_no_mark_and_no_footnote_when_every_delta_is_current_minus_baseline() -> None:
    c = severities()
    assert not any(delta_differs(row) for es in c.eval_sets for row in es.rows)
    for text in (render_comment(c, marker=MARKER, links=LINKS), render_summary(c), render_html(c)):
        assert "†" not in text and "not Current − Baseline" not in text


def test_delta_differs_when_a_mean_is_missing_or_the_means_disagree() -> None:
    row = {"delta": -0.2, "current_mean": 0.7, "baseline_mean": 0.9}
    assert not delta_differs(row) and not delta_differs({**row, "current_mean": 0.7004})
    assert delta_differs({**row, "current_mean": 0.75}) and delta_differs({**row, "baseline_mean": None})
    assert not delta_differs({**row, "delta": None}) and not delta_differs({"delta": "x", "current_mean": 1})


def test_a_cases_informational_criteria_read_as_the_eval_sets_line() -> None:
    """In a case's details: valued criteria with their value, the rest named once with "(no value)", not one
    "name —" each."""
    def run(pr: bool) -> Report:
        return report(eval_set("s", [case("c", {TRAJ: metric(0.0 if pr else 1.0), LATENCY: metric(0.25, None),
                                                TOKENS: metric(None, None, status="informational"),
                                                "tool_call_count_v1": metric(None, None, status="informational")})]))

    page = render_html(compared(run(False), run(True)))
    assert re.findall(r'<p class="info">Informational: ([^<]*)</p>', page) == [
        f"{LATENCY} 0.250 · {TOKENS}, tool_call_count_v1 (no value)"]


def test_the_results_commit_is_a_code_span_without_a_joiner() -> None:
    c = severities()
    c.commit = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
    for text in (render_comment(c, marker=MARKER, links=LINKS), render_summary(c)):
        line = next(line for line in text.split("\n") if line.startswith("Results for commit"))
        assert line.startswith("Results for commit `0a1b2c3`. Compared with") and JOINER not in line
    c.commit = "not-a-sha @org #3"
    line = next(line for line in render_comment(c, marker=MARKER).split("\n") if line.startswith("Results for"))
    assert line.startswith(f"Results for commit not-a-sha @{JOINER}org \\#{JOINER}3. Compared with"), line


def test_inline_shows_only_the_trusted_shas_as_code_spans() -> None:
    trusted = ["0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"]
    text = finish(inline("- main at 0a1b2c3d4e5f, ours 0A1B2C3, other 0a1b2c3d4e5fff, ffeeddccbb and #12", 200,
                         trusted))
    assert text == (f"\\- main at `0a1b2c3d4e5f`, ours `0a1b2c3`, other 0a1b2c{JOINER}3d4e5f{JOINER}ff, "
                    f"ffeedd{JOINER}ccbb and \\#{JOINER}12"), text
    assert finish(inline("0a1b2c3d4e5f here", 200, trusted)) == "`0a1b2c3d4e5f` here"
    for untrusted in ((), ["xyz"], "0a1b2c3d4e5f", [7], None):  # a string is no list: nothing is trusted
        assert finish(inline("at 0a1b2c3d4e5f", 200, untrusted)) == f"at 0a1b2c{JOINER}3d4e5f"
    assert finish(inline(f"x {FORGED} 0a1b2c3", 200, trusted)) == finish(inline(f"x {FORGED}", 200)) + " `0a1b2c3`"


# 6. one root error, one line

def erroring(n: int, reason: str = "no run: --actuals runs/x.json could not be used") -> Comparison:
    cases = [case(f"case_{k:05}", {TRAJ: metric(None, status="error")}, status="error", reason=reason)
             for k in range(n)]
    main = report(eval_set("orders", [case(f"case_{k:05}", {TRAJ: metric(1.0)}) for k in range(n)]))
    return compared(main, report(eval_set("orders", cases)))


def test_cases_sharing_a_reason_are_one_line_naming_them() -> None:
    c = erroring(4)
    c.eval_sets[0].cases[3].reason = "agent raised TimeoutError"
    for text in (render_comment(c, marker=MARKER, links=LINKS), render_summary(c)):
        assert text.count("no run: --actuals runs/x.json could not be used") == 1
        assert ("- **3 cases, one reason**: no run: --actuals runs/x.json could not be used — orders / case\\_00000, "
                "orders / case\\_00001, orders / case\\_00002\n") in text
        assert "<b>orders / case_00003</b>" in text and "agent raised TimeoutError" in text  # a reason of its own
        assert "<b>orders / case_00000</b>" not in text


def test_a_group_of_many_cases_names_a_bounded_list_and_fits_the_ladder() -> None:
    c = erroring(3000)
    comment = render_comment(c, marker=MARKER, links=LINKS, target=8000)
    assert len(comment) <= 8000
    line = next(line for line in comment.splitlines() if line.startswith("- **3000 cases, one reason**"))
    named = line.split(" — ", 1)[1].split(", and ")[0].split(", ")
    assert 3 <= len(named) < 3000 and named[0] == "orders / case\\_00000"
    assert f", and {3000 - len(named)} more: see [job summary]({LINKS.summary})" in line, line
    summary = render_summary(c)
    assert "- **3000 cases, one reason**" in summary and "orders / case\\_02999" in summary  # the summary: all


def test_the_html_says_a_shared_reason_once_and_opens_none_of_its_cases() -> None:
    c = erroring(30)
    c.eval_sets[0].cases[29].reason = "agent raised <TimeoutError>"
    page = render_html(c)
    header = re.findall(r'<p class="err">(\d+ cases could not be evaluated, one reason: [^<]*)</p>', page)
    named = ", ".join(f"orders / case_{k:05}" for k in range(20))
    assert header == [f"29 cases could not be evaluated, one reason: no run: --actuals runs/x.json could not be used "
                      f"— {named}, and 9 more (filter: Failed or error)"], header
    opened = re.findall(r'<details class="case c-error[^"]*" open>\s*<summary>.*?<span class="cid">([^<]*)</span>',
                        page)
    assert opened == ["case_00029"]  # its own reason: expanded as before
    assert "agent raised &lt;TimeoutError&gt;" in page and "<TimeoutError>" not in page
