"""``pass_rule: "k/N"``: parsing (hostile values refused with the file and JSON path), deciding a case from its runs,
and a looser rule against the baseline's as a yardstick change."""

from __future__ import annotations

from typing import Any

import pytest

from evalbot.compare.baseline import build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy, policy_from_settings
from evalbot.compare.passrule import PassRule, apply_pass_rules, loosens, normalize_setting, parse_rule
from evalbot.errors import InputError
from evalbot.results import CaseResult, EvalSetReport, MetricResult, Report, summarize_cases, totals


def _metric(statuses: str) -> MetricResult:
    runs = [{"run": i + 1, "status": "passed" if s == "P" else "failed", "score": 1.0 if s == "P" else 0.0}
            for i, s in enumerate(statuses)]
    score = statuses.count("P") / len(statuses)
    return MetricResult(score=score, status="passed" if score >= 1.0 else "failed", threshold=1.0,
                        details={"runs": runs})


def _case(eval_id: str, runs: str, metric_runs: str | None = None) -> CaseResult:
    metric = _metric(metric_runs or runs)
    return CaseResult(eval_id=eval_id, status=metric.status, metrics={"m": metric}, fingerprint=f"fp-{eval_id}",
                      runs=runs)


def _report(*cases: CaseResult, set_id: str = "s") -> Report:
    es = EvalSetReport(eval_set_id=set_id, path=f"{set_id}.evalset.json", status="passed", cases=list(cases),
                       metrics=summarize_cases(cases))
    return Report(eval_sets=[es], totals=totals([es]))


@pytest.mark.parametrize(("value", "message"), [
    ("0/3", "k in '0/3' must be at least 1"),
    ("4/3", "k in '4/3' cannot exceed N"),
    ("-1/2", "k in '-1/2' must be at least 1"),
    ("2/-2", "N in '2/-2' must be from 1 to 1,000"),
    ("1/1000001", "N in '1/1000001' must be from 1 to 1,000"),
    ("9" * 400 + "/3", "expected \"k/N\" with whole numbers"),
    ("a/b", "expected \"k/N\" with whole numbers"),
    ("2 of 3", "expected \"k/N\" with whole numbers"),
    ("1.5/3", "expected \"k/N\" with whole numbers"),
    (2, "expected \"k/N\" or an object"),
    (True, "expected \"k/N\" or an object"),
])
def test_hostile_rules_are_input_errors_naming_the_file_and_pointer(value: Any, message: str) -> None:
    """Each bad value is exit 2 naming the config file and /evalbot/pass_rule, saying what is wrong."""
    with pytest.raises(InputError) as raised:
        policy_from_settings({"passRule": value}, source="evals/test_config.json")
    assert raised.value.path == "evals/test_config.json" and raised.value.pointer == "/evalbot/passRule"
    assert message in str(raised.value) and len(str(raised.value)) < 400


@pytest.mark.parametrize(("value", "pointer"), [
    ({"checkout": "3/0"}, "/evalbot/pass_rule/checkout"),
    ({"*": "2/3", "a~b/c": "x"}, "/evalbot/pass_rule/a~0b~1c"),
    (["2/3"], "/evalbot/pass_rule"),
    ({f"s{i}": "1/1" for i in range(1001)}, "/evalbot/pass_rule"),
])
def test_a_bad_entry_of_a_per_set_rule_is_named_by_its_pointer(value: Any, pointer: str) -> None:
    """In the per-eval-set form the pointer goes down to the bad entry; a list or a 1,001-entry object is refused."""
    with pytest.raises(InputError) as raised:
        policy_from_settings({"pass_rule": value}, source="cfg.json")
    assert raised.value.pointer == pointer


def test_rules_normalise_and_default_to_pooling() -> None:
    """A string applies to every eval set; the default is ADK's pooling (None)."""
    assert GatePolicy().pass_rule is None
    assert policy_from_settings({"pass_rule": " 2/3 "}, source="c").pass_rule == {"*": "2/3"}
    assert normalize_setting({"checkout": "3/3", "*": "1/2"}) == {"checkout": "3/3", "*": "1/2"}
    assert parse_rule("2/3") == PassRule(2, 3)


def test_a_case_passes_when_k_of_its_n_runs_passed() -> None:
    """2/3: ✓✗✓ passes (although the pooled score 0.67 is under the threshold 1.0), ✗✗✓ fails; totals follow."""
    report = _report(_case("two", "PFP"), _case("one", "FFP"), _case("all", "PPP"))
    assert [c.status for c in report.eval_sets[0].cases] == ["failed", "failed", "passed"]  # pooled
    apply_pass_rules(report, {"*": "2/3"})
    es = report.eval_sets[0]
    assert [c.status for c in es.cases] == ["passed", "failed", "passed"]
    assert [c.metrics["m"].status for c in es.cases] == ["passed", "failed", "passed"]
    assert (report.totals.passed, report.totals.failed, es.pass_rule, es.metrics["m"].passed) == (2, 1, "2/3", 2)
    apply_pass_rules(report, {"*": "2/3"})  # idempotent: it reads the runs, never the status it wrote
    assert [c.status for c in es.cases] == ["passed", "failed", "passed"] and not es.errors


def test_the_case_rule_is_about_runs_not_criteria() -> None:
    """Each criterion passing 2 of 3 runs, but in different runs, is one passing run: the case fails 2/3."""
    case = CaseResult(eval_id="c", status="failed", runs="FFP", metrics={
        "a": _metric("PFP"), "b": _metric("FPP")})
    report = _report(case)
    apply_pass_rules(report, {"*": "2/3"})
    assert case.status == "failed" and {m.status for m in case.metrics.values()} == {"passed"}


def test_errors_in_runs_decide_only_when_the_rule_still_could() -> None:
    """✓✓! passes 2/3; ✓!! cannot be decided (error); ✗✗! fails whatever the error hid."""
    report = _report(_case("a", "PPE"), _case("b", "PEE"), _case("c", "FFE"))
    apply_pass_rules(report, {"*": "2/3"})
    assert [c.status for c in report.eval_sets[0].cases] == ["passed", "error", "failed"]


def test_another_number_of_runs_is_an_input_error_on_the_eval_set() -> None:
    """A rule of 3 runs over cases run once or twice is exit 2 naming them and the fix, never a case decided on
    fewer runs; only the eval sets the rule covers are touched."""
    report = _report(_case("twice", "PP"), _case("ok", "PPP"))
    once = _report(CaseResult(eval_id="once", status="failed", metrics={"m": _metric("F")}), set_id="other")
    report.eval_sets += once.eval_sets
    apply_pass_rules(report, {"s": "2/3"})
    es, other = report.eval_sets
    assert len(es.errors) == 1 and es.status == "error" and other.pass_rule is None and not other.errors
    message = es.errors[0].message
    assert "pass_rule 2/3 decides a case from exactly 3 run(s)" in message and "twice (2 run(s))" in message
    assert "--num-runs 3" in message
    apply_pass_rules(report, {"s": "2/3"})
    assert len(es.errors) == 1  # replaced, never added twice
    gate = compare(current=report, baseline=None, policy=GatePolicy(pass_rule={"s": "2/3"})).gate
    assert gate.verdict == "invalid" and gate.exit_code == 2


@pytest.mark.parametrize(("old", "new", "looser"), [
    ("2/3", "3/3", False), ("3/3", "2/3", True), ("2/3", "1/1", True), ("1/1", "2/2", False),
    ("2/3", "2/4", True), ("2/3", "3/4", False), ("3/4", "2/3", True), ("1/3", "3/5", False),
    (None, "3/3", False), (None, "2/3", True), ("2/3", None, True), ("1/1", None, False), ("2/3", "2/3", False),
])
def test_which_rule_changes_loosen(old: str | None, new: str | None, looser: bool) -> None:
    """A change loosens unless the new rule passes a case with at most the old one's probability at every pass
    rate (2/3 → 1/1 is stricter at high pass rates but looser at low ones: it loosens; 2/3 → 3/4 never loosens)."""
    assert loosens(old, new) is looser


def test_a_looser_rule_than_the_baseline_s_is_a_blocking_yardstick_change() -> None:
    """Main decided 3/3; this run's 1/3 lets ✓✗✗ pass: shown as a yardstick change and blocking; 3/3 → 3/3
    with the same cases is no change, and a stricter rule is shown without blocking."""
    main = _report(_case("c", "PPP"))
    apply_pass_rules(main, {"*": "3/3"})
    baseline = build_baseline(main, commit="abc", created_at=None)
    assert baseline.eval_sets["s"].pass_rule == "3/3"
    pr = _report(_case("c", "PFF"))
    comparison = compare(current=pr, baseline=baseline, policy=GatePolicy(pass_rule={"*": "1/3"}))
    [change] = comparison.yardstick
    assert (change.kind, change.what, change.loosens) == ("pass_rule", "pass rule 3/3 → 1/3", True)
    assert comparison.gate.verdict == "blocked" and "s: pass rule 3/3 → 1/3" in comparison.gate.reasons[0]
    same = compare(current=_report(_case("c", "PPP")), baseline=baseline, policy=GatePolicy(pass_rule={"*": "3/3"}))
    assert same.yardstick == [] and same.gate.verdict == "passed"
    loose_base = build_baseline(apply_pass_rules(_report(_case("c", "PPP")), {"*": "1/3"}), commit=None,
                                created_at=None)
    stricter = compare(current=_report(_case("c", "PPP")), baseline=loose_base,
                       policy=GatePolicy(pass_rule={"*": "3/3"}))
    assert [y.loosens for y in stricter.yardstick] == [False] and stricter.gate.verdict == "passed"


def test_a_case_failing_the_rule_on_every_criterion_s_majority_still_regresses() -> None:
    """Runs ✓✗✗ against a baseline that passed: regressed, and the case shows its runs and the rule."""
    baseline = build_baseline(apply_pass_rules(_report(_case("c", "PPP")), {"*": "2/3"}), commit=None,
                              created_at=None)
    case = CaseResult(eval_id="c", status="failed", runs="PFF", fingerprint="fp-c",
                      metrics={"a": _metric("PFP"), "b": _metric("PPF")})
    comparison = compare(current=_report(case), baseline=baseline, policy=GatePolicy(pass_rule={"*": "2/3"}))
    [seen] = comparison.eval_sets[0].cases
    assert seen.category == "regressed" and comparison.gate.verdict == "blocked"
    assert seen.runs is not None and seen.runs.describe() == "Agent runs: ✓✗✗ (pass rule 2/3: passed 1 of 3)"
