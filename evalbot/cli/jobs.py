"""``evalbot run --jobs N``: one run's cases scored by N processes of this interpreter, merged into one report.

Job K is ``evalbot run ... --as-job K/N``: it reads the inputs, scores the K-th of N runs of consecutive cases
(``shard.job_eval_sets``: chosen from the loaded case list, no case parsed; not ``--shard K/N``'s partition, which
parses every case to balance invocations) and writes its part of the report and its notes (its cases' count and
what their notices are made of: ``shard.job_notes``) into a private temporary folder. Once every job has written
them, the parts are joined in job order, streaming (``shard.merge_job_parts``), into --report: they are this run's
own, written by its children into the private folder this process created (mode 0700), so each case line is decoded
only as far as the tallies read it (not validated again, as ``evalbot merge`` validates the parts it is given) and
copied as its job wrote it, and the eval sets' case notices are made from the jobs' notes as one job makes them over
all its cases. The report, the console text and the exit code are those of one job, byte for byte.

What is run-wide is shared, never multiplied: each job is given its share of --judge-concurrency (so the jobs never
have more judge calls in flight together than the flag allows; there are never more jobs than that number) and its
share of the fixed part of the run-wide judge request cap (``pipeline.request_cap``). The jobs get this process's
environment, so each scrubs the same secrets from what it writes.

A job that fails fails the run: its input error is shown as one job shows it (exit 2); a job killed from outside
(out of memory, a signal) is "could not measure" (exit 3); a job that crashed is a bug (exit 70). The other jobs
are stopped then, nothing is written to --report, and the temporary parts are removed. Ctrl-C (or SIGTERM) stops
every job.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

from evalbot.cli.agent import wants_agent
from evalbot.cli.evaluate import StreamedRun, run_streamed, show_report, spill_problem
from evalbot.errors import EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_OK, EXIT_UNAVAILABLE, ConfigError, EvalbotError
from evalbot.pipeline import BASE_REQUESTS, load_inputs
from evalbot.redact import scrub
from evalbot.shard import MergeError, job_eval_sets, job_notes, merge_job_parts

FORWARDED = ("paths", "actuals", "config", "judge_concurrency", "judge_cache", "judge_replay", "judge_timeout",
             "judge_deadline", "sampling", "verbose")
"""The options of ``evalbot run`` each job is given (``job_command``; --judge-concurrency as the job's share)."""
PARENT_ONLY = ("command", "jobs", "as_job", "shard", "report", "html", "judge_failures", "agent", "adk_agent",
               "num_runs", "record", "agent_concurrency", "agent_timeout")
"""The options the parent alone acts on: it writes --report, applies --judge-failures, and uses one job with --html
or the agent options, and none with --shard (``jobs_for``)."""

STOP_GRACE_S = 5.0
"""Seconds a job is given to end once asked (SIGTERM) before it is killed."""
POLL_S = 0.02

_KILLED = tuple(getattr(signal, name) for name in ("SIGKILL", "SIGTERM", "SIGHUP") if hasattr(signal, name))
"""Signals that end a job from outside (the out-of-memory killer, a cancelled CI job): not a bug of evalbot (those
this system has)."""


def notice(text: str) -> None:
    print(f"evalbot: notice: {text}", file=sys.stderr)


def single_job_reason(args: argparse.Namespace) -> str | None:
    """Why this run is scored in one process whatever --jobs says, or None."""
    if wants_agent(args):
        return ("the agent options (--agent, --adk-agent, --num-runs, --record) run the agent in one process; "
                "--agent-concurrency sets how many cases run at once")
    if args.html:
        return "--html builds its page from every case, in one process"
    return None


def jobs_for(args: argparse.Namespace) -> int:
    """How many jobs ``evalbot run`` uses: --jobs; 1 (with a notice) when the run cannot be split here; at most
    --judge-concurrency (each job needs one judge slot). --jobs with --shard is refused (ConfigError)."""
    wanted: int = args.jobs
    if wanted <= 1:
        return 1
    if args.shard is not None:
        raise ConfigError(f"--jobs {wanted} splits one run over processes of this machine, and --shard "
                          f"{args.shard} is one part of a run split over machines: give one of them (a shard job "
                          "scores its part in one process)")
    reason = single_job_reason(args)
    if reason is not None:
        notice(f"--jobs {wanted}: {reason}: scoring with 1 job")
        return 1
    if wanted > args.judge_concurrency:
        notice(f"--jobs {wanted}: using {args.judge_concurrency} jobs, so that the run has at most "
               f"--judge-concurrency {args.judge_concurrency} judge call(s) in flight (one per job at least)")
        return int(args.judge_concurrency)
    return wanted


def share(total: int, index: int, count: int) -> int:
    """Job ``index``'s (1-based) share of ``total`` over ``count`` jobs: the shares add up to ``total``."""
    return total // count + (1 if index <= total % count else 0)


def job_command(args: argparse.Namespace, index: int, count: int, part: Path) -> list[str]:
    """The command line of job ``index`` of ``count``: this interpreter running ``evalbot run --as-job K/N`` with
    the run's options (``FORWARDED``), its share of --judge-concurrency, and ``part`` as its report. Values are given
    as ``--flag=value`` and the eval set paths after ``--``, so no value can read as an option."""
    cmd = [sys.executable, "-m", "evalbot.cli", *(["-v"] if args.verbose else []), "run",
           f"--as-job={index}/{count}", f"--report={part}",
           f"--judge-concurrency={share(args.judge_concurrency, index, count)}",
           f"--judge-timeout={args.judge_timeout!r}", f"--judge-deadline={args.judge_deadline!r}"]
    cmd += [f"--actuals={path}" for path in args.actuals]
    if args.config is not None:
        cmd.append(f"--config={args.config}")
    if args.judge_cache is not None:
        cmd.append(f"--judge-cache={args.judge_cache}")
    if args.judge_replay:
        cmd.append("--judge-replay")
    if args.sampling is not None:
        cmd.append(f"--sampling={args.sampling}")
    return [*cmd, "--", *args.paths]


def run_as_job(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot run --as-job K/N`` (hidden; what ``run_jobs`` starts): score the K-th of N runs of the cases
    (``shard.job_eval_sets``) with the job's share of the judge request cap, write its part of the report to
    --report and its notes beside it (``notes_path``); print nothing else."""
    if args.shard is not None or args.jobs > 1 or wants_agent(args) or args.html or not args.report:
        raise ConfigError("--as-job K/N is one job of `evalbot run --jobs N`, which starts it: it takes --report "
                          "PART.json and the scoring options only; use --jobs N")
    job = args.as_job
    inputs = load_inputs(args.paths, config=args.config)
    mine = job_eval_sets(inputs.eval_sets, job)
    code = run_streamed(args, env, request_base=share(BASE_REQUESTS, job.index, job.count), part_only=True,
                        inputs=replace(inputs, eval_sets=mine))
    notes_path(Path(args.report)).write_bytes(job_notes(mine))
    return code


def notes_path(part: Path) -> Path:
    """Where a job writes its notes (``shard.job_notes``) beside its part."""
    return part.with_name(part.stem + ".notes.json")


@dataclass
class _Job:
    index: int
    proc: subprocess.Popen[bytes]
    errors: IO[bytes]
    """Its stderr (a temporary file): relayed once the run is over."""


def run_jobs(args: argparse.Namespace, env: Mapping[str, str], count: int) -> int:
    """``evalbot run --jobs N`` (N = ``count`` > 1): start the jobs, wait for all of them, merge their parts; the
    run's exit code (see the module's docstring for failures)."""
    with tempfile.TemporaryDirectory(prefix="evalbot-jobs-") as folder, contextlib.ExitStack() as stack:
        parts = [Path(folder) / f"part-{k}.json" for k in range(1, count + 1)]
        jobs: list[_Job] = []
        try:
            with _sigterm_as_exit():
                for k, part in enumerate(parts, start=1):
                    errors = stack.enter_context(tempfile.TemporaryFile(dir=folder))
                    proc = subprocess.Popen(job_command(args, k, count, part), stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=errors, env=dict(env))
                    jobs.append(_Job(k, proc, errors))
                failed = _wait(jobs)
        finally:
            _stop(jobs)
        if failed is not None:
            return _failure(failed, count)
        for job in jobs:  # what the jobs logged (warnings; with -v, debug lines), in job order
            sys.stderr.write(_text(job))
        return _merged(args, parts, stack)


def _wait(jobs: Sequence[_Job]) -> _Job | None:
    """Wait until every job has ended; the first to fail, as soon as it does (None when all wrote their parts)."""
    pending = list(jobs)
    while pending:
        for job in list(pending):
            code = job.proc.poll()
            if code is None:
                continue
            pending.remove(job)
            if code != EXIT_OK:
                return job
        if pending:
            time.sleep(POLL_S)
    return None


def _stop(jobs: Sequence[_Job]) -> None:
    """End the jobs still running: asked first (SIGTERM), killed after STOP_GRACE_S; each one waited for."""
    for job in jobs:
        if job.proc.poll() is None:
            job.proc.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for job in jobs:
        try:
            job.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            job.proc.kill()
            job.proc.wait()


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM ends this process through Python (SystemExit 143), so the jobs are stopped on the way out (by
    default it would end at once and leave them running)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def _text(job: _Job) -> str:
    job.errors.flush()
    job.errors.seek(0)
    return scrub(job.errors.read().decode("utf-8", "replace"))


def _failure(job: _Job, count: int) -> int:
    """Report the job that failed; the run's exit code."""
    code = job.proc.returncode
    which = f"job {job.index} of {count} (--jobs {count}: the {_nth(job.index)} of {count} runs of the cases)"
    if code == EXIT_INVALID_INPUT:  # an input error: every job meets it, shown as one job shows it
        sys.stderr.write(_text(job))
        return EXIT_INVALID_INPUT
    if code in (130, -signal.SIGINT):  # Ctrl-C reached the job first
        raise KeyboardInterrupt
    if code < 0 and -code in _KILLED:
        print(f"evalbot: could not measure: {which} was killed ({signal.Signals(-code).name}: out of memory, or "
              "stopped from outside); nothing was written to --report. Run it again (with fewer --jobs if memory "
              "is short)", file=sys.stderr)
        return EXIT_UNAVAILABLE
    sys.stderr.write(_text(job))
    how = f"was ended by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
    print(f"evalbot: internal error (a bug: please report it; -v shows the traceback): {which} {how}; nothing "
          "was written to --report", file=sys.stderr)
    return EXIT_INTERNAL


def _nth(index: int) -> str:
    suffix = "th" if 10 <= index % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(index % 10, "th")
    return f"{index}{suffix}"


class JobsMergeError(RuntimeError):
    """The jobs' parts do not merge: a bug (exit 70), never an input error."""


def _merged(args: argparse.Namespace, parts: Sequence[Path], stack: contextlib.ExitStack) -> int:
    """Merge the jobs' parts (streamed, as `evalbot merge` does), write --report, print; the run's exit code."""
    try:
        spill = stack.enter_context(tempfile.TemporaryFile()) if args.report else None
    except OSError as exc:
        raise EvalbotError(spill_problem(exc)) from None
    named = [(f"job {k}", part.read_bytes(), notes_path(part).read_bytes()) for k, part in enumerate(parts, start=1)]
    run = StreamedRun(spill)
    try:
        report = merge_job_parts(named, run.add_line)
    except MergeError as exc:
        raise JobsMergeError(f"the parts of the jobs do not merge: {exc}") from None
    del named
    return show_report(args, report, run)
