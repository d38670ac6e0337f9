"""The GitHub Action run: settings from the environment mapping, the mode's stage, outputs and the exit code."""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import TextIO, cast

from evalbot.action import workflow
from evalbot.action.files import hand_over
from evalbot.action.first_stage import first_stage, plan_stage
from evalbot.action.publish import Outcome
from evalbot.action.second_stage import second_stage
from evalbot.action.settings import (
    ActionInputs,
    GitHubContext,
    Mode,
    check_paths,
    choose_mode,
    context_from_env,
    inputs_from_env,
)
from evalbot.errors import EXIT_INTERNAL, EXIT_INVALID_INPUT, EXIT_UNAVAILABLE, EvalbotError, InputError
from evalbot.forge.base import Forge, ForgeUnavailable
from evalbot.judges.factory import SECRET_ENV
from evalbot.paths import confined_to
from evalbot.redact import ScrubbingWriter, register_secret
from evalbot.shard.parts import RUNS_DIR

log = logging.getLogger("evalbot")


def make_forge(inputs: ActionInputs, ctx: GitHubContext) -> Forge | None:
    """PyGithub against GITHUB_API_URL (GitHub Enterprise too), or None without a token or repository."""
    if not inputs.github_token or not ctx.repository:
        return None
    from evalbot.forge.pygithub import PyGithubForge  # lazily: PyGithub (and urllib3) only when a token is given

    return PyGithubForge(token=inputs.github_token, repository=ctx.repository, api_url=ctx.api_url)


def run_mode(
    env: Mapping[str, str], inputs: ActionInputs, ctx: GitHubContext, mode: Mode, forge: Forge | None, stream: TextIO
) -> Outcome:
    """Dispatch to the stage for ``mode``."""
    if inputs.planning:
        return plan_stage(inputs, ctx, mode, forge, stream)
    if mode == "workflow_run":
        return second_stage(env, inputs, ctx, forge, stream)
    return first_stage(env, inputs, ctx, mode, forge, stream)


def run(
    env: Mapping[str, str], *, started: float | None = None, out: TextIO | None = None, forge: Forge | None = None
) -> int:
    """Run the action; returns the exit code (0 ok, 1 blocked, 2 invalid input, 3 GitHub unavailable, 70 a bug)."""
    for name in ("INPUT_GITHUB-TOKEN", "INPUT_GITHUB_TOKEN", "INPUT_JUDGE-API-KEY", "INPUT_JUDGE_API_KEY",
                 "INPUT_OPENAI-API-KEY", "INPUT_OPENAI_API_KEY", "INPUT_JUDGE-CACHE-KEY", "INPUT_JUDGE_CACHE_KEY",
                 "GITHUB_TOKEN", *SECRET_ENV):
        register_secret(env.get(name))
    raw = out or sys.stdout
    stream = cast(TextIO, ScrubbingWriter(raw))  # logs and annotations never carry a secret
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=stream)
    log.setLevel(logging.INFO)  # HTTP client libraries stay at WARNING: their INFO lines are per request
    try:
        inputs = inputs_from_env(env)
        ctx = context_from_env(env)
        mode = choose_mode(inputs.mode, ctx)
        check_paths(inputs, ctx.workspace)
    except InputError as exc:
        print(workflow.annotation("error", str(exc), title="evalbot input"), file=stream)
        return EXIT_INVALID_INPUT
    for secret in (inputs.judge_api_key, inputs.openai_api_key, inputs.judge_cache_key):
        if secret:
            print(workflow.add_mask(secret), file=raw)  # the runner must see the value to mask it
    print(f"evalbot: mode {mode}, repository {ctx.repository or '?'}", file=stream, flush=True)
    if ctx.workspace.is_dir():
        os.chdir(ctx.workspace)  # as the runner does: input paths are relative to the workspace
    used: Forge | None = forge
    try:
        used = used or make_forge(inputs, ctx)
        with confined_to(ctx.workspace):  # the PR's files never lead a read out of the workspace
            outcome = run_mode(env, inputs, ctx, mode, used, stream)
    except ForgeUnavailable as exc:
        print(workflow.annotation("error", f"GitHub unavailable: {exc}", title="evalbot"), file=stream)
        outcome = Outcome(verdict="error", exit_code=EXIT_UNAVAILABLE)
    except EvalbotError as exc:
        print(workflow.annotation("error", str(exc), title="evalbot"), file=stream)
        outcome = Outcome(verdict="invalid", exit_code=EXIT_INVALID_INPUT)
    except Exception as exc:  # a bug: say so plainly, keep the traceback in the log
        log.exception("evalbot crashed")
        message = f"internal error: {type(exc).__name__}: {exc}"
        print(workflow.annotation("error", message, title="evalbot bug"), file=stream)
        outcome = Outcome(verdict="error", exit_code=EXIT_INTERNAL)
    finally:
        runs = str(PurePosixPath(inputs.report_path).parent / RUNS_DIR)  # the recorded runs copied for stage two
        written = [inputs.report_path, runs, inputs.junit_path, inputs.html_path, inputs.baseline_path,
                   inputs.judge_cache]
        hand_over(ctx.workspace, written)  # on every path out: the runner's user must be able to delete them
        requests: int | None = getattr(used, "api_requests", None)
        if requests is not None:  # shown in the job log with step debug logging on (ACTIONS_STEP_DEBUG)
            print(workflow.command("debug", f"evalbot: {requests} GitHub API requests"), file=stream)
    if ctx.output_path:
        workflow.write_outputs(ctx.output_path, outcome.outputs())
    if started is not None:
        print(f"evalbot: done in {time.perf_counter() - started:.1f}s, exit {outcome.exit_code}", file=stream)
    return outcome.exit_code
