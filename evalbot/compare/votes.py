"""Judge votes: reading the vote split a judged criterion recorded, and telling a decided flip from a split one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalbot.compare.stats import fisher_exact
from evalbot.results import InvocationScore

MAX_VOTES = 1_000
"""More votes than any judge configuration gives on one invocation: such a count (e.g. from a forged report
artifact in the fork-safe second stage) is not a vote split."""
MAX_TABLE = 20_000
"""Largest vote table the exact test is run on (its cost grows with the counts); beyond it no p-value is shown."""


class Votes(BaseModel):
    """How the judge's samples voted on one invocation: ``yes`` pass votes and ``no`` fail votes.

    Rubric criteria take one vote per rubric; their votes are pooled here and ``pooled_split`` records whether any
    single rubric's vote was split.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    yes: int = Field(ge=0)
    no: int = Field(ge=0)
    pooled_split: bool | None = None
    resampled: int | None = Field(default=None, ge=0, le=MAX_VOTES)
    """Samples added to settle a split vote that flipped against the baseline (``resample_split``), if any."""
    settled: bool | None = None
    """For a resampled vote: whether its majority is significant (exact sign test at the policy's alpha)."""

    @property
    def split(self) -> bool:
        """True when the samples disagreed on a decision (e.g. 3 of 5); a resampled vote is split while its
        majority is not significant."""
        if self.pooled_split is not None:
            return self.pooled_split
        if self.settled is not None:
            return not self.settled
        return self.yes > 0 and self.no > 0

    @property
    def passed(self) -> bool:
        """The majority verdict (a tie fails, as ADK decides)."""
        return self.yes > self.no


def _vote_value(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value >= 0.5
    if isinstance(value, dict):
        return _vote_value(value.get("score", value.get("verdict")))
    if isinstance(value, str):
        lowered = value.strip().lower()
        if lowered in ("yes", "valid", "true", "pass", "passed", "1"):
            return True
        if lowered in ("no", "invalid", "false", "fail", "failed", "0"):
            return False
    return None


def _pooled(rubrics: list[Any]) -> Votes | None:
    tallies = [votes_of(r) for r in rubrics if isinstance(r, Mapping)]
    present = [t for t in tallies if t is not None]
    if not present:
        return None
    return Votes(
        yes=sum(t.yes for t in present), no=sum(t.no for t in present), pooled_split=any(t.split for t in present)
    )


def votes_of(details: Mapping[str, Any] | None) -> Votes | None:
    """The vote split recorded in an invocation's details, if any.

    Accepts ``{"votes": {"yes": n, "no": m}}``, ``{"votes": [1.0, 0.0, ...]}`` (scores or booleans; unscored
    samples are not votes), ``{"samples": [{"score": ...}, ...]}`` and rubric results
    ``{"rubrics": [{"votes": {...}}, ...]}`` (pooled).
    """
    if not details:
        return None
    if "votes" not in details and isinstance(details.get("rubrics"), list):
        return _pooled(details["rubrics"])
    raw = details.get("votes", details.get("samples"))
    if isinstance(raw, Mapping):
        yes, no = raw.get("yes", raw.get("pass")), raw.get("no", raw.get("fail"))
        if all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= MAX_VOTES for v in (yes, no)):
            if not yes + no:
                return None
            extra, settled = raw.get("resampled"), raw.get("settled")
            resampled = extra if isinstance(extra, int) and not isinstance(extra, bool) and 0 <= extra <= MAX_VOTES \
                else None
            return Votes(yes=yes, no=no, resampled=resampled,
                         settled=settled if isinstance(settled, bool) and resampled is not None else None)
        return None
    if isinstance(raw, list):
        if any(isinstance(v, int | float) and not isinstance(v, bool) and not 0 <= v <= 1 for v in raw):
            return None  # ratings on a wider scale (a pointwise metric's 1-5) are not votes
        cast = [_vote_value(v) for v in raw]
        yes, no = cast.count(True), cast.count(False)
        return Votes(yes=yes, no=no) if yes + no else None
    return None


def invocation_votes(per_invocation: Sequence[InvocationScore]) -> list[Votes | None] | None:
    """Votes per invocation, or None when no invocation recorded any."""
    votes = [votes_of(inv.details) for inv in per_invocation]
    return votes if any(v is not None for v in votes) else None


def _single(votes: Votes | None) -> Votes | None:
    """The votes if they are one decision's (not pooled over rubrics)."""
    return votes if votes is not None and votes.pooled_split is None else None


def _pair_split(base: Votes | None, cur: Votes | None) -> bool:
    """Whether an invocation's flip rests on a split vote: a vote settled with more samples (``resample_split``)
    decides by itself; otherwise a split on either side counts."""
    if cur is not None and cur.settled is not None:
        return cur.split
    return any(v is not None and v.split for v in (base, cur))


def vote_noise(
    base: list[Votes | None] | None, cur: list[Votes | None] | None
) -> tuple[bool, float | None]:
    """Whether a judged flip was decided by a split vote, and the Fisher p-value of baseline vs current votes.

    Only invocations whose majority changed are considered when both sides have aligned votes; otherwise every
    invocation with votes is. A current vote settled by more samples is split only if its majority is still not
    significant, whatever the baseline's split. Pooled rubric votes count for the split but not for the p-value (their yes/no
    counts mix different rubrics).
    """
    b = base or []
    c = cur or []
    pairs = [(b[i] if i < len(b) else None, c[i] if i < len(c) else None) for i in range(max(len(b), len(c)))]
    flipped = []
    for x, y in pairs:
        sx, sy = _single(x), _single(y)
        if sx is not None and sy is not None and sx.passed != sy.passed:
            flipped.append((x, y))
    relevant = flipped or pairs
    split = any(_pair_split(x, y) for x, y in relevant)
    bv = [v for v in (_single(x) for x, _ in relevant) if v is not None]
    cv = [v for v in (_single(y) for _, y in relevant) if v is not None]
    if not bv or not cv or sum(v.yes + v.no for v in (*bv, *cv)) > MAX_TABLE:
        return split, None
    p = fisher_exact(sum(v.yes for v in bv), sum(v.no for v in bv), sum(v.yes for v in cv), sum(v.no for v in cv))
    return split, p
