"""Tests of the comparison: case categories, per-criterion rows, judge-vote noise and the gate verdict."""

from __future__ import annotations

from evalbot.compare.baseline import Baseline, build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison
from evalbot.compare.votes import Votes, vote_noise
from evalbot.results import Problem, Report
from tests.fakes.reports import JUDGE, RESP, TRAJ, case, criterion, eval_set, metric, report


def base_of(r: Report) -> Baseline:
    return build_baseline(r, commit="abc", created_at="2025-01-01T00:00:00+00:00")


def run(main: Report, pr: Report, **policy: object) -> Comparison:
    return compare(current=pr, baseline=base_of(main), policy=GatePolicy.model_validate(policy),
                   baseline_source="main:.evalbot/baseline.json")


def categories(c: Comparison) -> dict[str, str]:
    return {case.eval_id: case.category for es in c.eval_sets for case in es.cases}


def test_case_categories() -> None:
    """Each transition lands in its category; a regression blocks with exit code 1."""
    main = report(eval_set("s", [
        case("reg", {TRAJ: metric(1.0)}), case("fix", {TRAJ: metric(0.0)}), case("still", {TRAJ: metric(0.0)}),
        case("same", {TRAJ: metric(1.0)}), case("gone", {TRAJ: metric(1.0)}), case("edited", {TRAJ: metric(1.0)}),
    ]))
    pr = report(eval_set("s", [
        case("reg", {TRAJ: metric(0.0)}), case("fix", {TRAJ: metric(1.0)}), case("still", {TRAJ: metric(0.0)}),
        case("same", {TRAJ: metric(1.0)}), case("added", {TRAJ: metric(0.0)}),
        case("edited", {TRAJ: metric(0.0)}, fingerprint="new-definition"),
    ]))
    c = run(main, pr)
    assert categories(c) == {"reg": "regressed", "fix": "fixed", "still": "still_failing", "same": "unchanged",
                             "added": "new", "edited": "changed_definition", "gone": "removed"}
    assert c.gate.verdict == "blocked" and c.gate.exit_code == 1
    assert c.gate.reasons == ["s: 1 case(s) regressed",
                              "s / gone: case removed (yardstick_changes: block)",
                              "s / edited: expected conversation (or scenario) changed (yardstick_changes: block)"]
    assert c.counts["regressed"] == 1 and c.counts["failing"] == 4


def test_changed_criterion_config_is_not_a_regression() -> None:
    """A criterion whose options or threshold changed is 'changed definition' in the table and for the case."""
    main = report(eval_set("s", [case("a", {RESP: metric(0.7, 0.6)})]))
    pr = report(eval_set("s", [case("a", {RESP: metric(0.7, 0.8)})],
                         criteria=[criterion(RESP, 0.8, fingerprint="cfg-stricter")]))
    c = run(main, pr)
    assert categories(c) == {"a": "changed_definition"}
    assert c.eval_sets[0].rows[0].change == "changed_definition"
    assert c.gate.verdict == "passed"


def test_judge_model_change_is_a_changed_definition() -> None:
    """Switching the judge model makes the criterion incomparable."""
    opts = {"judge_model_options": {"judge_model": "gemini-a"}}
    main = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(5, 0)])})],
                           criteria=[criterion(JUDGE, judged=True, options=opts, fingerprint="same")]))
    opts_b = {"judge_model_options": {"judge_model": "gemini-b"}}
    pr = report(eval_set("s", [case("a", {JUDGE: metric(0.0, votes=[(0, 5)])})],
                         criteria=[criterion(JUDGE, judged=True, options=opts_b, fingerprint="same")]))
    c = run(main, pr)
    assert c.eval_sets[0].rows[0].change == "changed_definition"
    assert categories(c) == {"a": "changed_definition"}


def test_split_vote_flip_is_inconclusive_and_does_not_block() -> None:
    """A judged pass→fail decided 2–3 is inconclusive with a Fisher p-value; the gate passes."""
    main = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(5, 0)])})]))
    pr = report(eval_set("s", [case("a", {JUDGE: metric(0.0, votes=[(2, 3)])})]))
    c = run(main, pr)
    delta = c.eval_sets[0].cases[0].metrics[0]
    assert categories(c) == {"a": "inconclusive"}
    assert delta.change == "inconclusive" and delta.p_value is not None and round(delta.p_value, 3) == 0.167
    assert c.gate.verdict == "passed" and c.gate.exit_code == 0
    assert c.counts["inconclusive"] == 1


def test_inconclusive_blocks_when_configured() -> None:
    """block_inconclusive turns split-vote flips into blocking reasons."""
    main = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(3, 2)])})]))
    pr = report(eval_set("s", [case("a", {JUDGE: metric(0.0, votes=[(0, 5)])})]))
    c = run(main, pr, block_inconclusive=True)
    assert categories(c) == {"a": "inconclusive"}
    assert c.gate.verdict == "blocked" and "split judge vote" in c.gate.reasons[0]


def test_unanimous_judge_flip_is_a_regression() -> None:
    """5–0 → 0–5 is a real regression; with noise awareness off even split flips are."""
    main = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(5, 0)])})]))
    assert categories(run(main, report(eval_set("s", [case("a", {JUDGE: metric(0.0, votes=[(0, 5)])})])))) == {
        "a": "regressed"}
    split = report(eval_set("s", [case("a", {JUDGE: metric(0.0, votes=[(2, 3)])})]))
    assert categories(run(main, split, noise_aware=False)) == {"a": "regressed"}


def test_judge_flip_without_recorded_votes_counts_as_decided() -> None:
    """No votes on either side: the flip cannot be shown to be noise, so it is a regression."""
    main = report(eval_set("s", [case("a", {JUDGE: metric(1.0)})]))
    pr = report(eval_set("s", [case("a", {JUDGE: metric(0.0)})]))
    assert categories(run(main, pr)) == {"a": "regressed"}


def test_vote_noise_looks_at_the_invocations_that_flipped() -> None:
    """Only flipped invocations decide whether the flip was split; p compares their pooled votes."""
    split, p = vote_noise([Votes(yes=5, no=0), Votes(yes=3, no=2)], [Votes(yes=0, no=5), Votes(yes=3, no=2)])
    assert not split and p is not None and p < 0.01
    split, p = vote_noise([Votes(yes=4, no=1)], [Votes(yes=1, no=4)])
    assert split and p is not None and p > 0.05
    split, p = vote_noise(None, [Votes(yes=2, no=3)])
    assert split and p is None
    split, p = vote_noise([Votes(yes=5, no=5, pooled_split=False)], [Votes(yes=2, no=8, pooled_split=True)])
    assert split and p is None


def _scores(values: list[float]) -> Report:
    return report(eval_set("s", [case(f"c{i}", {RESP: metric(v, 0.5)}) for i, v in enumerate(values)]))


def test_significant_mean_drop_blocks_without_any_flip() -> None:
    """Six cases all falling (still passing) is a significant drop of the mean: regression."""
    c = run(_scores([0.95] * 6), _scores([0.80] * 6))
    row = c.eval_sets[0].rows[0]
    assert row.change == "regressed" and row.down == 6 and row.p_value is not None and row.p_value < 0.05
    assert round(row.delta or 0, 3) == -0.15
    assert c.gate.verdict == "blocked" and "mean -0.150" in c.gate.reasons[0]


def test_mean_drop_on_few_cases_is_inconclusive() -> None:
    """Three cases falling is not significant at 0.05: inconclusive, not blocking."""
    c = run(_scores([0.95] * 3), _scores([0.80] * 3))
    assert c.eval_sets[0].rows[0].change == "inconclusive"
    assert c.gate.verdict == "passed"


def test_tolerance_absorbs_small_drops() -> None:
    """A fall within the tolerance is unchanged."""
    c = run(_scores([0.95] * 6), _scores([0.90] * 6), tolerance=0.1)
    assert c.eval_sets[0].rows[0].change == "unchanged" and c.gate.verdict == "passed"


def test_significant_rise_is_improved() -> None:
    """A significant rise shows as improved."""
    assert run(_scores([0.6] * 6), _scores([0.9] * 6)).eval_sets[0].rows[0].change == "improved"


def test_delta_uses_only_cases_comparable_on_both_sides() -> None:
    """New and changed cases do not move the paired delta."""
    main = report(eval_set("s", [case("a", {RESP: metric(0.9, 0.5)})]))
    pr = report(eval_set("s", [case("a", {RESP: metric(0.9, 0.5)}), case("b", {RESP: metric(0.1, 0.5)})]))
    row = run(main, pr).eval_sets[0].rows[0]
    assert row.delta == 0.0 and row.paired == 1 and row.scored == 2 and row.current_mean == 0.5


def test_fail_on_threshold_and_never() -> None:
    """threshold blocks on any failing case; never always passes."""
    r = report(eval_set("s", [case("a", {TRAJ: metric(0.0)})]))
    assert run(r, r, fail_on="threshold").gate.verdict == "blocked"
    assert run(r, r, fail_on="never").gate.exit_code == 0
    assert run(r, r).gate.verdict == "passed"


def test_invalid_input_exits_2_whatever_the_policy() -> None:
    """Errors in the run make the verdict invalid (exit code 2)."""
    r = report(eval_set("s", [case("a", {TRAJ: metric(1.0)}), case("b", {}, status="error", reason="no actuals")]))
    c = run(r, r, fail_on="never")
    assert c.gate.verdict == "invalid" and c.gate.exit_code == 2
    assert categories(c)["b"] == "error"
    r2 = report(eval_set("s", [case("a", {TRAJ: metric(1.0)})]))
    r2.errors.append(Problem(path="runs/pr.json", pointer="/x", message="bad"))
    assert run(r2, r2).gate.reasons == ["runs/pr.json:/x: bad"]


def test_missing_baseline_shows_absolute_scores_and_how_to_create_one() -> None:
    """No baseline: every case is new, the gate cannot find regressions, the note says what to run."""
    r = report(eval_set("s", [case("a", {TRAJ: metric(0.0)})]))
    c = compare(current=r, baseline=None, policy=GatePolicy(), baseline_source="origin/main:.evalbot/baseline.json")
    assert categories(c) == {"a": "new"}
    assert c.gate.verdict == "passed" and c.baseline is None
    assert c.baseline_note is not None and "evalbot baseline" in c.baseline_note
    assert "--output .evalbot/baseline.json" in c.baseline_note
    assert c.eval_sets[0].rows[0].change == "new"


def test_incompatible_baseline_marks_everything_changed() -> None:
    """A baseline of another schema version compares nothing and says how to refresh it."""
    r = report(eval_set("s", [case("a", {TRAJ: metric(0.0)})]))
    c = compare(current=r, baseline=Baseline(schema_version=7), policy=GatePolicy())
    assert categories(c) == {"a": "changed_definition"}
    assert c.baseline_note is not None and "schema version 7" in c.baseline_note
    assert c.gate.verdict == "passed"


def test_other_evalbot_version_is_noted() -> None:
    """A baseline made by another evalbot version is compared, with a note."""
    r = report(eval_set("s", [case("a", {TRAJ: metric(1.0)})]))
    b = base_of(r).model_copy(update={"evalbot_version": "0.0.1"})
    c = compare(current=r, baseline=b, policy=GatePolicy())
    assert c.baseline_note is not None and "0.0.1" in c.baseline_note
    assert categories(c) == {"a": "unchanged"}


def test_removed_eval_set_and_criterion() -> None:
    """An eval set or criterion that disappeared is listed as removed."""
    main = report(eval_set("kept", [case("a", {TRAJ: metric(1.0), RESP: metric(1.0, 0.5)})]),
                  eval_set("dropped", [case("b", {TRAJ: metric(1.0)})]))
    pr = report(eval_set("kept", [case("a", {TRAJ: metric(1.0)})]))
    c = run(main, pr)
    dropped = next(es for es in c.eval_sets if es.key == "dropped")
    assert not dropped.in_current and dropped.cases[0].category == "removed" and dropped.rows[0].change == "removed"
    kept = next(es for es in c.eval_sets if es.key == "kept")
    assert [r.change for r in kept.rows] == ["unchanged", "removed"]
    # dropping an eval set and a criterion moves the yardstick: named, and blocking by default
    assert [(y.kind, y.subject) for y in c.yardstick] == [
        ("criterion_removed", "kept / response_match_score"), ("eval_set_removed", "dropped")]
    assert c.gate.verdict == "blocked"
    assert run(main, pr, yardstick_changes="warn").gate.verdict == "passed"


def test_judge_outage_is_never_a_silent_pass() -> None:
    """A judge outage (not evaluated) on a case that passed before is not a regression, but the run could not be
    measured: judge_failures block (default) makes it an error (exit 3), warn passes with the reason in the alerts."""
    main = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(5, 0)])})]))
    why = "judge call failed: HTTP 503 UNAVAILABLE (gave up after 6 attempts)"
    pr = report(eval_set("s", [case("a", {JUDGE: metric(None, status="not_evaluated", reason=why)})]))
    c = run(main, pr)
    assert categories(c) == {"a": "not_evaluated"}
    assert (c.gate.verdict, c.gate.exit_code) == ("error", 3)
    assert c.gate.reasons[0] == f"judge unavailable: 1 of 1 judged verdict(s) not evaluated — {why}"
    warned = run(main, pr, judge_failures="warn")
    assert (warned.gate.verdict, warned.gate.exit_code) == ("passed", 0)
    assert any(why in a and "judge-failures: warn" in a for a in warned.alerts)


def test_missing_judge_credentials_warn_but_do_not_block() -> None:
    """No judge at all (a fork PR's first stage has no secrets) is a headline warning, not an error."""
    main = report(eval_set("s", [case("a", {JUDGE: metric(1.0, votes=[(5, 0)])})]))
    no_key = f"{JUDGE} needs an LLM judge: no judge credentials: set GOOGLE_API_KEY"
    pr = report(eval_set("s", [case("a", {JUDGE: metric(None, status="not_evaluated", reason=no_key)})]))
    c = run(main, pr)
    assert (c.gate.verdict, c.gate.exit_code) == ("passed", 0)
    assert c.alerts == ["judged criteria not measured: 1 of 1 judged verdict(s) not evaluated — no judge "
                        "credentials: set GOOGLE_API_KEY (not blocking; regressions on these criteria cannot be "
                        "detected)"]


def test_implausible_vote_counts_are_not_trusted() -> None:
    """Forged counts (e.g. in a fork's report artifact) give no vote split, and huge tables no exact test."""
    from evalbot.compare.votes import votes_of

    assert votes_of({"votes": {"yes": 10**9, "no": 3}}) is None
    assert votes_of({"votes": {"yes": 3, "no": 2}}) == Votes(yes=3, no=2)
    _, p = vote_noise([Votes(yes=1000, no=0)] * 15, [Votes(yes=0, no=1000)] * 15)
    assert p is None


def test_ratings_on_a_wider_scale_are_not_votes() -> None:
    """A pointwise metric's raw 1-5 ratings (a report written before it recorded votes) give no vote split, rather
    than five "passes"; 0/1 samples still do."""
    from evalbot.compare.votes import votes_of

    assert votes_of({"samples": [4.0, 2.0, 3.0], "rating": 3.0}) is None
    assert votes_of({"samples": [1.0, 0.0, None]}) == Votes(yes=1, no=1)
    assert votes_of({"samples": [4.0, 2.0], "votes": {"yes": 1, "no": 1}}) == Votes(yes=1, no=1)
