"""``hallucinations_v1``: are the agent's sentences supported by its context? (ADK 2.13 semantics)

Each natural-language step (the final response; with ``evaluate_intermediate_nl_responses`` also every text an
event produced) is split into sentences by the judge, then each sentence is labelled against the context the agent
had at that step: ``supported``/``not_applicable`` count 1, ``unsupported``/``contradictory``/``disputed`` count 0.
Step score = mean over labelled sentences; invocation = mean of its steps; case = mean of scored invocations.

Deliberate difference: ADK drops a step whose judge call failed or could not be parsed and scores the invocation
from the remaining steps; evalbot marks the invocation not_evaluated with the reason (a failure never disappears).
Also, hand-written ``tool_uses``/``tool_responses`` are shown to the judge as context (ADK shows none). ADK ignores
``num_samples`` here; so does evalbot (one sample per call).
"""

from __future__ import annotations

import asyncio
import re
import statistics
from dataclasses import dataclass

from evalbot.criteria.base import BuildContext, CaseInput, Options, parse_options, score_invocation
from evalbot.criteria.judged import (
    JudgeCall,
    JudgeModelOptions,
    agent_instructions,
    as_json,
    clip,
    judge_call,
    tool_declarations,
    unavailable,
    user_prompt,
)
from evalbot.formats.adk import IntermediateData, Invocation, InvocationEvent, InvocationEvents
from evalbot.formats.config import CriterionSpec
from evalbot.formats.invocations import final_text
from evalbot.judges.templates import echoes_example, render
from evalbot.results import CheckedSentence, CheckedText, InvocationScore, JudgeDetails, MetricResult, threshold_status

NAME = "hallucinations_v1"
_SENTENCE = re.compile(r"<sentence>(.*?)</sentence>", re.DOTALL)
_BLOCK = re.compile(
    r"sentence:(.*?)\nlabel:(.*?)\nrationale:(.*?)\nsupporting_excerpt:(.*?)\ncontradicting_excerpt:(.*?)"
    r"(?=\nsentence:|\Z)",
    re.DOTALL | re.IGNORECASE,
)
POSITIVE = frozenset({"supported", "not_applicable"})
NEGATIVE = frozenset({"unsupported", "contradictory", "disputed"})


class HallucinationsOptions(Options):
    """ADK's HallucinationsCriterion options."""

    judge_model_options: JudgeModelOptions = JudgeModelOptions()
    evaluate_intermediate_nl_responses: bool = False
    include_intermediate_responses_in_final: bool = False


def parse_sentences(text: str) -> list[str]:
    """Sentences of a segmenter answer."""
    return _SENTENCE.findall(text)


def parse_labels(text: str) -> list[dict[str, str]]:
    """Labelled sentence blocks of a validator answer (label lower-cased). A sentence labelled both ways in one
    answer (a block the agent planted and the judge quoted beside its own) keeps its blocks with the label
    ``conflicting``: no vote, never the first block's label."""
    blocks = [
        {"sentence": m.group(1).strip(), "label": m.group(2).strip().lower(), "rationale": m.group(3).strip()}
        for m in _BLOCK.finditer(text.strip())
    ]
    sides: dict[str, set[bool]] = {}
    for block in blocks:
        if block["label"] in POSITIVE | NEGATIVE:
            sides.setdefault(block["sentence"], set()).add(block["label"] in POSITIVE)
    for block in blocks:
        if len(sides.get(block["sentence"], ())) > 1:
            block["label"] = "conflicting"
    return blocks


def _event_lines(event: InvocationEvent) -> list[str]:
    parts = event.content.parts if event.content and event.content.parts else []
    lines = []
    texts = [p.text for p in parts if p.text]
    calls = [p.function_call for p in parts if p.function_call is not None]
    outputs = [p.function_response for p in parts if p.function_response is not None]
    if texts:
        lines.append("\n".join(texts))
    if calls:
        lines.append("tool calls:\n" + as_json(calls))
    if outputs:
        lines.append("tool outputs:\n" + as_json(outputs))
    return lines


def context(invocation: Invocation, events: list[InvocationEvent], hand_written: bool) -> str:
    """What the agent knew at a step: instructions, user message, tools, grounding, earlier events."""
    blocks = ["Agent instructions:\n" + "\n\n".join(f"{n}:\n{i}" for n, i in agent_instructions(invocation.app_details))]
    blocks.append("User message:\n" + user_prompt(invocation))
    tools = tool_declarations(invocation.app_details)
    blocks.append("Tools:\n" + (as_json(tools) if any(tools.values()) else "The agent has no tools."))
    grounding = [e.grounding_metadata for e in events if e.grounding_metadata]
    if grounding:
        blocks.append("Grounding metadata:\n" + as_json(grounding))
    for event in events:
        blocks.extend(_event_lines(event))
    data = invocation.intermediate_data
    if hand_written and isinstance(data, IntermediateData):
        if data.tool_uses:
            blocks.append("tool calls:\n" + as_json(data.tool_uses))
        if data.tool_responses:
            blocks.append("tool outputs:\n" + as_json(data.tool_responses))
    return "\n\n".join(blocks)


def steps(invocation: Invocation, intermediate: bool) -> list[tuple[str, str]]:
    """(text to check, its context) for every step, in ADK's order."""
    data = invocation.intermediate_data
    events = list(data.invocation_events) if isinstance(data, InvocationEvents) else []
    out: list[tuple[str, str]] = []
    prior: list[InvocationEvent] = []
    if intermediate:
        for event in events:
            parts = (event.content.parts or []) if event.content else []
            texts = [p.text for p in parts if p.text]
            if texts:
                seen = [*prior, event.model_copy(update={"content": None})] if event.grounding_metadata else prior
                ctx = context(invocation, seen, hand_written=False)
                out.extend((t, ctx) for t in texts)
            prior.append(event)
    else:
        prior = events
    final = final_text(invocation)
    if final:
        out.append((final, context(invocation, prior, hand_written=True)))
    return out


@dataclass(frozen=True)
class Hallucinations:
    """Sentence-level grounding check of the agent's texts."""

    threshold: float | None
    options: HallucinationsOptions
    call: JudgeCall | None
    unavailable_reason: str | None = None
    name: str = NAME

    async def evaluate(self, case: CaseInput) -> MetricResult:
        """Score every invocation; the case score is the mean of the scored ones."""
        if self.call is None:
            return unavailable(self.name, self.threshold, self.unavailable_reason, case)
        call = self.call.fresh()
        scores = list(await asyncio.gather(*(self._one(call, inv) for inv in case.actual)))
        present = [s.score for s in scores if s.score is not None]
        overall = statistics.mean(present) if present else None
        reason = None if present else "no invocation could be checked (see each invocation's reason)"
        return MetricResult(score=overall, status=threshold_status(overall, self.threshold), threshold=self.threshold,
                            per_invocation=scores, reason=reason, details=call.tally.details())

    async def _one(self, call: JudgeCall, invocation: Invocation) -> InvocationScore:
        todo = steps(invocation, self.options.evaluate_intermediate_nl_responses)
        if not todo:
            return score_invocation(None, self.threshold, invocation, reason="the invocation has no text to check")
        results = await asyncio.gather(*(self._step(call, text, ctx) for text, ctx in todo))
        errors = [r.error for r in results if r.error is not None]
        details = JudgeDetails(steps=results).as_details()
        if errors:
            return score_invocation(None, self.threshold, invocation, reason="; ".join(errors), details=details)
        score = statistics.mean(r.score for r in results if r.score is not None)
        return score_invocation(score, self.threshold, invocation, details=details)

    async def _step(self, call: JudgeCall, text: str, ctx: str) -> CheckedText:
        step = CheckedText(text=clip(text, 300))
        answer = await call.ask(render("hallucinations_segment.j2", response=text), samples=1)
        if answer.error is not None:
            step.error = f"sentence segmentation failed: {answer.error}"
            return step
        sentences = parse_sentences(answer.texts[0] if answer.texts else "")
        if not sentences:
            step.error = "the judge returned no sentences for a text to check"
            return step
        answer = await call.ask(render("hallucinations_validate.j2", context=ctx, sentences=sentences), samples=1)
        if answer.error is not None:
            step.error = f"sentence validation failed: {answer.error}"
            return step
        validated = answer.texts[0] if answer.texts else ""
        if echoes_example(validated):
            step.error = "sentence validation: the judge repeated the prompt's example answer instead of labelling"
            return step
        labelled = parse_labels(validated)
        votes = [1 if b["label"] in POSITIVE else 0 for b in labelled if b["label"] in POSITIVE | NEGATIVE]
        step.sentences = [CheckedSentence(sentence=b["sentence"], label=b["label"], rationale=clip(b["rationale"], 300))
                          for b in labelled]
        if not votes:
            step.error = "no sentence label could be read from the judge's answer"
            return step
        step.score = statistics.mean(votes)
        return step


def build(spec: CriterionSpec, ctx: BuildContext) -> Hallucinations:
    """Factory registered under ``hallucinations_v1``."""
    options = parse_options(HallucinationsOptions, spec)
    call = judge_call(ctx, options.judge_model_options, spec.name)
    return Hallucinations(spec.threshold, options, call, ctx.judge_unavailable_reason, spec.name)
