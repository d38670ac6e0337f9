"""Error types that say where the problem is, the process exit codes, and the one retry policy of transient
failures (the judge's and GitHub's)."""

from __future__ import annotations

import difflib
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

EXIT_OK = 0
"""Every case passed (or the gate let the run through)."""
EXIT_FAILED = 1
"""Some case failed, or the comparison gate found a regression."""
EXIT_INVALID_INPUT = 2
"""Invalid command line, configuration or input files; nothing could be scored."""
EXIT_UNAVAILABLE = 3
"""GitHub or the judge were unavailable after retries in a way that prevents a verdict."""
EXIT_INTERNAL = 70
"""A bug in evalbot."""


def json_pointer(loc: Sequence[str | int]) -> str:
    """RFC 6901 pointer for a pydantic ``loc`` tuple (``~`` and ``/`` escaped)."""
    parts = [str(p).replace("~", "~0").replace("/", "~1") for p in loc]
    return "/" + "/".join(parts) if parts else ""


def printable(text: str) -> str:
    """``text`` with lone surrogates (a JSON ``"\\ud800"`` escape, a file name's non-UTF-8 byte) written as
    backslash escapes, so that it can be printed, hashed and posted."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def did_you_mean(key: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when a known key is close to ``key``, else ""."""
    close = difflib.get_close_matches(key.lower(), sorted(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_key_notice(where: str, key: str, known: Iterable[str], effect: str) -> str:
    """A notice about an unknown key: where it is, a suggestion when a known key is close, and what happens."""
    return printable(f"{where}: unknown key {key!r}{did_you_mean(key, known)}; {effect}")


class EvalbotError(Exception):
    """Base class of every error evalbot reports to the user."""


class InputError(EvalbotError):
    """A file could not be used: names the file, the JSON pointer and what was expected."""

    def __init__(self, path: Path | str, pointer: str, message: str) -> None:
        self.path = printable(str(path))
        self.pointer = printable(pointer)
        self.message = printable(message)
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = f"{self.path}:{self.pointer}" if self.pointer else self.path
        return f"{where}: {self.message}"


class ConfigError(EvalbotError):
    """A criterion or option in the evaluation config is invalid."""


@dataclass(frozen=True)
class RetryPolicy:
    """How evalbot retries a service's transient failures: the judge's (408/429/5xx, timeouts; ``judges/retry``)
    and GitHub's (5xx, rate limits; ``forge/pygithub``). One policy, one set of defaults, for both.

    Retry ``n`` (from 1) waits up to ``backoff(n)`` = ``base_delay * 2**(n-1)``, capped at ``max_delay``: the judge
    waits a random time below it ("full jitter", ``delay``) but never less than the service's ``Retry-After``
    (itself capped at ``max_retry_after``); GitHub's client waits ``backoff(n)`` itself, or the rate limit's reset,
    and gives up rather than wait longer than ``max_wait``.
    """

    attempts: int = 6
    """Tries in all, the first included (``retries`` = ``attempts - 1``)."""
    timeout_attempts: int = 2
    """Judge: tries of a call that keeps timing out, so a judge that accepts connections and never answers costs
    one timeout and one retry per call, not ``attempts`` of them."""
    base_delay: float = 1.0
    """Seconds before the first retry; doubled for each next one."""
    max_delay: float = 30.0
    """Cap of the doubled delay."""
    max_retry_after: float = 120.0
    """Judge: the longest ``Retry-After`` honoured (a longer one is cut to this)."""
    rate_limit_wait: float = 60.0
    """GitHub: wait after a secondary rate limit answered without ``Retry-After`` (GitHub asks for a minute)."""
    max_wait: float = 300.0
    """GitHub: give up rather than wait longer than this for a rate limit to reset."""

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.timeout_attempts < 1:
            raise ValueError("a retry policy needs at least one attempt")

    @property
    def retries(self) -> int:
        """Retries after the first try."""
        return self.attempts - 1

    def backoff(self, attempt: int) -> float:
        """The longest wait after failed try number ``attempt`` (1-based): ``base_delay * 2**(attempt-1)``,
        capped at ``max_delay``."""
        return float(min(self.max_delay, self.base_delay * (2 ** (attempt - 1))))

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds a judge call waits after failed try ``attempt``: uniform in ``[0, backoff(attempt)]``, but no
        less than ``retry_after`` (capped at ``max_retry_after``)."""
        wait = rng.uniform(0.0, self.backoff(attempt))
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_retry_after))
        return wait
