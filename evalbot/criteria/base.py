"""The Criterion protocol, what a criterion sees of a case, and helpers shared by criteria."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, overload

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from evalbot.criteria.custom_process import WorkerPool
from evalbot.errors import ConfigError, did_you_mean, printable
from evalbot.formats.adk import ConversationScenario, EvalCase, FunctionCall, Invocation, InvocationEvents
from evalbot.formats.config import CriterionSpec, EvalConfig
from evalbot.formats.invocations import CallRow, final_text, model_events, tool_call_rows, tool_calls
from evalbot.formats.prices import PriceTable, shipped_prices
from evalbot.judges.base import RunJudge
from evalbot.results import (
    AgentModelUsage,
    AgentUsage,
    CriterionInfo,
    InvocationScore,
    MetricResult,
    ScoreRow,
    clean_score,
    invocation_score,
    mean,
    metric_of_rows,
    metric_result,
    plus_cost,
    threshold_status,
)
from evalbot.turnpack import SpillStore

_T = TypeVar("_T")


class _per_case(Generic[_T]):
    """``functools.cached_property`` without its lock: Python 3.11 takes an RLock on every first read (about 0.5 µs,
    five reads per case). A CaseInput is read by one scoring thread; a value computed twice would be the same."""

    def __init__(self, func: Callable[[Any], _T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    @overload
    def __get__(self, instance: None, owner: type | None = None) -> _per_case[_T]: ...
    @overload
    def __get__(self, instance: object, owner: type | None = None) -> _T: ...
    def __get__(self, instance: object | None, owner: type | None = None) -> _T | _per_case[_T]:
        if instance is None:
            return self
        value = instance.__dict__[self.name] = self.func(instance)
        return value


@dataclass(frozen=True)
class CaseInput:
    """One case ready to score: the expected conversation (if any) and the agent's actual invocations."""

    eval_set_id: str
    case: EvalCase
    actual: Sequence[Invocation]

    @property
    def expected(self) -> Sequence[Invocation] | None:
        """The expected invocations, or None for scenario cases."""
        return self.case.conversation

    @property
    def scenario(self) -> ConversationScenario | None:
        """The conversation scenario of a simulated-user case."""
        return self.case.conversation_scenario

    # Read once per case and shared by every criterion (and the report's turn views).
    @_per_case
    def actual_calls(self) -> list[list[FunctionCall]]:
        """Tool calls of each actual invocation."""
        return [tool_calls(inv) for inv in self.actual]

    @_per_case
    def expected_calls(self) -> list[list[FunctionCall]] | None:
        """Tool calls of each expected invocation (None for scenario cases)."""
        expected = self.case.conversation
        return None if expected is None else [tool_calls(inv) for inv in expected]

    @_per_case
    def invocation_ids(self) -> list[str | None]:
        """Each actual invocation's id as a verdict records it (None when it has none)."""
        return [inv.invocation_id or None for inv in self.actual]

    @_per_case
    def actual_call_rows(self) -> list[list[CallRow]]:
        """Tool calls of each actual invocation as (name, args) rows: what trajectory matching compares and the
        report's turns show, without a FunctionCall list in between."""
        return [tool_call_rows(inv) for inv in self.actual]

    @_per_case
    def expected_call_rows(self) -> list[list[CallRow]] | None:
        """Tool calls of each expected invocation as (name, args) rows (None for scenario cases)."""
        expected = self.case.conversation
        return None if expected is None else [tool_call_rows(inv) for inv in expected]

    @_per_case
    def actual_texts(self) -> list[str]:
        """Final response text of each actual invocation."""
        return [final_text(inv) for inv in self.actual]

    @_per_case
    def actual_model_events(self) -> list[tuple[int | None, list[dict[str, Any]]]]:
        """Each actual invocation's model events: how many carry usage metadata or a model version (None without
        recorded events) and their usage metadata (read once for the inference-call and token metrics)."""
        return [model_events(inv) for inv in self.actual]

    @_per_case
    def expected_texts(self) -> list[str] | None:
        """Final response text of each expected invocation (None for scenario cases)."""
        expected = self.case.conversation
        return None if expected is None else [final_text(inv) for inv in expected]


class Criterion(Protocol):
    """Scores one case.  Deterministic criteria return a result; judged ones return an awaitable."""

    @property
    def name(self) -> str:
        """The criterion's name in the config and the report."""
        ...

    @property
    def threshold(self) -> float | None:
        """Pass when ``score >= threshold`` (a maximum for ``latency`` and ``failure``); None: informational."""
        ...

    def evaluate(self, case: CaseInput) -> MetricResult | Awaitable[MetricResult]:
        """Score the case."""
        ...


BallotKey = tuple[str, str, str, int]
"""(eval set id, eval id, criterion name, invocation index): where a vote sits in the report."""


class VoteBallot(Protocol):
    """One invocation's majority vote as a judged criterion cast it (criteria.judged.Ballot): its sample texts,
    how each votes, and asking more samples of the same prompt."""

    @property
    def texts(self) -> tuple[str, ...]:
        """The sample texts so far, in index order."""
        ...

    def score(self, text: str) -> float | None:
        """One sample's vote: 1.0, 0.0 or None (unparseable)."""
        ...

    async def more(self, extra: int) -> str | None:
        """Ask ``extra`` more samples and keep them; None, or why they could not be had."""
        ...


class BallotBox:
    """The run's majority votes by BallotKey, for the stage that settles split votes (pipeline.settle_split_votes).

    A key seen twice (a case run several times with ``--num-runs``) holds no ballot: the report's vote there is not
    one invocation's, so it is never resampled."""

    def __init__(self) -> None:
        self._ballots: dict[BallotKey, VoteBallot | None] = {}

    def put(self, key: BallotKey, ballot: VoteBallot) -> None:
        """Keep ``ballot`` under ``key`` (a repeated key holds none)."""
        self._ballots[key] = ballot if key not in self._ballots else None

    def get(self, key: BallotKey) -> VoteBallot | None:
        """The ballot under ``key``, if exactly one vote was cast there."""
        return self._ballots.get(key)

    def __len__(self) -> int:
        return len(self._ballots)


UNRECORDED_MODEL = "(model not recorded)"
OTHER_MODELS = "(other models)"
MAX_MODEL_NAME = 200
MAX_AGENT_MODELS = 100


@dataclass
class AgentTally:
    """The agent's tokens and model calls per model over the runs a scoring pass sees (``BuildContext.agent_tally``):
    each recorded event's ``usage_metadata`` booked under its ``model_version``."""

    models: dict[str, list[int]] = field(default_factory=dict)
    """model -> [input tokens, output tokens, calls]."""

    def add(self, invocations: Sequence[Invocation]) -> None:
        """Book the events of one case's invocations."""
        for invocation in invocations:
            data = invocation.intermediate_data
            if not isinstance(data, InvocationEvents):
                continue
            for event in data.invocation_events:
                if event.usage_metadata is None:
                    continue
                usage = event.usage_metadata
                name = printable(event.model_version or UNRECORDED_MODEL)[:MAX_MODEL_NAME]
                if name not in self.models and len(self.models) >= MAX_AGENT_MODELS:
                    name = OTHER_MODELS  # a recording naming thousands of models does not bloat the report
                row = self.models.setdefault(name, [0, 0, 0])
                row[0] += _tokens(usage, "prompt_token_count") + _tokens(usage, "tool_use_prompt_token_count")
                row[1] += _tokens(usage, "candidates_token_count") + _tokens(usage, "thoughts_token_count")
                row[2] += 1

    def summary(self, prices: PriceTable) -> AgentUsage | None:
        """Tokens, calls and dollars per model and in total (None: no event reported usage)."""
        if not self.models:
            return None
        out = AgentUsage(total=AgentModelUsage(estimated_cost_usd=0.0), prices=prices.note())
        for model, (tokens_in, tokens_out, calls) in sorted(self.models.items()):
            cost = None if model in (UNRECORDED_MODEL, OTHER_MODELS) else prices.cost(model, tokens_in, tokens_out)
            out.per_model[model] = AgentModelUsage(input_tokens=tokens_in, output_tokens=tokens_out, calls=calls,
                                                   estimated_cost_usd=cost)
            total = out.total
            total.input_tokens += tokens_in
            total.output_tokens += tokens_out
            total.calls += calls
            total.estimated_cost_usd = plus_cost(total.estimated_cost_usd, cost)
        return out


def _tokens(usage: dict[str, Any], snake: str) -> int:
    """A count of ``usage`` under its snake_case or camelCase key (0 when absent or not a whole number >= 0)."""
    parts = snake.split("_")
    for key in (snake, parts[0] + "".join(p.title() for p in parts[1:])):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10**12:
            return value
    return 0


@dataclass(frozen=True)
class BuildContext:
    """What a criterion factory may need besides its spec: the judge and run-wide settings."""

    judge: RunJudge | None = None
    """The run's judge, or None when no judge is configured (``judge_unavailable_reason`` says why)."""
    judge_unavailable_reason: str | None = None
    custom_code_refused: str | None = None
    """Why custom metrics (repository code) must not be imported in this run, or None where that is allowed."""
    ballots: BallotBox | None = None
    """Where majority-vote criteria keep their votes for the stage settling split votes (None: not kept)."""
    workers: WorkerPool | None = None
    """Custom-metric workers shared by the run's eval sets (``evaluate`` makes one per run and stops them at its
    end); None: each custom metric starts its own worker and stops it once its cases are answered."""
    spill_store: SpillStore | None = None
    """Where the report writes the packed turns and verdicts of the cases it keeps (``compare`` gives an anonymous
    temporary file: a failing case's turns are its largest part, read back only to render or write it); None: they
    are held in memory."""
    agent_tally: AgentTally | None = field(default_factory=AgentTally)
    """Where scoring books the agent's tokens per model (``Report.agent_usage``); None: not counted."""
    prices: PriceTable = field(default_factory=shipped_prices)
    """The price table of the run (the shipped one and the gate policy's ``prices``): the agent's dollars."""


CriterionFactory = Callable[[CriterionSpec, BuildContext], Criterion]
CriteriaBuilder = Callable[[EvalConfig, BuildContext, str], tuple[list[Criterion], list[CriterionInfo]]]
"""Builds an eval set's criteria (and their report entries) from its config and the eval set file's path:
``evalbot.criteria.build_criteria``, or what a test passes to scoring instead."""


class Options(BaseModel):
    """Base for criterion options: camelCase or snake_case keys, unknown keys rejected."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


OptionsT = TypeVar("OptionsT", bound=Options)


ADK_CRITERIA = frozenset({
    "tool_trajectory_avg_score", "response_match_score", "final_response_match_v2",
    "rubric_based_final_response_quality_v1", "rubric_based_tool_use_quality_v1", "hallucinations_v1",
    "per_turn_user_simulator_quality_v1", "safety_v1", "rubric_based_multi_turn_trajectory_quality_v1",
    "response_evaluation_score", "multi_turn_task_success_v1", "multi_turn_trajectory_quality_v1",
    "multi_turn_tool_use_quality_v1",
})
"""ADK's own criteria: unknown keys in their objects are ignored, as ADK ignores them."""

IGNORED_OPTIONS: ContextVar[list[tuple[str, str]] | None] = ContextVar("IGNORED_OPTIONS", default=None)
"""Set by the criteria builder: where parse_options reports the criterion-level keys it ignored (key, suggestion)."""


def _ignored_keys(model: type[Options], options: dict[str, Any]) -> list[str]:
    known = set(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}
    return [key for key in options if key not in known]


def parse_options(model: type[OptionsT], spec: CriterionSpec) -> OptionsT:
    """Validate a spec's options into ``model``; an invalid option raises ConfigError naming the option.

    Keys directly in the criterion object that the criterion does not know (``description``, ``method``) are
    ignored, as ADK ignores them (its criteria keep extra keys and read only their own fields): each is reported to
    IGNORED_OPTIONS for a notice.  A key close to a known option (``matchtype``) and unknown keys deeper (inside
    ``judge_model_options``...) stay errors, as a likely typo and as ADK refuses them.
    """
    known = list(model.model_fields)
    if spec.name not in ADK_CRITERIA:  # evalbot's Vertex metrics are strict: ADK's leniency is not theirs
        return _validate_options(model, spec, spec.options)
    # A near miss of a real option (``matchtype``) stays an error: ignoring it would silently change the scores.
    ignored = [k for k in _ignored_keys(model, spec.options) if not did_you_mean(k, known)]
    options = {k: v for k, v in spec.options.items() if k not in ignored} if ignored else spec.options
    sink = IGNORED_OPTIONS.get()
    if sink is not None:
        sink.extend((k, "") for k in ignored if k not in {key for key, _ in sink})
    return _validate_options(model, spec, options)


def _validate_options(model: type[OptionsT], spec: CriterionSpec, options: dict[str, Any]) -> OptionsT:
    try:
        return model.model_validate(options)
    except ValidationError as exc:
        known = list(model.model_fields)
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '(options)'}: {err['msg']}"
            + (did_you_mean(str(err["loc"][-1]), known) if err["type"] == "extra_forbidden" and err["loc"] else "")
            for err in exc.errors()
        )
        raise ConfigError(f"invalid options for {spec.name}: {problems}") from None


def need_expected(case: CaseInput, name: str) -> Sequence[Invocation]:
    """The expected conversation, or ValueError for scenario cases (this criterion needs a reference)."""
    if case.expected is None:
        raise ValueError(f"{name} needs an expected conversation; this case is a conversation scenario")
    return case.expected


def from_invocation_scores(
    scores: Sequence[InvocationScore], threshold: float | None, *, details: dict[str, Any] | None = None
) -> MetricResult:
    """Case result as ADK computes it: the mean of per-invocation scores compared with the threshold."""
    overall = clean_score(mean(s.score for s in scores))
    reason = None if scores else "the case has no invocations to score"
    return metric_result(overall, threshold_status(overall, threshold), threshold, list(scores), reason, details)


def from_score_rows(
    rows: list[ScoreRow], threshold: float | None, *, details: dict[str, Any] | None = None
) -> MetricResult:
    """:func:`from_invocation_scores` of verdicts given as rows (:func:`score_row`): no InvocationScore is built."""
    overall = clean_score(mean([row[1] for row in rows]))
    reason = None if rows else "the case has no invocations to score"
    return metric_of_rows(overall, threshold_status(overall, threshold), threshold, rows, reason, details)


def score_row(
    score: float | None,
    threshold: float | None,
    invocation: Invocation,
    *,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> ScoreRow:
    """:func:`score_invocation` as a row (invocation id, score, status, reason, details), for :func:`from_score_rows`."""
    value = clean_score(score)
    return invocation.invocation_id or None, value, threshold_status(value, threshold), reason, details


def score_invocation(
    score: float | None,
    threshold: float | None,
    invocation: Invocation,
    *,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> InvocationScore:
    """A per-invocation verdict with the same threshold rule as the case (:func:`score_row`'s row as a model)."""
    return invocation_score(*score_row(score, threshold, invocation, reason=reason, details=details))


def not_evaluated(threshold: float | None, reason: str, count: int = 0) -> MetricResult:
    """A criterion that could not score the case, with the reason (never a silent 0 or pass)."""
    return MetricResult(
        score=None,
        status="not_evaluated",
        threshold=threshold,
        reason=reason,
        per_invocation=[InvocationScore(status="not_evaluated", reason=reason) for _ in range(count)],
    )
