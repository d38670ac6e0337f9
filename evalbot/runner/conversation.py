"""Hold one conversation with the agent: replay a static conversation or follow the simulated user, turn by turn.

Each agent call is timed (``Invocation.duration``, seconds, wall clock) and bounded by a timeout; an exception or a
timeout ends the run as ``failed`` with the message, malformed output as ``error``, and the conversation stops there.
"""

from __future__ import annotations

import asyncio
import logging
import time

from evalbot.formats.adk import Content, EvalCase, Invocation, Part
from evalbot.runner.base import Agent, AgentError, AgentSession, CaseRun, SimulatorError
from evalbot.runner.simulator import SimulatedUser

log = logging.getLogger(__name__)


def invocation_id(run: int, turn: int) -> str:
    """Readable ids, unique within a case across runs."""
    return f"run{run}-turn{turn}"


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


async def _send(session: AgentSession, user: Content, inv_id: str, timeout: float) -> Invocation:
    started = time.perf_counter()
    invocation = await asyncio.wait_for(session.send(user, inv_id), timeout)
    elapsed = round(time.perf_counter() - started, 3)
    update: dict[str, object] = {"invocation_id": inv_id}
    if invocation.duration is None:
        update["duration"] = elapsed
    return invocation.model_copy(update=update)


async def _next_user(case: EvalCase, turn: int, simulator: SimulatedUser | None, result: CaseRun) -> Content | None:
    if case.conversation is not None:
        if turn >= len(case.conversation):
            result.stop = "conversation_end"
            return None
        return case.conversation[turn].user_content
    assert simulator is not None
    text = await simulator.next_message(result.invocations)
    if text is None:
        result.stop = simulator.stop
        return None
    return Content(role="user", parts=[Part(text=text)])


async def run_conversation(
    agent: Agent,
    case: EvalCase,
    *,
    eval_set_id: str,
    run: int,
    timeout: float,
    simulator: SimulatedUser | None = None,
) -> CaseRun:
    """One run of one case; never raises for the agent's or the simulator's failures (they land in the CaseRun)."""
    result = CaseRun(eval_set_id, case.eval_id, run)
    try:
        session = await asyncio.wait_for(agent.open(case, run), timeout)
    except Exception as exc:
        result.outcome, result.reason = "failed", f"could not start an agent session: {_describe(exc)}"
        return result
    result.session_id, result.user_id = session.session_id, session.user_id
    turn = 0
    try:
        while True:
            try:
                user = await _next_user(case, turn, simulator, result)
            except SimulatorError as exc:
                result.outcome, result.reason = "error", f"turn {turn + 1}: {exc}"
                break
            if user is None:
                break
            turn += 1
            inv_id = invocation_id(run, turn)
            try:
                result.invocations.append(await _send(session, user, inv_id, timeout))
                continue
            except TimeoutError:
                result.outcome = "failed"
                result.reason = f"turn {turn}: the agent did not answer within {timeout:g} s (timeout)"
            except AgentError as exc:
                result.outcome, result.reason = "error", f"turn {turn}: malformed agent output: {exc}"
            except Exception as exc:
                log.debug("agent failed on %s turn %d", case.eval_id, turn, exc_info=True)
                result.outcome, result.reason = "failed", f"turn {turn}: the agent raised {_describe(exc)}"
            result.failed_turn = turn
            result.failed_invocation = Invocation(invocation_id=inv_id, user_content=user, creation_timestamp=time.time())
            break
    finally:
        try:
            await session.close()
        except Exception:
            log.warning("closing the agent session of %s failed", case.eval_id, exc_info=True)
    return result
