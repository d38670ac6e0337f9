"""Progress of a run: the one callback type every stage reports to, and its one-line terminal display (never in CI
logs or pipes)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

Progress = Callable[[int, int], None]
"""Called with (units done, units in total): cases scored, or case runs of the agent."""


class TerminalProgress:
    """Redraws ``evalbot: 37/120 cases (30%) · 12 s · ~28 s left`` in place, once the run has lasted ``delay`` s.

    Short runs print nothing at all; redraws are rate-limited; :meth:`close` erases the line so the summary that
    follows starts on a clean line.
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        delay: float = 2.0,
        interval: float = 0.2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._delay = delay
        self._interval = interval
        self._clock = clock
        self._start: float | None = None
        self._last_draw: float | None = None
        self._width = 0

    def __call__(self, done: int, total: int) -> None:
        """Record progress; draw it if the run is long enough and the last redraw is old enough (or it finished)."""
        now = self._clock()
        if self._start is None:
            self._start = now
        elapsed = now - self._start
        if elapsed < self._delay or total <= 0:
            return
        if self._last_draw is not None and now - self._last_draw < self._interval and done < total:
            return
        self._last_draw = now
        self._draw(line(done, total, elapsed))

    def _draw(self, text: str) -> None:
        pad = " " * max(0, self._width - len(text))
        self._stream.write(f"\r{text}{pad}")
        self._stream.flush()
        self._width = len(text)

    def close(self) -> None:
        """Erase the progress line if one was drawn."""
        if self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0


def line(done: int, total: int, elapsed: float) -> str:
    """The progress text: counts, percentage, elapsed time and, once something is done, an estimate of the rest."""
    pct = 100 * done // total if total else 100
    text = f"evalbot: {done}/{total} cases ({pct}%) · {elapsed:.0f} s"
    if 0 < done < total:
        text += f" · ~{elapsed * (total - done) / done:.0f} s left"
    return text


def terminal_progress(stream: TextIO) -> TerminalProgress | None:
    """A TerminalProgress when ``stream`` is an interactive terminal, else None (logs and pipes stay clean)."""
    isatty = getattr(stream, "isatty", None)
    return TerminalProgress(stream) if callable(isatty) and isatty() else None

