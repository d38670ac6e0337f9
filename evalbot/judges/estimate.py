"""``--estimate``: what a run would ask the judge, counted without sending anything.

The run is scored with ``EstimatingJudge`` as its judge: every judged criterion builds its prompts as in a real run,
and each request is noted and refused (its verdict is not_evaluated; the report is not written). From the notes:

- requests, for ``full`` sampling (all ``num_samples`` at once: one request per batch of ``MAX_BATCH`` candidates)
  and for ``sequential`` sampling (the first round, and at most a second one with the rest), as the judge honours
  ``candidate_count``; and ``at most``: a model refusing it asks each sample apart, after one refused request;
- input tokens: about one per four bytes of the prompts (``≈``), never more than their bytes plus the chat format's
  (``≤``, the bound the judge budget reserves);
- output tokens, at most ``max_output_tokens`` (else 65,536) per sample;
- dollars at the price table's price: ``≈`` the input's, ``≤`` the worst case (a model without a price: unknown).

With a judge cache (``--judge-cache`` or ``EVALBOT_JUDGE_CACHE``), the samples it holds and would replay are answered
from it, as in a real run, and counted apart (they cost nothing); only the missing ones are counted as requests.

Not counted: retries of failed calls (each is a request too, and counts against a judge budget); the extra samples
that settle a split vote that flipped (``resample_split``); hallucinations_v1's validation request, whose prompt is
built from the judge's first answer (counted as one more request with the segmentation prompt's tokens: an estimate,
not a bound); the Vertex AI evaluation service.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalbot.formats.prices import JudgeBudget, PriceTable, shipped_prices
from evalbot.judges.base import EvaluationService, JudgeError, JudgeReply, JudgeRequest, Usage
from evalbot.judges.budget import OVERHEAD_TOKENS, worst_case_tokens
from evalbot.judges.cache import DiskCache, cache_key
from evalbot.judges.sampling import MAX_BATCH
from evalbot.results import JudgeUsage

NOT_SENT = "--estimate: not sent (the run's requests are only counted)"
TWO_STEP = frozenset({"hallucinations_v1"})
"""Criteria whose every request is followed by one more, built from its answer."""


@dataclass(frozen=True)
class Asked:
    """One request a criterion made."""

    model: str
    purpose: str
    prompt_bytes: int
    samples: int
    first_round: int
    max_output: int


@dataclass
class EstimatingJudge:
    """A RunJudge that notes every request and sends none."""

    asked: list[Asked] = field(default_factory=list)
    prices: PriceTable = field(default_factory=shipped_prices)
    notes: Sequence[str] = ()
    vertex_service: EvaluationService | None = None
    vertex_unavailable: str | None = "--estimate does not count the Vertex AI evaluation service's requests"
    cache: DiskCache | None = None
    """The run's judge cache: the samples it would replay are answered from it and counted in ``cached``."""
    cached: int = 0

    async def generate(self, request: JudgeRequest) -> JudgeReply:
        """Answer from the cache when it holds every sample; else note the request (the samples it misses, and how
        many of them are in the first round of sequential sampling) and refuse it."""
        n = max(1, request.num_samples)
        first = request.stop.first_round(n) if request.stop is not None else n
        missing = list(range(n))
        if self.cache is not None:
            texts = self.cache.get(cache_key(request.model, request.config, request.prompt), n, request.first_sample)
            missing = [i for i, text in enumerate(texts) if text is None]
            self.cached += n - len(missing)
            if not missing:
                return JudgeReply(tuple(t or "" for t in texts), Usage(cached_samples=n), n)
        tokens_in, tokens_out = worst_case_tokens(request)
        in_first = sum(1 for i in missing if i < first)
        for _ in range(2 if request.purpose in TWO_STEP else 1):
            self.asked.append(Asked(request.model, request.purpose, tokens_in - OVERHEAD_TOKENS, len(missing),
                                    in_first, tokens_out // n))
        raise JudgeError(NOT_SENT)

    def cap_requests(self, limit: int, why: str) -> None:
        """Nothing is sent: no cap."""

    def set_budget(self, budget: JudgeBudget | None, what: str = "") -> None:
        """Nothing is sent: the budget is not needed."""

    def set_prices(self, prices: PriceTable) -> None:
        """Price the estimate with the policy's table."""
        self.prices = prices

    def usage_summary(self) -> JudgeUsage:
        """Nothing was used."""
        return JudgeUsage()

    def estimated_cost(self, usage: Usage, model: str) -> float | None:
        """Dollars at the table's price."""
        return self.prices.cost(model, usage.input_tokens, usage.output_tokens)


@dataclass(frozen=True)
class Estimate:
    """The counts of one sampling mode: requests expected and at most, tokens, dollars."""

    requests: int
    """Requests when a judge honours candidate_count, every second round included (sequential: an upper bound)."""
    requests_least: int
    """Sequential sampling: the first rounds only (every vote decided by them); full: ``requests``."""
    requests_most: int
    input_tokens: int
    input_tokens_most: int
    output_tokens_most: int
    usd_input: float | None
    usd_most: float | None


def _batches(samples: int) -> int:
    return math.ceil(samples / MAX_BATCH) if samples > 0 else 0


def estimate(asked: Sequence[Asked], prices: PriceTable, sequential: bool) -> Estimate:
    """The requests, tokens and dollars of ``asked`` in one sampling mode (see the module's docstring)."""
    requests = least = most = tin = tin_most = tout = 0
    usd_in: float | None = 0.0
    usd_most: float | None = 0.0
    for a in asked:
        rounds = [a.first_round, a.samples - a.first_round] if sequential and a.first_round < a.samples \
            else [a.samples]
        sent = sum(_batches(r) for r in rounds if r)
        requests += sent
        least += _batches(rounds[0])
        most += a.samples
        prompt_in, prompt_most = math.ceil(a.prompt_bytes / 4), a.prompt_bytes + OVERHEAD_TOKENS
        tin += prompt_in * sent
        tin_most += prompt_most * a.samples
        out = a.max_output * a.samples
        tout += out
        price = prices.price(a.model)
        usd_in = None if price is None or usd_in is None else usd_in + price.cost(prompt_in * sent, 0)
        usd_most = None if price is None or usd_most is None else usd_most + price.cost(prompt_most * a.samples, out)
    most += len({a.model for a in asked})  # a model refusing candidate_count: one refused request, then one a sample
    return Estimate(requests, least, max(most, requests), tin, tin_most, tout, usd_in, usd_most)


def _usd(value: float | None) -> str:
    return "unknown (a model without a price)" if value is None else f"{value:.4f} USD"


def estimate_text(asked: Sequence[Asked], prices: PriceTable, cached: int | None = None) -> str:
    """What ``--estimate`` prints (``cached``: samples the judge cache answered; None without a cache)."""
    models = sorted({a.model for a in asked})
    lines = [f"evalbot estimate (nothing was sent): {len(asked):,} judge prompt(s)"
             + (f" on {', '.join(models)}" if models else "")]
    for mode, sequential in (("full", False), ("sequential", True)):
        e = estimate(asked, prices, sequential)
        span = f"{e.requests_least:,} to " if e.requests_least < e.requests else ""
        lines.append(
            f"  {mode} sampling: {span}{e.requests:,} request(s) (at most {e.requests_most:,}), input ≈ {e.input_tokens:,} "
            f"tokens (at most {e.input_tokens_most:,}), output at most {e.output_tokens_most:,} tokens; "
            f"≈ {_usd(e.usd_input)} for the input, at most {_usd(e.usd_most)}")
    if any(a.purpose in TWO_STEP for a in asked):
        lines.append("  hallucinations_v1: each check's second request is built from the judge's first answer: "
                     "counted with the first one's tokens (an estimate)")
    if cached is not None:
        lines.append(f"  the judge cache answers {cached:,} sample(s): not counted above (they cost nothing)")
    lines.append(f"  not counted: retries, settling split votes{'' if cached is not None else ', cached answers'}; "
                 f"prices: {prices.note()}")
    return "\n".join(lines)
