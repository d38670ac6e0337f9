"""The agent's cost on an eval set — tokens (in and out), model calls, tool calls and seconds per invocation — as
the baseline keeps it, its change against main with a paired test over cases, and the policy's ``budgets``.

The values come from the informational efficiency metrics every run reports (``token_usage_v1``,
``inference_call_count_v1``, ``tool_call_count_v1``, ``invocation_duration_v1``; ``latency`` when configured): per
case, the mean per invocation. The baseline
keeps, per eval set, each quantity's mean and 95th percentile over the cases and every case's value (the pairs of
the test). A change is *news* only when a test over the cases measured on both sides finds it: the exact sign test
for a mean, an exact binomial test of the share of cases above main's 95th percentile for a p95. A budget
(``"tokens": "+20%"``, ``"tool_calls": "+1"``) blocks when the change exceeds it and the test says the excess is not
noise; a budget that cannot be measured (an older baseline, a run without the counts, or without them on any case
main measured: a budget holds on main's cases, never on the rest) says so and does not pass. Pure.
"""

from __future__ import annotations

import marshal
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field

from evalbot.compare.stats import exceedance_test, sign_test
from evalbot.errors import did_you_mean, printable
from evalbot.formats.numbers import p_value_text
from evalbot.results import CaseResult, EvalSetReport, StrictModel
from evalbot.turnpack import PackedMapping, with_dict

Stat = Literal["mean", "p95"]
STATS: tuple[Stat, ...] = ("mean", "p95")


@dataclass(frozen=True)
class Quantity:
    """One efficiency quantity: its label, unit, and which criterion's details hold it."""

    label: str
    unit: str
    criteria: tuple[str, ...]
    field: str | None = None
    """A key of the criterion's ``token_usage_details`` (None: the criterion's ``value``)."""
    hint: str = ""


_TOKENS_HINT = "token counts come from usage_metadata on the run's recorded events, which ADK's inference records"
QUANTITIES: dict[str, Quantity] = {
    "tokens": Quantity("tokens", "tokens", ("token_usage_v1",), "total_tokens", _TOKENS_HINT),
    "tokens_in": Quantity("input tokens", "tokens", ("token_usage_v1",), "input_tokens", _TOKENS_HINT),
    "tokens_out": Quantity("output tokens", "tokens", ("token_usage_v1",), "output_tokens", _TOKENS_HINT),
    "model_calls": Quantity("model calls", "calls", ("inference_call_count_v1",), None,
                            "model calls are counted from the run's recorded events, which ADK's inference records"),
    "tool_calls": Quantity("tool calls", "calls", ("tool_call_count_v1",), None, "the run records no invocations"),
    "latency": Quantity("seconds", "s", ("invocation_duration_v1", "latency"), None,
                        "seconds come from each invocation's recorded duration (or Vertex's latency_in_seconds)"),
}
"""The quantities, per invocation, in the order every output lists them."""
BUDGET_NAMES: tuple[str, ...] = (*QUANTITIES, *(f"{q}_p95" for q in QUANTITIES))
"""A budget on a quantity's mean (``tokens``) or on its 95th percentile over the cases (``latency_p95``)."""
MAX_VALUE = 1e12
"""Largest per-invocation value kept (a forged file or a broken counter cannot make the comment print nonsense)."""
MAX_PERCENT = 10_000.0
MAX_ABSOLUTE = 1e9
P95_SHARE = 0.05


def _finite(value: object) -> float | None:
    if type(value) is float:  # the common case first (a float's checks, float() of it is itself)
        return value if 0 <= value <= MAX_VALUE else None  # NaN compares false: None
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
            and 0 <= value <= MAX_VALUE:
        return float(value)
    return None


def _details_value(details: Mapping[str, Any], field: str | None, depth: int = 0) -> float | None:
    """A metric's value (``field`` of its ``token_usage_details``; None: its ``value``); for a case pooled over
    several runs of the agent (``details.runs``, ``--num-runs``) without it, the mean over the runs that have it."""
    if field is None:
        value = _finite(details.get("value"))
    else:
        tokens = details.get("token_usage_details")
        value = _finite(tokens.get(field)) if isinstance(tokens, Mapping) else None
    if value is not None:
        return value
    runs = details.get("runs")
    if depth == 0 and isinstance(runs, list):
        found = [v for run in runs if isinstance(run, Mapping) and isinstance(run.get("details"), Mapping)
                 and (v := _details_value(run["details"], field, 1)) is not None]
        value = _mean(found) if found else None
    return value


def case_values(case: CaseResult, builtin: frozenset[str]) -> dict[str, float]:
    """A case's value of every quantity its metrics measured (only built-in criteria in ``builtin`` count: a custom
    metric named like one is not the agent's cost)."""
    out: dict[str, float] = {}
    metrics = case.metrics
    for name, criteria, field in _lookups(builtin):
        for criterion in criteria:
            metric = metrics.get(criterion)
            if metric is None:
                continue
            details = metric.details
            if not isinstance(details, dict):
                continue
            value = _details_value(details, field)
            if value is not None:
                out[name] = round(value, 4)
                break
    return out


_LOOKUPS: dict[frozenset[str], list[tuple[str, tuple[str, ...], str | None]]] = {}


def _lookups(builtin: frozenset[str]) -> list[tuple[str, tuple[str, ...], str | None]]:
    """Per quantity (in order), the criteria of ``builtin`` that may hold it and the field: made once per set of
    criteria (an eval set's), not once per case; quantities no criterion there holds are left out."""
    found = _LOOKUPS.get(builtin)
    if found is None:
        found = [(name, kept, q.field) for name, q in QUANTITIES.items()
                 if (kept := tuple(c for c in q.criteria if c in builtin))]
        if len(_LOOKUPS) < 256:
            _LOOKUPS[builtin] = found
    return found


def p95(values: Sequence[float]) -> float:
    """The 95th percentile (nearest rank) of non-empty ``values``."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


class _Frozen(StrictModel):
    model_config = ConfigDict(frozen=True)


class EfficiencyStat(_Frozen):
    """One quantity over an eval set's cases on main."""

    mean: float = Field(ge=0, le=MAX_VALUE, allow_inf_nan=False, strict=True)
    p95: float = Field(ge=0, le=MAX_VALUE, allow_inf_nan=False, strict=True)
    cases: int = Field(ge=1, le=10**9, strict=True)


Value = Annotated[float, Field(ge=0, le=MAX_VALUE, allow_inf_nan=False, strict=True)]
CaseValues = dict[str, Value]


class BaselineEfficiency(_Frozen):
    """One eval set's efficiency on main: per quantity its mean and p95 over the cases, and each case's values."""

    stats: dict[str, EfficiencyStat] = Field(default_factory=dict)
    cases: Mapping[str, CaseValues] = Field(default_factory=dict)
    """A dict when built; a parsed baseline's are :class:`PackedValues` (each case's dict made on each access)."""

    # pydantic serialises a dict, not PackedValues (see baseline.BaselineEvalSet.model_dump)
    def model_dump(self, **options: Any) -> dict[str, Any]:
        return _Frozen.model_dump(self.unpacked(), **options)

    def model_dump_json(self, **options: Any) -> str:
        return _Frozen.model_dump_json(self.unpacked(), **options)

    def unpacked(self) -> BaselineEfficiency:
        """This entry with its cases' values as a dict (a copy, when they are packed)."""
        return with_dict(self, "cases")

    def packed(self, keys: Mapping[str, str]) -> None:
        """Keep this (parsed, validated) entry's cases as :class:`PackedValues`, each case key the equal string of
        ``keys`` where it has one (the baseline's own case keys: one string for both)."""
        names: dict[str, int] = {}
        rows = {}
        for key, values in self.cases.items():
            row: list[int | float] = []
            for name, value in values.items():
                row += (names.setdefault(name, len(names)), value)
            rows[keys.get(key, key)] = marshal.dumps(tuple(row))
        self.__dict__["cases"] = PackedValues(rows, list(names))


class PackedValues(PackedMapping[CaseValues]):
    """A parsed baseline's per-case efficiency values of one eval set: each case's values one ``marshal`` bytes object
    (quantity indexes and floats, about 0.1 KB against 0.3 KB for a dict), its dict made again on each access.
    Immutable; compares equal to a dict of the same values."""

    __slots__ = ()

    def _unpack(self, packed: bytes) -> CaseValues:
        row = marshal.loads(packed)
        names = self._names
        return {names[row[i]]: row[i + 1] for i in range(0, len(row), 2)}


def _builtin(es: EvalSetReport) -> frozenset[str]:
    return frozenset(c.name for c in es.criteria if c.custom is None)


def efficiency_of(es: EvalSetReport, case_keys: Sequence[str],
                  values: Sequence[dict[str, float]] | None = None) -> BaselineEfficiency:
    """What the baseline keeps of an eval set's efficiency (empty when the run measured none); ``values``: each
    case's :func:`case_values`, when the caller has them already."""
    if values is None:
        builtin = _builtin(es)
        values = [case_values(case, builtin) for case in es.cases]
    cases = {key: v for key, case, v in zip(case_keys, es.cases, values, strict=True) if case.status != "error" and v}
    return BaselineEfficiency(stats=_stats(cases.values()), cases=cases)


def _stats(values: Collection[dict[str, float]]) -> dict[str, EfficiencyStat]:
    """Per quantity, its mean and p95 over the cases' ``values`` (those measured: each case's :func:`case_values`)."""
    return _column_stats({name: [v[name] for v in values if name in v] for name in QUANTITIES})


def _column_stats(columns: Mapping[str, Sequence[float]]) -> dict[str, EfficiencyStat]:
    """Per quantity, its mean and p95 over its column of the cases' values (in case order)."""
    stats = {}
    for name in QUANTITIES:
        column = columns.get(name)
        if column:
            stats[name] = EfficiencyStat(mean=round(_mean(column), 4), p95=p95(column), cases=len(column))
    return stats


# --- budgets -------------------------------------------------------------------------------------------------------

_BUDGET = re.compile(r"\+([0-9]{1,15}(?:\.[0-9]{1,15})?)(%?)")


@dataclass(frozen=True)
class Budget:
    """An allowed increase: ``+20%`` of main's value, or ``+1`` in the quantity's unit."""

    name: str
    text: str
    amount: float
    relative: bool

    @property
    def quantity(self) -> str:
        """The budgeted quantity (``latency`` for ``latency_p95``)."""
        return self.name.removesuffix("_p95")

    @property
    def stat(self) -> Stat:
        """``p95`` for a ``_p95`` budget, else ``mean``."""
        return "p95" if self.name.endswith("_p95") else "mean"

    def allowed(self, base: float) -> float:
        """The most a value may reach when main's is ``base``."""
        return base * (1 + self.amount / 100) if self.relative else base + self.amount


class BudgetError(ValueError):
    """A bad ``budgets`` entry: ``key`` is the entry's name (None: the whole object)."""

    def __init__(self, key: str | None, message: str) -> None:
        super().__init__(message)
        self.key = key


def parse_budget(name: str, value: object) -> Budget:
    """One ``budgets`` entry; a bad one raises BudgetError saying what is accepted."""
    if name not in BUDGET_NAMES:
        raise BudgetError(name, f"unknown budget {printable(name)!r}{did_you_mean(name, BUDGET_NAMES)}; known: "
                                f"{', '.join(BUDGET_NAMES)}")
    if not isinstance(value, str):
        shown = printable(repr(value))[:80]
        raise BudgetError(name, f"budget {name} must be a string such as \"+20%\" (of main's value) or \"+1\" (in "
                                f"{QUANTITIES[name.removesuffix('_p95')].unit}), got {shown}")
    text = value.strip()
    match = _BUDGET.fullmatch(text)
    if match is None:
        hint = " (a budget is the increase allowed; a decrease cannot be required)" if text.startswith("-") else ""
        raise BudgetError(name, f"budget {name} must be \"+N%\" or \"+N\" with N a plain non-negative number, got "
                                f"{printable(value)[:80]!r}{hint}")
    amount, relative = float(match.group(1)), bool(match.group(2))
    limit = MAX_PERCENT if relative else MAX_ABSOLUTE
    if amount > limit:
        raise BudgetError(name, f"budget {name} {text} is beyond the largest accepted ({'+' + format(limit, 'g')}"
                                f"{'%' if relative else ''}); remove the budget instead of setting it out of reach")
    return Budget(name, text, amount, relative)


def parse_budgets(raw: object) -> dict[str, Budget]:
    """The policy's ``budgets`` object (None: none)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise BudgetError(None, f"budgets must be an object such as {{\"tokens\": \"+20%\"}}, got {type(raw).__name__}")
    if len(raw) > len(BUDGET_NAMES):
        raise BudgetError(None, f"budgets has {len(raw)} entries; there are {len(BUDGET_NAMES)} budget names")
    return {str(name): parse_budget(str(name), value) for name, value in raw.items()}


def _tighter_or_same(old: Budget, new: Budget) -> bool:
    return old.relative == new.relative and new.amount <= old.amount


def loosened_budgets(base: Mapping[str, str], pr: Mapping[str, str]) -> list[tuple[str, str]]:
    """(budget name, change in words) for each budget of ``base`` that ``pr`` removes or loosens (a change between
    ``%`` and an absolute amount counts as loosening: they cannot be compared)."""
    old, new = parse_budgets(base), parse_budgets(pr)
    out = []
    for name, budget in old.items():
        other = new.get(name)
        if other is None:
            out.append((name, f"budget removed (was {budget.text})"))
        elif not _tighter_or_same(budget, other):
            out.append((name, f"budget loosened from {budget.text} to {other.text}"))
    return out


# --- the change against main --------------------------------------------------------------------------------------

EfficiencyStatus = Literal["unchanged", "rose", "fell", "over_budget", "within_budget", "not_measured"]
"""A budgeted row: over_budget, within_budget or not_measured; otherwise the change the test finds."""


class EfficiencyDelta(StrictModel):
    """One quantity's mean or p95 on one eval set: main, this run, the change over the cases measured on both, its
    test, and the budget on it (if any)."""

    eval_set_id: str
    quantity: str
    stat: Stat
    label: str
    baseline: float | None = None
    current: float | None = None
    change: float | None = None
    """Over the paired cases: current − main."""
    relative: float | None = None
    """``change`` over main's value (None when main's is 0)."""
    paired: int = 0
    p_value: float | None = None
    """The test of the change against main's values (sign test for a mean, exceedance test for a p95)."""
    changed: Literal["rose", "fell"] | None = None
    """The change the test finds (None: not significant, or no change)."""
    status: EfficiencyStatus = "unchanged"
    budget: str | None = None
    budget_p_value: float | None = None
    """The test of the excess over the budget's limits."""
    excess: str | None = None
    """``+43% over the +20% budget`` when the budget is exceeded significantly."""
    reason: str | None = None
    """Why a budget could not be measured."""


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _test(stat: Stat, cur: Sequence[float], limit: Sequence[float] | float) -> tuple[int, int, float]:
    """(cases above, cases below, p-value): the sign test against per-case limits for a mean; for a p95, the cases
    above one limit against the 5% a 95th percentile allows (below: 0)."""
    if stat == "mean":
        assert not isinstance(limit, float)
        up = sum(1 for c, lim in zip(cur, limit, strict=True) if c > lim * (1 + 1e-9) + 1e-9)
        down = sum(1 for c, lim in zip(cur, limit, strict=True) if c < lim * (1 - 1e-9) - 1e-9)
        return up, down, sign_test(up, down)
    assert isinstance(limit, float)
    over = sum(1 for c in cur if c > limit * (1 + 1e-9) + 1e-9)
    return over, 0, exceedance_test(over, len(cur))


Pairs = tuple[list[float], list[float]]
"""main's and this run's values of one quantity on the cases measured on both, in the same order."""


def _current_and_paired(es: EvalSetReport, base: BaselineEfficiency | None, paired_keys: Sequence[tuple[str, int]]
                        ) -> tuple[dict[str, EfficiencyStat], dict[str, Pairs], dict[str, list[str]]]:
    """This run's stats (efficiency_of's), per quantity the values of the cases ``paired_keys`` pairs with main's,
    in its order (a key given twice: its last case, at its first place), and per quantity the keys of those cases
    main measured it on that this run did not (in the same order). One pass over the cases, each case's values
    dropped once used: no dict of values per case is held, nor a validated copy of them (issue 28: this was
    compare's peak)."""
    builtin = _builtin(es)
    paired = {key: i for key, i in paired_keys}
    wanted = {i: key for key, i in paired.items()}
    in_order = list(wanted) == sorted(wanted) and len(wanted) == len(paired)  # one pass keeps paired's order
    columns: dict[str, list[float]] = {}
    pairs_of: dict[str, Pairs] = {}
    lacking: dict[str, list[str]] = {}

    def pair(key: str, values: dict[str, float]) -> None:
        if base is not None and (b := base.cases.get(key)) is not None:  # main's case read once (a parsed
            for name in b:                                                # baseline makes its dict on access)
                if name in values:
                    main, here = pairs_of.setdefault(name, ([], []))
                    main.append(b[name])
                    here.append(values[name])
                else:
                    lacking.setdefault(name, []).append(key)

    for i, case in enumerate(es.cases):
        values = case_values(case, builtin)
        if case.status != "error" and values:
            for name, value in values.items():
                columns.setdefault(name, []).append(value)
        if in_order and (key := wanted.get(i)) is not None:
            pair(key, values)
    if not in_order:
        for key, i in paired.items():
            pair(key, case_values(es.cases[i], builtin))
    return _column_stats(columns), pairs_of, lacking


def efficiency_deltas(
    eval_set_id: str, es: EvalSetReport | None, base: BaselineEfficiency | None, paired_keys: Sequence[tuple[str, int]],
    budgets: Mapping[str, Budget], *, alpha: float, old_baseline: bool,
) -> list[EfficiencyDelta]:
    """The rows of one eval set: every quantity measured on either side (mean, and p95 where budgeted), and every
    budget, measured or not. ``paired_keys``: (case key, index in ``es.cases``) of the cases comparable with main's.
    ``old_baseline``: the baseline predates efficiency stats (every budget is then not measured)."""
    current_stats, pairs_of, lacking = _current_and_paired(es, base, paired_keys) if es is not None \
        else (None, {}, {})
    rows: list[EfficiencyDelta] = []
    for name, quantity in QUANTITIES.items():
        for stat in STATS:
            budget = budgets.get(name if stat == "mean" else f"{name}_p95")
            base_stat = base.stats.get(name) if base is not None else None
            cur_stat = current_stats.get(name) if current_stats is not None else None
            if budget is None and (stat == "p95" or old_baseline or (base_stat is None and cur_stat is None)):
                continue  # an older baseline has nothing to compare with: Comparison.efficiency_note says so
            row = EfficiencyDelta(eval_set_id=eval_set_id, quantity=name, stat=stat,
                                  label=quantity.label + (" (p95)" if stat == "p95" else ""),
                                  baseline=getattr(base_stat, stat) if base_stat else None,
                                  current=getattr(cur_stat, stat) if cur_stat else None,
                                  budget=budget.text if budget else None)
            pairs = pairs_of.get(name, ([], []))
            missing = _why_not_measured(quantity, base, base_stat, cur_stat, pairs, old_baseline=old_baseline)
            if missing is None and budget is not None and lacking.get(name):
                missing = _partly_measured(quantity, lacking[name], len(pairs[0]))
            if missing is not None:
                row.status = "not_measured" if budget is not None else "unchanged"
                row.reason = missing
                rows.append(row)
                continue
            rows.append(_measured(row, pairs, budget, alpha))
    return rows


OLD_BASELINE_NOTE = ("The baseline records no efficiency stats (written by an older evalbot), so the agent's tokens, "
                     "model calls, tool calls and seconds are not compared with main; refresh the baseline on main to "
                     "compare them.")


def _why_not_measured(
    quantity: Quantity, base: BaselineEfficiency | None, base_stat: EfficiencyStat | None,
    cur_stat: EfficiencyStat | None, pairs: Pairs, *, old_baseline: bool,
) -> str | None:
    if old_baseline:
        return "the baseline records no efficiency stats (written by an older evalbot): refresh it on main"
    if base is None:
        return "the baseline records no efficiency stats for this eval set: refresh it on main"
    if base_stat is None:
        return f"main's run recorded no {quantity.label} ({quantity.hint})"
    if cur_stat is None:
        return f"this run recorded no {quantity.label} ({quantity.hint})"
    if not pairs[0]:
        return f"no case has {quantity.label} on both main and this run"
    return None


MAX_NAMED = 5
"""Cases named in a budget's "not measured" reason (the rest are counted)."""


def _partly_measured(quantity: Quantity, lacking: Sequence[str], measured: int) -> str:
    """Why a budget is not measured when this run lacks the quantity on cases main measured it on: a budget holds on
    the cases measured on main, never on the rest (a run cannot shed its costly cases by dropping their counts)."""
    total = len(lacking) + measured
    named = ", ".join(printable(key) for key in lacking[:MAX_NAMED])
    more = f" and {len(lacking) - MAX_NAMED} more" if len(lacking) > MAX_NAMED else ""
    return (f"this run recorded no {quantity.label} on {len(lacking)} of the {total} case(s) main measured "
            f"({named}{more}); {quantity.hint}")


def _measured(row: EfficiencyDelta, pairs: Pairs, budget: Budget | None, alpha: float) -> EfficiencyDelta:
    base_values, cur_values = pairs
    row.paired = len(base_values)
    if row.stat == "mean":
        old, new = _mean(base_values), _mean(cur_values)
    else:
        old, new = p95(base_values), p95(cur_values)
    row.change = new - old
    row.relative = row.change / old if old > 0 else None
    # Is there a change at all (against main's values), and is it beyond the budget (against the budget's limits)?
    if row.stat == "mean":
        up, down, p = _test("mean", cur_values, base_values)
        row.p_value = p
        if p < alpha and up != down:
            row.changed = "rose" if up > down else "fell"
    else:
        over, _, p_up = _test("p95", cur_values, old)
        row.p_value = p_up
        if p_up < alpha and new > old:
            row.changed = "rose"
    row.status = row.changed or "unchanged"
    if budget is None:
        return row
    if row.stat == "mean":
        over, under, p_budget = _test("mean", cur_values, [budget.allowed(b) for b in base_values])
        beyond = new > budget.allowed(old) and over > under
    else:
        over, _, p_budget = _test("p95", cur_values, budget.allowed(old))
        beyond = new > budget.allowed(old)
    row.budget_p_value = p_budget
    if beyond and p_budget < alpha:
        row.status = "over_budget"
        row.excess = f"{change_text(row)} over the {budget.text} budget"
    else:
        row.status = "within_budget"
    return row


def change_text(row: EfficiencyDelta | Mapping[str, Any]) -> str:
    """``+43%`` (``+1.2`` for an absolute budget or a zero baseline), or ``—`` without a change."""
    data = row if isinstance(row, Mapping) else row.model_dump()
    change, relative, budget = data.get("change"), data.get("relative"), data.get("budget")
    if not isinstance(change, int | float):
        return "—"
    absolute = isinstance(budget, str) and not budget.endswith("%")
    if absolute or not isinstance(relative, int | float):
        return "±0" if abs(change) < 5e-4 else f"{change:+.3g}"
    return "±0%" if abs(relative) < 0.005 else f"{relative:+.0%}"


STATUS_WORDS = {
    "over_budget": "⛔ over budget", "within_budget": "✅ within budget", "not_measured": "⚠️ not measured",
}
CHANGE_WORDS = {"rose": "rose significantly", "fell": "fell significantly"}


def value_text(value: object, quantity: object) -> str:
    """``3,986`` tokens, ``1.25`` calls, ``2.00 s``; ``—`` without a value."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return "—"
    unit = QUANTITIES[quantity].unit if isinstance(quantity, str) and quantity in QUANTITIES else ""
    if unit == "tokens":
        return f"{value:,.0f}"
    return f"{value:.2f} s" if unit == "s" else f"{value:.2f}"


def efficiency_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Every output's efficiency table from ``Comparison.efficiency`` as plain data: preformatted strings (main, this
    run, change, the test, the budget and its verdict)."""
    out = []
    for row in rows:
        status, changed = row.get("status"), row.get("changed")
        p_value, paired = row.get("p_value"), row.get("paired")
        test = ", ".join(x for x in (p_value_text(p_value if isinstance(p_value, float) else None),
                                     f"n = {paired}" if isinstance(paired, int) and paired else None) if x)
        moved = CHANGE_WORDS.get(changed, "") if isinstance(changed, str) else ""
        if not moved and test and change_text(row) not in ("±0", "±0%"):
            moved = "change not significant"
        verdict = STATUS_WORDS.get(status, "") if isinstance(status, str) else ""
        if status == "not_measured":
            verdict += f": {row.get('reason') or 'see the alerts'}"
        elif status == "over_budget" and isinstance(row.get("budget_p_value"), float):
            verdict += f" ({p_value_text(row['budget_p_value'])})"
        words = " · ".join(x for x in (moved, verdict) if x)
        out.append({
            "eval_set": str(row.get("eval_set_id", "")), "label": str(row.get("label", "")),
            "main": value_text(row.get("baseline"), row.get("quantity")),
            "current": value_text(row.get("current"), row.get("quantity")),
            "change": change_text(row), "test": test, "budget": str(row.get("budget") or "—"), "verdict": words,
            "status": str(status or ""),
        })
    return out
