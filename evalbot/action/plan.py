"""The Action's selection (:mod:`evalbot.selection`): ``mode: plan`` lists the eval sets a pull request can affect,
``only-affected`` scores only those. The mapping is the base commit's policy (``affected_by``, read with the rest of
the gate); the changed files come from git in the workspace, against the pull request's base commit, else from
GitHub's list of the pull request's files (the published image has no git; a ``fetch-depth: 1`` checkout lacks the
base commit). Neither answering (a merge queue has no pull request to ask about): everything is affected, saying
so."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from evalbot.action.settings import ActionInputs, Change
from evalbot.action.workspace import Workspace
from evalbot.basecommit.gate import GateSettings, repo_path
from evalbot.compare.baseline import Baseline
from evalbot.compare.carry import carry
from evalbot.compare.model import Carried
from evalbot.errors import InputError
from evalbot.forge.base import Forge, ForgeError
from evalbot.git import changed_since
from evalbot.pipeline import Inputs
from evalbot.selection import Selection, everything, plan_change

log = logging.getLogger("evalbot")

NOT_A_CHANGE = "not a pull request: there is no base commit to tell a change from, so every eval set runs"


def changed_files(ws: Workspace, forge: Forge | None, change: Change, *, git: bool = True) -> Sequence[str]:
    """The files ``change`` touched: git in the workspace against the base commit, else (no git, as in the
    published image, or a checkout without the base commit) GitHub's list of the pull request's files; neither
    answering raises InputError saying both reasons (the caller then takes every eval set). ``git=False``: the
    workspace is not the pull request's tree (the fork-safe second stage checks out the default branch): GitHub's
    list only."""
    try:
        if not git:
            raise InputError(f"#{change.number}", "", "this checkout is the default branch's, not the pull request's")
        return changed_since(change.base_sha, git=ws.git).files
    except InputError as exc:
        if forge is None or change.number is None:
            raise
        try:
            return forge.changed_files(number=change.number)
        except ForgeError as api:
            raise InputError(exc.path, "", f"{exc.message}; and the API could not list the pull request's files: "
                                           f"{api}") from None


def selection_for(inputs: ActionInputs, ws: Workspace, loaded: Inputs, gate: GateSettings | None,
                  change: Change | None, forge: Forge | None, *, git: bool = True) -> tuple[Selection, dict[str, str]]:
    """The selection of the run's eval sets for ``change`` (None: not a pull request, everything), under
    ``gate``'s policy (the base commit's), and each repository path's name as loaded. The ``config`` input and the
    baseline file apply to every eval set: their change affects all."""
    shown: dict[str, str] = {}
    for f in loaded.files:
        rel = repo_path(f, ws.root)
        shown.setdefault(rel if rel is not None else str(f), str(f))
    if change is None:
        return everything(list(shown), NOT_A_CHANGE), shown
    always = [rel for raw in (inputs.config, inputs.baseline_path)
              if raw and (rel := repo_path(ws.path(raw), ws.root)) is not None]
    sel = plan_change(list(shown), gate.policy.affected_by if gate is not None and not gate.error else None,
                      lambda: changed_files(ws, forge, change, git=git),
                      policy_error=gate.error if gate is not None else None, always=always)
    return sel, shown


def describe(sel: Selection, shown: dict[str, str]) -> list[str]:
    """One log line per eval set: affected or carried, and why."""
    lines = [f"evalbot: every eval set is affected: {sel.everything}"] if sel.everything else []
    lines += [f"evalbot: notice: {note}" for note in sel.notes]
    if not sel.everything:
        lines += [f"evalbot: {'affected' if c.affected else 'unaffected'}: {shown[c.path]}: {'; '.join(c.reasons)}"
                  for c in sel.eval_sets]
    return lines


def only_affected(inputs: ActionInputs, ws: Workspace, loaded: Inputs, gate: GateSettings | None, change: Change,
                  forge: Forge | None, baseline: Baseline | None, *, git: bool = True
                  ) -> tuple[Inputs, Baseline | None, Carried]:
    """``only-affected`` on a pull request: the inputs cut to the eval sets it can affect, the baseline they are
    compared with (the carried eval sets left out) and what is carried."""
    sel, shown = selection_for(inputs, ws, loaded, gate, change, forge, git=git)
    for line in describe(sel, shown):
        log.info("%s", line)
    cut, flags = loaded.only({shown[p] for p in sel.affected})
    compared, carried = carry(baseline, flags)
    log.info("evalbot: only-affected: %d of %d eval set(s) affected; %d carried from main", len(cut.files),
             len(loaded.files), len(carried.eval_sets))
    return cut, compared, carried
