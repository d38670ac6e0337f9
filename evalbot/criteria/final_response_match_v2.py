"""``final_response_match_v2``: an LLM judge decides whether the final response matches the reference (ADK 2.13).

Each invocation is judged ``num_samples`` times (one request with ``candidate_count``); samples vote, a tie is a
fail, unparseable samples do not vote; the case score is the share of valid invocations among those scored.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from evalbot.criteria.base import (
    BallotKey,
    BuildContext,
    CaseInput,
    Options,
    need_expected,
    not_evaluated,
    parse_options,
)
from evalbot.criteria.judged import (
    JudgeCall,
    JudgeModelOptions,
    judge_call,
    judge_verdict,
    response_text,
    unavailable,
    user_prompt,
)
from evalbot.formats.adk import Invocation
from evalbot.formats.config import CriterionSpec
from evalbot.judges.templates import render
from evalbot.results import InvocationScore, MetricResult, threshold_status

NAME = "final_response_match_v2"

_VALID_KEY = re.compile(r'"is_the_agent_response_valid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]')
_INVALID_KEY = re.compile(r'"is_the_agent_response_invalid":\s*\[*[\n\s]*"*([^"^\]^\s]*)"*[\n\s]*\]*\s*[,\n\}]')
_FAIL_LABELS = {"invalid", "almost", "false", "partially_valid", "partially valid", "partially"}
_PASS_LABELS = {"valid", "true"}


def _label_score(label: str) -> float | None:
    label = label.strip().rstrip(",}")
    if label in _FAIL_LABELS:
        return 0.0
    return 1.0 if label in _PASS_LABELS else None


def parse_verdict(text: str) -> float | None:
    """1.0 valid, 0.0 invalid, None unrecognised — the label rules of ADK's parser, case-sensitive like it.

    Unlike ADK (which takes the first match), an answer carrying conflicting verdicts is unrecognised: an agent
    answer quoted by the judge could otherwise plant the first one."""
    found = [_label_score(m.group(1)) for m in _VALID_KEY.finditer(text)]
    if not found:
        found = [0.0 if m.group(1).strip().rstrip(",}") in {"true", "invalid"} else 1.0
                 for m in _INVALID_KEY.finditer(text)]
    if not found or len(set(found)) > 1:
        return None
    return found[0]


class FinalResponseMatchV2Options(Options):
    """ADK's LlmAsAJudgeCriterion options."""

    judge_model_options: JudgeModelOptions = JudgeModelOptions()
    include_intermediate_responses_in_final: bool = False


@dataclass(frozen=True)
class FinalResponseMatchV2:
    """Judge each final response against the expected one."""

    threshold: float | None
    options: FinalResponseMatchV2Options
    call: JudgeCall | None
    unavailable_reason: str | None = None
    name: str = NAME

    async def evaluate(self, case: CaseInput) -> MetricResult:
        """Score every invocation; the case score is #valid / #scored."""
        if self.call is None:
            return unavailable(self.name, self.threshold, self.unavailable_reason, case)
        try:
            expected = need_expected(case, self.name)
        except ValueError as exc:
            return not_evaluated(self.threshold, str(exc), len(case.actual))
        call = self.call.fresh()
        scores = await asyncio.gather(*(self._one(call, act, exp, (case.eval_set_id, case.case.eval_id, self.name, i))
                                        for i, (act, exp) in enumerate(zip(case.actual, expected, strict=True))))
        scored = [s.score for s in scores if s.score is not None]
        overall = sum(scored) / len(scored) if scored else None
        reason = None if scored else "no invocation could be judged (see each invocation's reason)"
        return MetricResult(score=overall, status=threshold_status(overall, self.threshold),
                            threshold=self.threshold, per_invocation=list(scores), reason=reason,
                            details=call.tally.details())

    async def _one(self, call: JudgeCall, actual: Invocation, expected: Invocation, key: BallotKey) -> InvocationScore:
        include = self.options.include_intermediate_responses_in_final
        prompt = render(
            "final_response_match_v2.j2",
            user_prompt=user_prompt(expected),
            reference=response_text(expected, include),
            response=response_text(actual, include),
        )
        return await judge_verdict(call, prompt, parse_verdict, self.threshold, actual,
                                   "the judge's answers had no recognisable verdict", key)


def build(spec: CriterionSpec, ctx: BuildContext) -> FinalResponseMatchV2:
    """Factory registered under ``final_response_match_v2``."""
    options = parse_options(FinalResponseMatchV2Options, spec)
    call = judge_call(ctx, options.judge_model_options, spec.name)
    return FinalResponseMatchV2(spec.threshold, options, call, ctx.judge_unavailable_reason, spec.name)
