"""A PR's baseline update, entry by entry: accepted where the run confirms it (up to noise), blocking where the run
contradicts it, and main's entries (and histories) everywhere else; the yardstick changes it records are accepted."""

from __future__ import annotations

import json

from evalbot.compare.accept import ProposedBaseline, accept
from evalbot.compare.baseline import Baseline, BaselineCriterion, PackedCases, build_baseline, parse_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.yardstick import yardstick_changes
from evalbot.results import Report
from tests.fakes.reports import JUDGE, RESP, TRAJ, case, criterion, eval_set, metric, report

POLICY = GatePolicy()


def base_of(r: Report, commit: str = "a" * 40) -> Baseline:
    return build_baseline(r, commit=commit, created_at=None)


def refreshed(r: Report, main: Baseline) -> Baseline:
    """What ``evalbot baseline --output FILE`` writes on the PR's branch, FILE holding main's baseline."""
    return build_baseline(r, commit="c" * 40, created_at=None, previous=main)


def edited(b: Baseline, change: dict[str, object], *path: str) -> Baseline:
    data = json.loads(b.model_dump_json())
    node = data
    for key in path:
        node = node[key]
    node.update(change)
    return parse_baseline(json.dumps(data), "pr.json")


MAIN = report(eval_set("s", [case("a", {TRAJ: metric(1.0), RESP: metric(0.9, 0.5)}),
                             case("b", {TRAJ: metric(1.0), RESP: metric(0.909, 0.5)})]))
PR = report(eval_set("s", [case("a", {TRAJ: metric(0.0), RESP: metric(0.9, 0.5)}),
                           case("b", {TRAJ: metric(1.0), RESP: metric(0.909, 0.5)})]))


def test_an_honest_refresh_accepts_the_regression_and_only_that() -> None:
    main = base_of(MAIN)
    c = compare(current=PR, baseline=main, policy=POLICY, proposed=ProposedBaseline("pr.json", refreshed(PR, main)))
    assert c.gate.exit_code == 0 and c.counts["accepted"] == 1 and c.counts["accepted_changes"] == 1
    assert c.baseline_update is not None and c.baseline_update.matches and c.baseline_update.changed == 1


def test_wording_drift_on_another_case_never_invalidates_the_update() -> None:
    """The author's recording had b at ROUGE 0.909, CI's at 0.737 (still passing): accepted all the same."""
    main = base_of(MAIN)
    drifted = report(eval_set("s", [case("a", {TRAJ: metric(0.0), RESP: metric(0.9, 0.5)}),
                                    case("b", {TRAJ: metric(1.0), RESP: metric(0.737, 0.5)})]))
    c = compare(current=drifted, baseline=main, policy=POLICY,
                proposed=ProposedBaseline("pr.json", refreshed(PR, main)))
    assert c.gate.exit_code == 0, c.gate
    assert {k.eval_id: k.category for es in c.eval_sets for k in es.cases} == {"a": "accepted", "b": "unchanged"}


def test_an_unchanged_entry_still_compares_with_main() -> None:
    """The update records a's regression; b regresses too, and the file leaves b as main has it: b blocks."""
    main = base_of(MAIN)
    worse = report(eval_set("s", [case("a", {TRAJ: metric(0.0), RESP: metric(0.9, 0.5)}),
                                  case("b", {TRAJ: metric(0.0), RESP: metric(0.909, 0.5)})]))
    file = edited(refreshed(PR, main), {"history": "P"}, "eval_sets", "s", "cases", "b")  # re-started: allowed
    c = compare(current=worse, baseline=main, policy=POLICY, proposed=ProposedBaseline("pr.json", file))
    assert c.gate.exit_code == 1 and c.gate.reasons[0] == "s: 1 case(s) regressed"
    assert {k.eval_id: k.category for es in c.eval_sets for k in es.cases} == {"a": "accepted", "b": "regressed"}


def test_a_status_the_run_contradicts_blocks_with_the_difference() -> None:
    main = base_of(MAIN)
    file = edited(refreshed(PR, main), {"status": "failed", "history": "PF"}, "eval_sets", "s", "cases", "b")
    file = edited(file, {"status": "failed", "score": 0.0}, "eval_sets", "s", "cases", "b", "metrics", TRAJ)
    c = compare(current=PR, baseline=main, policy=POLICY, proposed=ProposedBaseline("pr.json", file))
    assert c.gate.exit_code == 1
    assert c.gate.reasons == ['baseline update: /eval_sets/s/cases/b/metrics/tool_trajectory_avg_score/status: '
                              '"failed" (score 0.0) in the file, "passed" (score 1.0) in this run']


def test_a_forged_history_on_an_otherwise_unchanged_entry_blocks() -> None:
    main = base_of(MAIN)
    file = edited(refreshed(PR, main), {"history": "PFPFP"}, "eval_sets", "s", "cases", "b")
    result = accept(main, file, PR, POLICY, "pr.json")
    assert not result.update.matches and ("s", "b") not in result.cases and result.update.stale == ["s/b"]
    assert result.update.differences == ["stale: main's baseline changed s/b since this update was written (or the "
                                         "file was edited)"]


def test_the_flaky_history_compared_with_is_mains() -> None:
    """An accepted case is compared with main's entry, with main's history, never with the file's."""
    main = base_of(MAIN)
    file = edited(refreshed(PR, main), {"history": "F"}, "eval_sets", "s", "cases", "a")  # started afresh: allowed
    c = compare(current=PR, baseline=main, policy=POLICY, proposed=ProposedBaseline("pr.json", file))
    (a,) = [k for es in c.eval_sets for k in es.cases if k.eval_id == "a"]
    assert a.category == "accepted" and a.main_outcomes == main.eval_sets["s"].cases["a"].history == "P"


def test_the_baseline_compared_with_keeps_parsed_files_packed_and_equals_the_models() -> None:
    """With main's file and the PR's as parsed (cases packed), the baseline compared with keeps its cases packed
    (main's unchanged ones are not built and held) and equals what the same files as models give: the accepted
    case and the accepted removal left out (an accepted case is compared with main's entry, never paired), order
    kept."""
    main_run = report(eval_set("s", [case(k, {TRAJ: metric(1.0), RESP: metric(0.9, 0.5)}) for k in "abcd"]))
    pr_run = report(eval_set("s", [case("a", {TRAJ: metric(0.0), RESP: metric(0.9, 0.5)}),
                                   *(case(k, {TRAJ: metric(1.0), RESP: metric(0.9, 0.5)}) for k in "bc")]))
    main = base_of(main_run)
    file = refreshed(pr_run, main)
    parsed = accept(parse_baseline(main.model_dump_json(), "main"), parse_baseline(file.model_dump_json(), "pr"),
                    pr_run, POLICY, "pr.json")
    built = accept(main, file, pr_run, POLICY, "pr.json")
    cases = parsed.effective.eval_sets["s"].cases
    assert isinstance(cases, PackedCases) and list(cases) == ["b", "c"]
    assert parsed.update == built.update and parsed.update.matches and parsed.cases == {("s", "a"), ("s", "d")}
    assert dict(cases) == dict(built.effective.eval_sets["s"].cases)


def test_a_split_judge_flip_against_the_file_is_noise() -> None:
    """The file recorded the judge's 3-2 pass; this run's 2-3 fail is a split vote: accepted, not a contradiction."""
    judged = [criterion(JUDGE, 0.5, judged=True)]
    main_run = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(5, 0)])})], criteria=judged))
    author = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(3, 2)])}, fingerprint="v2")],
                             criteria=judged))
    ci = report(eval_set("s", [case("a", {JUDGE: metric(0.0, votes=[(2, 3)])}, fingerprint="v2")], criteria=judged))
    main = base_of(main_run)
    result = accept(main, refreshed(author, main), ci, POLICY, "pr.json")
    assert result.update.matches and ("s", "a") in result.cases


def test_removals_are_accepted_only_when_the_run_lacks_them() -> None:
    main = base_of(MAIN)
    only_a = report(eval_set("s", [case("a", {TRAJ: metric(0.0), RESP: metric(0.9, 0.5)})]))
    file = refreshed(only_a, main)
    taken = compare(current=only_a, baseline=main, policy=POLICY, proposed=ProposedBaseline("pr.json", file))
    assert taken.gate.exit_code == 0 and [(y.kind, y.subject, y.accepted) for y in taken.yardstick] == [
        ("case_removed", "s / b", True)]
    refused = accept(main, file, PR, POLICY, "pr.json")
    assert refused.update.differences == ["/eval_sets/s/cases/b: removed in the file, this run has it"]


def test_a_criterion_definition_the_run_does_not_use_blocks() -> None:
    main = base_of(MAIN)
    file = refreshed(PR, main)
    data = json.loads(file.model_dump_json())
    data["eval_sets"]["s"]["criteria"][TRAJ]["threshold"] = 0.0
    data["eval_sets"]["s"]["criteria"][TRAJ]["fingerprint"] = "lowered"
    result = accept(main, Baseline.model_validate(data), PR, POLICY, "pr.json")
    assert not result.update.matches and result.update.differences[0].startswith(
        f"/eval_sets/s/criteria/{TRAJ}: ")


def test_raising_a_threshold_in_an_older_baseline_is_not_called_a_tightening() -> None:
    """Without the options hash (older baselines) a moved threshold cannot be told from changed options: it is a
    changed definition, which blocks; with it, a raised threshold is a tightening."""
    raised = report(eval_set("s", [case("a", {TRAJ: metric(1.0), RESP: metric(0.9, 0.6)})],
                              criteria=[criterion(TRAJ, 1.0), criterion(RESP, 0.6, fingerprint="cfg-resp-0.6")]))
    main = base_of(report(eval_set("s", [case("a", {TRAJ: metric(1.0), RESP: metric(0.9, 0.5)})],
                                   criteria=[criterion(TRAJ, 1.0), criterion(RESP, 0.5)])))
    (change,) = yardstick_changes(main, raised)
    assert (change.kind, change.loosens) == ("threshold_raised", False)
    old = main.model_copy(update={"eval_sets": {"s": main.eval_sets["s"].model_copy(update={"criteria": {
        name: BaselineCriterion.model_validate({**c.model_dump(), "options_sha": None})
        for name, c in main.eval_sets["s"].criteria.items()}})}})
    (change,) = yardstick_changes(old, raised)
    assert (change.kind, change.loosens) == ("criterion_changed", True)


def test_a_baseline_written_before_these_fields_reads_and_shows_no_change() -> None:
    """A baseline without custom, options_sha and content (older evalbot) still loads, and the same run against it
    has no yardstick change: upgrading evalbot blocks nothing by itself."""
    from evalbot.compare.baseline import dump_baseline

    data = json.loads(dump_baseline(base_of(MAIN)))
    for es in data["eval_sets"].values():
        for c in es["criteria"].values():
            c.pop("options_sha", None)
            c.pop("custom", None)
        for c in es["cases"].values():
            c.pop("content", None)
    old = parse_baseline(json.dumps(data), "old.json")
    c = compare(current=MAIN, baseline=old, policy=POLICY)
    assert c.yardstick == [] and c.gate.exit_code == 0
    regressed = compare(current=PR, baseline=old, policy=POLICY)
    assert regressed.yardstick == [] and regressed.gate.reasons == ["s: 1 case(s) regressed"]


# --- the file says WHICH entries; their values are the run's (issue 37 row 1, issue 38) ---------------------------


def later_refreshes(runs: list[Report], previous: Baseline) -> Baseline:
    """Main's next refreshes (push mode), each on a new commit, through the file."""
    from evalbot.compare.baseline import dump_baseline

    baseline = previous
    for i, run in enumerate(runs):
        baseline = build_baseline(run, commit=f"{i + 100:040x}", created_at=f"2026-02-{i + 1:02d}T00:00:00+00:00",
                                  previous=baseline)
        baseline = parse_baseline(dump_baseline(baseline), "baseline.json")
    return baseline


def _drifting(n: int, score: float) -> list:  # type: ignore[type-arg]
    return [case(f"d{i}", {RESP: metric(score, 0.5)}) for i in range(n)]


def test_invented_scores_for_new_cases_cannot_cancel_a_drift() -> None:
    """10 cases drift 1.0 -> 0.8 (still passing): a mean regression. The update records two new cases with an
    invented score of 0.0 (the run scored 1.0): their values are never compared, the drift still blocks."""
    main = base_of(report(eval_set("s", _drifting(10, 1.0))))
    run = report(eval_set("s", [*_drifting(10, 0.8), case("n1", {RESP: metric(1.0, 0.5)}),
                                case("n2", {RESP: metric(1.0, 0.5)})]))
    plain = compare(current=run, baseline=main, policy=POLICY)
    assert plain.gate.exit_code == 1
    file = refreshed(run, main)
    for new in ("n1", "n2"):
        file = edited(file, {"score": 0.0}, "eval_sets", "s", "cases", new, "metrics", RESP)
    c = compare(current=run, baseline=main, policy=POLICY, proposed=ProposedBaseline("pr.json", file))
    assert c.gate.exit_code == 1 and c.gate.reasons == plain.gate.reasons, c.gate
    (row,) = [r for es in c.eval_sets for r in es.rows if r.criterion == RESP]
    assert row.change == "regressed" and row.paired == 10 and abs((row.delta or 0) + 0.2) < 1e-9


def test_a_score_outside_zero_one_is_refused_with_its_pointer() -> None:
    import pytest

    from evalbot.errors import InputError

    data = json.loads(base_of(MAIN).model_dump_json())
    data["eval_sets"]["s"]["cases"]["a"]["metrics"][TRAJ]["score"] = -3.0
    with pytest.raises(InputError) as err:
        parse_baseline(json.dumps(data), "pr.json")
    assert err.value.pointer == f"/eval_sets/s/cases/a/metrics/{TRAJ}/score"
    data["eval_sets"]["s"]["cases"]["a"]["metrics"][TRAJ]["score"] = 1.5
    with pytest.raises(InputError):
        parse_baseline(json.dumps(data), "pr.json")


def test_an_accepted_regression_is_named_as_one_in_the_headline() -> None:
    from evalbot.render.comment import verdict

    main = base_of(MAIN)
    c = compare(current=PR, baseline=main, policy=POLICY, proposed=ProposedBaseline("pr.json", refreshed(PR, main)))
    assert [(a.kind, a.subject) for a in c.accepted] == [("regression", "s/a")]
    assert verdict(c) == ("✅", "accepted by this PR's baseline update: 1 regression (s/a)")


def test_an_update_written_before_mains_refreshes_still_applies() -> None:
    """The update was written on main's baseline; main then refreshed three times with the same outcomes (histories,
    scores and trends moved): the update's entries still apply."""
    from tests.fakes.reports import main_refreshes

    main_then = main_refreshes([MAIN])
    file = parse_baseline(refreshed(PR, main_then).model_dump_json(), "pr.json")
    drift = report(eval_set("s", [case("a", {TRAJ: metric(1.0), RESP: metric(0.95, 0.5)}),
                                  case("b", {TRAJ: metric(1.0), RESP: metric(0.8, 0.5)})]))
    main_now = later_refreshes([drift, MAIN, drift], main_then)
    c = compare(current=PR, baseline=main_now, policy=POLICY, proposed=ProposedBaseline("pr.json", file))
    assert c.gate.exit_code == 0 and c.baseline_update is not None and c.baseline_update.matches, c.gate
    assert [(a.kind, a.subject) for a in c.accepted] == [("regression", "s/a")]


def test_an_update_is_stale_only_where_main_changed_the_same_entry() -> None:
    """Main's b failed then passed again since the update (which refreshed b, unchanged, and accepted a) was written:
    b's history in the file continues a state main left and its outcome changed since: stale, named, blocking."""
    from tests.fakes.reports import main_refreshes

    main_then = main_refreshes([MAIN])
    file = parse_baseline(refreshed(PR, main_then).model_dump_json(), "pr.json")
    b_fails = report(eval_set("s", [case("a", {TRAJ: metric(1.0), RESP: metric(0.9, 0.5)}),
                                    case("b", {TRAJ: metric(0.0), RESP: metric(0.909, 0.5)})]))
    main_now = later_refreshes([b_fails], main_then)
    result = accept(main_now, file, PR, POLICY, "pr.json")
    assert result.update.stale == ["s/b"] and not result.update.matches
    assert result.update.differences[0].startswith("stale: main's baseline changed s/b since")
    assert result.update.entries == ["s/a", "s/b"]
