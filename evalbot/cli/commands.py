"""The ``evalbot`` command: argument parsing, ``evalbot run``, and exit codes for user errors and bugs."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence

import evalbot.cli.agent as cli_agent
import evalbot.cli.args as cli_args
import evalbot.cli.compare as cli_compare
import evalbot.cli.groups as cli_groups
import evalbot.cli.jobs as cli_jobs
import evalbot.cli.judge_diff as cli_judge_diff
import evalbot.cli.plan as cli_plan
from evalbot import __version__
from evalbot.cli.evaluate import add_eval_args, estimate_run, evaluate_args, run_streamed, show_report
from evalbot.criteria import CRITERIA
from evalbot.errors import EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_OK, EvalbotError
from evalbot.formats.jsonio import freeze_for_good
from evalbot.judges.factory import SECRET_ENV
from evalbot.redact import register_secret

log = logging.getLogger("evalbot")


def build_parser() -> argparse.ArgumentParser:
    """The ``evalbot`` argument parser."""
    parser = cli_args.Parser(
        prog="evalbot", description="Evaluate LLM agents with ADK-compatible criteria, and gate pull requests on "
        "regressions against a baseline.", epilog="`evalbot COMMAND --help` shows each command's options, grouped, "
        "and examples that run on the bundled examples/.")
    parser.add_argument("--version", action="version", version=f"evalbot {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging (also accepted after the command)")
    sub = parser.add_subparsers(dest="command", required=True)
    run = cli_groups.command(sub, "run", help="score eval sets and print a summary", examples=cli_groups.RUN_EXAMPLES)
    add_eval_args(run)
    cli_agent.add_agent_args(run)
    gate, outputs, ci = (cli_groups.group(run, title) for title in (cli_groups.GATE, cli_groups.OUTPUTS, cli_groups.CI))
    gate.add_argument("--judge-failures", choices=["block", "warn"],
                      help="a judged verdict the judge could not give: block (exit 3; default: the config's "
                      "evalbot.judge_failures, else block) or warn")
    outputs.add_argument("--report", type=cli_args.output_file, metavar="OUT.json", help="write the JSON report here")
    outputs.add_argument("--html", type=cli_args.output_file, metavar="OUT.html",
                         help="write the self-contained HTML report here")
    ci.add_argument("--jobs", type=cli_args.jobs, metavar="N",
                    help="score the cases in N processes (auto: one per CPU; default: auto when the eval sets and "
                    f"--actuals files add up to {cli_jobs.AUTO_JOBS_BYTES // 2**20} MiB or more and nothing "
                    "needs one process, else 1), merged into the same report, console text and exit code as one; "
                    "the judge concurrency is shared among them")
    run.add_argument("--as-job", type=cli_args.shard, metavar="K/N", help=argparse.SUPPRESS)  # a job of --jobs N
    run.add_argument("--watch-parent", action="store_true", help=argparse.SUPPRESS)  # stdin: the parent's pipe
    run.add_argument("--progress-fd", type=cli_args.integer(3, 99_999), help=argparse.SUPPRESS)  # where a job tells its progress (a pipe the parent passed: not 0-2)
    cli_compare.add_parsers(sub)
    cli_plan.add_parser(sub)
    cli_judge_diff.add_parser(sub)
    cli_groups.command(sub, "criteria", help="list the criteria a test_config.json can name",
                       examples=cli_groups.CRITERIA_EXAMPLES)
    return parser


def cmd_criteria(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot criteria``: the names a config's ``criteria`` may use, one a line (an unknown name's error names the
    closest ones and points here)."""
    print("\n".join(sorted(CRITERIA)))
    return EXIT_OK


def cmd_run(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot run``."""
    if args.estimate:
        return estimate_run(args, env=env)
    if args.as_job is not None:
        return cli_jobs.run_as_job(args, env)
    jobs = cli_jobs.jobs_for(args, env)
    if jobs > 1:
        try:
            return cli_jobs.run_jobs(args, env, jobs)
        except cli_jobs.JobsNotStarted as exc:
            if args.jobs is not None:  # asked for: this machine cannot start them (exit 70, as before)
                raise exc.error from None
            # the default's choice: no job was left running, nothing was printed or written; one process
    if args.html:  # the HTML report shows every case
        return show_report(args, evaluate_args(args, env))
    return run_streamed(args, env)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Entry point of the ``evalbot`` console script."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:2] == ["baseline", "--merge-driver"]:  # git's merge driver: no eval sets, three files
        return cli_compare.merge_driver(given[2:])
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    environ = os.environ if env is None else env
    for name in (*SECRET_ENV, "GITHUB_TOKEN"):
        register_secret(environ.get(name))  # masked in the report, the comment and the judge cache
    commands = {"run": cmd_run, "criteria": cmd_criteria, **cli_compare.COMMANDS, "plan": cli_plan.cmd_plan,
                "judge-diff": cli_judge_diff.cmd_judge_diff}
    try:
        return commands[args.command](args, environ)
    except EvalbotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INVALID_INPUT
    except KeyboardInterrupt:
        print("evalbot: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: exit 70 (an uncaught traceback would exit 1, which reads as "blocked")
        log.debug("evalbot crashed", exc_info=True)
        print(f"evalbot: internal error (a bug: please report it; -v shows the traceback): "
              f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_INTERNAL


def entry() -> int:
    """The ``evalbot`` console script and ``python -m evalbot.cli``: :func:`main`, then what the command left alive
    (a compared run's report and comparison, held until the end by the renders' reference cycles) is frozen out of
    the cyclic collector, so the interpreter's exit neither walks nor frees it: the OS reclaims it (about 3 s of CPU
    at 100,000 invocations). Output files are closed and the atexit hooks (the judge cache's writer) still run."""
    code = main()
    freeze_for_good()
    return code


if __name__ == "__main__":
    sys.exit(entry())
