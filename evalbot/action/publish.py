"""Publishing a comparison from the Action: the sticky PR comment (degrading on forks), summary and annotations."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TextIO

from evalbot.action import workflow
from evalbot.action.settings import ActionInputs, GitHubContext
from evalbot.compare.model import Comparison, delta_rows
from evalbot.forge.base import Forge, ForgeError, ForgeForbidden
from evalbot.redact import scrub
from evalbot.render import mdsafe
from evalbot.render.annotations import ANNOTATION_LIMIT, Level, find_annotations
from evalbot.render.comment import Links
from evalbot.results import Report

log = logging.getLogger("evalbot")

FORK_NOTICE = (
    "evalbot could not comment on this pull request: the token is read-only (a pull request from a fork, or "
    "`pull-requests: write` missing). The results are in this job summary; with the two-stage workflow of evalbot's "
    "docs/github-action.md, the `workflow_run` stage posts the comment and the `evalbot` commit status, the merge "
    "gate."
)


@dataclass(frozen=True)
class Outcome:
    """What the run decided: the verdict, the counts and where things were written."""

    verdict: str
    exit_code: int
    regressed: int = 0
    fixed: int = 0
    failing: int = 0
    inconclusive: int = 0
    report_path: str = ""
    comment_url: str = ""
    html_path: str = ""
    eval_sets: str = ""
    """Mode plan: the eval set files the change can affect, one per line."""

    def outputs(self) -> dict[str, str]:
        """The action's outputs, as action.yml declares them."""
        return {
            "verdict": self.verdict,
            "regressed": str(self.regressed),
            "fixed": str(self.fixed),
            "failing": str(self.failing),
            "inconclusive": str(self.inconclusive),
            "report-path": self.report_path,
            "comment-url": self.comment_url,
            "html-path": self.html_path,
            "eval-sets": self.eval_sets,
        }


@dataclass(frozen=True)
class Published:
    """Where the comment went, and any notice to show in the summary instead."""

    comment_url: str = ""
    notice: str | None = None
    failed: bool = False


def post_comment(forge: Forge | None, *, number: int, marker: str, body: str, stream: TextIO) -> Published:
    """Upsert the sticky comment; a 403 becomes a notice (never a crash), other failures a warning."""
    if forge is None:
        notice = "No github-token: the comment was not posted; the results are in this job summary."
        print(workflow.annotation("warning", notice, title="evalbot comment"), file=stream)
        return Published(notice=notice)
    body = scrub(body)
    try:
        ref = forge.upsert_comment(number=number, marker=marker, body=body)
    except ForgeForbidden as exc:
        print(workflow.annotation("warning", f"{FORK_NOTICE} ({exc})", title="evalbot comment"), file=stream)
        return Published(notice=FORK_NOTICE)
    except ForgeError as exc:
        notice = f"The PR comment could not be posted: {exc}. The results are in this job summary."
        print(workflow.annotation("warning", notice, title="evalbot comment"), file=stream)
        return Published(notice=notice, failed=True)
    log.info("evalbot: comment %s: %s", ref.action, ref.url)
    return Published(comment_url=ref.url)


def regressed_cases(comparison: Comparison) -> list[tuple[str, str, str]]:
    """(eval set path, eval_id, message) of every regressed case, for annotations."""
    found = []
    for es in comparison.eval_sets:
        for case in es.cases:
            if case.category == "regressed":
                flips = ", ".join(
                    f"{m.criterion} {m.baseline_status} -> {m.current_status}"
                    for m in delta_rows(case.metrics)
                    if m.change == "regressed"
                )
                found.append((es.path, case.eval_id, f"{case.eval_id} regressed: {flips or case.reason or ''}"))
    return found


def annotation_lines(
    report: Report,
    *,
    line_of: Callable[[str, str], int | None],
    limit: int = ANNOTATION_LIMIT,
    regressed: Sequence[tuple[str, str, str]] = (),
    display: Callable[[str], str] = str,
    failing_level: Level = "error",
) -> list[str]:
    """``::error`` lines for regressed, failing and errored cases (chosen by ``render.annotations``)."""
    found = find_annotations(report, line_of=line_of, limit=limit, regressed=regressed, display=display,
                             failing_level=failing_level)
    return [workflow.annotation_line(a) for a in found]


def print_annotations(
    comparison: Comparison,
    *,
    line_of: Callable[[str, str], int | None],
    display: Callable[[str], str],
    stream: TextIO,
) -> None:
    """What could not be measured (an error when it decides the verdict, else a warning), then regressions, then
    failing cases, as ``::error`` lines on the eval set files."""
    for alert in comparison.alerts:
        # the gate's error reasons are alerts too: the one that made the verdict ``error`` is an error annotation
        decided = comparison.gate.verdict == "error" and any(r in alert for r in comparison.gate.reasons)
        level: Literal["error", "warning"] = "error" if decided else "warning"
        print(f"evalbot: {level}: {alert}", file=stream)
        print(workflow.annotation(level, alert, title="evalbot could not measure"), file=stream)
    lines = annotation_lines(
        comparison.report,
        line_of=line_of,
        display=display,
        regressed=regressed_cases(comparison),
        failing_level="error" if comparison.policy.fail_on == "threshold" else "warning",
    )
    for line in lines:
        print(line, file=stream)


def links(ctx: GitHubContext, inputs: ActionInputs) -> Links:
    """The run page (where the job summary is) and the report's path."""
    run = f"{ctx.server_url}/{ctx.repository}/actions/runs/{ctx.run_id}" if ctx.run_id and ctx.repository else None
    return Links(summary=run, report=inputs.report_path)


def outcome_of(
    comparison: Comparison, inputs: ActionInputs, published: Published | None = None, html_path: str = ""
) -> Outcome:
    """Outputs and exit code from the gate (a failed comment never flips the verdict)."""
    counts = comparison.counts
    return Outcome(
        verdict=comparison.gate.verdict,
        exit_code=comparison.gate.exit_code,
        regressed=counts.get("regressed", 0),
        fixed=counts.get("fixed", 0),
        failing=comparison.report.totals.failed,
        inconclusive=counts.get("inconclusive", 0),
        report_path=inputs.report_path,
        comment_url=published.comment_url if published else "",
        html_path=html_path,
    )


def summarize(ctx: GitHubContext, text: str, notices: list[str], html_path: str | None = None) -> None:
    """Append the notices, a pointer to the HTML report and the rendered summary to the job summary (1 MiB cap)."""
    if ctx.summary_path:
        # notices can quote GitHub's error messages: inline() keeps them on one line, unlinked and without pings
        head = "".join(f"> [!WARNING]\n> {mdsafe.inline(n, 1000)}\n\n" for n in notices)
        if html_path:
            head += (f"📄 Every case, with filters and search: the HTML report {mdsafe.inline(html_path, 300)} "
                     "(in the report artifact when the workflow uploads it; open it in a browser).\n\n")
        workflow.append_summary(ctx.summary_path, head + text)
