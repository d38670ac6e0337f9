"""What every evaluating command shares: its arguments, the judge from the environment, the pipeline call, the report."""

from __future__ import annotations

import argparse
import codecs
import contextlib
import os
import sys
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import BinaryIO, TextIO, cast

import evalbot.cli.args as cli_args
from evalbot import pipeline
from evalbot.cli.agent import agent_run, wants_agent
from evalbot.cli.groups import CI, INPUTS, JUDGE, group
from evalbot.compare.gate import NOTHING_MEASURED, GatePolicy, policy_from_settings
from evalbot.compare.judge_gaps import GapTally, judge_gaps
from evalbot.criteria.base import BuildContext
from evalbot.errors import EXIT_INVALID_INPUT, EXIT_OK, EXIT_UNAVAILABLE, ConfigError, EvalbotError
from evalbot.formats.jsonio import gc_paused
from evalbot.formats.prices import JudgeBudget
from evalbot.judges.base import DEFAULT_SAMPLING, SAMPLING_MODES, Sampling
from evalbot.judges.budget import tighter
from evalbot.judges.cache import CacheTrust, DiskCache
from evalbot.judges.estimate import EstimatingJudge, estimate_text
from evalbot.judges.factory import CACHE_ENV, judge_from_environ
from evalbot.judges.limiter import DEFAULT_CONCURRENCY
from evalbot.load import normal_key
from evalbot.paths import output_file, problem_with_directory, write_output
from evalbot.pipeline import SPILL_BUFFER as SPILL_BUFFER
from evalbot.progress import Progress, terminal_progress
from evalbot.redact import scrub_utf8
from evalbot.render.console import ConsoleTally, render_text
from evalbot.render.html import html_chunks, run_comparison
from evalbot.results import (
    CaseResult,
    CaseStream,
    CaseView,
    EvalSetReport,
    Report,
    StreamedCases,
    case_json,
    utf8_buffer,
    write_report_json,
)


def add_eval_args(parser: argparse.ArgumentParser) -> None:
    """Arguments shared by every command that evaluates (in the command's groups, :mod:`evalbot.cli.groups`)."""
    inputs, judge = group(parser, INPUTS), group(parser, JUDGE)
    inputs.add_argument("paths", nargs="+", type=cli_args.eval_path, metavar="PATH",
                        help="eval set files (ADK's *.evalset.json), directories or glob patterns; FILE:id1,id2 "
                        "runs only those cases")
    inputs.add_argument(
        "--actuals", action="append", default=[], type=cli_args.loaded_file, metavar="FILE",
        help="recorded agent runs: ADK *.evalset_result.json, {eval_id: [invocations]} JSON, or a Vertex dataset "
        "(repeatable)",
    )
    inputs.add_argument("--config", type=cli_args.loaded_file, metavar="FILE", help="test_config.json for every "
                        "eval set (default: the one beside each eval set, else ADK's default criteria)")
    judge.add_argument("--judge-concurrency", type=cli_args.integer(1, 256), default=DEFAULT_CONCURRENCY, metavar="N",
                       help=f"most judge calls in flight (1 to 256; default {DEFAULT_CONCURRENCY}): halved on a 429 "
                       "or a timeout, grown back after as many answers in a row")
    judge.add_argument("--judge-cache", type=cli_args.directory, metavar="DIR",
                       help="judge answer cache (default: $EVALBOT_JUDGE_CACHE)")
    judge.add_argument("--judge-replay", action="store_true", help="answer judges only from the cache")
    seconds = cli_args.number(0, 86400, low_open=True, what="a number of seconds")
    judge.add_argument("--judge-timeout", type=seconds, default=60.0, metavar="S",
                       help="per judge call timeout (default 60; a timeout is retried once)")
    judge.add_argument("--judge-deadline", type=seconds, default=240.0, metavar="S",
                       help="seconds all judge calls of the run may take (default 240); later ones are not_evaluated")
    judge.add_argument("--judge-budget-requests", type=cli_args.budget(10**9), metavar="N",
                       help="send the judge at most N requests in this run (lowers the gate policy's "
                       "judge_budget.requests, never raises it); the verdicts left are not_evaluated")
    judge.add_argument("--judge-budget-usd", type=cli_args.number(0, 1e6, what="a number of US dollars"),
                       metavar="X", help="send the judge at most X US dollars of requests, each counted at its worst "
                       "case until answered (lowers the gate policy's judge_budget.usd, never raises it)")
    judge.add_argument("--estimate", action="store_true",
                       help="print the judge requests, tokens and dollars the run would need (full and sequential "
                       "sampling) and send nothing; writes nothing")
    judge.add_argument("--sampling", choices=SAMPLING_MODES,
                       help="majority-vote criteria ask the fewest judge samples that could decide first, the rest "
                       "only when needed (sequential), or all num_samples at once (full); same verdicts (default: "
                       "the config's evalbot.sampling, else sequential)")
    group(parser, CI).add_argument("--shard", type=cli_args.shard, metavar="K/N",
                                   help="evaluate only part K of N of the cases (a matrix job); `evalbot merge` "
                                   "joins the parts")


def estimate_run(args: argparse.Namespace, inputs: pipeline.Inputs | None = None,
                 policy: GatePolicy | None = None, env: Mapping[str, str] | None = None) -> int:
    """``--estimate``: score the recorded runs with a judge that counts each request and sends none
    (judges.estimate), print the counts; no repository code runs and nothing is written. ``inputs`` and ``policy``:
    compare's (the base commit's policy and the selected eval sets); by default the working tree's (run)."""
    if inputs is None:
        inputs = pipeline.load_inputs(args.paths, config=args.config)
    if policy is None:
        policy = run_policy(args, inputs)
    if wants_agent(args):
        raise ConfigError("--estimate counts the judge requests of recorded runs (--actuals); it does not run the "
                          "agent (its runs are what the judge reads): record them first with --record")
    env = env or {}
    directory = judge_cache_dir(args, env)
    cache = DiskCache(directory, CacheTrust.for_run(env, action=False)) if directory else None  # what a run replays
    judge = EstimatingJudge(prices=policy.price_table(), cache=cache)
    ctx = BuildContext(judge=judge, custom_code_refused="--estimate runs no repository code", prices=judge.prices)
    pipeline.evaluate(inputs, actuals=args.actuals, ctx=ctx, shard=args.shard)
    print(estimate_text(judge.asked, judge.prices, judge.cached if cache is not None else None))
    return EXIT_OK


def flag_budget(args: argparse.Namespace) -> JudgeBudget | None:
    """``--judge-budget-requests`` / ``--judge-budget-usd`` (None when neither is given)."""
    requests, usd = getattr(args, "judge_budget_requests", None), getattr(args, "judge_budget_usd", None)
    return None if requests is None and usd is None else JudgeBudget(requests=requests, usd=usd)


COST_KEYS = frozenset({"sampling", "prices", "judge_budget"})
"""The keys of the working tree's evalbot section ``evalbot run`` reads (the rest is the gate's, for compare)."""


def run_policy(args: argparse.Namespace, inputs: pipeline.Inputs | None = None) -> GatePolicy:
    """What ``evalbot run`` takes from the config's evalbot section: the sampling (``--sampling`` wins), the prices and
    the judge budget."""
    settings, config = inputs.settings() if inputs is not None else pipeline.settings_for(args.paths, config=args.config)
    own = {key: value for key, value in settings.items() if normal_key(str(key)) in COST_KEYS}
    return policy_from_settings(own, source=str(config or "command line"), overrides={"sampling": args.sampling})


def judge_cache_dir(args: argparse.Namespace, env: Mapping[str, str]) -> str | None:
    """The run's judge cache: ``--judge-cache`` (checked as it is parsed), else EVALBOT_JUDGE_CACHE (checked here)."""
    flag = getattr(args, "judge_cache", None)
    cache = flag or env.get(CACHE_ENV) or None
    if cache and not flag and (problem := problem_with_directory(cache)):
        raise EvalbotError(f"{CACHE_ENV}: {problem}")
    return cache


def judge_context(args: argparse.Namespace, env: Mapping[str, str],
                  sampling: Sampling = DEFAULT_SAMPLING) -> BuildContext:
    """The run's judge built from the environment, or why there is none."""
    cache = judge_cache_dir(args, env)
    judge, notice = judge_from_environ(
        env,
        cache_dir=Path(cache) if cache else None,
        replay=args.judge_replay,
        concurrency=args.judge_concurrency,
        timeout=args.judge_timeout,
        deadline=args.judge_deadline if args.judge_deadline and args.judge_deadline > 0 else None,
        sampling=sampling,
    )
    return BuildContext(judge=judge, judge_unavailable_reason=notice)


def evaluate_args(args: argparse.Namespace, env: Mapping[str, str], inputs: pipeline.Inputs | None = None,
                  ctx: BuildContext | None = None, stream: CaseStream | None = None, request_base: int = 0,
                  progress: Progress | None = None) -> Report:
    """Score recorded runs, or run the agent first (--agent / --adk-agent): the pipeline, as every command calls it.
    ``ctx``: the judge context to use (default: ``judge_context`` with the run's sampling); ``stream``: where the
    cases go instead of the report; ``request_base``: a job's share of the judge request cap (see
    ``pipeline.evaluate``); ``progress``: where the progress goes instead of the terminal's line (a job of
    ``run --jobs`` tells its parent)."""
    if ctx is None:
        policy = run_policy(args, inputs)
        ctx = pipeline.with_costs(judge_context(args, env, policy.sampling), policy, flag_budget(args))
        part = getattr(args, "as_job", None) or getattr(args, "shard", None)
        budget = tighter(policy.judge_budget, flag_budget(args))
        if part is not None and budget is not None and ctx.judge is not None:  # a job's or shard's share of it
            share = budget.share(part.index, part.count)
            ctx.judge.set_budget(share, f"{share.text()}: part {part.index} of {part.count}'s share of the run's "
                                        f"{budget.text()}")
    agent = agent_run(args)  # checks the agent options before anything is read
    bar = terminal_progress(sys.stderr) if progress is None else None

    def say(text: str) -> None:
        if bar is not None:
            bar.close()  # erase the progress line first
        print(text, file=sys.stderr)

    try:
        return pipeline.evaluate(inputs if inputs is not None else args.paths, actuals=args.actuals,
                                 config=None if inputs is not None else args.config, agent=agent, ctx=ctx,
                                 progress=progress or bar, say=say, shard=args.shard, stream=stream, request_base=request_base)
    finally:
        if bar is not None:
            bar.close()


class StreamedRun:
    """What ``evalbot run`` keeps of the cases it streams out of the report as they are scored (a CaseStream): each
    case's report text, scrubbed, in an anonymous temporary file (with ``--report``), what the console shows and the
    judged verdicts; the report in memory keeps no case, so a run of a million invocations holds one at a time."""

    def __init__(self, spill: BinaryIO | None) -> None:
        self.spill = spill
        self.spans: dict[int, list[int]] = {}
        """Eval set index -> [start, end, cases] of its case lines in the spill (cases arrive in report order)."""
        self.console = ConsoleTally()
        self.gaps = GapTally()

    def __call__(self, index: int, es: EvalSetReport, case: CaseResult) -> None:
        if self.spill is not None:
            span = self.spans.get(index)
            if span is None:
                end = max((s[1] for s in self.spans.values()), default=0)
                span = self.spans[index] = [end, end, 0]
            data = (b",\n" if span[2] else b"\n") + scrub_utf8(case_json(case))  # case_line, scrubbed
            try:
                self.spill.write(data)
            except OSError as exc:
                raise EvalbotError(spill_problem(exc)) from None
            span[1] += len(data)
            span[2] += 1
        self.tally(index, es, case)

    def tally(self, index: int, es: EvalSetReport, case: CaseView) -> None:
        """Count the case for the console and the judge gaps."""
        self.console.add(index, es, case)
        self.gaps.add(index, es, case)

    def copy_cases(self, index: int, out: TextIO) -> None:
        """Write the ``index``-th eval set's case lines (StreamedCases)."""
        span = self.spans.get(index)
        if span is None or self.spill is None:
            return
        copy_span(self.spill, span[0], span[1], out)
        self.spill.seek(0, os.SEEK_END)


def copy_span(file: BinaryIO, start: int, end: int, out: TextIO) -> None:
    """Write the UTF-8 text of ``file[start:end]`` to ``out``, SPILL_BUFFER bytes at a time."""
    file.flush()
    file.seek(start)
    # A UTF-8 file takes the spilled UTF-8 bytes as they are (no decoding and encoding them again).
    binary = utf8_buffer(out)
    if binary is not None:
        out.flush()
    decoder = codecs.getincrementaldecoder("utf-8")()
    left = end - start
    while left > 0:
        chunk = file.read(min(left, SPILL_BUFFER))
        if not chunk:
            raise OSError("the temporary file of the streamed cases is shorter than written")
        left -= len(chunk)
        if binary is not None:
            binary.write(chunk)
        else:
            out.write(decoder.decode(chunk, final=left <= 0))


def run_streamed(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot run`` without ``--html``: the cases are streamed out of the report as they are scored (written to a
    temporary file when ``--report`` is asked, then copied into it after the eval sets' summaries) so the run's
    memory does not grow with its cases. The report file is the same, byte for byte."""
    try:
        spill = cast(BinaryIO, tempfile.TemporaryFile(buffering=SPILL_BUFFER)) if args.report else None
    except OSError as exc:
        raise EvalbotError(spill_problem(exc)) from None
    with spill if spill is not None else contextlib.nullcontext():
        run = StreamedRun(spill)
        report = evaluate_args(args, env, stream=run)
        return show_report(args, report, run)


def spill_problem(exc: OSError) -> str:
    """What to do when the temporary file of a streamed run cannot be written."""
    return (f"cannot write the scored cases to a temporary file in {tempfile.gettempdir()} "
            f"({exc.strerror or exc}); free some space there or point TMPDIR to a folder with room for the report")


def show_report(args: argparse.Namespace, report: Report, streamed: StreamedRun | None = None) -> int:
    """Without a baseline: write --report and --html if asked, print the results; the run's exit code (3 when the
    judge failed to give verdicts or had no credentials and the judge-failures policy blocks, as in ``compare``). ``streamed``: the cases
    streamed out of ``report`` (no ``--html`` then)."""
    if args.report:
        write_report(report, args.report, streamed=streamed)
    if args.html:
        write_text(args.html, html_chunks(run_comparison(report)))
    print(render_text(report, tally=streamed.console if streamed is not None else None))
    code = pipeline.exit_code(report)
    if code == EXIT_OK and report.totals.cases == 0 and getattr(args, "shard", None) is None:  # a shard may be empty
        print(f"evalbot: could not measure, not passing: {NOTHING_MEASURED}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    gaps = streamed.gaps.gaps() if streamed is not None else judge_gaps(report)
    # Judged verdicts the judge failed to give, and those without credentials, are not measured alike (as compare's
    # gate counts them on the command line): the judge-failures policy decides, blocking by default.
    failures = [m for m in (gaps.failure_message(details="each case's reasons above"),
                            gaps.no_judge_message(expected=True)) if m is not None]
    if not failures or code == EXIT_INVALID_INPUT:
        return code
    failure = "; ".join(failures)
    if judge_failures_policy(args) == "warn":
        print(f"evalbot: warning: {failure}", file=sys.stderr)
        return code
    print(f"evalbot: could not measure, not passing: {failure} (--judge-failures warn, or the config's "
          "evalbot.judge_failures: warn, reports it without failing)", file=sys.stderr)
    return EXIT_UNAVAILABLE


def judge_failures_policy(args: argparse.Namespace) -> str:
    """``--judge-failures``, else the config's ``evalbot.judge_failures``, else block."""
    if args.judge_failures is not None:
        return str(args.judge_failures)
    settings, config = pipeline.settings_for(args.paths, config=args.config) if args.paths else ({}, None)
    return policy_from_settings(settings, source=str(config or "command line")).judge_failures


def write_report(report: Report, path: str, flag: str = "--report", streamed: StreamedCases | None = None) -> None:
    """Write the JSON report (UTF-8, indented, stable key order of the model); ``streamed``: its cases, streamed
    out of it."""
    with output_file(path, name=flag) as handle, gc_paused():
        write_report_json(report, handle, streamed)


def write_text(path: str, text: str | Iterable[str], flag: str = "--html") -> None:
    """Write a UTF-8 text file (or its pieces as they come), creating its directory; a failure is an error naming
    ``flag``."""
    write_output(path, text, name=flag)
