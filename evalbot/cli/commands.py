"""Command line: ``evalbot run`` (and later ``baseline`` / ``compare``); the edge that reads argv and env."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from evalbot import __version__
from evalbot.cli import agent as cli_agent
from evalbot.cli import args as cli_args
from evalbot.cli import compare as cli_compare
from evalbot.criteria.base import BuildContext
from evalbot.errors import EXIT_FAILED, EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_OK, EvalbotError
from evalbot.judges.factory import judge_from_environ
from evalbot.pipeline import evaluate
from evalbot.progress import terminal_progress
from evalbot.render.console import render_text
from evalbot.results import Report, write_report_json

log = logging.getLogger("evalbot")


def add_eval_args(parser: argparse.ArgumentParser) -> None:
    """Arguments shared by every command that evaluates."""
    parser.add_argument("paths", nargs="+", type=cli_args.eval_path, metavar="PATH",
                        help="eval set files, directories or glob patterns")
    parser.add_argument(
        "--actuals", action="append", default=[], type=cli_args.loaded_file, metavar="FILE",
        help="recorded agent runs: ADK *.evalset_result.json, {eval_id: [invocations]} JSON, or a Vertex dataset "
        "(repeatable)",
    )
    parser.add_argument("--config", type=cli_args.loaded_file, metavar="FILE", help="test_config.json for every eval set (default: the one "
                        "beside each eval set, else ADK's default criteria)")
    parser.add_argument("--judge-concurrency", type=cli_args.integer(1, 256), default=16, metavar="N",
                        help="judge calls in flight (1 to 256)")
    parser.add_argument("--judge-cache", type=cli_args.directory, metavar="DIR", help="judge answer cache (default: $EVALBOT_JUDGE_CACHE)")
    parser.add_argument("--judge-replay", action="store_true", help="answer judges only from the cache")
    seconds = cli_args.number(0, 86400, low_open=True, what="a number of seconds")
    parser.add_argument("--judge-timeout", type=seconds, default=60.0, metavar="S",
                        help="per judge call timeout (default 60; a timeout is retried once)")
    parser.add_argument("--judge-deadline", type=seconds, default=240.0, metavar="S",
                        help="seconds all judge calls of the run may take (default 240); later ones are not_evaluated")


def build_parser() -> argparse.ArgumentParser:
    """The ``evalbot`` argument parser."""
    parser = cli_args.Parser(prog="evalbot", description="Evaluate LLM agents with ADK-compatible criteria.")
    parser.add_argument("--version", action="version", version=f"evalbot {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="score eval sets and print a summary")
    add_eval_args(run)
    cli_agent.add_agent_args(run)
    run.add_argument("--report", type=cli_args.output_file, metavar="OUT.json", help="write the JSON report here")
    run.add_argument("--html", type=cli_args.output_file, metavar="OUT.html",
                     help="write the self-contained HTML report here")
    cli_compare.add_parsers(sub)
    return parser


def judge_context(args: argparse.Namespace, env: Mapping[str, str]) -> tuple[BuildContext, list[str]]:
    """The run's judge built from the environment (or why there is none), and the notices to report about it."""
    cache = args.judge_cache or env.get("EVALBOT_JUDGE_CACHE") or None
    problem = cli_args.problem_with_directory(cache) if cache and not args.judge_cache else None
    if problem:
        raise EvalbotError(f"EVALBOT_JUDGE_CACHE: {problem}")
    judge, notice = judge_from_environ(
        env,
        cache_dir=Path(cache) if cache else None,
        replay=args.judge_replay,
        concurrency=args.judge_concurrency,
        timeout=args.judge_timeout,
        deadline=args.judge_deadline if args.judge_deadline and args.judge_deadline > 0 else None,
    )
    notices = [notice] if notice else []
    notices.extend(getattr(judge, "notes", []))
    return BuildContext(judge=judge, judge_unavailable_reason=notice), notices


def drop_unused_judge_notice(report: Report, ctx: BuildContext) -> Report:
    """Remove the judge's notices (no credentials; its setup notes) from a report in which no eval set configures a
    judged criterion: they concern nothing that ran."""
    about_judge = {ctx.judge_unavailable_reason, *getattr(ctx.judge, "notes", [])} - {None}
    if about_judge and not any(c.judged for es in report.eval_sets for c in es.criteria):
        report.notices = [n for n in report.notices if n not in about_judge]
    return report


def exit_code(report: Report) -> int:
    """0 all passed · 1 some case failed · 2 some input could not be used (results of the rest still reported)."""
    if report.errors or report.totals.error or any(es.errors for es in report.eval_sets):
        return EXIT_INVALID_INPUT
    return EXIT_FAILED if report.totals.failed else EXIT_OK


def write_report(report: Report, path: str, flag: str = "--report") -> None:
    """Write the JSON report (UTF-8, indented, stable key order of the model)."""
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("w", encoding="utf-8") as handle:
            write_report_json(report, handle)
    except OSError as exc:
        raise EvalbotError(f"{flag} {path}: cannot write the file: {exc.strerror or exc}") from None


def evaluate_args(args: argparse.Namespace, env: Mapping[str, str]) -> Report:
    """Score recorded runs, or run the agent first (--agent / --adk-agent): what every evaluating command does."""
    ctx, notices = judge_context(args, env)
    bar = terminal_progress(sys.stderr)
    try:
        if cli_agent.wants_agent(args):  # evalbot runs the agent itself (--agent / --adk-agent)
            report = cli_agent.evaluate_with_agent(args, ctx, notices, bar)
        else:
            report = evaluate(args.paths, actuals=args.actuals, config=args.config, ctx=ctx, notices=notices, progress=bar)
    finally:
        if bar is not None:
            bar.close()
    return drop_unused_judge_notice(report, ctx)


def write_text(path: str, text: str, flag: str = "--html") -> None:
    """Write a UTF-8 text file, creating its directory; a failure is an error naming ``flag``."""
    out = Path(path)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise EvalbotError(f"{flag} {path}: cannot write the file: {exc.strerror or exc}") from None


def cmd_run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot run``."""
    report = evaluate_args(args, env)
    if args.report:
        write_report(report, args.report)
    if args.html:
        from evalbot.render.html import render_html_report

        write_text(args.html, render_html_report(report))
    print(render_text(report))
    return exit_code(report)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Entry point of the ``evalbot`` console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    environ = os.environ if env is None else env
    from evalbot.redact import register_secret

    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GITHUB_TOKEN"):
        register_secret(environ.get(name))  # masked in the report, the comment and the judge cache
    commands = {"run": cmd_run, **cli_compare.COMMANDS}
    try:
        return commands[args.command](args, environ)
    except EvalbotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    except KeyboardInterrupt:
        print("evalbot: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: exit 70 (an uncaught traceback would exit 1, which reads as "blocked")
        log.debug("evalbot crashed", exc_info=True)
        print(f"evalbot: internal error (a bug: please report it; -v shows the traceback): "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
