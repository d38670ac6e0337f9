"""Judge cost in the comment: tokens and estimated cost per criterion and in total, samples saved by the cache and
by sequential sampling, the change against the baseline run's cost (kept in the baseline), and "unknown", never 0,
for an unpriced model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalbot.compare.baseline import build_baseline, dump_baseline, parse_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison
from evalbot.errors import InputError
from evalbot.render.comment import comment_marker, render_comment, render_summary, usage_view
from evalbot.render.html import render_html
from evalbot.results import Report
from tests.fakes import markdown as md_structure
from tests.fakes.reports import JUDGE, TRAJ, case, eval_set, metric, report

MARKER = comment_marker()
RUBRIC = "rubric_based_final_response_quality_v1"


def usage(judge_cost: float | None, rubric_cost: float | None, *, requests: int = 10, cached: int = 0) -> dict[str, Any]:
    total = None if judge_cost is None or rubric_cost is None else judge_cost + rubric_cost
    return {
        "per_criterion": {
            JUDGE: {"requests": requests, "input_tokens": 12_000, "output_tokens": 900, "cached_samples": cached,
                    "models": ["gemini-2.5-flash"], "estimated_cost_usd": judge_cost},
            RUBRIC: {"requests": 4, "input_tokens": 8_000, "output_tokens": 2_000, "models": ["gemini-2.5-flash"],
                     "estimated_cost_usd": rubric_cost},
        },
        "total": {"requests": requests + 4, "input_tokens": 20_000, "output_tokens": 2_900, "cached_samples": cached,
                  "estimated_cost_usd": total},
        "prices": "estimated from list prices",
    }


def run(cost: dict[str, Any] | None) -> Report:
    return report(eval_set("s", [case("a", {TRAJ: metric(1.0), JUDGE: metric(1.0, 0.5, votes=[(5, 0)])})]),
                  usage=cost)


def compared(main: Report | None, pr: Report) -> Comparison:
    baseline = None
    if main is not None:  # through the file, as the PR reads it
        baseline = parse_baseline(dump_baseline(build_baseline(main, commit="a" * 40, created_at=None)), "b.json")
    return compare(current=pr, baseline=baseline, policy=GatePolicy(), baseline_source="main:b.json")


def test_baseline_keeps_the_main_runs_cost() -> None:
    """``evalbot baseline`` records the run's usage and cost per criterion and in total."""
    b = build_baseline(run(usage(0.004, 0.006)), commit="a", created_at=None)
    assert b.usage is not None and b.usage.total.estimated_cost_usd == pytest.approx(0.01)
    assert b.usage.per_criterion[JUDGE].output_tokens == 900 and b.usage.total.requests == 14
    assert build_baseline(run(None), commit="a", created_at=None).usage is None


def test_comment_shows_cost_per_criterion_total_and_change() -> None:
    """A collapsed block: summary with the total and the change against the baseline run; a row per criterion."""
    c = compared(run(usage(0.004, 0.006)), run(usage(0.005, 0.0075, cached=3)))
    text = render_comment(c, marker=MARKER)
    assert not md_structure.problems(text, MARKER)
    assert ("<details><summary>Judge cost ≈ 0.0125 USD · 14 request(s), 20,000 input + 2,900 output tokens · 3 from "
            "the cache · baseline run ≈ 0.0100 USD (change +0.0025 USD (+25%))</summary>") in text
    assert "| final\\_response\\_match\\_v2 | 10 | 12,000 | 900 | 3 | 0\\.0050 USD | 0\\.0040 USD | \\+0.0010 USD (+25%) |" \
        in text
    assert "| total | 14 | 20,000 | 2,900 | 3 | 0\\.0125 USD | 0\\.0100 USD | \\+0.0025 USD (+25%) |" in text
    assert "Saved: 3 sample(s) answered by the judge cache (not paid for)." in text
    cheaper = render_comment(compared(run(usage(0.004, 0.006)), run(usage(0.002, 0.003))), marker=MARKER)
    assert "(change −0.0050 USD (−50%))" in cheaper
    assert "Judge cost" in render_summary(c)


def test_unknown_price_is_never_shown_as_zero() -> None:
    """An unpriced model's cost, and every total or change it enters, is "unknown"."""
    c = compared(run(usage(0.004, 0.006)), run(usage(None, 0.006)))
    text = render_comment(c, marker=MARKER)
    assert "Judge cost ≈ unknown" in text and "(change unknown)" in text
    assert "| final\\_response\\_match\\_v2 | 10 | 12,000 | 900 | 0 | unknown | 0\\.0040 USD | unknown |" in text
    assert "| total | 14 | 20,000 | 2,900 | 0 | unknown | 0\\.0100 USD | unknown |" in text
    assert "| 0\\.0000 USD" not in text and "≈ 0.0000" not in text  # no cost shown as 0 (a change of 0 may be)
    html = render_html(c)
    assert "<td>unknown</td><td>0.0040 USD</td><td>unknown</td>" in html


def test_no_baseline_cost_and_html_change() -> None:
    """A baseline written before it kept the cost shows "—" for the baseline run; the HTML report has the columns."""
    c = compared(run(None), run(usage(0.004, 0.006)))
    text = render_comment(c, marker=MARKER)
    assert "baseline run" not in text.split("<summary>Judge cost")[1].split("</summary>")[0]
    assert "| total | 14 | 20,000 | 2,900 | 0 | 0\\.0100 USD | — | — |" in text
    html = render_html(compared(run(usage(0.004, 0.006)), run(usage(0.005, 0.0075))))
    assert "<th>Baseline run</th><th>Change</th>" in html
    assert "<td>0.0125 USD</td><td>0.0100 USD</td><td>+0.0025 USD (+25%)</td>" in html


def test_samples_saved_by_sequential_sampling_are_shown_when_reported() -> None:
    """The usage summary's ``saved_samples`` (sequential sampling) appears in the summary line and the saved line."""
    data = usage(0.004, 0.006, cached=2)
    data["total"]["saved_samples"] = 7
    view = usage_view(data, None)
    assert view is not None
    assert "· 7 saved by sequential sampling" in view["summary"]
    assert view["saved"] == ("Saved: 2 sample(s) answered by the judge cache (not paid for); 7 sample(s) not asked: "
                             "sequential sampling had its majority.")
    assert "sequential" not in (usage_view(usage(0.004, 0.006), None) or {})["summary"]


def test_hostile_values_in_plain_usage_data_are_not_shown() -> None:
    """Plain data from an artifact: non-numbers count as 0 or unknown, never printed as given."""
    view = usage_view({"per_criterion": {"x": {"requests": "9 [link](https://e.vil)", "estimated_cost_usd": "free"}},
                       "total": {"requests": True, "estimated_cost_usd": float("nan")}}, {"total": "lots"})
    assert view is not None
    assert view["rows"][0]["requests"] == "0" and view["rows"][0]["cost"] == "unknown"
    assert view["rows"][1]["requests"] == "0" and view["rows"][1]["cost"] == "unknown"


@pytest.mark.parametrize("row", [
    {"requests": -1}, {"estimated_cost_usd": "NaN"}, {"estimated_cost_usd": -0.5}, {"output_tokens": 10**13},
    {"requests": "three"}, {"estimated_cost_usd": 1e300}, {"currency": "EUR"},
])
def test_hostile_usage_in_a_baseline_is_refused(row: dict[str, Any]) -> None:
    """A baseline's usage is numbers in range or the baseline is unreadable (file and pointer named)."""
    data = json.loads(dump_baseline(build_baseline(run(usage(0.004, 0.006)), commit="a", created_at=None)))
    data["usage"]["total"].update(row)
    with pytest.raises(InputError) as err:
        parse_baseline(json.dumps(data), "main:b.json")
    assert err.value.path == "main:b.json" and err.value.pointer.startswith("/usage/total")


def test_cost_never_makes_a_baseline_update_stale() -> None:
    """The cost is not a result: a PR's refreshed baseline made with the judge cache (cost 0) still matches."""
    from evalbot.compare.accept import accept
    from evalbot.compare.gate import GatePolicy

    file = build_baseline(run(usage(0.0, 0.0, cached=14)), commit=None, created_at=None)
    result = accept(None, file, run(usage(0.004, 0.006)), GatePolicy(), "b.json")
    assert result.update.matches and result.update.differences == []
