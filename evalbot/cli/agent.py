"""``evalbot run`` options that run the agent itself: ``--agent``, ``--adk-agent``, ``--num-runs``, ``--record``."""

from __future__ import annotations

import argparse
from pathlib import Path

import evalbot.cli.args as cli_args
import evalbot.cli.groups as cli_groups
from evalbot.errors import ConfigError
from evalbot.pipeline import AgentRun
from evalbot.runner.adk_agent import load_adk_agent
from evalbot.runner.base import Agent
from evalbot.runner.custom_agent import load_function_agent
from evalbot.runner.execute import DEFAULT_CONCURRENCY, DEFAULT_TIMEOUT, RunOptions


def add_agent_args(parser: argparse.ArgumentParser) -> None:
    """Add the agent-running options to the ``run`` parser."""
    group = cli_groups.group(parser, cli_groups.AGENT)
    group.add_argument("--agent", type=cli_args.agent_ref, metavar="MODULE:CALLABLE",
                       help="custom agent function (Vertex contract): prompt in, {'response', 'predicted_trajectory'} "
                       "out; sync or async; imported from the current directory")
    group.add_argument("--adk-agent", type=cli_args.adk_agent, metavar="PATH", help="ADK agent package directory (or dotted module) with "
                       "agent.root_agent, run as `adk eval` does (needs evalbot[adk])")
    group.add_argument("--num-runs", type=cli_args.integer(1, 1000), default=None, metavar="N",
                       help="run every case N times; scores pool the runs as ADK's AgentEvaluator does (default 1)")
    group.add_argument("--record", type=cli_args.output_file, metavar="OUT.json", help="write the produced runs as ADK EvalSetResult JSON "
                       "(re-score later with --actuals OUT.json)")
    group.add_argument("--agent-concurrency", type=cli_args.integer(1, 256), default=None, metavar="N",
                       help=f"cases run at once (default {DEFAULT_CONCURRENCY})")
    group.add_argument("--agent-timeout", type=cli_args.number(0, 86400, low_open=True, what="a number of seconds"), default=None, metavar="S",
                       help=f"seconds one agent call may take before the case fails (default {DEFAULT_TIMEOUT:g})")


def wants_agent(args: argparse.Namespace) -> bool:
    """True when any agent-running option was given."""
    return any(getattr(args, name, None) is not None for name in
               ("agent", "adk_agent", "num_runs", "record", "agent_concurrency", "agent_timeout"))


def _load_agent(args: argparse.Namespace) -> Agent:
    if args.agent and args.adk_agent:
        raise ConfigError("give either --agent or --adk-agent, not both")
    if not (args.agent or args.adk_agent):
        raise ConfigError("--num-runs, --record, --agent-concurrency and --agent-timeout need --agent or --adk-agent")
    if getattr(args, "actuals", None):
        raise ConfigError("--actuals scores recorded runs; with --agent/--adk-agent evalbot produces the runs itself")
    if args.agent:
        return load_function_agent(args.agent)
    return load_adk_agent(args.adk_agent)


def agent_run(args: argparse.Namespace) -> AgentRun | None:
    """What the pipeline needs to run the agent, or None when no agent option was given (recorded runs are read)."""
    if not wants_agent(args):
        return None
    agent = _load_agent(args)
    options = RunOptions(
        num_runs=1 if args.num_runs is None else args.num_runs,
        concurrency=DEFAULT_CONCURRENCY if args.agent_concurrency is None else args.agent_concurrency,
        timeout=DEFAULT_TIMEOUT if args.agent_timeout is None else args.agent_timeout,
    )
    return AgentRun(agent, options, Path(args.record) if args.record else None)
