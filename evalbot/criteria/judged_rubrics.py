"""Rubric-based judging shared by the rubric criteria: effective rubrics, answer parsing, votes and pooling.

Semantics of ADK 2.13 (``rubric_based_evaluator.py``) except one bug not copied: ADK matches every invocation's
answers against the rubric list of the LAST invocation (instance state overwritten while prompts are built), so an
invocation-level rubric present on an earlier turn only is silently dropped. evalbot uses each invocation's own list.
"""

from __future__ import annotations

import asyncio
import re
import statistics
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalbot.criteria.base import CaseInput, Options, not_evaluated, score_invocation
from evalbot.criteria.judged import JudgeCall, JudgeModelOptions, clip, echo_reason, unavailable
from evalbot.formats.adk import Invocation, Rubric
from evalbot.judges.templates import echoes_example
from evalbot.results import InvocationScore, JudgeDetails, MetricResult, RubricVerdict, VoteSplit, threshold_status

_ID = re.compile(r"(?m)^\s*ID: (.*)$")
_PROPERTY = re.compile(r"(?m)^\s*Property: (.*)$")
_RATIONALE = re.compile(r"(?<=Rationale: )(.*)")
_VERDICT = re.compile(r"(?<=Verdict: )(.*)")
_YES = re.compile(r"\byes\b")
_NO = re.compile(r"\bno\b")
_SMART = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"})
_DECORATION = " *_`#>-\u2022\"'"


class RubricOptions(Options):
    """ADK's RubricsBasedCriterion options."""

    judge_model_options: JudgeModelOptions = JudgeModelOptions()
    rubrics: list[Rubric] | None = None
    include_intermediate_responses_in_final: bool = False


@dataclass(frozen=True)
class Parsed:
    """One rubric verdict read from a judge answer."""

    rubric_id: str | None
    prop: str
    rationale: str
    score: float | None


def normalize(text: str | None) -> str:
    """Property text as compared with the rubrics: NFKC, ASCII quotes/dashes, collapsed spaces, no decoration."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).translate(_SMART)
    return re.sub(r"\s+", " ", text).strip(_DECORATION).lower()


def parse_answer(text: str) -> list[Parsed]:
    """Verdict blocks of an answer (ADK's parser): yes -> 1, else no -> 0, else None (also when a verdict says both
    words); an answer whose counts of Property, Rationale and Verdict lines differ yields nothing."""
    props = list(_PROPERTY.finditer(text))
    ids = list(_ID.finditer(text))
    rationales = _RATIONALE.findall(text)
    scores: list[float | None] = []
    for verdict in _VERDICT.findall(text):
        low = verdict.lower()
        if _YES.search(low) and _NO.search(low):  # "yes" and "no" in one verdict: no vote, not the first word's
            scores.append(None)
            continue
        scores.append(1.0 if "yes" in low else 0.0 if "no" in low else None)
    if not len(props) == len(rationales) == len(scores):
        return []
    out = []
    for i, (prop, rationale, score) in enumerate(zip(props, rationales, scores, strict=True)):
        previous = props[i - 1].start() if i else -1
        rid = None
        for id_match in ids:
            if previous < id_match.start() < prop.start():
                rid = id_match.group(1).strip() or None
        out.append(Parsed(rid, prop.group(1).strip(), rationale.strip(), score))
    return out


MAX_RUBRICS = 100
"""The most rubrics one judge prompt may list: rubrics are PR data, and a prompt of thousands of properties costs
without measuring anything a reviewer could read (the judge drops or merges verdicts long before that)."""


class RubricError(ValueError):
    """Rubrics that cannot be used (duplicate ids, or none for an invocation)."""


def effective_rubrics(
    criterion: Sequence[Rubric], scoped: Sequence[Sequence[Rubric] | None], rubric_type: str
) -> list[Rubric]:
    """Criterion rubrics (always) plus the case/invocation rubrics of ``rubric_type`` (untyped ones are ignored,
    as in ADK). The same rubric reached twice (e.g. actual and expected invocation) counts once."""
    chosen: dict[str, Rubric] = {}
    for rubric, scope in [(r, "criterion") for r in criterion] + [
        (r, "case or invocation") for group in scoped for r in (group or []) if r.type == rubric_type
    ]:
        known = chosen.get(rubric.rubric_id)
        if known is not None and known != rubric:
            raise RubricError(f"rubric_id {rubric.rubric_id!r} is defined twice (again in the {scope} rubrics)")
        chosen[rubric.rubric_id] = rubric
    if len(chosen) > MAX_RUBRICS:
        raise RubricError(f"{len(chosen)} rubrics apply to one judge prompt; at most {MAX_RUBRICS} are judged at "
                          "once (split them over criteria or cases)")
    return list(chosen.values())


def one_vote(entries: list[tuple[float | None, str]]) -> tuple[float | None, str]:
    """One answer's verdict on a rubric it judged more than once: the verdict if every block agrees, else no vote
    (a block quoted from the agent's text cannot outvote, nor be counted beside, the judge's own)."""
    scores = {score for score, _ in entries}
    if len(scores) == 1:
        return entries[0]
    return None, entries[-1][1]


def _vote(entries: list[tuple[float | None, str]]) -> tuple[float | None, str, VoteSplit]:
    yes = [r for s, r in entries if s == 1.0]
    no = [r for s, r in entries if s == 0.0]
    tally = VoteSplit(yes=len(yes), no=len(no))
    if not yes and not no:
        return None, entries[0][1], tally
    return (1.0, yes[0], tally) if len(yes) > len(no) else (0.0, no[0], tally)


def score_samples(texts: Sequence[str], rubrics: Sequence[Rubric]) -> tuple[list[RubricVerdict], list[str]]:
    """Per rubric: majority over samples (tie -> 0), the rationale of a sample agreeing with it; unmatched texts."""
    by_id = {r.rubric_id: r for r in rubrics}
    by_text = {normalize(r.rubric_content.text_property): r for r in rubrics}
    collected: dict[str, list[tuple[float | None, str]]] = {}
    unmatched: list[str] = []
    for text in texts:
        answered: dict[str, list[tuple[float | None, str]]] = {}
        for item in [] if echoes_example(text) else parse_answer(text):
            rubric = by_id.get(item.rubric_id) if item.rubric_id else None
            rubric = rubric or by_text.get(normalize(item.prop))
            if rubric is None:
                unmatched.append(item.rubric_id or item.prop)
                continue
            answered.setdefault(rubric.rubric_id, []).append((item.score, item.rationale))
        for rid, entries in answered.items():
            collected.setdefault(rid, []).append(one_vote(entries))
    results = []
    for rid, entries in collected.items():
        score, rationale, tally = _vote(entries)
        results.append(RubricVerdict(rubric_id=rid, score=score, rationale=clip(rationale, 600), votes=tally))
    return results, unmatched


PromptBuilder = Callable[[Invocation, Sequence[Rubric], RubricOptions], str]


@dataclass(frozen=True)
class RubricCriterion:
    """A rubric criterion: prompt per invocation, votes per rubric, case score pooled over (invocation, rubric)."""

    name: str
    threshold: float | None
    options: RubricOptions
    rubric_type: str
    prompt: PromptBuilder
    call: JudgeCall | None
    unavailable_reason: str | None = None

    async def evaluate(self, case: CaseInput) -> MetricResult:
        """Judge every invocation against its effective rubrics."""
        if self.call is None:
            return unavailable(self.name, self.threshold, self.unavailable_reason, case)
        expected = case.expected or []
        lists = []
        try:
            for i, actual in enumerate(case.actual):
                exp = expected[i].rubrics if i < len(expected) else None
                rubrics = effective_rubrics(self.options.rubrics or [], [actual.rubrics, case.case.rubrics, exp],
                                            self.rubric_type)
                if not rubrics:
                    raise RubricError(
                        f"invocation {actual.invocation_id or i + 1} has no rubrics: give the criterion 'rubrics' or "
                        f"add rubrics with \"type\": \"{self.rubric_type}\" to the case or invocation"
                    )
                lists.append(rubrics)
        except RubricError as exc:
            return not_evaluated(self.threshold, str(exc), len(case.actual))
        call = self.call.fresh()
        scores = await asyncio.gather(*(judge_rubrics(call, self.prompt(a, r, self.options), self.threshold, a, r)
                                        for a, r in zip(case.actual, lists, strict=True)))
        return summarize(self.threshold, list(scores), call)


async def judge_rubrics(call: JudgeCall, prompt: str, threshold: float | None, invocation: Invocation,
                        rubrics: Sequence[Rubric]) -> InvocationScore:
    """Ask ``call`` for its samples of ``prompt`` and score ``invocation``: the mean of the rubrics' majority votes
    (``score_samples``); a failed call, or answers without a verdict, leave it not_evaluated with the reason."""
    answer = await call.ask(prompt)
    if answer.error is not None:
        return score_invocation(None, threshold, invocation, reason=answer.error)
    results, unmatched = score_samples(answer.texts, rubrics)
    present = [r.score for r in results if r.score is not None]
    score = statistics.mean(present) if present else None
    details = JudgeDetails(rubrics=results, unmatched=sorted(set(unmatched)) or None)
    reason = None if score is not None else (
        echo_reason(answer.texts) or "no rubric verdict could be read from the judge's answers")
    if score is None and answer.texts:
        details.answer = clip(answer.texts[0], 600)
    return score_invocation(score, threshold, invocation, reason=reason, details=details.as_details())


def summarize(threshold: float | None, scores: list[InvocationScore], call: JudgeCall) -> MetricResult:
    """The case result: the mean over every (invocation, rubric) verdict pooled (ADK's), per-rubric means and the
    judge's usage in the details."""
    pooled: list[float] = []
    by_rubric: dict[str, list[float]] = {}
    for inv in scores:
        for entry in JudgeDetails.read(inv.details).rubrics or []:
            if entry.score is not None:
                pooled.append(entry.score)
                by_rubric.setdefault(entry.rubric_id, []).append(entry.score)
    overall = statistics.mean(pooled) if pooled else None
    details = {**call.tally.details(),
               "rubrics": [{"rubric_id": k, "score": statistics.mean(v)} for k, v in by_rubric.items()]}
    reason = None if overall is not None else "no rubric could be judged (see each invocation's reason)"
    return MetricResult(score=overall, status=threshold_status(overall, threshold), threshold=threshold,
                        per_invocation=scores, reason=reason, details=details)
