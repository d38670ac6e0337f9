"""``evalbot run --jobs N``: what each job tells its parent about its cases (``job_notes``), and the report the
parent joins from its own jobs' parts (``merge_job_parts``). The jobs' partition is
:func:`evalbot.shard.partition.job_eval_sets`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import msgspec
from pydantic import ValidationError

from evalbot.formats.loaded import CaseNotes, LoadedEvalSet
from evalbot.results import (
    CaseTally,
    MetricTally,
    Report,
    Status,
    Totals,
)
from evalbot.scoring import configured_criteria, notices_of_cases
from evalbot.shard.merge import MergeError, agree, merged_report, merged_set, set_fields, set_status


class MetricState(msgspec.Struct, forbid_unknown_fields=True):
    """A criterion's ``results.MetricTally`` over one job's cases of an eval set."""

    threshold: float | None
    scores: list[float]
    counts: dict[str, int]


class SetNotes(msgspec.Struct, forbid_unknown_fields=True):
    """What one job of ``run --jobs`` tells its parent about an eval set: its cases (how many; their
    ``results.CaseTally``: counts, statuses, each criterion's scores) and what their notices are made of."""

    path: str
    configured: list[str]
    extra_keys: list[tuple[str, str]]
    rubric_types: list[str | None]
    totals: dict[str, int]
    statuses: list[Status]
    metrics: dict[str, MetricState]


class JobNotes(msgspec.Struct, forbid_unknown_fields=True):
    """A job's notes, one per eval set of the run (``job_notes``)."""

    eval_sets: list[SetNotes]


def job_notes(eval_sets: Sequence[LoadedEvalSet], tallies: Mapping[int, CaseTally]) -> JobNotes:
    """A job's notes once it has scored ``eval_sets`` (``job_eval_sets``): per eval set, what its cases' notices
    are made of and ``tallies[index]``, its cases' tally (none without cases)."""
    sets = []
    for index, loaded in enumerate(eval_sets):
        notes = loaded.notes if loaded.notes is not None else CaseNotes()
        tally = tallies.get(index, CaseTally())
        sets.append(SetNotes(
            path=loaded.path, configured=configured_criteria(loaded), extra_keys=list(notes.extra_keys.items()),
            rubric_types=sorted(notes.rubric_types, key=lambda t: (t is not None, t or "")),
            totals=tally.totals.model_dump(), statuses=list(tally.statuses),
            metrics={name: MetricState(m.threshold, m.scores, m.counts) for name, m in tally.metrics.items()}))
    return JobNotes(sets)


def _tally_of(notes: SetNotes) -> CaseTally:
    tally = CaseTally()
    tally.totals = Totals(**notes.totals)
    tally.statuses = dict.fromkeys(notes.statuses)
    for name, state in notes.metrics.items():
        metric = tally.metrics[name] = MetricTally(state.threshold)
        metric.scores = state.scores
        metric.counts = state.counts
    return tally


def merge_job_parts(parts: Sequence[tuple[str, bytes, JobNotes]]) -> Report:
    """The report of ``evalbot run --jobs N`` from its jobs' parts (``(name, part, notes)`` each, in job order; see
    ``job_eval_sets``): each part is the job's report without its cases (they are in its own file, joined by the
    caller), its notes tell its cases' tallies and what their notices are made of. The parts are the run's own,
    written by its children into its private folder: each eval set's summaries, status and totals are those of its
    cases tallied job after job (``results.CaseTally.absorb``, the cases in report order), and its case notices are
    made from the jobs' notes joined in that order (the unknown keys' first cases, the rubric types seen), as one job
    makes them over all its cases. Anything that does not fit (the jobs disagree about an eval set, a part holds
    cases, the notes list other eval sets) raises MergeError: a bug, never an input error."""
    if not parts:
        raise MergeError("no part to merge")
    shells: list[tuple[str, Report]] = []
    for name, data, notes in parts:
        try:
            shell = Report.model_validate_json(data)
        except ValidationError as exc:
            raise MergeError(f"{name}: not a report: {exc}") from None
        if any(es.cases for es in shell.eval_sets) or [n.path for n in notes.eval_sets] != [
                es.path for es in shell.eval_sets]:
            raise MergeError(f"{name}: its eval sets are not those its notes list, or it holds cases")
        shells.append((name, shell))
    notes_of = [notes for _, _, notes in parts]
    fix = "a bug: please report it"
    agree(shells, "evalbot versions", lambda r: r.evalbot_version, fix)
    agree(shells, "eval sets", lambda r: [set_fields(es) for es in r.eval_sets], fix)
    if any([s.configured for s in n.eval_sets] != [s.configured for s in notes_of[0].eval_sets] for n in notes_of):
        raise MergeError(f"the jobs' notes have different configs; {fix}")
    eval_sets = []
    counted = Totals()
    for i in range(len(shells[0][1].eval_sets)):
        merged = merged_set(shells, i)
        extra_keys: dict[str, str] = {}
        rubric_types: set[str | None] = set()
        tally = CaseTally()
        for notes in notes_of:
            for key, eval_id in notes.eval_sets[i].extra_keys:
                extra_keys.setdefault(key, eval_id)
            rubric_types.update(notes.eval_sets[i].rubric_types)
            tally.absorb(_tally_of(notes.eval_sets[i]))
        merged.notices = [*merged.notices, *notices_of_cases(merged.path, notes_of[0].eval_sets[i].configured,
                                                             extra_keys, rubric_types)]
        merged.metrics = tally.summaries()
        set_status(merged, shells, i, list(tally.statuses))
        eval_sets.append(merged)
        counted.add(tally.totals)
    return merged_report(shells, eval_sets, counted)
