"""Argument checks of the command line: every flag's value is validated while argv is parsed, before any work.

A wrong value ends the run with exit code 2 and one line naming the flag and what it accepts (``Parser.error``);
the same checks (``check_*``) serve the Action's inputs, which name the input instead of the flag.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import NoReturn

from evalbot.errors import EXIT_INVALID_INPUT
from evalbot.paths import problem_with_comment_id, problem_with_directory, problem_with_input, problem_with_output
from evalbot.results import MAX_SHARDS
from evalbot.shard.partition import Shard

_AGENT_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_PRINTABLE = re.compile(r"^[^\s\x00-\x1f\x7f]+$")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (no usage block) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INVALID_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _fail(message: str) -> NoReturn:
    raise argparse.ArgumentTypeError(message)


def integer(low: int, high: int) -> Callable[[str], int]:
    """An integer in ``low..high``."""

    def parse(raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            _fail(f"expected an integer from {low} to {high}, got {raw!r}")
        if not low <= value <= high:
            _fail(f"expected an integer from {low} to {high}, got {raw!r}")
        return value

    parse.__name__ = "integer"
    return parse


def budget(high: int) -> Callable[[str], int]:
    """A budget: 0 (nothing may be spent) to ``high``."""
    parse = integer(0, high)
    parse.__name__ = "budget"
    return parse


def extra_samples(high: int) -> Callable[[str], int]:
    """A number of extra judge samples, 0 (none) to ``high``."""
    parse = integer(0, high)
    parse.__name__ = "extra_samples"
    return parse


def number(low: float, high: float, *, low_open: bool = False, high_open: bool = False,
           what: str = "a number") -> Callable[[str], float]:
    """A finite number in ``low..high`` (a bound itself excluded when ``low_open`` / ``high_open``)."""
    bound = (f"{'greater than' if low_open else 'at least'} {low:g} and {'below' if high_open else 'at most'} "
             f"{high:g}")

    def parse(raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            _fail(f"expected {what} {bound}, got {raw!r}")
        if (not math.isfinite(value) or value > high or value < low or (low_open and value == low)
                or (high_open and value == high)):
            _fail(f"expected {what} {bound}, got {raw!r}")
        return value

    parse.__name__ = "number"
    return parse


def _checked(raw: str, problem: str | None) -> str:
    """``raw`` when a paths check found no problem; otherwise the one-line argparse error naming it."""
    if problem:
        _fail(problem)
    return raw


def model_name(raw: str) -> str:
    """A judge model name: printable, without spaces, at most 200 characters."""
    name = raw
    if not name or len(name) > 200 or any(not c.isprintable() or c.isspace() for c in name):
        _fail(f"expected a model name (printable, no spaces, at most 200 characters), got {raw[:60]!r}")
    return name


def output_file(raw: str) -> str:
    """A file path the run can write (not a directory, not under a file)."""
    return _checked(raw, problem_with_output(raw))


def input_file(raw: str) -> str:
    """An existing regular file."""
    return _checked(raw, problem_with_input(raw))


def loaded_file(raw: str) -> str:
    """A file the loader reads (``--actuals``, ``--config``): refused here only when empty; a missing file, a
    directory or a FIFO is refused by the loader with its path (an unusable --actuals file is an error of the run,
    reported next to the results of the rest)."""
    if not raw.strip():
        _fail("expected a file path, got an empty value")
    return raw


def directory(raw: str) -> str:
    """A directory that exists or can be created."""
    return _checked(raw, problem_with_directory(raw))


def eval_path(raw: str) -> str:
    """An eval set file, directory or glob (existence is checked by discovery, which reports each path)."""
    if not raw.strip():
        _fail("expected an eval set file, directory or glob, got an empty value")
    return raw


def baseline_spec(raw: str) -> str:
    """``FILE`` or ``REF:PATH``; a directory is refused."""
    if not raw.strip():
        _fail("expected a baseline file or REF:PATH, got an empty value")
    if os.path.isdir(raw):  # never raises (a name too long for the system is no directory)
        _fail(f"{raw!r} is a directory; give the baseline file (e.g. .evalbot/baseline.json) or REF:PATH")
    return raw


def accept_entry(raw: str) -> tuple[str, str]:
    """``SET/CASE``, ``SET/*`` or ``SET/*/CRITERION`` (an eval set's key, then a case id, ``*`` for the whole eval set,
    or ``*/`` and one criterion's name for that criterion's definition only)."""
    key, sep, case = raw.partition("/")
    if not sep or not key.strip() or not case.strip() or (case.startswith("*/") and not case[2:].strip()):
        _fail(f"expected SET/CASE, SET/* or SET/*/CRITERION (an eval set id, then a case id, * for the whole eval "
              f"set, or */ and a criterion's name), got {raw!r}")
    return key, case


def agent_ref(raw: str) -> str:
    """``module:callable`` (dotted names)."""
    if not _AGENT_REF.fullmatch(raw.strip()):
        _fail(f"expected MODULE:CALLABLE such as my_agent.app:run, got {raw!r}")
    return raw.strip()


def adk_agent(raw: str) -> str:
    """An ADK agent package directory or a dotted module name."""
    value = raw.strip()
    if not value:
        _fail("expected an ADK agent package directory or module name, got an empty value")
    path = Path(value)
    if path.exists() and not path.is_dir():
        _fail(f"{raw!r} is not a directory; give the agent package directory (with agent.py) or a module name")
    return value


def commit(raw: str) -> str:
    """A commit id: one word of printable characters."""
    if not _PRINTABLE.fullmatch(raw) or len(raw) > 100:
        _fail(f"expected a commit sha (one word, at most 100 characters), got {raw!r}")
    return raw


def git_ref(raw: str) -> str:
    """A branch, tag or commit for git: one word of printable characters, never starting with ``-`` (git would read
    it as an option)."""
    if not _PRINTABLE.fullmatch(raw) or raw.startswith("-") or len(raw) > 1000:
        _fail(f"expected a branch, tag or commit such as origin/main (one word, not starting with '-'), got {raw!r}")
    return raw


def timestamp(raw: str) -> str:
    """An ISO 8601 timestamp."""
    try:
        datetime.fromisoformat(raw.strip())
    except ValueError:
        _fail(f"expected an ISO 8601 timestamp such as 2025-06-01T00:00:00+00:00, got {raw!r}")
    return raw.strip()


def comment_id(raw: str) -> str:
    """The id written in the comment's hidden marker."""
    problem = problem_with_comment_id(raw)
    if problem:
        _fail(problem)
    return raw


def shard(raw: str) -> Shard:
    """``K/N``: job K of N of a sharded run (``1 <= K <= N``)."""
    try:
        return Shard.parse(raw)
    except ValueError as exc:
        _fail(str(exc))


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity where the system has one, else ``os.cpu_count()``)."""
    affinity = getattr(os, "sched_getaffinity", None)
    try:
        count = len(affinity(0)) if affinity is not None else os.cpu_count()
    except OSError:  # a system that refuses the query: what the machine has
        count = os.cpu_count()
    return max(1, count or 1)


def jobs(raw: str) -> int:
    """``auto`` (one per available CPU, ``available_cpus``) or a number of processes, 1 to MAX_SHARDS."""
    if raw.strip().lower() == "auto":
        return min(available_cpus(), MAX_SHARDS)
    try:
        value = int(raw.strip())
    except ValueError:
        _fail(f"expected auto (one per CPU) or a number of processes from 1 to {MAX_SHARDS}, got {raw!r}")
    if not 1 <= value <= MAX_SHARDS:
        _fail(f"expected auto (one per CPU) or a number of processes from 1 to {MAX_SHARDS}, got {raw!r}")
    return value
