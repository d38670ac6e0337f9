"""The baseline file: per eval set, case and criterion the score, status and judge votes of a run on main.

It is committed to the repository (default ``.evalbot/baseline.json``) and always read from the PR's *base*
commit, so a PR cannot change its own yardstick. The JSON is written with sorted keys, two-space indentation and a
trailing newline so that its git diff is reviewable. Reading it from ``REF:PATH`` goes through ``git show``; the
process call is injected (:data:`GitRunner`) so this module stays free of side effects.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import math
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, get_args

import msgspec
from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evalbot import __version__
from evalbot.compare.efficiency import BaselineEfficiency, BudgetError, efficiency_of, parse_budgets
from evalbot.compare.votes import Votes, invocation_votes
from evalbot.errors import InputError, json_pointer
from evalbot.formats.jsonio import FAST_DECODER, describe, parse_json, pointer_for, utf8_for_msgspec
from evalbot.git import GitRunner, git_show, revision
from evalbot.judges.base import DEFAULT_JUDGE_MODEL
from evalbot.results import (
    OUTCOME_CODES,
    AgentUsage,
    CaseResult,
    CriterionInfo,
    JudgeUsage,
    MetricSummary,
    Report,
    Status,
    StrictModel,
    TokenCounts,
)
from evalbot.turnpack import PackedMapping, built, with_dict

BASELINE_SCHEMA_VERSION = 1
DEFAULT_BASELINE_PATH = ".evalbot/baseline.json"
HISTORY_LIMIT = 10
"""Outcomes of a case on main that the baseline keeps (the most recent refreshes, oldest first)."""
STATUS_CODES: dict[str, str] = OUTCOME_CODES
"""One character per outcome in a case's ``history``."""
MAX_VOTE_ENTRIES = 10_000
"""Votes a criterion of one case may list: one per invocation of the case and run of the agent (``--num-runs``;
100 invocations run 100 times write 10,000). A run with more keeps none (:func:`_case`); a file with more was
edited by hand and is refused when read."""
MAX_JUDGE_MODELS = 1_000
"""Judge models a baseline may list (one per distinct model its criteria use)."""
PART_BYTES = 4 * 1024 * 1024
"""Largest JSON text of one part of a baseline file that is decoded whole: a case, a criterion, a list (10,000 votes
as evalbot writes them, indented, take about 3 MB). Only the maps that grow with the suite (the document, its eval
sets and their cases, the efficiency entries and theirs) may be longer: their members are measured one by one.
Measured on the text before anything is decoded, so a hand-made list of 4 million votes (68 MB) is refused in
milliseconds with its JSON pointer, never decoded into gigabytes; the exact limits (votes, trend points, judge
models) are then the models' own."""
LAX_JSON_BYTES = 8 * 1024 * 1024
"""Largest baseline read by json's path when msgspec cannot read it (NaN, Infinity, numbers past a float's range:
nothing evalbot writes): a larger one is refused before json decodes it whole."""
_HISTORY = rf"^[{''.join(STATUS_CODES.values())}]{{1,{HISTORY_LIMIT}}}$"
_SPLIT = r"(?:[0-9]{1,6}-[0-9]{1,6}|\.)"
_VOTE_HISTORY = rf"^{_SPLIT}(?: {_SPLIT}){{0,{HISTORY_LIMIT - 1}}}$"


def create_command(
    path: str = DEFAULT_BASELINE_PATH, *, eval_sets: Sequence[str] = (), actuals: Sequence[str] = ()
) -> str:
    """The command that makes a baseline file at ``path`` (run on main, then commit the file); with the run's
    ``eval_sets`` and ``actuals`` it is the exact command, else it has placeholders."""
    import shlex

    sets = " ".join(shlex.quote(p) for p in eval_sets) or "PATH..."
    runs = " ".join(f"--actuals {shlex.quote(a)}" for a in actuals) or "--actuals RUN.json"
    return f"evalbot baseline {sets} {runs} --output {shlex.quote(path)}"


MAX_ACCEPT_NAMED = 10
"""Cases of one eval set an ``--accept`` command names one by one (more: the whole eval set, ``SET/*``)."""


def accept_command(refresh: str, entries: Sequence[str], previous: str) -> str | None:
    """``refresh`` (an ``evalbot baseline … --output PATH`` command) accepting only ``entries`` (``SET/CASE``,
    ``SET/*/CRITERION`` or ``SET/*``) on the baseline at ``previous`` (FILE or REF:PATH, main's): what a pull request
    runs to accept exactly those changes. None without entries."""
    import shlex

    if not entries:
        return None
    by_set: dict[str, list[str]] = {}
    for entry in dict.fromkeys(entries):
        key, _, case = entry.partition("/")
        by_set.setdefault(key, []).append(case)
    named = [f"{key}/*" if "*" in cases or len(cases) > MAX_ACCEPT_NAMED else f"{key}/{case}"
             for key, cases in by_set.items() for case in (["*"] if "*" in cases or len(cases) > MAX_ACCEPT_NAMED
                                                           else cases)]
    parts = shlex.split(refresh)
    at = parts.index("--output") if "--output" in parts else len(parts)
    extra = [item for entry in named for item in ("--accept", entry)] + ["--previous", previous]
    return shlex.join(parts[:at] + extra + parts[at:])


class _Model(StrictModel):
    model_config = ConfigDict(frozen=True)


class BaselineMetric(_Model):
    """One criterion's verdict on one case."""

    score: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    """In [0, 1], as every criterion reports its scores (a number outside is refused with its pointer)."""
    status: Status
    votes: list[Votes | None] | None = Field(default=None, max_length=MAX_VOTE_ENTRIES)
    """Per invocation (and run of the agent), for judged criteria whose results carry their votes."""
    vote_history: str | None = Field(default=None, max_length=HISTORY_LIMIT * 14, pattern=_VOTE_HISTORY)
    """Judged criteria: the judge's pass–fail votes on this case (summed over its invocations) in each of the last
    refreshes on main, oldest first, space-separated (``5-0 5-0 2-3``; ``.`` for a run without votes)."""

    @model_validator(mode="after")
    def _last_split_is_this_run(self) -> BaselineMetric:
        if self.vote_history is not None and self.vote_history.rsplit(" ", 1)[-1] != split_entry(self.votes):
            raise ValueError(f"vote_history must end with this run's votes ({split_entry(self.votes)!r}); "
                             "the file was edited by hand: refresh it with `evalbot baseline`")
        return self


class BaselineCase(_Model):
    """One case: its definition fingerprint, verdict and per-criterion results."""

    fingerprint: str | None = None
    content: str | None = Field(default=None, max_length=64)
    """The case's definition hash without its id (finds a renamed or moved case; absent in older baselines)."""
    status: Status
    history: str | None = Field(default=None, max_length=HISTORY_LIMIT, pattern=_HISTORY)
    """The case's outcome in each of the last refreshes on main, oldest first, one character each (P passed,
    F failed, E error, N not evaluated, I informational); the last is this run's ``status``. Absent in baselines
    written before evalbot kept it."""
    metrics: dict[str, BaselineMetric] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _last_outcome_is_this_run(self) -> BaselineCase:
        if self.history is not None and self.history[-1] != STATUS_CODES[self.status]:
            raise ValueError(f"history must end with this run's status ({self.status}: "
                             f"{STATUS_CODES[self.status]!r}); the file was edited by hand: refresh it with "
                             "`evalbot baseline`")
        return self


MAX_MEAN = 1e12
"""Largest absolute mean a trend point may hold (a forged file cannot make the chart's scale nonsense)."""
TREND_TEXT_LIMIT = 64
"""Characters of a trend point's commit or date kept (and accepted when reading)."""


class TrendPoint(_Model):
    """One refresh on main in a criterion's trend: the eval set's mean and when and where it was measured."""

    mean: float = Field(strict=True, ge=-MAX_MEAN, le=MAX_MEAN, allow_inf_nan=False)
    commit: str | None = Field(default=None, max_length=TREND_TEXT_LIMIT)
    created_at: str | None = Field(default=None, max_length=TREND_TEXT_LIMIT)


def _at_most_history_limit(value: Any) -> Any:
    """Refuse an over-long trend before its points are validated (a forged file of a million points fails fast)."""
    if isinstance(value, list) and len(value) > HISTORY_LIMIT:
        raise ValueError(f"a trend keeps at most {HISTORY_LIMIT} refreshes on main, not {len(value):,}; the file "
                         "was edited by hand: refresh it with `evalbot baseline`")
    return value


Trend = Annotated[list[TrendPoint], BeforeValidator(_at_most_history_limit)]


class BaselineCriterion(_Model):
    """A criterion as configured for an eval set, with its aggregate on main."""

    fingerprint: str
    threshold: float | None = None
    judged: bool = False
    judge_model: str | None = None
    custom: str | None = Field(default=None, max_length=1000)
    """The custom metric's function that computed it (None: the built-in criterion; absent in older baselines)."""
    custom_code: str | None = Field(default=None, max_length=64)
    """The custom metric's code hash (CriterionInfo.custom_code; absent in baselines written before evalbot read it
    from the files, whose fingerprints hashed the function's text as the worker reported it)."""
    options_sha: str | None = Field(default=None, max_length=64)
    """A hash of the criterion's options (threshold aside), so a changed fingerprint can be told apart: a threshold
    moved, or the options changed (absent in older baselines: then it cannot)."""
    mean: float | None = None
    passed: int = 0
    failed: int = 0
    trend: Trend | None = None
    """The criterion's mean in each of the last refreshes on main that had one, oldest first (at most
    :data:`HISTORY_LIMIT`), with their commit and date; the last is this run's ``mean``. Drawn by the HTML report,
    never used to decide anything. Absent in baselines written before evalbot kept it."""

    @model_validator(mode="after")
    def _last_mean_is_this_run(self) -> BaselineCriterion:
        if self.trend and self.mean is not None and math.isfinite(self.mean) and self.trend[-1].mean != self.mean:
            raise ValueError(f"trend must end with this run's mean ({self.mean!r}); the file was edited by hand: "
                             "refresh it with `evalbot baseline`")
        return self


class BaselineEvalSet(_Model):
    """One eval set's criteria and cases."""

    path: str
    criteria: dict[str, BaselineCriterion] = Field(default_factory=dict)
    cases: Mapping[str, BaselineCase] = Field(default_factory=dict)
    """A dict when built; a parsed baseline's cases are :class:`PackedCases` (each case a model on each access)."""
    pass_rule: str | None = Field(default=None, max_length=16, pattern=r"^[0-9]{1,4}/[0-9]{1,4}$")
    """The ``pass_rule`` (``k/N``) that decided the cases from their runs on main; None: ADK's pooling."""

    # pydantic serialises a dict, not PackedCases: a dump goes through a copy holding the dict of models (a wrap
    # serializer on the field would do it too, but makes pydantic copy every eval set's dumped cases once more:
    # +19 MB writing a baseline of 33,334 cases). Nested in a Baseline, see Baseline.model_dump.
    def model_dump(self, **options: Any) -> dict[str, Any]:
        return _Model.model_dump(_unpacked(self), **options)

    def model_dump_json(self, **options: Any) -> str:
        return _Model.model_dump_json(_unpacked(self), **options)


def _unpacked(es: BaselineEvalSet) -> BaselineEvalSet:
    """``es`` with its cases as a dict (a copy: the same values and fields-set)."""
    return with_dict(es, "cases")


MAX_COUNT = 10**12
"""Largest token or request count a baseline may claim (a forged file cannot make the comment print nonsense)."""


class BaselineUsageRow(_Model):
    """Judge usage of the main run (one criterion, or the total): what the comment compares a PR's cost with."""

    requests: int = Field(default=0, ge=0, le=MAX_COUNT)
    input_tokens: int = Field(default=0, ge=0, le=MAX_COUNT)
    output_tokens: int = Field(default=0, ge=0, le=MAX_COUNT)
    cached_samples: int = Field(default=0, ge=0, le=MAX_COUNT)
    estimated_cost_usd: float | None = Field(default=None, ge=0, le=1e12, allow_inf_nan=False)
    """None when a model's price is unknown (never shown as 0)."""


class BaselineUsage(_Model):
    """The main run's judge usage and estimated cost, per criterion and in total."""

    total: BaselineUsageRow = Field(default_factory=BaselineUsageRow)
    per_criterion: dict[str, BaselineUsageRow] = Field(default_factory=dict, max_length=10_000)


def usage_summary(usage: JudgeUsage | None) -> BaselineUsage | None:
    """What the baseline keeps of a run's ``Report.usage`` (None: the run used no judge)."""
    if usage is None:
        return None

    def row(r: TokenCounts, cost: float | None) -> BaselineUsageRow:
        return BaselineUsageRow(requests=r.requests, input_tokens=r.input_tokens, output_tokens=r.output_tokens,
                                cached_samples=r.cached_samples, estimated_cost_usd=cost)

    return BaselineUsage(
        total=row(usage.total, usage.total.estimated_cost_usd),
        per_criterion={name: row(r, r.estimated_cost_usd) for name, r in usage.per_criterion.items()},
    )


class BaselineAgentUsage(_Model):
    """The main run's agent tokens, model calls and cost in dollars (None: a model's price is unknown), and the models
    without a price: what the comment shows a PR's agent cost beside."""

    input_tokens: int = Field(default=0, ge=0, le=MAX_COUNT)
    output_tokens: int = Field(default=0, ge=0, le=MAX_COUNT)
    calls: int = Field(default=0, ge=0, le=MAX_COUNT)
    estimated_cost_usd: float | None = Field(default=None, ge=0, le=1e12, allow_inf_nan=False)
    unpriced: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=100)


def agent_usage_summary(usage: AgentUsage | None) -> BaselineAgentUsage | None:
    """What the baseline keeps of a run's ``Report.agent_usage`` (None: its runs reported no usage)."""
    if usage is None:
        return None
    t = usage.total
    unpriced = [m[:200] for m, row in usage.per_model.items() if row.estimated_cost_usd is None][:100]
    return BaselineAgentUsage(input_tokens=min(t.input_tokens, MAX_COUNT), output_tokens=min(t.output_tokens, MAX_COUNT),
                              calls=min(t.calls, MAX_COUNT), estimated_cost_usd=t.estimated_cost_usd,
                              unpriced=unpriced)


class BaselineServed(_Model):
    """One judged criterion's judge on main: the models configured and the models the service named in its answers
    (Gemini's ``modelVersion``, OpenAI's ``model``)."""

    configured: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=20)
    served: list[Annotated[str, Field(max_length=200)]] = Field(default_factory=list, max_length=20)


def served_summary(usage: JudgeUsage | None, previous: Baseline | None = None) -> dict[str, BaselineServed] | None:
    """Per judged criterion, the judge configured and served in the run (``Report.usage``); a criterion whose answers
    all came from the cache keeps what ``previous`` recorded for the same configured models (a refresh replaying the
    cache learns nothing new of the service). None: nothing known."""
    out: dict[str, BaselineServed] = {}
    for name, row in (usage.per_criterion.items() if usage is not None else ()):
        if row.served:
            out[name[:200]] = BaselineServed(configured=row.models[:20], served=[s[:200] for s in row.served[:20]])
        elif previous is not None and previous.judge_served and name in previous.judge_served \
                and previous.judge_served[name].configured == row.models[:20]:
            out[name] = previous.judge_served[name]
    return dict(list(out.items())[:10_000]) or None


class Baseline(_Model):
    """The whole baseline file."""

    schema_version: int = BASELINE_SCHEMA_VERSION
    evalbot_version: str = __version__
    commit: str | None = None
    created_at: str | None = None
    judge_models: list[str] = Field(default_factory=list, max_length=MAX_JUDGE_MODELS)
    eval_sets: dict[str, BaselineEvalSet] = Field(default_factory=dict)
    usage: BaselineUsage | None = None
    """The main run's judge usage and estimated cost (the PR comment shows the change against it)."""
    agent_usage: BaselineAgentUsage | None = None
    """The main run's agent tokens and cost in dollars (the PR comment shows them beside the PR's)."""
    judge_served: dict[str, BaselineServed] | None = Field(default=None, max_length=10_000)
    """Per judged criterion, the judge model configured and the one the service said answered on main: a model
    served under the same name that changes is a notice (``compare.delta.served_notices``)."""
    efficiency: dict[str, BaselineEfficiency] | None = Field(default=None, max_length=100_000)
    """Per eval set key, the agent's tokens, model calls, tool calls and seconds per invocation on main
    (:mod:`evalbot.compare.efficiency`); None in baselines written before evalbot kept them."""
    budgets: dict[str, str] | None = None
    """The ``budgets`` of the gate policy the baseline was written under (``{}``: none); a PR's baseline update
    recording the PR's own budgets accepts the PR's removing or loosening one. None in baselines written before
    evalbot recorded them."""

    @field_validator("budgets", mode="before")
    @classmethod
    def _budgets(cls, value: Any) -> dict[str, str] | None:
        return None if value is None else {name: b.text for name, b in parse_budgets(value).items()}

    @property
    def compatible(self) -> bool:
        """Whether this evalbot can compare against it (same schema version)."""
        return self.schema_version == BASELINE_SCHEMA_VERSION

    def model_dump(self, **options: Any) -> dict[str, Any]:
        return _Model.model_dump(_with_dicts(self), **options)

    def model_dump_json(self, **options: Any) -> str:
        return _Model.model_dump_json(_with_dicts(self), **options)


def _with_dicts(baseline: Baseline) -> Baseline:
    """``baseline`` with every eval set's cases and efficiency values as dicts (see BaselineEvalSet.model_dump)."""
    sets, efficiency = baseline.eval_sets, baseline.efficiency or {}
    if all(isinstance(es.cases, dict) for es in sets.values()) and all(
            isinstance(e.cases, dict) for e in efficiency.values()):
        return baseline
    copy = baseline.model_copy()  # its own __dict__, so its fields-set stays the parsed one's
    copy.__dict__["eval_sets"] = {key: _unpacked(es) for key, es in sets.items()}
    if baseline.efficiency is not None:
        copy.__dict__["efficiency"] = {key: e.unpacked() for key, e in baseline.efficiency.items()}
    return copy


def _packed_efficiency(baseline: Baseline) -> Baseline:
    """``baseline`` (just parsed and validated) with its per-case efficiency values packed, keyed by the same
    strings as its cases."""
    for key, entry in (baseline.efficiency or {}).items():
        es = baseline.eval_sets.get(key)
        entry.packed({k: k for k in es.cases} if es is not None else {})
    return baseline


def unique_keys(names: Sequence[str]) -> list[str]:
    """Keys for possibly repeated names: the name, then ``name#2``, ``name#3``... for repeats."""
    seen: dict[str, int] = {}
    keys = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        keys.append(name if seen[name] == 1 else f"{name}#{seen[name]}")
    return keys


def judge_model_of(info: CriterionInfo) -> str | None:
    """The judge model of a judged criterion: ``judge_model_options.judge_model``, else evalbot's default."""
    if not info.judged:
        return None
    nested = info.options.get("judge_model_options")
    model = nested.get("judge_model") if isinstance(nested, Mapping) else None
    return model if isinstance(model, str) else DEFAULT_JUDGE_MODEL


def options_hash(options: Mapping[str, object]) -> str:
    """A short stable hash of a criterion's options (for :attr:`BaselineCriterion.options_sha`)."""
    blob = json.dumps(options, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def split_entry(votes: Sequence[Votes | None] | None) -> str:
    """One run's entry in a ``vote_history``: pass–fail votes summed over the invocations, ``.`` without votes."""
    present = [v for v in votes or () if v is not None]
    if not present:
        return "."
    return f"{sum(v.yes for v in present)}-{sum(v.no for v in present)}"


def _case(case: CaseResult, judged: set[str]) -> BaselineCase:
    metrics = {}
    for name, m in case.metrics.items():
        if m.status == "informational" and m.score is None:
            continue
        votes = invocation_votes(m.per_invocation) if name in judged else None
        if votes is not None and len(votes) > MAX_VOTE_ENTRIES:
            votes = None  # more than a baseline keeps (a flip of this case is then tested without main's votes)
        metrics[name] = BaselineMetric(score=m.score, status=m.status, votes=votes,
                                       vote_history=split_entry(votes) if name in judged else None)
    return BaselineCase(fingerprint=case.fingerprint, content=case.content, status=case.status, history=STATUS_CODES[case.status],
                        metrics=metrics)


def criterion_entry(
    info: CriterionInfo, summary: MetricSummary | None, commit: str | None, created_at: str | None
) -> BaselineCriterion:
    """A criterion's baseline entry: its definition and, with the run's ``summary``, its aggregate and the one
    point of its trend this run makes."""
    mean = summary.mean if summary else None
    return BaselineCriterion(
        fingerprint=info.fingerprint,
        threshold=info.threshold,
        judged=info.judged,
        judge_model=judge_model_of(info),
        custom=info.custom,
        custom_code=info.custom_code,
        options_sha=options_hash(info.options),
        mean=mean,
        passed=summary.passed if summary else 0,
        failed=summary.failed if summary else 0,
        trend=[trend_point(mean, commit, created_at)] if mean is not None and math.isfinite(mean) else None,
    )


class RunCases(Mapping[str, BaselineCase]):
    """A run's cases of one eval set as baseline entries, each built when read and not kept (what a PR's baseline
    update is checked against: :func:`build_baseline` with ``when_read``)."""

    __slots__ = ("_cases", "_judged")

    def __init__(self, cases: dict[str, CaseResult], judged: set[str]) -> None:
        self._cases = cases
        self._judged = judged

    def __getitem__(self, key: str) -> BaselineCase:
        return _case(self._cases[key], self._judged)

    def __contains__(self, key: object) -> bool:
        return key in self._cases

    def __iter__(self) -> Iterator[str]:
        return iter(self._cases)

    def __len__(self) -> int:
        return len(self._cases)


def build_baseline(
    report: Report, *, commit: str | None, created_at: str | None, previous: Baseline | None = None,
    budgets: Mapping[str, str] | None = None, when_read: bool = False,
) -> Baseline:
    """The baseline of a run (the clock and the commit are passed in by the caller), with each case's history
    carried forward from ``previous`` (the baseline it replaces; see :func:`carry_history`). ``budgets``: the gate
    policy's budgets, recorded (None: not recorded). ``when_read``: each eval set's cases are :class:`RunCases`
    (each entry built when read) and the efficiency is left out (None): a baseline to read, not to write."""
    sets: dict[str, BaselineEvalSet] = {}
    efficiency: dict[str, BaselineEfficiency] = {}
    models: set[str] = set()
    for key, es in zip(unique_keys([e.eval_set_id for e in report.eval_sets]), report.eval_sets, strict=True):
        judged = {c.name for c in es.criteria if c.judged}
        criteria = {}
        for info in es.criteria:
            criteria[info.name] = entry = criterion_entry(info, es.metrics.get(info.name), commit, created_at)
            if entry.judge_model:
                models.add(entry.judge_model)
        case_keys = unique_keys([c.eval_id for c in es.cases])
        if when_read:
            sets[key] = BaselineEvalSet(path=es.path, criteria=criteria, pass_rule=es.pass_rule)
            sets[key].__dict__["cases"] = RunCases(dict(zip(case_keys, es.cases, strict=True)), judged)
            continue
        kept = efficiency_of(es, case_keys)
        efficiency[key] = kept.model_copy(update={"cases": {
            k: {q: rounded_seconds(v) if q == "latency" else v for q, v in values.items()}
            for k, values in kept.cases.items()}})
        sets[key] = BaselineEvalSet(
            path=es.path,
            criteria=criteria,
            cases={k: _case(c, judged) for k, c in zip(case_keys, es.cases, strict=True)},
            pass_rule=es.pass_rule,
        )
    fresh = Baseline(
        evalbot_version=report.evalbot_version,
        commit=commit,
        created_at=created_at,
        judge_models=sorted(models),
        eval_sets=sets,
        usage=usage_summary(report.usage),
        agent_usage=agent_usage_summary(report.agent_usage),
        judge_served=served_summary(report.usage, previous),
        efficiency=None if when_read else efficiency,
        budgets=dict(budgets) if budgets is not None else None,
    )
    if previous is None:
        return fresh
    return steady_seconds(carry_history(fresh, previous), previous)


SECONDS_NOISE = 0.2
"""A case's seconds that moved by less than this share (or 10 ms) since the previous baseline keep the previous
value: the agent's timing differs on every run, and a refresh rewriting every case's seconds is a diff of every case.
The budgets' noise test reads the same (a +20% budget is not decided by a kept value)."""


def steady_seconds(fresh: Baseline, previous: Baseline) -> Baseline:
    """``fresh`` with each case's seconds kept from ``previous`` where they moved within :data:`SECONDS_NOISE`."""
    if fresh.efficiency is None or not previous.compatible or not previous.efficiency:
        return fresh
    out = {}
    for key, entry in fresh.efficiency.items():
        before = previous.efficiency.get(key)
        if before is None:
            out[key] = entry
            continue
        cases = {}
        for case, values in entry.cases.items():
            old = before.cases.get(case) or {}
            new, was = values.get("latency"), old.get("latency")
            if new is not None and was is not None and abs(new - was) <= max(0.01, SECONDS_NOISE * was):
                values = {**values, "latency": was}
            cases[case] = values
        out[key] = entry.model_copy(update={"cases": cases})
    return fresh.model_copy(update={"efficiency": out})


def joined_history(old: str | None, new: str, *, sep: str, replace_last: bool) -> str:
    """``old`` followed by ``new`` (replacing old's last entry on a re-run of the same commit), capped."""
    entries = old.split(sep) if sep and old else list(old or "")
    if replace_last and entries:
        entries.pop()
    entries = [*entries, new][-HISTORY_LIMIT:]
    return sep.join(entries)


def trend_point(mean: float, commit: str | None, created_at: str | None) -> TrendPoint:
    """A refresh's point in a criterion's trend (its commit and date clipped to what a baseline accepts)."""
    return TrendPoint(mean=mean, commit=commit[:TREND_TEXT_LIMIT] if commit else None,
                      created_at=created_at[:TREND_TEXT_LIMIT] if created_at else None)


def same_measure(a: BaselineCriterion, b: BaselineCriterion) -> bool:
    """Whether two criterion entries measure the same thing, threshold aside (their means form one trend): the
    same options, judge model and custom code; without an options hash (older baselines), the same fingerprint."""
    if a.options_sha is None or b.options_sha is None:
        return a.fingerprint == b.fingerprint and a.judge_model == b.judge_model
    return (a.options_sha, a.judge_model, a.custom) == (b.options_sha, b.judge_model, b.custom)


def past_trend(prior: BaselineCriterion, commit: str | None, created_at: str | None) -> list[TrendPoint]:
    """The trend a criterion entry records; an entry without one (older evalbot) contributes its one mean,
    measured at its baseline's ``commit`` and ``created_at``."""
    if prior.trend is not None:
        return list(prior.trend)
    return [] if prior.mean is None else [trend_point(prior.mean, commit, created_at)]


def continued_trend(past: Sequence[TrendPoint], fresh: Sequence[TrendPoint], *, replace_last: bool) -> list[TrendPoint]:
    """``past`` followed by ``fresh``'s point (replacing past's last on a re-run of the same commit), capped at
    :data:`HISTORY_LIMIT`; a run without a mean (``fresh`` empty) leaves ``past`` as it was."""
    if not fresh:
        return list(past)
    entries = list(past[:-1] if replace_last else past)
    return [*entries, fresh[-1]][-HISTORY_LIMIT:]


def carry_trends(fresh: BaselineEvalSet, old: BaselineEvalSet | None, previous: Baseline, *, rerun: bool
                 ) -> BaselineEvalSet:
    """``fresh`` with each criterion's trend continued from ``old`` (its entry in ``previous``) where the criterion
    measures the same thing (:func:`same_measure`); otherwise its trend starts again with this run."""
    if old is None:
        return fresh
    criteria = {}
    for name, c in fresh.criteria.items():
        prior = old.criteria.get(name)
        if prior is not None and same_measure(prior, c):
            trend = continued_trend(past_trend(prior, previous.commit, previous.created_at), c.trend or [],
                                    replace_last=rerun)
            c = c.model_copy(update={"trend": trend or None})
        criteria[name] = c
    return fresh.model_copy(update={"criteria": criteria})


def _signature(es: BaselineEvalSet) -> dict[str, tuple[str, str | None, float | None]]:
    return {name: (c.fingerprint, c.judge_model, c.threshold) for name, c in es.criteria.items()}


def carry_history(fresh: Baseline, previous: Baseline) -> Baseline:
    """``fresh`` with each case's history (and its judged criteria's vote history) continued from ``previous``,
    and each criterion's trend of means (:func:`carry_trends`).

    A case continues its history only where it measures the same thing as before: the same eval set key and case
    key, the same case fingerprint, and the eval set's criteria unchanged (fingerprints, judge models,
    thresholds); otherwise its history starts again with this run, so a changed definition never looks like a
    flip. A previous baseline without history (older evalbot) contributes its one recorded outcome. When
    ``previous`` was written for the same commit (a re-run), this run replaces its last entry instead of adding
    one. A previous baseline of another schema version has nothing to carry.
    """
    if not previous.compatible:
        return fresh
    rerun = fresh.commit is not None and fresh.commit == previous.commit
    sets = {}
    for key, es in fresh.eval_sets.items():
        old_set = previous.eval_sets.get(key)
        es = carry_trends(es, old_set, previous, rerun=rerun)
        if old_set is None or _signature(old_set) != _signature(es):
            sets[key] = es
            continue
        cases = {}
        for case_key, case in es.cases.items():
            old = old_set.cases.get(case_key)
            if old is None or old.fingerprint is None or old.fingerprint != case.fingerprint:
                cases[case_key] = case
                continue
            metrics = {}
            for name, m in case.metrics.items():
                prior = old.metrics.get(name)
                if m.vote_history is not None and prior is not None:
                    past = prior.vote_history or split_entry(prior.votes)
                    m = m.model_copy(update={"vote_history": joined_history(past, m.vote_history, sep=" ",
                                                                     replace_last=rerun)})
                metrics[name] = m
            history = joined_history(old.history or STATUS_CODES[old.status], STATUS_CODES[case.status], sep="",
                              replace_last=rerun)
            cases[case_key] = case.model_copy(update={"history": history, "metrics": metrics})
        sets[key] = es.model_copy(update={"cases": cases})
    return fresh.model_copy(update={"eval_sets": sets})


def with_accepted(previous: Baseline, fresh: Baseline, accepted: Sequence[tuple[str, str]]) -> tuple[Baseline, list[str]]:
    """``previous`` (main's baseline) with only the ``accepted`` entries taken from ``fresh`` (this run's baseline,
    its histories continuing ``previous``'s): ``(SET, CASE)`` a case (dropped when the run lacks it), ``(SET, "*")``
    a whole eval set (its criteria, cases and efficiency; dropped when the run lacks it), ``(SET, "*/NAME")`` one
    criterion's entry of an eval set main has (its definition: threshold, options, judge model, code; dropped when
    the run lacks it), its cases left as they were. Every other entry, and the header (commit, date, usage, budgets),
    stays ``previous``'s exactly. Also the ``SET/CASE`` names of the entries written, in order. Raises KeyError
    naming an entry that neither baseline has."""
    sets = dict(previous.eval_sets)
    efficiency = dict(previous.efficiency) if previous.efficiency is not None else None
    fresh_efficiency = fresh.efficiency or {}
    written: list[str] = []
    for key, case in accepted:
        old, new = sets.get(key), fresh.eval_sets.get(key)
        if old is None and new is None:
            raise KeyError(f"{key}/{case}: no eval set {key!r} in this run or in the previous baseline")
        if case == "*":
            if new is None:
                sets.pop(key, None)
            else:
                sets[key] = new
            if efficiency is not None:
                if key in fresh_efficiency:
                    efficiency[key] = fresh_efficiency[key]
                else:
                    efficiency.pop(key, None)
            written.append(f"{key}/*")
            continue
        if case.startswith("*/"):
            sets[key] = _with_criterion(key, case[2:], old, new)
            written.append(f"{key}/{case}")
            continue
        in_old = old is not None and case in old.cases
        in_new = new is not None and case in new.cases
        if not in_old and not in_new:
            raise KeyError(f"{key}/{case}: no case {case!r} in eval set {key!r} of this run or of the previous "
                           "baseline")
        if old is None:
            assert new is not None
            old = new.model_copy(update={"cases": {}})  # a new eval set: this run's definitions, the named cases
        changes: dict[str, BaselineCase | None] = {case: new.cases[case] if new is not None and in_new else None}
        sets[key] = old.model_copy(update={"cases": replaced_cases(old.cases, changes)})
        written.append(f"{key}/{case}")
    return previous.model_copy(update={"eval_sets": sets, "efficiency": efficiency}), written


def _with_criterion(key: str, name: str, old: BaselineEvalSet | None, new: BaselineEvalSet | None) -> BaselineEvalSet:
    """Main's eval set ``old`` with criterion ``name``'s entry as this run's ``new`` has it (removed when the run no
    longer measures it); KeyError when neither has it, or when main has no such eval set (accept it whole)."""
    if old is None:
        raise KeyError(f"{key}/*/{name}: eval set {key!r} is not in the previous baseline; accept it whole with {key}/*")
    got = new.criteria.get(name) if new is not None else None
    if got is None and name not in old.criteria:
        raise KeyError(f"{key}/*/{name}: no criterion {name!r} in eval set {key!r} of this run or of the previous "
                       "baseline")
    criteria = dict(old.criteria)  # main's order: the file changes only where the entry is
    if got is None:
        criteria.pop(name, None)
    else:
        criteria[name] = got
    return old.model_copy(update={"criteria": criteria})


def recorded_regressions(previous: Baseline | None, written: Baseline) -> list[str]:
    """``SET/CASE: passed → failed`` for each case that passed in ``previous`` and does not in ``written`` (a pass
    → fail the new baseline records: a regression it accepts)."""
    if previous is None or not previous.compatible:
        return []
    out = []
    for key, es in written.eval_sets.items():
        old = previous.eval_sets.get(key)
        if old is None:
            continue
        for mark in case_marks(es.cases):
            before = old.cases.get(mark[0])
            if before is not None and before.status == "passed" and mark[3] in ("failed", "error"):
                out.append(f"{key}/{mark[0]}: passed → {mark[3]}")
    return out


def restricted(baseline: Baseline, cases: Mapping[str, Collection[str] | None]) -> Baseline:
    """The part of ``baseline`` a run of only some cases is compared with: the eval sets keyed in ``cases``, each
    with the listed case ids (None: all its cases). What the run left out is then not "removed"."""
    sets = {key: es if cases[key] is None else _selected(es, set(cases[key] or ()))
            for key, es in baseline.eval_sets.items() if key in cases}
    return baseline.model_copy(update={"eval_sets": sets})


def _selected(es: BaselineEvalSet, keys: Collection[str]) -> BaselineEvalSet:
    """``es`` with only the cases keyed in ``keys``, in its order (only those are read: a parsed baseline builds each
    case it is asked for)."""
    return es.model_copy(update={"cases": {k: es.cases[k] for k in es.cases if k in keys}})


def dump_baseline(baseline: Baseline) -> str:
    """Canonical JSON text: sorted keys, two-space indent, UTF-8 characters kept, trailing newline; a criterion's
    ``trend`` and a case's efficiency values each on one line, so that a refresh whose outcomes did not change
    changes one line per case (its history) and one per criterion (its trend), not one per number."""
    import secrets

    data = baseline.model_dump(mode="json", exclude_none=True)
    tag = f"\x00evalbot-{secrets.token_hex(8)}-"
    inline: list[object] = []

    def mark(value: object) -> str:
        inline.append(value)
        return f"{tag}{len(inline) - 1}"

    for es in data.get("eval_sets", {}).values():
        for c in es.get("criteria", {}).values():
            if "trend" in c:
                c["trend"] = mark(c["trend"])
    for e in (data.get("efficiency") or {}).values():
        cases = e.get("cases", {})
        for key in cases:
            cases[key] = mark(cases[key])
    text = json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    for i, value in enumerate(inline):
        text = text.replace(json.dumps(f"{tag}{i}"),
                            json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": ")), 1)
    return text


def rounded_seconds(value: float) -> float:
    """Seconds as the baseline keeps them per case: two significant digits, never finer than 10 ms (what a refresh
    with the same outcomes measures differently on every run is not a diff of every case)."""
    if value <= 0 or not math.isfinite(value):
        return value
    return round(value, min(2, max(0, 1 - math.floor(math.log10(value)))))


def parse_baseline(text: str, source: str) -> Baseline:
    """Parse baseline JSON; invalid content raises InputError naming ``source`` and the JSON pointer.

    A baseline written by another schema version is returned with only its header (version, commit) so that the
    comparison can show every case as "changed definition" and say how to refresh it. Each eval set's cases are
    kept packed (:class:`PackedCases`).
    """
    try:
        _refuse_oversized(text, source)  # before either path decodes anything
    except (msgspec.MsgspecError, ValueError) as exc:  # not strict JSON (NaN, Infinity...): json's path reads it
        if len(text) > LAX_JSON_BYTES:
            raise InputError(source, "", f"not strict JSON ({exc}), and too large ({len(text):,} characters) to be "
                             "read otherwise: evalbot writes baselines as strict JSON; refresh it with "
                             f"`{create_command()}`") from None
    return _parse_by_case(text) or _parse_whole(text, source)


def _parse_whole(text: str, source: str) -> Baseline:
    """The whole document decoded and validated at once: the path whose errors (and acceptance) define the file's
    format; :func:`_parse_by_case` reads a valid file the same way in less memory."""
    where = Path(source)
    data = parse_json(text, where)
    if not isinstance(data, dict):
        raise InputError(
            source, "", f"expected a baseline JSON object, got {type(data).__name__}; make one with `{create_command()}`"
        )
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InputError(source, "/schema_version", "required integer schema_version is missing; is this a baseline?")
    if version != BASELINE_SCHEMA_VERSION:
        header = {k: data.get(k) for k in ("evalbot_version", "commit", "created_at")}
        return Baseline(
            schema_version=version,
            evalbot_version=str(header["evalbot_version"] or "unknown"),
            commit=header["commit"] if isinstance(header["commit"], str) else None,
            created_at=header["created_at"] if isinstance(header["created_at"], str) else None,
        )
    if data.get("budgets") is not None:
        try:
            parse_budgets(data["budgets"])
        except BudgetError as exc:
            pointer = json_pointer(["budgets"] + ([exc.key] if exc.key is not None else []))
            raise InputError(source, pointer, f"{exc}; refresh the baseline with `{create_command()}`") from None
    try:
        baseline = Baseline.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(source, pointer_for(data, tuple(first["loc"])), describe(dict(first))) from None
    del data
    for es in baseline.eval_sets.values():
        names: dict[str, int] = {}
        es.__dict__["cases"] = PackedCases({k: _pack_case(c, names) for k, c in es.cases.items()}, list(names))
    return _packed_efficiency(baseline)


_RAW_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
"""An object's members, each value kept as its JSON text (checked for syntax, not decoded)."""
_RAW_SETS = msgspec.json.Decoder(dict[str, dict[str, msgspec.Raw]])
_validate_case = BaselineCase.__pydantic_validator__.validate_python


_GROWING = ((), ("eval_sets",), ("eval_sets", None), ("eval_sets", None, "cases"), ("efficiency",),
            ("efficiency", None), ("efficiency", None, "cases"))
"""Where a baseline holds a map that grows with the suite (None: any key): measured member by member."""


def _grows(where: Sequence[str]) -> bool:
    return any(len(where) == len(shape) and all(s is None or s == w for s, w in zip(shape, where, strict=True))
               for shape in _GROWING)


_KEY_BEFORE = re.compile(rb'"((?:[^"\\]|\\.){1,200})"\s*:\s*\Z')
_MAX_KEYS = 10_000
"""Members an oversized object may have (bounded by the colons of its text) to be split to name its largest."""


def _longest_list(part: bytes, tries: int = 1000) -> tuple[int, int, str]:
    """Where the longest flat list among the first ``tries`` of an oversized entry's text starts and ends, and the
    key it is under (nothing is decoded; the message's and the pointer's only)."""
    best, key, at = (0, 0), b"", part.find(b"[")
    while at >= 0 and tries:
        end = part.find(b"]", at)
        if end < 0:
            break
        if end - at > best[1] - best[0]:
            named = _KEY_BEFORE.search(part[max(0, at - 256):at])
            best, key = (at, end + 1), named.group(1) if named else b"?"
        at, tries = part.find(b"[", end), tries - 1
    return best[0], best[1], key.decode("utf-8", "replace")[:80]


def _largest_member(part: bytes, where: list[str]) -> tuple[bytes, list[str]]:
    """The member of an oversized object that makes it oversized, followed down while the object has few members
    beside its longest list (at most _MAX_KEYS colons outside it: decoding its members as views costs little)."""
    while part.lstrip()[:1] == b"{":
        start, end, _ = _longest_list(part)
        if part.count(b":") - part.count(b":", start, end) > _MAX_KEYS:
            break
        members = _RAW_MEMBERS.decode(part)
        if not members:
            break
        key, child = max(members.items(), key=lambda item: len(item[1]))
        if len(child) <= PART_BYTES:
            break
        part, where = bytes(child), [*where, key]
    return part, where


def _refuse_oversized(text: str, source: str) -> None:
    """InputError naming the first part of the document longer than PART_BYTES outside the maps that grow with the
    suite (see PART_BYTES), found without decoding anything but those maps' members (as msgspec.Raw views of the text:
    nothing is copied). msgspec's errors (not strict JSON) propagate."""
    stack: list[tuple[msgspec.Raw | bytes | str, list[str]]] = [(utf8_for_msgspec(text), [])]
    while stack:
        raw, where = stack.pop()
        if len(raw) <= PART_BYTES:
            continue
        if not _grows(where):
            part = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
            part, where = _largest_member(part, where)
            what = "a list" if part.lstrip()[:1] == b"[" else "an entry"
            start, end, key = _longest_list(part) if part.lstrip()[:1] == b"{" else (0, 0, "")
            detail = f" (its list {key!r} alone: {end - start:,} bytes)" if 2 * (end - start) > len(part) else ""
            raise InputError(source, json_pointer(where), f"{what} of {len(part):,} bytes{detail}: more than a run writes there "
                             f"(at most {MAX_VOTE_ENTRIES:,} votes per criterion of a case, {HISTORY_LIMIT} trend "
                             "points per criterion); the file was edited by hand: refresh it with "
                             f"`{create_command()}`")
        try:
            members = _RAW_MEMBERS.decode(raw)
        except msgspec.ValidationError:
            continue  # not an object: the models refuse it (it is no larger than the map it stands for)
        stack += [(child, [*where, key]) for key, child in reversed(members.items())]


def _parse_by_case(text: str) -> Baseline | None:
    """A current-schema baseline read one case at a time: the document without its cases decoded and validated
    first, then each case decoded, validated as a :class:`BaselineCase` and packed, so neither the whole decoded
    document nor every case's model is held at once (at 33,334 cases: 131 MB at the peak of a whole parse).

    None for anything else (another schema version, any value this path refuses, a document msgspec does not read,
    such as one with NaN): :func:`_parse_whole` then reads it, or refuses it with the message and pointer it always
    gave. Everything accepted here is accepted there with the same values: the same decoder (the one
    :func:`~evalbot.formats.jsonio.loads` tries first) reads every value, the same models validate every part (whose
    nesting is bounded, far below the depth limit), and duplicate keys keep the last value at the first's place."""
    try:
        members = _RAW_MEMBERS.decode(utf8_for_msgspec(text))
        version = FAST_DECODER.decode(members["schema_version"])
        if type(version) is not int or version != BASELINE_SCHEMA_VERSION:
            return None
        data = {k: FAST_DECODER.decode(v) for k, v in members.items() if k != "eval_sets"}
        raw_sets = _RAW_SETS.decode(members["eval_sets"]) if "eval_sets" in members else {}
        del members
        data["eval_sets"] = {key: {k: {} if k == "cases" else FAST_DECODER.decode(v) for k, v in es.items()}
                             for key, es in raw_sets.items()}
        baseline = Baseline.model_validate(data)
        del data
        for key, raw in raw_sets.items():
            names: dict[str, int] = {}
            rows = {case_key: _pack_case(_validate_case(FAST_DECODER.decode(case)), names)
                    for case_key, case in (_RAW_MEMBERS.decode(raw["cases"]) if "cases" in raw else {}).items()}
            baseline.eval_sets[key].__dict__["cases"] = PackedCases(rows, list(names))
    except (ValueError, RecursionError, KeyError, TypeError, msgspec.MsgspecError):
        return None
    return _packed_efficiency(baseline)


_STATUS_LIST: tuple[Status, ...] = get_args(Status)
_STATUS_INDEX = {status: i for i, status in enumerate(_STATUS_LIST)}
_CASE_FIELDS = ("fingerprint", "content", "status", "history", "metrics")
_METRIC_FIELDS = ("score", "status", "votes", "vote_history")
_VOTE_FIELDS = tuple(Votes.model_fields)


def _field_sets(fields: Sequence[str]) -> list[set[str]]:
    """Per bit mask over ``fields``, the one fields-set every model built with those fields shares."""
    return [{name for i, name in enumerate(fields) if mask >> i & 1} for mask in range(1 << len(fields))]


_MASKS: dict[tuple[Sequence[str], frozenset[str]], int] = {}


def _mask(fields_set: set[str], fields: Sequence[str]) -> int:
    key = (fields, frozenset(fields_set))  # a handful of distinct sets per model: each one's mask made once
    mask = _MASKS.get(key)
    if mask is None:
        mask = sum(1 << i for i, name in enumerate(fields) if name in fields_set)
        if len(_MASKS) < 1024:
            _MASKS[key] = mask
    return mask


_CASE_SETS, _METRIC_SETS, _VOTE_SETS = _field_sets(_CASE_FIELDS), _field_sets(_METRIC_FIELDS), _field_sets(_VOTE_FIELDS)


def _pack_case(case: BaselineCase, names: dict[str, int]) -> bytes:
    """A validated case as one ``marshal`` bytes object (about a quarter of its models' memory): its values, which
    of its fields were set, and per criterion its index in ``names`` (filled in here; one list per eval set)."""
    values = case.__dict__
    metrics: dict[str, BaselineMetric] = values["metrics"]
    row: list[Any] = [_mask(case.__pydantic_fields_set__, _CASE_FIELDS), values["fingerprint"], values["content"],
                      _STATUS_INDEX[values["status"]], values["history"], len(metrics)]
    for name, metric in metrics.items():
        m = metric.__dict__
        votes: list[Votes | None] | None = m["votes"]
        row += (names.setdefault(name, len(names)), _mask(metric.__pydantic_fields_set__, _METRIC_FIELDS), m["score"],
                _STATUS_INDEX[m["status"]],
                None if votes is None else tuple(
                    None if v is None else (_mask(v.__pydantic_fields_set__, _VOTE_FIELDS),
                                            *(v.__dict__[f] for f in _VOTE_FIELDS)) for v in votes),
                m["vote_history"])
    return marshal.dumps(tuple(row))


def _unpack_case(packed: bytes, names: Sequence[str]) -> BaselineCase:
    """The case :func:`_pack_case` packed, as equal models (built without validation: their values were validated
    before they were packed)."""
    row = marshal.loads(packed)
    metrics = {}
    for i in range(6, 6 + 6 * row[5], 6):
        name, mask, score, status, votes, vote_history = row[i:i + 6]
        metrics[names[name]] = built(BaselineMetric, {
            "score": score, "status": _STATUS_LIST[status],
            "votes": None if votes is None else [None if v is None else _votes(v) for v in votes],
            "vote_history": vote_history,
        }, _METRIC_SETS[mask])
    return built(BaselineCase, {"fingerprint": row[1], "content": row[2], "status": _STATUS_LIST[row[3]],
                                "history": row[4], "metrics": metrics}, _CASE_SETS[row[0]])


def _votes(packed: tuple[Any, ...]) -> Votes:
    return built(Votes, dict(zip(_VOTE_FIELDS, packed[1:], strict=True)), _VOTE_SETS[packed[0]])


class PackedCases(PackedMapping[BaselineCase]):
    """A parsed baseline's cases of one eval set: each case's validated values packed in one bytes object (about
    0.3 KB against 1.3 KB for its models with shared bookkeeping), its :class:`BaselineCase` built again on each
    access and not kept (a comparison reads each case once). Immutable, like the models it stands for; compares
    equal to a dict of the same cases."""

    __slots__ = ()

    def _unpack(self, packed: bytes) -> BaselineCase:
        return _unpack_case(packed, self._names)

    def replaced(self, changes: Mapping[str, BaselineCase | None]) -> PackedCases:
        """These cases with ``changes`` made (see :func:`replaced_cases`), the changed ones packed."""
        names = {name: i for i, name in enumerate(self._names)}
        rows = dict(self._rows)
        for key, case in changes.items():
            if case is None:
                rows.pop(key, None)
            else:
                rows[key] = _pack_case(case, names)
        return PackedCases(rows, list(names))

    def marks(self) -> Iterator[CaseMarks]:
        """Each case's key, fingerprint, content and status, read from its packed row without building its models."""
        for key, packed in self._rows.items():
            row = marshal.loads(packed)
            yield key, row[1], row[2], _STATUS_LIST[row[3]]


def replaced_cases(
    cases: Mapping[str, BaselineCase], changes: Mapping[str, BaselineCase | None]
) -> Mapping[str, BaselineCase]:
    """``cases`` with ``changes`` made in order (a case replaced in place, added at the end, or removed: None). A
    parsed baseline's cases stay packed and the changed ones are packed too: no other case is built."""
    if not isinstance(cases, PackedCases):
        out = dict(cases)
        for key, case in changes.items():
            if case is None:
                out.pop(key, None)
            else:
                out[key] = case
        return out
    return cases.replaced(changes)


CaseMarks = tuple[str, str | None, str | None, Status]
"""A baseline case's key, fingerprint, content and status: what finds it renamed, moved or redefined."""


def case_marks(cases: Mapping[str, BaselineCase]) -> Iterator[CaseMarks]:
    """The :data:`CaseMarks` of every case of an eval set, in order (a parsed baseline's without building them)."""
    if isinstance(cases, PackedCases):
        return cases.marks()
    return ((key, case.fingerprint, case.content, case.status) for key, case in cases.items())


@dataclass(frozen=True)
class BaselineSpec:
    """Where to read the baseline: a file, or ``path`` at git ``ref``."""

    path: str
    ref: str | None = None

    @property
    def label(self) -> str:
        """How the source is named in messages."""
        return f"{self.ref}:{self.path}" if self.ref else self.path


def parse_spec(spec: str, *, file_exists: Callable[[str], bool]) -> BaselineSpec:
    """``FILE`` or ``REF:PATH`` (an existing file wins; ``REF:PATH`` needs a non-empty ref and path)."""
    if file_exists(spec) or ":" not in spec:
        return BaselineSpec(spec)
    ref, _, path = spec.partition(":")
    if not ref or not path:
        raise InputError(spec, "", "expected FILE or REF:PATH (e.g. origin/main:.evalbot/baseline.json)")
    return BaselineSpec(path, revision(ref, spec))


def read_baseline(
    spec: BaselineSpec, *, git: GitRunner, read_file: Callable[[str], str | None]
) -> Baseline | None:
    """Read and parse the baseline; None when it does not exist (the comparison then shows absolute scores)."""
    text = git_show(spec.ref, spec.path, git=git) if spec.ref else read_file(spec.path)
    if text is None:
        return None
    return parse_baseline(text, spec.label)


VOLATILE_FIELDS = frozenset({"commit", "created_at", "usage", "agent_usage", "judge_served", "efficiency"})
"""Fields of a baseline that say when and where it was measured and what it cost, not what it measured (a PR's
baseline file differing only in these, or in its criteria's trends, does not update anything: a refresh replaying
the judge cache costs nothing, and the agent's seconds differ on every run)."""


def same_scores(old: Baseline, new: Baseline) -> bool:
    """Whether two baselines hold the same results (only when and where they were measured, the judge's cost, the
    agent's efficiency and the trends of means, which only the HTML report draws, differ). A baseline without
    efficiency stats (older evalbot) never holds the same as one with them: the refresh that adds them is committed."""
    if (old.efficiency is None) != (new.efficiency is None):
        return False
    volatile: dict[str, Any] = dict.fromkeys(VOLATILE_FIELDS, True)
    volatile["eval_sets"] = {"__all__": {"criteria": {"__all__": {"trend"}}}}
    return old.model_dump(exclude=volatile) == new.model_dump(exclude=volatile)
