"""Sharded runs: the partition of a run's cases over N jobs, and the merge of the jobs' reports into one.

``--shard K/N`` makes job K of N score (or run) only its part of the cases. Every job computes the same partition
from the same data: the eval set ids, the case ids and each case's expected invocation count, never the order of
files, the machine or the clock. Cases are dealt heaviest first to the least loaded shard, so the shards hold about
the same number of invocations; a case is never split. Each part's report carries a :class:`ShardInfo`: the full case
list (from which the merge recomputes the partition), and fingerprints of the config and the judge models. The merge
refuses parts that disagree, overlap or leave cases out, naming what is wrong, and otherwise builds the report the
unsharded run would have produced (timing aside): cases in file order, statuses, summaries and totals recomputed.

Parts are untrusted data (in the fork-safe flow a pull request's jobs write them): ``read_part`` reads a regular file
(no symlink, FIFO or device), size-capped, as strict UTF-8 JSON validated by the Report model (unknown keys and
deep nesting refused), and the merge trusts nothing in it that it can recompute.
"""

from __future__ import annotations

import gc
import hashlib
import heapq
import json
import os
import re
import secrets
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import msgspec
from pydantic import Field, TypeAdapter, ValidationError

from evalbot.compare.passrule import PROBLEM_PREFIX as PASS_RULE_PROBLEM
from evalbot.errors import EvalbotError, InputError, json_pointer
from evalbot.formats.jsonio import gc_paused
from evalbot.formats.loaded import CaseNotes, LoadedCase, LoadedEvalSet
from evalbot.judges.base import DEFAULT_JUDGE_MODEL, Usage
from evalbot.judges.usage import UsageLedger
from evalbot.render.template_files import read_regular_file
from evalbot.results import (
    MAX_SHARDS,
    CacheUse,
    CaseResult,
    CaseStream,
    CaseTally,
    ConcurrencyCuts,
    CriterionUsage,
    EvalSetReport,
    JudgeUsage,
    MetricTally,
    Report,
    ShardInfo,
    ShardSet,
    Status,
    Totals,
    UsageRow,
    case_status,
    compacted,
    plus_cost,
    summarize_cases,
    totals,
)
from evalbot.scoring import case_notices, configured_criteria, note_case, notices_of_cases
from evalbot.turnpack import SpillStore

CaseKey = tuple[str, str]
"""(eval_set_id, eval_id): what the partition is keyed by."""
_T = TypeVar("_T")

SCENARIO_INVOCATIONS = 5
"""The weight of a simulated-user case: its length is known only once it has run."""

MAX_LISTED = 20
"""Cases named in one refusal message (the count of the rest follows)."""

RUNS_DIR = "runs"
"""The folder beside a report holding the recorded runs it scored (evalbot.action.remeasure uploads it)."""

_SHARD = re.compile(r"^\s*(\d{1,4})\s*/\s*(\d{1,4})\s*$")


@dataclass(frozen=True)
class Shard:
    """Job ``index`` of ``count`` (1-based): ``--shard 2/4`` is Shard(2, 4)."""

    index: int
    count: int

    @classmethod
    def parse(cls, raw: str) -> Shard:
        """``K/N`` with ``1 <= K <= N <= MAX_SHARDS``; anything else raises ValueError saying what is expected."""
        match = _SHARD.fullmatch(raw)
        if match is None:
            raise ValueError(f"expected K/N such as 2/4 (job K of N), got {raw!r}")
        index, count = int(match[1]), int(match[2])
        if not 1 <= count <= MAX_SHARDS:
            raise ValueError(f"expected N from 1 to {MAX_SHARDS} in K/N, got {raw!r}")
        if not 1 <= index <= count:
            raise ValueError(f"expected K from 1 to N in K/N, got {raw!r}")
        return cls(index, count)

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


class MergeError(EvalbotError):
    """The parts cannot be merged into one report: they disagree or overlap (input error, exit 2)."""


class MissingShards(MergeError):
    """The parts do not cover the run: shards or cases are missing (could not measure, exit 3)."""

    def __init__(self, message: str, missing: Sequence[CaseKey]) -> None:
        super().__init__(message)
        self.missing = list(missing)


def partition(cases: Iterable[tuple[str, str, int]], count: int) -> dict[CaseKey, int]:
    """The shard (1-based) of every ``(eval_set_id, eval_id, invocations)``, balanced by invocations.

    Heaviest case first to the least loaded shard (ties: the lower shard), cases of equal weight in id order: the
    result depends on the ids and weights only. Cases sharing a key (the same eval set id in two files) stay together.
    """
    weights: dict[CaseKey, int] = {}
    for set_id, eval_id, invocations in cases:
        key = (set_id, eval_id)
        weights[key] = weights.get(key, 0) + max(1, invocations)
    loads = [(0, index) for index in range(1, count + 1)]
    out: dict[CaseKey, int] = {}
    for key, weight in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])):
        load, index = heapq.heappop(loads)
        out[key] = index
        heapq.heappush(loads, (load + weight, index))
    return out


def _invocations(case: LoadedCase) -> tuple[str, int]:
    parsed = case.case
    if parsed is None:
        return case.eval_id, 1
    if parsed.conversation is not None:
        return parsed.eval_id, len(parsed.conversation)
    return parsed.eval_id, SCENARIO_INVOCATIONS


@dataclass(frozen=True)
class Plan:
    """A run's full case list and its partition."""

    sets: list[ShardSet]
    assignment: dict[CaseKey, int]
    case_notices: list[tuple[str, ...]]
    """Per eval set, the notices about its cases (unknown keys, unused rubric types), found over all its cases (each
    shard scores some)."""


def plan(eval_sets: Sequence[LoadedEvalSet], count: int) -> Plan:
    """Read every case once (to count its invocations) and partition the run over ``count`` shards."""
    sets: list[ShardSet] = []
    notices: list[tuple[str, ...]] = []
    for loaded in eval_sets:
        listed: list[tuple[str, int]] = []
        extra_keys: dict[str, str] = {}
        rubric_types: set[str | None] = set()
        for case in loaded.cases:
            listed.append(_invocations(case))
            if case.case is not None:
                note_case(case.case, case.eval_id, extra_keys, rubric_types)
            case.release()
        sets.append(ShardSet(eval_set_id=loaded.eval_set_id, path=loaded.path, cases=listed))
        notices.append(tuple(case_notices(loaded, extra_keys, rubric_types)))
    return Plan(sets, partition(_weighted(sets), count), notices)


def _weighted(sets: Sequence[ShardSet]) -> Iterable[tuple[str, str, int]]:
    for s in sets:
        for eval_id, invocations in s.cases:
            yield s.eval_set_id, eval_id, invocations


def shard_eval_sets(eval_sets: Sequence[LoadedEvalSet], run: Plan, shard: Shard) -> list[LoadedEvalSet]:
    """The eval sets as shard ``shard`` sees them: only its cases, and the whole set's case notices."""
    out = []
    for loaded, listed, notices in zip(eval_sets, run.sets, run.case_notices, strict=True):
        mine = tuple(case for case, (eval_id, _) in zip(loaded.cases, listed.cases, strict=True)
                     if run.assignment[(loaded.eval_set_id, eval_id)] == shard.index)
        out.append(replace(loaded, cases=mine, case_notices=notices))
    return out


def job_eval_sets(eval_sets: Sequence[LoadedEvalSet], job: Shard) -> list[LoadedEvalSet]:
    """The eval sets as job ``job.index`` of ``evalbot run --jobs N`` scores them: one contiguous run of the run's
    cases in file order (N runs of as many cases as can be, the later ones longer by one), so the parent joins the
    parts in job order into the cases of one job. Nothing is parsed to choose them (``plan`` parses every case):
    each eval set keeps its loaded cases in its share, gives no case notices of its own (``case_notices`` empty) and
    notes what they are made of over its cases (``notes``), which the parent joins (``merge_job_parts``). This
    partition is private to one run; ``--shard K/N`` keeps ``plan``'s, which every job of a sharded CI run
    recomputes and the merge checks."""
    total = sum(len(loaded.cases) for loaded in eval_sets)
    first, last = total * (job.index - 1) // job.count, total * job.index // job.count
    out: list[LoadedEvalSet] = []
    at = 0
    for loaded in eval_sets:
        mine = loaded.cases[max(0, first - at): max(0, last - at)]
        out.append(replace(loaded, cases=mine, case_notices=(), notes=CaseNotes()))
        at += len(loaded.cases)
    return out


def _digest(value: Any) -> str:
    blob = json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def case_list_fingerprint(sets: Sequence[ShardSet]) -> str:
    """Fingerprint of the full case list (eval set ids and paths, case ids and invocation counts, in order)."""
    return _digest([[s.eval_set_id, s.path, [list(c) for c in s.cases]] for s in sets])


def config_fingerprint(report: Report) -> str:
    """Fingerprint of what decides the verdicts besides the runs: each eval set's config and criteria."""
    return _digest([[es.eval_set_id, es.path, es.config, [c.model_dump(mode="json") for c in es.criteria]]
                    for es in report.eval_sets])


def judge_models(report: Report) -> list[str]:
    """The judge models the configured judged criteria call (ADK's default when a criterion names none)."""
    models: set[str] = set()
    for es in report.eval_sets:
        for criterion in es.criteria:
            if not criterion.judged:
                continue
            options = criterion.options.get("judge_model_options", criterion.options.get("judgeModelOptions"))
            model = None
            if isinstance(options, dict):
                model = options.get("judge_model", options.get("judgeModel"))
            models.add(str(model) if model else DEFAULT_JUDGE_MODEL)
    return sorted(models)


def shard_info(report: Report, run: Plan, shard: Shard) -> ShardInfo:
    """What part ``report`` is and what the merge checks (set on the part's report by the pipeline)."""
    return ShardInfo(index=shard.index, count=shard.count, config=config_fingerprint(report),
                     judge_models=judge_models(report), case_list=case_list_fingerprint(run.sets), eval_sets=run.sets)


def _listed(keys: Sequence[CaseKey]) -> str:
    shown = ", ".join(f"{set_id}/{eval_id}" for set_id, eval_id in keys[:MAX_LISTED])
    return shown + (f" and {len(keys) - MAX_LISTED} more" if len(keys) > MAX_LISTED else "")


def _agree(parts: Sequence[tuple[str, Report]], what: str, value: Any, fix: str) -> None:
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
    _agree(parts, "evalbot versions", lambda r: r.evalbot_version, fix)
    _agree(parts, "report schema versions", lambda r: r.schema_version, fix)
    _agree(parts, "shard counts (N of K/N)", lambda r: _info(r).count, fix)
    for name, report in parts:
        info = _info(report)
        if case_list_fingerprint(info.eval_sets) != info.case_list:
            raise MergeError(f"{name}: its case list does not match its own fingerprint (altered?); use the file "
                             "the shard job wrote")
    _agree(parts, "case lists (eval sets or cases differ)", lambda r: _info(r).case_list, fix)
    _agree(parts, "configs (criteria fingerprint)", lambda r: _info(r).config, fix)
    _agree(parts, "judge models", lambda r: _info(r).judge_models, fix)
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
    return info, partition(_weighted(info.eval_sets), info.count)


def _merge(parts: Sequence[tuple[str, Report]], info: ShardInfo, assignment: dict[CaseKey, int]) -> Report:
    found = _placed(parts, lambda p, i: [(c.eval_id, c) for c in parts[p][1].eval_sets[i].cases], info, assignment)
    eval_sets = []
    for i, listed in enumerate(info.eval_sets):
        cases = [found[(i, eval_id)] for eval_id, _ in listed.cases]
        merged = _merged_set(parts, i)
        merged.cases = cases
        merged.metrics = summarize_cases(cases)
        _set_status(merged, parts, i, [c.status for c in cases])
        eval_sets.append(merged)
    return _merged_report(parts, eval_sets, totals(eval_sets))


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
        _agree([(n, r) for n, r in parts], f"results for eval set {info.eval_sets[i].eval_set_id!r}",
               lambda r, i=i: _set_fields(r.eval_sets[i]), "run every shard with the same inputs, then merge again")
    return found


def _merged_set(parts: Sequence[tuple[str, Report]], i: int) -> EvalSetReport:
    """The ``i``-th eval set of the merged report without its cases, summaries and status."""
    template = parts[0][1].eval_sets[i]
    merged = EvalSetReport(**{f: getattr(template, f) for f in _SET_FIELDS}, status="not_evaluated")
    # Each part names the cases of its own that its pass_rule cannot decide; the comparison decides them again
    # over all the cases (compare.passrule replaces these problems), so the parts' are joined, not compared.
    merged.errors = [*_own_errors(template), *_union(p for _, r in parts for p in r.eval_sets[i].errors
                                                       if p.message.startswith(PASS_RULE_PROBLEM))]
    return merged


def _set_status(merged: EvalSetReport, parts: Sequence[tuple[str, Report]], i: int, statuses: Sequence[Status]) -> None:
    """The merged eval set's status from its cases' (``statuses``: each distinct one at least once)."""
    if statuses:
        merged.status = case_status(statuses)
    elif any(r.eval_sets[i].status == "error" for _, r in parts):
        merged.status = "error"


def _merged_report(parts: Sequence[tuple[str, Report]], eval_sets: list[EvalSetReport], counted: Totals) -> Report:
    return Report(
        schema_version=parts[0][1].schema_version,
        evalbot_version=parts[0][1].evalbot_version,
        eval_sets=eval_sets,
        errors=_union(p for _, r in parts for p in r.errors),
        notices=_union(n for _, r in parts for n in r.notices),
        totals=counted,
        usage=merge_usage([r.usage for _, r in parts]),
    )


@contextmanager
def loading_parts() -> Iterator[None]:
    """The cyclic collector paused while parts are read and merged, then what they allocated frozen out of its
    passes: it lives as long as the merged report (until the command ends), and re-enabled as it is, the collector's
    next pass would walk each of its millions of objects (1.4 s at 100,000 invocations). Reference counting still
    frees them."""
    with gc_paused():
        yield
        gc.freeze()


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


def _set_fields(es: EvalSetReport) -> Any:
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


def merge_usage(usages: Sequence[JudgeUsage | None]) -> JudgeUsage | None:
    """The judge usage of the parts summed, as the one run would have reported it: when every criterion asked one
    model, the per-(criterion, model) usage is booked in one ledger and summarized by it (costs computed from the
    summed tokens, in the ledger's order); otherwise the rows and costs are added up. The cache's hits and writes
    and the retries are summed, as are the concurrency limit's cuts (its lowest and maximum: one part's); the cache
    directory and the prices note are the first part's."""
    present = [u for u in usages if u is not None]
    if not present:
        return None
    if all(len(row.models) == 1 for u in present for row in u.per_criterion.values()):
        ledger = UsageLedger()
        for usage in present:
            for name, row in usage.per_criterion.items():
                ledger.record(name, row.models[0], Usage(row.input_tokens, row.output_tokens, row.requests,
                                                         row.cached_samples, row.saved_samples, row.extra_requests))
        merged = ledger.summary()
        merged.prices = present[0].prices
    else:
        merged = present[0].model_copy(deep=True)
        for usage in present[1:]:
            for name, row in usage.per_criterion.items():
                into = merged.per_criterion.setdefault(name, CriterionUsage(estimated_cost_usd=0.0))
                _add_row(into, row)
                into.models += [m for m in row.models if m not in into.models]
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


MAX_PART_BYTES = 256 * 1024 * 1024
"""Largest part file read."""
MAX_PARTS = MAX_SHARDS
"""Most part files a merge reads (one per shard)."""


class _SkeletonSet(EvalSetReport):
    """An eval set whose cases are the placeholders ``_by_lines`` put in place of their lines."""

    cases: list[str] = Field(default_factory=list)  # type: ignore[assignment]


class _SkeletonReport(Report):
    """A report whose eval sets are skeletons: everything but the cases validated as the Report model does."""

    eval_sets: list[_SkeletonSet] = Field(default_factory=list)  # type: ignore[assignment]


_CASE_LINE = b'{"eval_id":'
"""How every case line of a report written by ``results.write_report_json`` starts (one case per line)."""
_CASE_ENDS = (b"]},", b",", b"]}")
"""What may follow a case on its line: the next case, or the end of its eval set's cases (and of the eval set)."""
_CASE_DEPTH = TypeAdapter(tuple[tuple[tuple[tuple[CaseResult]]]])
"""A case validated under four brackets: as deep as in a report (object, eval_sets, eval set, cases), so the JSON
parser's nesting limit refuses exactly the cases it refuses in the whole report."""


def _split(data: bytes) -> tuple[_SkeletonReport, list[tuple[int, int]]] | None:
    """``data`` as a report validated but for its cases, with a placeholder for each, and where the case lines are
    (``data[start:end]``, not validated yet), in order; None when it is not laid out one case per line or anything
    but the cases is invalid.

    A raw line break cannot be inside a JSON string, so each case line is a whole value wherever it stands; the
    placeholders carry a random nonce that no file can hold, and the split is taken only when they come back as the
    eval sets' cases, in order, each once: then the whole document holds exactly these lines as its cases, and
    everything else as the skeleton validated it."""
    nonce = secrets.token_hex(8)
    spans: list[tuple[int, int]] = []
    skeleton_text: list[bytes] = []
    copied = pos = 0
    while pos >= 0:
        newline = data.find(b"\n", pos)
        line_end = len(data) if newline < 0 else newline
        if data.startswith(_CASE_LINE, pos):
            end = line_end - len(next((e for e in _CASE_ENDS if data.endswith(e, pos, line_end)), b""))
            skeleton_text += [data[copied:pos], b'"%s:%d"' % (nonce.encode(), len(spans))]
            spans.append((pos, end))
            copied = end
        pos = newline + 1 if newline >= 0 else -1
    if not spans:
        return None
    try:
        skeleton = _SkeletonReport.model_validate_json(b"".join([*skeleton_text, data[copied:]]))
    except ValidationError:
        return None
    if [c for es in skeleton.eval_sets for c in es.cases] != [f"{nonce}:{k}" for k in range(len(spans))]:
        return None
    return skeleton, spans


def _case_line(piece: bytes) -> CaseResult:
    """A case line validated as at its place in a report (raises ValidationError)."""
    case: CaseResult = _CASE_DEPTH.validator.validate_json(b"[[[[" + piece + b"]]]]")[0][0][0][0]
    return case


def _case_of(piece: bytes, store: SpillStore | None) -> CaseResult:
    """``_case_line``, kept compacted as a scored case is (results.compacted, its turns and verdicts written to
    ``store`` when given): the merge of a compared run holds every case."""
    return compacted(_case_line(piece), store)


def _with_cases(skeleton: _SkeletonReport, cases: Iterable[list[CaseResult]]) -> Report:
    """The Report of ``skeleton`` holding ``cases`` (one list per eval set), as validating it whole gives it."""
    eval_sets = [EvalSetReport.model_construct(es.model_fields_set, **{**es.__dict__, "cases": held})
                 for es, held in zip(skeleton.eval_sets, cases, strict=True)]
    return Report.model_construct(skeleton.model_fields_set, **{**skeleton.__dict__, "eval_sets": eval_sets})


def _by_lines(data: bytes, store: SpillStore | None = None) -> Report | None:
    """The report of ``data`` validated case line by case line, or None when that cannot be done (another layout,
    or anything invalid: the caller then validates the whole document, which names the error as it always has).

    The same report as ``Report.model_validate_json(data)`` (see ``_split``), 30-40% faster and without the
    parser's tree of the whole document: each case line is validated alone, under as many brackets as in the report
    so that the parser's nesting limit refuses exactly what it refuses there."""
    split = _split(data)
    if split is None:
        return None
    skeleton, spans = split
    try:
        cases = iter([_case_of(data[start:end], store) for start, end in spans])
    except ValidationError:
        return None
    return _with_cases(skeleton, ([next(cases) for _ in es.cases] for es in skeleton.eval_sets))


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
        data = data.removeprefix(_BOM)
        split = _split(data)
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
        shells.append((name, _with_cases(skeleton, ([] for _ in skeleton.eval_sets))))
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
            merged = _merged_set(shells, i)
            tally = CaseTally()
            for eval_id, _ in listed_set.cases:
                text, start, end = found[(i, eval_id)]
                piece = texts[text][start:end]
                try:  # streamed out, never held: not compacted (that would cost CPU for nothing)
                    case = _case_line(piece)
                except ValidationError:
                    return None
                if case.eval_id != eval_id:  # a key given twice in the line: the last one counts
                    return None
                tally.add(case)
                stream(i, merged, case)
            merged.metrics = tally.summaries()
            _set_status(merged, shells, i, list(tally.statuses))
            eval_sets.append(merged)
            counted.add(tally.totals)
    keys = [(s.eval_set_id, eval_id) for s in info.eval_sets for eval_id, _ in s.cases]
    return _merged_report(shells, eval_sets, counted), keys


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
    _agree(shells, "evalbot versions", lambda r: r.evalbot_version, fix)
    _agree(shells, "eval sets", lambda r: [_set_fields(es) for es in r.eval_sets], fix)
    if any([s.configured for s in n.eval_sets] != [s.configured for s in notes_of[0].eval_sets] for n in notes_of):
        raise MergeError(f"the jobs' notes have different configs; {fix}")
    eval_sets = []
    counted = Totals()
    for i in range(len(shells[0][1].eval_sets)):
        merged = _merged_set(shells, i)
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
        _set_status(merged, shells, i, list(tally.statuses))
        eval_sets.append(merged)
        counted.add(tally.totals)
    return _merged_report(shells, eval_sets, counted)


_BOM = b"\xef\xbb\xbf"


def part_from_bytes(data: bytes, name: str, store: SpillStore | None = None) -> Report:
    """A part's report from its bytes (strict UTF-8 JSON, validated); anything else raises InputError naming
    ``name`` and the JSON pointer. ``store``: where its cases' packed turns and verdicts are kept (see
    ``BuildContext.spill_store``)."""
    data = data.removeprefix(_BOM)
    try:
        with gc_paused():  # millions of acyclic objects: the collector would rescan them over and over
            fast = _by_lines(data, store)
            return fast if fast is not None else Report.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(name, json_pointer(first["loc"]),
                         f"not an evalbot report: {first['msg']}; give the report a shard job wrote") from None


def read_part(path: Path, *, root: Path | None = None, store: SpillStore | None = None) -> Report:
    """Read one part file: a regular file (inside ``root`` when given) of at most MAX_PART_BYTES."""
    return part_from_bytes(part_bytes(path, root=root), str(path), store)


def part_bytes(path: Path, *, root: Path | None = None) -> bytes:
    """The bytes of one part file (see ``read_part``), not validated yet."""
    if path.is_symlink():
        raise InputError(path, "", "part refused: a symlink; give the report file itself")
    return read_regular_file(path, root=root, where=str(path), what="part", limit=MAX_PART_BYTES)


def part_files(paths: Sequence[str], *, root: Path | None = None) -> list[Path]:
    """The part files among ``paths``: files as given, and the ``*.json`` files in directories (searched two levels
    deep, as actions/download-artifact lays them out: one folder per artifact, or all in one with merge-multiple).
    Symlinks, FIFOs and other special files are refused, never opened."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        try:
            mode = path.lstat().st_mode
        except OSError as exc:
            raise InputError(raw, "", f"part not found or unreadable: {exc.strerror or exc}; give the shard "
                                      "jobs' report files or the directory they were downloaded to") from None
        if stat.S_ISDIR(mode):
            out += _parts_in(path, depth=2)
        elif stat.S_ISLNK(mode):
            raise InputError(raw, "", "part refused: a symlink; give the report file itself")
        else:
            out.append(path)
        if len(out) > MAX_PARTS:
            raise InputError(raw, "", f"more than {MAX_PARTS} part files; give only the shard jobs' reports")
    if root is not None:
        for path in out:
            if not path.resolve().is_relative_to(root.resolve()):
                raise InputError(path, "", "part refused: outside the workspace")
    return out


def _parts_in(directory: Path, depth: int) -> list[Path]:
    found: list[Path] = []
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError as exc:
        raise InputError(directory, "", f"cannot list the directory: {exc.strerror or exc}") from None
    for entry in entries[: MAX_PARTS * 4]:
        path = Path(entry.path)
        if entry.is_symlink():
            if entry.name.endswith(".json"):
                raise InputError(path, "", "part refused: a symlink; give the report file itself")
            continue
        if entry.is_dir(follow_symlinks=False):
            if depth > 1 and entry.name != RUNS_DIR:  # runs/: the recorded runs uploaded beside a part, not parts
                found += _parts_in(path, depth - 1)
        elif entry.name.endswith(".json"):
            found.append(path)  # a FIFO or device is refused by read_part, never opened blocking
        if len(found) > MAX_PARTS:
            raise InputError(directory, "", f"more than {MAX_PARTS} part files; keep only the shard jobs' reports")
    return found
