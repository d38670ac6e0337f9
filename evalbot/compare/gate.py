"""The merge gate: its policy (``fail-on``, tolerance, noise handling) and the verdict it reaches on a comparison."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from evalbot.compare.efficiency import BudgetError, parse_budgets
from evalbot.compare.passrule import RuleError, normalize_setting
from evalbot.errors import (
    EXIT_FAILED,
    EXIT_INVALID_INPUT,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    InputError,
    did_you_mean,
    json_pointer,
    printable,
)
from evalbot.formats.prices import JudgeBudget, Price, PricesError, PriceTable, parse_prices, shipped_prices
from evalbot.judges.base import DEFAULT_SAMPLING, Sampling
from evalbot.load import normal_key
from evalbot.selection import AffectedByError, parse_affected_by

FailOn = Literal["regression", "threshold", "never"]
JudgeFailures = Literal["block", "warn"]
YardstickChanges = Literal["block", "warn"]
Verdict = Literal["passed", "blocked", "invalid", "error"]

MAX_RESAMPLE = 100
"""Most extra samples ``resample_split`` may ask per invocation."""
MAX_RERUNS = 20
"""Most extra runs ``rerun_flipped`` may ask per flipped case."""


class GatePolicy(BaseModel):
    """When the gate blocks a merge.

    ``regression`` (default) blocks on a case that went from passed to failed, or a criterion mean that fell by more
    than ``tolerance`` on an eval set; ``threshold`` blocks on any failing case (ADK's absolute rule); ``never`` only
    reports. With ``noise_aware``, a judged flip decided by a split vote and a mean change the exact sign test does not
    find significant at ``alpha`` are *inconclusive*: shown with their p-value, blocking only with
    ``block_inconclusive``. ``judge_failures`` says what a judged verdict the judge could not give (outage, timeout,
    unparseable answer) does: ``block`` (default) makes the run an ``error`` (exit 3), ``warn`` only says so in the
    headline. Missing judge credentials are such a failure where the credentials are expected, and a warning in a
    fork PR's first stage, which has no secrets (``compare``'s ``credentials_expected``).
    A case that regresses although it oscillated on main within the baseline's history (changed outcome at least
    twice) is *flaky*: shown with its history, blocking only with ``block_flaky``.
    ``sampling`` says how majority-vote criteria ask the judge: ``sequential`` (default) asks the fewest samples that
    could decide the vote first and the rest only when needed, ``full`` asks all ``num_samples`` at once (ADK's way);
    the verdicts are the same. ``resample_split`` is how many extra samples settle a judged verdict that flipped
    against the baseline on a split vote (the invocation is decided by the larger vote; 0 disables it).
    ``yardstick_changes`` says what a change to what the run is measured with does when the PR's baseline update
    does not accept it (a removed or renamed case or eval set, a changed case definition, a loosened threshold: a
    lower minimum score or a higher maximum, a dropped criterion, a criterion recomputed by custom code): ``block``
    (default) blocks, ``warn`` only says so in the headline. Added cases, eval sets and criteria, and tightened
    thresholds, never block.
    ``pass_rule`` (``"k/N"``, or per eval set ``{"checkout": "3/3", "*": "2/3"}``; None: ADK's pooling) decides a
    case from its N runs of the agent: it passes when at least k runs passed (:mod:`evalbot.compare.passrule`).
    ``rerun_flipped`` is how many more times evalbot, when it runs the agent itself, runs a case whose outcome
    flipped against the baseline before deciding it (0 disables it).
    ``budgets`` are the agent's allowed cost increases against main (``{"tokens": "+20%", "tool_calls": "+1"}``,
    :mod:`evalbot.compare.efficiency`): one exceeded significantly blocks (unless ``fail_on`` is ``never``), one that
    cannot be measured makes the run an ``error``; a PR removing or loosening one is a yardstick change.
    ``affected_by`` maps eval set folders to the repository paths their results depend on (None: no mapping, every
    change affects every eval set): ``evalbot plan`` and ``--only-affected`` run only the eval sets a change can
    affect (:mod:`evalbot.selection`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    fail_on: FailOn = "regression"
    tolerance: float = Field(default=0.0, ge=0.0, le=1.0)
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    noise_aware: bool = True
    block_inconclusive: bool = False
    judge_failures: JudgeFailures = "block"
    block_flaky: bool = False
    sampling: Sampling = DEFAULT_SAMPLING
    resample_split: int = Field(default=10, ge=0, le=MAX_RESAMPLE, strict=True)
    yardstick_changes: YardstickChanges = "block"
    pass_rule: dict[str, str] | None = None
    rerun_flipped: int = Field(default=2, ge=0, le=MAX_RERUNS, strict=True)

    @field_validator("pass_rule", mode="before")
    @classmethod
    def _rule(cls, value: Any) -> dict[str, str] | None:
        return normalize_setting(value)

    budgets: dict[str, str] = Field(default_factory=dict)

    @field_validator("budgets", mode="before")
    @classmethod
    def _budgets(cls, value: Any) -> dict[str, str]:
        return {name: budget.text for name, budget in parse_budgets(value).items()}

    affected_by: dict[str, tuple[str, ...]] | None = None

    @field_validator("affected_by", mode="before")
    @classmethod
    def _affected_by(cls, value: Any) -> dict[str, tuple[str, ...]] | None:
        return parse_affected_by(value)

    prices: dict[str, dict[str, float]] = Field(default_factory=dict)

    @field_validator("prices", mode="before")
    @classmethod
    def _prices(cls, value: Any) -> dict[str, dict[str, float]]:
        return {name: {"input": p.input, "output": p.output} for name, p in parse_prices(value).items()}

    judge_budget: JudgeBudget | None = None

    def price_table(self) -> PriceTable:
        """The shipped price table with this policy's ``prices``."""
        return shipped_prices().extended({name: Price(p["input"], p["output"]) for name, p in self.prices.items()})


POLICY_KEYS = frozenset(GatePolicy.model_fields)
"""Keys of the config's ``evalbot`` object that set the policy (camelCase and kebab-case spellings accepted)."""
SETTINGS_KEYS = POLICY_KEYS | {"comment_template", "baseline_path"}
"""Every key of the config's ``evalbot`` object (the one place listing them): any other key is an input error."""


_normal_key = normal_key


def policy_from_settings(
    settings: Mapping[str, Any], *, source: str, overrides: Mapping[str, Any] | None = None
) -> GatePolicy:
    """The policy from a config's ``evalbot`` object, then command-line ``overrides`` (None values ignored).

    An invalid value raises InputError naming ``source`` and the pointer under ``/evalbot``.
    """
    raw: dict[str, Any] = {}
    pointers: dict[str, str] = {}
    for key, value in settings.items():
        name = _normal_key(str(key))
        if name not in SETTINGS_KEYS:
            raise InputError(
                source, json_pointer(["evalbot", str(key)]),
                f"unknown evalbot setting {printable(str(key))!r}{did_you_mean(name, SETTINGS_KEYS)}; "
                f"known: {', '.join(sorted(SETTINGS_KEYS))}",
            )
        if name in POLICY_KEYS:
            raw[name] = value
            pointers[name] = json_pointer(["evalbot", str(key)])
        if name == "pass_rule":
            try:
                normalize_setting(value)
            except RuleError as exc:
                raise InputError(source, json_pointer(["evalbot", str(key), *exc.parts]), f"pass_rule: {exc}") from None
        if name == "affected_by":
            try:
                parse_affected_by(value)
            except AffectedByError as exc:
                raise InputError(source, json_pointer(["evalbot", str(key), *exc.parts]),
                                 f"{exc}; fix it in the config's evalbot section") from None
        if name == "prices":
            try:
                parse_prices(value)
            except PricesError as exc:
                raise InputError(source, json_pointer(["evalbot", str(key), *exc.parts]),
                                 f"prices: {exc}; fix it in the config's evalbot section") from None
        if name == "budgets":
            try:
                parse_budgets(value)
            except BudgetError as exc:
                where = ["evalbot", str(key)] + ([exc.key] if exc.key is not None else [])
                raise InputError(source, json_pointer(where), f"{exc}; fix it in the config's evalbot section") from None
    flags: set[str] = set()
    for key, value in (overrides or {}).items():
        if value is not None:
            raw[key] = value
            flags.add(key)
    try:
        return GatePolicy.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        if field in flags:  # a command-line flag (or the action input of the same name), not the config file
            flag = f"--{field.replace('_', '-')}"
            raise InputError(flag, "", f"{err['msg']} (got {raw[field]!r}); fix the value of {flag}") from None
        raise InputError(source, pointers.get(field, ""), f"{field}: {err['msg']}") from None


def sampling_from_settings(
    settings: Mapping[str, Any], *, source: str, override: Sampling | None = None
) -> Sampling:
    """The run's ``sampling`` from a config's ``evalbot`` object (only that key is read) and the command line."""
    own = {key: value for key, value in settings.items() if _normal_key(str(key)) == "sampling"}
    return policy_from_settings(own, source=source, overrides={"sampling": override}).sampling


class Gate(BaseModel):
    """The verdict, its exit code, and the reasons behind it (plain sentences; may quote eval set ids)."""

    model_config = ConfigDict(extra="forbid")

    verdict: Verdict
    exit_code: int
    reasons: list[str] = Field(default_factory=list)


NOTHING_MEASURED = ("nothing measured: the run holds no case; check the eval set paths and that each eval set has "
                    "eval cases")


def measured_nothing(gate: Gate, cases: int, carried: int = 0) -> Gate:
    """``gate``, except that a run holding no case (and carrying none from main) never passes: nothing was measured,
    so the verdict is ``error`` (exit 3) saying so."""
    if cases or carried or gate.exit_code != EXIT_OK:
        return gate
    return Gate(verdict="error", exit_code=EXIT_UNAVAILABLE, reasons=[NOTHING_MEASURED])


def decide(
    policy: GatePolicy,
    *,
    invalid: list[str],
    failing_cases: int,
    regressions: list[str],
    inconclusive: list[str],
    have_baseline: bool,
    flaky: list[str] | None = None,
    unmeasured: list[str] | None = None,
    baseline_unreadable: str | None = None,
    yardstick: list[str] | None = None,
    update_conflicts: list[str] | None = None,
    baseline_missing: str | None = None,
    over_budget: list[str] | None = None,
) -> Gate:
    """Apply the policy: invalid input first (exit 2), then what could not be measured (exit 3), then the
    ``fail_on`` rule (exit 1 when blocked).

    ``unmeasured`` are judge failures that block (the caller applies ``judge_failures``); ``baseline_unreadable`` is
    why a baseline that exists could not be read (it matters to ``fail_on: regression`` only). ``yardstick`` are the
    changes to what is measured that this PR's baseline update does not accept (blocking under both ``regression``
    and ``threshold`` with ``yardstick_changes: block``: a lowered threshold evades either rule);
    ``update_conflicts`` are entries of the PR's baseline update that this run contradicts (always blocking);
    ``baseline_missing`` says that a pull request's base commit has no baseline (blocking: nothing could be compared);
    ``over_budget`` are the budgets exceeded significantly (blocking under ``regression`` and ``threshold``).
    """
    if invalid:
        return Gate(verdict="invalid", exit_code=EXIT_INVALID_INPUT, reasons=invalid)
    if policy.fail_on == "never":
        return Gate(verdict="passed", exit_code=EXIT_OK, reasons=["fail-on is `never`: reporting only"])
    missing = list(unmeasured or [])
    if baseline_unreadable and policy.fail_on == "regression":
        missing.insert(0, baseline_unreadable)
    if missing:
        found = [f"also found: {r}" for r in regressions] if policy.fail_on == "regression" else []
        return Gate(verdict="error", exit_code=EXIT_UNAVAILABLE, reasons=missing + found)
    ruler = [baseline_missing] if baseline_missing else []
    ruler += list(over_budget or [])
    ruler += [f"baseline update: {c}" for c in update_conflicts or []]
    if policy.yardstick_changes == "block":
        ruler += [f"{c} (yardstick_changes: block)" for c in yardstick or []]
    if policy.fail_on == "threshold":
        if failing_cases:
            ruler.insert(0, f"{failing_cases} case(s) below their thresholds (fail-on: threshold)")
        if ruler:
            return Gate(verdict="blocked", exit_code=EXIT_FAILED, reasons=ruler)
        return Gate(verdict="passed", exit_code=EXIT_OK)
    blocking = list(regressions) + ruler
    if policy.block_inconclusive:
        blocking += [f"{reason} (inconclusive; blocking because block_inconclusive is set)" for reason in inconclusive]
    if policy.block_flaky:
        blocking += [f"{reason}; blocking because block_flaky is set" for reason in flaky or []]
    if blocking:
        return Gate(verdict="blocked", exit_code=EXIT_FAILED, reasons=blocking)
    if not have_baseline:
        return Gate(verdict="passed", exit_code=EXIT_OK, reasons=["no baseline to compare with"])
    return Gate(verdict="passed", exit_code=EXIT_OK)
