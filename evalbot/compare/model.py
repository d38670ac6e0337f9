"""The result of comparing a run with the baseline: categories, per-case and per-criterion deltas, the verdict."""

from __future__ import annotations

from typing import Annotated, Any, Literal, NamedTuple, get_args

from pydantic import Field, GetCoreSchemaHandler
from pydantic_core import CoreSchema, core_schema

from evalbot.compare.baseline import BaselineAgentUsage, BaselineUsage, TrendPoint
from evalbot.compare.efficiency import EfficiencyDelta
from evalbot.compare.flaky import CaseHistory, symbols
from evalbot.compare.gate import Gate, GatePolicy
from evalbot.compare.votes import Votes
from evalbot.formats.numbers import p_value_text
from evalbot.results import CaseResult, Problem, Report, Status, StrictModel
from evalbot.turnpack import Packed, built

CaseCategory = Literal[
    "regressed", "flaky", "accepted", "inconclusive", "error", "fixed", "changed_definition", "new", "removed", "still_failing",
    "not_evaluated", "unchanged",
]
CATEGORIES: tuple[CaseCategory, ...] = get_args(CaseCategory)
"""Case categories: the keys of ``Comparison.counts``, in this order (the comment orders its sections by
``views.ORDER``)."""

Change = Literal[
    "regressed", "inconclusive", "fixed", "still_failing", "unchanged", "changed_definition", "new", "removed",
    "not_evaluated", "error", "informational",
]
RowChange = Literal[
    "regressed", "inconclusive", "improved", "unchanged", "changed_definition", "new", "removed", "not_evaluated",
    "informational",
]


class MetricDelta(StrictModel):
    """One criterion on one case: baseline vs current verdict, and judge votes when the flip may be noise."""

    criterion: str
    change: Change
    judged: bool = False
    baseline_score: float | None = None
    current_score: float | None = None
    baseline_status: Status | None = None
    current_status: Status | None = None
    baseline_votes: list[Votes | None] | None = None
    current_votes: list[Votes | None] | None = None
    p_value: float | None = None
    """Fisher exact test of baseline vs current judge votes, for judged flips."""


class DeltaRow(NamedTuple):
    """A MetricDelta's values, in its fields' order and under their names: how a comparison keeps a case's deltas
    (:class:`PackedDeltas`). A row is read like the model (``row.change``), at a tuple's cost."""

    criterion: str
    change: Change
    judged: bool
    baseline_score: float | None
    current_score: float | None
    baseline_status: Status | None
    current_status: Status | None
    baseline_votes: list[Votes | None] | None
    current_votes: list[Votes | None] | None
    p_value: float | None


_DELTA_FIELDS = DeltaRow._fields
assert _DELTA_FIELDS == tuple(MetricDelta.model_fields), "DeltaRow names MetricDelta's fields in order"


class PackedDeltas(Packed[MetricDelta]):
    """A case's per-criterion deltas as a comparison keeps them: one :class:`DeltaRow` each (a tuple), the
    MetricDelta models built afresh on each read. A compared run of 33,334 cases keeps six for every case; as models
    the two scored ones cost about 1 KB a case (each model its own 10-key dict), as rows about 0.4 KB, and the rows
    of deltas without scores or votes are shared by the cases of an eval set (:func:`evalbot.compare.delta.
    metric_delta`). As ``CaseComparison.metrics`` it validates and serialises as the list of its deltas."""

    __slots__ = ("_rows",)

    def __init__(self, rows: tuple[DeltaRow, ...]) -> None:
        self._packed = None
        self._store = None
        self._rows = rows

    def rows(self) -> tuple[DeltaRow, ...]:
        """The rows, not copied (read them like the deltas: same names; nothing changes a delta once made)."""
        return self._rows

    def __len__(self) -> int:
        return len(self._rows)

    def unpacked(self) -> list[MetricDelta]:
        return [built(MetricDelta, dict(zip(_DELTA_FIELDS, row, strict=True))) for row in self._rows]

    def same_packing(self, other: Packed[MetricDelta]) -> bool:
        return isinstance(other, PackedDeltas) and self._rows == other._rows


def delta_rows(deltas: list[MetricDelta]) -> tuple[DeltaRow, ...] | list[MetricDelta]:
    """A case's deltas to read without building models: a packed case's rows (the deltas' names), else the list."""
    return deltas.rows() if isinstance(deltas, PackedDeltas) else deltas


class _DeltaList:
    """Marks ``CaseComparison.metrics``: a PackedDeltas passes validation as it is and serialises as its deltas."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        schema = handler(source)

        def validate(value: Any, inner: core_schema.ValidatorFunctionWrapHandler) -> Any:
            return value if isinstance(value, PackedDeltas) else inner(value)

        def serialize(value: Any, inner: core_schema.SerializerFunctionWrapHandler) -> Any:
            return inner(value.unpacked() if isinstance(value, PackedDeltas) else value)

        return core_schema.no_info_wrap_validator_function(
            validate, schema, serialization=core_schema.wrap_serializer_function_ser_schema(serialize, schema=schema))


class AgentRuns(StrictModel):
    """A case's runs of the agent in this run, and how they were decided (``pass_rule``, reruns)."""

    outcomes: str
    """One letter per run (P passed, F failed, E error, N not evaluated), reruns last."""
    rule: str | None = None
    """The ``pass_rule`` (``k/N``) that decided the case from its first N runs; None: ADK's pooling."""
    reruns: int = 0
    """Runs added because the case's outcome flipped against the baseline (``rerun_flipped``)."""
    main: str | None = None
    """The case's outcomes on main the reruns were tested against (its history in the baseline)."""
    p_value: float | None = None
    """One-sided Fisher exact test: this run's pass rate below main's (reruns only)."""

    @property
    def symbols(self) -> str:
        """``✓✗✓``, reruns after a ``+``: ``✗✗ + ✓✓``."""
        first, again = self.outcomes[: len(self.outcomes) - self.reruns], self.outcomes[len(self.outcomes) - self.reruns:]
        return symbols(first) + (" + " + symbols(again) if again else "")

    def describe(self) -> str:
        """``Agent runs: ✓✗✓ (pass rule 2/3: passed 2 of 3)``."""
        first = self.outcomes[: len(self.outcomes) - self.reruns]
        if self.rule:
            rule = f"pass rule {self.rule}: passed {first.count('P')} of {len(first)}"
        elif len(first) == 1:
            rule = "the first run " + {"P": "passed", "F": "failed"}.get(first, "was not decided")
        else:
            rule = f"passed {first.count('P')} of {len(first)}, pooled as ADK does"
        text = f"Agent runs: {self.symbols} ({rule})"
        if self.reruns:
            main = symbols(self.main or "")
            p = f", Fisher exact {p_value_text(self.p_value)}" if self.p_value is not None else ""
            text += (f"; {self.reruns} rerun(s) after the flip: passed {self.outcomes.count('P')} of "
                     f"{len(self.outcomes)} runs, against {main or 'no history'} on main{p}")
        return text


class CaseComparison(StrictModel):
    """One case: its category, why, the current result (for details) and per-criterion deltas."""

    eval_id: str
    category: CaseCategory
    reason: str | None = None
    baseline_status: Status | None = None
    current: CaseResult | None = None
    metrics: Annotated[list[MetricDelta], _DeltaList] = Field(default_factory=list)
    """A list; a PackedDeltas in a comparison made by :func:`evalbot.compare.delta.compare` (read it with
    :func:`delta_rows` to skip building the models)."""
    history: CaseHistory | None = None
    """The case's outcomes on main as the baseline records them (for regressed and flaky cases)."""
    runs: AgentRuns | None = None
    """The case's runs of the agent, when it ran several times or was rerun."""
    main_outcomes: str | None = None
    """The case's outcomes on main (``BaselineCase.history``, oldest first) for every case measured as on main (the
    same definition): the HTML report draws them as glyphs."""


class CriterionRow(StrictModel):
    """One criterion on one eval set: means, the paired delta over comparable cases, and its significance."""

    criterion: str
    change: RowChange
    judged: bool = False
    threshold: float | None = None
    lower_is_better: bool = False
    """The threshold is a maximum (``criteria.lower_is_better``): a rise of the mean is the regression."""
    baseline_mean: float | None = None
    current_mean: float | None = None
    delta: float | None = None
    """Mean of current − baseline scores over the ``paired`` cases measured on both sides with the same definition."""
    paired: int = 0
    up: int = 0
    down: int = 0
    p_value: float | None = None
    """Exact two-sided sign test on the paired per-case changes (exact McNemar for pass/fail scores)."""
    scored: int = 0
    """Current cases with a score on this criterion."""
    regressed_cases: int = 0
    """Cases that regressed on this criterion and count as regressed (CaseComparison.category); a case that
    regressed here but is flaky or accepted counts under ``flaky_cases`` or ``accepted_cases``, as in the headline."""
    fixed_cases: int = 0
    inconclusive_cases: int = 0
    flaky_cases: int = 0
    accepted_cases: int = 0
    passed: int = 0
    failed: int = 0
    trend: list[TrendPoint] = Field(default_factory=list)
    """The criterion's mean in the baseline's last refreshes on main, oldest first, when the baseline's criterion
    measures what this run's does (threshold aside): the HTML report draws it with ``current_mean``."""


class EvalSetComparison(StrictModel):
    """One eval set present in the run, the baseline or both."""

    key: str
    eval_set_id: str
    path: str
    status: Status | None = None
    in_baseline: bool = True
    in_current: bool = True
    config: str | None = None
    """The config file whose criteria applied, or "ADK defaults" (None for a removed eval set)."""
    notices: list[str] = Field(default_factory=list)
    errors: list[Problem] = Field(default_factory=list)
    rows: list[CriterionRow] = Field(default_factory=list)
    cases: list[CaseComparison] = Field(default_factory=list)


class BaselineInfo(StrictModel):
    """Where the baseline came from and what it was measured with."""

    source: str
    commit: str | None = None
    created_at: str | None = None
    evalbot_version: str
    schema_version: int


YardstickKind = Literal[
    "eval_set_removed", "eval_set_renamed", "eval_set_moved", "case_removed", "case_renamed", "case_definition",
    "criterion_removed", "threshold_lowered", "threshold_raised", "criterion_changed", "custom_metric",
    "judge_model", "pass_rule", "budget_loosened",
]
"""What a pull request changed in what its run is measured with (see :mod:`evalbot.compare.yardstick`)."""


class YardstickChange(StrictModel):
    """One difference between what the base commit's baseline measured and what this run measures.

    ``loosens``: it may let a regression through (removed, renamed, redefined, a threshold loosened, dropped,
    recomputed); such a change blocks under ``yardstick_changes: block`` unless the PR's baseline update accepts it.
    Tightened thresholds (a higher minimum score, a lower maximum: ``criteria.lower_is_better``) and moved files are
    shown and never block.
    """

    kind: YardstickKind
    eval_set_id: str
    case: str | None = None
    criterion: str | None = None
    what: str
    """The change in words (``threshold 1.000 → 0.000``, ``renamed to refund_v2``)."""
    main: str | None = None
    """The result on main (the base commit's baseline), in words."""
    current: str | None = None
    """The result in this run, in words."""
    loosens: bool = True
    accepted: bool = False
    """Recorded by the PR's baseline update (entries consistent with this run)."""

    @property
    def subject(self) -> str:
        """``set / case`` or ``set / criterion`` or ``set``."""
        tail = self.case if self.case is not None else self.criterion
        return f"{self.eval_set_id} / {tail}" if tail is not None else self.eval_set_id


class BaselineUpdate(StrictModel):
    """A pull request that changes the baseline file: which entries it accepts, and whether the file records what a
    run produced.

    The file is compared entry by entry (an eval set's path, pass rule and criteria, each case's definition and
    verdicts, the removals) with the base commit's baseline; each entry it changes is accepted, and this run's values
    are used for it, never the file's. The file must record what a run produced, since it becomes main's baseline:
    an accepted entry's definition as this run has it, no verdict better than this run's, every history main's
    continued (from main's current entry or an earlier state of it) or started afresh. ``differences`` lists what
    does not (stale or hand-edited): it blocks. ``matches``: nothing does.
    """

    path: str
    matches: bool
    differences: list[str] = Field(default_factory=list)
    more: int = 0
    """Differences not listed."""
    changed: int = 0
    """Entries the file changes against the base commit's baseline."""
    stale: list[str] = Field(default_factory=list)
    """``set/case`` (``set/*``: an eval set's criteria) whose entry the file wrote against a state of main's entry that
    main has since left: rewrite the update on main's current baseline (``evalbot baseline --accept``)."""
    entries: list[str] = Field(default_factory=list)
    """``set/case`` or ``set/*`` of the entries the file changes (and the stale ones): what ``--accept`` names."""


class AcceptedChange(StrictModel):
    """One change the PR's baseline update accepts, by kind (``regression``, ``definition change``...)."""

    kind: str
    subject: str
    """``set/case``, ``set/criterion`` or ``set``."""


class Carried(StrictModel):
    """The eval sets a change cannot affect (``--only-affected``, :mod:`evalbot.selection`): not scored, main's
    results carried from the baseline, counted apart and never compared (never removed, new or regressed)."""

    eval_sets: list[str] = Field(default_factory=list)
    """The carried eval sets' ids (main's baseline holds each)."""
    cases: int = 0
    """Main's cases in them."""
    total: int = 0
    """The run's eval sets, affected and not."""
    commit: str | None = None
    """The commit main's baseline was measured at."""
    missing: list[str] = Field(default_factory=list)
    """Unaffected eval sets main's baseline does not hold: neither scored nor carried."""


class Comparison(StrictModel):
    """Everything the renderers and the gate need."""

    policy: GatePolicy
    baseline: BaselineInfo | None = None
    baseline_source: str = ""
    """Where the baseline was looked for (a file, or REF:PATH)."""
    create_command: str | None = None
    """The command that (re)creates the baseline, when it is missing or unusable."""
    baseline_note: str | None = None
    """Why there is nothing (or not everything) to compare with, and what to do."""
    baseline_error: str | None = None
    """Why a baseline that exists could not be read (the gate then cannot find regressions: verdict ``error``)."""
    alerts: list[str] = Field(default_factory=list)
    """What could not be measured, in plain sentences, shown right under the comment's headline, in the job summary,
    the log and as annotations: an unreadable or missing baseline, judged verdicts the judge did not give."""
    eval_sets: list[EvalSetComparison] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    gate: Gate
    report: Report
    policy_changes: list[str] = Field(default_factory=list)
    """Gate settings the pull request changes (``fail_on regression → never``): read at the base commit, they take
    effect only after the merge."""
    notes: list[str] = Field(default_factory=list)
    """Further notices about how this comparison was made (shown under the headline)."""
    invisible_ids: list[str] = Field(default_factory=list)
    """``set / case`` ids (escaped) holding invisible or bidi-control characters: such an id can pass for another."""
    baseline_update: BaselineUpdate | None = None
    """The pull request's own change to the baseline file, when it makes one."""
    commit: str | None = None
    """The commit whose results these are (the PR's head)."""
    reproduce_command: str | None = None
    """The command that reproduces this comparison locally."""
    refresh_command: str | None = None
    """The command that rewrites the baseline file from this run (for a PR that intends the change)."""
    baseline_usage: BaselineUsage | None = None
    """The baseline run's judge usage and cost, when the baseline records it (the comment shows the change)."""
    baseline_agent_usage: BaselineAgentUsage | None = None
    """The baseline run's agent tokens and cost in dollars, when the baseline records them."""
    served_notices: list[str] = Field(default_factory=list)
    """Where the judge model the service said answered differs from main's (``delta.served_notices``)."""
    yardstick: list[YardstickChange] = Field(default_factory=list)
    """What this PR changed in what it is measured with, against the base commit's baseline (accepted or not)."""
    efficiency: list[EfficiencyDelta] = Field(default_factory=list)
    """The agent's tokens, model calls, tool calls and seconds per invocation against main, per eval set, with the
    policy's budgets on them (:mod:`evalbot.compare.efficiency`)."""
    efficiency_note: str | None = None
    """Why the agent's efficiency is not compared with main (a baseline written before evalbot kept it)."""
    carried: Carried | None = None
    """The eval sets not scored because the change cannot affect them (``--only-affected``), None when every eval set
    was scored."""
    accepted: list[AcceptedChange] = Field(default_factory=list)
    """The changes this PR's baseline update accepts, by kind: the headline names them (an accepted regression is
    always called one)."""
    accept_command: str | None = None
    """``evalbot baseline … --accept SET/CASE …``: rewrites the baseline update on main's current baseline with only
    the named entries refreshed from a run (the regressed and stale ones filled in)."""
    merge_queue: bool = False
    """A merge queue's run (``merge_group``): compared with its base commit like a pull request; the headline says so."""
