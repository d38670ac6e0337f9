"""The HTML report's trend sparklines (one inline SVG per criterion of an eval set: main's last means, this run's
value highlighted, the threshold) and the per-case outcome glyphs: escaped, bounded, one chart per criterion
whatever the number of cases."""

from __future__ import annotations

import re

from evalbot.compare.baseline import Baseline, TrendPoint
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import CriterionRow
from evalbot.render.html import CHART_HEIGHT, CHART_LEFT, CHART_PAD, CHART_RIGHT, CHART_WIDTH, render_html, trend_chart
from evalbot.results import Report
from tests.fakes.reports import RESP, TRAJ, case, criterion, eval_set, main_refreshes, metric, report

POLICY = GatePolicy()
EVIL = '<script>alert(1)</script></svg><img src=x onerror=alert(2)>"\'&'


def run(resp: float, *, set_id: str = "s", crit: str = RESP, cases: int = 2, failing: int = 0) -> Report:
    crits = [criterion(TRAJ), criterion(crit, 0.5)]
    return report(eval_set(set_id, [
        case(f"c{i}", {TRAJ: metric(0.0 if i < failing else 1.0), crit: metric(resp, 0.5)}) for i in range(cases)
    ], criteria=crits))


def page(main: Baseline, pr: Report) -> str:
    return render_html(compare(current=pr, baseline=main, policy=POLICY, baseline_source="main:b.json"))


def charts(html: str) -> list[str]:
    return re.findall(r'<svg class="spark".*?</svg>', html, flags=re.S)


def test_one_chart_per_criterion_with_ten_past_means_and_this_run() -> None:
    main = main_refreshes([run(0.3 + i / 20) for i in range(12)])
    html = page(main, run(0.2))
    drawn = charts(html)
    assert len(drawn) == 2 and "<th>Mean on main, then this run</th>" in html
    resp = next(c for c in drawn if f"<title>{RESP}: mean" in c)
    assert resp.count('class="pt"') == 10 and resp.count('class="now"') == 1
    assert f"<title>{RESP}: mean on main over the last 10 refreshes, and this run</title>" in resp
    assert "<desc>On main, oldest first: 0.400 (000000000000" in resp and "This run: 0.200. Threshold 0.500.</desc>" in resp
    assert '<line class="thr"' in resp and "<title>this run 0.200</title>" in resp
    assert "<script" not in "".join(drawn) and " on" not in "".join(drawn).replace(" on main", "")


def test_no_trend_no_chart_column() -> None:
    html = render_html(compare(current=run(0.5), baseline=None, policy=POLICY))
    assert charts(html) == [] and "Mean on main" not in html


def test_markup_in_eval_set_and_criterion_names_stays_text() -> None:
    main = main_refreshes([run(0.5, set_id=EVIL, crit=EVIL), run(0.6, set_id=EVIL, crit=EVIL)])
    html = page(main, run(0.4, set_id=EVIL, crit=EVIL))
    drawn = charts(html)
    assert len(drawn) == 2
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/svg&gt;&lt;img src=x onerror=alert(2)&gt;&#34;&#39;&amp;"
    assert f"<title>{escaped}: mean on main" in "".join(drawn)
    assert "<script>alert" not in html and "<img" not in html and html.count("</svg>") == 2


def test_hostile_commit_and_date_in_a_trend_stay_text() -> None:
    row = CriterionRow(criterion="c", change="unchanged", threshold=0.5, current_mean=0.5,
                       trend=[TrendPoint(mean=0.4, commit="</title><script>x", created_at="<b>2026"), TrendPoint(mean=0.5)])
    chart = trend_chart(row)
    assert chart is not None and chart["dots"][0]["label"] == "0.400 (</title><scr, <b>2026)"
    main = main_refreshes([run(0.5)])
    crit = main.eval_sets["s"].criteria[RESP]
    bad = crit.model_copy(update={"trend": [TrendPoint(mean=0.4, commit="</title><script>x"), *(crit.trend or [])]})
    main = main.model_copy(update={"eval_sets": {"s": main.eval_sets["s"].model_copy(
        update={"criteria": {**main.eval_sets["s"].criteria, RESP: bad}})}})
    html = page(main, run(0.5))
    assert "0.400 (&lt;/title&gt;&lt;scr)" in html and "<script>x" not in html


def test_the_chart_geometry() -> None:
    """Oldest at the left, this run in the last slot at the right edge, higher means higher up; a flat trend
    stays a flat line in the middle (not stretched to fill the height); non-finite numbers are left out."""
    row = CriterionRow(criterion="c", change="unchanged", current_mean=1.0,
                       trend=[TrendPoint(mean=0.0), TrendPoint(mean=0.5)])
    chart = trend_chart(row)
    assert chart is not None
    xs = [float(d["x"]) for d in chart["dots"]] + [float(chart["now"]["x"])]
    ys = [float(d["y"]) for d in chart["dots"]] + [float(chart["now"]["y"])]
    assert xs == sorted(xs) and xs[0] == CHART_LEFT and xs[-1] == CHART_RIGHT < CHART_WIDTH
    assert ys[0] == CHART_HEIGHT - CHART_PAD and ys[-1] == CHART_PAD and ys[0] > ys[1] > ys[2]
    assert chart["threshold"] is None
    flat = trend_chart(CriterionRow(criterion="c", change="unchanged", current_mean=0.8,
                                    trend=[TrendPoint(mean=0.8), TrendPoint(mean=0.8)]))
    assert flat is not None and {d["y"] for d in flat["dots"]} == {flat["now"]["y"]} == {f"{CHART_HEIGHT / 2:.1f}"}
    odd = trend_chart(CriterionRow(criterion="c", change="unchanged", current_mean=float("nan"),
                                   threshold=float("inf"), trend=[TrendPoint(mean=0.8)]))
    assert odd is not None and odd["now"] is None and odd["threshold"] is None and "This run: no mean." in odd["desc"]
    assert trend_chart(CriterionRow(criterion="c", change="new", current_mean=0.5)) is None


def test_case_glyphs_show_each_cases_outcomes_on_main() -> None:
    main = main_refreshes([run(0.5, failing=1), run(0.5), run(0.5, failing=1)])
    html = page(main, run(0.5))
    assert html.count('<span class="h">✗✓✗</span>') == 1 and html.count('<span class="h">✓✓✓</span>') == 1
    assert "its outcomes in the last refreshes of the baseline on main, oldest first" in html


def test_many_cases_still_draw_one_chart_per_criterion() -> None:
    """The charts do not grow with the cases; the glyphs add a few bytes per case written as markup (fewer when
    the case is only in the compressed data; bench/bench_html.py measures 10,000)."""
    main = main_refreshes([run(0.5, cases=2_000, failing=i % 2) for i in range(3)])
    pr = run(0.5, cases=2_000)
    comparison = compare(current=pr, baseline=main, policy=POLICY)
    assert len(charts(render_html(comparison))) == 2
    html = render_html(comparison, markup_limit=10**6)
    without = render_html(comparison.model_copy(update={"eval_sets": [es.model_copy(update={
        "cases": [c.model_copy(update={"main_outcomes": None}) for c in es.cases]}) for es in comparison.eval_sets]}),
        markup_limit=10**6)
    per_case = (len(html.encode()) - len(without.encode())) / 2_000
    assert 20 < per_case < 40, per_case
