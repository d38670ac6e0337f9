"""``evalbot judge-diff EVALS --actuals RUN --judge-model NEW``: the same recorded runs judged by the configured judge
and by ``NEW``, and per judged criterion how many verdicts agree and which cases flip: the tool a team uses to move
off a retired judge model. Exit 0 whatever it finds (2 for bad input); nothing is written unless ``--report``.

Each side is a whole run through the pipeline with its own judge stack (cache, retries, limits, budget); ``NEW``
replaces the model of every request an LLM-judged criterion makes (``ModelSwap``), so each criterion keeps its
prompts, samples and config. A verdict is one invocation's (or the case's, without per-invocation verdicts); it
agrees when both sides gave the same status, flips when one passed and the other failed, and is counted apart when
either side could not give one (not_evaluated or error).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import evalbot.cli.args as cli_args
import evalbot.cli.groups as cli_groups
from evalbot import pipeline
from evalbot.cli.evaluate import add_eval_args, flag_budget, judge_context, run_policy, write_text
from evalbot.criteria.base import BuildContext
from evalbot.errors import EXIT_INVALID_INPUT, EXIT_OK, ConfigError
from evalbot.formats.prices import JudgeBudget, PriceTable
from evalbot.judges.base import EvaluationService, JudgeReply, JudgeRequest, RunJudge, Usage
from evalbot.results import JudgeUsage, Report

EXAMPLES = """\
  # the example's recorded run judged by its configured judge and by gemini-2.5-pro, verdict by verdict (exit 0)
  evalbot judge-diff examples/evals --actuals examples/runs/pr.json --judge-model gemini-2.5-pro
"""
MAX_LISTED = 50
"""Flipped cases printed per criterion (all of them go to --report)."""


class ModelSwap:
    """The run's judge with every request's model replaced by ``model`` (a RunJudge)."""

    def __init__(self, inner: RunJudge, model: str) -> None:
        self.inner = inner
        self.model = model

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Ask ``model`` instead of the configured one."""
        return await self.inner.generate(replace(request, model=self.model))

    @property
    def notes(self) -> Sequence[str]:
        """The judge setup's notes."""
        return self.inner.notes

    @property
    def vertex_service(self) -> EvaluationService | None:
        """The Vertex AI evaluation service (not an LLM judge: the same on both sides)."""
        return self.inner.vertex_service

    @property
    def vertex_unavailable(self) -> str | None:
        """Why there is no Vertex AI evaluation service."""
        return self.inner.vertex_unavailable

    def cap_requests(self, limit: int, why: str) -> None:
        """The run-wide cap."""
        self.inner.cap_requests(limit, why)

    def set_budget(self, budget: JudgeBudget | None, what: str = "") -> None:
        """The judge budget."""
        self.inner.set_budget(budget, what)

    def set_prices(self, prices: PriceTable) -> None:
        """The price table."""
        self.inner.set_prices(prices)

    def usage_summary(self) -> JudgeUsage:
        """The usage of ``model``."""
        return self.inner.usage_summary()

    def estimated_cost(self, usage: Usage, model: str) -> float | None:
        """Dollars at the table's price of ``model``."""
        return self.inner.estimated_cost(usage, self.model)


@dataclass
class CriterionDiff:
    """One judged criterion's verdicts on both sides."""

    verdicts: int = 0
    agree: int = 0
    unmeasured: int = 0
    flips: list[dict[str, Any]] = field(default_factory=list)


def _verdicts(report: Report) -> Iterator[tuple[tuple[str, str, str, int], str]]:
    """((eval set, case, criterion, verdict index), status) of every judged verdict of ``report``."""
    for es in report.eval_sets:
        judged = {c.name for c in es.criteria if c.judged}
        for case in es.cases:
            for name, metric in case.metrics.items():
                if name not in judged:
                    continue
                rows: list[str] = [v.status for v in metric.per_invocation if v.status != "informational"]
                rows = rows or [metric.status]
                for index, status in enumerate(rows):
                    yield (es.eval_set_id, case.eval_id, name, index), status


def diff(configured: Report, new: Report) -> dict[str, CriterionDiff]:
    """Per judged criterion, the verdicts of both reports compared (see the module's docstring)."""
    theirs = dict(_verdicts(new))
    out: dict[str, CriterionDiff] = {}
    for key, status in _verdicts(configured):
        other = theirs.get(key)
        row = out.setdefault(key[2], CriterionDiff())
        row.verdicts += 1
        if other is None or {status, other} - {"passed", "failed"}:
            row.unmeasured += 1
        elif status == other:
            row.agree += 1
        else:
            row.flips.append({"eval_set": key[0], "case": key[1], "verdict": key[3] + 1, "configured": status,
                              "new": other})
    return out


def diff_text(rows: Mapping[str, CriterionDiff], configured: str, new: str) -> str:
    """What ``judge-diff`` prints."""
    lines = [f"judge-diff: the configured judge ({configured}) and {new} on the same runs"]
    if not rows:
        lines.append("no judged criterion ran: nothing to compare")
    for name, row in rows.items():
        measured = row.verdicts - row.unmeasured
        unmeasured = f", {row.unmeasured} not measured on one side" if row.unmeasured else ""
        lines.append(f"{name}: {row.agree} of {measured} verdict(s) agree, {len(row.flips)} flip{unmeasured}")
        for flip in row.flips[:MAX_LISTED]:
            lines.append(f"  {flip['eval_set']} / {flip['case']} (verdict {flip['verdict']}): "
                         f"{flip['configured']} → {flip['new']}")
        if len(row.flips) > MAX_LISTED:
            lines.append(f"  … and {len(row.flips) - MAX_LISTED} more (--report lists them all)")
    return "\n".join(lines)


def _configured(report: Report) -> str:
    rows = report.usage.per_criterion.values() if report.usage is not None else []
    return ", ".join(sorted({m for row in rows for m in row.models})) or "the configured model"


def add_parser(sub: Any) -> None:
    """Register ``judge-diff`` on the ``evalbot`` subparsers."""
    parser = cli_groups.command(sub, "judge-diff", help="judge the same recorded runs with the configured judge and "
                                "another model; print, per judged criterion, how many verdicts agree and which cases "
                                "flip", examples=EXAMPLES)
    add_eval_args(parser)
    cli_groups.group(parser, cli_groups.JUDGE).add_argument(
        "--judge-model", required=True, metavar="MODEL", type=cli_args.model_name,
        help="the model to compare the configured judge with (every LLM-judged criterion asks it instead)")
    cli_groups.group(parser, cli_groups.OUTPUTS).add_argument(
        "--report", type=cli_args.output_file, metavar="OUT.json",
        help="write the comparison as JSON here (every flipped verdict); nothing is written without it")


def _side(args: argparse.Namespace, env: Mapping[str, str], inputs: pipeline.Inputs, model: str | None) -> Report:
    policy = run_policy(args, inputs)
    ctx: BuildContext = pipeline.with_costs(judge_context(args, env, policy.sampling), policy, flag_budget(args))
    if ctx.judge is not None and model is not None:
        ctx = replace(ctx, judge=ModelSwap(ctx.judge, model))
    return pipeline.evaluate(inputs, actuals=args.actuals, ctx=ctx, shard=args.shard)


def cmd_judge_diff(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot judge-diff``."""
    if args.estimate:
        raise ConfigError("judge-diff sends each judged request twice (the configured model and --judge-model): "
                          "estimate one side with `evalbot run PATHS --actuals RUN --estimate`")
    inputs = pipeline.load_inputs(args.paths, config=args.config)
    if not args.actuals:
        raise ConfigError("judge-diff judges recorded runs: give them with --actuals FILE")
    configured = _side(args, env, inputs, None)
    if configured.errors:  # an unreadable input: nothing to compare (the same on both sides)
        for problem in configured.errors[:20]:
            print(f"error: {' '.join(x for x in (problem.path, problem.pointer, problem.message) if x)}",
                  file=sys.stderr)
        return EXIT_INVALID_INPUT
    new = _side(args, env, inputs, args.judge_model)
    rows = diff(configured, new)
    print(diff_text(rows, _configured(configured), args.judge_model))
    if args.report:
        data = {"configured": _configured(configured), "new": args.judge_model,
                "criteria": {name: {"verdicts": r.verdicts, "agree": r.agree, "not_measured": r.unmeasured,
                                    "flips": r.flips} for name, r in rows.items()}}
        write_text(args.report, json.dumps(data, indent=2, ensure_ascii=False) + "\n", "--report")
    return EXIT_OK
