"""The GitHub Action run: settings from the environment mapping, evaluate, report, publish, outputs, exit code."""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from evalbot import actions
from evalbot.action_report import annotation_lines, junit_suites
from evalbot.action_settings import ActionInputs, GitHubContext, Mode, choose_mode, context_from_env, inputs_from_env
from evalbot.errors import EXIT_FAILED, EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_OK, EvalbotError, InputError
from evalbot.results import Report

log = logging.getLogger("evalbot")


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
        }


def _in_workspace(ctx: GitHubContext, path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else ctx.workspace / p


def _relative(ctx: GitHubContext, path: str) -> str:
    """A path as annotations want it: relative to the workspace."""
    p = Path(path)
    if p.is_absolute():
        try:
            return p.relative_to(ctx.workspace.resolve()).as_posix()
        except ValueError:
            return path
    return p.as_posix()


def _judge_env(env: Mapping[str, str], inputs: ActionInputs) -> dict[str, str]:
    """The judge's view of the environment: the judge-api-key input wins over inherited variables."""
    judged = dict(env)
    if inputs.judge_api_key:
        judged["GOOGLE_API_KEY"] = inputs.judge_api_key
    return judged


def evaluate_inputs(env: Mapping[str, str], inputs: ActionInputs, ctx: GitHubContext) -> Report:
    """Score the eval sets named by the inputs, with a judge when credentials are there."""
    from evalbot.app import evaluate
    from evalbot.criteria.base import BuildContext
    from evalbot.judges.factory import judge_from_environ

    cache = str(_in_workspace(ctx, inputs.judge_cache)) if inputs.judge_cache else None
    judge, notice = judge_from_environ(_judge_env(env, inputs), cache_dir=cache, concurrency=inputs.judge_concurrency)
    build = BuildContext(judge=judge, judge_unavailable_reason=notice)
    return evaluate(
        [str(_in_workspace(ctx, p)) if not any(c in p for c in "*?[") else p for p in inputs.eval_sets],
        actuals=[str(_in_workspace(ctx, p)) for p in inputs.actuals],
        config=str(_in_workspace(ctx, inputs.config)) if inputs.config else None,
        ctx=build,
        notices=[notice] if notice else [],
    )


def write_files(report: Report, inputs: ActionInputs, ctx: GitHubContext) -> str:
    """The JSON report and the JUnit XML in the workspace; returns the report path as given."""
    target = _in_workspace(ctx, inputs.report_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if inputs.junit_path:
        actions.write_junit(_in_workspace(ctx, inputs.junit_path), junit_suites(report))
    return inputs.report_path


def _read_in_workspace(ctx: GitHubContext) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        try:
            return _in_workspace(ctx, path).read_text(encoding="utf-8")
        except OSError:
            return None

    return read


def run(env: Mapping[str, str], *, started: float | None = None, out: TextIO | None = None) -> int:
    """Run the action; returns the process exit code (see errors.EXIT_* and the README)."""
    stream = out or sys.stdout
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=stream)
    try:
        inputs = inputs_from_env(env)
        ctx = context_from_env(env)
        mode: Mode = choose_mode(inputs.mode, ctx)
    except InputError as exc:
        print(actions.annotation("error", str(exc), title="evalbot input"), file=stream)
        return EXIT_INVALID_INPUT
    print(f"evalbot: mode {mode}, repository {ctx.repository or '?'}", file=stream, flush=True)
    try:
        outcome = _run_mode(env, inputs, ctx, mode, stream)
    except EvalbotError as exc:
        print(actions.annotation("error", str(exc), title="evalbot"), file=stream)
        outcome = Outcome(verdict="error", exit_code=EXIT_INVALID_INPUT)
    except Exception as exc:  # a bug: say so plainly, keep the traceback in the log
        log.exception("evalbot crashed")
        print(
            actions.annotation("error", f"internal error: {type(exc).__name__}: {exc}", title="evalbot bug"),
            file=stream,
        )
        outcome = Outcome(verdict="error", exit_code=EXIT_INTERNAL)
    if ctx.output_path:
        actions.write_outputs(ctx.output_path, outcome.outputs())
    if started is not None:
        print(f"evalbot: done in {time.perf_counter() - started:.1f}s, exit {outcome.exit_code}", file=stream)
    return outcome.exit_code


def _run_mode(env: Mapping[str, str], inputs: ActionInputs, ctx: GitHubContext, mode: Mode, stream: TextIO) -> Outcome:
    """Evaluate and report (comparison and the PR comment are wired in with compare/render)."""
    report = evaluate_inputs(env, inputs, ctx)
    report_path = write_files(report, inputs, ctx)
    read = _read_in_workspace(ctx)
    for line in annotation_lines(report, read_text=read, display=lambda p: _relative(ctx, p)):
        print(line, file=stream)
    failing = report.totals.failed + report.totals.error
    verdict = "fail" if failing else "pass"
    code = EXIT_FAILED if failing and inputs.fail_on == "threshold" else EXIT_OK
    if ctx.summary_path:
        from evalbot.console import render_text

        actions.append_summary(ctx.summary_path, f"## evalbot\n\n```text\n{render_text(report)}\n```\n")
    return Outcome(
        verdict=verdict,
        exit_code=code,
        failing=failing,
        inconclusive=report.totals.not_evaluated,
        report_path=report_path,
    )
