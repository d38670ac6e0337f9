"""Flaky-case memory: histories carried across baseline refreshes on main, flaky regressions on a PR, the policy,
hostile histories, and how the comment, the summary and the HTML report show them."""

from __future__ import annotations

import json
import re

import pytest

from evalbot.compare.baseline import (
    HISTORY_LIMIT,
    Baseline,
    build_baseline,
    dump_baseline,
    parse_baseline,
)
from evalbot.compare.delta import compare
from evalbot.compare.flaky import case_history
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison
from evalbot.errors import EXIT_FAILED, EXIT_OK, InputError
from evalbot.render.comment import comment_marker, render_comment, render_summary
from evalbot.render.html import render_html
from evalbot.results import Report
from tests.fakes.reports import JUDGE, TRAJ, case, eval_set, main_refreshes, metric, report, wobbly_main_run

MARKER = comment_marker()


main_run = wobbly_main_run
refreshes = main_refreshes


def pr_run(*, wobbly: bool = True, steady: bool = True) -> Report:
    return main_run(wobbly=wobbly, steady=steady)


def compare_pr(baseline: Baseline, pr: Report, **policy: object) -> Comparison:
    return compare(current=pr, baseline=baseline, policy=GatePolicy.model_validate(policy),
                   baseline_source="main:.evalbot/baseline.json")


def category(c: Comparison, eval_id: str) -> str:
    return next(x.category for es in c.eval_sets for x in es.cases if x.eval_id == eval_id)


FLIPPING = [True, True, False, True, True]  # wobbly failed once on main


def test_history_is_carried_across_refreshes_and_capped() -> None:
    """Each refresh adds one outcome per case (oldest first); beyond HISTORY_LIMIT the oldest drop out; judged
    criteria keep their vote split per run."""
    runs = [main_run(wobbly=w, judge_votes=(3, 2) if i == 1 else (5, 0)) for i, w in enumerate(FLIPPING)]
    b = refreshes(runs)
    cases = b.eval_sets["orders"].cases
    assert cases["wobbly"].history == "PPFPP" and cases["steady"].history == "PPPPP"
    assert cases["judged"].metrics[JUDGE].vote_history == "5-0 3-2 5-0 5-0 5-0"
    assert cases["steady"].metrics[TRAJ].vote_history is None  # only judged criteria keep votes
    longer = refreshes([main_run(wobbly=i % 4 != 3) for i in range(13)])
    assert longer.eval_sets["orders"].cases["wobbly"].history == "FPPPFPPPFP"  # the last 10 of PPPFPPPFPPPFP
    assert len(longer.eval_sets["orders"].cases["steady"].history or "") == HISTORY_LIMIT
    assert len(longer.eval_sets["orders"].cases["judged"].metrics[JUDGE].vote_history.split()) == HISTORY_LIMIT  # type: ignore[union-attr]


def test_baseline_file_keeps_one_short_line_of_history_per_case() -> None:
    """The JSON stays sorted and reviewable: the history is one string line per case (not a list of lines)."""
    text = dump_baseline(refreshes([main_run(wobbly=w) for w in FLIPPING]))
    assert text == dump_baseline(parse_baseline(text, "b.json"))
    trends = [line.strip() for line in text.splitlines() if '"trend"' in line]
    assert trends and all(line.endswith(("}]", "}],")) for line in trends)  # a trend is one line
    assert [line.strip() for line in text.splitlines() if '"history"' in line] == [
        '"history": "PPPPP",', '"history": "PPPPP",', '"history": "PPFPP",']
    assert '"vote_history": "5-0 5-0 5-0 5-0 5-0"' in text


def test_flaky_regression_does_not_block_and_is_explained() -> None:
    """A case that flipped on main and fails on the PR is flaky: exit 0, with its history and flip rate."""
    baseline = refreshes([main_run(wobbly=w) for w in FLIPPING])
    c = compare_pr(baseline, pr_run(wobbly=False))
    assert category(c, "wobbly") == "flaky"
    assert c.gate.verdict == "passed" and c.gate.exit_code == EXIT_OK
    assert c.counts["flaky"] == 1 and c.counts["regressed"] == 0
    flaky = next(x for es in c.eval_sets for x in es.cases if x.eval_id == "wobbly")
    assert flaky.history is not None and flaky.history.outcomes == "PPFPP"
    assert flaky.history.flips == 2 and flaky.history.failed == 1 and flaky.history.flip_rate == pytest.approx(0.5)
    comment = render_comment(c, marker=MARKER)
    assert "1 regressed but flaky on main (not blocking)" in comment.splitlines()[1]
    assert "Flaky on main, not blocking (1)" in comment
    assert "✓✓✗✓✓ on main (oldest first): failed 1 of 5 runs, 2 flips in 4 transitions (50%); ✗ in this run" \
        in comment
    assert "not blocking (block\\_flaky: false)" in comment


def test_stable_case_still_blocks() -> None:
    """A case whose history never flipped blocks when it regresses (exit 1), with its steady history shown."""
    baseline = refreshes([main_run(wobbly=w) for w in FLIPPING])
    c = compare_pr(baseline, pr_run(steady=False))
    assert category(c, "steady") == "regressed"
    assert c.gate.verdict == "blocked" and c.gate.exit_code == EXIT_FAILED
    assert c.gate.reasons == ["orders: 1 case(s) regressed"]
    comment = render_comment(c, marker=MARKER)
    assert "✓✓✓✓✓ on main (oldest first): the same outcome in all 5 recorded runs; ✗ in this run" in comment


def test_one_recorded_run_is_not_flaky_and_shows_no_history() -> None:
    """A baseline with one run (or one written before histories existed) blocks a regression as before."""
    c = compare_pr(refreshes([main_run(wobbly=True)]), pr_run(wobbly=False))
    assert category(c, "wobbly") == "regressed" and c.gate.exit_code == EXIT_FAILED
    assert "on main (oldest first)" not in render_comment(c, marker=MARKER)


@pytest.mark.parametrize(("outcomes", "flips", "flaky"), [
    ("PPFPP", 2, True),  # P→F→P: oscillated
    ("FFPFF", 2, True),  # F→P→F
    ("PFPFPFPFPF", 9, True),
    ("FFFPP", 1, False),  # broken, then fixed: one change
    ("PPPFF", 1, False),  # broke once and stayed broken
    ("PPPPP", 0, False),
    ("PPEPP", 0, False),  # an error between passes is not a change of outcome
    ("PFEFP", 2, True),  # errors and unevaluated runs are skipped: P→F→F→P
    ("FNPNF", 2, True),
    ("FFNPP", 1, False),
])
def test_flaky_means_oscillating(outcomes: str, flips: int, flaky: bool) -> None:
    """A case is flaky only when its history on main changed outcome at least twice (P→F→P or F→P→F); a single
    transition is not flakiness; errors and unevaluated runs neither count nor break a run of outcomes."""
    history = case_history(refreshes([main_run(wobbly=True)]).eval_sets["orders"].cases["wobbly"].model_copy(
        update={"history": outcomes}))
    assert history is not None and history.flips == flips and history.flaky is flaky


def test_reverting_a_fix_blocks() -> None:
    """A case broken on main and then fixed (one change: ✗✗✗✓✓) regresses on a PR that reverts the fix: it blocks
    (exit 1) as a regression, not "flaky", and its history says one change is not flakiness."""
    baseline = refreshes([main_run(wobbly=w) for w in (False, False, False, True, True)])
    assert baseline.eval_sets["orders"].cases["wobbly"].history == "FFFPP"
    c = compare_pr(baseline, pr_run(wobbly=False))
    assert category(c, "wobbly") == "regressed"
    assert c.gate.verdict == "blocked" and c.gate.exit_code == EXIT_FAILED
    assert c.gate.reasons == ["orders: 1 case(s) regressed"] and c.counts["flaky"] == 0
    comment = render_comment(c, marker=MARKER)
    assert comment.splitlines()[1].startswith("### ❌ evalbot: blocked: 1 regressed")
    assert ("✗✗✗✓✓ on main (oldest first): failed 3 of 5 runs, one change of outcome (a single change is not "
            "flakiness); ✗ in this run") in comment


def test_block_flaky_blocks() -> None:
    """With block_flaky the flaky case blocks (exit 1) and the comment says why."""
    baseline = refreshes([main_run(wobbly=w) for w in FLIPPING])
    c = compare_pr(baseline, pr_run(wobbly=False), block_flaky=True)
    assert category(c, "wobbly") == "flaky"
    assert c.gate.verdict == "blocked" and c.gate.exit_code == EXIT_FAILED
    assert c.gate.reasons == ["orders: 1 case(s) regressed that also changed outcome on main (flaky); blocking "
                              "because block_flaky is set"]
    comment = render_comment(c, marker=MARKER)
    assert "Flaky on main, blocking (block_flaky) (1)" in comment
    assert comment.splitlines()[1] == "### ❌ evalbot: blocked: 1 regressed, flaky on main (blocking: block\\_flaky)"


def test_flip_older_than_the_window_is_forgotten() -> None:
    """Once the failure is more than HISTORY_LIMIT refreshes old, the case is stable again and blocks."""
    runs = [main_run(wobbly=False)] + [main_run(wobbly=True)] * HISTORY_LIMIT
    baseline = refreshes(runs)
    assert baseline.eval_sets["orders"].cases["wobbly"].history == "P" * HISTORY_LIMIT
    assert compare_pr(baseline, pr_run(wobbly=False)).gate.exit_code == EXIT_FAILED


def test_rerun_of_the_same_commit_replaces_its_entry() -> None:
    """Re-running the refresh for the commit the baseline was measured at does not add a second entry."""
    first = build_baseline(main_run(wobbly=True), commit="a" * 40, created_at=None)
    second = build_baseline(main_run(wobbly=True), commit="b" * 40, created_at=None, previous=first)
    again = build_baseline(main_run(wobbly=False), commit="b" * 40, created_at=None, previous=second)
    assert second.eval_sets["orders"].cases["wobbly"].history == "PP"
    assert again.eval_sets["orders"].cases["wobbly"].history == "PF"
    assert again.eval_sets["orders"].cases["judged"].metrics[JUDGE].vote_history == "5-0 5-0"


def test_history_restarts_when_the_case_or_its_criteria_change() -> None:
    """A changed case fingerprint or a changed threshold starts that history again (a flip caused by a definition
    change is not flakiness); other eval sets keep theirs."""
    base = refreshes([main_run(wobbly=w) for w in FLIPPING])
    edited = report(eval_set("orders", [
        case("wobbly", {TRAJ: metric(1.0)}, fingerprint="edited"),
        case("steady", {TRAJ: metric(1.0)}),
        case("judged", {JUDGE: metric(1.0, 0.5, votes=[(5, 0)])}),
    ]))
    after = build_baseline(edited, commit="c" * 40, created_at=None, previous=base)
    assert after.eval_sets["orders"].cases["wobbly"].history == "P"
    assert after.eval_sets["orders"].cases["steady"].history == "PPPPPP"
    stricter = report(eval_set("orders", [
        case("wobbly", {TRAJ: metric(1.0, 0.9)}), case("steady", {TRAJ: metric(1.0, 0.9)}),
        case("judged", {JUDGE: metric(1.0, 0.5, votes=[(5, 0)])}),
    ]))
    after = build_baseline(stricter, commit="d" * 40, created_at=None, previous=base)
    assert {k: c.history for k, c in after.eval_sets["orders"].cases.items()} == {
        "wobbly": "P", "steady": "P", "judged": "P"}


def test_old_baseline_without_history_loads_and_seeds_it() -> None:
    """A baseline written before histories existed still parses; its recorded outcome starts the history."""
    old = json.loads(dump_baseline(build_baseline(main_run(wobbly=False), commit="a" * 40, created_at=None)))
    for c in old["eval_sets"]["orders"]["cases"].values():
        c.pop("history")
        for m in c["metrics"].values():
            m.pop("vote_history", None)
    parsed = parse_baseline(json.dumps(old), "old.json")
    assert parsed.eval_sets["orders"].cases["wobbly"].history is None
    assert case_history(parsed.eval_sets["orders"].cases["wobbly"]) is None
    after = build_baseline(main_run(wobbly=True), commit="b" * 40, created_at=None, previous=parsed)
    assert after.eval_sets["orders"].cases["wobbly"].history == "FP"
    assert after.eval_sets["orders"].cases["judged"].metrics[JUDGE].vote_history == "5-0 5-0"


def test_other_schema_version_carries_nothing() -> None:
    old = parse_baseline('{"schema_version": 99, "commit": "x"}', "future.json")
    after = build_baseline(main_run(wobbly=True), commit="b" * 40, created_at=None, previous=old)
    assert after.eval_sets["orders"].cases["wobbly"].history == "P"


def _hostile(mutate: str, value: object) -> str:
    data = json.loads(dump_baseline(refreshes([main_run(wobbly=w) for w in FLIPPING])))
    target = data["eval_sets"]["orders"]["cases"]["wobbly"]
    if mutate == "vote_history":
        target = data["eval_sets"]["orders"]["cases"]["judged"]["metrics"][JUDGE]
    target[mutate] = value
    return json.dumps(data)


@pytest.mark.parametrize(("field", "value", "pointer"), [
    ("history", "PPFPPPFPPPF", "/eval_sets/orders/cases/wobbly/history"),  # 11 entries
    ("history", "P" * 5_000_000, "/eval_sets/orders/cases/wobbly/history"),  # huge
    ("history", "PPXPP", "/eval_sets/orders/cases/wobbly/history"),  # unknown outcome
    ("history", "PP\u202eFP", "/eval_sets/orders/cases/wobbly/history"),  # bidi control
    ("history", "", "/eval_sets/orders/cases/wobbly/history"),
    ("history", ["P", "F"], "/eval_sets/orders/cases/wobbly/history"),
    ("history", "PPPPF", "/eval_sets/orders/cases/wobbly"),  # forged: does not end with the recorded status
    ("vote_history", "5-0 <b>x</b>", "/eval_sets/orders/cases/judged/metrics/final_response_match_v2/vote_history"),
    ("vote_history", " ".join(["5-0"] * 11), "/eval_sets/orders/cases/judged/metrics/final_response_match_v2"
                                              "/vote_history"),
    ("vote_history", "5-0 0-5", "/eval_sets/orders/cases/judged/metrics/final_response_match_v2"),
])
def test_hostile_history_is_refused_with_its_pointer(field: str, value: object, pointer: str) -> None:
    """A forged, oversized or malformed history makes the baseline unreadable, naming the file and JSON pointer
    (the gate then fails closed, exit 3), never a crash or a silently accepted history."""
    with pytest.raises(InputError) as err:
        parse_baseline(_hostile(field, value), "main:.evalbot/baseline.json")
    assert err.value.path == "main:.evalbot/baseline.json" and err.value.pointer == pointer, str(err.value)
    assert len(str(err.value)) < 600


def test_summary_and_html_show_the_history() -> None:
    """The job summary and the HTML report show the flaky case's history; the markup stays escaped."""
    baseline = refreshes([main_run(wobbly=w) for w in FLIPPING])
    c = compare_pr(baseline, pr_run(wobbly=False))
    summary = render_summary(c)
    assert "Flaky on main, not blocking (1)" in summary and "✓✓✗✓✓ on main" in summary
    page = render_html(c)
    assert 'class="badge b-flaky">Flaky on main, not blocking</span>' in page
    assert re.search(r'<p class="history">History on main: ✓✓✗✓✓ on main \(oldest first\): failed 1 of 5 runs',
                     page)
    assert 'class="case c-flaky t-regressed t-failing"' in page
