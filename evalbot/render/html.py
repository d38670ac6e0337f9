"""A self-contained HTML report of a comparison (or of a run without a baseline): one file, no network requests.

Pure: a Comparison (or a Report) in, the HTML text out; the CLI and the Action write it. The page shows every eval
set with its criterion table and deltas, and every case with its turns, the trajectory diff (argument-level
changes from :mod:`evalbot.render.trajdiff`), the responses, the judges' rationales and vote splits and the noise verdicts.

Safety: everything shown comes from a PR (agent answers, eval sets, judge text) and is untrusted. The template is
rendered in a sandboxed Jinja environment with autoescaping on, from a context of plain data only (dicts, lists,
strings, numbers, booleans, None), never model objects. The page carries a Content-Security-Policy that forbids
every fetch and allows only the page's own stylesheet and script, by their SHA-256 hashes: even markup that got
through could neither run a script nor load anything. Filters work with JavaScript off (radio buttons and CSS); the
optional inline script adds the search box.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import jinja2
import markupsafe
from jinja2.sandbox import ImmutableSandboxedEnvironment

from evalbot import __version__
from evalbot.compare.baseline import BaselineUsage
from evalbot.compare.delta import compare
from evalbot.compare.efficiency import efficiency_rows
from evalbot.compare.flaky import symbols
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import CaseComparison, Comparison, CriterionRow, EvalSetComparison, MetricDelta
from evalbot.formats.numbers import p_value_text
from evalbot.render import mdsafe, words
from evalbot.render.comment import cost_change, money, verdict
from evalbot.render.trajdiff import call_text, diff_calls
from evalbot.render.views import ORDER, TITLES, history_text, judge_text, votes_text
from evalbot.results import CriterionUsage, JudgeDetails, JudgeUsage, MetricResult, Report, TurnView, UsageRow

TEMPLATE = "report.html.j2"
STYLE = "report.css.j2"
SCRIPT = "report.js.j2"
TEXT_LIMIT = 20_000
"""Characters of one response, prompt or rationale shown; the JSON report holds the rest."""
VALUE_LIMIT = 400
"""Characters of one argument value in the trajectory diff."""
OPEN_LIMIT = 50
"""Cases shown expanded at load (regressed, inconclusive, errored first); the rest open on a click."""
MARKUP_LIMIT = 1_000
"""Cases whose details are written into the page as markup: every regressed, flaky, inconclusive and errored case
(what the verdict rests on), then failing cases up to this many in all; they read with JavaScript off. Every other
case's details travel as compressed data and are built by the page's script when the case is opened, so a report
of 10,000 cases stays under 10 MB and opens at once."""
DATA_ID = "case-data"
"""The id of the element holding the deferred cases' details (gzip, then base64: no character the HTML parser
could take for markup)."""
MARKUP_FIRST = ("regressed", "flaky", "inconclusive", "error")
BODY_KEYS = ("reason", "runs", "history", "metrics", "info", "noise", "turns")
"""The parts of a case's data that make its details (the rest is its summary line)."""
CHUNK = 100
"""Cases per block that the browser lays out only when it is near the viewport (content-visibility): a page of
10,000 cases would otherwise be laid out again and again, whole, while it loads."""
FILTERS = (
    ("all", "All"), ("regressed", "Regressed"), ("fixed", "Fixed"), ("failing", "Failing"),
    ("inconclusive", "Inconclusive"),
)
Data = dict[str, Any]
NO_BASELINE = "(no baseline: evalbot run)"
CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 140, 32, 4
"""The trend sparkline's size in CSS pixels, and the margin that keeps its dots inside."""
MIN_SPAN = 0.05
"""Smallest range of means a sparkline spreads over its height (times the largest magnitude, at least 1): a trend
that moved by a thousandth stays a flat line instead of filling the chart."""
NOTEWORTHY = frozenset({"regressed", "fixed", "inconclusive", "error", "still_failing"})
"""Changes that keep an informational metric in the case's table instead of the one-line list."""


def text_node(value: object) -> markupsafe.Markup:
    """``value`` escaped for an element's text (``&``, ``<``, ``>``): quotes need no escaping there, and the
    report's argument values are full of them. Never used inside an attribute (the template's ``t`` filter)."""
    if isinstance(value, markupsafe.Markup):
        return value
    text = str(value)
    return markupsafe.Markup(text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;"))


@cache
def environment() -> jinja2.Environment:
    """The sandboxed, autoescaping environment of the HTML report (its templates are evalbot's own files)."""
    env = ImmutableSandboxedEnvironment(
        loader=jinja2.PackageLoader("evalbot.render", "templates"),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["t"] = text_node
    return env


@cache
def asset(name: str) -> tuple[str, str]:
    """The text of the inline stylesheet or script, and its CSP source expression (``'sha256-…'``)."""
    text = environment().get_template(name).render()
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return text, f"'sha256-{digest}'"


def clip(text: str | None, limit: int = TEXT_LIMIT) -> str | None:
    """``text`` cut to ``limit`` characters, saying how many more the JSON report holds."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters in the JSON report)"


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def delta_text(delta: float | None) -> tuple[str, str]:
    """The delta as shown (``▲ +0.100``) and its direction (``up``, ``down``, ``flat`` or ``none``)."""
    if delta is None:
        return "—", "none"
    if abs(delta) < 5e-4:
        return "= 0.000", "flat"
    return f"{'▲' if delta > 0 else '▼'} {delta:+.3f}".replace("-", "−"), "up" if delta > 0 else "down"


def _point_label(mean: float, commit: str | None, created_at: str | None) -> str:
    where = ", ".join(x for x in (commit[:12] if commit else None, created_at[:10] if created_at else None) if x)
    return f"{mean:.3f}" + (f" ({where})" if where else "")


def trend_chart(row: CriterionRow) -> Data | None:
    """The row's sparkline (None without a trend on main): main's means oldest first, then this run's mean
    highlighted in the last slot, and the threshold as a dashed line, as SVG coordinates, with the values in words
    for its title and description. Non-finite numbers are left out (a trend point cannot hold one; a mean never
    should)."""
    past = [p for p in row.trend if math.isfinite(p.mean)]
    if not past:
        return None
    here = row.current_mean if row.current_mean is not None and math.isfinite(row.current_mean) else None
    threshold = row.threshold if row.threshold is not None and math.isfinite(row.threshold) else None
    values = [p.mean for p in past] + [v for v in (here, threshold) if v is not None]
    lo, hi = min(values), max(values)
    span = MIN_SPAN * max(1.0, abs(lo), abs(hi))
    if hi - lo < span:
        mid = (hi + lo) / 2
        lo, hi = mid - span / 2, mid + span / 2
    step = (CHART_WIDTH - 2 * CHART_PAD) / len(past)  # this run takes the slot after the last refresh

    def y(v: float) -> str:
        return f"{CHART_PAD + (hi - v) / (hi - lo) * (CHART_HEIGHT - 2 * CHART_PAD):.1f}"

    dots = [{"x": f"{CHART_PAD + i * step:.1f}", "y": y(p.mean), "label": _point_label(p.mean, p.commit, p.created_at)}
            for i, p in enumerate(past)]
    on_main = ", ".join(d["label"] for d in dots)
    now = None if here is None else {"x": f"{CHART_WIDTH - CHART_PAD:.1f}", "y": y(here), "label": f"this run {here:.3f}"}
    runs = f"{len(past)} refresh{'es' if len(past) != 1 else ''}"
    return {
        "width": CHART_WIDTH, "height": CHART_HEIGHT,
        "line": " ".join(f"{d['x']},{d['y']}" for d in dots),
        "dots": dots,
        "last": dots[-1],
        "now": now,
        "threshold": None if threshold is None else y(threshold),
        "title": f"{row.criterion}: mean on main over the last {runs}, and this run",
        "desc": f"On main, oldest first: {on_main}. "
                + ("This run: no mean." if here is None else f"This run: {here:.3f}.")
                + ("" if threshold is None else f" Threshold {threshold:.3f}."),
    }


def row_data(row: CriterionRow) -> Data:
    shown, direction = delta_text(row.delta)
    return {
        "criterion": row.criterion,
        "judged": row.judged,
        "threshold": fmt(row.threshold),
        "baseline": fmt(row.baseline_mean),
        "current": fmt(row.current_mean),
        "delta": shown,
        "direction": direction,
        "change": words.row_change(row.change, row.p_value, row.paired),
        "change_key": row.change,
        "paired": row.paired,
        "scored": row.scored,
        "passed": row.passed,
        "failed": row.failed,
        "outcomes": [f"{n} {label}" for _, n, label in words.case_counts(row.model_dump())],
        "chart": trend_chart(row),
    }


def tags(case: CaseComparison) -> list[str]:
    """The filters a case shows under (besides ``all``)."""
    out: list[str] = [case.category] if case.category in ("regressed", "fixed", "inconclusive") else []
    if case.category == "flaky":
        out.append("regressed")  # under the Regressed filter too, with its own badge
    if case.current is not None and case.current.status in ("failed", "error"):
        out.append("failing")
    return out


def metric_data(name: str, result: MetricResult | None, delta: MetricDelta | None) -> Data:
    return {
        "name": name,
        "judged": bool(delta and delta.judged),
        "baseline": fmt(delta.baseline_score) if delta else "—",
        "current": fmt(result.score if result else (delta.current_score if delta else None)),
        "threshold": fmt(result.threshold) if result else "—",
        "status": (result.status if result else (delta.current_status if delta else None) or "—").replace("_", " "),
        "change": (delta.change if delta else "").replace("_", " "),
        "change_key": delta.change if delta else "",
        "reason": clip(result.reason if result else None),
        "votes": votes_text(delta.current_votes) if delta else None,
        "baseline_votes": votes_text(delta.baseline_votes) if delta else None,
        "p": p_value_text(delta.p_value) if delta else None,
    }


def calls_data(turn: TurnView) -> list[Data]:
    """Trajectory diff rows (or the actual calls alone when the case expects none recorded)."""
    if turn.expected_tool_calls is None:
        return [
            {"kind": "actual", "expected": None, "actual": call_text(c, VALUE_LIMIT), "expected_pos": None,
             "actual_pos": i, "changes": []}
            for i, c in enumerate(turn.actual_tool_calls, 1)
        ]
    return [
        {
            "kind": row.kind,
            "expected": call_text(row.expected, VALUE_LIMIT) if row.expected is not None else None,
            "actual": call_text(row.actual, VALUE_LIMIT) if row.actual is not None and row.kind != "same" else None,
            "expected_pos": row.expected_pos,
            "actual_pos": row.actual_pos,
            "changes": [{"key": c.key, "expected": c.expected, "actual": c.actual} for c in row.changes],
        }
        for row in diff_calls(turn.expected_tool_calls, turn.actual_tool_calls)
    ]


def turn_data(index: int, turn: TurnView, metrics: Mapping[str, MetricResult],
              deltas: Mapping[str, MetricDelta], judged: frozenset[str]) -> Data:
    notes = []
    for name, metric in metrics.items():
        if name not in judged or len(metric.per_invocation) <= index:
            continue
        inv = metric.per_invocation[index]
        delta = deltas.get(name)
        votes = delta.current_votes if delta else None
        notes.append({
            "criterion": name,
            "status": inv.status.replace("_", " "),
            "score": fmt(inv.score),
            "votes": votes_text([votes[index]]) if votes and index < len(votes) else None,
            "text": clip(judge_text(JudgeDetails.read(inv.details), inv.reason)),
        })
    calls = calls_data(turn)
    return {
        "index": index + 1,
        "user": clip(turn.user),
        "expected_response": clip(turn.expected_response),
        "actual_response": clip(turn.actual_response),
        "calls": calls,
        "expects_calls": turn.expected_tool_calls is not None,
        "differs": any(c["kind"] not in ("same", "actual") for c in calls),
        "notes": notes,
    }


def case_data(case: CaseComparison, judged: frozenset[str]) -> Data:
    current = case.current
    deltas = {d.criterion: d for d in case.metrics}
    metrics = current.metrics if current is not None else {}
    names = list(dict.fromkeys([*metrics, *deltas]))
    noise = [
        {"criterion": d.criterion, "votes": votes_text(d.current_votes), "baseline_votes": votes_text(d.baseline_votes),
         "p": p_value_text(d.p_value), "change": d.change.replace("_", " ")}
        for d in case.metrics if d.judged and (d.current_votes or d.baseline_votes)
    ]
    rows = [metric_data(n, metrics.get(n), deltas.get(n)) for n in names]
    info = [m for m in rows if m["status"] == "informational" and m["change_key"] not in NOTEWORTHY]
    return {
        "id": case.eval_id,
        "category": case.category,
        "category_label": TITLES.get(case.category, case.category.replace("_", " ").capitalize()),
        "status": (current.status if current else "absent").replace("_", " "),
        "baseline_status": (case.baseline_status or "—").replace("_", " "),
        "tags": " ".join(f"t-{t}" for t in tags(case)),
        "reason": clip(case.reason),
        "history": history_text(case),
        "runs": case.runs.describe() if case.runs is not None else None,
        "glyphs": symbols(case.main_outcomes) if case.main_outcomes else None,
        "metrics": [m for m in rows if m not in info],
        "info": " · ".join(
            m["name"] + " " + m["current"] + (f" (baseline {m['baseline']})" if m["baseline"] not in ("—", m["current"])
                                              else "") for m in info),
        "noise": noise,
        "turns": [
            turn_data(i, t, metrics, deltas, judged) for i, t in enumerate(current.turns if current else [])
        ],
        "open": False,
        "lazy": None,
    }


def set_data(es: EvalSetComparison, judged: frozenset[str]) -> Data:
    """An eval set: its table, and its cases most important first (as the comment orders its sections)."""
    rank = {category: i for i, category in enumerate(ORDER)}
    ordered = sorted(es.cases, key=lambda c: rank.get(c.category, len(rank)))
    cases = [case_data(c, judged) for c in ordered]
    rows = [row_data(r) for r in es.rows]
    counts = {t: sum(t in c["tags"].split(" ") for c in cases) for t in ("t-regressed", "t-failing")}
    return {
        "id": es.eval_set_id,
        "path": es.path,
        "status": (es.status or "absent").replace("_", " "),
        "in_baseline": es.in_baseline,
        "in_current": es.in_current,
        "errors": [" ".join(x for x in (p.pointer, p.message) if x) for p in es.errors],
        "rows": rows,
        "charts": any(r["chart"] for r in rows),
        "glyphs": any(c["glyphs"] for c in cases),
        "cases": cases,
        "chunks": [cases[i : i + CHUNK] for i in range(0, len(cases), CHUNK)],
        "regressed": counts["t-regressed"],
        "failing": counts["t-failing"],
    }


def _open_first(sets: Sequence[Data]) -> None:
    """Expand the first OPEN_LIMIT regressed, inconclusive or errored cases."""
    budget = OPEN_LIMIT
    for category in MARKUP_FIRST:
        for s in sets:
            for c in s["cases"]:
                if budget and c["category"] == category:
                    c["open"] = True
                    budget -= 1


def _defer(sets: Sequence[Data], markup_limit: int) -> tuple[str, int]:
    """Keep the details of the cases the verdict rests on, then of failing ones up to MARKUP_LIMIT in all, as
    markup; move every other case's
    details into one compressed block (returned: base64 of gzip of JSON, "" when nothing is deferred, and how many
    cases it holds) and give each case its index there (``lazy``)."""
    rank = {category: i for i, category in enumerate(MARKUP_FIRST)}

    def importance(c: Data) -> tuple[int, int]:
        return rank.get(c["category"], len(rank)), 0 if "t-failing" in c["tags"].split(" ") else 1

    cases = sorted((c for s in sets for c in s["cases"]), key=importance)  # stable: the page's order within a rank
    keep = max(markup_limit, sum(c["category"] in rank for c in cases))
    deferred: list[Data] = []
    for c in cases[keep:]:
        c["lazy"] = len(deferred)
        deferred.append({k: c.pop(k) for k in BODY_KEYS})
    if not deferred:
        return "", 0
    raw = json.dumps(deferred, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii"), len(deferred)


def _usage(usage: JudgeUsage | None, baseline: BaselineUsage | None = None) -> list[Data]:
    """Judge usage rows: one per criterion, then the total ("unknown" for the cost of an unpriced model), with the
    baseline run's cost and the change when the baseline records them."""
    if usage is None:
        return []
    named: list[tuple[str, CriterionUsage | UsageRow]] = [*usage.per_criterion.items(), ("total", usage.total)]
    base_rows = {**(baseline.per_criterion if baseline else {}), "total": baseline.total} if baseline else {}
    out = []
    for name, row in named:
        base = base_rows.get(name)
        out.append({
            "name": name, "requests": f"{row.requests:,}", "input_tokens": f"{row.input_tokens:,}",
            "output_tokens": f"{row.output_tokens:,}", "cached_samples": f"{row.cached_samples:,}",
            "cost": money(row.estimated_cost_usd),
            "baseline_cost": "—" if base is None else money(base.estimated_cost_usd),
            "change": "—" if base is None else cost_change(row.estimated_cost_usd, base.estimated_cost_usd),
        })
    return out


def context(comparison: Comparison, markup_limit: int = MARKUP_LIMIT) -> Data:
    """The template's context: plain data only (no model objects reach the template)."""
    icon, title = verdict(comparison)
    judged = frozenset(
        c.name for es in comparison.report.eval_sets for c in es.criteria if c.judged
    ) | frozenset(r.criterion for es in comparison.eval_sets for r in es.rows if r.judged)
    sets = [set_data(es, judged) for es in comparison.eval_sets]
    _open_first(sets)
    deferred, deferred_count = _defer(sets, markup_limit)
    cases = [c for s in sets for c in s["cases"]]
    filters = [
        {"key": key, "label": label,
         "n": len(cases) if key == "all" else sum(f"t-{key}" in c["tags"].split(" ") for c in cases)}
        for key, label in FILTERS
    ]
    base = comparison.baseline
    style, style_hash = asset(STYLE)
    script, script_hash = asset(SCRIPT)
    return {
        "icon": icon,
        "title": title,
        "verdict": comparison.gate.verdict,
        "reasons": list(comparison.gate.reasons),
        "version": __version__,
        "baseline": None if base is None else {
            "source": comparison.baseline_source, "commit": base.commit, "created_at": base.created_at,
            "evalbot_version": base.evalbot_version,
        },
        "baseline_note": comparison.baseline_note,
        "alerts": list(comparison.alerts),
        "headline_notices": [{"icon": icon, "text": mdsafe.shorten(text, limit), "warn": icon == "⚠️"}
                             for icon, text, limit in words.headline_notices(comparison)],
        "yardstick": [f"{'✅ accepted by this PR’s baseline update' if y.accepted else '⚠️ yardstick change'}: "
                      f"{y.subject}: {y.what} · main: {y.main or '—'} · now: {y.current or '—'}"
                      for y in comparison.yardstick],
        "notices": list(comparison.report.notices),
        "errors": [" ".join(x for x in (p.path, p.pointer, p.message) if x) for p in comparison.report.errors],
        "counts": [{"key": k, "label": k.replace("_", " "), "n": v} for k, v in comparison.counts.items() if v],
        "filters": filters,
        "sets": sets,
        "deferred": deferred,
        "deferred_count": deferred_count,
        "data_id": DATA_ID,
        "usage": _usage(comparison.report.usage, comparison.baseline_usage),
        "efficiency": efficiency_rows([row.model_dump() for row in comparison.efficiency]),
        "efficiency_note": comparison.efficiency_note,
        "csp": f"default-src 'none'; style-src {style_hash}; script-src {script_hash}; img-src 'none'; "
               "base-uri 'none'; form-action 'none'",
        "style_hash": style_hash,
        "script_hash": script_hash,
        "style_chars": len(style),
        "script_chars": len(script),
    }


def render_html(comparison: Comparison, *, markup_limit: int = MARKUP_LIMIT) -> str:
    """The HTML report of a comparison with the baseline (or of a run alone when it has none); ``markup_limit``:
    see MARKUP_LIMIT."""
    return environment().get_template(TEMPLATE).render(context(comparison, markup_limit))


def render_html_report(report: Report) -> str:
    """The HTML report of a run without a baseline (``evalbot run``): absolute scores, no deltas."""
    comparison = compare(current=report, baseline=None, policy=GatePolicy(), baseline_source=NO_BASELINE)
    alerts = [a for a in comparison.alerts if NO_BASELINE not in a]  # a run without one is not missing one
    return render_html(comparison.model_copy(update={"baseline_note": None, "alerts": alerts}))
