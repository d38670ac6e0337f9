"""Neutralise untrusted text (agent output, judge rationales, case ids) for GitHub-flavoured markdown comments.

Every function returns :class:`Safe` text that cannot open or close structure the comment relies on: code fences
are longer than any backtick run inside them; inline text has HTML and markdown punctuation escaped and no line
breaks (so it cannot end a table row or a ``<details>`` element); ``<!--`` is always broken, even inside code, so
nothing can forge the comment's hidden marker (which is found by substring search); ``@user``/``@org/team``
mentions and ``#123`` references get an invisible joiner so they never notify or cross-link. Text inside raw HTML
(``<summary>``) is HTML-escaped instead of markdown-escaped, because markdown is not processed there.
"""

from __future__ import annotations

import re
import secrets

JOINER = "\u200d"
"""Zero-width joiner: invisible, but breaks mention, reference and marker patterns."""

_OPEN, _CLOSE = "\ue000", "\ue001"
"""Private-use characters around a trusted sha's code span until the render is finished (see sha); clean removes
them from every other text, so only the sha filter can write them."""
_NONCE = secrets.token_hex(16)
"""This process's secret in each trusted sha token: text from a PR (made before this process started) cannot hold a
token soften or finish would take for a trusted one, even printed without a filter."""
_TOKEN = re.compile(f"{_OPEN}{_NONCE}(`[0-9a-f]{{7,64}}`){_CLOSE}")
_HEX = re.compile(r"[0-9A-Fa-f]{7,64}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ue000\ue001]")
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_REFERENCE = re.compile(r"#(?=\d)|(?<![A-Za-z0-9])(?i:gh)-(?=\d)")
"""``#1``, ``owner/repo#1`` (and ``&#35;``-style entities, which would decode to ``#``), ``GH-1``."""
_SHA = re.compile(r"(?<![A-Za-z0-9.])[0-9A-Fa-f]{7,}(?![A-Za-z0-9])")
"""Words of 7 or more hex digits: GitHub links them as commit shas."""
_ENTITY = re.compile(r"&(?=#|num;|commat;)", re.IGNORECASE)
_URL = re.compile(r"(?i)(?<=[a-z]):(?=//)|(?<![\w.])www\.")
_BACKTICKS = re.compile(r"`+")
_INLINE_ESCAPES = str.maketrans({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "|": "\\|", "`": "\\`", "*": "\\*", "_": "\\_",
    "[": "\\[", "]": "\\]", "~": "\\~", "#": "\\#", "$": "\\$",
})
_LEADING = re.compile(r"^([-+=]|\d+(?=[.)]))")


class Safe(str):
    """Text that is already neutralised (the template environment outputs it unchanged)."""

    __slots__ = ()


def clean(value: object) -> str:
    """Text with Unix newlines and no control or bidirectional-override characters (tabs and newlines kept)."""
    text = value if isinstance(value, str) else "" if value is None else str(value)
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def _escape_leading(match: re.Match[str]) -> str:
    # "- x", "+ x", "= x" would start a list or heading; "1. x" / "1) x" an ordered list.
    lead = match.group(0)
    return "\\" + lead if not lead[0].isdigit() else lead + "\\"


def break_marker(text: str) -> str:
    """Break every ``<!--`` so no HTML comment (and no copy of the hidden marker) can appear."""
    return text.replace("<!--", f"<!-{JOINER}-")


def _break_sha(match: re.Match[str]) -> str:
    word = match.group(0)
    return JOINER.join(word[i:i + 6] for i in range(0, len(word), 6))  # no run of 7 hex digits is left


def no_pings(text: str) -> str:
    """Break @-mentions (``@user``, ``@org/team``) and references GitHub autolinks: ``#123``, ``owner/repo#123``,
    ``GH-123`` and commit shas (idempotent)."""
    text = _MENTION.sub("@" + JOINER, text)
    text = _REFERENCE.sub(lambda m: m.group(0) + JOINER, text)
    return _SHA.sub(_break_sha, text)


def no_links(text: str) -> str:
    """Break URLs GitHub would autolink (``scheme://`` and ``www.``)."""
    return _URL.sub(lambda m: ":" + JOINER if m.group(0) == ":" else m.group(0)[:3] + JOINER + ".", text)


def _soften(text: str) -> str:
    # entities such as &#35; or &commat; would decode to a live "#1" or "@user": their "&" is escaped
    return no_pings(break_marker(_ENTITY.sub("&amp;", clean(text))))


def soften(value: object) -> Safe:
    """The minimum for any text a template prints without a filter: no marker, no mention, no control chars; a
    trusted sha's token (see sha) is kept as it is, for a macro's output goes through here too."""
    if isinstance(value, Safe):
        return value
    text = value if isinstance(value, str) else clean(value)
    parts = _TOKEN.split(text)  # [text, sha span, text, ...]: only the tokens this process made
    return Safe("".join(
        _OPEN + _NONCE + part + _CLOSE if i % 2 else _soften(part) for i, part in enumerate(parts)))


def sha(value: object, length: int = 12) -> Safe:
    """A commit sha a template trusts (the baseline's, the run's) as a code span, copyable (no joiner: GitHub links
    no sha inside code); anything but 7 to 64 hex digits is inline text instead (broken as any other). The span is
    wrapped in a token of this process until finish unwraps it, so that soften, which breaks every other run of hex
    digits in a macro's output, leaves it alone. ``length``: the digits shown (at least 7)."""
    text = value if isinstance(value, str) else ""
    if not _HEX.fullmatch(text):
        return inline(value, 64)
    return Safe(f"{_OPEN}{_NONCE}`{text[:max(7, length)].lower()}`{_CLOSE}")


def finish(text: str) -> str:
    """A rendered comment with each trusted sha token (see sha) unwrapped to its code span. Any other private-use
    character of the tokens (none can come from a filter: clean removes them) becomes a joiner, which never joins
    two runs of hex digits into one."""
    text = _TOKEN.sub(lambda m: m.group(1), text)
    return text.replace(_OPEN, JOINER).replace(_CLOSE, JOINER)


def shorten(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters with a note of how much was cut (None: no limit)."""
    if limit is None or len(text) <= limit:
        return text
    cut = len(text) - limit
    return text[:limit].rstrip() + f" … ({cut:,} more characters)"


def _escaped(text: str, first: bool = True) -> str:
    """Inline text escaped (``first``: the piece that starts the line, where ``- x`` would start a list)."""
    text = text.translate(_INLINE_ESCAPES)
    return no_links(no_pings(_LEADING.sub(_escape_leading, text) if first else text))


def inline(value: object, limit: int | None = 200, shas: object = ()) -> Safe:
    """One line of escaped text for prose, list items and table cells. ``shas``: commit shas evalbot trusts (the
    run's, the baseline's, the carried eval sets'); a word of 7 to 64 hex digits that begins one of them is shown
    as the sha filter shows it (a copyable code span, no joiner), every other run of hex digits is broken as usual.
    Anything but a list of hex strings trusts nothing."""
    text = shorten(" ".join(clean(value).split()), limit)
    trusted = [s.lower() for s in shas if isinstance(s, str) and _HEX.fullmatch(s)] if isinstance(
        shas, list | tuple) else []
    if not trusted:
        return Safe(_escaped(text))
    out: list[str] = []
    at = 0
    for match in _SHA.finditer(text):
        word = match.group(0)
        if len(word) <= 64 and any(t.startswith(word.lower()) for t in trusted):
            out += [_escaped(text[at:match.start()], not out), sha(word, len(word))]
            at = match.end()
    out.append(_escaped(text[at:], not out))
    return Safe("".join(out))


def html(value: object, limit: int | None = 200) -> Safe:
    """One line of text inside raw HTML (e.g. ``<summary>``), where markdown escapes would show: HTML-escaped only."""
    text = shorten(" ".join(clean(value).split()), limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")
    return Safe(no_links(no_pings(text)))


def cell(value: object, limit: int | None = 80) -> Safe:
    """A table cell: inline text (``|`` escaped, no newlines); an empty value shows as a dash."""
    out = inline(value, limit)
    return out if out else Safe("—")


def _longest_backtick_run(text: str) -> int:
    return max((len(m.group(0)) for m in _BACKTICKS.finditer(text)), default=0)


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (at least three)."""
    return "`" * max(3, _longest_backtick_run(text) + 1)


def code(value: object, lang: str = "", limit: int | None = 2000) -> Safe:
    """A fenced code block that shows ``value`` verbatim and cannot be closed early.

    ``lang`` comes from templates only (letters, digits, ``-`` and ``+``). Mentions inside code do not notify, so
    they are left alone; ``<!--`` is broken because the hidden marker is matched as a plain substring.
    """
    text = break_marker(shorten(clean(value), limit)).rstrip("\n")
    info = re.sub(r"[^A-Za-z0-9+-]", "", lang)
    fence = fence_for(text)
    return Safe(f"{fence}{info}\n{text}\n{fence}")


def span(value: object, limit: int | None = 200) -> Safe:
    """An inline code span (one line) that no backtick inside can close."""
    text = break_marker(shorten(" ".join(clean(value).split()), limit))
    ticks = "`" * (_longest_backtick_run(text) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return Safe(f"{ticks}{pad}{text}{pad}{ticks}") if text else Safe("")


def width(text: str) -> int:
    """Display-agnostic size GitHub's limits are most likely to count: UTF-16 code units (≥ characters)."""
    return len(text.encode("utf-16-le")) // 2
