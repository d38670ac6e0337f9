"""compare builds its per-case deltas without validation and reads the score pairs from them: the same values,
types and rows as validated deltas and a per-criterion baseline lookup give."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evalbot.compare.baseline import BaselineEvalSet, build_baseline
from evalbot.compare.delta import _pairs, compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import CaseComparison, Comparison, DeltaRow, MetricDelta, PackedDeltas, delta_rows
from tests.fakes.comparisons import small
from tests.fakes.reports import JUDGE, RESP, TRAJ, case, eval_set, metric, report


def judged() -> tuple[Comparison, BaselineEvalSet]:
    """Judged flips on split and unanimous votes, an integer score, a removed and a new criterion and case."""
    main = report(eval_set("s", [
        case("a", {JUDGE: metric(1.0, 0.8, votes=[(3, 2)]), TRAJ: metric(1.0)}),
        case("b", {JUDGE: metric(1.0, 0.8, votes=[(5, 0)]), RESP: metric(0.9, 0.6)}),
        case("c", {JUDGE: metric(0.0, 0.8, votes=[(0, 5)]), TRAJ: metric(0.0)}),
        case("gone", {TRAJ: metric(1.0)}),
    ]))
    pr = report(eval_set("s", [
        case("a", {JUDGE: metric(0.0, 0.8, votes=[(2, 3)]), TRAJ: metric(1)}),
        case("b", {JUDGE: metric(0.0, 0.8, votes=[(0, 5)]), RESP: metric(0.2, 0.6), TRAJ: metric(0.0)}),
        case("c", {JUDGE: metric(1.0, 0.8, votes=[(5, 0)])}),
        case("new", {TRAJ: metric(0.0)}),
    ]))
    baseline = build_baseline(main, commit="1" * 40, created_at="2026-01-01T00:00:00+00:00")
    return compare(current=pr, baseline=baseline, policy=GatePolicy(), baseline_source="b.json"), \
        baseline.eval_sets["s"]


def old_pairs(name: str, cases: Sequence[CaseComparison], base_set: BaselineEvalSet) -> list[tuple[float, float]]:
    """The definition the one-pass reading replaced: each case's current metric and its baseline entry."""
    out = []
    for c in cases:
        if c.current is None or c.category in ("new", "removed", "changed_definition", "error"):
            continue
        cur = c.current.metrics.get(name)
        base_case = base_set.cases.get(c.eval_id)
        base = base_case.metrics.get(name) if base_case else None
        if cur is not None and base is not None and cur.score is not None and base.score is not None:
            out.append((base.score, cur.score))
    return out


@pytest.mark.parametrize("make", [judged, lambda: (small(), None)], ids=["judged", "small"])
def test_deltas_are_what_validation_gives(make: object) -> None:
    comparison, _ = make()  # type: ignore[operator]
    deltas = [d for es in comparison.eval_sets for c in es.cases for d in c.metrics]
    assert deltas and {d.change for d in deltas} >= {"regressed", "fixed"}
    for d in deltas:
        again = MetricDelta.model_validate(d.model_dump())
        assert again == d and again.model_dump_json() == d.model_dump_json()
        assert all(type(v) is float for v in (d.baseline_score, d.current_score, d.p_value) if v is not None)
        assert d.model_fields_set == set(MetricDelta.model_fields)
        d.change = "fixed"  # assignment keeps working (pydantic's bookkeeping on the shared fields-set)
        assert d.change == "fixed" and d.model_fields_set == set(MetricDelta.model_fields)


def test_judged_split_flip_is_inconclusive_with_its_p_value() -> None:
    comparison, _ = judged()
    by_case = {c.eval_id: {d.criterion: d for d in c.metrics} for c in comparison.eval_sets[0].cases}
    assert by_case["a"][JUDGE].change == "inconclusive" and by_case["a"][JUDGE].p_value is not None
    assert by_case["b"][JUDGE].change == "regressed" and by_case["b"][TRAJ].change == "new"
    assert by_case["c"][TRAJ].change == "removed" and by_case["a"][TRAJ].current_score == 1.0


def test_score_pairs_are_the_per_criterion_lookups() -> None:
    comparison, base_set = judged()
    cases = comparison.eval_sets[0].cases
    pairs = _pairs(cases)
    for name in (JUDGE, TRAJ, RESP):
        assert pairs.get(name, []) == old_pairs(name, cases, base_set), name
    assert pairs[JUDGE] and pairs[TRAJ] == [(1.0, 1.0)]


@pytest.mark.parametrize("make", [judged, lambda: (small(), None)], ids=["judged", "small"])
def test_case_comparisons_are_what_validation_gives(make: object) -> None:
    """A case measured on both sides is built without validation too: validating the same values gives the same
    model and the same JSON."""
    comparison, _ = make()  # type: ignore[operator]
    both = [c for es in comparison.eval_sets for c in es.cases if c.metrics]
    assert both
    for c in both:
        validated = CaseComparison(**c.__dict__)
        assert validated == c and validated.model_dump_json() == c.model_dump_json()
        assert c.model_fields_set == set(CaseComparison.model_fields)


def test_deltas_without_scores_are_one_row_per_eval_set() -> None:
    """An informational criterion's delta (no scores, no votes) is one row for every case of an eval set that has
    the same change and statuses; scored deltas and other eval sets' stay their own, and every delta dumps as its
    own values would."""
    info = "tool_call_count_v1"

    def run(cases: list[str]) -> object:
        return eval_set("s", [case(c, {TRAJ: metric(1.0 if c != "b" else 0.0),
                                       info: metric(None, None, status="informational")}) for c in cases])

    main, pr = report(run(["a", "b", "c"]), run(["d"])), report(run(["a", "b", "c"]), run(["d"]))
    comparison = compare(current=pr, baseline=build_baseline(main, commit=None, created_at=None),
                         policy=GatePolicy())
    first, second = comparison.eval_sets
    def rows(cases: Sequence[CaseComparison], name: str) -> list[DeltaRow]:
        return [next(d for d in delta_rows(c.metrics) if d.criterion == name) for c in cases]

    infos = rows(first.cases, info)
    assert all(isinstance(c.metrics, PackedDeltas) for c in first.cases)
    assert infos[0] is infos[1] is infos[2] and infos[0].change == "new"
    model = next(d for d in first.cases[0].metrics if d.criterion == info)
    assert model.model_dump() == {**MetricDelta(criterion=info, change="new").model_dump(),
                                  "current_status": "informational"}
    other = rows(second.cases, info)[0]
    assert other is not infos[0] and other == infos[0]
    traj = rows(first.cases, TRAJ)
    assert traj[0] is not traj[2] and traj[0] == traj[2] and traj[1].current_score == 0.0


def test_packed_deltas_read_validate_and_dump_as_the_list_of_models() -> None:
    """A case's deltas kept as rows read, compare, validate and serialise (dict, JSON, with exclusions) exactly as
    the list of the models they stand for; rows carry the models' names and values; a copy is the object itself."""
    comparison, _ = judged()
    cases = [c for es in comparison.eval_sets for c in es.cases if c.metrics]
    assert cases and all(isinstance(c.metrics, PackedDeltas) for c in cases)
    for c in cases:
        models = list(c.metrics)
        assert models and all(type(d) is MetricDelta for d in models)
        assert [tuple(d.__dict__.values()) for d in models] == [tuple(r) for r in delta_rows(c.metrics)]
        as_list = CaseComparison(**{**c.__dict__, "metrics": models})
        assert as_list == c and c == as_list and c.metrics == models
        for kwargs in ({}, {"mode": "json"}, {"exclude_none": True}, {"exclude": {"metrics": {0: {"p_value"}}}}):
            assert c.model_dump(**kwargs) == as_list.model_dump(**kwargs), kwargs  # type: ignore[arg-type]
        assert c.model_dump_json() == as_list.model_dump_json()
        again = CaseComparison.model_validate_json(c.model_dump_json())
        assert again == c and isinstance(again.metrics, list)
        assert CaseComparison(**c.__dict__).metrics is c.metrics  # validation passes the packed deltas through
        assert c.model_copy(deep=True).metrics is c.metrics and len(c.metrics) == len(models)
        assert c.metrics[-1] == models[-1] and c.metrics[:1] == models[:1]
    with pytest.raises(TypeError):
        hash(cases[0].metrics)
