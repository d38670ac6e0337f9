"""A self-contained HTML report of a comparison (or of a run without a baseline): one file, no network requests.

Pure: a Comparison (or a Report) in, the HTML text out; the CLI and the Action write it. The page shows every eval
set with its criterion table and deltas, and every case with its turns, the trajectory diff (argument-level
changes from :mod:`evalbot.render.trajdiff`), the responses, the judges' rationales and vote splits and the noise verdicts.

Safety: everything shown comes from a PR (agent answers, eval sets, judge text) and is untrusted. The template is
rendered in a sandboxed Jinja environment with autoescaping on, from a context of plain data only (dicts, lists,
strings, numbers, booleans, None), never model objects; the cases' lines and the data block are made as the template
reads them (``Lines``, ``Deferred``: plain data each, the cases behind them out of the sandbox's reach), so the
render holds one case's markup at a time, not the page's. The page carries a Content-Security-Policy that forbids
every fetch and allows only the page's own stylesheet and script, by their SHA-256 hashes: even markup that got
through could neither run a script nor load anything. Filters work with JavaScript off (radio buttons and CSS); the
optional inline script adds the search box.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import math
import zlib
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import Any, NamedTuple

import jinja2
import markupsafe
from jinja2.sandbox import ImmutableSandboxedEnvironment

from evalbot import __version__
from evalbot.compare.baseline import BaselineUsage
from evalbot.compare.delta import compare
from evalbot.compare.efficiency import efficiency_rows
from evalbot.compare.flaky import symbols
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import CATEGORIES, CaseComparison, Comparison, CriterionRow, EvalSetComparison, MetricDelta
from evalbot.formats.jsonio import gc_paused
from evalbot.formats.numbers import p_value_text
from evalbot.render import mdsafe, words
from evalbot.render.comment import (
    DELTA_MARK,
    cost_change,
    cost_line,
    delta_differs,
    informational,
    informational_line,
    money,
    served_note,
    verdict,
)
from evalbot.render.precompiled import PrecompiledLoader
from evalbot.render.trajdiff import call_text, diff_calls
from evalbot.render.views import (
    ORDER,
    TITLES,
    Limits,
    by_severity,
    groups_of,
    history_text,
    judge_text,
    shared_reason,
    votes_text,
)
from evalbot.results import (
    CriterionUsage,
    JudgeDetails,
    JudgeUsage,
    MetricResult,
    Report,
    ToolCallView,
    TurnView,
    UsageRow,
)

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
GROUP_LIMITS = Limits(detailed=0, listed=20, text=0)
"""Cases the header names of each group of erroring cases that share one reason (views.groups_of)."""
PIECE = 1 << 18
"""Characters of the page handed to the writer at a time."""
CHUNK = 100
"""Cases per block that the browser lays out only when it is near the viewport (content-visibility): a page of
10,000 cases would otherwise be laid out again and again, whole, while it loads."""
FILTERS = (
    ("all", "All"), ("regressed", "Regressed"), ("fixed", "Fixed"), ("failing", "Failed"),
    ("inconclusive", "Inconclusive"),
)
Data = dict[str, Any]
NO_BASELINE = "(no baseline: evalbot run)"
CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 220, 48, 6
"""The trend chart's size in CSS pixels, and the margin above and below its plot that keeps its dots inside."""
CHART_LEFT, CHART_RIGHT = 40, 176
"""The plot's left edge (its axis; the axis' top and bottom values are written to its left) and its right edge (this
run's dot; its value is written to the right of it)."""
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
        loader=PrecompiledLoader(),
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


def delta_text(delta: float | None, lower_is_better: bool = False) -> tuple[str, str]:
    """The delta as shown (``▲ +0.100``: the arrow is the number's) and its direction (``up``: better, shown green;
    ``down``: worse, red; ``flat`` or ``none``): on a ``lower_is_better`` criterion a rise is ``down``."""
    if delta is None:
        return "—", "none"
    if abs(delta) < 5e-4:
        return "±0.000", "flat"
    better = delta < 0 if lower_is_better else delta > 0
    return f"{'▲' if delta > 0 else '▼'} {delta:+.3f}".replace("-", "−"), "up" if better else "down"


def _point_label(mean: float, commit: str | None, created_at: str | None) -> str:
    where = ", ".join(x for x in (commit[:12] if commit else None, created_at[:10] if created_at else None) if x)
    return f"{mean:.3f}" + (f" ({where})" if where else "")


def chart_value(value: float) -> str:
    """A value as a chart writes it: 3 decimals (as the table), fewer significant digits for a large one."""
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.4g}"


def trend_chart(row: CriterionRow) -> Data | None:
    """The row's trend chart (None without a trend on main): main's means oldest first, then this run's mean
    highlighted in the last slot with its value written beside it, the threshold as a dashed line, and an axis
    with its top and bottom values, as SVG coordinates, with the values in words for its title and description:
    it reads without hovering. Non-finite numbers are left out (a trend point cannot hold one; a mean never
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
    step = (CHART_RIGHT - CHART_LEFT) / len(past)  # this run takes the slot after the last refresh

    def y(v: float) -> str:
        return f"{CHART_PAD + (hi - v) / (hi - lo) * (CHART_HEIGHT - 2 * CHART_PAD):.1f}"

    dots = [{"x": f"{CHART_LEFT + i * step:.1f}", "y": y(p.mean), "label": _point_label(p.mean, p.commit, p.created_at)}
            for i, p in enumerate(past)]
    on_main = ", ".join(d["label"] for d in dots)
    now = None if here is None else {"x": f"{CHART_RIGHT:.1f}", "y": y(here), "label": f"this run {here:.3f}",
                                     "value": chart_value(here), "text_x": f"{CHART_RIGHT + 6}",
                                     "text_y": f"{float(y(here)) + 3.5:.1f}"}
    runs = f"{len(past)} refresh{'es' if len(past) != 1 else ''}"
    return {
        "width": CHART_WIDTH, "height": CHART_HEIGHT,
        "axis": {"x": CHART_LEFT - 4, "label_x": CHART_LEFT - 7, "top": CHART_PAD, "bottom": CHART_HEIGHT - CHART_PAD,
                 "top_text_y": CHART_PAD + 3.5, "bottom_text_y": CHART_HEIGHT - CHART_PAD + 3.5,
                 "hi": chart_value(hi), "lo": chart_value(lo)},
        "line": " ".join(f"{d['x']},{d['y']}" for d in dots),
        "dots": dots,
        "last": dots[-1],
        "now": now,
        "threshold": None if threshold is None else y(threshold),
        "plot_left": CHART_LEFT - 4, "plot_right": CHART_RIGHT + 4,
        "title": f"{row.criterion}: mean on main over the last {runs}, and this run",
        "desc": f"On main, oldest first: {on_main}. "
                + ("This run: no mean." if here is None else f"This run: {here:.3f}.")
                + ("" if threshold is None else f" Threshold {threshold:.3f}."),
    }


def row_data(row: CriterionRow) -> Data:
    shown, direction = delta_text(row.delta, row.lower_is_better)
    differs = delta_differs(row)
    return {
        "delta_differs": differs,
        "criterion": row.criterion,
        "judged": row.judged,
        "threshold": fmt(row.threshold),
        "baseline": fmt(row.baseline_mean),
        "current": fmt(row.current_mean),
        "delta": shown + (DELTA_MARK if differs else ""),
        "direction": direction,
        "change": words.row_change(row.change, row.p_value, row.paired, row.lower_is_better),
        "change_key": row.change,
        "paired": row.paired,
        "scored": row.scored,
        "passed": row.passed,
        "failed": row.failed,
        "outcomes": [f"{n} {label}" for _, n, label in words.case_counts(row.model_dump())],
        "chart": trend_chart(row),
    }


def tags(case: CaseComparison) -> tuple[str, ...]:
    """The filters a case shows under (besides ``all``): one shared tuple for every case of its kind."""
    return _tags(case.category, case.current is not None and case.current.status in ("failed", "error"))


@cache
def _tags(category: str, failing: bool) -> tuple[str, ...]:
    out: list[str] = [category] if category in ("regressed", "fixed", "inconclusive") else []
    if category == "flaky":
        out.append("regressed")  # under the Regressed filter too, with its own badge
    if failing:
        out.append("failing")
    return tuple(out)


def metric_row(name: str, result: MetricResult | None, delta: MetricDelta | None) -> list[str]:
    """One row of a case's criterion table: its change (the row's class), then the seven cells' text."""
    if delta is None:
        change, baseline, votes_cell = "", "—", ""
        status = result.status if result else "—"
    else:
        change, baseline = delta.change, fmt(delta.baseline_score)
        status = result.status if result else (delta.current_status or "—")
        votes = votes_text(delta.current_votes) if delta.current_votes else None
        baseline_votes = votes_text(delta.baseline_votes) if delta.baseline_votes else None
        votes_cell = ""
        if votes or baseline_votes:
            p = p_value_text(delta.p_value)
            votes_cell = f"{votes or '?'} (baseline {baseline_votes or '?'})" + (f" {p}" if p else "")
    if result is not None:
        current, threshold = fmt(result.score), fmt(result.threshold)
        reason = clip(result.reason)
    else:
        current, threshold, reason = fmt(delta.current_score if delta else None), "—", None
    shown = status.replace("_", " ")
    return [change, name, baseline, current, threshold, f"{shown} — {reason}" if reason else shown,
            change.replace("_", " "), votes_cell]


def calls_rows(turn: TurnView) -> list[list[Any]]:
    """Trajectory diff rows ``[kind, expected, actual, expected_pos, actual_pos, [[key, expected, actual], …]]``
    (or the actual calls alone, kind ``actual``, when the case expects none recorded)."""
    if turn.expected_tool_calls is None:
        return [["actual", None, call_text(c, VALUE_LIMIT), None, i, []] for i, c in enumerate(turn.actual_tool_calls, 1)]
    return [
        [
            row.kind,
            call_text(row.expected, VALUE_LIMIT) if row.expected is not None else None,
            call_text(row.actual, VALUE_LIMIT) if row.actual is not None and row.kind != "same" else None,
            row.expected_pos,
            row.actual_pos,
            [[c.key, c.expected, c.actual] for c in row.changes],
        ]
        for row in diff_calls(turn.expected_tool_calls, turn.actual_tool_calls)
    ]


def raw_calls(calls: Sequence[ToolCallView] | None) -> list[list[Any]] | None:
    return None if calls is None else [[c.name, c.args] for c in calls]


def turn_row(index: int, turn: TurnView, metrics: Mapping[str, MetricResult],
             deltas: Mapping[str, MetricDelta], judged: frozenset[str], *, raw: bool = False) -> list[Any]:
    """``[user, expected response, actual response, the calls' label ("" without calls), diff rows,
    [[judge label, judge text], …]]``; ``raw``: the expected (or null) and actual calls as ``[name, args]`` in place
    of the label and the rows, for the page's script to diff as trajdiff does (the data block is smaller, and the
    diff costs the render nothing)."""
    notes = []
    for name, metric in metrics.items():
        if name not in judged or len(metric.per_invocation) <= index:
            continue
        inv = metric.per_invocation[index]
        delta = deltas.get(name)
        votes = delta.current_votes if delta else None
        shown = votes_text([votes[index]]) if votes and index < len(votes) else None
        notes.append([
            f"Judge · {name} · {inv.status.replace('_', ' ')} · score {fmt(inv.score)}" + (f" · votes {shown}" if shown else ""),
            clip(judge_text(JudgeDetails.read(inv.details), inv.reason)),
        ])
    texts = [clip(turn.user), clip(turn.expected_response), clip(turn.actual_response)]
    if raw:
        return [*texts, raw_calls(turn.expected_tool_calls), raw_calls(turn.actual_tool_calls), notes]
    calls = calls_rows(turn)
    if turn.expected_tool_calls is None:
        calls_label = "Tool calls (no expected calls recorded)" if calls else ""
    else:
        calls_label = "Tool calls" + (" — differ" if any(c[0] != "same" for c in calls) else "")
    return [*texts, calls_label, calls, notes]


def body_row(case: CaseComparison, judged: frozenset[str], *, raw: bool = False) -> list[Any]:
    """A case's details, the same list whether written as markup or built by the page's script (but for the
    turns' calls, ``raw`` for the script: see turn_row): ``[reason, runs, history, criterion rows, informational
    line, noise lines, turns]``."""
    current = case.current
    deltas = {d.criterion: d for d in case.metrics}
    metrics = current.metrics if current is not None else {}
    rows = [metric_row(n, metrics.get(n), deltas.get(n)) for n in dict.fromkeys([*metrics, *deltas])]
    shown: list[list[str]] = []
    info: list[list[str]] = []
    for row in rows:  # an informational metric without a noteworthy change goes in the one-line list
        quiet = row[5].split(" — ", 1)[0] == "informational" and row[0] not in NOTEWORTHY
        (info if quiet else shown).append(row)
    noise = [
        f"Noise check, {d.criterion}: judge votes (pass–fail) {votes_text(d.current_votes) or '?'}, baseline "
        f"{votes_text(d.baseline_votes) or '?'}" + (f", Fisher exact {p}" if (p := p_value_text(d.p_value)) else "")
        + f" → {d.change.replace('_', ' ')}"
        for d in case.metrics if d.judged and (d.current_votes or d.baseline_votes)
    ]
    return [
        clip(case.reason),
        case.runs.describe() if case.runs is not None else None,
        history_text(case),
        shown,
        info_text(info),
        noise,
        [turn_row(i, t, metrics, deltas, judged, raw=raw) for i, t in enumerate(current.turns if current else [])],
    ]


def info_text(rows: Sequence[Sequence[str]]) -> str:
    """A case's informational criteria (metric_row rows) on one line, as the eval set's line: ``latency 1.300
    (baseline 1.200) · token_usage_v1, tool_call_count_v1 (no value)``."""
    valued = [m[1] + " " + m[3] + (f" (baseline {m[2]})" if m[2] not in ("—", m[3]) else "")
              for m in rows if m[3] != "—" or m[2] != "—"]
    bare = [m[1] for m in rows if m[3] == "—" and m[2] == "—"]
    return " · ".join(valued + ([", ".join(bare) + " (no value)"] if bare else []))


def summary_row(case: CaseComparison, case_tags: Sequence[str]) -> list[Any]:
    """What a case's one-line summary shows: ``[id, category, status, baseline status, filter classes, glyphs]``."""
    current = case.current
    return [
        case.eval_id,
        case.category,
        (current.status if current else "absent").replace("_", " "),
        (case.baseline_status or "—").replace("_", " "),
        " ".join(f"t-{t}" for t in case_tags),
        symbols(case.main_outcomes) if case.main_outcomes else None,
    ]


def title_of(category: str) -> str:
    """The badge of a category (``Still failing``)."""
    return TITLES.get(category, category.replace("_", " ").capitalize())


def line_data(summary: list[Any]) -> Data:
    """A case's summary line for the template (its details are added by the caller)."""
    eval_id, category, status, baseline_status, case_tags, glyphs = summary
    return {"id": eval_id, "category": category, "category_label": title_of(category), "status": status,
            "baseline_status": baseline_status, "tags": case_tags, "glyphs": glyphs, "open": False, "lazy": None,
            "body": None}


class Place(NamedTuple):
    """Where one case goes on the page (see Plan)."""

    case: CaseComparison
    tags: tuple[str, ...]
    markup: bool
    """Summary and details written as markup."""
    line: bool
    """Its summary line is markup (readable with JavaScript off); its details are data when not ``markup``."""
    k: int | None
    """Its index in the data block (None when its details are markup)."""
    open: bool
    """Shown expanded at load."""


class Plan:
    """Which cases the page writes as markup (summary and details), which as a summary line whose details are
    data (failing cases beyond the markup budget), and which only as data (every other case beyond it: the page's
    script lists them as the reader scrolls to them). The verdict's own cases are always markup; then failing
    cases; then the rest, in page order, up to ``markup_limit`` cases in all. The first OPEN_LIMIT regressed,
    flaky, inconclusive or errored cases (in that order) are shown expanded.

    Decided by counting, so that nothing is held per case: a Walker gives each case's Place in page order, as often
    as the page needs it (its markup, then its data block)."""

    def __init__(self, ordered: Sequence[Sequence[CaseComparison]], markup_limit: int,
                 shared: frozenset[str] = frozenset()) -> None:
        self.ordered = ordered
        self.shared = shared
        """The reasons erroring cases share (the header says each once: their cases are not shown expanded)."""
        first = dict.fromkeys(MARKUP_FIRST, 0)
        openable = dict.fromkeys(MARKUP_FIRST, 0)
        failing_others = total = 0
        for cases in ordered:
            for case in cases:
                total += 1
                if case.category in first:
                    first[case.category] += 1
                    openable[case.category] += not self.grouped(case)
                elif "failing" in tags(case):
                    failing_others += 1
        budget = max(markup_limit, sum(first.values())) - sum(first.values())
        self.failing_budget = min(budget, failing_others)
        """Failing cases (not of the verdict's own categories) written as markup, the first in page order."""
        self.rest_budget = budget - self.failing_budget
        """Then the cases that do not fail, the first in page order."""
        quiet = total - sum(first.values()) - failing_others
        self.listed_later = quiet - min(self.rest_budget, quiet)
        """Cases only in the data block (summary line and details)."""
        self.deferred = failing_others - self.failing_budget + self.listed_later
        """Cases whose details are in the data block."""
        left = OPEN_LIMIT
        self.opened: dict[str, int] = {}
        for category in MARKUP_FIRST:
            self.opened[category] = min(left, openable[category])
            left -= self.opened[category]

    def grouped(self, case: CaseComparison) -> bool:
        """An erroring case whose reason others share (said once in the header): never shown expanded."""
        return bool(self.shared) and case.category == "error" and shared_reason(case) in self.shared


class Walker:
    """The running counts that place each case, in page order (see Plan); a copy taken before a case places the
    cases from there again."""

    __slots__ = ("failing_seen", "k", "opened", "plan", "rest_seen")

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.failing_seen = self.rest_seen = self.k = 0
        self.opened = dict.fromkeys(MARKUP_FIRST, 0)

    def copy(self) -> Walker:
        other = Walker(self.plan)
        other.failing_seen, other.rest_seen, other.k = self.failing_seen, self.rest_seen, self.k
        other.opened = dict(self.opened)
        return other

    def line(self, case: CaseComparison, case_tags: tuple[str, ...]) -> bool:
        """Whether the next case's summary line is markup (Place.line), without moving on."""
        return case.category in self.opened or "failing" in case_tags or self.rest_seen < self.plan.rest_budget

    def place(self, case: CaseComparison, case_tags: tuple[str, ...]) -> Place:
        """The next case's Place."""
        failing = "failing" in case_tags
        is_open = False
        if case.category in self.opened:
            markup = True
            if not self.plan.grouped(case):
                is_open = self.opened[case.category] < self.plan.opened[case.category]
                self.opened[case.category] += 1
        elif failing:
            markup = self.failing_seen < self.plan.failing_budget
            self.failing_seen += 1
        else:
            markup = self.rest_seen < self.plan.rest_budget
            self.rest_seen += 1
        place = Place(case, case_tags, markup, markup or failing, None if markup else self.k, is_open)
        self.k += not markup
        return place


def line_of(place: Place, judged: frozenset[str]) -> Data:
    """A case's summary line for the template, with its details (``body``) when they are markup, else their index
    in the data block (``lazy``)."""
    line = line_data(summary_row(place.case, place.tags))
    if place.markup:
        line["body"] = body_row(place.case, judged)
        line["open"] = place.open
    else:
        line["lazy"] = place.k
    return line


Run = tuple[int, int, Walker]
"""Consecutive cases of an eval set whose summary lines are markup: from, to, and the Walker before the first."""


class Lines:
    """Cases' summary lines (with their details) in a template context, each made as the template reads it and
    let go once written: the page's markup is never held whole (at 100,000 cases, the 10,000 regressed cases' turns
    and diffs), nor anything per case (only runs of them: Run). Each item is plain data (``line_of``). The cases are
    held in a slot whose name starts with an underscore, which the sandbox never lets a template read; nothing else
    is public."""

    __slots__ = ("_cases", "_judged", "_runs")

    def __init__(self, cases: Sequence[CaseComparison], runs: list[Run], judged: frozenset[str]) -> None:
        self._cases = cases
        self._runs = runs
        self._judged = judged

    def __len__(self) -> int:
        return sum(stop - start for start, stop, _ in self._runs)

    def __iter__(self) -> Iterator[Data]:
        for start, stop, before in self._runs:
            walker = before.copy()
            for case in itertools.islice(self._cases, start, stop):
                yield line_of(walker.place(case, tags(case)), self._judged)


class Deferred:
    """The page's data block in a template context: the base64 pieces (see Packer), made as the template writes
    them, from each deferred case in page order: nothing of it is held but the piece being written. True when some
    case is deferred. Models are held only in underscore slots (see Lines)."""

    __slots__ = ("_count", "_judged", "_plan")

    def __init__(self, plan: Plan, judged: frozenset[str], count: int) -> None:
        self._plan = plan
        self._judged = judged
        self._count = count

    def __bool__(self) -> bool:
        return self._count > 0

    def __iter__(self) -> Iterator[str]:
        if not self._count:
            return
        packer = Packer()
        walker = Walker(self._plan)
        for cases in self._plan.ordered:
            for case in cases:
                place = walker.place(case, tags(case))
                if not place.markup:
                    summary = None if place.line else summary_row(case, place.tags)
                    k = packer.add(summary, body_row(case, self._judged, raw=True))
                    assert k == place.k, "the data block's order is the page's"
                    yield from packer.pieces()
        yield from packer.close()


def set_data(es: EvalSetComparison, ordered: Sequence[CaseComparison], walker: Walker, judged: frozenset[str],
             counts: dict[str, int]) -> Data:
    """An eval set: its table, and its cases most important first (as the comment orders its sections), in blocks:
    up to CHUNK cases written as markup (``cases``, made as the template reads them), or a run of cases only the
    script lists (``more``: the first's index in the data block, ``n``: how many); ``cases``: every summary line
    written as markup. ``walker``: where the page is (moved past the set's cases); ``counts``: each filter's count,
    added to."""
    runs: list[Run] = []
    blocks: list[Data] = []
    here = dict.fromkeys(counts, 0)
    for i, case in enumerate(ordered):
        case_tags = tags(case)
        for tag in case_tags:
            here[tag] += 1
        if walker.line(case, case_tags):
            if not blocks or "cases" not in blocks[-1] or i - runs[-1][0] >= CHUNK:
                runs.append((i, i + 1, walker.copy()))
                blocks.append({"cases": None})
            else:
                runs[-1] = (runs[-1][0], i + 1, runs[-1][2])
            walker.place(case, case_tags)
            continue
        place = walker.place(case, case_tags)
        if not blocks or "more" not in blocks[-1]:
            blocks.append({"more": place.k, "n": 0})
        blocks[-1]["n"] += 1
    for block, run in zip((b for b in blocks if "cases" in b), runs, strict=True):
        block["cases"] = Lines(ordered, [run], judged)
    for tag, n in here.items():
        counts[tag] += n
    rows = [row_data(r) for r in es.rows if not informational(r)]
    return {
        "id": es.eval_set_id,
        "path": es.path,
        "status": (es.status or "absent").replace("_", " "),
        "in_baseline": es.in_baseline,
        "in_current": es.in_current,
        "errors": [" ".join(x for x in (p.pointer, p.message) if x) for p in es.errors],
        "rows": rows,
        "info": informational_line(es.rows),
        "delta_note": words.DELTA_FOOTNOTE if any(r["delta_differs"] for r in rows) else None,
        "charts": any(r["chart"] for r in rows),
        "glyphs": any(c.main_outcomes for c in ordered),
        "cases": Lines(ordered, runs, judged),
        "blocks": blocks,
        "regressed": here["regressed"],
        "failing": here["failing"],
    }


class Packer:
    """The page's data block, built as the deferred cases come: each case (``[summary row or null, body row]``)
    is encoded and compressed at once, and the compressed bytes are handed out as base64 pieces as they come
    (``pieces``, then ``close``), so no case is held twice nor the block whole. The block is base64 of gzip of JSON
    ``[[case, …], [[category, badge], …]]``; base64 holds no character the HTML parser could take for markup. The
    only objects and numbers in it are tool-call arguments, which the script reads keeping their order and text."""

    BATCH = 1 << 16
    """Characters of JSON handed to the compressor at a time."""

    def __init__(self) -> None:
        self.count = 0
        self.listed = 0
        self._labels: set[str] = set()
        self._zip = zlib.compressobj(6, zlib.DEFLATED, 31)  # 31: a gzip stream (header without a timestamp)
        self._base64 = Base64Pieces()
        self._text: list[str] = ["[["]
        self._held = 0
        self._encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode

    def add(self, summary: list[Any] | None, body: list[Any]) -> int:
        """Append one case; its index in the block."""
        text = self._encode([summary, body])
        self._text.append("," + text if self.count else text)
        self._held += len(text)
        if summary is not None:
            self.listed += 1
            self._labels.add(summary[1])
        if self._held >= self.BATCH:
            self._flush()
        self.count += 1
        return self.count - 1

    def _flush(self) -> None:
        self._base64.add(self._zip.compress("".join(self._text).encode("utf-8")))
        self._text, self._held = [], 0

    def pieces(self) -> Iterator[str]:
        """The base64 pieces ready so far (see Base64Pieces)."""
        return self._base64.ready()

    def close(self) -> Iterator[str]:
        """The rest of the block's pieces (none when nothing was deferred)."""
        if not self.count:
            return
        labels = [[category, title_of(category)] for category in sorted(self._labels)]
        self._text.append("]," + self._encode(labels) + "]")
        self._flush()
        self._base64.add(self._zip.flush())
        yield from self._base64.ready()
        yield from self._base64.end()


BASE64_PIECE = 3 << 16
"""Compressed bytes per piece of the data block (192 KiB: 256 KiB of base64)."""


class Base64Pieces:
    """Bytes in, their base64 text out in pieces the template writes one after another: each piece but the last
    encodes a multiple of 3 bytes, so the pieces joined are the base64 of the whole, and the page's largest string
    (tens of MB at 100,000 cases) is never built whole, nor the bytes joined before encoding; no more than about a
    piece of bytes is held."""

    def __init__(self, piece: int = BASE64_PIECE) -> None:
        self._piece = piece
        self._carry = bytearray()

    def add(self, data: bytes) -> None:
        self._carry += data

    def ready(self) -> Iterator[str]:
        """A piece, if ``piece`` bytes or more are held (all of them whole but for a remainder of 1 or 2 bytes)."""
        if len(self._carry) >= self._piece:
            cut = len(self._carry) - len(self._carry) % 3
            yield base64.b64encode(self._carry[:cut]).decode("ascii")
            del self._carry[:cut]

    def end(self) -> Iterator[str]:
        """The last piece (whatever is held)."""
        if self._carry:
            yield base64.b64encode(self._carry).decode("ascii")
            self._carry = bytearray()


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
            "name": name + (served_note(row.model_dump(mode="json")) if isinstance(row, CriterionUsage) else ""),
            "requests": f"{row.requests:,}", "input_tokens": f"{row.input_tokens:,}",
            "output_tokens": f"{row.output_tokens:,}", "cached_samples": f"{row.cached_samples:,}",
            "cost": money(row.estimated_cost_usd),
            "baseline_cost": "—" if base is None else money(base.estimated_cost_usd),
            "change": "—" if base is None else cost_change(row.estimated_cost_usd, base.estimated_cost_usd),
        })
    return out


COUNT_LABELS = {"error": "could not be evaluated", "flaky": "flaky on main"}


def header_counts(comparison: Comparison) -> Data:
    """The header's two lines of counts, each adding up to its total and counted from the cases the page lists (as
    the filters are): ``compared`` (the cases by their outcome against main, as the sections and the headline name
    them; None without a baseline) and ``run`` (the cases in this run by status: ``failed`` and ``error`` together
    are what the Failed filter shows)."""
    outcomes: dict[str, int] = {}
    statuses = dict.fromkeys(("passed", "failed", "error", "not_evaluated", "informational"), 0)
    for es in comparison.eval_sets:
        for case in es.cases:
            outcomes[case.category] = outcomes.get(case.category, 0) + 1
            if case.current is not None:
                statuses[case.current.status] += 1
    categories = [{"key": k, "label": COUNT_LABELS.get(k, k.replace("_", " ")), "n": outcomes[k]}
                  for k in CATEGORIES if outcomes.get(k)]
    return {
        "compared": None if comparison.baseline is None else {
            "total": sum(outcomes.values()), "counts": categories},
        "run": {"total": sum(statuses.values()), "failing": statuses["failed"] + statuses["error"], "counts": [
            {"key": k, "label": COUNT_LABELS.get(k, k.replace("_", " ")), "n": n}
            for k, n in statuses.items() if n or k in ("passed", "failed")]},
    }


def context(comparison: Comparison, markup_limit: int = MARKUP_LIMIT) -> Data:
    """The template's context: plain data only (no model objects reach the template)."""
    icon, title = verdict(comparison)
    judged = frozenset(
        c.name for es in comparison.report.eval_sets for c in es.criteria if c.judged
    ) | frozenset(r.criterion for es in comparison.eval_sets for r in es.rows if r.judged)
    rank = {category: i for i, category in enumerate(ORDER)}
    eval_sets = [comparison.eval_sets[i] for i in by_severity(comparison.eval_sets, comparison.policy)]
    ordered = [sorted(es.cases, key=lambda c: rank.get(c.category, len(rank))) for es in eval_sets]
    groups, _ = groups_of("error", [(es, case) for es, cases in zip(eval_sets, ordered, strict=True)
                                    for case in cases if case.category == "error"], GROUP_LIMITS)
    plan = Plan(ordered, markup_limit, frozenset(g.reason for g in groups))
    walker = Walker(plan)
    counts = {key: 0 for key, _ in FILTERS if key != "all"}
    sets = [set_data(es, cases, walker, judged, counts) for es, cases in zip(eval_sets, ordered, strict=True)]
    counts["all"] = sum(len(cases) for cases in ordered)
    heads = header_counts(comparison)
    errors = next((c["n"] for c in heads["run"]["counts"] if c["key"] == "error"), 0)  # the Failed filter holds them
    filters = [{"key": key, "label": "Failed or error" if key == "failing" and errors else label, "n": counts[key]}
               for key, label in FILTERS]
    base = comparison.baseline
    style, style_hash = asset(STYLE)
    script, script_hash = asset(SCRIPT)
    return {
        "icon": icon,
        "title": title,
        "verdict": comparison.gate.verdict,
        "reasons": list(comparison.gate.reasons),
        "groups": [{"reason": clip(g.reason), "total": g.total, "cases": g.cases, "more": g.more} for g in groups],
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
        **heads,
        "filters": filters,
        "sets": sets,
        "deferred": Deferred(plan, judged, plan.deferred),
        "deferred_count": plan.deferred,
        "listed_later": plan.listed_later,
        "data_id": DATA_ID,
        "usage": _usage(comparison.report.usage, comparison.baseline_usage),
        "cost": cost_line(*(None if m is None else m.model_dump(mode="json") for m in (
            comparison.report.usage, comparison.report.agent_usage, comparison.baseline_usage,
            comparison.baseline_agent_usage))),
        "efficiency": efficiency_rows([row.model_dump() for row in comparison.efficiency]),
        "efficiency_note": comparison.efficiency_note,
        "csp": f"default-src 'none'; style-src {style_hash}; script-src {script_hash}; img-src 'none'; "
               "base-uri 'none'; form-action 'none'",
        "style_hash": style_hash,
        "script_hash": script_hash,
        "style_chars": len(style),
        "script_chars": len(script),
    }


def html_chunks(comparison: Comparison, *, markup_limit: int = MARKUP_LIMIT, size: int = PIECE) -> Iterator[str]:
    """The HTML report of a comparison with the baseline (or of a run alone when it has none), in pieces of about
    ``size`` characters, for the caller to write as they come (the page is never held whole, nor its cases' markup:
    the context makes each case's as the template reads it); ``markup_limit``: see MARKUP_LIMIT.

    The cyclic collector is paused while each piece is made (many small acyclic lists, made and let go case by
    case: it would re-scan the comparison again and again), not while the caller holds the piece."""
    with gc_paused():
        pieces = environment().get_template(TEMPLATE).generate(context(comparison, markup_limit))
    held: list[str] = []
    done = False
    while not done:
        count = 0
        with gc_paused():
            for piece in pieces:
                held.append(piece)
                count += len(piece)
                if count >= size:
                    break
            else:
                done = True
        if held:
            text = "".join(held)
            held = []  # let go before the caller writes
            yield text


def render_html(comparison: Comparison, *, markup_limit: int = MARKUP_LIMIT) -> str:
    """The whole page as one string (see html_chunks)."""
    return "".join(html_chunks(comparison, markup_limit=markup_limit))


def run_comparison(report: Report) -> Comparison:
    """A run without a baseline (``evalbot run``) as the report shows it: absolute scores, no deltas."""
    comparison = compare(current=report, baseline=None, policy=GatePolicy(), baseline_source=NO_BASELINE)
    alerts = [a for a in comparison.alerts if NO_BASELINE not in a]  # a run without one is not missing one
    return comparison.model_copy(update={"baseline_note": None, "alerts": alerts})


def render_html_report(report: Report) -> str:
    """The HTML report of a run without a baseline (``evalbot run``)."""
    return render_html(run_comparison(report))
