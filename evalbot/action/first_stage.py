"""The Action's own-repository stage: evaluate, compare with the baseline, publish, and refresh the baseline."""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TextIO

from evalbot.action import workflow
from evalbot.action.plan import describe, only_affected, selection_for
from evalbot.action.publish import Outcome, links, outcome_of, post_comment, print_annotations, summarize
from evalbot.action.remeasure import copy_runs, ignored_note, unused_runs
from evalbot.action.settings import ActionInputs, GitHubContext, Mode, credentials_expected, on_default_branch
from evalbot.action.workspace import (
    Workspace,
    eval_paths,
    list_at,
    policy_and_template,
    policy_overrides,
    read_baseline_at,
    similar_baselines,
)
from evalbot.basecommit.gate import ChangeSide, GateSettings, label_at, read_by_git, repo_path
from evalbot.basecommit.gate import gate_at_base as base_gate
from evalbot.compare import settle
from evalbot.compare.accept import proposed_baseline
from evalbot.compare.baseline import (
    Baseline,
    accept_command,
    build_baseline,
    create_command,
    dump_baseline,
    parse_baseline,
    same_scores,
)
from evalbot.compare.carry import carried_update
from evalbot.compare.delta import compare, custom_not_run, entries_to_accept
from evalbot.compare.gate import Gate, GatePolicy, policy_from_settings
from evalbot.compare.judge_gaps import unmeasured_for_baseline
from evalbot.compare.model import Comparison
from evalbot.compare.reruns import note_not_rerun
from evalbot.criteria.base import BuildContext
from evalbot.errors import EXIT_INVALID_INPUT, EXIT_OK, EXIT_UNAVAILABLE, InputError
from evalbot.forge.base import Forge, ForgeError
from evalbot.formats.prices import JudgeBudget
from evalbot.judges.budget import tighter
from evalbot.judges.cache import KEY_ENV as CACHE_KEY_ENV
from evalbot.judges.factory import MISSING_CREDENTIALS, judge_from_environ
from evalbot.paths import output_file, write_output
from evalbot.pipeline import (
    Inputs,
    PackedSpill,
    RecordedActuals,
    ballots_for,
    evaluate,
    exit_code,
    load_inputs,
    read_actuals,
    settle_split_votes,
    with_costs,
)
from evalbot.render import mdsafe
from evalbot.render.comment import comment_marker, render_comment, render_summary, render_unmeasured
from evalbot.render.html import html_chunks
from evalbot.render.junit import junit_suites, write_junit
from evalbot.render.template_files import comment_template_text, read_regular_file
from evalbot.results import CUSTOM_NOT_RUN, Report, write_report_json
from evalbot.shard.merge import MissingShards, check_loaded, check_settled, loading_parts, merge_reports
from evalbot.shard.parts import part_files, read_part

log = logging.getLogger("evalbot")
FORK_FIRST_STAGE = (
    "Not the merge gate: this pull request comes from a fork, so this job runs the pull request's own workflow "
    "without the repository's secrets (judged criteria are not measured here). The verdict is the `evalbot` commit "
    "status on {sha} that the trusted `workflow_run` stage sets after re-measuring these recorded runs against the "
    "default branch's eval sets, criteria and baseline (the two-stage workflow of evalbot's docs/github-action.md)."
)
"""What the first stage of a fork's pull request says of itself: it is never described as the gate."""
BASELINE_MESSAGE = "chore(evalbot): refresh eval baseline [skip ci]"


ACTION_MISSING_CREDENTIALS = (
    "no judge credentials: the judge-api-key and openai-api-key inputs are empty (a secret that is not set, or "
    "misnamed in the workflow, reads as empty) and no judge variable is set (GOOGLE_API_KEY or GEMINI_API_KEY; "
    "OPENAI_API_KEY or OPENAI_BASE_URL; AZURE_OPENAI_API_KEY with AZURE_OPENAI_ENDPOINT; GOOGLE_GENAI_USE_VERTEXAI "
    "with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION)"
)
"""Why judged criteria had no judge in the Action: the inputs and the variables to set."""

CUSTOM_CODE_EVENTS = frozenset({"pull_request", "push"})
"""The only events on which the Action runs custom metric code (an allow-list; docs/criteria.md, "Custom metrics"). A
``pull_request`` job already runs the PR's code without the base repository's secrets when it comes from a fork; a
``push`` runs code someone with write access committed to the branch, which is what the baseline is measured on.
Every other event is refused: ``pull_request_target``, ``workflow_run``, ``issue_comment``,
``pull_request_review(_comment)``, ``workflow_dispatch``, ``schedule``, ``merge_group``, ``repository_dispatch``, ...
either hold the base repository's secrets and a write token or may run on a checkout the trigger's author chose."""


def custom_code_refused(event: str) -> str | None:
    """Why custom metric code must not run on ``event`` (the criterion's not_evaluated reason), or None."""
    if event in CUSTOM_CODE_EVENTS:
        return None
    return (f"{CUSTOM_NOT_RUN}{event or 'an unnamed event'} (the Action imports a repository's metric code only on "
            f"{' and '.join(sorted(CUSTOM_CODE_EVENTS))} events; score custom metrics in a pull_request job)")


def evaluate_inputs(env: Mapping[str, str], inputs: ActionInputs, ws: Workspace, loaded: Inputs,
                    policy: GatePolicy | None = None, baseline: Baseline | None = None,
                    recorded: RecordedActuals | None = None, code_checked: tuple[str | None] | None = None) -> Report:
    """Score the eval sets with a judge when credentials are there (the judge-api-key, openai-api-key and
    openai-base-url inputs win over the environment), then settle the split votes that flipped against ``baseline``
    (pipeline.settle_split_votes); ``policy`` is the gate's (the base commit's in a pull request): its sampling and
    resample_split apply. ``code_checked``: the trusted stage's check of its checkout's custom metric code
    (``(None,)``: it is the commit the workflow runs on, so the metrics run; ``(problem,)``: they are not run, saying
    why); without it the event decides (custom_code_refused)."""
    policy = policy or GatePolicy()
    judge_env = dict(env)
    if inputs.judge_api_key:
        judge_env["GOOGLE_API_KEY"] = inputs.judge_api_key
    if inputs.openai_api_key:
        judge_env["OPENAI_API_KEY"] = inputs.openai_api_key
    if inputs.openai_base_url:
        judge_env["OPENAI_BASE_URL"] = inputs.openai_base_url
    if inputs.judge_cache_key:
        judge_env[CACHE_KEY_ENV] = inputs.judge_cache_key
    cache = str(ws.path(inputs.judge_cache)) if inputs.judge_cache else None
    # action=True: the Action replays only answers signed with the judge-cache-key (a PR can write the cache).
    judge, notice = judge_from_environ(judge_env, cache_dir=cache, concurrency=inputs.judge_concurrency,
                                       deadline=inputs.judge_deadline, sampling=policy.sampling, action=True)
    if judge is None and notice == MISSING_CREDENTIALS:
        notice = ACTION_MISSING_CREDENTIALS
    event = env.get("GITHUB_EVENT_NAME", "")
    refused = custom_code_refused(event)
    if code_checked is not None:  # the trusted stage checked its checkout's metric code (action.trusted_code)
        problem = code_checked[0]
        refused = None if problem is None else f"{CUSTOM_NOT_RUN}{event}: {problem}"
    ctx = BuildContext(judge=judge, judge_unavailable_reason=notice, custom_code_refused=refused,
                       ballots=ballots_for(baseline, policy), spill_store=PackedSpill())
    wanted = None if inputs.judge_budget_requests is None and inputs.judge_budget_usd is None else JudgeBudget(
        requests=inputs.judge_budget_requests, usd=inputs.judge_budget_usd)
    ctx = with_costs(ctx, policy, wanted)
    budget = tighter(policy.judge_budget, wanted)
    if inputs.shard is not None and budget is not None and judge is not None:  # each shard job: its share
        share = budget.share(inputs.shard.index, inputs.shard.count)
        judge.set_budget(share, f"{share.text()}: shard {inputs.shard.index} of {inputs.shard.count}'s share of the "
                                f"run's {budget.text()}")
    actuals = recorded if recorded is not None else list(inputs.actuals)  # recorded: the files, already read
    report = evaluate(loaded, actuals=actuals, ctx=ctx, shard=inputs.shard)
    settle_split_votes(report, baseline, ctx, policy)
    return report


def merged_parts(inputs: ActionInputs, ws: Workspace, loaded: Inputs, settled: tuple[str | None, str]) -> Report:
    """Mode merge: the report joined from the shard jobs' parts in the ``parts`` directory (untrusted files: regular
    files inside the workspace, size-capped, validated; see evalbot.shard.parts), its case list checked against the eval
    sets this job loaded (``loaded``), and its split votes settled as this job would have settled them
    (``settled``: the fingerprint of this job's baseline and policy, and how to name them). Raises MissingShards or
    MergeError."""
    root = ws.root
    where = ws.path(inputs.parts)
    found = part_files([str(where)], root=root) if where.exists() or where.is_symlink() else []
    if not found:  # every shard job failed before uploading, or the download step found nothing
        raise MissingShards(f"no part in {inputs.parts}: no shard job's report was downloaded there (did the shard "
                            "jobs run and upload their parts, and did actions/download-artifact put them there?)", [])
    with loading_parts():
        store = PackedSpill()  # the merged report holds every case: their turns and verdicts wait on disk
        parts = [(ws.relative(str(path)), read_part(path, root=root, store=store)) for path in found]
        report = merge_reports(parts)
    report.notices += check_loaded(report, loaded.eval_sets, "in this job's checkout")
    check_settled(parts, *settled)
    return report


def shard_job(inputs: ActionInputs, ws: Workspace, report: Report, stream: TextIO) -> Outcome:
    """A matrix job (input shard): write its part of the report and nothing else: no comment, no gate, no baseline
    (the merge job does those); exit 0 unless an input is invalid."""
    write_report_files(report, inputs.model_copy(update={"junit_path": None}), ws)
    copy_runs(inputs, ws)  # the fork-safe second stage re-measures these
    invalid = exit_code(report) == EXIT_INVALID_INPUT
    print(f"evalbot: shard {inputs.shard}: {report.totals.cases} case(s) evaluated; part written to "
          f"{inputs.report_path} (upload it; a job with mode merge joins the parts)", file=stream)
    return Outcome(verdict="invalid" if invalid else "passed", exit_code=EXIT_INVALID_INPUT if invalid else EXIT_OK,
                   report_path=inputs.report_path)


def missing_parts(
    ctx: GitHubContext, inputs: ActionInputs, mode: Mode, forge: Forge | None, exc: MissingShards, stream: TextIO
) -> Outcome:
    """Parts missing: verdict error (exit 3) naming the shards and cases, never a partial pass. On a pull request
    the comment says so in its headline (replacing any earlier comment, which may have been green)."""
    print(workflow.annotation("error", f"could not measure the whole run: {exc}", title="evalbot merge"), file=stream)
    link = links(ctx, inputs)
    pr = ctx.pull_request
    published = None
    if mode == "pull_request" and pr is not None:
        marker = comment_marker(inputs.comment_id)
        body = render_unmeasured(str(exc), marker=marker, links=link, commit=pr.head_sha)
        published = post_comment(forge, number=pr.number, marker=marker, body=body, stream=stream)
    summarize(ctx, render_unmeasured(str(exc), marker="", links=link),
              [published.notice] if published is not None and published.notice else [])
    return Outcome(verdict="error", exit_code=EXIT_UNAVAILABLE, report_path="",
                   comment_url=published.comment_url if published is not None else "")


def read_text_at(forge: Forge | None, ws: Workspace, path: str, ref: str, what: str) -> str | None:
    """The text of ``path`` at commit ``ref`` (None: absent there), read like the baseline: the contents API first,
    ``git show`` when GitHub cannot answer; neither answering raises ForgeUnavailable (exit 3), never "absent"."""
    if forge is not None:
        try:
            return forge.read_file(path, ref=ref)
        except ForgeError as exc:
            log.warning("evalbot: reading the %s through the API failed (%s); trying git show", what, exc)
    return read_by_git(ws.git, ref, path, what, who="neither the API nor git")


def baseline_command(inputs: ActionInputs) -> str:
    """The exact command that makes this run's baseline (run it on main and commit the file)."""
    return create_command(inputs.baseline_path, eval_sets=eval_paths(inputs), actuals=list(inputs.actuals))


def gate_at_base(inputs: ActionInputs, ws: Workspace, forge: Forge | None, ref: str, loaded: Inputs) -> GateSettings:
    """A pull request's gate: policy and template from the base commit ``ref``; the PR's own section is checked
    and every difference from the base's becomes a notice (see :mod:`evalbot.basecommit.gate`)."""
    pr_settings, pr_config = loaded.settings()
    overrides = policy_overrides(inputs)
    change = ChangeSide(
        settings=pr_settings, config=repo_path(pr_config, ws.root) if pr_config is not None else None,
        policy=policy_from_settings(pr_settings, source=str(pr_config or "action inputs"), overrides=overrides),
        template=comment_template_text(inputs.comment_template, pr_settings, pr_config, root=ws.root,
                                       input_name="comment-template"),
        files=[rel for f in loaded.files if (rel := repo_path(f, ws.root)) is not None])
    return base_gate(
        lambda path, what: read_text_at(forge, ws, path, ref, what), lambda path: list_at(forge, ws, path, ref),
        label=lambda path: label_at(ref, path), root=ws.root, eval_sets=list(inputs.eval_sets), config=inputs.config,
        template_input=inputs.comment_template, overrides=overrides, change=change, no_config="action inputs")


def write_report_files(report: Report, inputs: ActionInputs, ws: Workspace) -> None:
    """The JSON report (the artifact the second stage reads) and the JUnit XML."""
    with output_file(ws.path(inputs.report_path), name="input report-path", root=ws.root) as handle:
        write_report_json(report, handle)
    if inputs.junit_path:
        write_junit(ws.path(inputs.junit_path), junit_suites(report), name="input junit-path", root=ws.root)


MAX_BASELINE_BYTES = 100 * 1024 * 1024


def workspace_baseline_text(ws: Workspace, path: str) -> str | None:
    """The workspace's baseline file (a pull request's own, or the branch's on other events; the tree is untrusted: a
    regular file inside the workspace, size-capped); anything else raises InputError (such a file never matches a
    run)."""
    target = ws.path(path)
    if not os.path.lexists(target):  # never raises (a name too long for the system: no file)
        return None
    data = read_regular_file(target, root=ws.root, where=path, what="baseline", limit=MAX_BASELINE_BYTES)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, "", "not valid UTF-8") from None


def commands(inputs: ActionInputs, base_sha: str | None) -> tuple[str, str]:
    """The command that reproduces this run's comparison locally, and the one that refreshes the baseline.

    Run verbatim in the job's workspace, the first gives the same verdict and headline: the same eval sets, runs
    and config, the judge's answers replayed from the job's ``judge-cache`` (``--judge-cache DIR --judge-replay``:
    no credentials needed; the command line replays the answers the job wrote, signed or not) and the gate inputs
    the workflow gave, as flags."""
    args = [*eval_paths(inputs)]
    for run in inputs.actuals:
        args += ["--actuals", run]
    if inputs.config:
        args += ["--config", inputs.config]
    judge = ["--judge-cache", inputs.judge_cache, "--judge-replay"] if inputs.judge_cache else []
    gate = [item for name, value in policy_overrides(inputs).items() if value is not None and name != "block_flaky"
            for item in ("--" + name.replace("_", "-"), str(value))]
    if inputs.block_flaky is not None:
        gate.append("--block-flaky" if inputs.block_flaky else "--no-block-flaky")
    if inputs.comment_template:
        gate += ["--comment-template", inputs.comment_template]
    if inputs.only_affected and base_sha:
        gate.append("--only-affected")
    spec = f"{base_sha}:{inputs.baseline_path}" if base_sha else inputs.baseline_path
    reproduce = shlex.join(["evalbot", "compare", "--baseline", spec, *args, *judge, *gate])
    refresh = shlex.join(["evalbot", "baseline", *args, "--output", inputs.baseline_path])
    return reproduce, refresh


def write_html(comparison: Comparison, inputs: ActionInputs, ws: Workspace) -> str:
    """The self-contained HTML report beside the JSON report; its path as the inputs gave it ("" when skipped)."""
    if not inputs.html_path:
        return ""
    write_output(ws.path(inputs.html_path), html_chunks(comparison), name="input html-path", root=ws.root)
    return inputs.html_path


def plan_stage(inputs: ActionInputs, ctx: GitHubContext, mode: Mode, forge: Forge | None, stream: TextIO) -> Outcome:
    """Mode plan: the eval sets the pull request can affect, as the output ``eval-sets`` (one per line) and in the
    job summary; every eval set on other events. Nothing is evaluated; exit 0 (2 for unusable inputs)."""
    ws = Workspace(ctx.workspace)
    loaded = load_inputs(eval_paths(inputs), config=inputs.config)
    if loaded.errors:
        raise loaded.errors[0]
    change = ctx.change() if mode == "pull_request" else None
    gate = gate_at_base(inputs, ws, forge, change.base_sha, loaded) if change is not None else None
    sel, shown = selection_for(inputs, ws, loaded, gate, change, forge)
    for line in describe(sel, shown):
        print(line, file=stream)
    affected = [shown[p] for p in sel.affected]
    print(f"evalbot: plan: {len(affected)} of {len(sel.eval_sets)} eval set(s) affected", file=stream)
    rows = "\n".join(f"- {'**affected**' if c.affected else 'unaffected'}: {mdsafe.inline(shown[c.path], 300)}: "
                     f"{mdsafe.inline('; '.join(c.reasons), 600)}" for c in sel.eval_sets)
    summarize(ctx, f"### evalbot plan: {len(affected)} of {len(sel.eval_sets)} eval set(s) affected\n\n"
                   + (f"{mdsafe.inline(sel.everything, 1000)}\n\n" if sel.everything else "") + rows + "\n", [])
    return Outcome(verdict="passed", exit_code=EXIT_OK, eval_sets="\n".join(affected))


def first_stage(
    env: Mapping[str, str], inputs: ActionInputs, ctx: GitHubContext, mode: Mode, forge: Forge | None, stream: TextIO
) -> Outcome:
    """pull_request, push and baseline modes."""
    ws = Workspace(ctx.workspace)
    loaded = load_inputs(eval_paths(inputs), config=inputs.config, lines=True)  # lines: for the annotations
    pr = ctx.change() if mode == "pull_request" else None  # a pull request, or a merge queue's group
    baseline_error = None
    gate: GateSettings | None = None
    if mode == "pull_request" and pr is not None:
        gate = gate_at_base(inputs, ws, forge, pr.base_sha, loaded)  # the PR does not set its own gate
        policy, template = gate.policy, gate.template
    else:
        policy, template = policy_and_template(inputs, ws, loaded.settings())
    if mode == "pull_request" and pr is not None:
        baseline, baseline_error = read_baseline_at(forge, ws, inputs.baseline_path, pr.base_sha)
        source = label_at(pr.base_sha, inputs.baseline_path)
        if gate is not None and gate.error:  # the gate's own settings count as part of the yardstick
            baseline_error = "; ".join(
                x for x in (baseline_error, f"the gate settings at the base commit are unreadable: {gate.error}") if x
            )
    else:
        text = workspace_baseline_text(ws, inputs.baseline_path)  # unreadable is an error, not "no baseline"
        baseline = None if text is None else parse_baseline(text, inputs.baseline_path)
        source = inputs.baseline_path
    carried = None
    main_baseline = baseline  # the PR's baseline update is told from main's whole file
    every_set = loaded.eval_sets  # a recorded run of a case in none of them is ignored, with a notice
    ignored: list[tuple[str, str]] = []
    if inputs.only_affected and mode == "pull_request" and pr is not None:
        loaded, baseline, carried = only_affected(inputs, ws, loaded, gate, pr, forge, baseline)
    elif inputs.only_affected:
        log.info("evalbot: only-affected applies to pull requests; mode %s scores every eval set", mode)
    # Split votes that flipped against the baseline are settled in every mode: on a pull request against the base
    # commit's baseline, on main against the committed one, so a refreshed baseline records the larger vote. A
    # shard job settles its own cases (it holds their votes); the merge job checks the parts settled as it would.
    if inputs.shard is not None:
        if baseline_error:
            log.warning("evalbot: shard %s: split votes not settled: %s", inputs.shard, baseline_error)
        return shard_job(inputs, ws, evaluate_inputs(env, inputs, ws, loaded, policy, baseline), stream)
    if inputs.merging:
        try:
            settled = (settle.fingerprint(baseline, policy), settle.described(source, policy))
            report = merged_parts(inputs, ws, loaded, settled)
        except MissingShards as exc:
            return missing_parts(ctx, inputs, mode, forge, exc, stream)
    else:
        recorded = read_actuals(inputs.actuals)  # read once: scored, and checked for runs of no case
        report = evaluate_inputs(env, inputs, ws, loaded, policy, baseline, recorded)
        ignored = unused_runs(recorded, every_set)
    write_report_files(report, inputs, ws)
    if mode == "pull_request" and not inputs.merging:
        copy_runs(inputs, ws)  # uploaded with the report: the fork-safe second stage re-measures these
    update = None
    if mode == "pull_request" and pr is not None:
        update = proposed_baseline(lambda: workspace_baseline_text(ws, inputs.baseline_path), main_baseline,
                                   inputs.baseline_path)
        if carried is not None:
            update = carried_update(update, carried)
    required = mode == "pull_request" and pr is not None  # no baseline at the base commit is not a pass there
    similar = (similar_baselines(forge, ws, inputs.baseline_path, pr.base_sha)
               if required and pr is not None and baseline is None and baseline_error is None and update is None
               else [])
    comparison = compare(current=report, baseline=baseline, policy=policy, baseline_source=source,
                         baseline_error=baseline_error, create=baseline_command(inputs), proposed=update,
                         credentials_expected=credentials_expected(ctx), baseline_required=required, similar=similar,
                         budget_changes=gate.budget_changes if gate is not None else (),
                         pr_budgets=gate.pr_budgets if gate is not None else None)
    comparison.carried = carried
    if gate is not None and pr is not None:
        comparison.policy_changes = gate.changes
        comparison.notes = [*gate.notes, *comparison.notes]
        comparison.commit = pr.head_sha
        comparison.reproduce_command, comparison.refresh_command = commands(inputs, pr.base_sha)
        if comparison.gate.verdict == "blocked":
            comparison.accept_command = accept_command(comparison.refresh_command, entries_to_accept(comparison),
                                                       f"{pr.base_sha}:{inputs.baseline_path}")
        if comparison.baseline_update is not None and comparison.baseline_update.stale:
            print(workflow.annotation("error", f"{comparison.baseline_update.differences[0]}; rewrite it on the base "
                                      f"commit's baseline: {comparison.accept_command}", title="evalbot: stale "
                                      "baseline update"), file=stream)
        comparison.merge_queue = pr.merge_queue
    if ignored:  # as the fork-safe second stage says it of the default branch's eval sets
        comparison.notes.append(ignored_note(ignored))
        print(workflow.annotation("notice", comparison.notes[-1], title="evalbot"), file=stream)
    note_not_rerun(comparison, policy.rerun_flipped)  # the Action scores recorded runs only
    html_path = write_html(comparison, inputs, ws)
    link = links(ctx, inputs)
    print_annotations(comparison, line_of=loaded.case_line, display=ws.relative, stream=stream)
    notices: list[str] = []
    published = None
    fork_first_stage = mode == "pull_request" and pr is not None and not credentials_expected(ctx)
    if fork_first_stage and pr is not None:
        notices.append(FORK_FIRST_STAGE.format(sha=pr.head_sha[:12]))
        print(workflow.annotation("notice", notices[-1], title="evalbot: first stage of a fork's pull request"),
              file=stream)
    if pr is not None and pr.number is not None:  # a merge queue's group has no PR to comment on
        marker = comment_marker(inputs.comment_id)
        body = render_comment(comparison, marker=marker, links=link, template=template)
        published = post_comment(forge, number=pr.number, marker=marker, body=body, stream=stream)
        notices += [published.notice] if published.notice else []
    if mode in ("push", "baseline"):
        refreshed, refusal = refresh_baseline(report, inputs, ctx, mode, forge, ws, stream, committed=baseline,
                                              budgets=policy.budgets)
        notices += refreshed
        if refusal is not None and comparison.gate.exit_code == EXIT_OK:  # asked for a baseline, could not measure it
            comparison.gate = Gate(verdict="error", exit_code=EXIT_UNAVAILABLE,
                                   reasons=[f"baseline not refreshed: {refusal}", *comparison.gate.reasons])
    summarize(ctx, render_summary(comparison, links=link), notices, html_path)
    where = "merge queue: " if comparison.merge_queue else "fork's first stage, not the gate: " if fork_first_stage else ""
    print(f"evalbot: {where}{comparison.gate.verdict} (exit {comparison.gate.exit_code})", file=stream)
    return outcome_of(comparison, inputs, published, html_path)


def refresh_baseline(
    report: Report,
    inputs: ActionInputs,
    ctx: GitHubContext,
    mode: Mode,
    forge: Forge | None,
    ws: Workspace,
    stream: TextIO,
    *,
    committed: Baseline | None = None,
    budgets: Mapping[str, str] | None = None,
) -> tuple[list[str], str | None]:
    """Mode baseline writes the file; with update-baseline on the default branch it is also committed. Returns the
    notices for the summary and, when the run's judged verdicts were not measured, why it was refused.

    ``committed`` is the workspace's baseline as read before the run (the pushed commit's file, which an unreadable
    one already stopped with exit 2): each case's history continues from it, so every push to the default branch
    adds its run; a re-run of the same commit replaces its entry and, its results unchanged, commits nothing.
    ``budgets``: the policy's, recorded in the file (a pull request's update recording its own accepts loosening).
    """
    if mode == "push" and not inputs.update_baseline:
        return [], None
    if exit_code(report) == EXIT_INVALID_INPUT:
        return ["The baseline was not refreshed: some inputs are invalid or cases errored (see above)."], None
    unmeasured = unmeasured_for_baseline(report) or custom_not_run(report)
    if unmeasured is not None:
        notice = f"The baseline was not refreshed: {unmeasured}. The committed baseline is kept."
        print(workflow.annotation("error", notice, title="evalbot baseline"), file=stream)
        return [notice], unmeasured
    created = datetime.now(UTC).replace(microsecond=0).isoformat()
    notices: list[str] = []
    if committed is not None and not committed.compatible:
        notices.append(f"The previous baseline at {inputs.baseline_path} uses schema version "
                       f"{committed.schema_version}: its case histories (flaky-case memory) cannot be carried "
                       "forward, so they start afresh with this run.")
        print(workflow.annotation("warning", notices[-1], title="evalbot baseline"), file=stream)
    fresh = build_baseline(report, commit=ctx.sha or None, created_at=created, previous=committed, budgets=budgets)
    text = dump_baseline(fresh)
    if mode == "baseline":
        write_output(ws.path(inputs.baseline_path), text, name="input baseline-path", root=ws.root)
        print(f"evalbot: wrote the baseline to {inputs.baseline_path}", file=stream)
    if not inputs.update_baseline:
        return notices, None
    if not on_default_branch(ctx) or forge is None or not ctx.default_branch:
        return [*notices,
                "update-baseline applies only to pushes to the default branch with a github-token; not committed."], None
    if mode == "push" and committed is not None and same_scores(committed, fresh):
        print("evalbot: the committed baseline already has these results (a re-run of the same commit); not "
              "committed again", file=stream)
        return notices, None
    try:
        sha = forge.commit_file(
            path=inputs.baseline_path, content=text, branch=ctx.default_branch, message=BASELINE_MESSAGE
        )
    except ForgeError as exc:
        print(workflow.annotation("warning", f"baseline not committed: {exc}", title="evalbot baseline"), file=stream)
        return [*notices, f"The refreshed baseline could not be committed: {exc}"], None
    print(f"evalbot: baseline {'unchanged' if sha is None else 'committed as ' + sha[:12]}", file=stream)
    return notices, None
