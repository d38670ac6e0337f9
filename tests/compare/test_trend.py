"""The baseline's trend of criterion means: kept for the last 10 refreshes on main, carried forward like the case
histories, bounded and validated on reading (a hostile file is refused with its JSON pointer), checked in a PR's
baseline update, and handed to the comparison (the HTML report draws it)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evalbot.compare.accept import ProposedBaseline, accept
from evalbot.compare.baseline import (
    HISTORY_LIMIT,
    Baseline,
    build_baseline,
    dump_baseline,
    parse_baseline,
    same_scores,
)
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.errors import InputError
from evalbot.results import Report
from tests.fakes.reports import RESP, TRAJ, case, criterion, eval_set, main_refreshes, metric, report

POLICY = GatePolicy()


def run(resp: float, *, threshold: float = 0.5, options: dict[str, object] | None = None,
        cases: int = 2) -> Report:
    """One run of eval set ``s``: every case scores ``resp`` on ROUGE and passes the trajectory."""
    crits = [criterion(TRAJ), criterion(RESP, threshold, fingerprint=f"cfg-{RESP}-{threshold}", options=options)]
    return report(eval_set("s", [case(f"c{i}", {TRAJ: metric(1.0), RESP: metric(resp, threshold)})
                                 for i in range(cases)], criteria=crits))


def means(b: Baseline, name: str = RESP) -> list[float]:
    return [p.mean for p in b.eval_sets["s"].criteria[name].trend or []]


def data(b: Baseline) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(dump_baseline(b))
    return doc


def test_a_fresh_baseline_has_one_point_with_its_commit_and_date() -> None:
    b = build_baseline(run(0.75), commit="abc123", created_at="2026-11-01T09:00:00+00:00")
    point = b.eval_sets["s"].criteria[RESP].trend
    assert point is not None and [(p.mean, p.commit, p.created_at) for p in point] == [
        (0.75, "abc123", "2026-11-01T09:00:00+00:00")]
    assert data(b)["eval_sets"]["s"]["criteria"][RESP]["trend"] == [
        {"commit": "abc123", "created_at": "2026-11-01T09:00:00+00:00", "mean": 0.75}]


def test_refreshes_keep_the_last_ten_means_oldest_first() -> None:
    runs = [run(i / 20) for i in range(13)]
    b = main_refreshes(runs)
    assert means(b) == [i / 20 for i in range(3, 13)] and len(means(b)) == HISTORY_LIMIT
    trend = b.eval_sets["s"].criteria[RESP].trend or []
    assert trend[-1].commit == f"{12:040x}" and trend[0].created_at == "2026-01-04T00:00:00+00:00"


def test_a_rerun_of_the_same_commit_replaces_the_last_point() -> None:
    first = build_baseline(run(0.5), commit="a" * 40, created_at="t1")
    second = build_baseline(run(0.6), commit="b" * 40, created_at="t2", previous=first)
    again = build_baseline(run(0.7), commit="b" * 40, created_at="t3", previous=second)
    assert means(again) == [0.5, 0.7]


def test_a_changed_measure_restarts_the_trend_but_a_moved_threshold_does_not() -> None:
    b = main_refreshes([run(0.5), run(0.6)])
    moved = build_baseline(run(0.7, threshold=0.9), commit="m", created_at=None, previous=b)
    assert means(moved) == [0.5, 0.6, 0.7]  # the threshold changed, the mean measures the same thing
    changed = build_baseline(run(0.7, options={"rouge_type": "rougeL"}), commit="m", created_at=None, previous=b)
    assert means(changed) == [0.7]
    assert means(changed, TRAJ) == [1.0, 1.0, 1.0]  # the other criterion goes on


def test_a_run_without_a_mean_leaves_the_trend_as_it_was() -> None:
    b = main_refreshes([run(0.5), run(0.6)])
    empty = report(eval_set("s", [], criteria=[criterion(TRAJ), criterion(RESP, 0.5, fingerprint=f"cfg-{RESP}-0.5")]))
    after = build_baseline(empty, commit="n", created_at=None, previous=b)
    assert after.eval_sets["s"].criteria[RESP].mean is None and means(after) == [0.5, 0.6]
    assert parse_baseline(dump_baseline(after), "b.json") == after


def test_an_older_baseline_without_trends_loads_and_seeds_the_trend_with_its_mean() -> None:
    old = data(build_baseline(run(0.4), commit="old", created_at="2026-10-01"))
    for c in old["eval_sets"]["s"]["criteria"].values():
        del c["trend"]
    legacy = parse_baseline(json.dumps(old), "b.json")
    assert legacy.eval_sets["s"].criteria[RESP].trend is None
    fresh = build_baseline(run(0.8), commit="new", created_at="2026-11-01", previous=legacy)
    trend = fresh.eval_sets["s"].criteria[RESP].trend or []
    assert [(p.mean, p.commit, p.created_at) for p in trend] == [(0.4, "old", "2026-10-01"), (0.8, "new", "2026-11-01")]


def test_long_commit_and_date_are_clipped_when_written() -> None:
    b = build_baseline(run(0.5), commit="x" * 500, created_at="y" * 500)
    point = (b.eval_sets["s"].criteria[RESP].trend or [])[0]
    assert point.commit == "x" * 64 and point.created_at == "y" * 64
    assert parse_baseline(dump_baseline(b), "b.json") == b


def test_the_trend_does_not_make_results_differ() -> None:
    """A refresh whose results are the same (a re-run) is not committed again: the trend alone is no change."""
    a = main_refreshes([run(0.5)])
    b = main_refreshes([run(0.5), run(0.5)])
    assert means(a) != means(b) and same_scores(a.model_copy(update={"eval_sets": {
        "s": a.eval_sets["s"].model_copy(update={"cases": b.eval_sets["s"].cases})}}), b)


def hostile(trend: object) -> str:
    doc = data(build_baseline(run(0.5), commit="c", created_at=None))
    doc["eval_sets"]["s"]["criteria"][RESP]["trend"] = trend
    return json.dumps(doc)


POINTER = f"/eval_sets/s/criteria/{RESP}/trend"


@pytest.mark.parametrize(("trend", "where", "says"), [
    ([{"mean": 0.1}] * 11 + [{"mean": 0.5}], POINTER, "at most 10 refreshes on main, not 12"),
    ([{"mean": "0.5"}], f"{POINTER}/0/mean", "valid number"),
    ([{"mean": 1e300}, {"mean": 0.5}], f"{POINTER}/0/mean", "less than or equal to 1000000000000"),
    ([{"mean": 0.5, "commit": 7}], f"{POINTER}/0/commit", "valid string"),
    ([{"mean": 0.5, "commit": "<b>" * 30}], f"{POINTER}/0/commit", "at most 64 characters"),
    ([{"mean": 0.5, "script": "<script>"}], f"{POINTER}/0/script", "unknown field"),
    ([{"mean": 0.9}], f"/eval_sets/s/criteria/{RESP}", "trend must end with this run's mean (0.5)"),
    ({"mean": 0.5}, POINTER, "valid list"),
    ("0.5", POINTER, "valid list"),
])
def test_a_hostile_trend_is_refused_naming_the_pointer(trend: object, where: str, says: str) -> None:
    with pytest.raises(InputError) as err:
        parse_baseline(hostile(trend), "base:.evalbot/baseline.json")
    assert err.value.pointer.startswith(where) and says in str(err.value), str(err.value)
    assert "base:.evalbot/baseline.json" in str(err.value)


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_means_are_refused(token: str) -> None:
    text = hostile([{"mean": 0.25}, {"mean": 0.5}]).replace('"mean": 0.25', f'"mean": {token}')
    with pytest.raises(InputError) as err:
        parse_baseline(text, "b.json")
    assert err.value.pointer == f"{POINTER}/0/mean" and "finite number" in str(err.value)


def test_a_million_points_are_refused_before_any_is_validated() -> None:
    """The length is checked first: a million invalid points give one error about the length, not a million (the
    list's text, before it is decoded; issue 37 row 12)."""
    with pytest.raises(InputError, match=r"a list of [0-9,]+ bytes: more than a run writes there") as err:
        parse_baseline(hostile([{"mean": "not a number"}] * 1_000_000), "b.json")
    assert err.value.pointer == POINTER  # not /0/mean: the points were never validated


# The PR's baseline update: its trend must be main's continued (or started afresh); the drawn trend is main's.

def refreshed(r: Report, main: Baseline, commit: str = "c" * 40) -> Baseline:
    return build_baseline(r, commit=commit, created_at="2026-11-02", previous=main)


def forged(b: Baseline, trend: list[dict[str, object]]) -> Baseline:
    doc = data(b)
    doc["eval_sets"]["s"]["criteria"][RESP]["trend"] = trend
    return parse_baseline(json.dumps(doc), "pr.json")


def test_an_honest_refresh_passes_the_trend_check() -> None:
    main = main_refreshes([run(0.5), run(0.6)])
    result = accept(main, refreshed(run(0.7), main), run(0.7), POLICY, "pr.json")
    assert result.update.matches, result.update.differences


def test_a_forged_trend_blocks_with_its_pointer() -> None:
    main = main_refreshes([run(0.5), run(0.6)])
    mine = forged(refreshed(run(0.7), main), [{"mean": 0.99}, {"mean": 0.98}, {"mean": 0.7}])
    result = accept(main, mine, run(0.7), POLICY, "pr.json")
    assert not result.update.matches
    assert result.update.stale == ["s/*/response_match_score"] and result.update.differences == [
        "stale: main's baseline changed s/*/response_match_score since this update was written (or the file was edited)"]
    c = compare(current=run(0.7), baseline=main, policy=POLICY, proposed=ProposedBaseline("pr.json", mine))
    assert c.gate.exit_code == 1


def test_a_trend_started_afresh_or_rerun_is_allowed() -> None:
    main = main_refreshes([run(0.5), run(0.6)])
    afresh = forged(refreshed(run(0.7), main), [{"mean": 0.7, "commit": "c"}])
    first = (main.eval_sets["s"].criteria[RESP].trend or [])[0].model_dump(exclude_none=True)
    rerun = forged(refreshed(run(0.7), main), [first, {"mean": 0.7}])
    for mine in (afresh, rerun):
        assert accept(main, mine, run(0.7), POLICY, "pr.json").update.matches
    unstamped = forged(refreshed(run(0.7), main), [{"mean": 0.5}, {"mean": 0.7}])  # main's point, its commit dropped
    assert not accept(main, unstamped, run(0.7), POLICY, "pr.json").update.matches


def test_a_trend_edited_on_an_unchanged_file_is_ignored_by_the_gate_and_the_chart_is_mains() -> None:
    """A file that differs from main only in its trends is no baseline update at all (same results, same commit)."""
    main = main_refreshes([run(0.5), run(0.6)])
    mine = forged(main, [{"mean": 0.0}, {"mean": 0.6}])
    c = compare(current=run(0.6), baseline=main, policy=POLICY)
    assert c.gate.exit_code == 0 and [p.mean for p in c.eval_sets[0].rows[1].trend] == [0.5, 0.6]
    from evalbot.compare.accept import proposed_baseline
    assert proposed_baseline(lambda: dump_baseline(mine), main, "pr.json") is None


def test_an_accepted_criterion_keeps_mains_trend() -> None:
    """A moved threshold accepted by the update: the run is drawn against main's trend, not the file's."""
    main = main_refreshes([run(0.5), run(0.6)])
    result = accept(main, refreshed(run(0.7, threshold=0.6), main), run(0.7, threshold=0.6), POLICY, "pr.json")
    assert result.update.matches and ("s", RESP) in result.criteria
    assert means(result.effective) == [0.5, 0.6]


# The comparison hands the trend and the case outcomes to the renderers.

def test_rows_carry_mains_trend_when_the_measure_is_the_same() -> None:
    main = main_refreshes([run(0.5), run(0.6), run(1.0)])
    same = compare(current=run(0.4, threshold=0.9), baseline=main, policy=POLICY)
    row = next(r for r in same.eval_sets[0].rows if r.criterion == RESP)
    assert [p.mean for p in row.trend] == [0.5, 0.6, 1.0] and row.current_mean == 0.4
    other = compare(current=run(0.4, options={"rouge_type": "rougeL"}), baseline=main, policy=POLICY)
    assert next(r for r in other.eval_sets[0].rows if r.criterion == RESP).trend == []


def test_cases_carry_their_outcomes_on_main() -> None:
    main = main_refreshes([run(0.5), run(0.1), run(0.6)])
    c = compare(current=run(0.6), baseline=main, policy=POLICY)
    assert [k.main_outcomes for k in c.eval_sets[0].cases] == ["PFP", "PFP"]
    assert all(k.history is None for k in c.eval_sets[0].cases)  # the comment's flaky detail is unchanged


def test_a_non_finite_mean_adds_no_point() -> None:
    """A run whose summary holds a non-finite mean (a merged report from JSON could) adds no point: a trend never
    holds one."""
    b = main_refreshes([run(0.5)])
    odd = run(0.6)
    es = odd.eval_sets[0]
    summaries = {**es.metrics, RESP: es.metrics[RESP].model_copy(update={"mean": float("inf")})}
    odd = odd.model_copy(update={"eval_sets": [es.model_copy(update={"metrics": summaries})]})
    after = build_baseline(odd, commit="x", created_at=None, previous=b)
    assert means(after) == [0.5] and means(after, TRAJ) == [1.0, 1.0]
    assert "Infinity" not in json.dumps(data(after)["eval_sets"]["s"]["criteria"][RESP]["trend"])
