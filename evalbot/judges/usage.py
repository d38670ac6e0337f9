"""Judge token usage per criterion, per model and in total, with an estimated cost from list prices.

``UsageLedger.summary()`` returns the typed ``results.JudgeUsage`` that becomes ``Report.usage``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalbot.formats.prices import PriceTable, shipped_prices
from evalbot.judges.base import Judge, JudgeReply, JudgeRequest, Usage
from evalbot.results import CriterionUsage, JudgeUsage, UsageRow, plus_cost


def estimated_cost(usage: Usage, model: str, prices: PriceTable | None = None) -> float | None:
    """Estimated USD cost of ``usage`` on ``model`` from ``prices`` (default: the shipped table), or None when the
    model's price is unknown."""
    return (prices or shipped_prices()).cost(model, usage.input_tokens, usage.output_tokens)


def usage_dict(usage: Usage, model: str | None = None) -> dict[str, Any]:
    """JSON form of a usage record (cost only when the model is known)."""
    out: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "requests": usage.requests,
        "cached_samples": usage.cached_samples,
        "saved_samples": usage.saved_samples,
        "extra_requests": usage.extra_requests,
    }
    if model is not None:
        out["model"] = model
        out["estimated_cost_usd"] = estimated_cost(usage, model)
    return out


@dataclass
class UsageLedger:
    """Usage recorded per (criterion, model); ``unpriced`` names the models whose list price does not apply (e.g.
    every model of a self-hosted server reached through OPENAI_BASE_URL): their cost is unknown."""

    entries: dict[tuple[str, str], Usage] = field(default_factory=dict)
    served: dict[str, list[str]] = field(default_factory=dict)
    """Per criterion, the models the service named in its answers, each once (at most 20)."""
    unpriced: Callable[[str], bool] = field(default=lambda model: False)
    prices: PriceTable = field(default_factory=shipped_prices)
    """The price table (the shipped one, extended by the gate policy's ``prices``: set by the front ends)."""

    def cost(self, usage: Usage, model: str) -> float | None:
        """Dollars for ``usage`` on ``model``, None when its price is unknown or does not apply (``unpriced``)."""
        return None if self.unpriced(model) else estimated_cost(usage, model, self.prices)

    def record(self, purpose: str, model: str, usage: Usage, served: str | None = None) -> None:
        """Add one reply's usage (and the model that served it)."""
        key = (purpose or "(unnamed)", model)
        self.entries[key] = self.entries.get(key, Usage()) + usage
        names = self.served.setdefault(key[0], [])
        for name in (served or "").split(" + "):
            if name and name not in names and len(names) < 20:
                names.append(name)

    def summary(self) -> JudgeUsage:
        """The typed usage report: rows per criterion and per model, the total, estimated costs (None when a
        model's price is unknown) and where the prices come from; ``cache`` and ``retries`` are left to the stack."""
        per_criterion: dict[str, CriterionUsage] = {}
        per_model: dict[str, UsageRow] = {}
        total = UsageRow(estimated_cost_usd=0.0)
        for (purpose, model), usage in sorted(self.entries.items()):
            cost = self.cost(usage, model)
            for row in (per_criterion.setdefault(purpose, CriterionUsage(estimated_cost_usd=0.0)),
                        per_model.setdefault(model, UsageRow(estimated_cost_usd=0.0)), total):
                row.add_counts(usage)
                row.estimated_cost_usd = plus_cost(row.estimated_cost_usd, cost)
            per_criterion[purpose].models.append(model)
            per_criterion[purpose].served = list(self.served.get(purpose, []))
        return JudgeUsage(per_criterion=per_criterion, total=total, prices=self.prices.note(), per_model=per_model)


class MeteredJudge:
    """Records the usage of every reply of ``inner`` in ``ledger``."""

    def __init__(self, inner: Judge, ledger: UsageLedger | None = None) -> None:
        self.inner = inner
        self.ledger = ledger if ledger is not None else UsageLedger()

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Pass the request on and book its usage."""
        reply = await self.inner.generate(request)
        self.ledger.record(request.purpose, request.model, reply.usage, reply.served)
        return reply


def format_usage(summary: JudgeUsage) -> str:
    """One line per criterion and a total, for the CLI (``RunJudge.usage_summary()`` as input), and what the
    adaptive concurrency limit did when the judge rate limited the run."""

    def line(name: str, row: CriterionUsage | UsageRow) -> str:
        cost = row.estimated_cost_usd
        money = f"~${cost:.4f}" if cost is not None else "cost unknown (unpriced model)"
        sequential = f", {row.saved_samples} samples saved by sequential sampling" if row.saved_samples else ""
        return (f"{name}: {row.requests} requests, {row.input_tokens:,} input + {row.output_tokens:,} "
                f"output tokens, {row.cached_samples} answers from cache{sequential}, {money}")

    rows = [line(name, row) for name, row in summary.per_criterion.items()]
    rows.append(line("judge total", summary.total))
    if summary.concurrency is not None:
        rows.append(summary.concurrency.note())
    return "\n".join(rows)
