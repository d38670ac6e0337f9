"""Budgets on the agent's cost: hostile values are refused naming the file and JSON path, loosening is found, and the
paired tests tell an excess from noise (:mod:`evalbot.compare.efficiency`)."""

from __future__ import annotations

import json
import random

import pytest

from evalbot.compare.accept import ProposedBaseline
from evalbot.compare.baseline import Baseline, build_baseline, dump_baseline, parse_baseline
from evalbot.compare.delta import compare
from evalbot.compare.efficiency import (
    BaselineEfficiency,
    EfficiencyDelta,
    EfficiencyStat,
    efficiency_deltas,
    loosened_budgets,
    p95,
    parse_budgets,
)
from evalbot.compare.gate import GatePolicy, policy_from_settings
from evalbot.compare.model import Comparison
from evalbot.errors import InputError
from evalbot.results import CaseResult, CriterionInfo, EvalSetReport, MetricResult, Report, Totals


@pytest.mark.parametrize(("value", "pointer", "words"), [
    ({"tokens": "+abc"}, "/evalbot/budgets/tokens", '"+N%" or "+N"'),
    ({"tokens": "-20%"}, "/evalbot/budgets/tokens", "a decrease cannot be required"),
    ({"tokens": "+1e9%"}, "/evalbot/budgets/tokens", '"+N%" or "+N"'),
    ({"tokens": "+99999999%"}, "/evalbot/budgets/tokens", "beyond the largest accepted (+10000%)"),
    ({"latency": "+9999999999"}, "/evalbot/budgets/latency", "beyond the largest accepted"),
    ({"tokens": "+" + "9" * 5000}, "/evalbot/budgets/tokens", '"+N%" or "+N"'),
    ({"tokens": 20}, "/evalbot/budgets/tokens", "must be a string"),
    ({"tokens": "+NaN%"}, "/evalbot/budgets/tokens", '"+N%" or "+N"'),
    ({"tokens": "+20%\u202e"}, "/evalbot/budgets/tokens", '"+N%" or "+N"'),
    ({"tokns": "+20%"}, "/evalbot/budgets/tokns", "did you mean 'tokens'?"),
    ({"latency_p59": "+20%"}, "/evalbot/budgets/latency_p59", "did you mean 'latency_p95'?"),
    (["tokens"], "/evalbot/budgets", "must be an object"),
    ({f"k{i}": "+1" for i in range(50)}, "/evalbot/budgets", "50 entries"),
])
def test_hostile_budgets_are_refused_naming_file_and_path(value: object, pointer: str, words: str) -> None:
    with pytest.raises(InputError) as caught:
        policy_from_settings({"budgets": value}, source="evals/test_config.json")
    assert caught.value.path == "evals/test_config.json"
    assert caught.value.pointer == pointer
    assert words in str(caught.value)


def test_valid_budgets_are_kept_normalized() -> None:
    policy = policy_from_settings({"budgets": {"tokens": " +20% ", "tool_calls": "+1", "latency_p95": "+0.5"}},
                                  source="c.json")
    assert policy.budgets == {"tokens": "+20%", "tool_calls": "+1", "latency_p95": "+0.5"}
    budgets = parse_budgets(policy.budgets)
    assert budgets["tokens"].allowed(100.0) == pytest.approx(120.0)
    assert budgets["tool_calls"].allowed(2.0) == 3.0
    assert budgets["latency_p95"].stat == "p95" and budgets["latency_p95"].quantity == "latency"
    with pytest.raises(ValueError):
        GatePolicy.model_validate({"budgets": {"tokens": "-1%"}})  # the model itself refuses what the parser does


def test_loosened_and_removed_budgets_are_named_tightened_ones_are_not() -> None:
    base = {"tokens": "+20%", "tool_calls": "+1", "latency_p95": "+30%", "model_calls": "+10%"}
    pr = {"tokens": "+50%", "tool_calls": "+0", "model_calls": "+2"}
    assert loosened_budgets(base, pr) == [
        ("tokens", "budget loosened from +20% to +50%"),
        ("latency_p95", "budget removed (was +30%)"),
        ("model_calls", "budget loosened from +10% to +2"),  # % ↔ absolute: not comparable
    ]
    assert loosened_budgets(base, base) == []
    assert loosened_budgets({}, pr) == []  # added budgets tighten


def _set(tokens: list[float]) -> EvalSetReport:
    def case(i: int, value: float) -> CaseResult:
        details = {"value": value, "token_usage_details": {"total_tokens": value}}
        return CaseResult(eval_id=f"c{i}", status="passed",
                          metrics={"token_usage_v1": MetricResult(status="informational", details=details)})
    return EvalSetReport(eval_set_id="shop", path="shop.json", status="passed",
                         criteria=[CriterionInfo(name="token_usage_v1")],
                         cases=[case(i, v) for i, v in enumerate(tokens)])


def _base(tokens: list[float]) -> BaselineEfficiency:
    return BaselineEfficiency(
        stats={"tokens": EfficiencyStat(mean=sum(tokens) / len(tokens), p95=p95(tokens), cases=len(tokens))},
        cases={f"c{i}": {"tokens": v} for i, v in enumerate(tokens)})


def _row(main: list[float], now: list[float], budget: str, name: str = "tokens") -> EfficiencyDelta:
    rows = efficiency_deltas("shop", _set(now), _base(main), [(f"c{i}", i) for i in range(len(now))],
                             parse_budgets({name: budget}), alpha=0.05, old_baseline=False)
    return next(r for r in rows if r.budget is not None)


@pytest.mark.parametrize(("scale", "status"), [(1.30, "over_budget"), (1.05, "within_budget"), (0.95, "within_budget"),
                                               (1.20, "within_budget")])
def test_a_mean_budget_blocks_only_a_significant_excess(scale: float, status: str) -> None:
    rng = random.Random(7)
    main = [1000.0 * (1 + i % 7) * rng.gauss(1, 0.1) for i in range(300)]
    now = [v / rng.gauss(1, 0.1) * rng.gauss(1, 0.1) * scale for v in main]
    row = _row(main, now, "+20%")
    assert row.status == status
    if status == "over_budget":
        assert row.excess is not None
        assert row.excess.startswith("+3") and row.excess.endswith("over the +20% budget")


def test_a_p95_budget_uses_the_tail_not_the_mean() -> None:
    main = [10.0] * 95 + [100.0] * 5
    slow_tail = [10.0] * 90 + [200.0] * 10  # mean +105%, p95 +100%: 10 cases above 1.3 × main's p95
    assert _row(main, slow_tail, "+30%", "tokens_p95").status == "over_budget"
    same_tail = [12.0] * 95 + [100.0] * 5  # the mean rose, the tail did not
    assert _row(main, same_tail, "+30%", "tokens_p95").status == "within_budget"


def test_budgets_without_data_are_not_measured_and_say_why() -> None:
    rows = efficiency_deltas("shop", _set([1.0]), None, [("c0", 0)], parse_budgets({"tokens": "+1%", "latency": "+1"}),
                             alpha=0.05, old_baseline=True)
    assert {r.quantity: r.status for r in rows if r.budget} == {"tokens": "not_measured", "latency": "not_measured"}
    assert all("older evalbot" in (r.reason or "") for r in rows if r.budget)
    rows = efficiency_deltas("shop", _set([1.0]), _base([1.0]), [("c0", 0)], parse_budgets({"latency": "+1"}),
                             alpha=0.05, old_baseline=False)
    latency = next(r for r in rows if r.quantity == "latency")
    assert latency.status == "not_measured" and "main's run recorded no seconds" in (latency.reason or "")


def test_a_case_pooled_over_several_runs_keeps_its_token_counts() -> None:
    """``--num-runs N`` pools a case's metrics (details.runs); its tokens are the runs' mean, not lost."""
    from evalbot.compare.efficiency import case_values
    from evalbot.runner.aggregate import pool

    def run(tokens: float, seconds: float) -> tuple[MetricResult, MetricResult]:
        return (MetricResult(status="informational", details={"value": tokens, "token_usage_details": {
                    "total_tokens": tokens, "input_tokens": tokens - 10, "output_tokens": 10}}),
                MetricResult(status="informational", details={"value": seconds}))

    (t1, s1), (t2, s2) = run(100.0, 1.0), run(300.0, 3.0)
    pooled = CaseResult(eval_id="c", status="passed", metrics={
        "token_usage_v1": pool([(1, t1), (2, t2)]), "invocation_duration_v1": pool([(1, s1), (2, s2)])})
    values = case_values(pooled, frozenset({"token_usage_v1", "invocation_duration_v1"}))
    assert values == {"tokens": 200.0, "tokens_in": 190.0, "tokens_out": 10.0, "latency": 2.0}


@pytest.mark.parametrize(("efficiency", "pointer"), [
    ({"shop": {"stats": {"tokens": {"mean": float("nan"), "p95": 1, "cases": 1}}}}, "/efficiency/shop/stats/tokens/mean"),
    ({"shop": {"stats": {"tokens": {"mean": -1, "p95": 1, "cases": 1}}}}, "/efficiency/shop/stats/tokens/mean"),
    ({"shop": {"cases": {"c0": {"tokens": 1e300}}}}, "/efficiency/shop/cases/c0/tokens"),
    ({"shop": {"cases": {"c0": {"tokens": "12"}}}}, "/efficiency/shop/cases/c0/tokens"),
    ({"shop": {"stats": {}, "extra": 1}}, "/efficiency/shop/extra"),
    ({"shop": []}, "/efficiency/shop"),
])
def test_a_forged_baseline_efficiency_is_refused_with_its_pointer(efficiency: object, pointer: str) -> None:
    """The baseline file is data: NaN, negative, absurd or mistyped efficiency values never reach a comparison."""
    text = json.dumps({"schema_version": 1, "evalbot_version": "0", "efficiency": efficiency})
    with pytest.raises(InputError) as caught:
        parse_baseline(text, ".evalbot/baseline.json")
    assert caught.value.path == ".evalbot/baseline.json"
    assert caught.value.pointer == pointer


# --- a PR's baseline update accepts its loosened budgets in plain sight -----------------------------------------------

def _report(tokens: list[float]) -> Report:
    es = _set(tokens)
    cases = [c.model_copy(update={"fingerprint": f"fp-{c.eval_id}"}) for c in es.cases]
    return Report(evalbot_version="0", eval_sets=[es.model_copy(update={"cases": cases})],
                  totals=Totals(cases=len(tokens), passed=len(tokens)))


MAIN_RUN = _report([1000.0 + i for i in range(40)])
PR_RUN = _report([1400.0 + i for i in range(40)])  # +40%: over a +20% budget, within +50%
BASE_POLICY = GatePolicy(budgets={"tokens": "+20%"})


def _compare_pr(pr_budgets: dict[str, str] | None, proposed: Baseline | None, *,
                pr_config: dict[str, str] | None = None) -> Comparison:
    main = build_baseline(MAIN_RUN, commit="a" * 40, created_at=None, budgets=BASE_POLICY.budgets)
    config = pr_config if pr_config is not None else (pr_budgets or {})
    return compare(current=PR_RUN, baseline=main, policy=BASE_POLICY,
                   proposed=ProposedBaseline("pr.json", proposed) if proposed is not None else None,
                   budget_changes=loosened_budgets(BASE_POLICY.budgets, config), pr_budgets=pr_budgets)


def _update(budgets: dict[str, str] | None) -> Baseline:
    main = build_baseline(MAIN_RUN, commit="a" * 40, created_at=None, budgets=BASE_POLICY.budgets)
    return build_baseline(PR_RUN, commit="c" * 40, created_at=None, previous=main, budgets=budgets)


def _token_row(c: Comparison) -> EfficiencyDelta | None:
    return next((r for r in c.efficiency if r.quantity == "tokens" and r.stat == "mean" and r.budget), None)


def test_loosening_a_budget_without_an_update_blocks() -> None:
    c = _compare_pr({"tokens": "+50%"}, None)
    assert c.gate.exit_code == 1
    assert [(y.what, y.accepted) for y in c.yardstick] == [("budget loosened from +20% to +50%", False)]
    row = _token_row(c)
    assert row is not None and row.budget == "+20%" and row.status == "over_budget"  # main's budget applies
    assert c.notes == []


def test_an_update_recording_the_prs_budgets_accepts_the_loosening_and_applies_them() -> None:
    c = _compare_pr({"tokens": "+50%"}, _update({"tokens": "+50%"}))
    assert c.gate.exit_code == 0, c.gate
    assert [(y.subject, y.what, y.accepted) for y in c.yardstick] == [
        ("budgets / tokens", "budget loosened from +20% to +50%", True)]
    assert c.counts["yardstick"] == 0 and c.counts["accepted_changes"] == 1
    assert c.baseline_update is not None and c.baseline_update.matches
    row = _token_row(c)
    assert row is not None and row.budget == "+50%" and row.status == "within_budget"
    assert c.notes == ["The budgets this PR's baseline update accepts apply to this run: tokens +50% (was +20%); the "
                       "base commit's other budgets apply unchanged."]


def test_an_accepted_removal_leaves_the_budget_out() -> None:
    c = _compare_pr({}, _update({}))
    assert c.gate.exit_code == 0, c.gate
    assert [(y.what, y.accepted) for y in c.yardstick] == [("budget removed (was +20%)", True)]
    assert _token_row(c) is None


def test_an_update_with_budgets_other_than_the_prs_config_accepts_nothing_and_blocks() -> None:
    forged = _compare_pr({"tokens": "+50%"}, _update({"tokens": "+1000%"}))
    assert forged.gate.exit_code == 1
    assert [y.accepted for y in forged.yardstick] == [False]
    assert forged.baseline_update is not None and not forged.baseline_update.matches
    assert forged.baseline_update.differences == [
        '/budgets: {"tokens": "+1000%"} in the file, {"tokens": "+50%"} in this PR\'s config (the budgets the update '
        "must be written under: refresh it with `evalbot baseline`)"]
    row = _token_row(forged)
    assert row is not None and row.budget == "+20%"  # the forged +1000% never applies


def test_a_stale_update_recording_mains_budgets_accepts_no_loosening() -> None:
    stale = _compare_pr({"tokens": "+50%"}, _update({"tokens": "+20%"}))
    assert stale.gate.exit_code == 1
    assert [y.accepted for y in stale.yardstick] == [False]
    assert stale.baseline_update is not None and stale.baseline_update.matches  # main's budgets: not a conflict


def test_an_update_without_budgets_or_without_the_prs_config_accepts_nothing() -> None:
    for pr_budgets, recorded in (({"tokens": "+50%"}, None), (None, {"tokens": "+50%"})):
        c = _compare_pr(pr_budgets, _update(recorded), pr_config={"tokens": "+50%"})
        assert c.gate.exit_code == 1, (pr_budgets, recorded)
        assert [y.accepted for y in c.yardstick] == [False]


def test_the_baseline_records_budgets_and_older_ones_load_without() -> None:
    written = dump_baseline(build_baseline(MAIN_RUN, commit=None, created_at=None, budgets={"tokens": "+20%"}))
    assert json.loads(written)["budgets"] == {"tokens": "+20%"}
    assert parse_baseline(written, "b.json").budgets == {"tokens": "+20%"}
    assert "budgets" not in json.loads(dump_baseline(build_baseline(MAIN_RUN, commit=None, created_at=None)))
    old = json.dumps({"schema_version": 1, "evalbot_version": "0"})
    assert parse_baseline(old, "b.json").budgets is None
    assert parse_baseline(json.dumps({"schema_version": 1, "evalbot_version": "0", "budgets": {}}),
                          "b.json").budgets == {}


@pytest.mark.parametrize(("budgets", "pointer", "words"), [
    ({"tokenz": "+20%"}, "/budgets/tokenz", "did you mean 'tokens'?"),
    ({"tokens": "-20%"}, "/budgets/tokens", "a decrease cannot be required"),
    ({"tokens": "+99999999%"}, "/budgets/tokens", "beyond the largest accepted"),
    ({"tokens": {"nested": ["+20%"]}}, "/budgets/tokens", "must be a string"),
    ({"tokens": "+20%<script>"}, "/budgets/tokens", '"+N%" or "+N"'),
    ({"tokens": "+20%\u202e"}, "/budgets/tokens", '"+N%" or "+N"'),
    ({f"k{i}": "+1" for i in range(5000)}, "/budgets", "5000 entries"),
    ("+20%", "/budgets", "must be an object"),
    ([{"tokens": "+20%"}], "/budgets", "must be an object"),
])
def test_hostile_budgets_in_a_baseline_are_refused_naming_file_and_pointer(
    budgets: object, pointer: str, words: str
) -> None:
    text = json.dumps({"schema_version": 1, "evalbot_version": "0", "budgets": budgets})
    with pytest.raises(InputError) as caught:
        parse_baseline(text, ".evalbot/baseline.json")
    assert caught.value.path == ".evalbot/baseline.json"
    assert caught.value.pointer == pointer
    assert words in str(caught.value)
    with pytest.raises(ValueError):
        Baseline.model_validate({"budgets": budgets})  # the model itself refuses what the parser does


def test_paired_cases_are_paired_in_the_order_given() -> None:
    """The paired cases' values are taken in the order the comparison lists them (a repeated key once, at its first
    place), in one pass when that is the cases' order and otherwise too: the means sum them in that order."""
    rng = random.Random(3)
    main = [100.0 + rng.random() * 50 for _ in range(40)]
    now = [v * rng.uniform(1.0, 1.2) for v in main]
    keys = [(f"c{i}", i) for i in range(40)]
    shuffled = keys[:]
    rng.shuffle(shuffled)

    def row(paired: list[tuple[str, int]]) -> EfficiencyDelta:
        rows = efficiency_deltas("shop", _set(now), _base(main), paired, parse_budgets({"tokens": "+5%"}),
                                 alpha=0.05, old_baseline=False)
        return next(r for r in rows if r.budget is not None)

    for paired in (keys, [*shuffled, shuffled[3]]):
        order = [i for _, i in paired[:40]]
        got = row(paired)
        assert got.paired == 40 and got.baseline == sum(main) / 40
        assert got.change == sum(round(now[i], 4) for i in order) / 40 - sum(main[i] for i in order) / 40
    assert row(keys[:10]).paired == 10 and row([]).status == "not_measured"


def test_a_budget_holds_on_the_cases_main_measured_never_on_the_rest() -> None:
    """Issue 37 row 9: this run without token counts on 11 of the 12 cases main measured (tokens tripled on the
    one left) is not measured, naming how many and which; a case main did not measure either does not count."""
    main = [1000.0] * 12
    stripped = _set([3000.0] * 12)
    for c in stripped.cases[:11]:
        c.metrics["token_usage_v1"] = MetricResult(status="informational", details={"value": None})
    rows = efficiency_deltas("shop", stripped, _base(main), [(f"c{i}", i) for i in range(12)],
                             parse_budgets({"tokens": "+20%", "tokens_p95": "+20%"}), alpha=0.05, old_baseline=False)
    for row in (r for r in rows if r.budget is not None):
        assert row.status == "not_measured", row
        assert row.reason is not None and row.reason.startswith(
            "this run recorded no tokens on 11 of the 12 case(s) main measured (c0, c1, c2, c3, c4 and 6 more)")
    base = _base(main)
    partial = BaselineEfficiency(stats=base.stats, cases={k: v for k, v in base.cases.items() if k != "c0"})
    rows = efficiency_deltas("shop", _set([None] + [1010.0] * 11), partial,  # type: ignore[list-item]
                             [(f"c{i}", i) for i in range(12)], parse_budgets({"tokens": "+20%"}), alpha=0.05,
                             old_baseline=False)
    assert next(r for r in rows if r.budget is not None).status == "within_budget"
