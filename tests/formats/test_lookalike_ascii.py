"""The printable-ASCII fast path of formats.lookalike says what the character-by-character check says."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalbot.formats.lookalike import (
    _compatibility_lookalike,
    escape_lookalike,
    has_lookalike,
    is_invisible,
    script,
    suspicious,
)

PRINTABLE_ASCII = [chr(code) for code in range(0x20, 0x7F)]


def test_no_printable_ascii_character_is_suspicious_by_the_unicode_checks() -> None:
    """Why the fast path holds: no printable ASCII character is invisible or a compatibility look-alike, and every
    letter among them is Latin, so no id made of them is mixed-script."""
    for ch in PRINTABLE_ASCII:
        assert not is_invisible(ch) and not _compatibility_lookalike(ch), repr(ch)
        assert script(ch) in (None, "LATIN"), repr(ch)


@given(st.text(alphabet=PRINTABLE_ASCII, max_size=40))
def test_printable_ascii_ids_are_left_as_they_are(text: str) -> None:
    assert suspicious(text) == [False] * len(text)
    assert not has_lookalike(text) and escape_lookalike(text) == text


def test_control_characters_and_other_text_still_take_the_full_check() -> None:
    """Tabs, DEL and other ASCII control characters are not printable: the full check escapes them."""
    assert escape_lookalike("a\tb") == "a\\u0009b" and escape_lookalike("x\x7f") == "x\\u007f"
    assert has_lookalike("refund\u200b") and escape_lookalike("ref\u0443nd") == "ref\\u0443nd"
