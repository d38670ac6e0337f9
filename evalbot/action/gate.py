"""The gate's own settings on a pull request: read at the PR's base commit, like the baseline.

Everything in a pull request's tree is the author's to change, including the ``evalbot`` section of
``test_config.json`` (``fail_on``, ``tolerance``, ``alpha``, ``block_inconclusive``, ``judge_failures``,
``block_flaky``, ``comment_template``) and the comment template itself. So on ``pull_request`` / ``pull_request_target`` runs the
section and the template come from the base commit (the contents API, else ``git show``; unreadable is exit 3,
never a fallback to the PR's copy). The PR's own section is still checked (a broken one would break main after the
merge) and compared with the base's: every difference is a notice in the comment, taking effect after the merge.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from evalbot.compare.gate import POLICY_KEYS, GatePolicy, normal_key
from evalbot.errors import InputError
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


def config_candidates(config: str | None, eval_files: list[Path], root: Path) -> list[str]:
    """Where the config with the ``evalbot`` section may be: the ``config`` input, else the ``test_config.json``
    beside each eval set, in the order the run looks for it."""
    raw = [Path(config)] if config else [f.parent / "test_config.json" for f in eval_files]
    out: list[str] = []
    for p in raw:
        rel = repo_path(p, root)
        if rel is not None and rel not in out:
            out.append(rel)
    return out


def settings_at(read: ReadAt, candidates: list[str], label: Callable[[str], str]) -> tuple[dict[str, Any], str | None]:
    """The first candidate config at the base commit that has an ``evalbot`` section (unparseable ones are skipped,
    as the run itself skips them)."""
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
            return dict(extras), path
        if extras is not None and not isinstance(extras, dict):
            raise InputError(label(path), "/evalbot", "expected an object of evalbot settings (at the base commit)")
    return {}, None


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
