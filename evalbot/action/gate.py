"""The gate's own settings on a pull request: read at the PR's base commit, like the baseline.

Everything in a pull request's tree is the author's to change, including the ``evalbot`` section of
``test_config.json`` (``fail_on``, ``tolerance``, ``alpha``, ``block_inconclusive``, ``judge_failures``,
``block_flaky``, ``comment_template``) and the comment template itself. So on ``pull_request`` / ``pull_request_target`` runs the
section and the template come from the base commit (the contents API, else ``git show``; unreadable is exit 3,
never a fallback to the PR's copy). The PR's own section is still checked (a broken one would break main after the
merge) and compared with the base's: every difference is a notice in the comment, taking effect after the merge.
"""

from __future__ import annotations

import glob
import json
import posixpath
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evalbot.compare.gate import POLICY_KEYS, GatePolicy
from evalbot.errors import InputError
from evalbot.forge.base import ForgeUnavailable
from evalbot.load import DATASET_SUFFIXES, EVAL_SET_SUFFIXES, is_eval_set_name, normal_key, one_section
from evalbot.render.template_files import MAX_TEMPLATE_BYTES, join_inside, template_relpath, template_setting

ReadAt = Callable[[str, str], "str | None"]
"""``read(path, what)``: the text of a repository path at the base commit, None when absent there."""


@dataclass
class GateSettings:
    """The policy and comment template in force, and what the pull request would change in them."""

    policy: GatePolicy
    template: str | None
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    budget_changes: list[tuple[str, str]] = field(default_factory=list)
    """Budgets of the base commit's policy that the pull request removes or loosens (yardstick changes)."""
    pr_budgets: dict[str, str] | None = None
    """The pull request's own config's budgets (a baseline update recording them accepts ``budget_changes``)."""
    error: str | None = None
    """Why the base commit's settings could not be read (the run then fails closed, verdict ``error``)."""


def repo_path(path: Path | str, root: Path) -> str | None:
    """``path`` as a repository-relative POSIX path, or None when it lies outside the checkout."""
    p = Path(path)
    try:
        rel = (p if p.is_absolute() else root / p).resolve().relative_to(root.resolve())
    except (ValueError, OSError, RuntimeError):
        return None
    return rel.as_posix()


ListAt = Callable[[str], "list[tuple[str, str]] | None"]
"""``list(path)``: the ``(name, type)`` entries of a repository folder at the base commit, None when absent there."""

MAX_BASE_FOLDERS = 500
"""Folders listed at most while finding the base commit's eval sets (then the run fails closed, naming the fix)."""


def _glob_regex(pattern: str) -> re.Pattern[str]:
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


def _at_base(raw: str, root: Path) -> str | None:
    """An input path as a repository path at the base commit: relative paths are normalised as text (the PR's
    checkout, where a folder may have become a symlink, is not consulted); absolute ones must lie in the checkout."""
    if Path(raw).is_absolute():
        return repo_path(raw, root)
    rel = posixpath.normpath(PurePosixPath(raw).as_posix())
    return None if rel == ".." or rel.startswith("../") else rel


def base_eval_files(list_at: ListAt, eval_sets: list[str], root: Path) -> list[str]:
    """The eval set files the base commit has under the run's ``eval-sets`` inputs (files, folders searched
    recursively, glob patterns), as repository paths: where the base commit's own configs are, whatever the pull
    request moved. Raises ForgeUnavailable when a folder cannot be listed (the caller fails closed)."""
    listed = 0

    def walk(folder: str) -> list[str]:
        nonlocal listed
        found: list[str] = []
        stack = [folder]
        while stack:
            here = stack.pop()
            listed += 1
            if listed > MAX_BASE_FOLDERS:
                raise ForgeUnavailable("find the base commit's eval sets", f"more than {MAX_BASE_FOLDERS} folders "
                                       "under the eval-sets inputs; name the config holding the gate policy with "
                                       "the config input")
            for name, kind in sorted(list_at(here) or []):
                full = f"{here}/{name}" if here else name
                if kind == "dir":
                    stack.append(full)
                elif kind == "file" and is_eval_set_name(name):
                    found.append(full)
        return sorted(found)

    out: list[str] = []
    for raw in eval_sets:
        if glob.has_magic(raw):
            pattern = _at_base(raw, root)
            if pattern is None:
                continue
            parts = PurePosixPath(pattern).parts
            fixed = next((i for i, part in enumerate(parts) if glob.has_magic(part)), len(parts))
            prefix = PurePosixPath(*parts[:fixed]).as_posix() if fixed else ""
            wanted, regex = EVAL_SET_SUFFIXES, _glob_regex(pattern.removeprefix("./"))
            hits = [f for f in walk("" if prefix == "." else prefix) if regex.match(f) and f.endswith(wanted)]
        else:
            rel = _at_base(raw, root)
            if rel is None:
                continue
            entries = list_at("" if rel == "." else rel)
            if entries is not None:
                hits = walk("" if rel == "." else rel)
            else:  # a file, or nothing there: a named eval set file counts (its config is beside it)
                hits = [rel] if rel.endswith((".json", *DATASET_SUFFIXES)) else []
        out += [f for f in hits if f not in out]
    return out


def config_candidates(config: str | None, eval_files: list[str], root: Path) -> list[str]:
    """Where the config with the ``evalbot`` section may be at the base commit: the ``config`` input, else the
    ``test_config.json`` beside each of the base commit's eval sets (repository paths), in the order the run looks."""
    raw = [config] if config else [(PurePosixPath(f).parent / "test_config.json").as_posix() for f in eval_files]
    out: list[str] = []
    for p in raw:
        rel = _at_base(p, root)
        if rel is not None and rel not in out:
            out.append(rel)
    return out


def settings_at(read: ReadAt, candidates: list[str], label: Callable[[str], str]) -> tuple[dict[str, Any], str | None]:
    """The ``evalbot`` section of the candidate configs at the base commit (see :func:`one_section`; unparseable
    ones are skipped, as the run itself skips them)."""
    sections: list[tuple[dict[str, Any], str]] = []
    for path in candidates:
        text = read(path, "config")
        if text is None:
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        extras = data.get("evalbot") if isinstance(data, dict) else None
        if isinstance(extras, dict) and extras:
            sections.append((dict(extras), path))
        if extras is not None and not isinstance(extras, dict):
            raise InputError(label(path), "/evalbot", "expected an object of evalbot settings (at the base commit)")
    return one_section(sections, label)


def template_at(
    read: ReadAt, *, template_input: str | None, settings: Mapping[str, Any], config: str | None,
    label: Callable[[str], str],
) -> tuple[str | None, str | None]:
    """The comment template at the base commit and a note when the one named is not there yet."""
    if template_input:
        rel = template_relpath(template_input, where="input comment-template")
    else:
        where = label(config) if config else "config"
        found = template_setting(settings, where)
        if found is None:
            return None, None
        raw, pointer = found
        rel = join_inside(PurePosixPath(config or ".").parent, raw, where=where, pointer=pointer)
    text = read(rel.as_posix(), "comment template")
    if text is None:
        return None, (f"The comment template {rel.as_posix()} is not on the base commit yet; the default template is "
                      "used until this pull request is merged.")
    if len(text.encode("utf-8")) > MAX_TEMPLATE_BYTES:
        raise InputError(label(rel.as_posix()), "", f"comment template larger than {MAX_TEMPLATE_BYTES:,} bytes")
    return text, None


def _shown(value: object) -> str:
    if value is None:
        return "(not set)"
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def policy_changes(
    base: Mapping[str, Any], pr: Mapping[str, Any], base_policy: GatePolicy, pr_policy: GatePolicy
) -> list[str]:
    """``fail_on regression → never`` for every setting the pull request changes (policy keys by their effect)."""
    base_n = {normal_key(str(k)): v for k, v in base.items()}
    pr_n = {normal_key(str(k)): v for k, v in pr.items()}
    out: list[str] = []
    for key in sorted(set(base_n) | set(pr_n)):
        if key in POLICY_KEYS:
            old, new = getattr(base_policy, key), getattr(pr_policy, key)
        else:
            old, new = base_n.get(key), pr_n.get(key)
        if old != new:
            out.append(f"{key} {_shown(old)} → {_shown(new)}")
    return out
