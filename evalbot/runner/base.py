"""What running an agent produces (one case's run: its invocations and how it ended) and the agent protocols."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from evalbot.formats.adk import Content, EvalCase, Invocation

RunOutcome = Literal["ok", "failed", "error", "not_evaluated"]
"""ok: the conversation ran to its end · failed: the agent raised or timed out · error: the agent broke its output
contract, or the simulated user could not be driven · not_evaluated: the case could not be run (no LLM for the
simulated user)."""

Stop = Literal["conversation_end", "stop_signal", "invocation_limit"]
"""Why a conversation ended: a static conversation was replayed to its end, the simulated user sent the stop signal,
or the simulator reached ``max_allowed_invocations``."""


@dataclass
class CaseRun:
    """One run of one eval case: the invocations that completed and how the run ended."""

    eval_set_id: str
    eval_id: str
    run: int
    """1-based run number (``--num-runs``)."""
    invocations: list[Invocation] = field(default_factory=list)
    outcome: RunOutcome = "ok"
    reason: str | None = None
    """Why the outcome is not ``ok``, in words fit for a report."""
    failed_turn: int | None = None
    """1-based turn whose agent call failed."""
    failed_invocation: Invocation | None = None
    """That turn's user message, without a response or duration (scored only by the failure/latency criteria)."""
    stop: Stop | None = None
    session_id: str | None = None
    user_id: str | None = None


@dataclass
class RunSet:
    """Every case's runs, keyed by (eval_set_id, eval_id); list position = run number - 1."""

    num_runs: int = 1
    runs: dict[tuple[str, str], list[CaseRun]] = field(default_factory=dict)
    agent: str | None = None
    """What was run (``module:callable`` or an ADK agent path), for recordings."""

    def add(self, run: CaseRun) -> None:
        """Record one case run (kept in run order; a later record of the same run replaces the earlier one)."""
        runs = [r for r in self.runs.get((run.eval_set_id, run.eval_id), []) if r.run != run.run]
        runs.append(run)
        runs.sort(key=lambda r: r.run)
        self.runs[(run.eval_set_id, run.eval_id)] = runs

    def of(self, eval_set_id: str, eval_id: str) -> list[CaseRun]:
        """The runs of a case (empty when it was not run); like actuals, an eval_id recorded under another eval set
        id (a legacy file's path spelled differently) is found when it is unique."""
        found = self.runs.get((eval_set_id, eval_id))
        if found is not None:
            return found
        matches = [runs for (_, case_id), runs in self.runs.items() if case_id == eval_id]
        return matches[0] if len(matches) == 1 else []


class AgentError(Exception):
    """The agent broke its output contract; the message says what was expected."""


class SimulatorError(Exception):
    """The simulated user could not produce the next message."""


class AgentSession(Protocol):
    """One conversation with the agent (one case, one run)."""

    @property
    def session_id(self) -> str | None:
        """The agent's session id, when it has one."""
        ...

    @property
    def user_id(self) -> str | None:
        """The session's user id, when it has one."""
        ...

    async def send(self, user: Content, invocation_id: str) -> Invocation:
        """Send one user message; return the invocation (raise AgentError on malformed output)."""
        ...

    async def close(self) -> None:
        """Release the session."""
        ...


class Agent(Protocol):
    """Something evalbot can hold conversations with."""

    @property
    def label(self) -> str:
        """How the agent was named on the command line."""
        ...

    async def open(self, case: EvalCase, run: int) -> AgentSession:
        """Start a fresh session for one run of ``case`` (session_input honoured)."""
        ...

