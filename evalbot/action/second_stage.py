"""The fork-safe second stage (``workflow_run``): re-measure a fork's pull request and post its comment.

Its verdict is the pull request's merge gate: a commit status (context ``evalbot``, or ``evalbot/<comment-id>``) on
the head commit, ``pending`` while it re-measures, then ``success``, ``failure`` (blocked) or ``error`` (could not
measure, invalid input, a crash); the exit code is the verdict's. A status that cannot be set (the job lacks
``statuses: write``) is an error naming the permission, exit 3, never a silent pass.

The artifact comes from a workflow the pull request could change, so it is untrusted data: size-capped, read in
memory, validated by the Report model (unknown keys refused) and only ever rendered through the escaping
templates. Its report's scores and verdict are never shown: the recorded runs it carries are re-scored here against
the eval sets and criteria of this job's checkout (the default branch), with this job's judge (see
evalbot.action.remeasure). The PR is found from the run's head commit, never from anything inside the artifact, and
the baseline and the gate settings come from the base commit and the default branch.
"""

from __future__ import annotations

import logging
import re
import shlex
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TextIO

from pydantic import ValidationError

from evalbot.action import workflow
from evalbot.action.first_stage import baseline_command, evaluate_inputs
from evalbot.action.plan import only_affected
from evalbot.action.publish import Outcome, links, outcome_of, post_comment, summarize
from evalbot.action.remeasure import added_note, check_artifact, ignored_note, runs_in, write_runs
from evalbot.action.settings import ActionInputs, Change, GitHubContext
from evalbot.action.trusted_code import unverified_metric_code
from evalbot.action.workspace import (
    Workspace,
    eval_paths,
    policy_and_template,
    read_baseline_at,
    similar_baselines,
)
from evalbot.basecommit.gate import GateSettings, label_at
from evalbot.compare.accept import proposed_baseline
from evalbot.compare.baseline import accept_command
from evalbot.compare.carry import carried_update
from evalbot.compare.delta import compare, entries_to_accept
from evalbot.compare.model import Comparison
from evalbot.compare.reruns import note_not_rerun
from evalbot.errors import EXIT_OK, EXIT_UNAVAILABLE, EvalbotError, InputError, json_pointer
from evalbot.forge.base import Forge, ForgeError, ForgeForbidden, PullRef, StatusState
from evalbot.formats.loaded import LoadedEvalSet
from evalbot.pipeline import PackedSpill, load_inputs, read_actuals
from evalbot.redact import scrub
from evalbot.render.comment import comment_marker, render_comment, render_summary, render_unmeasured, verdict
from evalbot.results import Report
from evalbot.shard.merge import MissingShards, check_loaded, loading_parts, merge_reports
from evalbot.shard.parts import RUNS_DIR, part_from_bytes

log = logging.getLogger("evalbot")
MAX_ARTIFACT_BYTES = 50 * 1024 * 1024
"""Largest first-stage artifact read (zipped, and again unzipped)."""
STATUS_CONTEXT = "evalbot"
"""The commit status this stage sets on the pull request's head commit: the check branch protection requires."""
STATES: dict[str, StatusState] = {"passed": "success", "blocked": "failure", "error": "error", "invalid": "error"}
"""The commit status of each verdict."""


def status_context(inputs: ActionInputs) -> str:
    """``evalbot``, or ``evalbot/<comment-id>`` for another configuration's comment (each its own required check)."""
    return STATUS_CONTEXT if inputs.comment_id == "default" else f"{STATUS_CONTEXT}/{inputs.comment_id}"


class CommitStatus:
    """The ``evalbot`` commit status of one head commit, set through the forge."""

    def __init__(self, forge: Forge, ctx: GitHubContext, inputs: ActionInputs, sha: str, stream: TextIO) -> None:
        self.forge, self.sha, self.stream = forge, sha, stream
        self.context = status_context(inputs)
        self.target_url = links(ctx, inputs).summary  # this run: its job summary holds the results

    def set(self, state: StatusState, description: str) -> str | None:
        """Set the status; None when set, else the problem (already printed as an error annotation)."""
        try:
            self.forge.set_commit_status(sha=self.sha, state=state, context=self.context,
                                         description=scrub(description), target_url=self.target_url)
        except ForgeForbidden as exc:
            problem = (f"could not set the commit status `{self.context}` on {self.sha[:12]}: the token may not set "
                       "commit statuses; give this workflow_run job `permissions: statuses: write` (that status is "
                       f"the pull request's merge gate; without it nothing is gated) ({exc})")
        except ForgeError as exc:
            problem = f"could not set the commit status `{self.context}` on {self.sha[:12]}: {exc}"
        else:
            print(f"evalbot: commit status {self.context} on {self.sha[:12]}: {state}", file=self.stream)
            return None
        print(workflow.annotation("error", problem, title="evalbot status"), file=self.stream)
        return problem


def report_from_artifact(files: Mapping[str, bytes], inputs: ActionInputs) -> Report:
    """The report file of the artifact (matched by the report-path input's file name), validated."""
    wanted = PurePosixPath(inputs.report_path).name
    matches = sorted(name for name in files if PurePosixPath(name).name == wanted)
    where = f"artifact {inputs.artifact_name}"
    if not matches:
        raise InputError(where, "", f"no {wanted} inside (found: {', '.join(sorted(files)) or 'nothing'})")
    try:
        return Report.model_validate_json(files[matches[0]])
    except ValidationError as exc:
        first = exc.errors()[0]
        raise InputError(
            f"{where}:{matches[0]}", json_pointer(first["loc"]), f"not an evalbot report: {first['msg']}"
        ) from None


def report_from_parts(files: Mapping[str, bytes], inputs: ActionInputs, eval_sets: Sequence[LoadedEvalSet]) -> Report:
    """The merged report of the parts (one per artifact matching the artifact-name pattern), each validated as
    untrusted data, its case list checked against ``eval_sets`` (the trusted checkout's); raises MissingShards
    (exit 3) or MergeError (exit 2) naming what is wrong."""
    wanted = PurePosixPath(inputs.report_path).name
    names = sorted(name for name in files if name.endswith(".json") and PurePosixPath(name).parent.name != RUNS_DIR)
    if not names:
        raise MissingShards(f"no part in the artifacts matching {inputs.artifact_name} (found: "
                            f"{', '.join(sorted(files))[:500] or 'nothing'}); did the shard jobs upload their parts?",
                            [])
    preferred = [name for name in names if PurePosixPath(name).name == wanted] or names
    where = f"artifact {inputs.artifact_name}"
    store = PackedSpill()  # the merged report holds every case: their turns and verdicts wait on disk
    with loading_parts():
        report = merge_reports([(f"{where}:{name}", part_from_bytes(files[name], f"{where}:{name}", store))
                                for name in preferred])
    report.notices += check_loaded(report, eval_sets, "of the default branch")
    return report


def pr_baseline_at(forge: Forge, path: str, head_sha: str) -> str | None:
    """The pull request's own baseline file at its head commit; None when absent or GitHub cannot say."""
    try:
        return forge.read_file(path, ref=head_sha)
    except ForgeError as exc:
        log.warning("evalbot: could not read the pull request's %s (%s); its baseline update is not considered",
                    path, exc)
        return None


def unmeasured(ctx: GitHubContext, inputs: ActionInputs, forge: Forge, number: int, head_sha: str, message: str,
               stream: TextIO) -> Outcome:
    """The pull request's run could not be measured: verdict error (exit 3), the comment's headline says why (and
    replaces any earlier comment, which may have been green)."""
    print(workflow.annotation("error", f"could not measure PR #{number}: {message}", title="evalbot"), file=stream)
    link = links(ctx, inputs)
    marker = comment_marker(inputs.comment_id)
    published = post_comment(forge, number=number, marker=marker, stream=stream,
                             body=render_unmeasured(message, marker=marker, links=link, commit=head_sha))
    summarize(ctx, render_unmeasured(message, marker="", links=link), [published.notice] if published.notice else [])
    return Outcome(verdict="error", exit_code=EXIT_UNAVAILABLE, comment_url=published.comment_url)


def second_stage(
    env: Mapping[str, str], inputs: ActionInputs, ctx: GitHubContext, forge: Forge | None, stream: TextIO
) -> Outcome:
    """Download the first stage's artifact, re-score its recorded runs against this (trusted) checkout's eval sets and
    criteria, compare with the baseline at the PR's base commit, upsert the comment, and set the verdict as the
    head commit's ``evalbot`` status (the merge gate); the exit code is the verdict's."""
    run = ctx.workflow_run
    if run is None or forge is None:
        raise InputError("input mode", "", "workflow_run mode needs a workflow_run event and a github-token")
    if run.event not in ("pull_request", "pull_request_target"):
        print(f"evalbot: the triggering run was a {run.event or 'unknown'} event; nothing to comment on", file=stream)
        return Outcome(verdict="passed", exit_code=EXIT_OK, report_path=inputs.report_path)
    pull = forge.find_pr_by_head_sha(run.head_sha, head_label=run.head_label, head_repo=run.head_repo)
    if pull is None:
        note = (f"No single open pull request has head {run.head_label or '(unknown branch)'} at "
                f"{run.head_sha[:12]} (closed, pushed again since, or several share it); no comment.")
        print(workflow.annotation("notice", note, title="evalbot"), file=stream)
        return Outcome(verdict="passed", exit_code=EXIT_OK, report_path=inputs.report_path)
    status = CommitStatus(forge, ctx, inputs, run.head_sha, stream)
    if status.set("pending", f"re-measuring the recorded runs of workflow run {run.id}") is not None:
        return Outcome(verdict="error", exit_code=EXIT_UNAVAILABLE, report_path=inputs.report_path)
    try:
        outcome, description = measure_pull(env, inputs, ctx, forge, pull, stream)
    except EvalbotError as exc:  # exit 2 or 3 from main: the gate says it could not measure, never stays pending
        status.set("error", f"could not measure: {exc}")
        raise
    except Exception as exc:  # a bug (exit 70): said as such
        status.set("error", f"evalbot failed: internal error ({type(exc).__name__}); see the job log")
        raise
    if status.set(STATES.get(outcome.verdict, "error"), description) is not None:
        return replace(outcome, verdict="error", exit_code=EXIT_UNAVAILABLE)
    return outcome


DOWNLOADED = "evalbot-pr-runs"
"""The folder the second stage's accept command downloads the pull request's artifact into."""
_MEMBER = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}(?:/[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}){0,8}")
"""An artifact member's name the accept command names as it is (the first stage writes runs/<index>-<safe name>)."""


def accept_from_artifact(comparison: Comparison, inputs: ActionInputs, ctx: GitHubContext, base_sha: str,
                         members: Sequence[str]) -> str | None:
    """What the pull request's author runs to accept exactly what blocks (the first stage's selective command):
    the artifact's recorded runs downloaded (``gh run download``), then ``evalbot baseline`` with the default
    branch's eval sets and config, those runs, ``--accept`` for each entry and ``--previous`` the base commit's file.
    Built from what this stage trusts (the run, the repository, its inputs) and the artifact's member names only
    when each is a plain relative path (else None, as for a sharded run's several artifacts or nothing to accept)."""
    run = ctx.workflow_run
    if (comparison.gate.verdict != "blocked" or run is None or "*" in inputs.artifact_name or not members
            or not all(_MEMBER.fullmatch(name) for name in members)):
        return None
    args = [*eval_paths(inputs)] + [item for name in members for item in ("--actuals", f"{DOWNLOADED}/{name}")]
    if inputs.config:
        args += ["--config", inputs.config]
    refresh = shlex.join(["evalbot", "baseline", *args, "--output", inputs.baseline_path])
    command = accept_command(refresh, entries_to_accept(comparison), f"{base_sha}:{inputs.baseline_path}")
    if command is None:
        return None
    download = shlex.join(["gh", "run", "download", str(run.id), "--repo", ctx.repository, "--name",
                           inputs.artifact_name, "--dir", DOWNLOADED])
    return f"{download} && {command}"


def measure_pull(env: Mapping[str, str], inputs: ActionInputs, ctx: GitHubContext, forge: Forge, pull: PullRef,
              stream: TextIO) -> tuple[Outcome, str]:
    """The re-measurement of the pull request's recorded runs, its comment and summary; the outcome and the
    commit status's description."""
    run = ctx.workflow_run
    assert run is not None
    files = forge.download_artifact(run_id=run.id, name=inputs.artifact_name, max_bytes=MAX_ARTIFACT_BYTES)
    ws = Workspace(ctx.workspace)
    loaded = load_inputs(eval_paths(inputs), config=inputs.config)  # the trusted checkout's definitions
    if "*" in inputs.artifact_name:  # the parts of a sharded run: merged, each read as untrusted data
        try:
            claimed = report_from_parts(files, inputs, loaded.eval_sets)
        except MissingShards as exc:
            return (unmeasured(ctx, inputs, forge, pull.number, run.head_sha, str(exc), stream),
                    f"could not measure: {exc}")
    else:
        claimed = report_from_artifact(files, inputs)
    policy, template = policy_and_template(inputs, ws, loaded.settings())
    baseline, baseline_error = read_baseline_at(forge, ws, inputs.baseline_path, pull.base_sha)
    main_baseline, carried = baseline, None
    every_set = loaded.eval_sets  # a run of a case in none of them is ignored, with a notice
    if inputs.only_affected:  # the default branch's affected_by, the pull request's files as GitHub lists them
        change = Change(base_sha=pull.base_sha, head_sha=pull.head_sha, number=pull.number)
        loaded, baseline, carried = only_affected(inputs, ws, loaded, GateSettings(policy=policy, template=template),
                                                  change, forge, baseline, git=False)
    with tempfile.TemporaryDirectory(prefix="evalbot-runs-") as private:
        paths = write_runs(runs_in(files), Path(private))
        recorded = read_actuals(paths)
        check = check_artifact(claimed, recorded, loaded.eval_sets, inputs.artifact_name, every_set=every_set)
        if check.problem is not None:
            return (unmeasured(ctx, inputs, forge, pull.number, run.head_sha, check.problem, stream),
                    f"could not measure: {check.problem}")
        # Re-measured here: the claimed report's scores and verdict are never shown as evalbot's.
        checked = (unverified_metric_code(loaded, ctx.workspace, forge, ctx.sha),)  # no custom metric: (None,)
        report = evaluate_inputs(env, inputs.model_copy(update={"actuals": tuple(paths)}), ws, loaded, policy,
                                 baseline, recorded, code_checked=checked)
    source = label_at(pull.base_sha, inputs.baseline_path)
    update = proposed_baseline(lambda: pr_baseline_at(forge, inputs.baseline_path, pull.head_sha), main_baseline,
                               inputs.baseline_path)
    if carried is not None:
        update = carried_update(update, carried)
    similar = (similar_baselines(forge, ws, inputs.baseline_path, pull.base_sha)
               if baseline is None and baseline_error is None and update is None else [])
    comparison = compare(current=report, baseline=baseline, policy=policy, baseline_source=source,
                         baseline_error=baseline_error, create=baseline_command(inputs), proposed=update,
                         credentials_expected=run.head_repo == ctx.repository,  # a fork: a missing key stays a warning
                         baseline_required=True, similar=similar)
    comparison.commit = run.head_sha
    comparison.carried = carried
    comparison.notes += [added_note(check.added)] if check.added else []
    if check.ignored:  # as the first stage says it of its own eval sets
        comparison.notes.append(ignored_note(check.ignored, "the default branch's eval sets"))
        print(workflow.annotation("notice", comparison.notes[-1], title="evalbot"), file=stream)
    note_not_rerun(comparison, policy.rerun_flipped)  # re-measured from recorded runs: nothing can be rerun here
    comparison.accept_command = accept_from_artifact(comparison, inputs, ctx, pull.base_sha,
                                                     [name for name, _ in runs_in(files)])
    first_run = f"{ctx.server_url}/{ctx.repository}/actions/runs/{run.id}"
    link = links(ctx, inputs)
    marker = comment_marker(inputs.comment_id)
    body = render_comment(comparison, marker=marker, links=link, template=template)
    body += (f"\n<sub>Re-measured by this repository's trusted workflow from the recorded runs of [the pull request's "
             f"workflow run]({first_run}), against the default branch's eval sets and criteria; that run's own "
             f"scores and verdict are not used. The merge gate is the `{status_context(inputs)}` commit status.</sub>\n")
    published = post_comment(forge, number=pull.number, marker=marker, body=body, stream=stream)
    summarize(ctx, render_summary(comparison, links=link), [published.notice] if published.notice else [])
    print(f"evalbot: PR #{pull.number}: {comparison.gate.verdict} (re-measured from the artifact's recorded runs)",
          file=stream)
    outcome = outcome_of(comparison, inputs, published)  # the exit code is the verdict's, as in the first stage
    if published.failed and outcome.exit_code == EXIT_OK:  # the comment is part of this stage's job
        outcome = replace(outcome, exit_code=EXIT_UNAVAILABLE)
    return outcome, verdict(comparison)[1]
