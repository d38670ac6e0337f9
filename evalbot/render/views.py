"""What the report templates show, chosen and cut to size: verdict, sections of cases, and per-case details.

Pure: turns a Comparison and a set of :class:`Limits` into plain dataclasses. All text here is raw; the templates
neutralise it with the filters of :mod:`evalbot.render.mdsafe`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import CaseComparison, Comparison, EvalSetComparison, MetricDelta
from evalbot.compare.votes import Votes
from evalbot.criteria import about_tool_calls
from evalbot.formats.lookalike import escape_lookalike
from evalbot.formats.numbers import score_text
from evalbot.render.trajdiff import diff_calls, diff_text
from evalbot.results import JudgeDetails, MetricResult, TurnView


@dataclass(frozen=True)
class Limits:
    """How much of each thing to show; the renderer walks down a ladder of these until the output fits."""

    detailed: int
    """Cases shown with full details, over all sections."""
    listed: int
    """Further cases listed on one line each, per section."""
    text: int
    """Characters of each response, rationale or reason."""
    turns: int = 5
    calls: int = 30
    sets: int = 100
    """Eval set tables."""


@dataclass
class JudgeNote:
    """A judged criterion's verdict on one invocation: votes and rationale."""

    criterion: str
    status: str
    score: float | None
    votes: str | None
    text: str


@dataclass
class TurnDetail:
    """One turn of a case, with what is needed to see why it failed."""

    index: int
    user: str
    trajectory: str | None = None
    expected_response: str | None = None
    actual_response: str | None = None
    show_responses: bool = False
    notes: list[JudgeNote] = field(default_factory=list)


@dataclass
class CaseView:
    """A case in a section: one-line summary, and the details when it is among the detailed ones."""

    set_id: str
    eval_id: str
    category: str
    summary: list[str]
    reason: str | None = None
    votes: list[str] = field(default_factory=list)
    history: str | None = None
    """The case's outcomes on main and what they say (regressed and flaky cases)."""
    runs: str | None = None
    """The case's runs of the agent (``--num-runs``, reruns) and the rule that decided them."""
    detailed: bool = False
    turns: list[TurnDetail] = field(default_factory=list)
    more_turns: int = 0


@dataclass
class CaseGroup:
    """Cases of a section that share one reason and nothing else to show (a root error: an unusable --actuals file, a
    misconfigured criterion, a judge that cannot be set up): the reason said once, the cases named."""

    reason: str
    total: int
    cases: list[str]
    """``eval set / id`` of the first cases (look-alike characters escaped)."""
    more: int


@dataclass
class Section:
    """A group of cases with the same category."""

    category: str
    title: str
    total: int
    cases: list[CaseView]
    more: int
    """Cases neither shown nor in a group."""
    blocking: bool = False
    open: bool = False
    groups: list[CaseGroup] = field(default_factory=list)
    """Cases that share one reason, each group once (GROUPED sections)."""


TITLES = {
    "regressed": "Regressed",
    "flaky": "Flaky on main, not blocking",
    "accepted": "Accepted by this PR's baseline update",
    "inconclusive": "Inconclusive, not blocking",
    "error": "Could not be evaluated",
    "new": "New cases",
    "still_failing": "Still failing",
    "fixed": "Fixed",
    "changed_definition": "Changed definition (not compared)",
    "removed": "Removed",
    "not_evaluated": "Not evaluated",
}
ORDER = ("regressed", "flaky", "accepted", "inconclusive", "error", "new", "still_failing", "fixed", "changed_definition",
         "removed", "not_evaluated")
DETAIL = frozenset({"regressed", "flaky", "accepted", "inconclusive", "error", "new", "still_failing"})
"""Sections whose cases get details (new and still-failing cases only when they fail)."""
GROUPED = frozenset({"error"})
"""Sections whose cases sharing one reason are one group (CaseGroup), as the console's lines."""
MIN_NAMED = 3
"""Cases a group names at least (more when the limits list more: Limits.listed)."""


def votes_text(votes: Sequence[Votes | None] | None) -> str | None:
    """``3–2`` per invocation (pass–fail votes), or None when no votes were recorded."""
    if not votes or all(v is None for v in votes):
        return None
    return ", ".join((f"{v.yes}–{v.no}" + (f" (after {v.resampled} more samples)" if v.resampled else "")) if v else "?"
                     for v in votes)


def _fmt(value: float | None) -> str:
    return score_text(value, digits=2)


def metric_summary(delta: MetricDelta) -> str:
    """``name 1.00 → 0.00`` (or ``name 0.40 < 0.80`` without a comparable baseline)."""
    if delta.change in ("regressed", "fixed", "inconclusive") or (
        delta.baseline_score is not None and delta.change == "still_failing"
    ):
        return f"{delta.criterion} {_fmt(delta.baseline_score)} → {_fmt(delta.current_score)}"
    return f"{delta.criterion} {_fmt(delta.current_score)} ({(delta.current_status or '').replace('_', ' ')})"


def _interesting(case: CaseComparison) -> list[MetricDelta]:
    pick = [d for d in case.metrics if d.change in ("regressed", "inconclusive", "fixed")]
    if not pick:
        pick = [d for d in case.metrics if d.current_status in ("failed", "error")]
    if not pick and case.current is not None and not case.metrics:
        pick = [
            MetricDelta(criterion=n, change="new", current_score=m.score, current_status=m.status)
            for n, m in case.current.metrics.items() if m.status in ("failed", "error")
        ]
    return pick


def judge_text(details: JudgeDetails, reason: str | None) -> str:
    """The judge's rationale for one invocation (details read with ``JudgeDetails.read``), one part a line: the
    reason, the rationale, each checked text with its labelled sentences, each rubric's verdict (the caller clips)."""
    parts: list[str] = [reason] if reason else []
    if details.rationale is not None and details.rationale not in parts:
        parts.append(details.rationale)
    for step in details.steps or []:
        parts.append(f"Checked: {step.text}" + (f" (error: {step.error})" if step.error is not None else ""))
        parts += [f"[{s.sentence}] {s.label}: {s.rationale}".strip() for s in step.sentences or []]
    parts += [f"[{r.rubric_id}] {r.score}: {r.rationale}".strip() for r in details.rubrics or []]
    return "\n".join(parts)


def _turn_failed(metric: MetricResult | None, index: int) -> bool:
    if metric is None or len(metric.per_invocation) <= index:
        return True
    return metric.per_invocation[index].status in ("failed", "error", "not_evaluated")


def turn_details(case: CaseComparison, focus: Sequence[MetricDelta], limits: Limits) -> tuple[list[TurnDetail], int]:
    """The turns worth showing for ``focus`` criteria, and how many more were cut."""
    current = case.current
    if current is None:
        return [], 0
    names = [d.criterion for d in focus]
    trajectory = any(about_tool_calls(n) for n in names)
    responses = any(not about_tool_calls(n) for n in names) or not names
    out: list[TurnDetail] = []
    relevant = [
        (i, turn) for i, turn in enumerate(current.turns)
        if not names or any(_turn_failed(current.metrics.get(n), i) for n in names)
    ]
    for i, turn in relevant[: limits.turns]:
        out.append(_turn(i, turn, current.metrics, focus, trajectory, responses, limits))
    return out, max(0, len(relevant) - limits.turns)


def _turn(
    i: int, turn: TurnView, metrics: Mapping[str, MetricResult], focus: Sequence[MetricDelta], trajectory: bool,
    responses: bool, limits: Limits,
) -> TurnDetail:
    detail = TurnDetail(index=i + 1, user=turn.user, show_responses=responses)
    if trajectory:
        expected = turn.expected_tool_calls or []
        detail.trajectory = diff_text(diff_calls(expected, turn.actual_tool_calls), max_rows=limits.calls)
    if responses:
        detail.expected_response = turn.expected_response
        detail.actual_response = turn.actual_response
    for delta in focus:
        metric = metrics.get(delta.criterion)
        if not delta.judged or metric is None or len(metric.per_invocation) <= i:
            continue
        inv = metric.per_invocation[i]
        votes = votes_text([delta.current_votes[i]]) if delta.current_votes and i < len(delta.current_votes) else None
        detail.notes.append(
            JudgeNote(delta.criterion, inv.status, inv.score, votes, judge_text(JudgeDetails.read(inv.details), inv.reason))
        )
    return detail


def case_view(es: EvalSetComparison, case: CaseComparison, limits: Limits, detailed: bool) -> CaseView:
    """A case's summary line, and its details when ``detailed``."""
    focus = _interesting(case)
    view = CaseView(
        set_id=escape_lookalike(es.eval_set_id),
        eval_id=escape_lookalike(case.eval_id),
        category=case.category,
        summary=[metric_summary(d) for d in focus],
        reason=case.reason,
        history=history_text(case),
        runs=case.runs.describe() if case.runs is not None else None,
        detailed=detailed,
    )
    for d in focus:
        if d.judged and (d.current_votes or d.baseline_votes):
            p = f", Fisher exact p = {score_text(d.p_value)}" if d.p_value is not None else ""
            view.votes.append(
                f"{d.criterion}: judge votes (pass–fail) {votes_text(d.current_votes) or '?'}, "
                f"baseline {votes_text(d.baseline_votes) or '?'}{p}"
            )
    view.votes.extend(replayed_notes(case, focus))
    if detailed:
        view.turns, view.more_turns = turn_details(case, focus, limits)
    return view


def replayed_notes(case: CaseComparison, focus: Sequence[MetricDelta]) -> list[str]:
    """``criterion: 3 judge answer(s) replayed from the cache`` for each judged criterion shown whose
    answers on this case came, all or some, from the cache (MetricResult.details' ``judge`` usage)."""
    metrics = case.current.metrics if case.current is not None else {}
    notes = []
    for delta in focus:
        metric = metrics.get(delta.criterion)
        judge = metric.details.get("judge") if metric is not None and isinstance(metric.details, Mapping) else None
        if not isinstance(judge, Mapping):
            continue
        cached, requests = judge.get("cached_samples"), judge.get("requests")
        if isinstance(cached, int) and not isinstance(cached, bool) and cached > 0:
            asked = f"; {requests:,} request(s) made" if isinstance(requests, int) and requests > 0 else ""
            notes.append(f"{delta.criterion}: {cached:,} judge answer(s) replayed from the cache{asked}")
    return notes


def history_text(case: CaseComparison) -> str | None:
    """``History on main: ✓✓✗✓✓ (oldest first): failed 1 of 5 run(s), 2 flips in 4 transitions (50%); ✗ here``."""
    if case.history is None:
        return None
    here = {"passed": "✓", "failed": "✗"}.get(case.current.status if case.current else "", "?")
    return f"History on main: {case.history.describe()}; {here} in this run"


def _wants_detail(case: CaseComparison) -> bool:
    if case.category in ("regressed", "flaky", "accepted", "inconclusive", "error"):
        return True
    return case.category in DETAIL and case.current is not None and case.current.status in ("failed", "error")


def _title(category: str, comparison: Comparison) -> str:
    if category == "flaky" and comparison.policy.block_flaky:
        return "Flaky on main, blocking (block_flaky)"
    return TITLES[category]


SEVERITY = ("regression", "error", "inconclusive", "fixed", "changed", "unchanged")
"""The classes of eval sets, most severe first: every output lists its eval sets in this order (stable within a
class: the order they were given in)."""


def set_severity(es: EvalSetComparison, policy: GatePolicy | None = None) -> int:
    """The index in SEVERITY of an eval set: ``regression`` (a case regressed, or a criterion's mean did; flaky or
    inconclusive cases too when the policy blocks on them), ``error`` (the eval set or a case could not be evaluated),
    ``inconclusive`` (flaky or inconclusive, not blocking), ``fixed`` (a case fixed, a mean rose), ``changed`` (cases
    new, removed, accepted, still failing or redefined; the eval set new or removed), else ``unchanged``."""
    categories = {case.category for case in es.cases}
    rows = {row.change for row in es.rows}
    blocking = {"regressed"} | ({"flaky"} if policy is not None and policy.block_flaky else set()) | (
        {"inconclusive"} if policy is not None and policy.block_inconclusive else set())
    if categories & blocking or "regressed" in rows:
        return 0
    if es.errors or "error" in categories or es.status == "error":
        return 1
    if categories & {"flaky", "inconclusive"} or "inconclusive" in rows:
        return 2
    if "fixed" in categories or "improved" in rows:
        return 3
    if categories - {"unchanged"} or not es.in_current or not es.in_baseline or rows & {"changed_definition", "removed"}:
        return 4
    return 5


def by_severity(sets: Sequence[EvalSetComparison], policy: GatePolicy | None = None) -> list[int]:
    """The indexes of ``sets`` most severe first (set_severity), in their given order within a class."""
    return sorted(range(len(sets)), key=lambda i: set_severity(sets[i], policy))


def shared_reason(case: CaseComparison) -> str | None:
    """The reason a case can share with others in a group: its own, when no criterion failed it besides (a case with
    a failure of its own is shown apart, as the console's line for it names that failure)."""
    if not case.reason or (case.current is not None and any(
            m.status == "failed" for m in case.current.metrics.values())):
        return None
    return case.reason


def groups_of(
    category: str, members: Sequence[tuple[EvalSetComparison, CaseComparison]], limits: Limits,
) -> tuple[list[CaseGroup], set[int]]:
    """The groups of a GROUPED section's cases that share a reason (two or more, in the order of their first case),
    and the positions in ``members`` of the cases they hold."""
    if category not in GROUPED:
        return [], set()
    by_reason: dict[str, list[int]] = {}
    for at, (_, case) in enumerate(members):
        reason = shared_reason(case)
        if reason is not None:
            by_reason.setdefault(reason, []).append(at)
    named = max(MIN_NAMED, limits.listed)
    groups, held = [], set()
    for reason, positions in by_reason.items():
        if len(positions) < 2:
            continue
        held.update(positions)
        labels = [f"{escape_lookalike(members[at][0].eval_set_id)} / {escape_lookalike(members[at][1].eval_id)}"
                  for at in positions[:named]]
        groups.append(CaseGroup(reason=reason, total=len(positions), cases=labels, more=len(positions) - len(labels)))
    return groups, held


def sections(comparison: Comparison, limits: Limits) -> list[Section]:
    """Non-empty sections in order; the detail budget goes to the most important cases first. In a GROUPED section,
    cases that share one reason are one group each (groups_of), spending no detail."""
    grouped: dict[str, list[tuple[EvalSetComparison, CaseComparison]]] = {c: [] for c in ORDER}
    for i in by_severity(comparison.eval_sets, comparison.policy):
        es = comparison.eval_sets[i]
        for case in es.cases:
            if case.category in grouped:
                grouped[case.category].append((es, case))
    budget = limits.detailed
    out = []
    for category in ORDER:
        members = sorted(grouped[category], key=lambda pair: not _wants_detail(pair[1]))
        if not members:
            continue
        groups, held = groups_of(category, members, limits)
        views: list[CaseView] = []
        listed = 0  # views without details (counted, not summed over the views at each case)
        for at, (es, case) in enumerate(members):
            if at in held:
                continue
            detailed = budget > 0 and _wants_detail(case)
            if detailed:
                budget -= 1
            elif listed >= limits.listed:
                continue
            else:
                listed += 1
            views.append(case_view(es, case, limits, detailed))
        blocking = category == "regressed" or (category == "flaky" and comparison.policy.block_flaky)
        out.append(Section(
            category=category, title=_title(category, comparison), total=len(members), cases=views,
            more=len(members) - len(views) - len(held), blocking=blocking,
            open=category in ("regressed", "flaky", "accepted", "inconclusive", "error"), groups=groups,
        ))
    return out
