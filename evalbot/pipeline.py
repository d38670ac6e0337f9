"""The stages of an evaluation run in order: discover → load → score → report."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalbot.criteria.base import BuildContext
from evalbot.errors import InputError
from evalbot.formats.actuals import Actuals, load_actuals
from evalbot.load import discover, load_config, load_eval_set
from evalbot.results import Report
from evalbot.runner.recording import score_recorded
from evalbot.scoring import Progress, score_run


def load_all_actuals(paths: Sequence[str]) -> tuple[Actuals, list[InputError]]:
    """Merge every actuals file; an unusable file is an error of the run, the others still count."""
    merged = Actuals(path=", ".join(paths) or None)
    errors: list[InputError] = []
    for raw in paths:
        try:
            merged.merge(load_actuals(Path(raw)))
        except InputError as exc:
            errors.append(exc)
    return merged, errors


def evaluate(
    paths: Sequence[str],
    *,
    actuals: Sequence[str] = (),
    config: str | None = None,
    ctx: BuildContext | None = None,
    notices: Sequence[str] = (),
    progress: Progress | None = None,
) -> Report:
    """Evaluate eval sets (files, directories or globs) against recorded actual runs.

    An explicit ``config`` that cannot be read raises InputError (nothing could be scored as intended);
    every other problem is recorded in the report next to the results that could be computed.
    """
    override = load_config(Path(config)) if config else None
    files, errors = discover(paths)
    eval_sets = [load_eval_set(f, override) for f in files]
    recorded, actual_errors = load_all_actuals(actuals)
    errors += actual_errors
    replayed = score_recorded(eval_sets, actuals, recorded, ctx, errors=errors, notices=notices)
    if replayed is not None:  # runs recorded by `evalbot run --agent/--adk-agent --record`
        return replayed
    return score_run(eval_sets, recorded, ctx, errors=errors, notices=notices, progress=progress)
