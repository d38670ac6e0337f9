"""The gate's own settings at a base commit, read like the baseline: one implementation under both front ends.

Everything in a change's tree is its author's to change, including the ``evalbot`` section of ``test_config.json``
(``fail_on``, ``tolerance``, ``alpha``, ``yardstick_changes``, ``budgets``, ``comment_template``, ...) and the
comment template itself. So the Action's ``pull_request`` runs, and ``evalbot compare --baseline REF:PATH``, take the
section and the template at the base commit (``REF``), read through the callables they are handed (the Action: the
contents API, else ``git show``; the command line: ``git show`` / ``git ls-tree``). Unreadable there is a verdict
``error`` (exit 3), never a fallback to the change's own copy. The change's own section is still checked (a broken
one would break main after the merge) and compared with the base's: every difference is a notice, taking effect
after the merge; a loosened budget is a yardstick change its baseline update can accept.
"""

from __future__ import annotations

import difflib
import glob
import json
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel

from evalbot.compare.baseline import DEFAULT_BASELINE_PATH, Baseline, parse_baseline
from evalbot.compare.efficiency import loosened_budgets
from evalbot.compare.gate import POLICY_KEYS, GatePolicy, policy_from_settings
from evalbot.errors import InputError
from evalbot.forge.base import ForgeError, ForgeUnavailable
from evalbot.git import GitRunner, git_list, git_show
from evalbot.load import DATASET_SUFFIXES, EVAL_SET_SUFFIXES, is_eval_set_name, normal_key, one_section
from evalbot.render.template_files import MAX_TEMPLATE_BYTES, join_inside, template_relpath, template_setting
from evalbot.selection import glob_regex

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
            wanted, regex = EVAL_SET_SUFFIXES, glob_regex(pattern.removeprefix("./"))
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
        except (ValueError, RecursionError):  # not JSON, or nested past Python's recursion limit
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
    if isinstance(value, BaseModel):
        value = value.model_dump(exclude_none=True)
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


def label_at(ref: str, path: str) -> str:
    """How ``path`` at commit ``ref`` is named in messages (``REF:PATH``, a full commit sha shortened; a branch or
    tag name as it is)."""
    return f"{ref[:12] if re.fullmatch(r'[0-9a-f]{40}|[0-9a-f]{64}', ref) else ref}:{path}"


def read_by_git(git: GitRunner, ref: str, path: str, what: str, *, who: str = "git") -> str | None:
    """The text of ``path`` at ``ref`` with ``git show`` (None: absent there); git failing (the commit not in the
    checkout, no repository) raises ForgeUnavailable naming ``who`` could not read it: the caller fails closed."""
    try:
        return git_show(ref, path, git=git)
    except InputError as exc:
        raise ForgeUnavailable(f"read the {what}", f"{who} could not read {label_at(ref, path)}: {exc.message}") from exc


def list_by_git(git: GitRunner, ref: str, path: str, *, who: str = "git") -> list[tuple[str, str]] | None:
    """The entries of folder ``path`` ("" for the root) at ``ref`` with ``git ls-tree`` (None: no folder there);
    git failing raises ForgeUnavailable, never "absent"."""
    try:
        return git_list(ref, path, git=git)
    except InputError as exc:
        raise ForgeUnavailable(f"list {path or 'the root'}",
                               f"{who} could not list {label_at(ref, path or '.')}: {exc.message}") from exc


MAX_SIMILAR = 5
"""Files named in a "did you mean" of a missing baseline."""


def similar_baselines(list_at: ListAt, path: str) -> list[str]:
    """Other ``*.json`` files in the baseline's folder and the default baseline's (at the repository's root, only
    those named like a baseline), as ``list_at`` lists them at a commit: what a mistyped baseline path may have
    meant, the closest name first. A hint: a folder that cannot be listed adds nothing."""
    folders = dict.fromkeys(PurePosixPath(p).parent.as_posix() for p in (path, DEFAULT_BASELINE_PATH))
    found: list[str] = []
    for folder in folders:
        where = "" if folder == "." else folder
        try:
            entries = list_at(where) or []
        except ForgeError:
            continue
        for name, kind in sorted(entries):
            full = f"{where}/{name}" if where else name
            if (kind == "file" and name.endswith(".json") and full != path and full not in found
                    and (where or "baseline" in name.lower())):
                found.append(full)
    found.sort(key=lambda f: -difflib.SequenceMatcher(None, f, path).ratio())  # stable: equals keep their order
    return found[:MAX_SIMILAR]


def baseline_by_git(git: GitRunner, ref: str, path: str, *, tried: str = "") -> tuple[Baseline | None, str | None]:
    """The baseline at ``ref`` read with ``git show`` and None, or None and why one that may exist could not be read
    (``tried``: what failed before git, said first). "No baseline" (None, None) only when git saw the path absent at a
    commit it has; a file there that is not a baseline raises InputError (exit 2)."""
    try:
        text = git_show(ref, path, git=git)
    except InputError as exc:
        return None, f"{tried}git could not read it{' either' if tried else ''}: {exc.message}"
    return (None if text is None else parse_baseline(text, label_at(ref, path))), None


@dataclass(frozen=True)
class ChangeSide:
    """The change's own gate settings (a pull request's tree, the working tree): untrusted, checked, compared."""

    settings: dict[str, Any]
    """Its config's ``evalbot`` section."""
    config: str | None
    """That config as a repository path (None: no section, or outside the repository)."""
    policy: GatePolicy
    template: str | None
    files: list[str]
    """Its eval set files as repository paths."""


def gate_at_base(
    read: ReadAt, list_at: ListAt, *, label: Callable[[str], str], root: Path, eval_sets: Sequence[str],
    config: str | None, template_input: str | None, overrides: Mapping[str, Any], change: ChangeSide,
    no_config: str, template_given: str | None = None,
) -> GateSettings:
    """The gate of a change measured against a base commit: policy and template from the base commit (``read`` and
    ``list_at`` answer for it, raising ForgeUnavailable when they cannot), the front end's ``overrides`` on top; the
    change's own section and template compared with them, every difference a notice.

    Which configs count is decided in the base tree: the ``test_config.json`` beside each eval set the base commit
    has under the same ``eval_sets`` inputs (a change that moves its eval sets and their config elsewhere must not shed
    the policy), then those beside the change's eval sets as they are at the base commit; or ``config``, at the base
    commit. Two different sections among them are an input error (:func:`one_section`). ``template_input``: a
    template named by the front end (a repository path, read at the base commit); ``template_given``: the text of
    one from outside the repository (the command line's own file), used as it is. ``no_config``: the policy's source
    when no config has a section."""
    try:
        base_files = [] if config else base_eval_files(list_at, list(eval_sets), root)
        candidates = config_candidates(config, base_files + [f for f in change.files if f not in base_files], root)
        base_settings, base_config = settings_at(read, candidates, label)
        policy = policy_from_settings(base_settings, source=label(base_config) if base_config else no_config,
                                      overrides=overrides)
        template: str | None = template_given
        note: str | None = None
        if template_given is None:
            template, note = template_at(read, template_input=template_input, settings=base_settings,
                                         config=base_config, label=label)
    except ForgeUnavailable as exc:  # fail closed: the default policy, and the run's verdict is error (exit 3)
        return GateSettings(policy=GatePolicy(), template=None, error=str(exc))
    changes = policy_changes(base_settings, change.settings, policy, change.policy)
    notes = [note] if note else []
    if base_config is not None and change.config != base_config:
        notes.insert(0, f"The gate policy is the base commit's {base_config} (the config of its eval sets there); "
                        f"this PR's eval sets use {change.config or 'no evalbot section'}.")
    if template != change.template and not any(c.startswith("comment_template ") for c in changes):
        changes.append("the comment template's text")
    return GateSettings(policy=policy, template=template, changes=changes, notes=notes,
                        budget_changes=loosened_budgets(policy.budgets, change.policy.budgets),
                        pr_budgets=dict(change.policy.budgets))
