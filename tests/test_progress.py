"""The terminal progress line: silent for short runs and non-terminals, rate-limited, erased at the end."""

from __future__ import annotations

import io

from evalbot.progress import TerminalProgress, line, terminal_progress


class Clock:
    """A manual clock."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Tty(io.StringIO):
    """A StringIO that claims to be a terminal."""

    def isatty(self) -> bool:
        return True


def test_line_text() -> None:
    """Counts, percentage, elapsed and an estimate of the remaining time."""
    assert line(30, 120, 12.0) == "evalbot: 30/120 cases (25%) · 12 s · ~36 s left"
    assert line(0, 10, 3.0) == "evalbot: 0/10 cases (0%) · 3 s"
    assert line(10, 10, 3.0) == "evalbot: 10/10 cases (100%) · 3 s"


def test_short_run_prints_nothing() -> None:
    """Before ``delay`` seconds nothing is drawn, and close() then writes nothing either."""
    out, clock = io.StringIO(), Clock()
    bar = TerminalProgress(out, delay=2.0, clock=clock)
    bar(0, 5)
    clock.now += 1.5
    bar(5, 5)
    bar.close()
    assert out.getvalue() == ""


def test_long_run_redraws_in_place_rate_limited_and_clears() -> None:
    """After the delay the line is redrawn with '\\r' at most every ``interval``; the final state always shows."""
    out, clock = io.StringIO(), Clock()
    bar = TerminalProgress(out, delay=2.0, interval=0.5, clock=clock)
    bar(0, 4)
    clock.now += 3
    bar(1, 4)
    clock.now += 0.1
    bar(2, 4)  # too soon: skipped
    clock.now += 0.1
    bar(4, 4)  # finished: always drawn
    written = out.getvalue()
    assert written.count("\r") == 2
    assert "evalbot: 1/4 cases (25%) · 3 s · ~9 s left" in written and "2/4" not in written
    assert written.rstrip(" ").endswith("\revalbot: 4/4 cases (100%) · 3 s")
    bar.close()
    assert out.getvalue().endswith("\r" + " " * len("evalbot: 4/4 cases (100%) · 3 s") + "\r")


def test_shorter_line_pads_over_the_longer_one() -> None:
    """A shorter redraw is padded with spaces so no stale characters remain."""
    out, clock = io.StringIO(), Clock()
    bar = TerminalProgress(out, delay=0, interval=0, clock=clock)
    bar(1, 1000)
    first = out.getvalue()
    bar(1000, 1000)
    second = out.getvalue()[len(first):]
    assert len(second) == len(first) and second.rstrip(" ") == "\revalbot: 1000/1000 cases (100%) · 0 s"


def test_only_terminals_get_a_display() -> None:
    """Pipes and files (CI logs) get no progress display; terminals do."""
    assert terminal_progress(io.StringIO()) is None
    assert isinstance(terminal_progress(Tty()), TerminalProgress)
