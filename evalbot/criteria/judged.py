"""Helpers shared by the LLM-judged criteria: judge options, asking the judge, votes, usage and ADK text rules."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from evalbot.criteria.base import (
    BallotBox,
    BallotKey,
    BuildContext,
    CaseInput,
    Options,
    not_evaluated,
    score_invocation,
)
from evalbot.formats.adk import AppDetails, IntermediateData, Invocation, InvocationEvents
from evalbot.formats.invocations import content_text, final_text, intermediate_texts
from evalbot.judges.base import DEFAULT_JUDGE_MODEL, JudgeError, JudgeRequest, RunJudge, StopRule, Usage
from evalbot.judges.templates import echoes_example
from evalbot.judges.usage import usage_dict
from evalbot.results import InvocationScore, JudgeDetails, MetricResult, VoteSplit

NO_JUDGE = "no judge is configured"
MAX_SAMPLES = 64
"""The most judge samples one verdict may ask for (``num_samples``): a config is PR data, and a vote of more samples
adds nothing a reviewer could see but cost (a PR asking for 20,000 once made 14,174 requests before the deadline)."""


class JudgeModelOptions(Options):
    """ADK's ``judge_model_options``.  ``parallelism_limit`` is accepted for compatibility and ignored: evalbot
    bounds judge calls for the whole run instead (``--judge-concurrency``)."""

    judge_model: str = DEFAULT_JUDGE_MODEL
    judge_model_config: dict[str, Any] | None = None
    num_samples: int = Field(default=5, ge=1, le=MAX_SAMPLES)
    parallelism_limit: int = Field(default=1, ge=1)


@dataclass(frozen=True)
class Answer:
    """The judge's sample texts for one prompt, or why there are none."""

    texts: tuple[str, ...] = ()
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    served: str | None = None
    """The model the judge service named in its answer (None: all cached, or none named)."""


@dataclass
class Tally:
    """Judge usage of one criterion on one case."""

    model: str
    usage: Usage = field(default_factory=Usage)
    cost: Callable[[Usage, str], float | None] | None = None
    """The run judge's estimate (None: list prices by model name; see RunJudge.estimated_cost)."""
    served: list[str] = field(default_factory=list)
    """The models the service named in its answers for this verdict, in order, each once."""

    def add(self, answer: Answer) -> None:
        """Book one answer's usage and the model that served it."""
        self.usage += answer.usage
        for name in (answer.served or "").split(" + "):
            if name and name not in self.served and len(self.served) < 8:
                self.served.append(name)

    def details(self) -> dict[str, Any]:
        """``{"judge": {model, tokens, requests, cached samples, estimated cost}}`` for MetricResult.details."""
        row = usage_dict(self.usage, self.model)
        if self.cost is not None:
            row["estimated_cost_usd"] = self.cost(self.usage, self.model)
        if self.served:
            row["served_model"] = " + ".join(self.served)
        return {"judge": row}


@dataclass(frozen=True)
class JudgeCall:
    """How a criterion calls the judge: model, generation config, samples and its own name (for accounting);
    ``ballots`` keeps the votes a later stage may settle with more samples (see BallotBox)."""

    judge: RunJudge
    options: JudgeModelOptions
    purpose: str
    ballots: BallotBox | None = None
    tally: Tally = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "tally", Tally(self.options.judge_model, cost=self.judge.estimated_cost))

    def fresh(self) -> JudgeCall:
        """A copy with its own usage tally (one per case)."""
        return JudgeCall(self.judge, self.options, self.purpose, self.ballots)

    async def ask(self, prompt: str, samples: int | None = None, stop: StopRule | None = None,
                  first_sample: int = 0) -> Answer:
        """Ask for ``samples`` (default: num_samples) answers from index ``first_sample``, fewer when ``stop`` says
        the first ones decide (and the run samples sequentially); a judge failure becomes ``Answer.error``."""
        request = JudgeRequest(
            model=self.options.judge_model,
            prompt=prompt,
            config=self.options.judge_model_config or {},
            num_samples=samples or self.options.num_samples,
            purpose=self.purpose,
            first_sample=first_sample,
            stop=stop,
        )
        try:
            reply = await self.judge.generate(request)
        except JudgeError as exc:
            answer = Answer(error=str(exc))
        else:
            answer = Answer(reply.texts, usage=reply.usage, served=reply.served)
        self.tally.add(answer)
        return answer


def majority(scores: Sequence[float | None]) -> float | None:
    """ADK's vote over samples scored 1.0/0.0: more passes than fails passes; a tie fails; no vote is None."""
    yes = sum(1 for s in scores if s == 1.0)
    no = sum(1 for s in scores if s == 0.0)
    if yes == no == 0:
        return None
    return 1.0 if yes > no else 0.0


def majority_settled(scores: Sequence[float | None], remaining: int) -> bool:
    """True when no answers to ``remaining`` more samples (each a pass, a fail or unparseable) could change the
    ``majority`` of ``scores``: the full vote's verdict is already known."""
    yes = sum(1 for s in scores if s == 1.0)
    no = sum(1 for s in scores if s == 0.0)
    if remaining <= 0:
        return True
    if yes > no:  # a pass survives the worst case: every missing sample a fail
        return yes > no + remaining
    if no > 0:  # a fail (a tie fails) survives the best case: every missing sample a pass
        return yes + remaining <= no
    return False  # no vote yet: the missing samples decide everything


@dataclass(frozen=True)
class MajorityRule:
    """The stop rule of a majority vote over samples parsed by ``parse`` (see judges.sequential): ask
    ``num_samples // 2 + 1`` first (3 of 5: enough for a unanimous vote to decide either way), stop as soon as
    the vote is ``majority_settled``."""

    parse: Callable[[str], float | None]

    def first_round(self, num_samples: int) -> int:
        """The fewest samples whose unanimous vote decides the majority, pass or fail."""
        return num_samples // 2 + 1

    def decided(self, texts: Sequence[str], num_samples: int) -> bool:
        """Whether the answers so far settle the vote of all ``num_samples``."""
        return majority_settled([self.parse(t) for t in texts], num_samples - len(texts))


def votes(scores: Sequence[float | None]) -> VoteSplit:
    """The vote split (stored as ``{"yes": n, "no": m, "unparsed": k}``, the shape the baseline reads)."""
    yes = sum(1 for s in scores if s == 1.0)
    no = sum(1 for s in scores if s == 0.0)
    return VoteSplit(yes=yes, no=no, unparsed=len(scores) - yes - no)


def vote(texts: Sequence[str], parse: Callable[[str], float | None]) -> tuple[float | None, JudgeDetails]:
    """Parse every sample, take the ``majority`` and keep the rationale of a sample agreeing with it (else the first
    non-empty sample's); returns the verdict and the invocation's details (``votes`` and ``rationale``)."""
    samples = [parse(t) for t in texts]
    verdict = majority(samples)
    chosen = next((t for t, s in zip(texts, samples, strict=True) if s is not None and s == verdict),
                  next((t for t in texts if t.strip()), ""))
    return verdict, JudgeDetails(votes=votes(samples), rationale=rationale_of(chosen))


@dataclass
class Ballot:
    """One invocation's majority vote, kept so that more samples of the same prompt can be asked later."""

    call: JudgeCall
    prompt: str
    parse: Callable[[str], float | None]
    texts: tuple[str, ...]

    def score(self, text: str) -> float | None:
        """One sample's vote: 1.0, 0.0 or None (unparseable)."""
        return self.parse(text)

    async def more(self, extra: int) -> str | None:
        """Ask ``extra`` samples after those asked (indices ``len(texts) ..``; the cache serves them by index) and
        keep them; returns None, or the judge's error (the ballot is then unchanged)."""
        answer = await self.call.ask(self.prompt, samples=extra, first_sample=len(self.texts))
        if answer.error is None:
            self.texts += answer.texts
        return answer.error


async def judge_verdict(call: JudgeCall, prompt: str, parse: Callable[[str], float | None], threshold: float | None,
                        invocation: Invocation, unreadable: str, key: BallotKey | None = None) -> InvocationScore:
    """Ask ``call`` for its samples (sequentially: the rest only when the first ones do not decide the majority) and
    score the invocation by their ``vote``; a failed call or answers without a verdict leave it not_evaluated
    (reason: the judge's error, or ``unreadable``). With a ``key`` and the call's ``ballots``, the vote is kept there
    for the settling stage."""
    parse = ignoring_echoes(parse)
    answer = await call.ask(prompt, stop=MajorityRule(parse))
    if answer.error is not None:
        return score_invocation(None, threshold, invocation, reason=answer.error)
    if key is not None and call.ballots is not None:
        call.ballots.put(key, Ballot(call, prompt, parse, answer.texts))
    verdict, details = vote(answer.texts, parse)
    reason = None if verdict is not None else echo_reason(answer.texts) or unreadable
    return score_invocation(verdict, threshold, invocation, reason=reason, details=details.as_details())


def ignoring_echoes(parse: Callable[[str], float | None]) -> Callable[[str], float | None]:
    """``parse``, except that an answer echoing the prompt's answer format is no vote (``echoes_example``)."""
    def read(text: str) -> float | None:
        return None if echoes_example(text) else parse(text)
    return read


def echo_reason(texts: Sequence[str]) -> str | None:
    """The reason an invocation was not judged when its samples echoed the prompt, else None."""
    echoed = sum(1 for t in texts if echoes_example(t))
    if not echoed:
        return None
    return (f"the judge repeated the prompt's example answer instead of judging ({echoed} of {len(texts)} "
            "sample(s)); use a judge model that follows instructions")


def clip(text: str, limit: int = 1200) -> str:
    """Shorten a judge text kept as evidence in the report."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


_REASONING = re.compile(r'"(?:reasoning|rationale|explanation)"\s*:\s*"((?:[^"\\]|\\.)*)"', re.DOTALL)


def rationale_of(text: str) -> str:
    """The judge's reasoning field when it answered in JSON, else its whole answer (clipped)."""
    match = _REASONING.search(text)
    if match:
        try:
            return clip(str(json.loads(f'"{match.group(1)}"')))
        except ValueError:
            return clip(match.group(1))
    return clip(text.strip())


def judge_call(ctx: BuildContext, options: JudgeModelOptions, name: str) -> JudgeCall | None:
    """How criterion ``name`` calls the run's judge, or None when the run has no judge."""
    return JudgeCall(ctx.judge, options, name, ctx.ballots) if ctx.judge is not None else None


def unavailable(name: str, threshold: float | None, reason: str | None, case: CaseInput) -> MetricResult:
    """Every invocation not evaluated because no judge can be called (one clear message)."""
    message = f"{name} needs an LLM judge: {reason or NO_JUDGE}"
    return not_evaluated(threshold, message, len(case.actual))


def response_text(invocation: Invocation, include_intermediate: bool) -> str:
    """ADK's judged text: the final response, optionally preceded by intermediate texts (one per line)."""
    if not include_intermediate:
        return final_text(invocation)
    parts = [text for _, text in intermediate_texts(invocation)]
    final = final_text(invocation)
    if final:
        parts.append(final)
    return "\n".join(parts)


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", exclude_none=True) if hasattr(value, "model_dump") else value


def tool_steps(invocation: Invocation) -> list[dict[str, Any]]:
    """Tool calls with their responses (paired by call id, else by position), for judge prompts."""
    data = invocation.intermediate_data
    calls: list[Any] = []
    responses: list[Any] = []
    if isinstance(data, IntermediateData):
        calls, responses = list(data.tool_uses), list(data.tool_responses)
    elif isinstance(data, InvocationEvents):
        for event in data.invocation_events:
            for part in (event.content.parts or []) if event.content else []:
                if part.function_call is not None:
                    calls.append(part.function_call)
                if part.function_response is not None:
                    responses.append(part.function_response)
    by_id = {r.id: r for r in responses if r.id}
    steps = []
    for index, call in enumerate(calls):
        response = by_id.get(call.id) if call.id else None
        if response is None and not call.id and index < len(responses):
            response = responses[index]
        steps.append({"call": {"name": call.name, "args": call.args},
                      "response": response.response if response is not None else None})
    return steps


def as_json(value: Any) -> str:
    """Readable JSON for prompts (non-ASCII kept)."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=_dump)


def agent_instructions(app: AppDetails | None) -> list[tuple[str, str]]:
    """(agent name, instructions) of every agent that has instructions."""
    if app is None:
        return []
    return [(name, d.instructions) for name, d in app.agent_details.items() if d.instructions]


def tool_declarations(app: AppDetails | None) -> dict[str, list[Any]]:
    """Tool declarations by agent name."""
    if app is None:
        return {}
    return {name: [_dump(t) for t in d.tool_declarations] for name, d in app.agent_details.items()}


def user_prompt(invocation: Invocation) -> str:
    """The user's text of an invocation."""
    return content_text(invocation.user_content)
