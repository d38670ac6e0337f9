"""The versioned JSON report: per eval set, case, criterion and invocation; and its aggregation rules."""

from __future__ import annotations

import codecs
import json
import marshal
import math
import os
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, BinaryIO, Literal, Protocol, Self, TextIO, cast

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import CoreSchema, core_schema

from evalbot import __version__
from evalbot.redact import ScrubbingWriter, scrub_utf8  # a judge or proxy may have echoed a key into a reason
from evalbot.turnpack import (
    Packed,
    PackedTurns,
    SpillStore,
    all_fields_set,
    built,
    dict_field,
    optional_field,
    spill,
)
from evalbot.turnpack import ToolCallView as ToolCallView  # the turn models are part of the report
from evalbot.turnpack import TurnView as TurnView

SCHEMA_VERSION = 1

Status = Literal["passed", "failed", "not_evaluated", "error", "informational"]


class StrictModel(BaseModel):
    """Base of evalbot's own JSON models: unknown keys are refused (report, comparison, baseline)."""

    model_config = ConfigDict(extra="forbid")


class Problem(StrictModel):
    """Something evalbot could not use, with where it is and what to do."""

    path: str | None = None
    pointer: str | None = None
    message: str


class InvocationScore(StrictModel):
    """A criterion's verdict on one invocation."""

    invocation_id: str | None = None
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    status: Status
    reason: str | None = None
    """Why the status is what it is when that is not obvious (judge failure, missing data...)."""
    details: dict[str, Any] | None = None
    """Criterion-specific evidence: rationale, votes, per-rubric scores, mismatching call, token counts."""


class _Loose(BaseModel):
    """Base of the judge-details shapes: keys they do not name are ignored when read (details are free-form)."""

    model_config = ConfigDict(extra="ignore")


def _omitted(value: object) -> bool:
    return value is None


def _valid(model: type[BaseModel]) -> BeforeValidator:
    """Keep the entries of a list that are valid ``model``s: a malformed entry of an untrusted report is dropped, and
    something other than a list is no list."""

    def keep(value: Any) -> Any:
        if not isinstance(value, list):
            return None
        kept = []
        for item in value:
            try:
                kept.append(model.model_validate(item))
            except ValidationError:
                continue
        return kept

    return BeforeValidator(keep)


class VoteSplit(_Loose):
    """How the judge's samples voted: passes, fails and (for a whole verdict) answers without one."""

    yes: int = 0
    no: int = 0
    unparsed: int | None = Field(default=None, exclude_if=_omitted)
    """Samples with no readable verdict (a rubric's split does not count them, and omits the key)."""
    resampled: int | None = Field(default=None, exclude_if=_omitted)
    """Samples added to settle a split vote that flipped against the baseline (``resample_split``)."""
    settled: bool | None = Field(default=None, exclude_if=_omitted)
    """For a resampled vote: whether the larger vote settles the flip (see compare.settle)."""


class CheckedSentence(_Loose):
    """One sentence the judge labelled (hallucinations_v1)."""

    sentence: str = ""
    label: str = ""
    rationale: str = ""


class CheckedText(_Loose):
    """One text the judge split into sentences and labelled (hallucinations_v1), or why it could not."""

    text: str = ""
    sentences: Annotated[list[CheckedSentence] | None, _valid(CheckedSentence)] = Field(
        default=None, exclude_if=_omitted)
    error: str | None = Field(default=None, exclude_if=_omitted)
    score: int | float | None = Field(default=None, exclude_if=_omitted)
    """Share of the sentences labelled supported (an int when it is whole: ``statistics.mean`` of 0s and 1s)."""


class RubricVerdict(_Loose):
    """The judge's majority verdict on one rubric, its rationale and vote split (rubric_based_* criteria)."""

    rubric_id: str = ""
    score: float | None = None
    rationale: str = ""
    votes: VoteSplit | None = Field(default=None, exclude_if=_omitted)


class JudgeDetails(_Loose):
    """What a judged criterion records about one invocation, as ``InvocationScore.details``.

    Criteria fill it and store ``as_details()``; render reads it back with ``JudgeDetails.read(details)``. The JSON
    keys are the ones each criterion wrote before the shape was typed, and only the ones it fills:
    ``votes`` + ``rationale`` (a majority-vote verdict: final_response_match_v2, per-turn user simulator quality,
    safety by the judge), ``rationale`` (safety by Vertex AI), ``samples`` + ``rating`` + ``rationale`` + ``votes``
    (pointwise template metrics: ``rating`` is written, null or not, with ``samples``; ``votes``, each sample's
    rating against the threshold, when there is one), ``steps`` (hallucinations_v1),
    ``rubrics`` + ``unmatched`` + ``answer`` (rubric criteria). ``samples_asked``, the number of samples the judge
    was asked for, is written when set (sequential sampling may ask fewer than ``num_samples``).
    """

    votes: VoteSplit | None = Field(default=None, exclude_if=_omitted)
    samples: list[float | None] | None = Field(default=None, exclude_if=_omitted)
    rating: float | None = None
    rationale: str | None = Field(default=None, exclude_if=_omitted)
    steps: Annotated[list[CheckedText] | None, _valid(CheckedText)] = Field(default=None, exclude_if=_omitted)
    rubrics: Annotated[list[RubricVerdict] | None, _valid(RubricVerdict)] = Field(default=None, exclude_if=_omitted)
    unmatched: list[str] | None = Field(default=None, exclude_if=_omitted)
    answer: str | None = Field(default=None, exclude_if=_omitted)
    samples_asked: int | None = Field(default=None, exclude_if=_omitted)

    @model_serializer(mode="wrap")
    def _rating_with_samples(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if self.samples is None:
            data.pop("rating", None)
        return data

    def as_details(self) -> dict[str, Any]:
        """The plain dict stored in ``InvocationScore.details``."""
        return self.model_dump(mode="json")

    @classmethod
    def read(cls, details: Mapping[str, Any] | None) -> JudgeDetails:
        """The typed details of a report's invocation; keys that are missing or malformed (a report artifact is
        untrusted) are left empty rather than failing the whole."""
        if not isinstance(details, Mapping):
            return cls()
        try:
            return cls.model_validate(details)
        except ValidationError:
            pass
        kept: dict[str, Any] = {}
        for name in cls.model_fields:
            if name in details:
                try:
                    kept[name] = cls.model_validate({name: details[name]}).__dict__[name]
                except ValidationError:
                    continue
        return cls.model_validate(kept)


ScoreRow = tuple[str | None, float | None, Status, str | None, dict[str, Any] | None]
"""An invocation's verdict as packed: invocation id, score, status, reason, details."""


class PackedScores(Packed[InvocationScore]):
    """A criterion's per-invocation verdicts on a case that a report keeps once the case is final, packed into one
    ``marshal`` bytes object (:func:`compacted`): a read-only sequence of InvocationScore built afresh on each read.

    Three verdicts with their details cost about 1.9 KB as models and about 0.2 KB packed; a compared run of 33,334
    cases keeps six criteria's for every case. As ``MetricResult.per_invocation`` it serialises as the list of its
    verdicts (the same JSON), and equals a list of equal verdicts. Never built from input: a report read from JSON
    validates ``per_invocation`` as a list.

    A deterministic criterion gives its verdicts as rows (:meth:`of_rows`, :func:`metric_of_rows`): held as they
    are until :meth:`compact` packs them, so a case written out at once and dropped (``evalbot run`` streams its
    cases) never builds an InvocationScore nor packs one.
    """

    __slots__ = ("_count", "_rows")

    def __init__(self, packed: bytes | None, count: int, rows: list[ScoreRow] | None = None) -> None:
        self._packed = packed
        self._rows = rows
        self._store = None
        self._count = count

    @classmethod
    def of(cls, scores: Sequence[InvocationScore]) -> PackedScores | None:
        """``scores`` packed; None when their values are not all plain JSON data marshal can hold."""
        rows = [(s.invocation_id, s.score, s.status, s.reason, s.details) for s in scores]
        try:
            return cls(marshal.dumps(rows, 4), len(rows))
        except ValueError:
            return None

    @classmethod
    def of_rows(cls, rows: list[ScoreRow]) -> PackedScores:
        """Verdicts given as rows (valid ones: each score from clean_score), held unpacked until :meth:`compact`."""
        return cls(None, len(rows), rows)

    def compact(self) -> PackedScores:
        """Pack the rows :meth:`of_rows` holds (rows marshal cannot hold stay as they are); this object."""
        if self._rows is not None:
            try:
                self._packed, self._rows = marshal.dumps(self._rows, 4), None
            except ValueError:
                pass
        return self

    def __len__(self) -> int:
        return self._count

    def unpacked(self) -> list[InvocationScore]:
        return [built(InvocationScore, row) for row in self.dicts(fresh=True)]

    def same_packing(self, other: Packed[InvocationScore]) -> bool:
        return (isinstance(other, PackedScores) and self._rows is None and other._rows is None
                and self._held() == other._held())

    def dicts(self, fresh: bool = False) -> list[dict[str, Any]]:
        """The verdicts as ``InvocationScore.model_dump()`` gives each (same keys, same order), without the models.
        ``fresh``: their details are new objects (as packed ones always are), not the rows' own."""
        rows = self._rows
        if rows is not None:
            if fresh:
                try:
                    rows = marshal.loads(marshal.dumps(rows, 4))
                except ValueError:
                    pass
        else:
            rows = marshal.loads(cast(bytes, self._held()))
        return [{"invocation_id": i, "score": sc, "status": st, "reason": r, "details": d} for i, sc, st, r, d in rows]


_SCORE_DICTS = core_schema.list_schema(core_schema.typed_dict_schema({
    "invocation_id": optional_field(core_schema.str_schema()),
    "score": optional_field(core_schema.float_schema()),
    "status": dict_field(core_schema.str_schema()),
    "reason": optional_field(core_schema.str_schema()),
    "details": optional_field(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())),
}))
"""How a criterion's verdicts serialise: InvocationScore's fields, order and defaults as typed-dict fields (so
``exclude_none`` and ``exclude_defaults`` act on them as on the models)."""


def _score_dicts(value: Sequence[InvocationScore]) -> list[dict[str, Any]]:
    """``per_invocation`` as InvocationScore's dumps: a packed one's rows, a list's models' own field values (their
    ``__dict__``, which holds exactly their fields, in order)."""
    return value.dicts() if isinstance(value, PackedScores) else [s.__dict__ for s in value]


class _AsScoreDicts:
    """Marks ``per_invocation`` to serialise through :func:`_score_dicts` (validated as a list of models)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        return cast(CoreSchema, {**handler(source), "serialization": core_schema.plain_serializer_function_ser_schema(
            _score_dicts, return_schema=_SCORE_DICTS)})


class MetricResult(StrictModel):
    """A criterion's verdict on one case."""

    score: float | None = Field(default=None, ge=0.0, le=1.0)
    status: Status
    threshold: float | None = None
    per_invocation: Annotated[list[InvocationScore], _AsScoreDicts] = Field(default_factory=list)
    """A list; a PackedScores once the case is kept by a report (:func:`compacted`): assign a new list to change it."""
    reason: str | None = None
    details: dict[str, Any] | None = None


class CaseResult(StrictModel):
    """Every criterion's verdict on one eval case, and the case verdict.

    ``turns`` is stored packed (:class:`evalbot.turnpack.PackedTurns`): reading it builds the TurnView objects
    afresh; given to the constructor or read from JSON it is packed; assign a ``PackedTurns`` to keep it packed.
    """

    eval_id: str
    status: Status
    reason: str | None = None
    metrics: dict[str, MetricResult] = Field(default_factory=dict)
    fingerprint: str | None = None
    """Hash of the case's definition (expected conversation or scenario), for baseline comparison."""
    content: str | None = None
    """The same hash without the case's id: a case renamed or moved to another eval set keeps it."""
    turns: PackedTurns = Field(default_factory=PackedTurns)
    """Expected vs actual per turn, kept for cases a reviewer may need to read (empty for others)."""
    runs: str | None = Field(default=None, max_length=2000, pattern=r"^[PFENI]*$")
    """With several runs of the agent (``--num-runs N``, or a recording of N runs): each run's case outcome in run
    order, one letter each (:data:`OUTCOME_CODES`); a policy ``pass_rule`` decides the case from it. Reruns of a
    flipped case (``rerun_flipped``) are appended after the first N."""
    reruns: int = 0
    """How many of ``runs`` are reruns of a case whose outcome flipped against the baseline (the last ones)."""


_SHARED: dict[bytes, dict[str, Any]] = {}
SHARED_LIMIT = 4096
"""How many distinct details :func:`_shared` remembers (the first ones seen; the others are kept as they are)."""
SHARED_BYTES = 160
"""The largest details :func:`_shared` looks up, as marshalled: counts and empty usage, not judges' rationales."""


def _shared(details: dict[str, Any]) -> dict[str, Any]:
    """One object for equal small details of the criteria of kept cases (``{"value": 3.0}`` on thousands of cases,
    about 0.2 KB each). Equal means the same marshalled bytes: same keys in the same order, same types and values.
    Nothing changes a kept criterion's details in place (settling a vote copies an invocation's, renders read them)."""
    try:
        key = marshal.dumps(details, 2)  # version 2: no back-references, so equal data gives equal bytes
    except ValueError:
        return details
    if len(key) > SHARED_BYTES:
        return details
    kept = _SHARED.get(key)
    if kept is not None and kept == details and marshal.dumps(kept, 2) == key:
        return kept
    if kept is not None or len(_SHARED) < SHARED_LIMIT:  # kept: changed since, by code holding it (not evalbot's)
        _SHARED[key] = details
    return details


def compacted(case: CaseResult, store: SpillStore | None = None) -> CaseResult:
    """``case`` with each criterion's per-invocation verdicts packed (PackedScores), as a report keeps a final case
    for the comparison and renders (same data, same JSON); verdicts marshal cannot hold stay a list. The case and its
    criteria's results share their class's fields-set (turnpack.all_fields_set), as those built without validation
    do; its turns are packed (``PackedTurns.compact``). With ``store``, the packed turns and verdicts are written
    there (turnpack.spill, one piece per case) and read back on each access. Criteria's details equal to an earlier
    kept case's (small ones: counts, empty usage) are that case's object (:func:`_shared`)."""
    packed: list[Packed[Any]] = [case.turns.compact()]
    all_fields_set(case)
    for metric in case.metrics.values():
        all_fields_set(metric)
        values = metric.__dict__  # written directly: pydantic's __setattr__ would only add to the fields-set, which
        details = values["details"]  # names every field now
        if details is not None:
            values["details"] = _shared(details)
        scores = values["per_invocation"]
        if isinstance(scores, PackedScores):  # a deterministic criterion's rows
            packed.append(scores.compact())
        elif scores and isinstance(scores, list):
            verdicts = PackedScores.of(scores)
            if verdicts is not None:
                values["per_invocation"] = verdicts
                packed.append(verdicts)
    if store is not None:
        spill(store, packed)
    return case


class MetricSummary(StrictModel):
    """A criterion aggregated over an eval set's cases."""

    mean: float | None = None
    std: float | None = None
    passed: int = 0
    failed: int = 0
    not_evaluated: int = 0
    error: int = 0
    informational: int = 0
    threshold: float | None = None


class CriterionInfo(StrictModel):
    """A configured criterion: its threshold, options and a fingerprint of that configuration."""

    name: str
    threshold: float | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    judged: bool = False
    fingerprint: str = ""
    error: str | None = None
    notice: str | None = None
    """Keys of the criterion object that it does not read (ADK ignores them too); shown once for the eval set."""
    custom: str | None = None
    """A custom metric's function (``package.module.function``, ``unresolved`` when it could not be imported);
    None for a built-in criterion. The baseline records it, so a PR recomputing a criterion with its own code is
    named."""
    custom_code: str | None = None
    """A custom metric's code: the hash of its module and the repository files it imports, read by the gate from the
    files (criteria.custom_code); the baseline records it, so an edited helper is "custom metric code changed"."""


OUTCOME_CODES: dict[str, str] = {"passed": "P", "failed": "F", "error": "E", "not_evaluated": "N",
                                  "informational": "I"}
"""One letter per case outcome: a case's runs (``CaseResult.runs``) and its history on main in the baseline."""


class EvalSetReport(StrictModel):
    """The results of one eval set file."""

    eval_set_id: str
    path: str
    status: Status
    config: str | None = None
    """The config file whose criteria applied, or "ADK defaults"."""
    notices: list[str] = Field(default_factory=list)
    """Things the user should know about this eval set's inputs (ignored keys, likely typos), each once."""
    errors: list[Problem] = Field(default_factory=list)
    criteria: list[CriterionInfo] = Field(default_factory=list)
    cases: list[CaseResult] = Field(default_factory=list)
    metrics: dict[str, MetricSummary] = Field(default_factory=dict)
    pass_rule: str | None = None
    """The policy's ``pass_rule`` (``k/N``) that decided this eval set's cases from their runs; None: ADK's pooling."""


class Totals(StrictModel):
    """Case counts over the whole run."""

    cases: int = 0
    passed: int = 0
    failed: int = 0
    not_evaluated: int = 0
    error: int = 0

    def count(self, status: Status) -> None:
        """Count one case of this status (an informational one counts among the cases only)."""
        values = self.__dict__  # as pydantic's __setattr__ writes them, without its per-call dispatch (every case)
        fields_set = self.__pydantic_fields_set__
        values["cases"] += 1
        fields_set.add("cases")
        if status != "informational":
            values[status] += 1
            fields_set.add(status)

    def add(self, other: Totals) -> None:
        """Add another set of counts (an eval set's tally) to these."""
        for name in Totals.model_fields:
            setattr(self, name, getattr(self, name) + getattr(other, name))


def _absent_if_zero(value: object) -> bool:
    return value == 0


class Counts(Protocol):
    """What a usage row adds up: judges.base.Usage and the rows below."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def requests(self) -> int: ...
    @property
    def cached_samples(self) -> int: ...
    @property
    def saved_samples(self) -> int: ...
    @property
    def extra_requests(self) -> int: ...


class TokenCounts(StrictModel):
    """Judge tokens paid for, HTTP requests made and answers served from the cache (which cost nothing); the
    samples sequential sampling did not need to ask and the second requests it made (absent from the JSON when 0)."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cached_samples: int = 0
    saved_samples: int = Field(default=0, exclude_if=_absent_if_zero)
    """Samples of majority votes not asked because the first ones decided (sequential sampling)."""
    extra_requests: int = Field(default=0, exclude_if=_absent_if_zero)
    """Second requests sequential sampling made where the first samples did not decide the vote."""

    def add_counts(self, other: Counts) -> None:
        """Add ``other``'s counts to these (a judge call's ``Usage``, another row)."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.requests += other.requests
        self.cached_samples += other.cached_samples
        self.saved_samples += other.saved_samples
        self.extra_requests += other.extra_requests


def plus_cost(total: float | None, cost: float | None) -> float | None:
    """A sum of estimated costs: unknown (None) as soon as one part is unknown, never 0."""
    return None if total is None or cost is None else total + cost


class UsageRow(TokenCounts):
    """Usage of one judge model, or of the whole run, with its estimated USD cost (None when a price is unknown)."""

    estimated_cost_usd: float | None = None


class CriterionUsage(TokenCounts):
    """Usage of one criterion (or other asker, e.g. ``user_simulator``): the models it asked and their cost.

    Fields in report order; ``estimated_cost_usd`` is None when one of ``models`` has no known price.
    """

    models: list[str] = Field(default_factory=list)
    estimated_cost_usd: float | None = None
    served: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    """The models the judge service named in its answers (Gemini's ``modelVersion``, OpenAI's ``model``), each once;
    empty when every answer came from the cache."""


class CacheUse(StrictModel):
    """What the judge cache did this run."""

    directory: str
    hits: int = 0
    writes: int = 0
    ignored: int = Field(default=0, exclude_if=lambda v: v == 0)
    """Cached answers not replayed (not signed with this run's key, or unsigned where that is not trusted): asked
    from the judge again."""
    signed: bool = Field(default=False, exclude_if=lambda v: not v)
    """Whether the run had a key: its new answers are signed and only signed ones are replayed."""


def _absent_if_none(value: object) -> bool:
    return value is None


class ConcurrencyCuts(StrictModel):
    """How the judge's adaptive concurrency limit (judges.limiter) was lowered in a run: written only when it was.
    In a run joined from parts (``evalbot merge``, ``--jobs``) the cuts are summed and ``maximum`` and ``lowest``
    are those of one part (a job's share of the run's limit)."""

    maximum: int = Field(ge=1)
    """The configured concurrency (--judge-concurrency): the limit's ceiling."""
    lowest: int = Field(ge=1)
    """The lowest limit the run came down to."""
    cuts: int = Field(ge=1)
    """Times the limit was halved."""
    after_timeouts: int = Field(default=0, ge=0, exclude_if=lambda v: v == 0)
    """Of those, the cuts made on a timed-out call (the others on HTTP 429 / RESOURCE_EXHAUSTED)."""

    def note(self) -> str:
        """One line for the console and the comment, e.g. ``judge rate limited: concurrency lowered to 4 of 32 (3
        times)``."""
        what = "judge rate limited or timing out" if self.after_timeouts else "judge rate limited"
        times = "once" if self.cuts == 1 else f"{self.cuts} times"
        timeouts = f", {self.after_timeouts} after a timeout" if self.after_timeouts else ""
        return f"{what}: concurrency lowered to {self.lowest} of {self.maximum} ({times}{timeouts})"


class JudgeUsage(StrictModel):
    """``Report.usage``: judge usage and estimated cost per criterion, per model and in total; cache hits; retries.

    Built by ``judges.usage.UsageLedger.summary`` (``RunJudge.usage_summary()`` adds ``cache`` and ``retries``).
    The JSON keys are those of the untyped dict it replaced: ``per_criterion``, ``total``, ``prices``, then
    ``cache`` and ``retries`` only when a cache or retrying layer ran. ``per_model`` is written only when it cannot
    be derived from ``per_criterion`` (some criterion asked more than one model); otherwise reading a report derives
    it, so it is always filled in memory (for files written before it existed too).

    To add a figure (e.g. requests saved by sequential sampling): add a field with a default, so older report files
    still load, and ``exclude_if=_absent_if_none`` when the key should be absent from the JSON while not measured.
    """

    per_criterion: dict[str, CriterionUsage] = Field(default_factory=dict)
    total: UsageRow = Field(default_factory=UsageRow)
    prices: str | None = Field(default=None, exclude_if=_absent_if_none)
    """Where the cost estimate comes from (list prices and their date)."""
    cache: CacheUse | None = Field(default=None, exclude_if=_absent_if_none)
    retries: int | None = Field(default=None, exclude_if=_absent_if_none)
    """Judge calls retried after a transient failure, when a retrying layer ran."""
    concurrency: ConcurrencyCuts | None = Field(default=None, exclude_if=_absent_if_none)
    """How the adaptive concurrency limit was lowered (rate limits, timeouts), when it was."""
    per_model: dict[str, UsageRow] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _derive_per_model(self) -> Self:
        if not self.per_model and self._single_model():
            self.per_model = _per_model(self.per_criterion)
        return self

    @model_serializer(mode="wrap")
    def _per_model_when_needed(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not self.per_model or self._single_model():
            data.pop("per_model", None)
        return data

    def _single_model(self) -> bool:
        return all(len(row.models) == 1 for row in self.per_criterion.values())


def _per_model(per_criterion: Mapping[str, CriterionUsage]) -> dict[str, UsageRow]:
    """Rows per model from criteria that each asked one model (costs added in criterion order, as the ledger does)."""
    out: dict[str, UsageRow] = {}
    for row in per_criterion.values():
        acc = out.setdefault(row.models[0], UsageRow(estimated_cost_usd=0.0))
        acc.add_counts(row)
        acc.estimated_cost_usd = plus_cost(acc.estimated_cost_usd, row.estimated_cost_usd)
    return out


class AgentModelUsage(StrictModel):
    """The agent's tokens and model calls on one model (or in total), with their cost in dollars (None: unknown)."""

    input_tokens: int = 0
    output_tokens: int = 0
    calls: int = 0
    estimated_cost_usd: float | None = None


class AgentUsage(StrictModel):
    """``Report.agent_usage``: what the scored runs of the agent used, from the usage metadata and model version of
    their recorded events (ADK's inference records them), per model and in total, priced from the price table
    (``prices`` says which). A model without a known price makes its cost and the total's unknown, never 0; events
    naming no model are under ``(model not recorded)``."""

    per_model: dict[str, AgentModelUsage] = Field(default_factory=dict)
    total: AgentModelUsage = Field(default_factory=AgentModelUsage)
    prices: str | None = Field(default=None, exclude_if=_absent_if_none)


MAX_SHARDS = 1000
"""Most shards a run may be split into (a GitHub Actions matrix holds at most 256 jobs)."""


class ShardSet(StrictModel):
    """One eval set of a sharded run: every case of it (not only the shard's), with its expected invocations."""

    eval_set_id: str
    path: str
    cases: list[tuple[str, int]] = Field(default_factory=list)
    """``[eval_id, invocations]`` of every case, in the file's order."""


class ShardInfo(StrictModel):
    """Which part of a sharded run a report holds, and what the merge checks the parts agree on."""

    index: int = Field(ge=1, le=MAX_SHARDS)
    """K of ``--shard K/N`` (1-based)."""
    count: int = Field(ge=1, le=MAX_SHARDS)
    """N of ``--shard K/N``."""
    config: str
    """Fingerprint of every eval set's criteria and config (name, threshold, options, errors)."""
    judge_models: list[str] = Field(default_factory=list)
    """The judge models the configured judged criteria call."""
    case_list: str
    """Fingerprint of the full case list below (eval sets, case ids, invocation counts)."""
    eval_sets: list[ShardSet] = Field(default_factory=list)
    """The full case list of the run, from which every job derives the same partition."""
    settled_against: str | None = None
    """Fingerprint of the baseline and settling policy the shard job settled split judge votes against
    (``compare.settle.fingerprint``); None when it settled nothing. The merge that compares checks it against its
    own, so that a sharded run settles exactly as one job would."""


class Report(StrictModel):
    """The whole run.  ``schema_version`` changes whenever a key is renamed or removed."""

    schema_version: int = SCHEMA_VERSION
    evalbot_version: str = __version__
    eval_sets: list[EvalSetReport] = Field(default_factory=list)
    errors: list[Problem] = Field(default_factory=list)
    notices: list[str] = Field(default_factory=list)
    totals: Totals = Field(default_factory=Totals)
    usage: JudgeUsage | None = None
    """Judge token usage and estimated cost, per criterion, per model and in total, when judged criteria ran."""
    agent_usage: AgentUsage | None = Field(default=None, exclude_if=_absent_if_none)
    """The agent's tokens and cost per model, when its recorded runs report usage (AgentUsage)."""
    shard: ShardInfo | None = None
    """Set on one part of a sharded run (``--shard K/N``); ``evalbot merge`` joins the parts into one report."""


def clean_score(value: float | None) -> float | None:
    """Scores are finite numbers in [0, 1] or None (NaN and infinity become None; anything else out of range raises).

    The hot-path constructors below skip pydantic validation, so this is where the [0, 1] contract is enforced.
    """
    if value is None or not math.isfinite(value):
        return None
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"score {value!r} is outside [0, 1]")
    return float(value)


def invocation_score(
    invocation_id: str | None,
    score: float | None,
    status: Status,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> InvocationScore:
    """An InvocationScore built without validation: ``score`` must come from clean_score."""
    return built(
        InvocationScore,
        {"invocation_id": invocation_id, "score": score, "status": status, "reason": reason, "details": details},
    )


def metric_result(
    score: float | None,
    status: Status,
    threshold: float | None,
    per_invocation: list[InvocationScore] | PackedScores,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> MetricResult:
    """A MetricResult built without validation: ``score`` must come from clean_score."""
    return built(
        MetricResult,
        {"score": score, "status": status, "threshold": threshold, "per_invocation": per_invocation,
         "reason": reason, "details": details},
    )


def metric_of_rows(
    score: float | None,
    status: Status,
    threshold: float | None,
    rows: list[ScoreRow],
    reason: str | None = None,
    details: dict[str, Any] | None = None,
) -> MetricResult:
    """:func:`metric_result` with the per-invocation verdicts given as rows (invocation id, score from clean_score,
    status, reason, details): held as PackedScores.of_rows, no InvocationScore built."""
    return metric_result(score, status, threshold, PackedScores.of_rows(rows) if rows else [], reason, details)


def threshold_status(score: float | None, threshold: float | None) -> Status:
    """ADK's rule: ``score >= threshold`` passes; no score is not evaluated; no threshold is informational."""
    if score is None:
        return "not_evaluated"
    if threshold is None:
        return "informational"
    return "passed" if score >= threshold else "failed"


def maximum_status(value: float, maximum: float | None) -> Status:
    """The rule of metrics whose threshold is a maximum (latency, failure rate): ``value <= maximum`` passes."""
    if maximum is None:
        return "informational"
    return "passed" if value <= maximum else "failed"


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the non-None values, or None when there are none.

    A running float total in order, divided by the count, as ADK computes its averages: not ``math.fsum`` (nor
    ``sum``, compensated since Python 3.12), because the last-bit rounding decides verdicts whose mean lands on the
    threshold (F values 2/3, 1/2, 1/3 average to 0.49999999999999994 in ADK, failing a 0.5 threshold).
    """
    total = 0.0
    count = 0
    for value in values:
        if value is not None:
            total += value
            count += 1
    return total / count if count else None


CUSTOM_NOT_RUN = "not evaluated: custom metric code is not run on "
"""How the reason of a custom metric refused on this event begins (the event's name follows)."""
CUSTOM_PROCESS_GONE = "custom metric process gone: "
"""How the reason begins where a custom metric's worker exited, crashed, hung or broke the protocol: the metric could
not be measured (verdict error, exit 3), which is not the input's fault (exit 2)."""


def case_status(statuses: Sequence[Status]) -> Status:
    """ADK's case verdict: any failed fails; else any passed passes; else not evaluated.

    Unlike ADK, a criterion in ``error`` (invalid configuration or data) makes the case ``error``: an invalid
    criterion must never let a case pass silently.
    """
    if "error" in statuses:
        return "error"
    if "failed" in statuses:
        return "failed"
    if "passed" in statuses:
        return "passed"
    return "not_evaluated"


class VerdictView(Protocol):
    """What the tallies read of one invocation's verdict (an InvocationScore, or a lighter decoding of it)."""

    @property
    def status(self) -> Status: ...
    @property
    def reason(self) -> str | None: ...


class MetricView(Protocol):
    """What the tallies (summaries, console, judge gaps) read of a criterion's verdict on a case (a MetricResult, or
    any lighter object holding the same)."""

    @property
    def status(self) -> Status: ...
    @property
    def score(self) -> float | None: ...
    @property
    def threshold(self) -> float | None: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def details(self) -> Mapping[str, Any] | None: ...
    @property
    def per_invocation(self) -> Sequence[VerdictView]: ...


class CaseView(Protocol):
    """What the tallies read of a case (a CaseResult, or any lighter object holding the same)."""

    @property
    def eval_id(self) -> str: ...
    @property
    def status(self) -> Status: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def metrics(self) -> Mapping[str, MetricView]: ...


class MetricTally:
    """A criterion's results over cases, gathered one at a time: what :func:`summarize_metric` computes."""

    __slots__ = ("counts", "scores", "threshold")

    def __init__(self, threshold: float | None) -> None:
        self.threshold = threshold
        self.scores: list[float] = []
        self.counts = dict.fromkeys(("passed", "failed", "not_evaluated", "error", "informational"), 0)

    def add(self, result: MetricView) -> None:
        """Count one case's result."""
        if result.score is not None:
            self.scores.append(result.score)
        self.counts[result.status] += 1

    def absorb(self, other: MetricTally) -> None:
        """Count after these results those ``other`` gathered over the cases that follow (``run --jobs``: a later
        job's): the summary is the one of all the cases added in that order."""
        self.scores += other.scores
        for status, count in other.counts.items():
            self.counts[status] += count

    def summary(self) -> MetricSummary:
        """Mean and sample standard deviation of the case scores, and status counts."""
        scores = self.scores
        return MetricSummary(
            mean=mean(scores),
            std=statistics.stdev(scores) if len(scores) >= 2 else None,
            threshold=self.threshold,
            **self.counts,
        )


def summarize_metric(results: Sequence[MetricResult]) -> MetricSummary:
    """Mean and sample standard deviation of case scores, and status counts."""
    tally = MetricTally(results[0].threshold if results else None)
    for r in results:
        tally.add(r)
    return tally.summary()


class CaseTally:
    """An eval set's cases counted one at a time (a run that streams its cases keeps none): how many, their
    statuses and each criterion's summary, as :func:`summarize_cases` and :func:`case_status` give them."""

    __slots__ = ("metrics", "statuses", "totals")

    def __init__(self) -> None:
        self.totals = Totals()
        self.metrics: dict[str, MetricTally] = {}
        self.statuses: dict[Status, None] = {}

    def add(self, case: CaseView) -> None:
        """Count one case (its verdict given)."""
        self.totals.count(case.status)
        self.statuses[case.status] = None
        for name, result in case.metrics.items():
            tally = self.metrics.get(name)
            if tally is None:
                tally = self.metrics[name] = MetricTally(result.threshold)
            tally.add(result)

    def absorb(self, other: CaseTally) -> None:
        """Count after these cases those ``other`` counted, the cases that follow them in the report (``run
        --jobs``: a later job's): the same tally as adding all the cases in that order."""
        self.totals.add(other.totals)
        self.statuses.update(other.statuses)
        for name, tally in other.metrics.items():
            mine = self.metrics.get(name)
            if mine is None:
                self.metrics[name] = tally
            else:
                mine.absorb(tally)

    def summaries(self) -> dict[str, MetricSummary]:
        """Per-criterion summaries (criteria in first-seen order)."""
        return {name: tally.summary() for name, tally in self.metrics.items()}


def summarize_cases(cases: Sequence[CaseResult]) -> dict[str, MetricSummary]:
    """Per-criterion summaries over the cases of one eval set (criteria in first-seen order)."""
    tally = CaseTally()
    for case in cases:
        tally.add(case)
    return tally.summaries()


def totals(eval_sets: Sequence[EvalSetReport]) -> Totals:
    """Case counts over all eval sets."""
    t = Totals()
    for es in eval_sets:
        for case in es.cases:
            t.count(case.status)
    return t


CaseStream = Callable[[int, EvalSetReport, CaseResult], None]
"""Where a run that streams its cases sends each one once its verdict is final, instead of keeping it in the report:
the eval set's index in the report, the eval set (its ``cases`` stay empty; its summaries and notices are not final
yet) and the case. Cases arrive in report order: eval sets in order, each one's cases in order. A case's turns may
arrive unpacked (``PackedTurns(packed=False)``: writing the case out at once costs no packing); a stream that keeps
the case calls ``case.turns.compact()``."""


WRITE_CHUNK = 1 << 20
"""How many bytes of case lines the report file is given at once (its own buffer is 8 KB)."""


def utf8_buffer(out: TextIO) -> BinaryIO | None:
    """The binary stream under ``out`` when bytes written there read as the same text (UTF-8, newlines written as
    they are): UTF-8 text already made is written there as it is, not decoded and encoded again. Flush ``out``
    before writing to it."""
    encoding = getattr(out, "encoding", None)
    if not isinstance(encoding, str) or codecs.lookup(encoding).name != "utf-8" or os.linesep != "\n":
        return None
    binary: BinaryIO | None = getattr(out, "buffer", None)
    return binary


def case_line(index: int, case: CaseResult) -> str:
    """The text :func:`write_report_json` writes for the ``index``-th case of an eval set (before scrubbing)."""
    return ("," if index else "") + "\n" + case_json(case).decode()


def case_json(case: CaseResult) -> bytes:
    """``case.model_dump_json()`` as UTF-8 bytes, from pydantic's serializer directly (no keyword plumbing, no
    decoding): the case of :func:`case_line` without its separator."""
    return CaseResult.__pydantic_serializer__.to_json(case)


class StreamedCases(Protocol):
    """The cases of a report that were streamed out of it (see CaseStream), each eval set's as the scrubbed
    concatenation of its :func:`case_line` texts."""

    def copy_cases(self, index: int, out: TextIO) -> None:
        """Write the ``index``-th eval set's case lines to ``out``."""


def write_report_json(report: Report, out: TextIO, streamed: StreamedCases | None = None) -> None:
    """Write the report as JSON piece by piece (one case at a time), so a large run never holds its whole text.

    The document equals ``report.model_dump_json()`` as data (same keys); only the layout differs: one case per
    line, and each eval set's ``cases`` written after its other keys.  ``streamed``: the cases were streamed out of
    ``report`` as they were scored (its eval sets hold none); they are copied from there, scrubbed already.
    """
    raw = out
    binary = utf8_buffer(raw)  # the held cases' lines go there as the serializer's bytes, scrubbed as bytes
    out = cast(TextIO, ScrubbingWriter(out))
    rest = report.model_dump(mode="json", exclude={"eval_sets"})
    out.write("{\n")
    names = [name for name in Report.model_fields if name == "eval_sets" or name in rest]  # absent when excluded
    for name in names:
        if name == "eval_sets":
            out.write('"eval_sets": [')
            for i, es in enumerate(report.eval_sets):
                out.write(("," if i else "") + "\n" + es.model_dump_json(exclude={"cases"})[:-1] + ',"cases":[')
                if streamed is not None:
                    streamed.copy_cases(i, raw)
                if binary is not None and es.cases:
                    raw.flush()
                    pending = bytearray()  # written a megabyte at a time: a few system calls, not one per 8 KB
                    for j, case in enumerate(es.cases):  # case_line, scrubbed (scrub_utf8: as out.write would)
                        pending += b",\n" if j else b"\n"
                        pending += scrub_utf8(case_json(case))
                        if len(pending) >= WRITE_CHUNK:
                            binary.write(pending)
                            pending.clear()
                    binary.write(pending)
                else:
                    for j, case in enumerate(es.cases):
                        out.write(case_line(j, case))
                out.write("]}")
            out.write("\n]")
        else:
            out.write(f"{json.dumps(name)}: {json.dumps(rest[name], ensure_ascii=False)}")
        out.write(",\n" if name != names[-1] else "\n")
    out.write("}\n")
