"""How ``evalbot <command> --help`` is laid out: the options in groups (inputs; agent; gate policy; judge; outputs;
CI and scale), ``-v`` after the command as before it, and an epilog of examples that run on the bundled
``examples/`` from the repository's root (tests/cli/test_help.py runs every one and checks its exit code)."""

from __future__ import annotations

import argparse
import textwrap
from typing import Any

INPUTS = "inputs"
AGENT = "running the agent (instead of --actuals)"
GATE = "gate policy"
JUDGE = "judge"
OUTPUTS = "outputs"
CI = "CI and scale"

ORDER = (INPUTS, AGENT, GATE, JUDGE, OUTPUTS, CI)

DESCRIPTIONS = {
    GATE: "A flag left off takes its value from the evalbot section of test_config.json (the one beside the eval "
          "sets, or --config): the key named as evalbot.KEY below; a key the section does not set takes the "
          "built-in default named after it.",
    AGENT: "evalbot runs the agent on each case itself; the runs can be recorded for later --actuals.",
}

_GROUPS = "_evalbot_groups"


def add_groups(parser: argparse.ArgumentParser) -> None:
    """Create the option groups of a command, in help order (a group nothing is added to is not shown), and its
    ``-v``: accepted after the command as well as before (``evalbot run -v …``)."""
    groups = {title: parser.add_argument_group(title, _wrapped(DESCRIPTIONS.get(title))) for title in ORDER}
    setattr(parser, _GROUPS, groups)
    # SUPPRESS: when -v is not given after the command, the value given (or not) before it stands
    parser.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                        help="debug logging (also accepted before the command)")


def _wrapped(text: str | None) -> str | None:
    """A group's description filled to the help's width (the raw formatter, kept for the examples, fills nothing)."""
    return None if text is None else textwrap.fill(text, width=76)


def group(parser: argparse.ArgumentParser, title: str) -> Any:
    """The option group ``title`` of ``parser`` (created by :func:`add_groups`; a parser without groups, such as
    a test's, gets its options in the main list)."""
    groups: dict[str, Any] | None = getattr(parser, _GROUPS, None)
    return parser if groups is None else groups[title]


def command(sub: Any, name: str, *, help: str, description: str | None = None,
            examples: str = "") -> argparse.ArgumentParser:
    """A subcommand with its groups and an epilog of ``examples`` (kept as written)."""
    epilog = f"examples (from the repository's root; the bundled example needs no API key):\n{examples}" \
        if examples else None
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=help, description=description or help[:1].upper() + help[1:] + ".", epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_groups(parser)
    return parser


EXAMPLE = "examples/evals --actuals examples/runs/pr.json --judge-cache examples/judge-cache --judge-replay"
MAIN_EXAMPLE = "examples/evals --actuals examples/runs/main.json --judge-cache examples/judge-cache --judge-replay"
BASELINE = "examples/.evalbot/baseline.json"

RUN_EXAMPLES = f"""\
  # score recorded runs and print a summary per eval set (exit 1: a case fails its threshold)
  evalbot run {EXAMPLE}

  # the same, with the JSON and HTML reports (exit 1)
  evalbot run {EXAMPLE} \\
    --report report.json --html report.html

  # the list of criteria a test_config.json can name (exit 0)
  evalbot criteria
"""

COMPARE_EXAMPLES = f"""\
  # a pull request's run against main's baseline: prints the PR comment (exit 1: blocked, 1 regressed)
  evalbot compare --baseline {BASELINE} {EXAMPLE}

  # report only, never block (exit 0)
  evalbot compare --baseline {BASELINE} {EXAMPLE} --fail-on never

  # write the comment, the job summary and the report to files (exit 1)
  evalbot compare --baseline {BASELINE} {EXAMPLE} \\
    --comment comment.md --summary summary.md --report report.json

  # in CI, read the baseline at the pull request's base commit: --baseline origin/main:.evalbot/baseline.json
"""

BASELINE_EXAMPLES = f"""\
  # write the baseline of main's run (default --output: the config's evalbot.baseline_path, else
  # .evalbot/baseline.json; here written beside the bundled one) (exit 0)
  evalbot baseline {MAIN_EXAMPLE} --output baseline.json
"""

MERGE_EXAMPLES = f"""\
  # a run in two matrix jobs, each writing its part of the report (exit 0)
  evalbot compare --baseline {BASELINE} {EXAMPLE} --shard 1/2 --report part1.json
  evalbot compare --baseline {BASELINE} {EXAMPLE} --shard 2/2 --report part2.json

  # then the merge that compares the whole run, as one job would (exit 1: blocked, 1 regressed)
  evalbot merge part1.json part2.json --eval-sets examples/evals --baseline {BASELINE}
"""

CRITERIA_EXAMPLES = """\
  # every criterion a test_config.json can name (exit 0)
  evalbot criteria
"""

PLAN_EXAMPLES = """\
  # in a git checkout: the eval sets the working tree's change can affect against main (exit 0)
  evalbot plan examples/evals --base main

  # the same as JSON, each eval set with whether it is affected and why (exit 0)
  evalbot plan examples/evals --base main --json
"""
