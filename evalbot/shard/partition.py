"""The partitions of a run's cases: over the N jobs of a sharded CI run (``--shard K/N``), and over the jobs of
one ``evalbot run --jobs N``.

``--shard K/N`` makes job K of N score (or run) only its part of the cases. Every job computes the same partition
from the same data: the eval set ids, the case ids and each case's expected invocation count, never the order of
files, the machine or the clock. Cases are dealt heaviest first to the least loaded shard, so the shards hold about
the same number of invocations; a case is never split. Each part's report carries a :class:`ShardInfo`: the full case
list (from which the merge recomputes the partition), and fingerprints of the config and the judge models
(:mod:`evalbot.shard.merge` checks them). ``run --jobs N`` has its own, private partition (``job_eval_sets``).
"""

from __future__ import annotations

import hashlib
import heapq
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalbot.formats.loaded import CaseNotes, LoadedCase, LoadedEvalSet
from evalbot.judges.base import DEFAULT_JUDGE_MODEL
from evalbot.results import (
    MAX_SHARDS,
    Report,
    ShardInfo,
    ShardSet,
)
from evalbot.scoring import case_notices, note_case

CaseKey = tuple[str, str]
"""(eval_set_id, eval_id): what the partition is keyed by."""

SCENARIO_INVOCATIONS = 5
"""The weight of a simulated-user case: its length is known only once it has run."""

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
class ShardPlan:
    """A run's full case list and its partition."""

    sets: list[ShardSet]
    assignment: dict[CaseKey, int]
    case_notices: list[tuple[str, ...]]
    """Per eval set, the notices about its cases (unknown keys, unused rubric types), found over all its cases (each
    shard scores some)."""


def plan_shards(eval_sets: Sequence[LoadedEvalSet], count: int) -> ShardPlan:
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
    return ShardPlan(sets, partition(weighted_cases(sets), count), notices)


def weighted_cases(sets: Sequence[ShardSet]) -> Iterable[tuple[str, str, int]]:
    for s in sets:
        for eval_id, invocations in s.cases:
            yield s.eval_set_id, eval_id, invocations


def shard_eval_sets(eval_sets: Sequence[LoadedEvalSet], run: ShardPlan, shard: Shard) -> list[LoadedEvalSet]:
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
    parts in job order into the cases of one job. Nothing is parsed to choose them (``plan_shards`` parses every case):
    each eval set keeps its loaded cases in its share, gives no case notices of its own (``case_notices`` empty) and
    notes what they are made of over its cases (``notes``), which the parent joins (``merge_job_parts``). This
    partition is private to one run; ``--shard K/N`` keeps ``plan_shards``'s, which every job of a sharded CI run
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


def shard_info(report: Report, run: ShardPlan, shard: Shard) -> ShardInfo:
    """What part ``report`` is and what the merge checks (set on the part's report by the pipeline)."""
    return ShardInfo(index=shard.index, count=shard.count, config=config_fingerprint(report),
                     judge_models=judge_models(report), case_list=case_list_fingerprint(run.sets), eval_sets=run.sets)
