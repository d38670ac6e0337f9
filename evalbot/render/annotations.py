"""Annotations on the eval set files: which regressed, failing and errored cases to flag, where, and why (pure).

The Action prints them as workflow commands (``action/workflow.py``); nothing here knows that protocol.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from evalbot.formats.numbers import score_text
from evalbot.results import CaseResult, MetricResult, Report

Level = Literal["error", "warning", "notice"]

ANNOTATION_LIMIT = 10
"""GitHub shows at most 10 error and 10 warning annotations per step; more are dropped silently."""


@dataclass(frozen=True)
class Annotation:
    """One message on a file (and line) of the workspace."""

    level: Level
    message: str
    file: str | None = None
    line: int | None = None
    title: str | None = None


def _score(value: float | None) -> str:
    return score_text(value, missing="n/a")


def metric_line(name: str, result: MetricResult) -> str:
    """``name: score (threshold t) status [reason]`` for one criterion on one case."""
    threshold = "" if result.threshold is None else f" (threshold {_score(result.threshold)})"
    reason = f" - {result.reason}" if result.reason else ""
    return f"{name}: {_score(result.score)}{threshold} {result.status}{reason}"


def failing_summary(case: CaseResult) -> str:
    """Why the case failed, e.g. ``tool_trajectory_avg_score 0.500 < 1.000`` or ``x error: timeout``."""
    parts = []
    for name, m in case.metrics.items():
        if m.status == "failed":
            parts.append(f"{name} {_score(m.score)} < {_score(m.threshold)}" if m.threshold is not None else name)
        elif m.status == "error":
            parts.append(f"{name} error: {m.reason or 'see the report'}")
    return "; ".join(parts) or (case.reason or case.status)


def find_annotations(
    report: Report,
    *,
    line_of: Callable[[str, str], int | None],
    limit: int = ANNOTATION_LIMIT,
    regressed: Sequence[tuple[str, str, str]] = (),
    display: Callable[[str], str] = str,
    failing_level: Level = "error",
) -> list[Annotation]:
    """Annotations for regressed, failing and errored cases, on their eval set file and line.

    ``line_of(path, eval_id)`` gives the case's line in its eval set file (the loader found it; None if unknown);
    ``regressed`` holds (eval set path, eval_id, message) from the baseline comparison, shown first.
    ``display`` turns a report path into the workspace-relative path annotations need; failing (not
    regressed) cases are annotated at ``failing_level`` (a warning when they do not block the merge).
    At most ``limit`` errors are emitted, then one notice saying how many more there were.
    """
    def where(path: str, eval_id: str | None) -> int | None:
        return line_of(path, eval_id) if eval_id else None

    found: list[tuple[str, str | None, str, str, Level]] = [
        (path, eval_id, "Regression", message, "error") for path, eval_id, message in regressed
    ]
    seen = {(path, eval_id) for path, eval_id, _ in regressed}
    for es in report.eval_sets:
        found += [
            (es.path, None, "Eval set unusable", f"{p.pointer or ''} {p.message}".strip(), "error")
            if p.path in (None, es.path) else  # the eval set's config: annotated at the config, naming the eval set
            (p.path, None, "Eval set unusable", f"{p.pointer or ''} {p.message} (for {es.path})".strip(), "error")
            for p in es.errors
        ]
        for case in es.cases:
            if case.status in ("failed", "error") and (es.path, case.eval_id) not in seen:
                title = "Case failed" if case.status == "failed" else "Case errored"
                found.append((es.path, case.eval_id, title, f"{case.eval_id}: {failing_summary(case)}", failing_level))
    shown = [
        Annotation(level, message, file=display(path), line=where(path, eval_id), title=title)
        for path, eval_id, title, message, level in found[:limit]
    ]
    if len(found) > limit:
        shown.append(Annotation("notice", f"{len(found) - limit} more failing cases: see the job summary"))
    return shown
