"""``evalbot run --jobs N``: one run's cases scored by N processes of this interpreter, merged into one report.
Without --jobs, ``default_jobs`` picks ``--jobs auto`` for inputs of AUTO_JOBS_BYTES or more, else one process.

Job K is ``evalbot run ... --as-job K/N``: it reads the inputs, scores the K-th of N runs of consecutive cases
(``shard.job_eval_sets``: chosen from the loaded case list, no case parsed; not ``--shard K/N``'s partition, which
parses every case to balance invocations) and writes into a private temporary folder its cases' report text as it
streams them (``cases_path``), its report without the cases (the part) and its notes (``notes_path``: per eval set,
where its cases' text is, their tallies for the summaries, the console and the judge gaps, and what their notices are
made of: ``JobRun.state``, ``shard.job_notes``). Once every job has written them, the parent joins them in job
order (``join_parts``, ``shard.merge_job_parts``): each eval set's cases are job 1's, then job 2's..., copied as the
jobs wrote them, its summaries, statuses and totals are the jobs' tallies added up in that order (the same numbers
added in the same order as one job adds them), and its case notices are made from the jobs' notes as one job makes
them over all its cases. The parts are this run's own, written by its children into the private folder this process
created (mode 0700), so nothing in them is decoded or validated again beyond what the join checks (``evalbot merge``
validates the parts it is given). The report, the console text and the exit code are those of one job, byte for
byte.

What is run-wide is shared, never multiplied: each job is given its share of --judge-concurrency (so the jobs never
have more judge calls in flight together than the flag allows; there are never more jobs than that number) and its
share of the fixed part of the run-wide judge request cap (``pipeline.request_cap``). The jobs get this process's
environment, so each scrubs the same secrets from what it writes.

A job that fails fails the run: its input error is shown as one job shows it (exit 2); a job killed from outside
(out of memory, a signal) is "could not measure" (exit 3); a job that crashed is a bug (exit 70). The other jobs
are stopped then, nothing is written to --report, and the temporary parts are removed. Ctrl-C (or SIGTERM) stops
every job. A parent that vanishes without stopping them (SIGKILL, a crash of the interpreter) is noticed by each job
(``ParentWatch``: the job's stdin is a pipe whose other end only the parent holds, so it reads end of file the moment
the parent is gone): the job removes what it wrote and ends at once.

When one job would show its progress (stderr is a terminal, ``progress.terminal_progress``), the parent shows the
jobs' together: each job writes how many of its cases are done to a pipe the jobs share (``ProgressPipe``), and the
parent adds them up on its terminal line (``JobsProgress``), erased before anything else is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, BinaryIO, TextIO

import msgspec

from evalbot.cli.agent import wants_agent
from evalbot.cli.args import jobs as jobs_arg
from evalbot.cli.evaluate import SPILL_BUFFER, StreamedRun, copy_span, evaluate_args, show_report, write_report
from evalbot.compare.judge_gaps import GapTally
from evalbot.errors import EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_OK, EXIT_UNAVAILABLE, ConfigError
from evalbot.judges.budget import BUDGET_MARK
from evalbot.load import discover_selected
from evalbot.pipeline import BASE_REQUESTS, load_inputs
from evalbot.progress import TerminalProgress, terminal_progress
from evalbot.redact import scrub
from evalbot.render.console import ConsoleTally
from evalbot.results import CaseTally, CaseView, EvalSetReport, Report
from evalbot.shard.jobnotes import JobNotes, job_notes, merge_job_parts
from evalbot.shard.merge import MergeError
from evalbot.shard.partition import Shard, job_eval_sets

FORWARDED = ("paths", "actuals", "config", "judge_concurrency", "judge_cache", "judge_replay", "judge_timeout",
             "judge_deadline", "sampling", "verbose", "judge_budget_requests", "judge_budget_usd")
"""The options of ``evalbot run`` each job is given (``job_command``; --judge-concurrency as the job's share; the
judge budget whole: each job takes its share of it, ``JudgeBudget.share``)."""
PARENT_ONLY = ("command", "jobs", "as_job", "watch_parent", "progress_fd", "shard", "report", "html", "judge_failures", "agent",
               "estimate", "adk_agent", "num_runs", "record", "agent_concurrency", "agent_timeout")
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


AUTO_JOBS_BYTES = 64 * 2**20
"""Without --jobs, ``evalbot run`` uses one job per CPU (``--jobs auto``) when its eval set files and --actuals files
add up to this many bytes (``input_bytes``), else one: below it the jobs' start (an interpreter and its imports
each) and each job's read of every input file cost more than the split saves (bench/README.md, "run --jobs by
default")."""


class JobsNotStarted(Exception):
    """The jobs could not be started (``error``: the system's refusal); none is left running, nothing was written."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def input_bytes(args: argparse.Namespace) -> int:
    """The bytes of the eval set files and --actuals files of ``evalbot run`` (as found by discovery; what is not
    a regular file, or cannot be seen, counts 0: the run reports it); 0 when the paths select cases (FILE:ids: a
    few cases of a file). Nothing is opened."""
    files, selected, _ = discover_selected(args.paths)
    if selected:
        return 0
    total = 0
    for path in [*files, *map(Path, args.actuals)]:
        try:
            info = path.stat()
        except (OSError, ValueError):
            continue
        total += info.st_size if stat.S_ISREG(info.st_mode) else 0
    return total


def default_jobs(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """How many jobs ``evalbot run`` uses when --jobs is not given: one per CPU this process may use (as ``--jobs
    auto``; at most --judge-concurrency) when the inputs add up to AUTO_JOBS_BYTES or more, else 1. Always 1, and
    nothing said, where --jobs would be refused or would give one job (--shard, --html, the agent options), and with a
    judge cache (--judge-cache, $EVALBOT_JUDGE_CACHE: jobs that fill it may count its hits otherwise than one job)."""
    if args.shard is not None or single_job_reason(args) is not None:
        return 1
    if args.judge_cache or env.get("EVALBOT_JUDGE_CACHE"):
        return 1
    if input_bytes(args) < AUTO_JOBS_BYTES:
        return 1
    return min(jobs_arg("auto"), int(args.judge_concurrency))


def jobs_for(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """How many jobs ``evalbot run`` uses: --jobs (``default_jobs`` without it); 1 (with a notice) when the run
    cannot be split here; at most --judge-concurrency (each job needs one judge slot). --jobs with --shard is
    refused (ConfigError)."""
    if args.watch_parent or args.progress_fd is not None:
        raise ConfigError("--watch-parent and --progress-fd are given by `evalbot run --jobs N` to the jobs it starts (with --as-job)")
    if args.jobs is None:
        return default_jobs(args, env)
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


def job_command(args: argparse.Namespace, index: int, count: int, part: Path, progress_fd: int | None = None,
                ) -> list[str]:
    """The command line of job ``index`` of ``count``: this interpreter running ``evalbot run --as-job K/N`` with
    the run's options (``FORWARDED``), its share of --judge-concurrency, and ``part`` as its report. ``-P``: the
    working directory (the checkout evaluated, a pull request's tree) is not put on sys.path, so an ``evalbot``
    package committed there never runs in a job, where the judge keys are. Values are given
    as ``--flag=value`` and the eval set paths after ``--``, so no value can read as an option; ``--watch-parent``:
    the job's stdin is the parent's pipe (``ParentWatch``); ``progress_fd``: where the job writes its progress
    (``ProgressPipe``)."""
    cmd = [sys.executable, "-P", "-m", "evalbot.cli", *(["-v"] if args.verbose else []), "run",
           f"--as-job={index}/{count}", "--watch-parent", f"--report={part}",
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
    if args.judge_budget_requests is not None:
        cmd.append(f"--judge-budget-requests={args.judge_budget_requests}")
    if args.judge_budget_usd is not None:
        cmd.append(f"--judge-budget-usd={args.judge_budget_usd!r}")
    if progress_fd is not None:
        cmd.append(f"--progress-fd={progress_fd}")
    return [*cmd, "--", *args.paths]


def run_as_job(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot run --as-job K/N`` (hidden; what ``run_jobs`` starts): score the K-th of N runs of the cases
    (``shard.job_eval_sets``) with the job's share of the judge request cap, streaming each case's report text into
    PART's cases file (``cases_path``); then write PART (--report), its report without the cases, and its notes
    (``notes_path``: per eval set, where its cases' text is, their tallies and what their notices are made of);
    print nothing else."""
    if args.shard is not None or (args.jobs or 1) > 1 or wants_agent(args) or args.html or not args.report:
        raise ConfigError("--as-job K/N is one job of `evalbot run --jobs N`, which starts it: it takes --report "
                          "PART.json and the scoring options only; use --jobs N")
    job = args.as_job
    part = Path(args.report)
    watch = ParentWatch(job, [part, cases_path(part), notes_path(part)])
    if args.watch_parent:
        watch.start()
    inputs = load_inputs(args.paths, config=args.config)
    mine = job_eval_sets(inputs.eval_sets, job)
    progress = None
    if args.progress_fd is not None:
        progress = ProgressPipe(args.progress_fd, job.index)
        progress(0, sum(len(es.cases) for es in mine))  # its share of the total, before any case is done
    with watch.writing():
        spill = open(cases_path(part), "w+b", buffering=SPILL_BUFFER)  # closed below
    with spill:
        run = JobRun(spill)
        report = evaluate_args(args, env, replace(inputs, eval_sets=mine), stream=run,
                               request_base=share(BASE_REQUESTS, job.index, job.count), progress=progress)
    notes = job_notes(mine, {index: tallies[0] for index, tallies in run.sets.items()})
    with watch.writing():
        write_report(report, args.report)
        notes_path(part).write_bytes(_STATE.encode(run.state(job, notes, len(mine))))
    return EXIT_OK


PARENT_GONE_EXIT = 128 + signal.SIGTERM
"""A job's exit code when it ends because its parent is gone (as if stopped by SIGTERM; nobody reads it)."""


class ParentWatch:
    """Ends this job (``--as-job K/N --watch-parent``) as soon as its parent is gone, however it went (SIGKILL
    included): its stdin is a pipe whose write end the parent alone holds (``run_jobs``), so reading it returns end of
    file once the parent has ended, even if it ended before this job got here. Portable (no prctl, no polling of
    the parent's pid, which another process may reuse). A thread waits on the pipe; on end of file it takes the lock
    the job holds while it creates its files (``writing``), removes them (part, cases, notes: nothing a later run
    could take for results), removes the parent's private folder if it is then empty (the last job to go does),
    and ends the process at once with PARENT_GONE_EXIT. Custom metric workers of the job see their own stdin close
    and end too."""

    def __init__(self, job: Shard, files: Sequence[Path], fd: int = 0) -> None:
        self.job = job
        self.files = list(files)
        self.fd = fd
        self.lock = threading.Lock()

    def start(self) -> None:
        threading.Thread(target=self._watch, name="evalbot-parent-watch", daemon=True).start()

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        """Create files under the lock: once the parent is gone, none is created."""
        with self.lock:
            yield

    def _watch(self) -> None:
        while True:
            try:
                if not os.read(self.fd, 4096):
                    break
            except OSError:
                break
        self.stop()

    def stop(self) -> None:
        """The parent is gone: remove this job's files and end the process (never returns)."""
        self.lock.acquire()  # held until the end: the main thread creates no file from now on
        for path in self.files:
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(OSError):
            self.files[0].parent.rmdir()  # the parent's folder, once every job's files are gone
        with contextlib.suppress(OSError):
            os.write(2, f"evalbot: job {self.job.index} of {self.job.count}: its parent is gone: stopped, its files "
                        "removed\n".encode())
        os._exit(PARENT_GONE_EXIT)


def cases_path(part: Path) -> Path:
    """Where a job writes its cases' report text (one case per line, scrubbed, eval set after eval set)."""
    return part.with_name(part.stem + ".cases")


def notes_path(part: Path) -> Path:
    """Where a job writes its notes (``JobRun.state``) beside its part."""
    return part.with_name(part.stem + ".notes")


class _SetRun(msgspec.Struct, forbid_unknown_fields=True):
    """One job's cases of one eval set as the console and the judge gaps count them, and where their text is."""

    span: tuple[int, int, int]
    """Start, end and number of cases of their text in the job's cases file."""
    cases: int
    values: dict[str, list[float]]
    bad: list[tuple[str, str, int, list[str]]]
    bad_count: int
    gaps: tuple[int, int, int]
    """The judged verdicts: all, failed, without a judge."""
    reasons: list[tuple[str, int]]
    no_judge_reason: str | None


class _JobState(msgspec.Struct, forbid_unknown_fields=True):
    """All a job of ``run --jobs`` tells its parent besides its part (msgpack: floats exact, NaN included)."""

    job: tuple[int, int]
    """Which job wrote it: K and N of ``--as-job K/N``."""
    notes: JobNotes
    sets: list[_SetRun]


_STATE = msgspec.msgpack.Encoder()
_READ_STATE = msgspec.msgpack.Decoder(_JobState)


class JobRun(StreamedRun):
    """What a job of ``run --jobs`` keeps of its streamed cases: their text in its cases file, and per eval set
    their tallies (``results.CaseTally``, the console's with each value kept, the judge gaps'), which the parent
    adds up job after job in report order."""

    def __init__(self, spill: BinaryIO) -> None:
        super().__init__(spill)
        self.sets: dict[int, tuple[CaseTally, ConsoleTally, GapTally]] = {}

    def tally(self, index: int, es: EvalSetReport, case: CaseView) -> None:
        tallies = self.sets.get(index)
        if tallies is None:
            tallies = self.sets[index] = (CaseTally(), ConsoleTally(keep_values=True), GapTally())
        tallies[0].add(case)
        tallies[1].add(index, es, case)
        tallies[2].add(index, es, case)

    def state(self, job: Shard, notes: JobNotes, count: int) -> _JobState:
        """What the parent is told by ``job``: ``notes`` and, for each of the ``count`` eval sets, its cases'
        tallies."""
        sets = []
        for index in range(count):
            _, console, gaps = self.sets.get(index, (None, ConsoleTally(keep_values=True), GapTally()))
            assert console.series is not None
            start, end, cases = self.spans.get(index, (0, 0, 0))
            sets.append(_SetRun(
                span=(start, end, cases), cases=console.cases.get(index, 0),
                values={name: values for (_, name), values in console.series.items()}, bad=console.bad,
                bad_count=console.bad_count, gaps=(gaps.total, gaps.failed, gaps.no_judge),
                reasons=list(gaps.reasons.items()), no_judge_reason=gaps.no_judge_reason))
        return _JobState((job.index, job.count), notes, sets)


PROGRESS_S = 0.1
"""At most how often a job tells its parent its progress (and when its last case is done)."""


class ProgressPipe:
    """A job's progress (``progress.Progress``), told to its parent as ``K DONE TOTAL`` lines on the pipe the jobs
    share (``--progress-fd``): each line is shorter than PIPE_BUF, so written whole, never mixed with another job's;
    the pipe is non-blocking, so a line that does not fit (the parent slow to read) or a parent gone is dropped,
    never waited for."""

    def __init__(self, fd: int, index: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.fd = fd
        self.index = index
        self.clock = clock
        self.last: float | None = None

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if 0 < done < total and self.last is not None and now - self.last < PROGRESS_S:
            return
        self.last = now
        with contextlib.suppress(OSError):
            os.write(self.fd, f"{self.index} {done} {total}\n".encode("ascii"))


class JobsProgress:
    """The parent's side of the jobs' progress: the pipe they write to (``write_fd``, given to each job) and the
    terminal line (``bar``) showing their cases done out of their cases in all, once every job has said its total.
    A line that does not read as one job's progress is ignored (it is only shown, never counted as a result)."""

    MAX_LINE = 64

    def __init__(self, bar: TerminalProgress, count: int) -> None:
        self.bar = bar
        self.count = count
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self.write_fd, False)  # the jobs' end: a full pipe drops a line (ProgressPipe)
        self.pending = b""
        self.jobs: dict[int, tuple[int, int]] = {}

    def started(self) -> None:
        """Every job has its copy of the write end: close this process's."""
        with contextlib.suppress(OSError):
            os.close(self.write_fd)

    def poll(self) -> None:
        """Read what the jobs wrote since the last poll; redraw the line."""
        while True:
            try:
                data = os.read(self.read_fd, 65536)
            except (BlockingIOError, InterruptedError):
                break
            if not data:
                break
            self.pending += data
        *lines, self.pending = self.pending.split(b"\n")
        if len(self.pending) > self.MAX_LINE:
            self.pending = b""
        for raw in lines:
            fields = raw.split(b" ")
            if len(fields) != 3 or not all(f.isdigit() and len(f) < 16 for f in fields):
                continue
            index, done, total = (int(f) for f in fields)
            if 1 <= index <= self.count and done <= total:
                self.jobs[index] = (done, total)
        if len(self.jobs) == self.count:
            self.bar(sum(done for done, _ in self.jobs.values()), sum(total for _, total in self.jobs.values()))

    def close(self) -> None:
        """Erase the line; close the pipe."""
        self.bar.close()
        self.started()
        with contextlib.suppress(OSError):
            os.close(self.read_fd)


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
        bar = terminal_progress(sys.stderr)  # shown when one job would show it
        progress = JobsProgress(bar, count) if bar is not None else None
        fds = () if progress is None else (progress.write_fd,)
        try:
            with _sigterm_as_exit():
                for k, part in enumerate(parts, start=1):
                    errors = stack.enter_context(tempfile.TemporaryFile(dir=folder))
                    # stdin: the pipe whose end of file tells the job this process is gone (ParentWatch); only
                    # this process holds its write end (close_fds: not the other jobs), until the job has ended
                    try:
                        proc = subprocess.Popen(job_command(args, k, count, part, fds[0] if fds else None),
                                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=errors,
                                                env=dict(env), pass_fds=fds)
                    except OSError as exc:  # no process to be had (EAGAIN, ENOMEM...): the started ones stopped
                        raise JobsNotStarted(exc) from exc
                    jobs.append(_Job(k, proc, errors))
                if progress is not None:
                    progress.started()
                failed = _wait(jobs, progress)
        finally:
            _stop(jobs)
            if progress is not None:
                progress.close()
        if failed is not None:
            return _failure(failed, count)
        for job in jobs:  # what the jobs logged (warnings; with -v, debug lines), in job order
            sys.stderr.write(_text(job))
        return _merged(args, parts)


def _wait(jobs: Sequence[_Job], progress: JobsProgress | None = None) -> _Job | None:
    """Wait until every job has ended; the first to fail, as soon as it does (None when all wrote their parts).
    ``progress``: polled meanwhile."""
    pending = list(jobs)
    while pending:
        if progress is not None:
            progress.poll()
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
        if job.proc.stdin is not None:
            with contextlib.suppress(OSError):
                job.proc.stdin.close()


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


def _merged(args: argparse.Namespace, parts: Sequence[Path]) -> int:
    """Join the jobs' parts, write --report, print; the run's exit code."""
    report, joined = join_parts(parts)
    return show_report(args, report, joined)


def join_parts(parts: Sequence[Path]) -> tuple[Report, JoinedRun]:
    """The report of ``run --jobs`` from its jobs' parts (``shard.merge_job_parts``) and its cases as the jobs
    wrote them, with their tallies: each eval set's cases are job 1's, then job 2's... (JobsMergeError when the
    parts do not join: a bug)."""
    try:
        states = [_READ_STATE.decode(notes_path(part).read_bytes()) for part in parts]
        report = merge_job_parts([(f"job {k}", part.read_bytes(), state.notes)
                                  for k, (part, state) in enumerate(zip(parts, states, strict=True), start=1)])
        sizes = [cases_path(part).stat().st_size for part in parts]
    except (MergeError, msgspec.MsgspecError, OSError) as exc:
        raise JobsMergeError(f"the parts of the jobs do not join: {exc}") from None
    for k, (size, state) in enumerate(zip(sizes, states, strict=True), start=1):
        if state.job != (k, len(parts)) or len(state.sets) != len(report.eval_sets) or any(
                s.span[2] != s.cases or not 0 <= s.span[0] <= s.span[1] <= size
                or n.totals.get("cases") != s.cases for s, n in zip(state.sets, state.notes.eval_sets, strict=True)):
            raise JobsMergeError(f"the parts of the jobs do not join: job {k}'s notes are another job's, or list "
                                 "other cases than its cases file holds")
    joined = JoinedRun([cases_path(part) for part in parts], [[s.span for s in state.sets] for state in states])
    for index in range(len(report.eval_sets)):
        for state in states:
            joined.console.absorb(_console_of(index, state.sets[index]))
            joined.gaps.absorb(_gaps_of(state.sets[index]))
    return report, joined


def _console_of(index: int, run: _SetRun) -> ConsoleTally:
    console = ConsoleTally(keep_values=True)
    console.cases = {index: run.cases} if run.cases else {}
    console.series = {(index, name): values for name, values in run.values.items()}
    for line in run.bad:
        console.absorb_line(line)
    console.bad_count = run.bad_count
    return console


def _gaps_of(run: _SetRun) -> GapTally:
    gaps = GapTally()
    gaps.total, gaps.failed, gaps.no_judge = run.gaps
    gaps.reasons = Counter(dict(run.reasons))
    gaps.no_judge_reason = run.no_judge_reason
    gaps.budget = sum(count for reason, count in gaps.reasons.items() if BUDGET_MARK in reason)  # each reason whole
    return gaps


class JoinedRun(StreamedRun):
    """The cases of ``run --jobs``, as its jobs wrote them into their cases files (``cases``; ``spans``: per job,
    per eval set, start, end and count), with the console's and the judge gaps' tallies the parent added up."""

    def __init__(self, cases: Sequence[Path], spans: Sequence[Sequence[tuple[int, int, int]]]) -> None:
        super().__init__(None)
        self.cases = list(cases)
        self.job_spans = spans

    def copy_cases(self, index: int, out: TextIO) -> None:
        """Write the ``index``-th eval set's case lines: each job's in turn (each starts with a line break, and the
        first of a later job's follows the earlier ones' after a comma, as one job writes them)."""
        written = False
        for path, spans in zip(self.cases, self.job_spans, strict=True):
            start, end, count = spans[index]
            if not count:
                continue
            if written:
                out.write(",")
            with open(path, "rb") as file:
                copy_span(file, start, end, out)
            written = True
