"""Tests of the expected-vs-actual tool-call diff."""

from __future__ import annotations

from typing import Any

from evalbot.render.trajdiff import ArgChange, call_text, diff_calls, diff_text, differs
from evalbot.results import ToolCallView


def calls(*items: tuple[str, Any]) -> list[ToolCallView]:
    return [ToolCallView(name=n, args=a) for n, a in items]


def test_same_calls_have_no_difference() -> None:
    """Identical trajectories are all 'same'."""
    rows = diff_calls(calls(("a", {"x": 1})), calls(("a", {"x": 1})))
    assert [r.kind for r in rows] == ["same"] and not differs(rows)


def test_changed_argument_is_paired_and_named() -> None:
    """A call with another argument value shows as one changed call naming the argument."""
    rows = diff_calls(calls(("get", {"id": 1}), ("refund", {"id": 1, "amount": 10})),
                      calls(("get", {"id": 1}), ("refund", {"id": 1, "amount": 100, "note": "x"})))
    assert [r.kind for r in rows] == ["same", "changed"]
    assert rows[1].changes == (ArgChange("amount", "10", "100"), ArgChange("note", None, '"x"'))
    text = diff_text(rows)
    assert "- 2. refund(id=1, amount=10)" in text and "+ 2. refund(id=1, amount=100, note=\"x\")" in text
    assert "↳ amount: 10 → 100" in text and "↳ note: (absent) → \"x\"" in text


def test_missing_and_extra_calls_keep_their_positions() -> None:
    """A skipped call is missing at its expected position; an added one is unexpected at its actual position."""
    rows = diff_calls(calls(("a", {}), ("b", {}), ("c", {})), calls(("a", {}), ("x", {}), ("c", {})))
    kinds = [(r.kind, r.expected_pos, r.actual_pos) for r in rows]
    assert kinds == [("same", 1, 1), ("missing", 2, None), ("extra", None, 2), ("same", 3, 3)]
    text = diff_text(rows)
    assert "- 2. b()    (missing)" in text and "+ 2. x()    (unexpected)" in text


def test_reordered_calls_show_as_moves() -> None:
    """Swapped calls appear as one missing and one extra call, not as changed arguments."""
    rows = diff_calls(calls(("a", {}), ("b", {})), calls(("b", {}), ("a", {})))
    assert differs(rows)
    assert sorted(r.kind for r in rows) == ["extra", "missing", "same"]


def test_non_object_args_and_empty_lists() -> None:
    """None vs {} args differ as a whole; no calls at all says so."""
    rows = diff_calls(calls(("a", None)), calls(("a", {})))
    assert rows[0].kind == "changed" and rows[0].changes == (ArgChange("(args)", "null", "{}"),)
    assert "no tool calls" in diff_text([])


def test_long_values_and_many_rows_are_capped() -> None:
    """Values are cut to the limit and rows beyond max_rows are counted."""
    assert call_text(ToolCallView(name="f", args={"q": "x" * 500}), 20).endswith("…)")
    rows = diff_calls([], calls(*[("f", {"i": i}) for i in range(10)]))
    text = diff_text(rows, max_rows=3)
    assert text.count("\n") == 3 and "and 7 more call(s)" in text


def test_non_ascii_arguments_are_kept() -> None:
    """Non-Latin argument values are shown as written."""
    assert call_text(ToolCallView(name="buscar", args={"ciudad": "東京"})) == 'buscar(ciudad="東京")'
