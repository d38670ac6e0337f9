"""The workspace as both stages read it: input paths, the gate policy and template, the baseline at a commit."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalbot.action.settings import ActionInputs
from evalbot.basecommit.gate import baseline_by_git, label_at, list_by_git
from evalbot.basecommit.gate import similar_baselines as similar_at
from evalbot.compare.baseline import (
    Baseline,
    parse_baseline,
)
from evalbot.compare.gate import GatePolicy, policy_from_settings
from evalbot.forge.base import Forge, ForgeError
from evalbot.git import GitResult, run_git
from evalbot.render.template_files import comment_template_text

log = logging.getLogger("evalbot")


@dataclass(frozen=True)
class Workspace:
    """Paths as the inputs give them (relative to GITHUB_WORKSPACE) and as annotations need them."""

    root: Path

    def path(self, raw: str) -> Path:
        p = Path(raw)
        return p if p.is_absolute() else self.root / p

    def relative(self, raw: str) -> str:
        p = Path(raw)
        if not p.is_absolute():
            return p.as_posix()
        try:
            return p.resolve().relative_to(self.root.resolve()).as_posix()
        except ValueError:
            return raw

    def git(self, args: list[str]) -> GitResult:
        return run_git(args, cwd=self.root)


def eval_paths(inputs: ActionInputs) -> list[str]:
    """Eval set inputs as given: relative to the workspace (the working directory), so reports show them so."""
    return list(inputs.eval_sets)


def policy_overrides(inputs: ActionInputs) -> dict[str, Any]:
    """The inputs that override the config's ``evalbot`` policy keys (None: not given)."""
    return {"fail_on": inputs.fail_on, "tolerance": inputs.tolerance, "judge_failures": inputs.judge_failures,
            "block_flaky": inputs.block_flaky, "sampling": inputs.sampling, "resample_split": inputs.resample_split}


def policy_and_template(
    inputs: ActionInputs, ws: Workspace, section: tuple[dict[str, Any], Path | None]
) -> tuple[GatePolicy, str | None]:
    """The gate policy (inputs override the config's ``evalbot`` section) and the comment template text."""
    settings, config_path = section
    overrides = policy_overrides(inputs)
    policy = policy_from_settings(settings, source=str(config_path or "action inputs"), overrides=overrides)
    template = comment_template_text(
        inputs.comment_template, settings, config_path, root=ws.root, input_name="comment-template"
    )
    return policy, template


def read_baseline_at(forge: Forge | None, ws: Workspace, path: str, ref: str) -> tuple[Baseline | None, str | None]:
    """The baseline at commit ``ref`` and None, or None and why a baseline that may exist could not be read.

    The contents API first, ``git show`` when GitHub cannot answer. "No baseline" (None, None) only when one of
    them saw the path absent at a commit it has; anything else fails closed (the gate's verdict is then ``error``).
    """
    label = label_at(ref, path)
    api_error = None
    if forge is not None:
        try:
            text = forge.read_file(path, ref=ref)
            return (None if text is None else parse_baseline(text, label)), None
        except ForgeError as exc:
            api_error = str(exc)
            log.warning("evalbot: reading the baseline through the API failed (%s); trying git show", exc)
    api = f"the contents API failed ({api_error}); " if api_error else "no github-token for the contents API; "
    return baseline_by_git(ws.git, ref, path, tried=api)


def list_at(forge: Forge | None, ws: Workspace, path: str, ref: str) -> list[tuple[str, str]] | None:
    """The entries of directory ``path`` ("" for the root) at commit ``ref`` (None: no directory there), listed like
    the baseline is read: the contents API first, ``git ls-tree`` when GitHub cannot answer; neither answering
    raises ForgeUnavailable (exit 3), never "absent"."""
    if forge is not None:
        try:
            return forge.list_directory(path, ref=ref)
        except ForgeError as exc:
            log.warning("evalbot: listing %s through the API failed (%s); trying git", path or "the root", exc)
    return list_by_git(ws.git, ref, path, who="neither the API nor git")


def similar_baselines(forge: Forge | None, ws: Workspace, path: str, ref: str) -> list[str]:
    """Other ``*.json`` files at ``ref`` near the baseline's path: what a mistyped ``baseline-path`` may have meant
    (:func:`evalbot.basecommit.gate.similar_baselines`, listed as :func:`list_at` lists)."""
    return similar_at(lambda where: list_at(forge, ws, where, ref), path)
