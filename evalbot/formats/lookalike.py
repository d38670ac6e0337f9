"""Ids that can pass for another: invisible, default-ignorable, mixed-script and compatibility look-alike characters.

An eval set or case id is data the pull request writes; the gate matches cases by id, so a failing case renamed to
a look-alike ("refund" + U+200B, a Cyrillic "у" inside Latin "refund") shows as new while its original shows as
removed. Such ids are flagged (the comparison's ``invisible_ids``, under the comment's headline) and shown with the
suspicious characters escaped (``ref\\u0443nd``), in the comment, the HTML report and the annotations.

What counts, from the Unicode standard (not from a hand-picked list):

- invisible: general categories Cc, Cf, Co, Cs, Cn, Zl, Zp, Zs other than U+0020, the Hangul fillers and the blank
  Braille pattern (letters that render as blank), and every Default_Ignorable_Code_Point (below: it adds combining
  and variation selectors such as U+034F and U+FE0F, which are Mn);
- mixed script: letters of more than one script in one id (the confusables of UTS #39 are overwhelmingly letters of
  another script drawn like a Latin one), except the combinations UTS #39 calls "highly restrictive" (Latin with
  Han, Hiragana, Katakana, Bopomofo or Hangul, as Japanese, Chinese and Korean write); combining marks take their
  base letter's script;
- compatibility look-alikes: a letter or digit NFKC folds into another (fullwidth ``ｒ``, mathematical ``𝐫``,
  ``ſ``, ligatures), drawn like the plain one.

Python's unicodedata has no script property: a letter's script is the first word of its Unicode name (``LATIN``,
``CYRILLIC``, ``GREEK``; CJK ideographs are ``HAN``), which is how the names are built.

An id written entirely in one other script ("сору", all Cyrillic, for "copy") holds none of these; what gives it away
is another id it reads as: ids of one eval set (or eval sets) whose UTS #39 *skeleton* is the same are confusable
(:func:`confusable_with`), whatever their scripts. The skeleton maps each character to its prototype from Unicode's
``confusables.txt`` (evalbot/data/confusables.json, made by scripts/make_confusables.py).
"""

from __future__ import annotations

import json
import unicodedata
from bisect import bisect_right
from collections.abc import Iterable
from functools import cache
from pathlib import Path

DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)
"""Default_Ignorable_Code_Point, as ranges (first, last), from the Unicode Character Database's
DerivedCoreProperties.txt (Unicode 15.1; unchanged since 14.0 added U+180F): "Generated from Other_Default_Ignorable_
Code_Point + Cf (format characters) + Variation_Selector - White_Space - FFF9..FFFB (interlinear annotation format
characters) - 13430..13440 (Egyptian hieroglyph format characters) - Prepended_Concatenation_Mark". These render as
nothing where not supported."""

_STARTS = tuple(first for first, _ in DEFAULT_IGNORABLE)
_FILLERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
"""Letters and symbols that render as blank (Hangul fillers, the blank Braille pattern)."""
_LAYOUT = frozenset("\t\n\r")
_CJK = frozenset({"HAN", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA", "BOPOMOFO", "HANGUL"})
_WIDTH_PREFIXES = ("FULLWIDTH ", "HALFWIDTH ")


def is_default_ignorable(ch: str) -> bool:
    """Whether ``ch`` has the Default_Ignorable_Code_Point property."""
    code = ord(ch)
    at = bisect_right(_STARTS, code) - 1
    return at >= 0 and code <= DEFAULT_IGNORABLE[at][1]


def is_invisible(ch: str) -> bool:
    """Whether ``ch`` renders as nothing, as blank or reorders text (see the module's docstring)."""
    category = unicodedata.category(ch)
    return (
        category in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp")
        or (category == "Zs" and ch != " ")
        or ch in _FILLERS
        or is_default_ignorable(ch)
    )


def script(ch: str) -> str | None:
    """The script of a letter (first word of its name: ``LATIN``, ``CYRILLIC``...; CJK ideographs ``HAN``); None
    for anything that is not a letter (digits, punctuation, marks: common to every script)."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    name = unicodedata.name(ch, "")
    for prefix in _WIDTH_PREFIXES:
        name = name.removeprefix(prefix)
    if name.startswith(("CJK ", "IDEOGRAPHIC ")):
        return "HAN"
    return name.split(" ", 1)[0] or None


def _mixed(scripts: set[str]) -> bool:
    if len(scripts) < 2:
        return False
    return not (scripts <= _CJK | {"LATIN"} and not {"HANGUL", "BOPOMOFO"} <= scripts)


def _compatibility_lookalike(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "LN" and unicodedata.normalize("NFKC", ch) != ch


def _plain_ascii(text: str) -> bool:
    """Printable ASCII only (U+0020 to U+007E): no invisible, default-ignorable or compatibility character, and
    every letter Latin, so nothing in it is suspicious (most ids; checked in C instead of character by character)."""
    return text.isascii() and text.isprintable()


def suspicious(text: str) -> list[bool]:
    """For each character of ``text``: whether it is what makes ``text`` a possible look-alike. Invisible and
    compatibility characters always; in a mixed-script id, every letter outside its main script (the most frequent
    one, Latin on a tie)."""
    if _plain_ascii(text):
        return [False] * len(text)
    marks = [is_invisible(ch) or _compatibility_lookalike(ch) for ch in text]
    scripts = [script(ch) for ch in text]
    counts: dict[str, int] = {}
    for name in scripts:
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    if _mixed(set(counts)):
        main = max(counts, key=lambda s: (counts[s], s == "LATIN"))
        marks = [m or (s is not None and s != main) for m, s in zip(marks, scripts, strict=True)]
    return marks


def has_lookalike(text: str) -> bool:
    """Whether ``text`` holds an invisible, default-ignorable, compatibility or other-script look-alike character:
    an id with one can pass for another."""
    return not _plain_ascii(text) and any(suspicious(text))


def _escape(ch: str) -> str:
    return f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}"


def escape_lookalike(text: str) -> str:
    """``text`` with every suspicious character (and, then, backslashes) written as an escape: ``refund\\u200b``,
    ``ref\\u0443nd``. Text without one is returned as it is."""
    if _plain_ascii(text):
        return text
    marks = suspicious(text)
    if not any(marks):
        return text
    return "".join(_escape(ch) if mark else "\\\\" if ch == "\\" else ch for ch, mark in zip(text, marks, strict=True))


def escape_invisible(text: str) -> str:
    """``text`` with its invisible and default-ignorable characters escaped (tabs and line breaks kept), for text
    that is not an id (messages, annotations): a zero-width space or a bidi override never reaches the reader raw,
    while other scripts stay as written."""
    if not any(is_invisible(ch) and ch not in _LAYOUT for ch in text):
        return text
    return "".join(_escape(ch) if is_invisible(ch) and ch not in _LAYOUT else ch for ch in text)


CONFUSABLES = Path(__file__).resolve().parent.parent / "data" / "confusables.json"
"""UTS #39's mapping of each confusable character to its prototype (``{"source": ..., "prototypes": {char: text}}``),
made from Unicode's confusables.txt by scripts/make_confusables.py."""


@cache
def _prototypes() -> dict[int, str]:
    """The confusables table as a ``str.translate`` table (read once, when a skeleton is first needed)."""
    data = json.loads(CONFUSABLES.read_text(encoding="utf-8"))
    return {ord(source): target for source, target in data["prototypes"].items()}


@cache
def _ascii_prototypes() -> tuple[tuple[str, str], ...]:
    """The table's ASCII sources only (``0`` → ``O``, ``1``/``I``/``|`` → ``l``, ``m`` → ``rn``...): all an ASCII id
    can hold. No prototype holds a source, so replacing them one after the other is the mapping."""
    return tuple((chr(code), target) for code, target in _prototypes().items() if code < 0x80)


def skeleton(text: str) -> str:
    """UTS #39's skeleton of ``text``: NFD, default-ignorable characters removed, each character replaced by its
    prototype, NFD again. Two strings with the same skeleton are confusable (``сору`` and ``copy``, ``rn`` and
    ``m``)."""
    if text.isascii():  # NFD leaves ASCII as it is: only the few ASCII sources can change it (str.replace and
        out = text         # ``in`` run in C: 5x faster than str.translate's per-character lookups)
        for source, target in _ascii_prototypes():
            if source in out:
                out = out.replace(source, target)
        return out if out.isascii() else unicodedata.normalize("NFD", out)
    decomposed = unicodedata.normalize("NFD", text)
    visible = "".join(ch for ch in decomposed if not is_default_ignorable(ch))
    return unicodedata.normalize("NFD", visible.translate(_prototypes()))


def confusable_with(ids: Iterable[str]) -> dict[str, str]:
    """Among ``ids``, each id whose skeleton is another (different) id's, with an id it can pass for. In a group of
    confusable ids the plain printable ASCII one (the first such) is taken as the original and every other id of the
    group is returned with it; a group without one returns every id but its first."""
    first: dict[str, str] = {}
    groups: dict[str, list[str]] = {}
    for id_ in ids:
        key = skeleton(id_)
        seen = first.setdefault(key, id_)
        if seen != id_:
            members = groups.setdefault(key, [seen])
            if id_ not in members:
                members.append(id_)
    out: dict[str, str] = {}
    for members in groups.values():
        original = next((m for m in members if _plain_ascii(m)), members[0])
        out.update((m, original) for m in members if m != original)
    return out


def escape_confusable(text: str) -> str:
    """``text`` as :func:`escape_lookalike` writes it, with every other character outside ASCII that has a
    prototype escaped too (``\\u0441\\u043e\\u0440\\u0443`` for an all-Cyrillic ``сору``): for an id
    :func:`confusable_with` found, where the single-script letters are what passes for another id."""
    if text.isascii():
        return escape_lookalike(text)
    table = _prototypes()
    marks = [m or ord(ch) in table for ch, m in zip(text, suspicious(text), strict=True)]
    return "".join(_escape(ch) if mark else "\\\\" if ch == "\\" else ch for ch, mark in zip(text, marks, strict=True))
