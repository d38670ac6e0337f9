"""Score loaded eval sets against actual invocations: the pure core of a run (judges come in as an object)."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import logging
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from evalbot.criteria import READS, RUBRIC_READERS, BrokenCriterion, build_criteria
from evalbot.criteria.base import AgentTally, BuildContext, CaseInput, CriteriaBuilder, Criterion
from evalbot.errors import EvalbotError, InputError, printable, unknown_key_notice
from evalbot.formats import vertex
from evalbot.formats.actuals import Actuals
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.invocations import final_text, tool_call_rows, user_text
from evalbot.formats.jsonio import gc_paused
from evalbot.formats.loaded import CaseNotes, LoadedCase, LoadedEvalSet
from evalbot.progress import Progress
from evalbot.results import (
    CaseResult,
    CaseStream,
    CaseTally,
    CriterionInfo,
    EvalSetReport,
    MetricResult,
    Problem,
    Report,
    Totals,
    TurnView,
    case_status,
    compacted,
    summarize_cases,
    totals,
)
from evalbot.turnpack import CallRow, PackedTurns, TurnRow, built, turn_from_row

log = logging.getLogger(__name__)


def problem(err: InputError) -> Problem:
    """An InputError as a report entry."""
    return Problem(path=err.path, pointer=err.pointer or None, message=err.message)


_CANONICAL = json.JSONEncoder(sort_keys=True, ensure_ascii=False).encode
"""``json.dumps(value, sort_keys=True, ensure_ascii=False)``, with the encoder built once."""
_SORTED = msgspec.json.Encoder(order="sorted")
_FLOAT = re.compile(rb"[:,\[]-?[0-9]+(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)(?=[,\]}])")
"""A float as msgspec writes it in compact JSON, after a structural character (a string may match too: then json
encodes the value, as it would anyway)."""
_FLOAT_HINTS = (re.compile(rb"\.(?<=[0-9]\.)"), re.compile(rb"e(?<=[0-9]e)"), re.compile(rb"E(?<=[0-9]E)"))
"""What every _FLOAT match holds: a digit followed by ``.``, ``e`` or ``E``. Each pattern starts with its literal,
which the regex engine finds by a fast scan: the three take about half the time of _FLOAT on text without a float,
where _FLOAT tries a match at every ``:``, ``,`` and ``[``."""


def _may_hold_float(raw: bytes) -> bool:
    """Whether ``raw`` (msgspec's compact JSON) may hold a float (_FLOAT then decides)."""
    return any(hint.search(raw) is not None for hint in _FLOAT_HINTS) and _FLOAT.search(raw) is not None


def _json_bytes(value: Any) -> bytes:
    return _CANONICAL(value).encode()


def canonical_json(value: Any) -> bytes:
    """``json.dumps(value, sort_keys=True, ensure_ascii=False).encode()`` for a value decoded from JSON without a
    non-finite float (msgspec writes infinity as null), about 1.5x faster: msgspec's sorted encoding (the same key
    order and string escapes as json's) laid out with json's ``", "`` and ``": "`` by msgspec.json.format. A value
    holding a float is encoded by json itself: the two write some floats differently (``1e+16`` / ``1e16``)."""
    if type(value) is float:
        return _json_bytes(value)
    try:
        raw = _SORTED.encode(value)
    except (TypeError, ValueError):  # what msgspec cannot encode: json decides, as before
        return _json_bytes(value)
    if _may_hold_float(raw):
        return _json_bytes(value)
    return msgspec.json.format(raw, indent=0)


def _timed(case: EvalCase) -> bool:
    """Whether an expected invocation holds a typed float field, which a dump can leave non-finite (floats inside
    free-form values are dumped as null when they are not finite)."""
    return any(
        inv.duration is not None or inv.model_duration is not None or inv.tool_duration is not None
        for inv in case.conversation or ()
    )


def case_fingerprints(case: EvalCase) -> tuple[str, str]:
    """Stable hashes of what a case asks for (conversation or scenario, rubrics, session), timestamps excluded: with
    its id (the baseline's ``fingerprint``) and without it (``content``: finds a case renamed or moved).

    Each is the sha256 of the case's sorted ``json.dumps`` (``sort_keys=True, ensure_ascii=False``), with and without
    ``eval_id``. The two documents differ only by that member, so each top-level member is encoded once (see
    canonical_json) and the two texts are joined from the same pieces, exactly as ``json.dumps`` lays out a dict
    (``", "`` and ``": "``).
    """
    dumped = case.model_dump(mode="json", exclude_none=True, exclude={"creation_timestamp"})
    for inv in dumped.get("conversation") or []:
        inv.pop("creation_timestamp", None)
        inv.pop("invocation_id", None)
    encode = _json_bytes if _timed(case) else canonical_json
    members = [(key, _json_bytes(key) + b": " + encode(value)) for key, value in sorted(dumped.items())]
    full = b"{" + b", ".join(text for _, text in members) + b"}"
    content = b"{" + b", ".join(text for key, text in members if key != "eval_id") + b"}"
    return hashlib.sha256(full).hexdigest()[:16], hashlib.sha256(content).hexdigest()[:16]


def case_fingerprint(case: EvalCase) -> str:
    """Stable hash of what a case asks for, its id included (see :func:`case_fingerprints`)."""
    return case_fingerprints(case)[0]


def _rows(
    actual: Sequence[Invocation],
    expected: Sequence[Invocation] | None,
    actual_calls: Sequence[list[CallRow]],
    expected_calls: Sequence[list[CallRow]] | None,
    actual_texts: Sequence[str],
    expected_texts: Sequence[str] | None,
) -> list[TurnRow]:
    rows: list[TurnRow] = []
    n_expected = len(expected) if expected is not None else 0
    for i, act in enumerate(actual):
        has_exp = i < n_expected
        user = user_text(act) or (user_text(expected[i]) if has_exp and expected is not None else "")
        rows.append((
            act.invocation_id or None,
            user,
            expected_texts[i] if has_exp and expected_texts is not None else None,
            actual_texts[i],
            expected_calls[i] if has_exp and expected_calls is not None else None,
            actual_calls[i],
        ))
    return rows


def turn_views(actual: Sequence[Invocation], expected: Sequence[Invocation] | None) -> list[TurnView]:
    """Expected vs actual per turn, for reports and PR comments."""
    rows = _rows(
        actual,
        expected,
        [tool_call_rows(a) for a in actual],
        None if expected is None else [tool_call_rows(e) for e in expected],
        [final_text(a) for a in actual],
        None if expected is None else [final_text(e) for e in expected],
    )
    return [turn_from_row(row) for row in rows]


def _case_turns(case: CaseInput) -> list[TurnRow]:
    """The turns' rows, reusing the tool calls and texts the criteria read from the case."""
    return _rows(
        case.actual, case.expected, case.actual_call_rows, case.expected_call_rows, case.actual_texts,
        case.expected_texts,
    )


_NO_TURNS = PackedTurns()
"""The turns of a case that keeps none (a PackedTurns without turns is never changed: one object serves all)."""


@dataclass
class _Pending:
    case: CaseResult
    name: str
    awaitable: Awaitable[MetricResult]
    threshold: float | None = None


def _run_criterion(criterion: Criterion, case_input: CaseInput) -> MetricResult | Awaitable[MetricResult]:
    try:
        return criterion.evaluate(case_input)
    except Exception as exc:  # a criterion bug or unexpected data must not lose the other results
        log.exception("criterion %s failed on case %s", criterion.name, case_input.case.eval_id)
        return MetricResult(
            status="error", threshold=criterion.threshold, reason=f"{type(exc).__name__}: {exc}"
        )


def _score_case(
    loaded: LoadedCase, eval_set_id: str, criteria: Sequence[Criterion], actuals: Actuals, pending: list[_Pending],
    agent: AgentTally | None = None,
) -> CaseResult:
    if loaded.error is not None or loaded.case is None:
        reason = str(loaded.error) if loaded.error else "case could not be loaded"
        return CaseResult(eval_id=loaded.eval_id, status="error", reason=reason)
    case = loaded.case
    # --actuals wins over a dataset's own predicted columns: the user named that file for this run.
    found = actuals.find(eval_set_id, case.eval_id)
    if found is None:
        found = loaded.actual
    fp, content = case_fingerprints(case)
    if found is None and actuals.unusable:  # one root error (the file's, reported once): one reason for every case
        reason = f"no run: --actuals {', '.join(actuals.unusable)} could not be used (see its error above)"
        return CaseResult(eval_id=case.eval_id, status="error", reason=reason, fingerprint=fp, content=content)
    if found is None:
        where = f" in {actuals.path}" if actuals.path else " (no --actuals file was given)"
        others = sorted(actuals.eval_set_ids() - {eval_set_id})
        held = f"; those actuals hold runs of eval set(s) {', '.join(map(repr, others[:5]))}" if others else ""
        reason = (
            f"no actual invocations for eval_id {case.eval_id!r} of eval set {eval_set_id!r}{where}{held}; "
            "pass the file holding its run with --actuals FILE, or let evalbot run the agent with --agent "
            "(or --adk-agent)"
        )
        return CaseResult(eval_id=case.eval_id, status="error", reason=reason, fingerprint=fp, content=content)
    if isinstance(found, InputError):
        return CaseResult(eval_id=case.eval_id, status="error", reason=str(found), fingerprint=fp, content=content)
    expected = case.conversation
    case_input = CaseInput(eval_set_id, case, found)
    if agent is not None:
        agent.add(found)
    if expected is not None and len(expected) != len(found):
        reason = (
            f"the case expects {len(expected)} invocation(s) but the actual run has {len(found)}; "
            "re-record the run or fix the eval case"
        )
        mismatch = CaseResult(eval_id=case.eval_id, status="error", reason=reason, fingerprint=fp, content=content)
        mismatch.turns = PackedTurns(_case_turns(case_input), packed=False)
        return mismatch
    result = built(CaseResult, {  # every field, in order, valid: no validation on the hot path
        "eval_id": case.eval_id, "status": "not_evaluated", "reason": None, "metrics": {}, "fingerprint": fp,
        "content": content, "turns": _NO_TURNS, "runs": None, "reruns": 0,
    })
    judged = False
    for criterion in criteria:
        outcome = _run_criterion(criterion, case_input)
        if isinstance(outcome, MetricResult):  # the common case first: isawaitable costs more than scoring a call
            result.metrics[criterion.name] = outcome
        elif inspect.isawaitable(outcome):
            pending.append(_Pending(result, criterion.name, outcome, criterion.threshold))
            judged = True
        else:
            result.metrics[criterion.name] = MetricResult(
                status="error", threshold=criterion.threshold,
                reason=f"criterion returned {type(outcome).__name__}, not a result (an evalbot bug: please report it)",
            )
    # Turns are what reviewers read for cases that did not pass; a passing case without judged criteria is never
    # shown in detail (a judged one can be, as an inconclusive flip), so large runs do not carry its transcript.
    if judged or case_status([m.status for m in result.metrics.values()]) != "passed":
        result.__dict__["turns"] = PackedTurns(_case_turns(case_input), packed=False)
    return result


def _verdict(case: CaseResult, order: Sequence[str]) -> None:
    if case.status == "error" and not case.metrics:
        return
    metrics = case.metrics
    ordered = {name: metrics[name] for name in order if name in metrics}
    # Written as pydantic's __setattr__ writes them, without its per-call dispatch (two fields on every case).
    case.__dict__.update(metrics=ordered, status=case_status([m.status for m in ordered.values()]))
    case.__pydantic_fields_set__.update(("metrics", "status"))
    broken = [f"{n}: {m.reason}" for n, m in ordered.items() if m.status == "error"]
    if broken and case.reason is None:
        case.reason = "; ".join(broken)


async def _settle(pending: Sequence[_Pending], settled: Callable[[_Pending], None] | None = None) -> None:
    async def one(p: _Pending) -> None:
        try:
            p.case.metrics[p.name] = await p.awaitable
        except EvalbotError as exc:  # a setup error (the judge's client cannot be built): said, no traceback
            p.case.metrics[p.name] = MetricResult(status="error", threshold=p.threshold, reason=str(exc))
        except Exception as exc:
            log.exception("criterion %s failed on case %s", p.name, p.case.eval_id)
            p.case.metrics[p.name] = MetricResult(
                status="error", threshold=p.threshold, reason=f"{type(exc).__name__}: {exc}"
            )
        if settled is not None:
            settled(p)

    await asyncio.gather(*(one(p) for p in pending))


def _countdown(pending: Sequence[_Pending], done: int, total: int, progress: Progress) -> Callable[[_Pending], None]:
    """A callback counting a case as done once its last judged criterion has settled."""
    waiting = Counter(id(p.case) for p in pending)
    count = done

    def settled(p: _Pending) -> None:
        nonlocal count
        waiting[id(p.case)] -= 1
        if not waiting[id(p.case)]:
            count += 1
            progress(count, total)

    return settled


class _Streamer:
    """Sends each case to a CaseStream once its verdict is final, in report order, and counts what the eval sets'
    summaries and the totals need: a case still waiting for a judged criterion holds back every later case (of any
    eval set) until the judge has answered, so a judged run streams its cases only at the end."""

    def __init__(self, stream: CaseStream) -> None:
        self.stream = stream
        self.held: list[tuple[int, EvalSetReport, CaseResult]] = []
        self.tallies: dict[int, CaseTally] = {}
        self._order: dict[int, list[str]] = {}

    def add(self, index: int, report: EvalSetReport, case: CaseResult, waiting: bool) -> None:
        if waiting or self.held:
            case.turns.compact()
            self.held.append((index, report, case))
        else:
            self._send(index, report, case)

    def _send(self, index: int, report: EvalSetReport, case: CaseResult) -> None:
        order = self._order.get(index)
        if order is None:
            order = self._order[index] = [c.name for c in report.criteria]
        _verdict(case, order)
        tally = self.tallies.get(index)
        if tally is None:  # not setdefault(index, CaseTally()): that built and dropped a tally per case
            tally = self.tallies[index] = CaseTally()
        tally.add(case)
        self.stream(index, report, case)

    def finish(self, reports: Sequence[EvalSetReport]) -> Totals:
        """Send the held cases, then give each eval set its summaries and status; the run's totals."""
        for index, report, case in self.held:
            self._send(index, report, case)
        self.held = []
        total = Totals()
        for index, report in enumerate(reports):
            tally = self.tallies.get(index, CaseTally())
            report.metrics = tally.summaries()
            if report.status != "error":
                report.status = case_status(list(tally.statuses)) if tally.totals.cases else "not_evaluated"
            total.add(tally.totals)
        return total


def score_eval_set(
    loaded: LoadedEvalSet,
    actuals: Actuals,
    ctx: BuildContext,
    pending: list[_Pending],
    scored: Callable[[bool], None] | None = None,
    criteria: CriteriaBuilder = build_criteria,
    stream: tuple[_Streamer, int] | None = None,
) -> EvalSetReport:
    """Score every case of one eval set (judged criteria are left in ``pending``).

    ``scored(waiting)`` is called after each case; ``waiting`` tells whether judged criteria are still pending on it.
    ``stream``: the run's streamer and this eval set's index; its cases go there instead of into the report.
    """
    built, infos = criteria(loaded.config, ctx, loaded.path)
    notices = [*loaded.notices, *loaded.config.notices, *(i.notice for i in infos if i.notice)]
    errors = [problem(e) for e in loaded.errors]
    if loaded.columns is not None:
        built, infos, dataset_errors, dataset_notices = _dataset_columns(loaded, built, infos, actuals)
        errors += dataset_errors
        notices += dataset_notices
    errors += [Problem(path=loaded.config.label, message=f"{i.name}: {i.error}") for i in infos if i.error]
    report = EvalSetReport(
        eval_set_id=loaded.eval_set_id,
        path=loaded.path,
        status="error" if loaded.errors and not loaded.cases else "not_evaluated",
        config=loaded.config.label,
        errors=errors,
        criteria=infos,
    )
    notes = loaded.notes if loaded.notes is not None else CaseNotes()
    cases = report.cases
    for loaded_case in loaded.cases:
        before = len(pending)
        case = _score_case(loaded_case, loaded.eval_set_id, built, actuals, pending, ctx.agent_tally)
        if stream is None:
            cases.append(compacted(case, ctx.spill_store))
        else:
            stream[0].add(stream[1], report, case, len(pending) > before)
        if loaded_case.case is not None:
            note_case(loaded_case.case, loaded_case.eval_id, notes.extra_keys, notes.rubric_types)
        loaded_case.release()  # a case parsed on demand from a large file is not kept once scored
        if scored is not None:
            scored(len(pending) > before)
    notices += (case_notices(loaded, notes.extra_keys, notes.rubric_types) if loaded.case_notices is None
                else loaded.case_notices)
    report.notices = notices
    return report


NO_COLUMN = "the dataset has no column this criterion needs (the eval set's error says which)"


def _dataset_columns(
    loaded: LoadedEvalSet, built: Sequence[Criterion], infos: Sequence[CriterionInfo], actuals: Actuals
) -> tuple[list[Criterion], list[CriterionInfo], list[Problem], list[str]]:
    """A Vertex dataset's criteria checked against its columns: its criteria (those it lacks a column for marked
    broken; an ADK default one simply not applied, unless the column looks misspelt), their infos, its errors and
    its notices (unknown columns, and which of its own runs --actuals replaces).  Decided over the whole file and
    the whole of --actuals, so every shard agrees."""
    assert loaded.columns is not None
    replaced = sorted(i for i in loaded.own_runs if actuals.find(loaded.eval_set_id, i) is not None)
    reads = {c.name: READS[c.name] for c in built if c.name in READS}
    missing, notices = vertex.column_problems(loaded.path, loaded.columns, reads, len(replaced) < len(loaded.own_runs))
    if replaced:
        shown = ", ".join(map(repr, replaced[:5])) + (f" and {len(replaced) - 5} more" if len(replaced) > 5 else "")
        notices.append(
            f"{loaded.path}: {len(replaced)} of the {len(loaded.own_runs)} case(s) that record their own run in the "
            f"dataset ({shown}) are scored on the run in --actuals {actuals.path or ''} instead (--actuals wins, "
            "matched by eval_id)"
        )
    defaults = loaded.config.path is None
    errors: list[Problem] = []
    dropped: dict[str, list[str]] = {}
    broken: set[str] = set()
    for m in missing:
        if defaults and m.misspelt is None:
            for name in m.criteria:
                dropped.setdefault(name, []).append(repr(m.column))
        else:
            broken.update(m.criteria)
            errors.append(Problem(path=loaded.path, message=m.message))
    notices += [f"{loaded.path}: ADK's default criterion {name} is not applied: the dataset has no column "
                f"{' or '.join(columns)} (put a test_config.json beside it to choose its criteria)"
                for name, columns in dropped.items()]
    kept = [BrokenCriterion(c.name, c.threshold, "", NO_COLUMN) if c.name in broken else c
            for c in built if c.name not in dropped]
    return kept, [i for i in infos if i.name not in dropped], errors, notices


def case_notices(loaded: LoadedEvalSet, extra_keys: Mapping[str, str], rubric_types: set[str | None]) -> list[str]:
    """The notices about an eval set's cases, found over all of them: unknown keys (``extra_keys``: key -> the
    first case holding it) and rubric types no configured criterion reads."""
    return notices_of_cases(loaded.path, configured_criteria(loaded), extra_keys, rubric_types)


def configured_criteria(loaded: LoadedEvalSet) -> list[str]:
    """The names of the criteria an eval set's config asks for (what reads its rubrics)."""
    return [spec.name for spec in loaded.config.criteria]


def notices_of_cases(path: str, configured: Iterable[str], extra_keys: Mapping[str, str],
                     rubric_types: set[str | None]) -> list[str]:
    """``case_notices`` of the eval set at ``path`` whose config asks for the criteria named ``configured``."""
    return [*unknown_case_key_notices(path, extra_keys), *unused_rubric_notices(path, rubric_types, set(configured))]


def note_case(case: EvalCase, eval_id: str, extra_keys: dict[str, str], rubric_types: set[str | None]) -> None:
    """Record what ``case_notices`` reports of one case: its unknown keys (key -> the first case holding it) and
    the ``type`` of every rubric of the case and of its conversation's invocations (None: untyped)."""
    for key in case.model_extra or {}:
        extra_keys.setdefault(key, eval_id)
    rubrics = [*(case.rubrics or []), *(r for inv in case.conversation or [] for r in inv.rubrics or [])]
    rubric_types.update(r.type for r in rubrics)


def unused_rubric_notices(path: str, types: set[str | None], configured: set[str]) -> list[str]:
    """Notices for the rubric types found on cases that no configured criterion reads (ADK drops them silently):
    one per known type, one for untyped rubrics, one for all other types (a few named, each clipped)."""
    read = ", ".join(map(repr, RUBRIC_READERS))
    out = []
    for rubric_type, reader in RUBRIC_READERS.items():
        if rubric_type in types and reader not in configured:
            out.append(f"{path}: case or invocation rubrics typed {rubric_type!r} are not used: no configured "
                       f"criterion reads them (add {reader} to the config to judge them)")
    if None in types:
        out.append(f"{path}: case or invocation rubrics without a \"type\" are not used: each rubric criterion reads "
                   f"only the rubrics of its own type (as in ADK): {read}")
    others = sorted(t for t in types if t is not None and t not in RUBRIC_READERS)
    if others:
        named = ", ".join(repr(printable(t if len(t) <= 40 else t[:39] + "…")) for t in others[:3])
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        out.append(f"{path}: case or invocation rubrics typed {named}{more} are not used: no criterion reads those "
                   f"types (the types read are {read})")
    return out


def unknown_case_key_notices(path: str, extra_keys: Mapping[str, str]) -> list[str]:
    """One notice per unknown case key (``extra_keys``: key -> the first case holding it)."""
    known = [*EvalCase.model_fields, *(f.alias for f in EvalCase.model_fields.values() if f.alias)]
    return [
        unknown_key_notice(f"{path}: case {eval_id!r}", key, known, "ignored, as ADK ignores it")
        for key, eval_id in extra_keys.items()
    ]


def _finish_set(report: EvalSetReport) -> None:
    order = [c.name for c in report.criteria]
    for case in report.cases:
        _verdict(case, order)
    report.metrics = summarize_cases(report.cases)
    if report.status != "error":
        report.status = case_status([c.status for c in report.cases]) if report.cases else "not_evaluated"


def score_run(
    eval_sets: Sequence[LoadedEvalSet],
    actuals: Actuals,
    ctx: BuildContext | None = None,
    *,
    errors: Sequence[InputError] = (),
    notices: Sequence[str] = (),
    progress: Progress | None = None,
    criteria: CriteriaBuilder = build_criteria,
    stream: CaseStream | None = None,
) -> Report:
    """Score all eval sets; judged criteria run concurrently under the judge's own limits.

    ``criteria`` builds each eval set's criteria from its config (the registry's builder unless a caller passes one).
    ``stream``: each case goes there once its verdict is final (see CaseStream) and the report keeps none: a large
    run's memory does not grow with its cases. Summaries, statuses and totals are the same either way.

    ``progress(done, total)`` is told the number of finished cases: after each case without judged criteria, and
    whenever a case's last judged criterion settles.
    """
    ctx = ctx or BuildContext()
    pending: list[_Pending] = []
    reports: list[EvalSetReport] = []
    total, done = sum(len(es.cases) for es in eval_sets), 0

    def scored(waiting: bool) -> None:
        nonlocal done
        if not waiting:
            done += 1
            if progress is not None:
                progress(done, total)

    streamer = _Streamer(stream) if stream is not None else None
    for index, es in enumerate(eval_sets):
        with gc_paused():
            reports.append(score_eval_set(es, actuals, ctx, pending, scored, criteria,
                                          None if streamer is None else (streamer, index)))
    if pending:
        asyncio.run(_settle(pending, _countdown(pending, done, total, progress) if progress else None))
    if streamer is None:
        for report in reports:
            _finish_set(report)
        counted = totals(reports)
    else:
        counted = streamer.finish(reports)
    usage = ctx.judge.usage_summary() if ctx.judge is not None else None
    return Report(
        eval_sets=reports,
        errors=[problem(e) for e in errors],
        notices=list(notices),
        totals=counted,
        usage=usage if usage is not None and usage.per_criterion else None,  # no judged criterion ran: nothing to show
    )

