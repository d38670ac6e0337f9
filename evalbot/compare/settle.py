"""Settling split votes: which judged verdicts flipped against the baseline on a split vote, and the report once
those invocations are decided by a larger vote.

The stage itself (asking the judge) is ``pipeline.settle_split_votes``; this module is pure but for the ballots it
is handed.  A target is an invocation of a judged criterion whose case-level change against the baseline is
*inconclusive* (the comparison's own verdict, so the same matching of eval sets, cases and definitions applies) and
whose vote, on either side, is split.  Once resampled, the invocation's verdict is the majority of all its samples,
its votes record the real split, how many samples were added and whether the larger vote *settles* it (``settled``:
a significant majority that also differs significantly from the baseline's vote, at the policy's ``alpha``); only a
vote that settles nothing stays split for the gate.

A sharded run settles in its shard jobs (each holds the ballots of its cases and reads the same baseline); its parts
carry the :func:`fingerprint` of what they settled against, which the merge checks against its own baseline and
policy, so the merged report is the one job's.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalbot.compare.baseline import Baseline
from evalbot.compare.gate import GatePolicy
from evalbot.compare.model import Comparison, delta_rows
from evalbot.compare.stats import fisher_exact, sign_test
from evalbot.compare.votes import Votes
from evalbot.criteria.base import BallotBox, VoteBallot
from evalbot.criteria.judged import majority, rationale_of, votes
from evalbot.results import (
    CaseResult,
    Report,
    case_status,
    clean_score,
    mean,
    summarize_cases,
    threshold_status,
    totals,
)


@dataclass
class Target:
    """One invocation to resample: its case in the report, the criterion, the invocation's index and its ballot."""

    case: CaseResult
    criterion: str
    index: int
    ballot: VoteBallot
    asked: int
    """Samples the vote had before resampling."""
    base: Votes | None = None
    """The baseline's vote on the same invocation, when the two line up."""


def settles(baseline: Baseline | None, policy: GatePolicy) -> bool:
    """Whether a run compared with ``baseline`` under ``policy`` settles split votes at all."""
    return baseline is not None and policy.resample_split > 0 and policy.noise_aware


def fingerprint(baseline: Baseline | None, policy: GatePolicy) -> str | None:
    """What decides how split votes are settled: the baseline's content and the policy's ``resample_split``,
    ``alpha`` and ``noise_aware``; None when nothing is settled (no baseline, ``resample_split`` 0, noise_aware
    off). Two runs with the same fingerprint ask the same extra samples of the same invocations."""
    if baseline is None or not settles(baseline, policy):
        return None
    blob = json.dumps([baseline.model_dump(mode="json", exclude_none=True), policy.resample_split, policy.alpha,
                       policy.noise_aware], sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def described(baseline: str, policy: GatePolicy) -> str:
    """The baseline (where it was read) and the policy split votes are settled with, as a refusal names them."""
    return f"{baseline} (resample_split {policy.resample_split}, alpha {policy.alpha})"


def split_flip_indices(base: Sequence[Votes | None] | None, cur: Sequence[Votes | None] | None) -> list[int]:
    """Invocations whose verdict flipped on a split vote: those whose majority changed with a split on either side;
    when no invocation's votes line up with the baseline's, every invocation whose vote is split (the same
    invocations ``votes.vote_noise`` looks at)."""
    b, c = list(base or []), list(cur or [])
    pairs = [(b[i] if i < len(b) else None, c[i] if i < len(c) else None) for i in range(max(len(b), len(c)))]

    def single(v: Votes | None) -> Votes | None:
        return v if v is not None and v.pooled_split is None else None

    flipped = [i for i, (x, y) in enumerate(pairs)
               if (sx := single(x)) is not None and (sy := single(y)) is not None and sx.passed != sy.passed]
    relevant = flipped or list(range(len(pairs)))
    return [i for i in relevant if pairs[i][1] is not None and any(v is not None and v.split for v in pairs[i])]


def decides(yes: int, no: int, base: Votes | None, alpha: float) -> bool:
    """Whether a larger vote decides its invocation: its majority is significant (exact sign test), and, when the
    baseline voted on the same invocation, the two votes differ significantly (Fisher's exact test) — a baseline
    decided by a noisy 3-2 cannot make a flip real however clear the new vote is."""
    if yes + no == 0 or sign_test(yes, no) >= alpha:
        return False
    if base is None or base.pooled_split is not None:
        return True
    return fisher_exact(base.yes, base.no, yes, no) < alpha


def targets(comparison: Comparison, ballots: BallotBox) -> list[Target]:
    """Every invocation to resample: inconclusive judged flips whose vote was kept in ``ballots``."""
    out: list[Target] = []
    for es in comparison.eval_sets:
        for case in es.cases:
            if case.current is None:
                continue
            for delta in delta_rows(case.metrics):
                if delta.change != "inconclusive":
                    continue
                base = delta.baseline_votes or []
                for index in split_flip_indices(delta.baseline_votes, delta.current_votes):
                    ballot = ballots.get((es.eval_set_id, case.current.eval_id, delta.criterion, index))
                    if ballot is not None:
                        out.append(Target(case.current, delta.criterion, index, ballot, len(ballot.texts),
                                          base[index] if index < len(base) else None))
    return out


def apply(report: Report, settled: Sequence[tuple[Target, str | None]], alpha: float) -> int:
    """Write the larger votes into ``report`` (invocation verdicts, then the criterion's case score and status, the
    case's status, the eval sets' summaries and the totals); returns how many invocations were resampled.

    A target whose extra samples could not be had keeps its vote and says why in its details."""
    changed = 0
    for target, error in settled:
        metric = target.case.metrics.get(target.criterion)
        if metric is None or target.index >= len(metric.per_invocation):
            continue
        scores = list(metric.per_invocation)  # a kept case's are packed (results.PackedScores): a new list
        invocation = scores[target.index]
        details: dict[str, Any] = dict(invocation.details or {})
        if error is not None:
            details["resample_error"] = error
            scores[target.index] = invocation.model_copy(update={"details": details})
            metric.per_invocation = scores
            continue
        texts = target.ballot.texts
        samples = [target.ballot.score(t) for t in texts]
        verdict = majority(samples)
        split = votes(samples)
        split.resampled = len(texts) - target.asked
        split.settled = decides(split.yes, split.no, target.base, alpha)
        details["votes"] = split.model_dump(mode="json")
        chosen = next((t for t, s in zip(texts, samples, strict=True) if s is not None and s == verdict), None)
        if chosen is not None:
            details["rationale"] = rationale_of(chosen)
        score = clean_score(verdict)
        scores[target.index] = invocation.model_copy(update={
            "score": score, "status": threshold_status(score, metric.threshold), "details": details})
        metric.per_invocation = scores
        overall = clean_score(mean(p.score for p in scores))
        metric.score = overall
        metric.status = threshold_status(overall, metric.threshold)
        target.case.status = case_status([m.status for m in target.case.metrics.values()])
        changed += 1
    if changed:
        for es in report.eval_sets:
            es.metrics = summarize_cases(es.cases)
            if es.status != "error":
                es.status = case_status([c.status for c in es.cases]) if es.cases else "not_evaluated"
        report.totals = totals(report.eval_sets)
    return changed

