"""A Jinja sandbox whose renders are bounded in time and work: comment templates are repository files.

The base commit's template is trusted not to escape the sandbox (see render.comment), not to be cheap: nested
``range(100000)`` loops, ``"x" * 10**9`` or ``9 ** 9 ** 9`` would render for minutes or exhaust memory. Here:

- a render has a wall-clock budget (``RenderBudget.seconds``), checked at every output expression, attribute or
  item lookup, call, arithmetic operator and every 1,024 items a ``range`` yields, and, on the main thread, by a
  ``SIGALRM`` timer too (a loop over data doing none of these is interrupted all the same);
- ``range`` yields at most ``RenderBudget.range_items`` items over the whole render (Jinja's own limit is 100,000
  per call, not per render);
- ``*`` building a string or list longer than ``RenderBudget.max_length``, and ``**`` with an exponent over 1,000
  or a base over 10**100, are refused before they are computed.

Exceeding any of them raises ``RenderLimit`` (a jinja2 SecurityError) naming the limit.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

CHECK_EVERY = 1024
"""Range items between two clock checks."""


class RenderLimit(SecurityError):
    """A template render went over its time or work budget."""


@dataclass(frozen=True)
class RenderBudget:
    """Limits of one render."""

    seconds: float = 10.0
    range_items: int = 1_000_000
    max_length: int = 1_000_000


class _Clock:
    """The running render's deadline and range allowance (one render at a time per environment)."""

    def __init__(self, budget: RenderBudget) -> None:
        self.budget = budget
        self.deadline = time.monotonic() + budget.seconds
        self.range_left = budget.range_items

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise RenderLimit(f"rendering took longer than {self.budget.seconds:g} s (the limit); the template does "
                              "too much work (nested loops?)")


class BoundedSandbox(ImmutableSandboxedEnvironment):
    """ImmutableSandboxedEnvironment with the budgets of RenderBudget; render through ``render_bounded``."""

    intercepted_binops = frozenset({"*", "**", "+"})

    def __init__(self, *args: Any, budget: RenderBudget | None = None, **kwargs: Any) -> None:
        finalize: Callable[[Any], Any] | None = kwargs.pop("finalize", None)
        super().__init__(*args, finalize=self._finalize, **kwargs)
        self._inner_finalize = finalize
        self.budget = budget or RenderBudget()
        self._clock: _Clock | None = None
        self.globals["range"] = self._range

    def _tick(self) -> None:
        if self._clock is not None:
            self._clock.check()

    def _finalize(self, value: Any) -> Any:
        self._tick()
        return self._inner_finalize(value) if self._inner_finalize is not None else value

    def _range(self, *args: int) -> _Range:
        items = range(*args)
        clock = self._clock
        if clock is not None:
            if len(items) > clock.range_left:
                raise RenderLimit(f"range() would yield more than {clock.budget.range_items:,} items in one render "
                                  "(the limit)")
            clock.range_left -= len(items)
        return _Range(items, self._tick)

    def getattr(self, obj: Any, attribute: str) -> Any:
        self._tick()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        self._tick()
        return super().getitem(obj, argument)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any,
             **kwargs: Any) -> Any:
        __self._tick()
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        self._tick()
        limit = self.budget.max_length
        if operator == "**":
            if (_number(right) and abs(right) > 1000) or (_number(left) and abs(left) > 10 ** 100):
                raise RenderLimit("an exponentiation too large to compute (exponent over 1,000)")
        elif operator == "*":
            for seq, times in ((left, right), (right, left)):
                if isinstance(seq, Sequence) and isinstance(times, int) and len(seq) * times > limit:
                    raise RenderLimit(f"a repeated string or list longer than {limit:,} items (the limit)")
        elif operator == "+" and isinstance(left, Sequence) and isinstance(right, Sequence):
            if len(left) + len(right) > limit:
                raise RenderLimit(f"a concatenation longer than {limit:,} items (the limit)")
        return super().call_binop(context, operator, left, right)


class _Range:
    """A range whose iteration checks the render's clock every CHECK_EVERY items (length, membership and indexing
    as a range's)."""

    def __init__(self, items: range, tick: Callable[[], None]) -> None:
        self._items = items
        self._tick = tick

    def __iter__(self) -> Iterator[int]:
        for i, item in enumerate(self._items):
            if i % CHECK_EVERY == 0:
                self._tick()
            yield item

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, value: object) -> bool:
        return value in self._items

    def __getitem__(self, index: int) -> int:
        return self._items[index]

    def __repr__(self) -> str:
        return repr(self._items)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def render_bounded(env: BoundedSandbox, template: jinja2.Template, context: Any) -> str:
    """``template.render(context)`` within the environment's budget; raises RenderLimit when it is exceeded."""
    clock = _Clock(env.budget)
    env._clock = clock
    try:
        with _alarm(clock):
            return template.render(context)
    finally:
        env._clock = None


@contextlib.contextmanager
def _alarm(clock: _Clock) -> Iterator[None]:
    """On the main thread (where Python delivers signals), a SIGALRM at the deadline raises RenderLimit wherever the
    render is; elsewhere the checks in the environment's hooks alone bound it."""
    usable = threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer")
    if not usable or signal.getitimer(signal.ITIMER_REAL)[0] > 0:  # someone else's timer: leave it alone
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise RenderLimit(f"rendering took longer than {clock.budget.seconds:g} s (the limit); the template does "
                          "too much work (nested loops?)")

    previous = signal.signal(signal.SIGALRM, expired) or signal.SIG_DFL
    signal.setitimer(signal.ITIMER_REAL, clock.budget.seconds + 0.05)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
