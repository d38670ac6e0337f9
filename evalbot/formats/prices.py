"""The price table: US dollars per million tokens by model name, shipped with the package (``evalbot/data/prices.json``,
dated, with its source) and extended by the gate policy's ``prices`` (read at the base commit, like the rest of the
policy).

A model is priced by an entry of its own name, or of its name without a version suffix (``gemini-2.5-flash-001``,
``gpt-4o-2024-08-06``, ``gemini-3-pro-preview``: digits, ``preview``, ``latest``, ``exp`` after the entry's name).
Any other name is unpriced: its cost is unknown (shown as ``unknown`` with its tokens, never as 0); a new model is
never priced as an older one whose name it starts with (``gpt-5.5`` is not ``gpt-5``). Resource paths
(``models/``, ``publishers/google/models/``) and evalbot's ``openai/`` prefix are taken off first; ``azure/<name>``
names a deployment, whose model evalbot cannot know. Pure.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from evalbot.errors import printable

PRICES_FILE = Path(__file__).resolve().parent.parent / "data" / "prices.json"
MAX_ENTRIES = 1_000
"""Most models the policy's ``prices`` may name."""
MAX_PRICE = 10_000.0
"""Highest price per million tokens accepted (a typo of a few digits is refused, not believed)."""
_VERSION = re.compile(r"(?:\d+|preview|latest|exp|experimental)(?:-(?:\d+|preview|latest|exp|experimental))*")
_PATHS = ("publishers/google/models/", "models/", "openai/")


@dataclass(frozen=True)
class Price:
    """USD per million input and output tokens (output includes thinking tokens)."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Dollars for these tokens."""
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


class PricesError(ValueError):
    """An invalid ``prices`` value; ``parts`` is where in it (JSON pointer parts under the key)."""

    def __init__(self, parts: list[str], message: str) -> None:
        super().__init__(message)
        self.parts = parts


def canonical(model: str) -> str:
    """The name prices are looked up by: lower case, without a resource path or evalbot's ``openai/`` prefix."""
    name = model.strip().lower()
    if "/models/" in name and name.startswith("projects/"):
        name = name.rsplit("/models/", 1)[1]
    for prefix in _PATHS:
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name


@dataclass(frozen=True)
class PriceTable:
    """Prices by canonical model name, the table's date and source, and the names the gate policy added."""

    prices: Mapping[str, Price]
    as_of: str
    source: str
    added: tuple[str, ...] = ()

    def price(self, model: str) -> Price | None:
        """The price of ``model``: its own entry, else the entry its name is a version of; None when unpriced."""
        name = canonical(model)
        found = self.prices.get(name)
        if found is not None:
            return found
        best: str | None = None
        for key in self.prices:
            if name.startswith(key + "-") and _VERSION.fullmatch(name[len(key) + 1:]) and (
                    best is None or len(key) > len(best)):
                best = key
        return self.prices[best] if best is not None else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        """Dollars for these tokens on ``model``, or None when its price is unknown (never 0 for unknown)."""
        found = self.price(model)
        return None if found is None else found.cost(input_tokens, output_tokens)

    def extended(self, extra: Mapping[str, Price]) -> PriceTable:
        """This table with ``extra``'s entries added (replacing the shipped price of a model they name)."""
        if not extra:
            return self
        merged = dict(self.prices)
        merged.update({canonical(name): price for name, price in extra.items()})
        return PriceTable(merged, self.as_of, self.source, tuple(sorted({*self.added, *map(canonical, extra)})))

    def note(self) -> str:
        """Where the prices come from, for the report and the comment."""
        added = f"; the gate policy's prices for {len(self.added)} model(s)" if self.added else ""
        return f"evalbot's list prices as of {self.as_of}{added}"


@functools.cache
def shipped_prices() -> PriceTable:
    """The table shipped in the package (read once)."""
    data = json.loads(PRICES_FILE.read_text(encoding="utf-8"))
    entries = {canonical(name): Price(float(p["input"]), float(p["output"]))
               for name, p in data["usd_per_million_tokens"].items()}
    return PriceTable(entries, str(data["as_of"]), str(data["source"]))


def _amount(value: object, parts: list[str]) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or not 0 <= value <= MAX_PRICE:
        raise PricesError(parts, f"a price is a number of US dollars per million tokens, 0 to {MAX_PRICE:,.0f}; "
                                 f"got {printable(json.dumps(value) if _jsonable(value) else repr(value))[:60]}")
    return float(value)


def _jsonable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def parse_prices(raw: object) -> dict[str, Price]:
    """The gate policy's ``prices`` (``{"model": {"input": 0.3, "output": 2.5}}``, USD per million tokens); None or
    ``{}``: none. Raises PricesError naming where it is wrong."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping) and all(isinstance(v, Price) for v in raw.values()):
        return {str(k): v for k, v in raw.items()}
    if not isinstance(raw, Mapping):
        raise PricesError([], 'prices maps model names to {"input": USD, "output": USD} per million tokens')
    if len(raw) > MAX_ENTRIES:
        raise PricesError([], f"prices names {len(raw):,} models; at most {MAX_ENTRIES:,}")
    out: dict[str, Price] = {}
    for name, value in raw.items():
        key = str(name)
        if not key.strip() or len(key) > 200 or printable(key) != key:
            raise PricesError([key], f"model name {printable(key)[:80]!r} is empty, too long or not printable")
        if isinstance(value, Price):
            out[key] = value
            continue
        if not isinstance(value, Mapping) or set(value) != {"input", "output"}:
            raise PricesError([key], f'the price of {key!r} is {{"input": USD, "output": USD}} per million tokens')
        out[key] = Price(_amount(value["input"], [key, "input"]), _amount(value["output"], [key, "output"]))
    return out


class JudgeBudget(BaseModel):
    """``judge_budget``: the most requests and the most US dollars a run may send the judge (None: no limit)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    requests: int | None = Field(default=None, ge=0, le=10**9, strict=True)
    usd: float | None = Field(default=None, ge=0, le=1e6, allow_inf_nan=False)

    def text(self) -> str:
        """``120 requests and 2.50 USD``."""
        parts = ([f"{self.requests:,} request{'' if self.requests == 1 else 's'}"] if self.requests is not None else []) + (
            [f"{self.usd:.2f} USD"] if self.usd is not None else [])
        return " and ".join(parts) or "no limit"

    def share(self, index: int, count: int) -> JudgeBudget:
        """Part ``index``'s (1-based) share over ``count`` parts (a job of ``run --jobs``, a shard): the requests split
        as evenly as whole numbers allow (adding up to the budget), the dollars in equal parts rounded down to a
        micro-dollar (never adding up to more)."""
        requests = self.requests
        share = None if requests is None else requests // count + (1 if index <= requests % count else 0)
        return JudgeBudget(requests=share, usd=None if self.usd is None else math.floor(self.usd / count * 1e6) / 1e6)
