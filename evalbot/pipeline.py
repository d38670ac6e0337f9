"""The one place that evaluates: discover → load → run the agent or read the recorded runs → score → the Report.

The command line and the Action both call :func:`evaluate` (and :func:`load_inputs` when they need the config's
``evalbot`` section before evaluating); nothing else evaluates.  Before comparing with a baseline they call
:func:`settle_split_votes`, the stage that decides split judge votes that flipped with more samples. Each input file is read once: configs through one
:class:`~evalbot.load.Configs` cache, every actuals file once, whether it is a recording or plain actuals.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import weakref
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evalbot.compare import reruns, settle
from evalbot.compare.baseline import Baseline
from evalbot.compare.delta import compare
from evalbot.compare.gate import GatePolicy
from evalbot.compare.passrule import apply_pass_rules
from evalbot.criteria import build_criteria
from evalbot.criteria.base import BallotBox, BuildContext, CriteriaBuilder
from evalbot.criteria.custom import read_codes
from evalbot.criteria.custom_process import WorkerPool
from evalbot.errors import EXIT_FAILED, EXIT_INVALID_INPUT, EXIT_OK, InputError
from evalbot.formats import vertex
from evalbot.formats.actuals import Actuals, lazy_mapping_file
from evalbot.formats.jsonio import gc_paused, parse_json, read_text
from evalbot.formats.loaded import LoadedEvalSet
from evalbot.formats.prices import JudgeBudget
from evalbot.judges.budget import tighter
from evalbot.load import (
    DATASET_SUFFIXES,
    Configs,
    actuals_from_text,
    discover,
    discover_selected,
    load_eval_set,
    select_cases,
)
from evalbot.progress import Progress
from evalbot.results import OUTCOME_CODES, CaseStream, Report
from evalbot.runner.aggregate import score_runs
from evalbot.runner.base import Agent, RunSet
from evalbot.runner.execute import RunOptions, run_agent
from evalbot.runner.recording import FORMAT, is_recording, repeated_runs, runs_from_data, write_recording
from evalbot.scoring import score_run
from evalbot.shard.partition import Shard, plan_shards, shard_eval_sets, shard_info

Say = Callable[[str], None]
"""Where the pipeline tells the user what happened besides the report (the CLI prints it on stderr)."""


@dataclass(frozen=True)
class AgentRun:
    """Run the agent instead of reading recorded runs (``--agent`` / ``--adk-agent``)."""

    agent: Agent
    options: RunOptions = field(default_factory=RunOptions)
    record: Path | None = None
    """Write the produced runs here as ADK EvalSetResult JSON (re-score them later as actuals)."""


@dataclass(frozen=True)
class Inputs:
    """The eval sets of a run, loaded, and the configs read for them (each file read once)."""

    eval_sets: list[LoadedEvalSet]
    errors: list[InputError]
    configs: Configs
    files: list[Path]
    selected: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """The cases chosen with ``FILE:case1,case2``, by eval set id (eval sets run whole are absent)."""

    def case_line(self, path: str, eval_id: str) -> int | None:
        """The line of a case's id in its eval set file, noted while loading it (``load_inputs(lines=True)``)."""
        return next((es.case_line(eval_id) for es in self.eval_sets if es.path == path), None)

    def settings(self) -> tuple[dict[str, Any], Path | None]:
        """The config's ``evalbot`` section (gate policy, comment template, baseline path) and its file."""
        return self.configs.settings(self.files)

    def only(self, files: Collection[str]) -> tuple[Inputs, list[tuple[str, bool]]]:
        """These inputs cut to the eval set ``files`` (as loaded: ``str`` of ``self.files``), and every eval set's
        (id, kept) in order (``compare.carry.carry`` carries the others)."""
        kept = [str(f) in files for f in self.files]
        ids = {es.eval_set_id for es, keep in zip(self.eval_sets, kept, strict=True) if keep}
        cut = replace(self, eval_sets=[es for es, keep in zip(self.eval_sets, kept, strict=True) if keep],
                      files=[f for f, keep in zip(self.files, kept, strict=True) if keep],
                      selected={k: v for k, v in self.selected.items() if k in ids})
        return cut, [(es.eval_set_id, keep) for es, keep in zip(self.eval_sets, kept, strict=True)]


def load_inputs(paths: Sequence[str], *, config: str | None = None, lines: bool = False) -> Inputs:
    """Discover and load the eval sets; an explicit ``config`` that cannot be read raises InputError (nothing could
    be scored as intended), every other problem is recorded next to the results that can still be computed.
    ``lines``: note where each case sits in its file (:meth:`Inputs.case_line`, for annotations)."""
    configs = Configs(Path(config) if config else None)
    files, chosen, errors = discover_selected(paths)
    eval_sets = [select_cases(load_eval_set(f, configs, lines=lines), chosen.get(f, ())) for f in files]
    selected = {es.eval_set_id: chosen[f] for f, es in zip(files, eval_sets, strict=True) if chosen.get(f)}
    return Inputs(eval_sets, errors, configs, files, selected)


def settings_for(paths: Sequence[str], *, config: str | None = None) -> tuple[dict[str, Any], Path | None]:
    """The config's ``evalbot`` section without loading the eval sets (the second stage evaluates nothing)."""
    configs = Configs(Path(config) if config else None)
    files, _ = discover(paths)
    return configs.settings(files)


@dataclass
class RecordedActuals:
    """What the actuals files hold: plain actual invocations and, when some files are evalbot recordings, runs."""

    actuals: Actuals
    runs: RunSet | None = None
    errors: list[InputError] = field(default_factory=list)
    """Files that could not be used at all."""
    recording_errors: list[InputError] = field(default_factory=list)
    """Recordings whose evalbot metadata is invalid."""


def read_actuals(paths: Sequence[str]) -> RecordedActuals:
    """Read every actuals file once. A file written by ``--record`` is decided here, explicitly, to be a recording:
    its runs are scored as the run that produced them was (failures and ``--num-runs`` included). An ADK
    EvalSetResult that lists a case several times (AgentEvaluator's N runs) is read as that many runs of it."""
    out = RecordedActuals(Actuals(path=", ".join(paths) or None))
    for raw in paths:
        path = Path(raw)
        try:
            if path.name.endswith(DATASET_SUFFIXES):
                out.actuals.merge(vertex.load_actuals(path))
                continue
            with gc_paused():
                lazy = lazy_mapping_file(path)  # a large plain map, walked a window at a time, not held whole
                if lazy is not None:
                    out.actuals.merge(lazy)
                    continue
                text = read_text(path)
                # cheap tests first: the recording's marker, or an EvalSetResult that may list a case per run
                data = parse_json(text, path) if FORMAT in text or "eval_case_results" in text else None
                runs = data if data is not None and is_recording(data) else repeated_runs(data)
                if runs is not None:
                    try:
                        out.runs = runs_from_data(runs, path, out.runs)
                    except InputError as exc:
                        out.recording_errors.append(exc)
                        out.runs = out.runs or RunSet()
                out.actuals.merge(actuals_from_text(text, path, data))
        except InputError as exc:
            out.errors.append(exc)
            out.actuals.unusable.append(str(path))
    return out


def judge_notices(ctx: BuildContext) -> list[str]:
    """What the report says about the judge: why there is none, and the notes of its setup."""
    notices = [ctx.judge_unavailable_reason] if ctx.judge_unavailable_reason else []
    return notices + list(ctx.judge.notes if ctx.judge is not None else [])


def drop_unused_judge_notices(report: Report, ctx: BuildContext) -> Report:
    """Remove the judge's notices from a report in which no eval set configures a judged criterion: they concern
    nothing that ran."""
    about_judge = set(judge_notices(ctx))
    if about_judge and not any(c.judged for es in report.eval_sets for c in es.criteria):
        report.notices = [n for n in report.notices if n not in about_judge]
    return report


def evaluate(
    source: Sequence[str] | Inputs,
    *,
    actuals: Sequence[str] | RecordedActuals = (),
    config: str | None = None,
    agent: AgentRun | None = None,
    ctx: BuildContext | None = None,
    progress: Progress | None = None,
    criteria: CriteriaBuilder = build_criteria,
    say: Say | None = None,
    shard: Shard | None = None,
    stream: CaseStream | None = None,
    request_base: int = 0,
) -> Report:
    """Evaluate eval sets (files, directories or globs, or inputs already loaded) and return the report.

    The actual runs come from the agent (``agent``) or from the ``actuals`` files (or what ``read_actuals`` read of
    them): evalbot recordings are scored as the run that produced them, anything else as plain actual invocations.  ``criteria`` builds each eval set's
    criteria from its config (tests pass their own).  An explicit ``config`` that cannot be read raises InputError;
    every other problem is recorded in the report next to the results that could be computed.

    With ``shard`` (``--shard K/N``) only that shard's cases are scored, or run by the agent, and the report says
    which part of the run it holds (:mod:`evalbot.shard.partition`; ``evalbot merge`` joins the parts).

    With ``stream`` each case goes there once its verdict is final, in report order, and the report keeps none (see
    :data:`~evalbot.results.CaseStream`): scored from actuals files, a run then holds one case at a time (runs of the
    agent and recordings are pooled whole first, then streamed).
    """
    inputs = source if isinstance(source, Inputs) else load_inputs(source, config=config)
    if shard is not None:
        run = plan_shards(inputs.eval_sets, shard.count)
        part = replace(inputs, eval_sets=shard_eval_sets(inputs.eval_sets, run, shard))
        report = evaluate(part, actuals=actuals, agent=agent, ctx=ctx, progress=progress, criteria=criteria, say=say,
                          stream=stream, request_base=request_base)
        report.shard = shard_info(report, run, shard)
        return report
    ctx = ctx or BuildContext()
    pool = None
    if ctx.workers is None:  # the run's custom-metric workers: each function imported once, stopped at the end
        pool = WorkerPool()
        ctx = replace(ctx, workers=pool)
        if ctx.custom_code_refused is None:  # their code is read from the files before any repository code runs
            read_codes(pool, ((spec.name, es.config.custom_metrics[spec.name], es.path) for es in inputs.eval_sets
                              for spec in es.config.criteria if spec.name in es.config.custom_metrics))
    try:
        return _evaluate(inputs, actuals, agent, ctx, progress, criteria, say, stream, request_base or BASE_REQUESTS)
    finally:
        if pool is not None:
            pool.close()


def with_costs(ctx: BuildContext, policy: GatePolicy, budget: JudgeBudget | None = None) -> BuildContext:
    """``ctx`` priced with ``policy``'s price table (the shipped one and its ``prices``: the judge's and the agent's
    dollars) and its judge held to the tighter of ``policy.judge_budget`` and ``budget`` (a command-line flag or an
    Action input lowers the policy's budget, never raises it)."""
    prices = policy.price_table()
    if ctx.judge is not None:
        ctx.judge.set_prices(prices)
        ctx.judge.set_budget(tighter(policy.judge_budget, budget))
    return replace(ctx, prices=prices)


def _evaluate(inputs: Inputs, actuals: Sequence[str] | RecordedActuals, agent: AgentRun | None, ctx: BuildContext,
              progress: Progress | None, criteria: CriteriaBuilder, say: Say | None,
              stream: CaseStream | None, request_base: int) -> Report:
    if ctx.judge is not None:
        ctx.judge.cap_requests(*request_cap(inputs, request_base))
    notices = judge_notices(ctx)
    if agent is not None:
        report = _run_agent(inputs, agent, ctx, notices, progress, criteria, say or (lambda _: None))
    else:
        read = actuals if isinstance(actuals, RecordedActuals) else read_actuals(actuals)
        errors = inputs.errors + read.errors
        if read.runs is not None:  # runs recorded by `evalbot run --agent/--adk-agent --record`
            report = score_runs(inputs.eval_sets, read.runs, ctx, base=read.actuals,
                                errors=[*errors, *read.recording_errors], notices=notices, criteria=criteria).report
        else:
            report = score_run(inputs.eval_sets, read.actuals, ctx, errors=errors, notices=notices,
                               progress=progress, criteria=criteria, stream=stream)
            stream = None
    if stream is not None:
        _stream_out(report, stream)
    if ctx.agent_tally is not None:
        report.agent_usage = ctx.agent_tally.summary(ctx.prices)
    return drop_unused_judge_notices(report, ctx)


def _stream_out(report: Report, stream: CaseStream) -> None:
    """Send a report's cases to ``stream``, in order, and drop them from the report."""
    for index, es in enumerate(report.eval_sets):
        for case in es.cases:
            stream(index, es, case)
        es.cases = []


SPILL_BUFFER = 1 << 20
"""The temporary file's buffer: a run writes one case line of a few KB at a time (one system call per megabyte
instead of one per line or two), and copies it into the report a megabyte at a time."""

READ_AHEAD = 1 << 16
"""How much PackedSpill reads at once: the report file reads the kept cases' turns and verdicts in the order they
were written, so one read serves many cases."""


class PackedSpill:
    """A SpillStore (``BuildContext.spill_store``) in an anonymous temporary file: ``compare`` keeps there the packed
    turns and per-invocation verdicts of every case its report holds (a failing case's largest part, read back only
    when a render or the report file reaches them), so its memory holds where they are, not them. Written a megabyte
    at a time, read back READ_AHEAD bytes at a time (the report reads its cases in the order they were written); the
    file is made on the first write, removed from its folder at once, and closed when the last case holding it is
    gone. When it cannot be made, left without a name, or written (no room in TMPDIR), they stay in memory: nothing
    is lost, only the saving."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._pending = bytearray()
        """Bytes put but not yet written: they start at ``_written`` in the store."""
        self._written = 0
        self._broken = False
        self._window = b""
        """The last bytes read from the file, from ``_window_start``."""
        self._window_start = 0

    def put(self, data: bytes) -> int | None:
        if self._broken:
            return None
        if self._fd is None:
            try:
                fd, path = tempfile.mkstemp(prefix="evalbot-turns-")
            except OSError:
                self._broken = True
                return None
            try:
                os.unlink(path)  # no name left: nothing else can open it, and it goes when it is closed
            except OSError:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(path)
                self._broken = True
                return None
            weakref.finalize(self, os.close, fd)
            self._fd = fd
        start = self._written + len(self._pending)
        self._pending += data
        if len(self._pending) >= SPILL_BUFFER:
            self._write()
        return start

    def _write(self) -> None:
        """Write the pending bytes; on a failure keep what is left of them in memory (and write no more)."""
        assert self._fd is not None
        try:
            while self._pending:
                done = os.write(self._fd, self._pending)
                del self._pending[:done]
                self._written += done
        except OSError:
            self._broken = True

    def get(self, start: int, size: int) -> bytes:
        at = start - self._window_start
        if 0 <= at and at + size <= len(self._window):  # the common case first: read with the bytes before it
            return self._window[at:at + size]
        end = start + size
        if start >= self._written:
            return bytes(self._pending[start - self._written:end - self._written])
        if end <= self._written and size < READ_AHEAD:
            self._window, self._window_start = self._read(start, min(READ_AHEAD, self._written - start)), start
            return self._window[:size]
        return self._read(start, min(end, self._written) - start) + bytes(self._pending[:max(0, end - self._written)])

    def _read(self, start: int, size: int) -> bytes:
        assert self._fd is not None
        read = b""
        while len(read) < size:
            more = os.pread(self._fd, size - len(read), start + len(read))
            if not more:
                raise OSError("the temporary file of the kept cases is shorter than written")
            read += more
        return read


REQUESTS_PER_CASE_CRITERION = 2_000
"""Judge requests one criterion may need on one case: 64 samples one request each on a model without
candidate_count, over a conversation of many turns, plus settling split votes. A backstop, not a budget."""
BASE_REQUESTS = 1_000


def request_cap(inputs: Inputs, base: int = BASE_REQUESTS) -> tuple[int, str]:
    """The run-wide cap on judge requests, derived from the cases, and how (printed when the cap is hit); ``base``:
    its fixed part (a job of ``evalbot run --jobs N`` is given its share of BASE_REQUESTS)."""
    units = sum(len(es.cases) * max(1, len(es.config.criteria)) for es in inputs.eval_sets)
    return (base + units * REQUESTS_PER_CASE_CRITERION,
            f"{base:,} + {REQUESTS_PER_CASE_CRITERION:,} per case and criterion, {units:,} of them")


def _run_agent(inputs: Inputs, run: AgentRun, ctx: BuildContext, notices: list[str], progress: Progress | None,
               criteria: CriteriaBuilder, say: Say) -> Report:
    options = replace(run.options, judge=ctx.judge, judge_unavailable_reason=ctx.judge_unavailable_reason)
    runs = run_agent(run.agent, inputs.eval_sets, options, progress)
    outcomes = Counter(r.outcome for case_runs in runs.runs.values() for r in case_runs)
    summary = ", ".join(f"{n} {o}" for o, n in sorted(outcomes.items())) or "no case to run"
    say(f"ran {run.agent.label}: {summary} (case runs)")
    scored = score_runs(inputs.eval_sets, runs, ctx, errors=inputs.errors, notices=notices, criteria=criteria)
    if run.record is not None:
        path = write_recording(run.record, inputs.eval_sets, runs, scored.per_run)  # InputError naming --record
        say(f"recorded the runs in {path}")
    return scored.report


def ballots_for(baseline: Baseline | None, policy: GatePolicy) -> BallotBox | None:
    """The ballot box a run keeps when it will settle split votes against ``baseline`` (a pull request's, or the one
    a refresh replaces) under ``policy``: None when it will not, so no votes are held for nothing."""
    return BallotBox() if settle.settles(baseline, policy) else None


def settle_split_votes(report: Report, baseline: Baseline | None, ctx: BuildContext, policy: GatePolicy) -> int:
    """The stage between scoring and comparing: a judged verdict that flipped against the baseline on a split vote
    is asked ``policy.resample_split`` more samples by the run's own judge (same cache, deadline and usage ledger)
    and decided by the larger vote, in ``report``; returns how many invocations were resampled.

    The policy's ``pass_rule`` decides each case from its runs first (:mod:`evalbot.compare.passrule`), so a baseline
    records what the gate decides. Nothing else happens without a baseline, with ``noise_aware`` off or ``resample_split`` 0, or when scoring kept no
    votes (``ctx.ballots`` None). The report's usage is refreshed to include the extra samples. A shard's part
    records what it settled against (``ShardInfo.settled_against``), for the merge to check."""
    apply_pass_rules(report, policy.pass_rule)
    extra = policy.resample_split
    if report.shard is not None:
        report.shard.settled_against = settle.fingerprint(baseline, policy) if ctx.ballots is not None else None
    if ballots_for(baseline, policy) is None or ctx.ballots is None or ctx.judge is None:
        return 0
    found = settle.targets(compare(current=report, baseline=baseline, policy=policy), ctx.ballots)
    if not found:
        return 0

    async def resample() -> list[str | None]:
        return list(await asyncio.gather(*(t.ballot.more(extra) for t in found)))

    answers = asyncio.run(resample())
    changed = settle.apply(report, list(zip(found, answers, strict=True)), policy.alpha)
    usage = ctx.judge.usage_summary()
    report.usage = usage if usage.per_criterion else report.usage
    return changed


def rerun_flipped(inputs: Inputs, run: AgentRun, report: Report, baseline: Baseline | None, ctx: BuildContext,
                  policy: GatePolicy, *, criteria: CriteriaBuilder = build_criteria, say: Say | None = None) -> list[str]:
    """The stage after settling, when evalbot ran the agent: each case that passed on main and fails now is run
    ``policy.rerun_flipped`` more times (same agent options, judge and criteria) and its reruns are appended to its
    runs in ``report`` (``CaseResult.runs``, ``reruns``); comparing then decides it against main's history
    (:mod:`evalbot.compare.reruns`). At most :func:`~evalbot.compare.reruns.rerun_budget` reruns per run; returns
    the notices for the comment (the cap, when it was hit)."""
    per_case = policy.rerun_flipped
    if baseline is None or per_case <= 0:
        return []
    targets = reruns.flipped(compare(current=report, baseline=baseline, policy=policy))
    if not targets:
        return []
    case_runs = sum(len(es.cases) for es in inputs.eval_sets) * run.options.num_runs
    budget = reruns.rerun_budget(case_runs)
    chosen = reruns.rerun_cases(targets, per_case, budget)
    notes = [reruns.capped_note(len(chosen), len(targets), budget, case_runs)] if len(chosen) < len(targets) else []
    wanted: dict[str, list[str]] = {}
    for set_id, eval_id in chosen:
        wanted.setdefault(set_id, []).append(eval_id)
    sets = [select_cases(es, wanted[es.eval_set_id]) for es in inputs.eval_sets if es.eval_set_id in wanted]
    options = replace(run.options, num_runs=per_case, judge=ctx.judge,
                      judge_unavailable_reason=ctx.judge_unavailable_reason)
    again = score_runs(sets, run_agent(run.agent, sets, options), ctx, criteria=criteria).report
    for es in again.eval_sets:
        target = next(t for t in report.eval_sets if t.eval_set_id == es.eval_set_id)
        for case in es.cases:
            mine = next((c for c in target.cases if c.eval_id == case.eval_id), None)
            if mine is not None and not mine.reruns:
                letters = case.runs or OUTCOME_CODES[case.status]
                mine.runs = (mine.runs or OUTCOME_CODES[mine.status]) + letters
                mine.reruns = len(letters)
    if ctx.judge is not None:
        usage = ctx.judge.usage_summary()
        report.usage = usage if usage.per_criterion else report.usage
    if say is not None:
        say(f"reran {len(chosen)} flipped case(s) {per_case} more time(s) each ({len(chosen) * per_case} agent runs)")
        for note in notes:
            say(f"notice: {note}")
    return notes


def exit_code(report: Report) -> int:
    """0 all passed · 1 some case failed · 2 some input could not be used (results of the rest still reported)."""
    if report.errors or report.totals.error or any(es.errors for es in report.eval_sets):
        return EXIT_INVALID_INPUT
    return EXIT_FAILED if report.totals.failed else EXIT_OK
