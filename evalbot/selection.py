"""Which eval sets a change can affect: the gate policy's ``affected_by`` and the files a change touched.

The policy (read at the base commit, like the rest of it) may map eval set folders to the repository paths their
results depend on: ``"affected_by": {"evals/billing": ["agents/billing/**", "shared/**"]}``. An eval set is
*affected* by a change when a file under its own folder (the folder holding its file: its cases, its
``test_config.json``) or a file one of its mapped patterns matches changed. A changed file that no mapping covers and
that lies outside every eval set's folder can affect anything, so it makes every eval set affected; so does a policy
without ``affected_by``, and a change whose files could not be listed. The repository's top folder is no eval set's
folder for that rule (a file at the top is "in" it only when it sits there directly): an eval set kept at the top
would otherwise claim every changed file and let shared code affect nothing else.

What is not affected is *carried*: its results are main's (the baseline's), never scored again, counted apart and
never compared. A carried eval set with a changed file of its own is impossible by construction: :func:`select` is
the one place that decides, and :class:`Selection` refuses to hold one (a bug, never an input).

Pure: the changed files come from :func:`evalbot.git.changed_since`, the eval sets' paths from the caller.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from evalbot.errors import InputError, printable

MAX_MAPPED = 1000
"""Eval set folders ``affected_by`` may map."""
MAX_PATTERNS = 200
"""Patterns one eval set folder may list."""
MAX_PATTERN_CHARS = 1000
"""Characters of one pattern or folder."""
MAX_REASONS = 5
"""Changed files named in one eval set's reasons (the count of the rest follows)."""


class AffectedByError(ValueError):
    """A bad ``affected_by`` value; ``parts`` is where, under ``affected_by`` (for the JSON pointer)."""

    def __init__(self, parts: Sequence[str | int], message: str) -> None:
        super().__init__(message)
        self.parts = list(parts)


def _repo_path(raw: object, parts: Sequence[str | int], what: str) -> str:
    """``raw`` as a normalised repository path (POSIX, relative, no ``..``, no trailing ``/``), else AffectedByError."""
    if not isinstance(raw, str) or not raw.strip():
        raise AffectedByError(parts, f"{what} must be a non-empty string, got {printable(repr(raw))[:80]}")
    if len(raw) > MAX_PATTERN_CHARS:
        raise AffectedByError(parts, f"{what} is longer than {MAX_PATTERN_CHARS} characters")
    if "\0" in raw or "\\" in raw or any(ord(ch) < 0x20 for ch in raw):
        raise AffectedByError(parts, f"{what} {printable(raw)!r} holds a backslash or control character; write a "
                                     "repository path with '/' such as agents/billing/**")
    if raw.startswith("/"):
        raise AffectedByError(parts, f"{what} {printable(raw)!r} is absolute; write it relative to the repository's "
                                     "top folder, e.g. agents/billing/**")
    norm = posixpath.normpath(raw)
    if norm == ".." or norm.startswith("../") or "/../" in f"/{raw}/":
        raise AffectedByError(parts, f"{what} {printable(raw)!r} leads out of the repository ('..'); write a path "
                                     "inside it")
    return "" if norm == "." else norm


def parse_affected_by(raw: object) -> dict[str, tuple[str, ...]] | None:
    """The policy's ``affected_by`` (None: no mapping): eval set folder -> repository path patterns (``**`` any
    folders, ``*`` and ``?`` within one name, ``[...]`` a character class; a pattern naming a folder covers what is
    under it). Raises AffectedByError saying what is accepted."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise AffectedByError([], "affected_by must be an object mapping eval set folders to lists of paths, such as "
                                  '{"evals/billing": ["agents/billing/**", "shared/**"]}, got '
                                  f"{type(raw).__name__}")
    if len(raw) > MAX_MAPPED:
        raise AffectedByError([], f"affected_by maps {len(raw)} folders; at most {MAX_MAPPED}")
    out: dict[str, tuple[str, ...]] = {}
    for key, patterns in raw.items():
        folder = _repo_path(key, [str(key)], "an affected_by folder")
        if isinstance(patterns, str) or not isinstance(patterns, Sequence):
            raise AffectedByError([str(key)], f"affected_by {printable(str(key))!r} must be a list of paths, such as "
                                              '["agents/billing/**"], got ' f"{type(patterns).__name__}")
        if len(patterns) > MAX_PATTERNS:
            raise AffectedByError([str(key)], f"affected_by {printable(str(key))!r} lists {len(patterns)} paths; at "
                                              f"most {MAX_PATTERNS}")
        checked = tuple(_repo_path(p, [str(key), i], "an affected_by path") for i, p in enumerate(patterns))
        for i, pattern in enumerate(checked):
            if not pattern:
                raise AffectedByError([str(key), i], "an affected_by path names the whole repository ('.'); leave "
                                                     "the folder out of affected_by instead (no mapping = everything)")
        out[folder] = tuple(dict.fromkeys([*out.get(folder, ()), *checked]))
    return out


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A repository-relative glob as ``glob.glob(recursive=True)`` reads it: ``**`` any folders, ``*``/``?`` within
    one name, ``[...]`` a character class."""
    out, i = "", 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out, i = out + "(?:[^/]*/)*", i + 3
            continue
        if pattern.startswith("**", i):
            out, i = out + ".*", i + 2
            continue
        if ch == "*":
            out += "[^/]*"
        elif ch == "?":
            out += "[^/]"
        elif ch == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1: end]
            out += "[" + ("^" + re.escape(body[1:]) if body.startswith("!") else re.escape(body)) + "]"
            i = end
        else:
            out += re.escape(ch)
        i += 1
    return re.compile(out + r"\Z")


def _matcher(pattern: str) -> re.Pattern[str]:
    """What a mapped pattern covers: the paths it matches and everything under them (``shared`` covers
    ``shared/x.py``, as ``shared/**`` does)."""
    return re.compile(glob_regex(pattern).pattern.removesuffix(r"\Z") + r"(?:/.*)?\Z", re.DOTALL)


def folder_of(path: str) -> str:
    """The folder holding a repository path ("" at the top)."""
    return posixpath.dirname(path)


def in_folder(path: str, folder: str) -> bool:
    """Whether repository path ``path`` is under ``folder``; the top folder ("") holds only what sits in it
    directly (see the module's docstring)."""
    if not folder:
        return "/" not in path
    return path.startswith(folder + "/")


@dataclass(frozen=True)
class SetChoice:
    """One eval set and whether the change can affect it, and why."""

    path: str
    """The eval set file as a repository path."""
    affected: bool
    reasons: tuple[str, ...]
    own: tuple[str, ...] = ()
    """Changed files under its own folder (never any when it is carried)."""


@dataclass(frozen=True)
class Selection:
    """The eval sets of a run, each affected or carried (:func:`select`), in the run's order."""

    eval_sets: tuple[SetChoice, ...]
    changed: tuple[str, ...]
    everything: str | None = None
    """Why every eval set is affected (no mapping, unmapped changed files, changes unknown), or None."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        for choice in self.eval_sets:
            if not choice.affected and (choice.own or any(in_folder(f, folder_of(choice.path)) for f in self.changed)):
                raise AssertionError(f"a bug: {choice.path} would be carried although files of its own changed")

    @property
    def affected(self) -> list[str]:
        """The affected eval sets' paths, in order."""
        return [c.path for c in self.eval_sets if c.affected]

    @property
    def carried(self) -> list[str]:
        """The eval sets the change cannot affect, in order."""
        return [c.path for c in self.eval_sets if not c.affected]


def _named(files: Sequence[str]) -> str:
    shown = ", ".join(files[:MAX_REASONS])
    return shown + (f" and {len(files) - MAX_REASONS} more" if len(files) > MAX_REASONS else "")


def everything(eval_sets: Iterable[str], why: str, changed: Sequence[str] = ()) -> Selection:
    """Every eval set affected, for ``why``."""
    return Selection(tuple(SetChoice(p, True, (why,)) for p in dict.fromkeys(eval_sets)), tuple(changed), why)


def _covers(key: str, path: str) -> bool:
    """Whether ``affected_by``'s folder ``key`` names the eval set at ``path``: its file, its folder or a folder
    above it."""
    return key == path or key == "" or path.startswith(key + "/")


def select(eval_sets: Sequence[str], changed: Sequence[str], affected_by: Mapping[str, Sequence[str]] | None,
           *, always: Sequence[str] = ()) -> Selection:
    """Which of ``eval_sets`` (their files as repository paths) the ``changed`` files (repository paths) can affect
    under ``affected_by`` (the base commit's policy; None: no mapping). ``always``: repository paths that apply to
    every eval set (a config given for all of them): one of them changed affects every eval set."""
    paths = list(dict.fromkeys(eval_sets))
    files = tuple(dict.fromkeys(changed))
    if affected_by is None:
        return everything(paths, "the gate policy has no affected_by mapping, so any change can affect every eval "
                                 "set", files)
    touched = [f for f in files if f in set(always)]
    if touched:
        return everything(paths, f"{_named(touched)} changed, which applies to every eval set", files)
    mapped = {key: [(p, _matcher(p)) for p in patterns] for key, patterns in affected_by.items()}
    covered: set[str] = set()
    by_key: dict[str, list[tuple[str, str]]] = {}
    for key, matchers in mapped.items():
        for f in files:
            hit = next((p for p, m in matchers if m.match(f)), None)
            if hit is not None:
                covered.add(f)
                by_key.setdefault(key, []).append((f, hit))
    folders = {folder_of(p) for p in paths}
    loose = [f for f in files if f not in covered and not any(in_folder(f, d) for d in folders)]
    notes = tuple(f"affected_by names {printable(key)!r}, which holds none of this run's eval sets; check the "
                  "folder's spelling" for key in affected_by if not any(_covers(key, p) for p in paths))
    if loose:
        why = (f"{_named(loose)} changed: no affected_by mapping covers "
               f"{'it' if len(loose) == 1 else 'them'} and {'it is' if len(loose) == 1 else 'they are'} in no eval "
               "set's folder, so every eval set can be affected")
        sel = everything(paths, why, files)
        return Selection(sel.eval_sets, sel.changed, sel.everything, notes)
    out = []
    for path in paths:
        own = tuple(f for f in files if in_folder(f, folder_of(path)))
        reasons: list[str] = []
        if own:
            reasons.append(f"{_named(own)} changed in its folder")
        hits = [(f, p) for key, found in by_key.items() if _covers(key, path) for f, p in found]
        if hits:
            reasons.append(f"{_named([f for f, _ in hits])} changed (affected_by {', '.join(dict.fromkeys(p for _, p in hits))})")
        if not reasons:
            reasons.append("no file of its folder or of its affected_by paths changed")
        out.append(SetChoice(path, bool(own or hits), tuple(reasons), own))
    return Selection(tuple(out), files, None, notes)


def plan_change(eval_sets: Sequence[str], affected_by: Mapping[str, Sequence[str]] | None,
                changed: Callable[[], Sequence[str]], *, policy_error: str | None = None,
                always: Sequence[str] = ()) -> Selection:
    """:func:`select` as both front ends run it: ``affected_by`` is the base commit's policy (``policy_error``: why
    it could not be read), ``changed`` lists the changed files (called only when there is a mapping; an InputError
    from it, git not able to say, makes every eval set affected, saying why). Never fewer eval sets for want of an
    answer: what cannot be known is affected."""
    paths = list(eval_sets)
    if policy_error is not None:
        return everything(paths, f"the gate policy at the base commit could not be read ({policy_error}), so its "
                                 "affected_by is unknown")
    if affected_by is None:
        return select(paths, (), None)
    try:
        files = changed()
    except InputError as exc:
        return everything(paths, f"the changed files could not be listed ({exc}), so any eval set can be affected")
    return select(paths, files, affected_by, always=always)
