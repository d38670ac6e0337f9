"""``compare.carry``: the baseline the affected eval sets are compared with loses exactly the carried eval sets, so
nothing carried is removed, new or regressed, while an eval set the change deleted is still removed; and the
headline and notices count what is carried apart (comment, job summary, HTML: one list of notices)."""

from __future__ import annotations

from evalbot.compare.accept import ProposedBaseline
from evalbot.compare.baseline import BASELINE_SCHEMA_VERSION, Baseline, build_baseline
from evalbot.compare.carry import carried_update, carry
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.render.comment import Links, comment_marker, render_comment, render_summary, verdict
from evalbot.render.html import html_chunks
from tests.fakes.reports import TRAJ, case, eval_set, metric, report

SHA = "1a2b3c4d5e6f7a8b9c0d"
MARKER = comment_marker()


def main_baseline(*names: str) -> Baseline:
    run = report(*(eval_set(n, [case(f"{n}-{k}", {TRAJ: metric(1.0)}) for k in range(3)]) for n in names))
    return build_baseline(run, commit=SHA, created_at="2026-12-01T00:00:00+00:00")


def test_only_the_carried_eval_sets_leave_the_baseline() -> None:
    base = main_baseline("billing", "search", "orders", "gone")
    kept, carried = carry(base, [("billing", True), ("search", False), ("orders", False)])
    assert kept is not None and list(kept.eval_sets) == ["billing", "gone"]  # "gone": deleted by the change
    assert carried.eval_sets == ["search", "orders"] and carried.cases == 6 and carried.total == 3
    assert carried.commit == SHA and carried.missing == []


def test_an_id_shared_with_an_affected_eval_set_is_never_carried() -> None:
    base = main_baseline("billing", "billing")  # two files with one id: keys billing, billing#2
    kept, carried = carry(base, [("billing", True), ("billing", False)])
    assert kept is not None and list(kept.eval_sets) == ["billing", "billing#2"] and carried.eval_sets == []


def test_a_repeated_id_is_carried_whole() -> None:
    base = main_baseline("a", "a", "b")
    kept, carried = carry(base, [("a", False), ("a", False), ("b", True)])
    assert kept is not None and list(kept.eval_sets) == ["b"] and carried.eval_sets == ["a"]


def test_without_a_usable_baseline_nothing_is_carried() -> None:
    kept, carried = carry(None, [("billing", True), ("search", False)])
    assert kept is None and carried.eval_sets == [] and carried.missing == ["search"]
    old = Baseline(schema_version=BASELINE_SCHEMA_VERSION - 1, commit=SHA)
    _, carried = carry(old, [("billing", True), ("search", False)])
    assert carried.eval_sets == [] and carried.missing == ["search"]


def test_a_baseline_update_loses_the_carried_entries_only() -> None:
    base = main_baseline("billing", "search")
    _, carried = carry(base, [("billing", True), ("search", False)])
    update = carried_update(ProposedBaseline(path="b.json", baseline=base), carried)
    assert update is not None and update.baseline is not None and list(update.baseline.eval_sets) == ["billing"]
    refused = ProposedBaseline(path="b.json", error="not JSON")
    assert carried_update(refused, carried) is refused and carried_update(None, carried) is None


def test_a_regression_in_an_affected_eval_set_blocks_and_the_carried_count_is_apart() -> None:
    base = main_baseline("billing", "search", "orders")
    kept, carried = carry(base, [("billing", True), ("search", False), ("orders", False)])
    pr = report(eval_set("billing", [case("billing-0", {TRAJ: metric(0.0)}),
                                      *(case(f"billing-{k}", {TRAJ: metric(1.0)}) for k in (1, 2))]))
    comparison = compare(current=pr, baseline=kept, policy=GatePolicy(), baseline_source="main:b.json")
    comparison.carried = carried
    assert comparison.gate.verdict == "blocked" and comparison.counts.get("regressed") == 1
    assert not comparison.yardstick and not comparison.counts.get("new")  # nothing carried is removed or new
    _, title = verdict(comparison)
    assert title == f"blocked: 1 regressed · 2 of 3 eval sets unaffected: carried from main at {SHA[:12]}", title
    comment = render_comment(comparison, marker=MARKER)
    summary = render_summary(comparison, links=Links())
    html = "".join(html_chunks(comparison))
    for text in (comment, summary):
        assert "their 6 case(s) carried from main's baseline" in text and "search, orders" in text
        assert "removed" not in text.lower()
    assert "6 case(s) carried" in html


def test_the_carried_from_sha_is_copyable_in_the_headline_and_the_notice() -> None:
    """main's commit, named where the carried eval sets come from, is a code span without a zero-width joiner (the
    sha filter's); an eval set named like another commit's sha stays broken."""
    other = "feedfacefeedface"
    base = main_baseline("billing", "search", other)
    kept, carried = carry(base, [("billing", True), ("search", False), (other, False)])
    pr = report(eval_set("billing", [case(f"billing-{k}", {TRAJ: metric(1.0)}) for k in range(3)]))
    comparison = compare(current=pr, baseline=kept, policy=GatePolicy(), baseline_source="main:b.json")
    comparison.carried = carried
    for text in (render_comment(comparison, marker=MARKER), render_summary(comparison, links=Links())):
        lines = text.split("\n")
        headline = next(line for line in lines if line.startswith("### "))
        assert headline.endswith(f"2 of 3 eval sets unaffected: carried from main at `{SHA[:12]}`"), headline
        notice = next(line for line in lines if "carried from main's baseline at" in line)
        assert f"carried from main's baseline at `{SHA[:12]}`, not scored again" in notice, notice
        assert "\u200d" not in headline and other not in text and "feedfa\u200dcefeed\u200dface" in notice


def test_carried_ids_with_markup_are_escaped() -> None:
    name = "<img src=x onerror=alert(1)>[link](https://evil.example)"
    base = main_baseline("billing", name)
    kept, carried = carry(base, [("billing", True), (name, False)])
    pr = report(eval_set("billing", [case(f"billing-{k}", {TRAJ: metric(1.0)}) for k in range(3)]))
    comparison = compare(current=pr, baseline=kept, policy=GatePolicy(), baseline_source="main:b.json")
    comparison.carried = carried
    comment = render_comment(comparison, marker=MARKER)
    assert "<img" not in comment and "](https://evil.example)" not in comment
    assert "<img src=x" not in "".join(html_chunks(comparison))
