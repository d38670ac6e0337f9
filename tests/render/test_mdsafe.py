"""Tests of the markdown neutralising filters."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evalbot.render.mdsafe import (
    JOINER,
    Safe,
    break_marker,
    cell,
    clean,
    code,
    fence_for,
    html,
    inline,
    shorten,
    soften,
    span,
    width,
)

HOSTILE = st.lists(
    st.sampled_from(["`", "```", "````", "~~~", "</details>", "<details>", "<!-- evalbot id=default -->", "<!--",
                     "-->", "@org/team", "@user", "#12", "|", "\n", "\r\n", "\\", "*", "_", "[x](https://e.vil)",
                     "![i](x)", "<img src=x>", "&lt;!--", "東京", "مرحبا", "\u202e", "\x00", " ", "- ", "1. ", "# "]),
    max_size=30,
).map("".join) | st.text(max_size=200)


def test_code_fence_is_longer_than_any_backtick_run() -> None:
    """A run of four backticks inside forces a five-backtick fence, so the block cannot be closed early."""
    out = code("before\n````\nafter", "text")
    assert out.startswith("`````text\n") and out.endswith("\n`````")
    assert fence_for("no ticks") == "```"


def test_code_breaks_the_hidden_marker_but_keeps_text_readable() -> None:
    """``<!--`` is broken inside code (the marker is found by substring), everything else is verbatim."""
    out = code("<!-- evalbot id=default --> @org/team | x")
    assert "<!--" not in out and f"<!-{JOINER}-" in out and "@org/team | x" in out


def test_code_truncates_with_a_note() -> None:
    """Long text is cut and says how much was cut."""
    out = code("x" * 5000, limit=100)
    assert "(4,900 more characters)" in out and len(out) < 200


def test_inline_escapes_structure_and_pings() -> None:
    """Inline text has no newlines, no raw HTML, escaped pipes and punctuation, and no live mentions."""
    out = inline("a | b\n</details> <!-- m --> @org/team #12 `x` *y* [l](u) https://x.y")
    assert "\n" not in out and "</details>" not in out and "<!--" not in out
    assert "\\|" in out and "\\`x\\`" in out and "\\*y\\*" in out and "\\[l\\]" in out
    assert f"@{JOINER}org/team" in out and f"#{JOINER}12" in out and f"https:{JOINER}//" in out


def test_inline_escapes_leading_block_markers() -> None:
    """Text that would start a list or heading is escaped."""
    assert inline("- item") == "\\- item"
    assert inline("1. item") == "1\\. item"
    assert inline("2025-01-01") == "2025-01-01"


def test_cell_shows_a_dash_when_empty_and_respects_limit() -> None:
    """Empty cells are a dash; long ones are cut."""
    assert cell("") == "—" and cell(None) == "—"
    assert len(cell("y" * 500, 80)) < 120


def test_clean_removes_control_and_bidi_characters() -> None:
    """NUL, escape sequences and right-to-left overrides are dropped; CRLF becomes LF."""
    assert clean("a\x00b\x1b[31m\u202ec\r\nd") == "ab[31mc\nd"
    assert clean(None) == "" and clean(3) == "3"


def test_soften_is_idempotent_and_passes_safe_text() -> None:
    """Text printed without a filter loses markers and mentions; already-safe text is unchanged."""
    once = soften("@a <!-- x")
    assert soften(once) == once and soften(Safe("@raw")) == "@raw"
    assert break_marker("<!--<!--").count("<!--") == 0


def test_shorten_and_width() -> None:
    """shorten keeps short text; width counts UTF-16 units (astral characters count twice)."""
    assert shorten("abc", 5) == "abc" and shorten("abc", None) == "abc"
    assert width("a😀") == 3


@given(HOSTILE)
def test_inline_never_breaks_lines_or_opens_html(text: str) -> None:
    """Whatever the input, inline output is one line without raw ``<``, unescaped ``|`` or a live mention."""
    out = inline(text, 500)
    assert "\n" not in out and "<" not in out and ">" not in out
    stripped = out.replace("\\\\", "")
    assert "|" not in stripped.replace("\\|", "")
    assert "@org" not in out and "@user" not in out


@given(HOSTILE)
def test_code_block_always_closes_with_its_own_fence(text: str) -> None:
    """The fence line appears exactly twice (open and close) and no line inside could close it."""
    out = code(text, "text", limit=1000)
    lines = out.split("\n")
    fence = lines[0].removesuffix("text")
    assert lines[-1] == fence and len(fence) >= 3
    assert all(not line.strip().startswith(fence) for line in lines[1:-1])
    assert "<!--" not in out


def test_span_is_one_line_of_code_no_backtick_can_close() -> None:
    """A code span uses more backticks than any run inside and pads text that starts with one."""
    assert span("evalbot baseline --output b.json") == "`evalbot baseline --output b.json`"
    assert span("a `` b\nc") == "```a `` b c```"
    assert span("`x`") == "`` `x` ``"
    assert span("<!-- evalbot -->").count("<!--") == 0 and span("") == ""


def test_html_text_is_escaped_for_raw_html_not_markdown() -> None:
    """Inside <summary> markdown escapes would show, so only HTML is escaped (and pings are still broken)."""
    out = html('refund_damaged </summary></details> "x" @org/team\n#4 https://e.vil')
    assert out.startswith("refund_damaged &lt;/summary&gt;&lt;/details&gt; &quot;x&quot;")
    assert "\\" not in out and "\n" not in out and f"@{JOINER}org" in out and f"#{JOINER}4" in out
    assert f"https:{JOINER}//" in out
