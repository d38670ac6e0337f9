"""k of N: the policy ``pass_rule`` that decides a case from N runs of the agent.

ADK pools the runs of a case (each criterion's per-invocation scores averaged over the runs, against the
threshold). With ``pass_rule: "k/N"`` (the config's ``evalbot`` section, read at the base commit like the rest of
the policy) a case passes when at least ``k`` of its ``N`` runs passed, and each criterion when at least ``k`` runs
passed it. The rule applies to every eval set, or per eval set: ``{"checkout": "3/3", "*": "2/3"}``. Every case of
an eval set the rule covers must have exactly ``N`` runs (``--num-runs N``, or a recording of N runs): any other
number is an input error naming the eval set, never a case decided on fewer runs than the rule asks.

Deciding is idempotent (it reads the runs, never the status it wrote), so every stage may apply it. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evalbot.errors import printable
from evalbot.results import (
    CaseResult,
    EvalSetReport,
    MetricResult,
    Problem,
    Report,
    Status,
    case_status,
    summarize_cases,
    totals,
)

MAX_RUNS = 1000
"""Largest N (the most runs ``--num-runs`` asks)."""
MAX_RULES = 1000
"""Most eval sets one ``pass_rule`` object may name."""
ANY_SET = "*"
"""The key of a ``pass_rule`` object that applies to every eval set it does not name."""
_SHAPE = re.compile(r"(-?[0-9]+)/(-?[0-9]+)")
PROBLEM_PREFIX = "pass_rule "
"""Every problem this module records on an eval set starts so (a later stage replaces them, never adds twice)."""


@dataclass(frozen=True)
class PassRule:
    """At least ``k`` of ``n`` runs must pass."""

    k: int
    n: int

    @property
    def text(self) -> str:
        """``2/3``."""
        return f"{self.k}/{self.n}"

    def pass_probability(self, p: float) -> float:
        """The chance a case whose runs pass independently with probability ``p`` passes under this rule."""
        if p <= 0.0 or p >= 1.0:
            return float(p >= 1.0)
        log_p, log_q = math.log(p), math.log1p(-p)
        return sum(
            math.exp(math.lgamma(self.n + 1) - math.lgamma(i + 1) - math.lgamma(self.n - i + 1)
                     + i * log_p + (self.n - i) * log_q)
            for i in range(self.k, self.n + 1)
        )


class RuleError(ValueError):
    """A ``pass_rule`` value that cannot be used: the message, and where under ``pass_rule`` it is."""

    def __init__(self, message: str, parts: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.parts = parts


def parse_rule(value: Any) -> PassRule:
    """``"k/N"`` as a rule; anything else raises RuleError saying what is wrong and what is expected."""
    if not isinstance(value, str):
        raise RuleError(f'expected a string "k/N" (at least k of N runs must pass, e.g. "2/3"), got '
                        f"{type(value).__name__}")
    found = _SHAPE.fullmatch(value.strip()) if len(value) <= 32 else None
    if found is None:
        raise RuleError(f'expected "k/N" with whole numbers (at least k of N runs must pass, e.g. "2/3"), got '
                        f"{printable(value[:40])!r}{'…' if len(value) > 40 else ''}")
    k, n = int(found.group(1)), int(found.group(2))
    if not 1 <= n <= MAX_RUNS:
        raise RuleError(f"N in {value.strip()!r} must be from 1 to {MAX_RUNS:,} runs (as --num-runs)")
    if k < 1:
        raise RuleError(f"k in {value.strip()!r} must be at least 1: with {k} every case would pass without a "
                        "passing run")
    if k > n:
        raise RuleError(f"k in {value.strip()!r} cannot exceed N: no case could pass")
    return PassRule(k, n)


def normalize_setting(value: Any) -> dict[str, str] | None:
    """The setting as ``{eval set id or "*": "k/N"}`` (a string applies to every eval set; None: ADK's pooling).

    Raises RuleError with the path under ``pass_rule`` of the bad value."""
    if value is None:
        return None
    if isinstance(value, str):
        return {ANY_SET: parse_rule(value).text}
    if not isinstance(value, Mapping):
        raise RuleError(f'expected "k/N" or an object mapping eval set ids (or "*") to "k/N", got '
                        f"{type(value).__name__}")
    if len(value) > MAX_RULES:
        raise RuleError(f"at most {MAX_RULES:,} eval sets may be named, got {len(value):,}")
    out: dict[str, str] = {}
    for key, rule in value.items():
        if not isinstance(key, str) or not key or len(key) > 512:
            raise RuleError("expected an eval set id (or \"*\") of 1 to 512 characters", (str(key)[:100],))
        try:
            out[key] = parse_rule(rule).text
        except RuleError as exc:
            raise RuleError(str(exc), (key,)) from None
    return out


def rule_for(rules: Mapping[str, str] | None, eval_set_id: str) -> PassRule | None:
    """The rule of an eval set: its own, else the ``*`` one, else None (ADK's pooling)."""
    if not rules:
        return None
    text = rules.get(eval_set_id, rules.get(ANY_SET))
    return parse_rule(text) if text is not None else None


def loosens(old: str | None, new: str | None) -> bool:
    """Whether moving from rule ``old`` to ``new`` (None: ADK's pooling) can let a case pass that failed before.

    Between two rules: unless the new one passes a case with at most the old one's probability for every per-run
    pass rate (2/3 → 3/3 tightens; 2/3 → 1/1 loosens at high pass rates). From pooling, only ``N/N`` (every run
    passes) is as strict; back to pooling, only from a one-run rule."""
    if old == new:
        return False
    if old is None:
        rule = parse_rule(new)
        return rule.k != rule.n
    if new is None:
        return parse_rule(old).n != 1
    before, after = parse_rule(old), parse_rule(new)
    return any(after.pass_probability(i / 200) > before.pass_probability(i / 200) + 1e-9 for i in range(1, 200))


def _decide(passed: int, unknown: int, rule: PassRule) -> Status | None:
    """passed when k runs passed; None when the unknown runs could still make it (keep the pooled status)."""
    if passed >= rule.k:
        return "passed"
    return None if passed + unknown >= rule.k else "failed"


def _metric(metric: MetricResult, rule: PassRule) -> None:
    runs = metric.details.get("runs") if isinstance(metric.details, Mapping) else None
    if metric.threshold is None or metric.status not in ("passed", "failed", "error") or not isinstance(runs, list):
        return
    statuses = {r.get("run"): r.get("status") for r in runs if isinstance(r, Mapping)}
    first = [statuses.get(i) for i in range(1, rule.n + 1)]
    status = _decide(first.count("passed"), first.count("error"), rule)
    if status is not None:
        metric.status = status


def initial_runs(case: CaseResult) -> str | None:
    """The case's runs before any rerun (None: the case was run once, or not at all)."""
    if case.runs is None:
        return None
    return case.runs[: len(case.runs) - case.reruns]


def decide_case(case: CaseResult, rule: PassRule) -> bool:
    """Decide ``case`` by ``rule`` from its first runs (False: it has not exactly N of them; left as it is)."""
    runs = initial_runs(case)
    if case.status == "informational":
        return True  # nothing gated on it: no run can pass or fail
    if runs is None:
        if case.status not in ("passed", "failed"):
            return True  # never run (it did not load) or not scored: its own reason says why
        runs = "P" if case.status == "passed" else "F"
    if len(runs) != rule.n:
        return False
    status = _decide(runs.count("P"), runs.count("E") + runs.count("N"), rule)
    if status is None:
        status = "error" if "E" in runs else "not_evaluated"
    case.status = status
    for metric in case.metrics.values():
        _metric(metric, rule)
    return True


def apply_pass_rules(report: Report, rules: Mapping[str, str] | None) -> Report:
    """Decide every case of the eval sets ``rules`` covers from its runs (in place; returns ``report``).

    A case with another number of runs than the rule's N is left as pooled and named in an error on its eval set
    (the run is invalid input: exit 2). Eval set statuses, criterion summaries and totals follow."""
    if not rules:
        return report
    for es in report.eval_sets:
        rule = rule_for(rules, es.eval_set_id)
        if rule is None:
            continue
        es.pass_rule = rule.text
        es.errors = [p for p in es.errors if not p.message.startswith(PROBLEM_PREFIX)]
        wrong = [case for case in es.cases if not decide_case(case, rule)]
        if wrong:
            es.errors.append(Problem(path=es.path, message=_mismatch(rule, wrong)))
        _refresh(es)
    report.totals = totals(report.eval_sets)
    return report


def _refresh(es: EvalSetReport) -> None:
    es.metrics = summarize_cases(es.cases)
    es.status = "error" if es.errors else case_status([c.status for c in es.cases]) if es.cases else es.status


def _mismatch(rule: PassRule, wrong: list[CaseResult]) -> str:
    named = ", ".join(f"{printable(c.eval_id[:80])} ({len(initial_runs(c) or 'x')} run(s))" for c in wrong[:5])
    more = f" and {len(wrong) - 5} more" if len(wrong) > 5 else ""
    return (f"{PROBLEM_PREFIX}{rule.text} decides a case from exactly {rule.n} run(s) of the agent, but "
            f"{len(wrong)} case(s) have another number: {named}{more}. Run the agent with --num-runs {rule.n} (or "
            f"record {rule.n} runs: evalbot run --num-runs {rule.n} --record RUN.json), or change pass_rule")
