"""The merge of a sharded run's parts into the report the unsharded run would have produced (timing aside).

The merge refuses parts that disagree, overlap or leave cases out, naming what is wrong, and otherwise builds that
report: cases in file order, statuses, summaries and totals recomputed, the judge usage summed. It recomputes the
partition from the parts' case list (:mod:`evalbot.shard.partition`) and trusts nothing in a part that it can
recompute; the parts' bytes are read by :mod:`evalbot.shard.parts`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from pydantic import ValidationError

from evalbot.compare.passrule import PROBLEM_PREFIX as PASS_RULE_PROBLEM
from evalbot.errors import EvalbotError
from evalbot.formats.jsonio import freeze_for_good, gc_paused
from evalbot.formats.loaded import LoadedEvalSet
from evalbot.judges.base import Usage
from evalbot.judges.usage import UsageLedger, estimated_cost
from evalbot.results import (
    AgentModelUsage,
    AgentUsage,
    CacheUse,
    CaseStream,
    CaseTally,
    ConcurrencyCuts,
    CriterionUsage,
    EvalSetReport,
    JudgeUsage,
    Report,
    ShardInfo,
    Status,
    Totals,
    UsageRow,
    case_status,
    plus_cost,
    summarize_cases,
    totals,
)
from evalbot.shard.partition import CaseKey, case_list_fingerprint, config_fingerprint, partition, weighted_cases
from evalbot.shard.parts import BOM, case_line, split_lines, with_cases

_T = TypeVar("_T")

MAX_LISTED = 20
"""Cases named in one refusal message (the count of the rest follows)."""


class MergeError(EvalbotError):
    """The parts cannot be merged into one report: they disagree or overlap (input error, exit 2)."""


class MissingShards(MergeError):
    """The parts do not cover the run: shards or cases are missing (could not measure, exit 3)."""

    def __init__(self, message: str, missing: Sequence[CaseKey]) -> None:
        super().__init__(message)
        self.missing = list(missing)


def _listed(keys: Sequence[CaseKey]) -> str:
    shown = ", ".join(f"{set_id}/{eval_id}" for set_id, eval_id in keys[:MAX_LISTED])
    return shown + (f" and {len(keys) - MAX_LISTED} more" if len(keys) > MAX_LISTED else "")


def agree(parts: Sequence[tuple[str, Report]], what: str, value: Any, fix: str) -> None:
    """Refuse unless every part has the same ``value(report)``, naming the parts on each side."""
    groups: dict[str, list[str]] = {}
    for name, report in parts:
        groups.setdefault(json.dumps(value(report), sort_keys=True, default=str), []).append(name)
    if len(groups) > 1:
        sides = "; ".join(f"{', '.join(names)}: {json.loads(key) if len(key) <= 80 else key[:77] + '...'}"
                          for key, names in groups.items())
        raise MergeError(f"the parts have different {what} ({sides}); {fix}")


def _info(report: Report) -> ShardInfo:
    assert report.shard is not None
    return report.shard


_SET_FIELDS = ("eval_set_id", "path", "config", "notices", "errors", "criteria")
"""What every part must report alike about an eval set (the cases, statuses and summaries are merged)."""


def merge_reports(parts: Sequence[tuple[str, Report]]) -> Report:
    """One report from the parts of a sharded run (``(name, report)`` each; the name is used in messages).

    Raises MergeError when the parts disagree or overlap, MissingShards when shards or cases are missing.
    """
    info, assignment = _checked(parts)
    with gc_paused():
        return _merge(parts, info, assignment)


def _checked(parts: Sequence[tuple[str, Report]]) -> tuple[ShardInfo, dict[CaseKey, int]]:
    """The run's case list and partition, once the parts are checked to be of one run (MergeError otherwise)."""
    if not parts:
        raise MergeError("no part to merge; give the reports the shard jobs wrote")
    for name, report in parts:
        if report.shard is None:
            raise MergeError(f"{name} is not part of a sharded run (it has no shard section); merge only the "
                             "reports written with --shard K/N")
    fix = "run every shard of the same commit with the same evalbot, inputs and options, then merge again"
    agree(parts, "evalbot versions", lambda r: r.evalbot_version, fix)
    agree(parts, "report schema versions", lambda r: r.schema_version, fix)
    agree(parts, "shard counts (N of K/N)", lambda r: _info(r).count, fix)
    for name, report in parts:
        info = _info(report)
        if case_list_fingerprint(info.eval_sets) != info.case_list:
            raise MergeError(f"{name}: its case list does not match its own fingerprint (altered?); use the file "
                             "the shard job wrote")
    agree(parts, "case lists (eval sets or cases differ)", lambda r: _info(r).case_list, fix)
    agree(parts, "configs (criteria fingerprint)", lambda r: _info(r).config, fix)
    agree(parts, "judge models", lambda r: _info(r).judge_models, fix)
    for name, report in parts:
        if config_fingerprint(report) != _info(report).config:
            raise MergeError(f"{name}: its criteria do not match its config fingerprint (altered?); use the file "
                             "the shard job wrote")
    by_index: dict[int, str] = {}
    for name, report in parts:
        index = _info(report).index
        if index in by_index:
            raise MergeError(f"shard {index}/{_info(report).count} is given twice ({by_index[index]} and {name}); "
                             "give each shard's part once")
        by_index[index] = name
    info = _info(parts[0][1])
    return info, partition(weighted_cases(info.eval_sets), info.count)


def _merge(parts: Sequence[tuple[str, Report]], info: ShardInfo, assignment: dict[CaseKey, int]) -> Report:
    found = _placed(parts, lambda p, i: [(c.eval_id, c) for c in parts[p][1].eval_sets[i].cases], info, assignment)
    eval_sets = []
    for i, listed in enumerate(info.eval_sets):
        cases = [found[(i, eval_id)] for eval_id, _ in listed.cases]
        merged = merged_set(parts, i)
        merged.cases = cases
        merged.metrics = summarize_cases(cases)
        set_status(merged, parts, i, [c.status for c in cases])
        eval_sets.append(merged)
    return merged_report(parts, eval_sets, totals(eval_sets))


def _placed(parts: Sequence[tuple[str, Report]], cases: Callable[[int, int], Sequence[tuple[str, _T]]],
            info: ShardInfo, assignment: dict[CaseKey, int]) -> dict[tuple[int, str], _T]:
    """Where each case of the run is: ``(eval set index, eval_id)`` -> its ``cases(part, eval set)`` entry (the
    eval_id and the case, or what stands for it). Raises MergeError when a part holds a case that is not its own or
    holds it twice, or when the eval sets' results differ, MissingShards when shards or cases are missing."""
    found: dict[tuple[int, str], _T] = {}
    missing: list[CaseKey] = []
    for p, (name, report) in enumerate(parts):
        index = _info(report).index
        if len(report.eval_sets) != len(info.eval_sets):
            raise MergeError(f"{name}: {len(report.eval_sets)} eval sets, but its case list has "
                             f"{len(info.eval_sets)}; use the file the shard job wrote")
        for i, (es, listed) in enumerate(zip(report.eval_sets, info.eval_sets, strict=True)):
            if (es.eval_set_id, es.path) != (listed.eval_set_id, listed.path):
                raise MergeError(f"{name}: eval set {i + 1} is {es.eval_set_id!r} ({es.path}), but the case list "
                                 f"has {listed.eval_set_id!r} ({listed.path}); use the file the shard job wrote")
            ids = {eval_id for eval_id, _ in listed.cases}
            for eval_id, case in cases(p, i):
                key = (es.eval_set_id, eval_id)
                if eval_id not in ids:
                    raise MergeError(f"{name}: case {_listed([key])} is not in the run's case list")
                if assignment[key] != index:
                    raise MergeError(f"{name} (shard {index}/{info.count}) holds case {_listed([key])} of shard "
                                     f"{assignment[key]}/{info.count}: the parts overlap; merge each shard's own "
                                     "part")
                if (i, eval_id) in found:
                    raise MergeError(f"{name}: case {_listed([key])} appears twice; use the file the shard job "
                                     "wrote")
                found[(i, eval_id)] = case
    present = {_info(r).index for _, r in parts}
    for i, listed in enumerate(info.eval_sets):
        for eval_id, _ in listed.cases:
            if (i, eval_id) not in found:
                missing.append((listed.eval_set_id, eval_id))
    absent = sorted(set(range(1, info.count + 1)) - present)
    if absent or missing:
        shards = ", ".join(f"{k}/{info.count}" for k in absent)
        head = f"shard {shards} missing" if absent else "cases missing from parts that were given"
        if absent and len(absent) > 1:
            head = f"shards {shards} missing"
        raise MissingShards(
            f"{head}: {len(missing)} case(s) not measured: {_listed(missing) or 'none listed'}; rerun the failed "
            "shard jobs (a partial result is never a pass)", missing)
    for i in range(len(info.eval_sets)):
        agree([(n, r) for n, r in parts], f"results for eval set {info.eval_sets[i].eval_set_id!r}",
               lambda r, i=i: set_fields(r.eval_sets[i]), "run every shard with the same inputs, then merge again")
    return found


def merged_set(parts: Sequence[tuple[str, Report]], i: int) -> EvalSetReport:
    """The ``i``-th eval set of the merged report without its cases, summaries and status."""
    template = parts[0][1].eval_sets[i]
    merged = EvalSetReport(**{f: getattr(template, f) for f in _SET_FIELDS}, status="not_evaluated")
    # Each part names the cases of its own that its pass_rule cannot decide; the comparison decides them again
    # over all the cases (compare.passrule replaces these problems), so the parts' are joined, not compared.
    merged.errors = [*_own_errors(template), *_union(p for _, r in parts for p in r.eval_sets[i].errors
                                                       if p.message.startswith(PASS_RULE_PROBLEM))]
    return merged


def set_status(merged: EvalSetReport, parts: Sequence[tuple[str, Report]], i: int, statuses: Sequence[Status]) -> None:
    """The merged eval set's status from its cases' (``statuses``: each distinct one at least once)."""
    if statuses:
        merged.status = case_status(statuses)
    elif any(r.eval_sets[i].status == "error" for _, r in parts):
        merged.status = "error"


def merged_report(parts: Sequence[tuple[str, Report]], eval_sets: list[EvalSetReport], counted: Totals) -> Report:
    return Report(
        schema_version=parts[0][1].schema_version,
        evalbot_version=parts[0][1].evalbot_version,
        eval_sets=eval_sets,
        errors=_union(p for _, r in parts for p in r.errors),
        notices=_union(n for _, r in parts for n in r.notices),
        totals=counted,
        usage=merge_usage([r.usage for _, r in parts]),
        agent_usage=merge_agent_usage([r.agent_usage for _, r in parts]),
    )


@contextmanager
def loading_parts() -> Iterator[None]:
    """The cyclic collector paused while parts are read and merged, then what they allocated frozen out of its
    passes: it lives as long as the merged report (until the command ends), and re-enabled as it is, the collector's
    next pass would walk each of its millions of objects (1.4 s at 100,000 invocations). Reference counting still
    frees them."""
    with gc_paused():
        yield
        freeze_for_good()


def check_settled(parts: Sequence[tuple[str, Report]], expected: str | None, against: str) -> None:
    """Refuse parts that settled split judge votes otherwise than this merge would (``expected``: the
    ``compare.settle.fingerprint`` of the baseline and policy it compares with, named by ``against``): the merged
    report would not be the one job's. Only runs with judged criteria are concerned (nothing else is settled).
    Raises MissingShards (could not measure, exit 3): a part settled elsewhere is never merged into a verdict."""
    if not any(c.judged for _, r in parts[:1] for es in r.eval_sets for c in es.criteria):
        return
    odd = [name for name, report in parts if report.shard is not None and report.shard.settled_against != expected]
    if not odd:
        return
    def said(value: str | None) -> str:
        return "no baseline (nothing settled)" if value is None else "another baseline or settling policy"
    first = next(r for n, r in parts if n == odd[0]).shard
    assert first is not None
    raise MissingShards(
        f"{_names(odd)} settled split judge votes against {said(first.settled_against)}, but this merge compares "
        f"with {against if expected is not None else 'nothing to settle against'}: the merged results would not be "
        "those of one job. Give the shard jobs the same baseline, resample_split and alpha as the merge (evalbot "
        "compare --shard K/N --baseline ...), or --resample-split 0 to both", [])


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def check_loaded(report: Report, eval_sets: Sequence[LoadedEvalSet], where: str,
                 keys: Sequence[CaseKey] | None = None) -> list[str]:
    """Check the merged ``report``'s case list against the eval sets the merging job loaded itself (``where`` names
    them, e.g. "in the checkout"): the parts' own case list is their word, so a part "1/1" listing every case but one
    is internally consistent. A loaded case the report lacks raises MissingShards naming it (verdict error, never a
    partial pass); the notices returned name the report's cases that no loaded eval set has. ``keys``: the report's
    cases, when they were streamed out of it (``merge_streamed``)."""
    if keys is None:
        keys = [(es.eval_set_id, case.eval_id) for es in report.eval_sets for case in es.cases]
    merged = set(keys)
    loaded = [(es.eval_set_id, case.eval_id) for es in eval_sets for case in es.cases]
    missing = [key for key in loaded if key not in merged]
    if missing:
        raise MissingShards(
            f"{len(missing)} case(s) of the eval sets {where} missing from the merged results ({_listed(missing)}): "
            "the parts never measured them, so this run cannot be gated; rerun every shard of this commit with "
            "the same eval sets (a partial result is never a pass)", missing)
    known = set(loaded)
    unknown = [key for key in keys if key not in known]
    if not unknown:
        return []
    return [f"{len(unknown)} case(s) in the merged results are in no eval set {where} ({_listed(unknown)}); they are "
            "shown as the parts reported them"]


def _own_errors(es: EvalSetReport) -> list[Any]:
    """An eval set's errors but the pass_rule's, which depend on the cases a part holds."""
    return [p for p in es.errors if not p.message.startswith(PASS_RULE_PROBLEM)]


def set_fields(es: EvalSetReport) -> Any:
    """What every part must report alike about an eval set (``_SET_FIELDS``; the pass_rule's problems aside)."""
    data = es.model_dump(mode="json", include=set(_SET_FIELDS))
    data["errors"] = [p.model_dump(mode="json") for p in _own_errors(es)]
    return data


def _union(items: Iterable[Any]) -> list[Any]:
    out: list[Any] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def merge_agent_usage(usages: Sequence[AgentUsage | None]) -> AgentUsage | None:
    """The agent usage of the parts summed per model (a model's cost unknown in one part is unknown in the sum)."""
    present = [u for u in usages if u is not None]
    if not present:
        return None
    merged = AgentUsage(total=AgentModelUsage(estimated_cost_usd=0.0), prices=present[0].prices)
    for usage in present:
        for model, row in usage.per_model.items():
            into = merged.per_model.setdefault(model, AgentModelUsage(estimated_cost_usd=0.0))
            for acc in (into, merged.total):
                acc.input_tokens += row.input_tokens
                acc.output_tokens += row.output_tokens
                acc.calls += row.calls
                acc.estimated_cost_usd = plus_cost(acc.estimated_cost_usd, row.estimated_cost_usd)
    merged.per_model = dict(sorted(merged.per_model.items()))
    return merged


def _shipped_cost(row: CriterionUsage) -> bool:
    """Whether ``row``'s cost is what the shipped price table gives for its tokens: a part priced otherwise (the gate
    policy's ``prices``, a server whose prices are unknown) keeps its own costs, summed, rather than repriced."""
    cost = estimated_cost(Usage(row.input_tokens, row.output_tokens), row.models[0]) if row.models else None
    mine = row.estimated_cost_usd
    return (cost is None) == (mine is None) and (cost is None or mine is None or math.isclose(cost, mine,
                                                                                               rel_tol=1e-9))


def merge_usage(usages: Sequence[JudgeUsage | None]) -> JudgeUsage | None:
    """The judge usage of the parts summed, as the one run would have reported it: when every criterion asked one
    model, the per-(criterion, model) usage is booked in one ledger and summarized by it (costs computed from the
    summed tokens, in the ledger's order); otherwise the rows and costs are added up. The cache's hits and writes
    and the retries are summed, as are the concurrency limit's cuts (its lowest and maximum: one part's); the cache
    directory and the prices note are the first part's."""
    present = [u for u in usages if u is not None]
    if not present:
        return None
    if all(len(row.models) == 1 and _shipped_cost(row) for u in present for row in u.per_criterion.values()):
        ledger = UsageLedger()
        for usage in present:
            for name, row in usage.per_criterion.items():
                ledger.record(name, row.models[0], Usage(row.input_tokens, row.output_tokens, row.requests,
                                                         row.cached_samples, row.saved_samples, row.extra_requests),
                              " + ".join(row.served[:20]))
        merged = ledger.summary()
        merged.prices = present[0].prices
    else:
        merged = present[0].model_copy(deep=True)
        for usage in present[1:]:
            for name, row in usage.per_criterion.items():
                into = merged.per_criterion.setdefault(name, CriterionUsage(estimated_cost_usd=0.0))
                _add_row(into, row)
                into.models += [m for m in row.models if m not in into.models]
                into.served += [m for m in row.served if m not in into.served][:max(0, 20 - len(into.served))]
            _add_row(merged.total, usage.total)
            for model, model_row in usage.per_model.items():
                _add_row(merged.per_model.setdefault(model, UsageRow(estimated_cost_usd=0.0)), model_row)
    caches = [u.cache for u in present if u.cache is not None]
    if caches:
        merged.cache = CacheUse(directory=caches[0].directory, hits=sum(c.hits for c in caches),
                                writes=sum(c.writes for c in caches))
    retries = [u.retries for u in present if u.retries is not None]
    merged.retries = sum(retries) if retries else None
    cut = [u.concurrency for u in present if u.concurrency is not None]
    merged.concurrency = ConcurrencyCuts(
        maximum=max(c.maximum for c in cut), lowest=min(c.lowest for c in cut), cuts=sum(c.cuts for c in cut),
        after_timeouts=sum(c.after_timeouts for c in cut)) if cut else None
    return merged


def _add_row(into: CriterionUsage | UsageRow, row: CriterionUsage | UsageRow) -> None:
    into.add_counts(row)
    into.estimated_cost_usd = plus_cost(into.estimated_cost_usd, row.estimated_cost_usd)


_EVAL_ID = re.compile(rb'\{"eval_id":("(?:[^"\\]|\\.)*")')


def merge_streamed(parts: Sequence[tuple[str, bytes]], stream: CaseStream) -> tuple[Report, list[CaseKey]] | None:
    """``merge_reports`` of the parts' bytes for a command that keeps no case: each case, validated as the Report
    model validates it, goes to ``stream`` in report order, and the merged report keeps none (its summaries,
    statuses and totals are tallied as the cases go); with it, the merged case list. A run of any size then holds
    the parts' text and one case at a time, never every case's objects. The parts are untrusted: each case is
    validated whole (``evalbot run --jobs`` merges its own jobs' parts with ``merge_job_parts``).

    None when the parts cannot be merged this way: one is not laid out as shard jobs write them, or anything in one
    is invalid or does not merge. The caller then reads and merges them whole (``part_from_bytes``,
    ``merge_reports``), which refuses them naming the problem exactly as it always has, or merges them."""
    shells: list[tuple[str, Report]] = []
    texts: list[bytes] = []
    entries: list[list[list[tuple[str, tuple[int, int, int]]]]] = []
    for name, data in parts:
        data = data.removeprefix(BOM)
        split = split_lines(data)
        if split is None:
            return None
        skeleton, spans = split
        listed = []
        for start, end in spans:
            match = _EVAL_ID.match(data, start, end)
            try:  # checked against the validated case's own when it is streamed
                eval_id = json.loads(match[1]) if match else None
            except ValueError:  # invalid JSON or UTF-8
                return None
            if not isinstance(eval_id, str):
                return None
            listed.append((eval_id, (len(texts), start, end)))
        at = iter(listed)
        entries.append([[next(at) for _ in es.cases] for es in skeleton.eval_sets])
        shells.append((name, with_cases(skeleton, ([] for _ in skeleton.eval_sets))))
        texts.append(data)
    try:
        info, assignment = _checked(shells)
        found = _placed(shells, lambda p, i: entries[p][i], info, assignment)
    except MergeError:
        return None
    eval_sets = []
    counted = Totals()
    with gc_paused():
        for i, listed_set in enumerate(info.eval_sets):
            merged = merged_set(shells, i)
            tally = CaseTally()
            for eval_id, _ in listed_set.cases:
                text, start, end = found[(i, eval_id)]
                piece = texts[text][start:end]
                try:  # streamed out, never held: not compacted (that would cost CPU for nothing)
                    case = case_line(piece)
                except ValidationError:
                    return None
                if case.eval_id != eval_id:  # a key given twice in the line: the last one counts
                    return None
                tally.add(case)
                stream(i, merged, case)
            merged.metrics = tally.summaries()
            set_status(merged, shells, i, list(tally.statuses))
            eval_sets.append(merged)
            counted.add(tally.totals)
    keys = [(s.eval_set_id, eval_id) for s in info.eval_sets for eval_id, _ in s.cases]
    return merged_report(shells, eval_sets, counted), keys
