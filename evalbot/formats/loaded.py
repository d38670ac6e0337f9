"""Loaded eval sets and cases: what the format readers produce and scoring consumes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from evalbot.errors import InputError
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import EvalConfig, default_config
from evalbot.formats.lines import CaseLines


class LoadedCase:
    """A parsed case, or the error that prevented parsing it.

    A case of a large eval set file is parsed on first use from its slice of the file's text (``source``), and
    ``release`` forgets the parsed model once the case is scored, so a run holds one case's model at a time.
    """

    __slots__ = ("_case", "_error", "_source", "actual", "eval_id")

    def __init__(
        self,
        eval_id: str,
        case: EvalCase | None = None,
        error: InputError | None = None,
        actual: list[Invocation] | None = None,
        *,
        source: Callable[[], EvalCase] | None = None,
    ) -> None:
        self.eval_id = eval_id
        self.actual = actual  # actual invocations carried by the file itself (Vertex-style datasets)
        self._case, self._error, self._source = case, error, source

    def _parse(self) -> None:
        if self._source is not None and self._case is None and self._error is None:
            try:
                self._case = self._source()
            except InputError as exc:
                self._error = exc

    @property
    def case(self) -> EvalCase | None:
        """The validated case (None when it could not be parsed)."""
        self._parse()
        return self._case

    @property
    def error(self) -> InputError | None:
        """Why the case could not be parsed."""
        self._parse()
        return self._error

    def release(self) -> None:
        """Drop the parsed model of a lazily parsed case (it is parsed again if used again)."""
        if self._source is not None:
            self._case = self._error = None

    def __repr__(self) -> str:
        return f"LoadedCase({self.eval_id!r}, case={self.case!r}, error={self.error!r}, actual={self.actual!r})"


@dataclass
class CaseNotes:
    """What an eval set's case notices are made of, noted over the cases scored (``scoring.note_case``): each
    unknown case key with the first case holding it, in the order found, and every rubric type seen (None: untyped).
    A job of ``evalbot run --jobs N`` scores some of the cases and sends its notes to the parent, which joins them
    in case order into the notices one job gives."""

    extra_keys: dict[str, str] = field(default_factory=dict)
    rubric_types: set[str | None] = field(default_factory=set)


@dataclass(frozen=True)
class LoadedEvalSet:
    """One eval set file: its id, cases, config and any file-level problems."""

    path: str
    eval_set_id: str
    cases: tuple[LoadedCase, ...] = ()
    config: EvalConfig = field(default_factory=default_config)
    errors: tuple[InputError, ...] = ()
    notices: tuple[str, ...] = ()
    """Unknown keys at the eval set's top level (ignored, as ADK ignores them)."""
    case_notices: tuple[str, ...] | None = None
    """The notices about unknown keys of the cases when they were found before scoring (a shard scores only some of
    the cases, but reports the whole set's notices); None: found while scoring."""
    notes: CaseNotes | None = None
    """Where scoring records what the case notices are made of, over the cases it scores (a job of ``run --jobs``
    sends them to its parent); None: kept by scoring for its own notices only."""
    columns: tuple[str, ...] | None = None
    """A Vertex dataset's columns (None for other formats)."""
    own_runs: frozenset[str] = frozenset()
    """A Vertex dataset's eval ids whose rows record the agent's run themselves (response, predicted_trajectory...),
    over the whole file (a shard scores only some of the cases)."""
    lines: CaseLines | None = None
    """Where each case's id sits in the file (for annotations), from the text read when loading; None when not asked
    for or when the file could not be read."""

    def case_line(self, eval_id: str) -> int | None:
        """The 1-based line of the case's ``"eval_id"`` in the file, when known."""
        return self.lines.line(eval_id) if self.lines is not None else None
