"""Render a Comparison to the PR comment and the job summary with Jinja templates, within GitHub's size limits.

Templates live in ``evalbot/render/templates`` (a user template may replace or ``{% extends "comment.md.j2" %}`` the
comment). The environment is sandboxed, undefined names are errors, autoescaping is off and untrusted text goes
through the :mod:`evalbot.render.mdsafe` filters; anything printed without a filter still has markers and mentions broken.
Rendering walks down a ladder of :class:`~evalbot.render.views.Limits` until the text fits; a last-resort body is used if
even the smallest rendering does not.
"""

from __future__ import annotations

import dataclasses
import pprint
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
from pydantic import BaseModel

from evalbot import __version__
from evalbot.compare.efficiency import efficiency_rows
from evalbot.compare.model import Comparison, CriterionRow, EvalSetComparison
from evalbot.errors import EvalbotError
from evalbot.forge.base import COMMENT_MAX_CHARS
from evalbot.formats.jsonio import gc_paused
from evalbot.formats.lookalike import escape_lookalike
from evalbot.formats.numbers import p_value_text, score_text
from evalbot.formats.prices import canonical
from evalbot.render import mdsafe, words
from evalbot.render.bounded import BoundedSandbox, render_bounded
from evalbot.render.context import case_statuses, comparison_data, json_default, materialized
from evalbot.render.precompiled import PrecompiledLoader
from evalbot.render.views import Limits, sections
from evalbot.results import ConcurrencyCuts

COMMENT_LIMIT = COMMENT_MAX_CHARS
"""GitHub rejects longer issue comments (counted here in UTF-16 code units, which is never less than characters)."""
COMMENT_TARGET = 60_000
SUMMARY_LIMIT_BYTES = 1024 * 1024
"""GitHub refuses a step summary above 1 MiB ("upload aborted, supports content up to a size of 1024k")."""
SUMMARY_LIMIT = SUMMARY_LIMIT_BYTES
"""GitHub drops a step summary larger than 1 MiB (UTF-8 bytes)."""
SUMMARY_TARGET = 1_000_000
CUSTOM_TEMPLATE = "custom/comment.md.j2"

COMMENT_LADDER = (
    Limits(detailed=25, listed=200, text=1500, turns=5, calls=40),
    Limits(detailed=12, listed=100, text=800, turns=3, calls=25),
    Limits(detailed=6, listed=50, text=400, turns=2, calls=15),
    Limits(detailed=3, listed=20, text=200, turns=1, calls=10, sets=30),
    Limits(detailed=1, listed=5, text=120, turns=1, calls=5, sets=10),
    Limits(detailed=0, listed=0, text=80, turns=0, calls=0, sets=5),
)
SUMMARY_LADDER = (
    Limits(detailed=2000, listed=5000, text=4000, turns=20, calls=100, sets=1000),
    Limits(detailed=500, listed=2000, text=1500, turns=5, calls=40, sets=500),
    Limits(detailed=100, listed=500, text=600, turns=3, calls=20, sets=200),
    *COMMENT_LADDER,
)
ICONS = {"passed": "✅", "blocked": "❌", "invalid": "⚠️", "error": "⛔"}
ROW_BADGES = {
    "regressed": "fell significantly", "inconclusive": "change not significant", "improved": "rose significantly",
    "unchanged": "",
    "changed_definition": "🔄 changed definition", "new": "🆕 new", "removed": "removed",
    "not_evaluated": "not compared", "informational": "informational",
}
_MARKER_ID = re.compile(r"[^A-Za-z0-9._/-]")
_ANY_MARKER = re.compile(r"<!--\s*evalbot")


class TemplateError(EvalbotError):
    """A comment template could not be loaded or rendered."""


def comment_marker(comment_id: str = "default") -> str:
    """The hidden first line that identifies evalbot's comment (``id`` keeps several suites apart)."""
    return f"<!-- evalbot id={_MARKER_ID.sub('-', comment_id)[:100] or 'default'} -->"


@dataclass(frozen=True)
class Links:
    """Where the full results are: the job summary (URL or file) and the JSON report (URL or path)."""

    summary: str | None = None
    report: str | None = None


def _score(value: float | None) -> mdsafe.Safe:
    return mdsafe.Safe(score_text(value))


def _field(row: object, name: str) -> Any:
    """``row[name]`` of the plain-data row a template passes to a filter (a model's attribute in Python code)."""
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def _real(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


DELTA_MARK = "†"
"""After a Δ that is not Current − Baseline (delta_differs); words.DELTA_FOOTNOTE under the table says why."""


def delta_differs(row: CriterionRow | Mapping[str, Any]) -> bool:
    """The row's Δ (the mean change over the cases scored on both sides) is not Current − Baseline to the table's
    three decimals: the two means are over different cases."""
    delta = _real(_field(row, "delta"))
    if delta is None:
        return False
    current, base = _real(_field(row, "current_mean")), _real(_field(row, "baseline_mean"))
    if current is None or base is None:
        return True
    return abs(delta - (current - base)) >= 5e-4


def _delta(row: CriterionRow | Mapping[str, Any]) -> mdsafe.Safe:
    delta = _real(_field(row, "delta"))
    if delta is None:
        return mdsafe.Safe("—")
    mark = DELTA_MARK if delta_differs(row) else ""
    if abs(delta) < 5e-4:
        return mdsafe.Safe("±0.000" + mark)
    arrow = "▲" if delta > 0 else "▼"
    return mdsafe.Safe(f"{arrow} {delta:+.3f}".replace("-", "−") + mark)


def _number(value: object, spec: str = "") -> mdsafe.Safe:
    """A number formatted with ``spec``; anything else (an artifact is untrusted) shows as ``?``."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return mdsafe.Safe(format(value, spec))
    return mdsafe.Safe("?")


def _pvalue(value: float | None) -> mdsafe.Safe:
    return mdsafe.Safe(p_value_text(value) or "")


def _row_note(row: CriterionRow | Mapping[str, Any]) -> mdsafe.Safe:
    """The last table column: the cases that changed on this criterion by outcome, the mean change's test, partial
    pairing (the words of render.words, shared with every other output)."""
    data = row.model_dump() if isinstance(row, BaseModel) else row
    notes = [f"{icon} {n} {label}" for icon, n, label in words.case_counts(data)]
    change, paired, scored = _field(row, "change"), _field(row, "paired"), _field(row, "scored")
    tested = words.mean_change(change, _real(_field(row, "p_value")), paired, _field(row, "lower_is_better"))
    if tested:
        notes.append(tested)
    elif isinstance(change, str) and ROW_BADGES.get(change):
        notes.append(ROW_BADGES[change])
    if _real(_field(row, "delta")) is not None and _real(paired) is not None and _real(scored) is not None \
            and paired < scored:
        notes.append(f"Δ over {paired} of {scored}")
    return mdsafe.Safe(" · ".join(notes))


def _count(value: object) -> int:
    """A non-negative count from plain (possibly untrusted) data; anything else counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def money(value: object) -> str:
    """``0.0123 USD``, or ``unknown`` when the price is not known (never a cost of 0 for an unknown price). No
    dollar sign: two on one line start a math span on GitHub."""
    real = _real(value)
    return "unknown" if real is None or real != real or real < 0 else f"{real:.4f} USD"


def cost_change(current: object, baseline: object) -> str:
    """``+0.0023 USD (+23%)`` from the baseline run's cost to this run's; ``unknown`` when either is unknown."""
    cur, base = _real(current), _real(baseline)
    if cur is None or base is None:
        return "unknown"
    diff = cur - base
    sign = "−" if diff < -5e-5 else "+" if diff > 5e-5 else "±"
    pct = f" ({diff / base:+.0%})".replace("-", "−") if base > 0 and abs(diff) > 5e-5 else ""
    return f"{sign}{abs(diff):.4f} USD{pct}"


def served_note(row: object) -> str:
    """`` (served by gemini-X-003)`` when the models a criterion's judge answers named differ from the configured
    ones (by name, without resource paths or evalbot's ``openai/`` prefix); else empty. ``row``: a usage row as plain
    (untrusted) data."""
    if not isinstance(row, Mapping) or not isinstance(row.get("served"), list):
        return ""
    configured = {canonical(str(m)) for m in row.get("models") or [] if isinstance(m, str)}
    served = [str(s)[:200] for s in row["served"][:5] if isinstance(s, str)]
    differ = [s for s in served if canonical(s) not in configured]
    return f" (served by {', '.join(differ)})" if differ else ""


def usage_view(usage: Mapping[str, Any] | None, baseline: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The comment's judge cost block from ``Report.usage`` and the baseline run's usage, both as plain data (the
    report is an untrusted artifact in the second stage: only counts and numbers are taken from it, preformatted).

    None when the run used no judge. ``rows``: per criterion then the total, with tokens, cost, the baseline run's
    cost and the change; ``saved``: samples answered by the cache and not asked thanks to sequential sampling.
    """
    if not isinstance(usage, Mapping) or not isinstance(usage.get("total"), Mapping):
        return None
    raw_per, base = usage.get("per_criterion"), baseline if isinstance(baseline, Mapping) else None
    per: Mapping[str, Any] = raw_per if isinstance(raw_per, Mapping) else {}
    raw_base_per = base.get("per_criterion") if base is not None else None
    base_per: Mapping[str, Any] = raw_base_per if isinstance(raw_base_per, Mapping) else {}
    total = usage["total"]

    def row(name: str, r: Mapping[str, Any], b: Any) -> dict[str, Any]:
        b = b if isinstance(b, Mapping) else None
        return {
            "name": name, "requests": f"{_count(r.get('requests')):,}", "input": f"{_count(r.get('input_tokens')):,}",
            "output": f"{_count(r.get('output_tokens')):,}", "cached": f"{_count(r.get('cached_samples')):,}",
            "cost": money(r.get("estimated_cost_usd")),
            "baseline_cost": money(b.get("estimated_cost_usd")) if b is not None else "—",
            "change": cost_change(r.get("estimated_cost_usd"), b.get("estimated_cost_usd")) if b is not None else "—",
        }

    rows = [row(str(n) + served_note(r), r, base_per.get(n)) for n, r in per.items() if isinstance(r, Mapping)]
    rows.append(row("total", total, base.get("total") if base is not None else None))
    cached = _count(total.get("cached_samples"))
    saved_by_sampling = _count(total.get("saved_samples"))
    saved = [f"{cached:,} sample(s) answered by the judge cache (not paid for)"]
    if saved_by_sampling:
        saved.append(f"{saved_by_sampling:,} sample(s) not asked: sequential sampling had its majority")
    requests = _count(total.get("requests"))
    cost = total.get("estimated_cost_usd")
    if requests == 0:
        summary = f"Judge: {cached:,} answer(s) replayed from the cache, no requests made"
    else:
        summary = (f"Judge cost ≈ {money(cost)} · {requests:,} request(s), {_count(total.get('input_tokens')):,} "
                   f"input + {_count(total.get('output_tokens')):,} output tokens · {cached:,} from the cache")
    if saved_by_sampling:
        summary += f" · {saved_by_sampling:,} saved by sequential sampling"
    cache = usage.get("cache")
    ignored = _count(cache.get("ignored")) if isinstance(cache, Mapping) else 0
    if ignored:
        summary += f" · {ignored:,} cached answer(s) ignored: not signed by this workflow"
    limited = usage.get("concurrency")
    if isinstance(limited, Mapping):
        summary += f" · {_concurrency_note(limited)}"
    if base is not None and isinstance(base.get("total"), Mapping):
        base_cost = base["total"].get("estimated_cost_usd")
        summary += f" · baseline run ≈ {money(base_cost)} (change {cost_change(cost, base_cost)})"
    prices = usage.get("prices")
    return {
        "summary": summary, "rows": rows, "saved": "Saved: " + "; ".join(saved) + ".",
        "prices": prices if isinstance(prices, str) else None,
    }


def _side_cost(usage: object, rows_key: str) -> str | None:
    """``≈ 0.0123 USD``, or ``unknown (12,345 tokens on model-x without a price)``, from plain (untrusted) usage
    data: a judge's ``Report.usage`` or the agent's ``Report.agent_usage`` (``rows_key``: its rows per model), or
    the baseline's summaries of them. None when there is no usage."""
    if not isinstance(usage, Mapping):
        return None
    total = usage.get("total", usage)
    if not isinstance(total, Mapping):
        return None
    cost = _real(total.get("estimated_cost_usd"))
    if cost is not None and cost >= 0:
        return f"≈ {money(cost)}"
    rows = usage.get(rows_key)
    unpriced: list[tuple[str, int]] = []
    if isinstance(rows, Mapping):
        unpriced = [(str(name), _count(r.get("input_tokens")) + _count(r.get("output_tokens")))
                    for name, r in rows.items() if isinstance(r, Mapping) and _real(r.get("estimated_cost_usd")) is None]
    elif isinstance(usage.get("unpriced"), list):
        unpriced = [(str(name), 0) for name in usage["unpriced"]]
    tokens = sum(t for _, t in unpriced) or _count(total.get("input_tokens")) + _count(total.get("output_tokens"))
    names = ", ".join(name[:60] for name, _ in unpriced[:3]) + (f" and {len(unpriced) - 3} more"
                                                                 if len(unpriced) > 3 else "")
    return f"unknown ({tokens:,} tokens on {names or 'a model'} without a price)"


def cost_line(usage: object, agent: object, baseline_usage: object, baseline_agent: object) -> str | None:
    """The run's cost in dollars, judge and agent, beside main's when the baseline records it, as one line of plain
    text (``Cost: judge ≈ 0.0120 USD, agent ≈ 0.0450 USD · main: judge ≈ …``); None when neither side used any.
    An unknown price is ``unknown`` with its tokens, never 0."""
    def parts(judge: str | None, agent_side: str | None) -> str | None:
        shown = [f"judge {judge}"] * (judge is not None) + [f"agent {agent_side}"] * (agent_side is not None)
        return ", ".join(shown) or None

    judge = _side_cost(usage, "per_model") if isinstance(usage, Mapping) and usage.get("total") else None
    ours = parts(judge, _side_cost(agent, "per_model"))
    if ours is None:
        return None
    theirs = parts(_side_cost(baseline_usage, "per_model"), _side_cost(baseline_agent, "per_model"))
    prices = next((u.get("prices") for u in (agent, usage) if isinstance(u, Mapping)
                   and isinstance(u.get("prices"), str)), None)
    note = f" ({prices[:120]})" if prices else ""
    return f"Cost of this run: {ours}" + (f" · main: {theirs}" if theirs else "") + note


def _concurrency_note(cuts: Mapping[str, Any]) -> str:
    """``ConcurrencyCuts.note`` from the report's plain data (counts only are taken from it)."""
    def count(key: str, least: int) -> int:
        return max(least, min(_count(cuts.get(key)), 10**9))

    return ConcurrencyCuts(maximum=count("maximum", 1), lowest=count("lowest", 1), cuts=count("cuts", 1),
                           after_timeouts=count("after_timeouts", 0)).note()


def _link(label: str, target: str | None) -> mdsafe.Safe:
    if not target:
        return mdsafe.Safe("")
    if re.fullmatch(r"https://[^\s()<>\[\]]+", target):
        return mdsafe.Safe(f"[{mdsafe.inline(label)}]({target})")
    return mdsafe.Safe(f"{mdsafe.inline(label)} ({mdsafe.inline(target, 200)})")


def set_counts(es: EvalSetComparison | Mapping[str, Any]) -> dict[str, int]:
    """Current case statuses of an eval set (a model, or its plain-data form in a template)."""
    counts = {"cases": 0, "passed": 0, "failed": 0, "not_evaluated": 0, "error": 0}
    for status in case_statuses(_field(es, "cases")):
        counts["cases"] += 1
        if isinstance(status, str) and status in counts:
            counts[status] += 1
    return counts


INFORMATIONAL_CHANGES = frozenset({"informational", "not_evaluated", "new", "unchanged"})
"""A criterion row without a threshold and with one of these changes is informational: not gated, shown on one line
with the eval set's other informational criteria (informational_line) instead of a table row each."""


def informational(row: CriterionRow | Mapping[str, Any]) -> bool:
    """A criterion row with no threshold that nothing gates (a redefined or removed one stays a row: a yardstick
    change)."""
    return _field(row, "threshold") is None and _field(row, "change") in INFORMATIONAL_CHANGES


def informational_line(rows: object, unvalued: bool = True) -> str | None:
    """The eval set's informational criteria on one line: ``Informational, no threshold (not gated): latency 1.300
    (main 1.200) · tool_call_count_v1, token_usage_v1 (no value)``; ``unvalued`` False leaves out the criteria with
    no value on either side (None when nothing is left)."""
    valued: list[str] = []
    bare: list[str] = []
    for row in rows if isinstance(rows, list) else []:
        if not informational(row):
            continue
        name = str(_field(row, "criterion"))
        current, base = _real(_field(row, "current_mean")), _real(_field(row, "baseline_mean"))
        if current is None and base is None:
            bare.append(name)
        else:
            valued.append(f"{name} {score_text(current)}" + (f" (main {score_text(base)})" if base is not None else ""))
    parts = valued + ([", ".join(bare) + " (no value)"] if bare and unvalued else [])
    return "Informational, no threshold (not gated): " + " · ".join(parts) if parts else None


def visible_rows(es: EvalSetComparison | Mapping[str, Any]) -> list[Any]:
    """Table rows worth a line: anything gated with a value or a change (informational criteria take one line after
    the table: informational_line)."""
    rows = _field(es, "rows")
    return [
        row for row in (rows if isinstance(rows, list) else [])
        if not informational(row) and (
            _field(row, "current_mean") is not None or _field(row, "baseline_mean") is not None
            or _field(row, "change") in ("regressed", "inconclusive", "changed_definition", "removed"))
    ]


def plural(n: int, word: str) -> str:
    """``1 change``, ``2 changes``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def yardstick_note(comparison: Comparison) -> str | None:
    """``⚠️ 2 yardstick changes (shop / refund: case removed, …)``: those the PR's baseline update does not accept,
    the first named (the loosening ones first), or None."""
    n = comparison.counts.get("yardstick", 0)
    if not n:
        return None
    first = sorted((y for y in comparison.yardstick if not y.accepted), key=lambda y: not y.loosens)[0]
    more = ", …" if n > 1 else ""
    return f"⚠️ {plural(n, 'yardstick change')} ({escape_lookalike(first.subject)}: {first.what}{more})"


MAX_ACCEPTED_NAMED = 3
"""Accepted regressions named in the headline (the rest are counted)."""


def accepted_summary(comparison: Comparison) -> str | None:
    """``accepted by this PR's baseline update: 1 regression (shop/track_package) · 1 definition change``: what the
    PR's baseline update accepts, by kind, accepted regressions first and named (None: nothing accepted)."""
    kinds: dict[str, list[str]] = {}
    for change in sorted(comparison.accepted, key=lambda a: a.kind != "regression"):
        kinds.setdefault(change.kind, []).append(change.subject)
    if not kinds:
        return None
    parts = []
    for kind, subjects in kinds.items():
        text = plural(len(subjects), kind)
        if kind == "regression":
            named = ", ".join(escape_lookalike(s) for s in subjects[:MAX_ACCEPTED_NAMED])
            text += f" ({named}{', …' if len(subjects) > MAX_ACCEPTED_NAMED else ''})"
        parts.append(text)
    return "accepted by this PR's baseline update: " + " · ".join(parts)


def _yardstick_pass(comparison: Comparison) -> str:
    """Why unaccepted yardstick changes did not block a passing run."""
    loosening = any(y.loosens and not y.accepted for y in comparison.yardstick)
    if comparison.policy.fail_on == "never":
        return "not blocking: fail-on never"
    if loosening:
        return "not blocking: yardstick_changes: warn"
    return "not blocking: tightened thresholds and moved files only"


def verdict(comparison: Comparison) -> tuple[str, str]:
    """The icon and one-line verdict (``merge queue: …`` in a merge queue's run)."""
    icon, title = _verdict(comparison)
    return icon, f"merge queue: {title}" if comparison.merge_queue else title


def _verdict(comparison: Comparison) -> tuple[str, str]:
    gate, n = comparison.gate, comparison.counts
    blocking = gate.verdict == "blocked" and comparison.policy.block_inconclusive
    flaky_blocks = gate.verdict == "blocked" and comparison.policy.block_flaky
    accepted = n.get("accepted_changes", n.get("accepted", 0))
    n = {**n, "changed_definition": n.get("changed_definition", 0) - sum(  # an accepted one is named as accepted
        1 for a in comparison.accepted if a.kind == "definition change")}
    extras = [f"{n[k]} {label}" for k, label in (
        ("flaky", "regressed but flaky on main" + ("" if flaky_blocks else " (not blocking)")),
        ("fixed", "fixed"),
        ("inconclusive", "inconclusive" if blocking else "inconclusive (not blocking)"),
        ("still_failing", "still failing"), ("new", "new"), ("changed_definition", "changed definition"),
    ) if n.get(k) and not (k == "new" and comparison.baseline is None)]  # without a baseline every case is "new"
    if accepted:
        extras.insert(1, accepted_summary(comparison) or f"{plural(accepted, 'change')} accepted by this PR's "
                      "baseline update")
    ruler = yardstick_note(comparison)
    budgets = [f"⛔ {row.label} {row.excess}" + (f" ({row.eval_set_id})" if len(comparison.report.eval_sets) > 1 else "")
               for row in comparison.efficiency if row.status == "over_budget" and row.excess]
    if comparison.invisible_ids:
        extras.insert(0, f"⚠️ {len(comparison.invisible_ids)} id(s) with invisible or look-alike characters")
    if carried := words.carried_line(comparison):
        extras.append(carried)
    if gate.verdict == "invalid":
        first = gate.reasons[0] if gate.reasons else "see below"
        first = first if len(first) <= 200 else first[:199] + "…"
        more = len(gate.reasons) - 1
        title = f"invalid input: {first}" + (f" · {more} more problem(s)" if more > 0 else "")
    elif gate.verdict == "error":
        labels = [r.split(":", 1)[0] for r in gate.reasons if not r.startswith("also found")]
        return ICONS["error"], f"could not measure, not passing: {', '.join(labels) or 'see below'}"
    elif gate.verdict == "blocked":
        conflicts = comparison.baseline_update is not None and not comparison.baseline_update.matches
        if n.get("regressed"):
            lead = f"{n['regressed']} regressed"
            extras[:0] = budgets
        elif budgets:
            lead = budgets[0] + (f" · {len(budgets) - 1} more budget(s) exceeded" if len(budgets) > 1 else "")
        elif flaky_blocks and n.get("flaky"):
            lead = f"{n['flaky']} regressed, flaky on main (blocking: block_flaky)"
            extras = [e for e in extras if "flaky on main" not in e]
        elif ruler and comparison.policy.yardstick_changes == "block" and any(
                y.loosens and not y.accepted for y in comparison.yardstick):
            lead, ruler = ruler.replace(" (", " not accepted (", 1), None
        elif conflicts:
            assert comparison.baseline_update is not None
            extras[:0] = budgets
            stale = comparison.baseline_update.stale
            first = (comparison.baseline_update.differences or [""])[0].split(": ", 1)[0]
            lead = (f"⚠️ this PR's baseline update is stale ({escape_lookalike(', '.join(stale[:3]))[:200]}"
                    f"{', …' if len(stale) > 3 else ''}: main changed it since)" if stale
                    else "⚠️ this PR's baseline update does not match this run" + (f" ({first[:200]})" if first else ""))
        else:
            lead = "; ".join(gate.reasons[:1])
        if ruler:
            extras.insert(0, ruler)
        if conflicts and not lead.startswith("⚠️ this PR's baseline"):  # stale or not matching
            extras.insert(0, "⚠️ the baseline update does not match this run")
        title = f"blocked: {lead}" + "".join(f" · {e}" for e in extras)
    elif comparison.baseline is None:
        t = comparison.report.totals
        flag = "".join(f" · {e}" for e in extras[:1] if comparison.invisible_ids)
        update = comparison.baseline_update
        if update is not None and update.matches and comparison.baseline_error is None:
            return ICONS[gate.verdict], f"baseline created by this PR; {t.passed} of {t.cases} case(s) passed{flag}"
        return "⚠️", f"no baseline; {t.passed} of {t.cases} case(s) passed{flag}"
    elif n.get("regressed"):  # passed although cases regressed: only a policy that never blocks lets that through
        title = (f"{n['regressed']} regressed — not blocking: fail-on {comparison.policy.fail_on}"
                 + "".join(f" · {e}" for e in ([ruler] if ruler else []) + extras))
        return "⚠️", title
    elif comparison.alerts:  # never a plain "no regressions" when something that could regress was not measured
        return "⚠️", "no regressions in what was measured; see the warnings" + "".join(
            f" · {e}" for e in ([ruler] if ruler else []) + extras)
    elif ruler:  # never a plain "no regressions" while what is measured changed unaccepted
        return "⚠️", f"no regressions · {ruler} ({_yardstick_pass(comparison)})" + "".join(f" · {e}" for e in extras)
    elif accepted:
        rest = [e for e in extras if "accepted by this PR" not in e]
        lead = accepted_summary(comparison) or f"{plural(accepted, 'change')} accepted by this PR's baseline update"
        title = lead + "".join(f" · {e}" for e in rest)
    else:
        title = "no regressions" + "".join(f" · {e}" for e in extras)
    return ICONS[gate.verdict], title


def environment(custom_template: str | None = None) -> BoundedSandbox:
    """The sandboxed template environment (the default templates, plus a user comment template if given), its
    renders bounded in time and work (evalbot.render.bounded)."""
    loaders: list[jinja2.BaseLoader] = [PrecompiledLoader()]
    if custom_template is not None:
        loaders.insert(0, jinja2.DictLoader({CUSTOM_TEMPLATE: custom_template}))
    env = BoundedSandbox(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=mdsafe.soften,
    )
    env.filters.update(
        inline=mdsafe.inline, html=mdsafe.html, cell=mdsafe.cell, code=mdsafe.code, span=mdsafe.span, sha=mdsafe.sha,
        score=_score,
        delta=_delta, pvalue=_pvalue, number=_number, link=_link, row_note=_row_note,
    )
    env.tests["delta_differs"] = delta_differs
    env.filters["pprint"] = lambda value: pprint.pformat(materialized(value))  # a CaseList as its list
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "default": json_default}  # tojson: the same
    env.globals.update(set_counts=set_counts, visible_rows=visible_rows, informational_line=informational_line,
                       delta_footnote=words.DELTA_FOOTNOTE, row_badges=ROW_BADGES, version=__version__,
                       usage_view=usage_view, efficiency_rows=efficiency_rows, cost_line=cost_line)
    return env


_FENCE_LINE = re.compile(r"^(`{3,})[A-Za-z0-9+-]*$")


def tidy(text: str) -> str:
    """Collapse runs of blank lines outside fenced code blocks (code is left exactly as it is)."""
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        if fence is None:
            match = _FENCE_LINE.match(line)
            if match:
                fence = match.group(1)
            elif not line.strip() and out and not out[-1].strip():
                continue
        elif line == fence:
            fence = None
        out.append(line)
    return "\n".join(out)


def enforce_marker(text: str, marker: str) -> str:
    """``marker`` exactly once, on the first line; any other evalbot marker (forged or user-made) is broken."""
    body = text.replace(marker, "")
    body = _ANY_MARKER.sub(lambda m: mdsafe.break_marker(m.group(0)), body).lstrip("\n")
    return f"{marker}\n{body}" if marker else body


_SCALARS = (int, float, bool)


def plain(value: object, depth: int = 0) -> Any:
    """``value`` as plain data (dicts with string keys, lists, strings, numbers, booleans, None).

    Templates see only this: no model, dataclass or other object whose methods a template could call (pydantic
    models carry methods such as ``parse_raw`` that can unpickle). Anything else is a bug, not silently passed on.
    """
    if depth > 100:
        raise TypeError("template context nested deeper than 100 levels")
    if isinstance(value, BaseModel):
        return plain(value.model_dump(mode="json"), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
    if isinstance(value, mdsafe.Safe):
        return mdsafe.Safe(str.__str__(value))
    if isinstance(value, str):
        return str.__str__(value)
    if value is None or type(value) in _SCALARS:
        return value
    if isinstance(value, int):  # an IntEnum or other int subclass
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v, depth + 1) for v in value]
    raise TypeError(f"{type(value).__name__} cannot go into a template context")


def trusted_shas(comparison: Comparison) -> list[str]:
    """The commit shas evalbot names in the comment and summary: the run's (the PR's head), the baseline's and the
    carried eval sets'. The templates' inline filter shows each as a copyable code span wherever the text names it
    (the sha filter's: hex digits only, so a forged one could at most be a code span of hex digits)."""
    found = [comparison.commit, comparison.baseline.commit if comparison.baseline is not None else None,
             comparison.carried.commit if comparison.carried is not None else None]
    return [sha for sha in found if sha]


def _context(
    comparison: Comparison, data: Mapping[str, Any], limits: Limits, *, marker: str, links: Links, kind: str
) -> dict[str, Any]:
    icon, title = verdict(comparison)
    sets = data["eval_sets"]
    return {  # ``data`` is plain already; everything else is made so here
        "c": data,
        "sets": sets[: limits.sets],
        "usage": data["report"]["usage"] or {},  # Report.usage (a validated JudgeUsage) as plain data
        **plain({
            "marker": mdsafe.Safe(marker),
            "icon": icon,
            "title": title,
            "more_sets": max(0, len(sets) - limits.sets),
            "sections": sections(comparison, limits),
            "limits": limits,
            "links": links,
            "kind": kind,
            "notices": words.headline_notices(comparison),
            "shas": trusted_shas(comparison),
        }),
    }


def _render(env: jinja2.Environment, name: str, context: Mapping[str, Any]) -> str:
    try:
        template = env.get_template(name)
        if isinstance(env, BoundedSandbox):
            return mdsafe.finish(render_bounded(env, template, context))
        return mdsafe.finish(template.render(context))
    except jinja2.TemplateSyntaxError as exc:
        raise TemplateError(f"comment template {exc.name or name}, line {exc.lineno}: {exc.message}") from None
    except jinja2.TemplateError as exc:
        raise TemplateError(f"comment template {name}: {type(exc).__name__}: {exc}") from None


def fallback(comparison: Comparison, marker: str, links: Links) -> str:
    """The last-resort body: verdict, counts and where to find everything (always a few hundred characters)."""
    icon, title = verdict(comparison)
    counts = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in comparison.counts.items() if v)
    where = " · ".join(x for x in (_link("job summary", links.summary), _link("report", links.report)) if x)
    lines = [f"### {icon} evalbot: {mdsafe.inline(title, 300, trusted_shas(comparison))}", ""]
    lines += [f"> ⚠️ **{mdsafe.inline(alert, 500)}**" for alert in comparison.alerts]
    lines += [""] if comparison.alerts else []
    if counts:
        lines += [f"Cases: {mdsafe.inline(counts, 600)}.", ""]
    lines.append(f"The full results did not fit in a comment; see {where or 'the job summary'}.")
    return enforce_marker(mdsafe.finish("\n".join(lines) + "\n"), marker)


@gc_paused()  # the comparison's objects are long-lived: no collector passes over them while rendering
def render_comment(
    comparison: Comparison, *, marker: str, links: Links | None = None, template: str | None = None,
    target: int = COMMENT_TARGET,
) -> str:
    """The PR comment: the default template or ``template`` (text of a user template), at most ``target`` wide."""
    links = links or Links()
    env = environment(template)
    name = CUSTOM_TEMPLATE if template is not None else "comment.md.j2"
    data = comparison_data(comparison)
    for limits in COMMENT_LADDER:
        rendered = _render(env, name, _context(comparison, data, limits, marker=marker, links=links, kind="comment"))
        text = enforce_marker(tidy(rendered), marker)
        if mdsafe.width(text) <= min(target, COMMENT_LIMIT):
            return text
    return fallback(comparison, marker, links)


def render_unmeasured(
    message: str, *, marker: str, links: Links | None = None, commit: str | None = None
) -> str:
    """The comment (or, with an empty marker, the summary) of a run that could not be measured at all, e.g. a
    sharded run whose parts are missing: the headline says so, never a stale or partial result."""
    links = links or Links()
    headline = message.split(":", 1)[0].strip() or "see below"
    where = " · ".join(x for x in (_link("job summary", links.summary), _link("report", links.report)) if x)
    text = _render(environment(), "unmeasured.md.j2", {
        "icon": ICONS["error"], "headline": headline, "message": message,
        "commit": commit[:12] if commit else None, "where": mdsafe.Safe(where),
    })
    return enforce_marker(tidy(text), marker)


@gc_paused()
def render_summary(comparison: Comparison, *, links: Links | None = None, target: int = SUMMARY_TARGET) -> str:
    """The job summary: everything that fits in ``target`` UTF-8 bytes (and never more than 1 MiB)."""
    links = links or Links()
    env = environment()
    data = comparison_data(comparison)
    for limits in SUMMARY_LADDER:
        context = _context(comparison, data, limits, marker="", links=links, kind="summary")
        text = _render(env, "summary.md.j2", context)
        text = enforce_marker(tidy(text), "")
        if len(text.encode("utf-8")) <= min(target, SUMMARY_LIMIT):
            return text
    return fallback(comparison, "", links)
