"""Run the agent over every loadable case of the eval sets, ``num_runs`` times, with bounded concurrency."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from evalbot.errors import ConfigError
from evalbot.formats.adk import EvalCase
from evalbot.formats.loaded import LoadedEvalSet
from evalbot.judges.base import Judge
from evalbot.progress import Progress
from evalbot.runner.base import Agent, CaseRun, RunSet, SimulatorError
from evalbot.runner.conversation import run_conversation
from evalbot.runner.simulator import SimulatedUser, SimulatorConfig, parse_simulator_config

DEFAULT_CONCURRENCY = 4
"""Cases in flight at once (ADK's inference parallelism)."""
DEFAULT_TIMEOUT = 300.0
"""Seconds one agent call may take."""


@dataclass(frozen=True)
class RunOptions:
    """How to run: repetitions, concurrency, per-call timeout, and the LLM for simulated users."""

    num_runs: int = 1
    concurrency: int = DEFAULT_CONCURRENCY
    timeout: float = DEFAULT_TIMEOUT
    judge: Judge | None = None
    judge_unavailable_reason: str | None = None

    def __post_init__(self) -> None:
        if self.num_runs < 1:
            raise ConfigError(f"--num-runs must be at least 1, got {self.num_runs}")
        if self.concurrency < 1:
            raise ConfigError(f"--agent-concurrency must be at least 1, got {self.concurrency}")
        if not self.timeout > 0:
            raise ConfigError(f"--agent-timeout must be positive, got {self.timeout}")


def _simulator_config(loaded: LoadedEvalSet) -> SimulatorConfig | str:
    try:
        return parse_simulator_config(loaded.config.user_simulator, loaded.config.path or "<config>")
    except ConfigError as exc:
        return str(exc)


async def _one(agent: Agent, loaded: LoadedEvalSet, case: EvalCase, run: int, sim: SimulatorConfig | str,
               options: RunOptions) -> CaseRun:
    simulator = None
    if case.conversation_scenario is not None:
        skipped = CaseRun(loaded.eval_set_id, case.eval_id, run)
        if isinstance(sim, str):
            skipped.outcome, skipped.reason = "error", f"invalid user simulator config: {sim}"
            return skipped
        if sim.unsupported is not None:
            skipped.outcome, skipped.reason = "not_evaluated", sim.unsupported
            return skipped
        if options.judge is None:
            reason = options.judge_unavailable_reason or "no LLM is configured"
            skipped.outcome = "not_evaluated"
            skipped.reason = f"the conversation scenario needs an LLM for the simulated user: {reason}"
            return skipped
        try:
            simulator = SimulatedUser(options.judge, sim, case.conversation_scenario)
        except SimulatorError as exc:
            skipped.outcome, skipped.reason = "error", str(exc)
            return skipped
    return await run_conversation(
        agent, case, eval_set_id=loaded.eval_set_id, run=run, timeout=options.timeout, simulator=simulator
    )


async def run_eval_sets(
    agent: Agent, eval_sets: Sequence[LoadedEvalSet], options: RunOptions, progress: Progress | None = None
) -> RunSet:
    """Every case × run; cases that failed to load are skipped (scoring reports them)."""
    semaphore = asyncio.Semaphore(options.concurrency)
    runs = RunSet(num_runs=options.num_runs, agent=agent.label)
    done = 0

    async def guarded(loaded: LoadedEvalSet, case: EvalCase, run: int, sim: SimulatorConfig | str) -> None:
        nonlocal done
        async with semaphore:
            result = await _one(agent, loaded, case, run, sim, options)
        runs.add(result)
        done += 1
        if progress is not None:
            progress(done, len(jobs))

    jobs: list[Coroutine[Any, Any, None]] = []
    for run in range(1, options.num_runs + 1):
        for loaded in eval_sets:
            sim = _simulator_config(loaded)
            jobs.extend(guarded(loaded, c.case, run, sim) for c in loaded.cases if c.case is not None)
    await asyncio.gather(*jobs)
    return runs


def run_agent(agent: Agent, eval_sets: Sequence[LoadedEvalSet], options: RunOptions,
              progress: Progress | None = None) -> RunSet:
    """Synchronous entry point (one event loop for the whole run)."""
    return asyncio.run(run_eval_sets(agent, eval_sets, options, progress))
