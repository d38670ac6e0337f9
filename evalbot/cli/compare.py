"""``evalbot baseline``, ``evalbot compare`` and ``evalbot merge``: the command-line edge of the baseline, comparison and rendering.

Reads argv, the environment (GITHUB_SHA), the clock, files and ``git``; everything it calls is pure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import posixpath
import shlex
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import evalbot.cli.args as cli_args
import evalbot.cli.groups as cli_groups
from evalbot.basecommit.gate import (
    ChangeSide,
    GateSettings,
    baseline_by_git,
    gate_at_base,
    label_at,
    list_by_git,
    read_by_git,
    repo_path,
    similar_baselines,
)
from evalbot.cli.agent import add_agent_args, agent_run
from evalbot.cli.evaluate import (
    StreamedRun,
    add_eval_args,
    estimate_run,
    evaluate_args,
    flag_budget,
    judge_context,
    show_report,
    write_report,
    write_text,
)
from evalbot.compare import settle
from evalbot.compare.accept import ProposedBaseline, proposed_baseline
from evalbot.compare.baseline import (
    DEFAULT_BASELINE_PATH,
    HISTORY_LIMIT,
    Baseline,
    BaselineSpec,
    accept_command,
    build_baseline,
    create_command,
    dump_baseline,
    parse_baseline,
    parse_spec,
    read_baseline,
    recorded_regressions,
    restricted,
    with_accepted,
)
from evalbot.compare.carry import carried_update, carry
from evalbot.compare.delta import compare, entries_to_accept
from evalbot.compare.gate import MAX_RESAMPLE, GatePolicy, measured_nothing, policy_from_settings
from evalbot.compare.judge_gaps import unmeasured_for_baseline
from evalbot.compare.merge_driver import merge_baselines
from evalbot.compare.model import Carried
from evalbot.compare.passrule import apply_pass_rules
from evalbot.compare.reruns import note_not_rerun
from evalbot.errors import (
    EXIT_FAILED,
    EXIT_INVALID_INPUT,
    EXIT_OK,
    EXIT_UNAVAILABLE,
    ConfigError,
    EvalbotError,
    InputError,
)
from evalbot.forge.base import ForgeUnavailable
from evalbot.git import ancestry_warning, changed_since, ref_problem, run_git
from evalbot.load import discover
from evalbot.pipeline import (
    Inputs,
    PackedSpill,
    ballots_for,
    exit_code,
    load_inputs,
    rerun_flipped,
    settings_for,
    settle_split_votes,
    with_costs,
)
from evalbot.render.comment import Links, comment_marker, render_comment, render_summary, render_unmeasured
from evalbot.render.console import render_text
from evalbot.render.html import html_chunks
from evalbot.render.template_files import comment_template_text, read_regular_file, read_template_file
from evalbot.results import Report
from evalbot.selection import Selection, SetChoice, everything, plan_change
from evalbot.shard.merge import MissingShards, check_loaded, check_settled, loading_parts, merge_reports, merge_streamed
from evalbot.shard.parts import part_bytes, part_files, part_from_bytes

MAX_BASELINE_BYTES = 100 * 1024 * 1024

Command = Callable[[argparse.Namespace, Mapping[str, str]], int]


_POLICY_FLAGS = ("fail_on", "judge_failures", "tolerance", "alpha", "comment_template")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def cli_commands(args: argparse.Namespace, baseline: str, output: str) -> tuple[str | None, str | None]:
    """This comparison's command line (without output options) and the ``evalbot baseline`` that refreshes it: run
    as shown in the same checkout, the first gives the same verdict and headline (same eval sets, runs, config, judge
    cache and replay, and the gate options given on this command line; a merged run settled its split votes as one
    job would, ``check_settled``). None when the eval sets are not known (an ``evalbot merge`` without
    ``--eval-sets``): a command that cannot work is not shown."""
    if not args.paths:
        return None, None
    common = [*args.paths]
    for run in args.actuals or []:
        common += ["--actuals", run]
    if args.config:
        common += ["--config", args.config]
    if getattr(args, "agent", None):
        common += ["--agent", args.agent]
    if getattr(args, "adk_agent", None):
        common += ["--adk-agent", args.adk_agent]
    if (getattr(args, "num_runs", None) or 1) > 1:
        common += ["--num-runs", str(args.num_runs)]
    if getattr(args, "judge_cache", None):
        common += ["--judge-cache", str(args.judge_cache)]
    if getattr(args, "judge_replay", False):
        common.append("--judge-replay")
    if getattr(args, "resample_split", None) is not None:
        common += ["--resample-split", str(args.resample_split)]
    gate = [item for name in _POLICY_FLAGS if getattr(args, name, None) is not None
            for item in (_flag(name), str(getattr(args, name)))]
    if getattr(args, "block_flaky", None) is not None:
        gate.append("--block-flaky" if args.block_flaky else "--no-block-flaky")
    if getattr(args, "only_affected", False):
        gate.append("--only-affected")
    reproduce = shlex.join(["evalbot", "compare", "--baseline", baseline, *common, *gate])
    return reproduce, shlex.join(["evalbot", "baseline", *common, "--output", output])


@dataclass(frozen=True)
class Yardstick:
    """What a comparison is measured against: the gate policy, the baseline and the comment template; with a
    ``REF:PATH`` baseline, the gate as read at ``REF`` (what the working tree would change in it: ``gate``) and the
    working tree's changed ``PATH`` as the change's baseline update."""

    policy: GatePolicy
    spec: BaselineSpec
    baseline: Baseline | None
    template: str | None
    proposed: ProposedBaseline | None = None
    gate: GateSettings | None = None
    baseline_error: str | None = None
    """Why the baseline or the gate's settings at ``REF`` could not be read (the verdict is then ``error``)."""
    warnings: tuple[str, ...] = ()
    """What to warn about the yardstick (a ``REF`` that is not an ancestor of HEAD)."""


def working_tree_update(spec: BaselineSpec, baseline: Baseline | None) -> ProposedBaseline | None:
    """With ``--baseline REF:PATH``, the working tree's ``PATH`` when it differs from the one at ``REF``: the PR's
    baseline update, as the Action takes the PR's file (a regular file, size-capped; unreadable: not usable)."""
    if spec.ref is None:
        return None
    return proposed_baseline(lambda: _baseline_text(spec.path), baseline, spec.path)


def yardstick(
    args: argparse.Namespace, settings: dict[str, Any], config: Path | None, files: Sequence[Path] = ()
) -> Yardstick:
    """The policy (config section and flags), the baseline (file or REF:PATH) and the template of ``args``.

    With ``--baseline REF:PATH`` the policy and the template are ``REF``'s, as the Action reads them at a pull
    request's base commit (:func:`gate_at_ref`); with a plain file they are the working tree's config's (``files``:
    the run's eval set files, whose configs are looked for at ``REF``)."""
    overrides = {"fail_on": args.fail_on, "tolerance": args.tolerance, "alpha": args.alpha,
                 "judge_failures": args.judge_failures, "block_flaky": args.block_flaky,
                 # merge judges nothing: it has neither flag
                 "sampling": getattr(args, "sampling", None), "resample_split": getattr(args, "resample_split", None)}
    policy: GatePolicy = policy_from_settings(settings, source=str(config or "command line"), overrides=overrides)
    raw_spec = args.baseline or settings.get("baseline_path") or DEFAULT_BASELINE_PATH
    spec = parse_spec(str(raw_spec), file_exists=os.path.isfile)
    template = comment_template_text(args.comment_template, settings, config)  # the working tree's: still checked
    if spec.ref is None:
        return Yardstick(policy, spec, read_baseline(spec, git=run_git, read_file=_baseline_text), template)
    unknown = ref_problem(spec.ref, git=run_git)
    if unknown is not None:  # one root error, said once: nothing at all can be read at a ref that is not there
        return Yardstick(GatePolicy(), spec, None, None, None, GateSettings(GatePolicy(), None, error=unknown),
                         f"cannot read the baseline or the gate settings: {unknown}")
    change = ChangeSide(settings=settings, config=None, policy=policy, template=template, files=[])
    gate = gate_at_ref(args, spec.ref, change, config, files, overrides)
    baseline, unread = baseline_by_git(run_git, spec.ref, spec.path)
    update = None if unread else working_tree_update(spec, baseline)  # an unreadable baseline has no update
    gate_error = f"the gate settings at {spec.ref} are unreadable: {gate.error}" if gate.error else None
    error = "; ".join(x for x in (unread, gate_error) if x) or None  # the gate's settings are part of the yardstick
    warning = ancestry_warning(spec.ref, git=run_git)
    return Yardstick(gate.policy, spec, baseline, gate.template, update, gate, error,
                     warnings=(warning,) if warning else ())


def repository() -> tuple[Path, str]:
    """The working tree's top folder and the current directory's path in it (``sub/dir/``, "" at the top); raises
    ForgeUnavailable when git cannot say (no repository, no git): the gate at ``REF`` cannot be read then."""
    found = run_git(["rev-parse", "--show-toplevel", "--show-prefix"])
    lines = found.stdout.split("\n")
    if found.returncode != 0 or len(lines) < 2 or not lines[0]:
        why = found.stderr.strip().splitlines()[-1] if found.stderr.strip() else f"exit code {found.returncode}"
        raise ForgeUnavailable("find the repository", f"git rev-parse failed: {why}")
    return Path(lines[0]), lines[1]


def _in_repository(raw: str, root: Path, prefix: str) -> str | None:
    """A path given on the command line (relative to the current directory) as a repository path, taken as text
    (the working tree, where a folder may have become a symlink, is not consulted); None when outside it."""
    if Path(raw).is_absolute():
        try:
            return Path(os.path.normpath(raw)).relative_to(root).as_posix()
        except ValueError:
            return repo_path(raw, root)
    rel = posixpath.normpath(posixpath.join(prefix, Path(raw).as_posix()))
    return None if rel == ".." or rel.startswith("../") else rel


def gate_at_ref(
    args: argparse.Namespace, ref: str, change: ChangeSide, config: Path | None, files: Sequence[Path],
    overrides: Mapping[str, Any],
) -> GateSettings:
    """The gate at ``REF``, read with git exactly as the Action reads it at a pull request's base commit
    (:func:`evalbot.basecommit.gate.gate_at_base`): ``REF``'s configs beside ``REF``'s eval sets under the same
    paths (or ``--config`` at ``REF``), then those beside the working tree's eval sets as they are at ``REF``; the
    flags override it as the Action's inputs do. The working tree's section and template (``change``) are compared
    with it, each difference a notice; git failing is the gate's ``error`` (exit 3), never the working tree's."""
    try:
        root, prefix = repository()
    except ForgeUnavailable as exc:
        return GateSettings(policy=GatePolicy(), template=None, error=str(exc))
    change = replace(change, config=repo_path(config.absolute(), root) if config is not None else None,
                     files=[rel for f in files if (rel := repo_path(f.absolute(), root)) is not None])
    template_input = given = None
    if args.comment_template:  # a file in the repository is read at REF; one outside it is the user's own
        template_input = _in_repository(args.comment_template, root, prefix)
        if template_input is None:
            given = read_template_file(Path(args.comment_template), root=None, where="--comment-template")
    return gate_at_base(
        lambda path, what: read_by_git(run_git, ref, path, what), lambda path: list_by_git(run_git, ref, path),
        label=lambda path: label_at(ref, path), root=root,
        eval_sets=[rel for raw in args.paths if (rel := _in_repository(raw, root, prefix)) is not None],
        config=(_in_repository(args.config, root, prefix) or str(Path(args.config).absolute())) if args.config
        else None,  # a config outside the repository is not REF's: no section, as the Action's config input
        template_input=template_input, overrides=overrides, change=change, no_config="command line",
        template_given=given)


def finish_compare(args: argparse.Namespace, report: Report, ruler: Yardstick, notes: Sequence[str] = (),
                   carried: Carried | None = None) -> int:
    """Compare ``report`` with the baseline, write the report, summary, HTML and comment; the gate's exit code.
    ``notes``: notices of the run for the comment (reruns capped); ``carried``: the eval sets ``--only-affected``
    did not score."""
    gate = ruler.gate
    # A baseline read at REF, as CI reads the base commit's: none there blocks, as in the Action (a mistyped path must
    # not pass as "no baseline yet"), unless the working tree's file creates it; a plain file may simply not exist yet.
    required = ruler.spec.ref is not None and ruler.baseline is None and ruler.baseline_error is None
    similar = (similar_baselines(lambda where: list_by_git(run_git, str(ruler.spec.ref), where), ruler.spec.path)
               if required and ruler.proposed is None else [])
    comparison = compare(current=report, baseline=ruler.baseline, policy=ruler.policy,
                         baseline_source=ruler.spec.label, baseline_error=ruler.baseline_error,
                         create=create_command(ruler.spec.path, eval_sets=args.paths, actuals=args.actuals or ()),
                         proposed=ruler.proposed, budget_changes=gate.budget_changes if gate is not None else (),
                         pr_budgets=gate.pr_budgets if gate is not None else None,
                         # the command line has no fork stage without secrets: a judged criterion without
                         # credentials is not measured, which the judge-failures policy decides (block by default)
                         credentials_expected=True, baseline_required=required, similar=similar)
    if gate is not None:  # REF's gate: what the working tree would change in it, as the Action's notices
        comparison.policy_changes = gate.changes
        comparison.notes = [*gate.notes, *comparison.notes]
        for text in gate.notes + ([f"this change's gate policy ({'; '.join(gate.changes)}) takes effect after the "
                                   f"merge; this run uses {ruler.spec.ref}'s"] if gate.changes else []):
            print(f"evalbot: notice: {text}", file=sys.stderr)
    comparison.notes += notes
    comparison.carried = carried
    comparison.gate = measured_nothing(comparison.gate, report.totals.cases, carried.cases if carried else 0)
    if not (getattr(args, "agent", None) or getattr(args, "adk_agent", None)):
        note_not_rerun(comparison, ruler.policy.rerun_flipped)
    if ruler.proposed is not None:
        note = (f"{ruler.proposed.path} in the working tree differs from {ruler.spec.label}: taken as this change's "
                "baseline update (the entries it changes are accepted when this run confirms them)")
        comparison.notes.append(note)
        print(f"evalbot: notice: {note}", file=sys.stderr)
    comparison.alerts = [*ruler.warnings, *comparison.alerts]
    for alert in comparison.alerts:
        print(f"evalbot: warning: {alert}", file=sys.stderr)
    comparison.reproduce_command, comparison.refresh_command = cli_commands(args, ruler.spec.label, ruler.spec.path)
    if comparison.refresh_command is not None and comparison.gate.verdict == "blocked":
        comparison.accept_command = accept_command(comparison.refresh_command, entries_to_accept(comparison),
                                                   ruler.spec.label)
    update = comparison.baseline_update
    if update is not None and update.stale:
        print(f"evalbot: {update.differences[0]}; rewrite it on {ruler.spec.label}: "
              f"{comparison.accept_command or comparison.refresh_command}", file=sys.stderr)
    links = Links(summary=args.summary, report=args.report)
    comment = render_comment(comparison, marker=comment_marker(args.comment_id), links=links, template=ruler.template)
    if args.report:
        write_report(report, args.report)
    if args.summary:
        write_text(args.summary, render_summary(comparison, links=links), "--summary")
    if args.html:
        write_text(args.html, html_chunks(comparison), "--html")
    if args.comment:
        write_text(args.comment, comment, "--comment")
        print(f"evalbot: {comparison.gate.verdict} (exit {comparison.gate.exit_code}); comment written to "
              f"{args.comment} ({len(comment):,} characters)")
    else:
        sys.stdout.write(comment)
    return comparison.gate.exit_code


COMPARING = ("comment", "summary", "html", "fail_on", "judge_failures", "block_flaky", "tolerance", "comment_template")
"""What only the merge of a sharded run does. A shard job takes the options that settle split votes (--baseline,
--resample-split, --alpha; for baseline: --previous): it settles its own cases, as one job would."""


def cmd_shard_part(args: argparse.Namespace, env: Mapping[str, str], output: str, flag: str) -> int:
    """``compare`` / ``baseline`` with ``--shard K/N``: evaluate the shard, settle its split votes against the
    baseline (compare: --baseline or the config's; baseline: --previous) and write its part of the report;
    comparing (or writing the baseline) is ``evalbot merge``'s job once every part is there. Exit 0 unless inputs
    are invalid."""
    given = [f"--{name.replace('_', '-')}" for name in COMPARING if getattr(args, name, None) is not None]
    if given:
        raise ConfigError(f"--shard: a shard job only writes its part of the report; give {', '.join(given)} to "
                          "`evalbot merge`, which joins the parts")
    if not output:
        raise ConfigError(f"--shard needs {flag} PART.json: where to write this shard's part of the report")
    inputs = load_inputs(args.paths, config=args.config)
    settings, config = inputs.settings()
    if args.command == "compare":
        ruler = yardstick(args, settings, config, inputs.files)
        baseline, policy = ruler.baseline, ruler.policy
        if ruler.baseline_error:
            print(f"evalbot: warning: shard {args.shard}: split votes not settled: {ruler.baseline_error}",
                  file=sys.stderr)
    else:
        baseline, policy = (_previous_for_shard(args), refresh_policy(args, settings, config))
    report = evaluate_settled(args, env, inputs, baseline, policy)
    write_report(report, output, flag)
    print(render_text(report))
    print(f"wrote {output}: part {args.shard} of the run ({report.totals.cases} case(s)); join the parts with "
          "`evalbot merge PART.json...`")
    return EXIT_INVALID_INPUT if exit_code(report) == EXIT_INVALID_INPUT else EXIT_OK


def cmd_compare(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot compare``: evaluate, compare with the baseline, print or write the comment, exit with the gate."""
    if args.shard is not None:
        return cmd_shard_part(args, env, args.report, "--report")
    inputs = load_inputs(args.paths, config=args.config)
    settings, config = inputs.settings()
    ruler = yardstick(args, settings, config, inputs.files)
    carried = None
    if args.only_affected:
        inputs, ruler, carried = only_affected(args, inputs, ruler)
    ruler = for_selection(ruler, inputs)
    if args.estimate:  # the eval sets the comparison would score (--only-affected: the affected ones), none sent
        return estimate_run(args, inputs, ruler.policy, env)
    notes: list[str] = []
    report = evaluate_settled(args, env, inputs, ruler.baseline, ruler.policy, rerun_notes=notes)
    return finish_compare(args, report, ruler, notes, carried)


def selection_at(ref: str, files: Sequence[Path], config: str | None, policy: GatePolicy | None,
                 policy_error: str | None, root: Path, baseline: str) -> tuple[Selection, dict[str, str]]:
    """The selection of the eval set ``files`` against ``ref`` under ``policy`` (REF's; ``policy_error``: why it
    could not be read), and each repository path's name as the command line gave it. An eval set outside the
    repository is always affected. ``config`` (``--config``, applied to every eval set) and ``baseline`` (the
    baseline file's repository path, every eval set's yardstick) changed affect every eval set."""
    shown: dict[str, str] = {}
    outside: list[str] = []
    for f in files:
        rel = repo_path(f.absolute(), root)
        if rel is None:
            outside.append(str(f))
        else:
            shown.setdefault(rel, str(f))
    always = [posixpath.normpath(baseline)]
    if config and (rel := repo_path(Path(config).absolute(), root)) is not None:
        always.append(rel)
    sel = plan_change(list(shown), policy.affected_by if policy is not None else None,
                      lambda: changed_since(ref, git=run_git).files, policy_error=policy_error, always=always)
    if outside:
        extra = everything(outside, "outside the repository: no change can be told apart for it")
        sel = replace(sel, eval_sets=sel.eval_sets + extra.eval_sets)
        shown.update({p: p for p in outside})
    return sel, shown


def only_affected(args: argparse.Namespace, inputs: Inputs, ruler: Yardstick) -> tuple[Inputs, Yardstick, Carried]:
    """``compare --only-affected``: the inputs cut to the eval sets the change can affect against the baseline's
    ``REF`` (its policy's ``affected_by``), the yardstick whose baseline leaves the others out, and what is
    carried. Needs ``--baseline REF:PATH``: the base the change is measured against."""
    ref = ruler.spec.ref
    if ref is None:
        raise InputError("--only-affected", "", "needs --baseline REF:PATH (e.g. origin/main:.evalbot/baseline.json): "
                                                "the base whose affected_by decides and whose results are carried")
    if args.shard is not None:
        raise ConfigError("--only-affected with --shard is not supported: run the affected eval sets unsharded, or "
                          "every eval set sharded")
    try:
        root, _ = repository()
    except ForgeUnavailable as exc:  # cannot tell what changed: everything is scored
        choices = tuple(SetChoice(str(f), True, (str(exc),)) for f in inputs.files)
        sel, shown = Selection(choices, (), str(exc)), {str(f): str(f) for f in inputs.files}
    else:
        gate = ruler.gate
        sel, shown = selection_at(ref, inputs.files, args.config, ruler.policy if gate and not gate.error else None,
                                  gate.error if gate is not None else None, root, ruler.spec.path)
    return restrict(inputs, ruler, sel, shown)


def restrict(inputs: Inputs, ruler: Yardstick, sel: Selection, shown: Mapping[str, str]
             ) -> tuple[Inputs, Yardstick, Carried]:
    """``inputs`` and ``ruler`` cut to the affected eval sets of ``sel`` (``shown``: repository path -> the path the
    eval set was loaded from), and what is carried."""
    cut, flags = inputs.only({shown[p] for p in sel.affected})
    baseline, carried = carry(ruler.baseline, flags)
    for note in sel.notes:
        print(f"evalbot: notice: {note}", file=sys.stderr)
    print(f"evalbot: only-affected: {len(cut.files)} of {len(inputs.files)} eval set(s) affected"
          + (f" ({sel.everything})" if sel.everything else "")
          + (f"; {len(carried.eval_sets)} carried from main" if carried.eval_sets else ""), file=sys.stderr)
    return cut, replace(ruler, baseline=baseline, proposed=carried_update(ruler.proposed, carried)), carried


def for_selection(ruler: Yardstick, inputs: Inputs) -> Yardstick:
    """With ``FILE:case1,case2``, the comparison covers what was run: the baseline's eval sets that were run, and
    their selected cases, so nothing left out reads as removed. A baseline update in the working tree covers every
    case, so it is not checked against a selection (a notice says so)."""
    if not inputs.selected or ruler.baseline is None:
        return ruler
    cases = {es.eval_set_id: inputs.selected.get(es.eval_set_id) for es in inputs.eval_sets}
    if ruler.proposed is not None:
        print(f"evalbot: the baseline update in the working tree ({ruler.spec.path}) is not checked: this run "
              "selects cases (FILE:case1,case2); compare without a selection to check it", file=sys.stderr)
    return replace(ruler, baseline=restricted(ruler.baseline, cases), proposed=None)


def evaluate_settled(args: argparse.Namespace, env: Mapping[str, str], inputs: Inputs, baseline: Baseline | None,
                     policy: GatePolicy, *, rerun_notes: list[str] | None = None) -> Report:
    """Evaluate, then settle the judged verdicts that flipped against ``baseline`` on a split vote (compare: the
    baseline compared with; baseline: the one being replaced). With ``rerun_notes`` (compare) and an agent to run,
    the cases that flipped against ``baseline`` are rerun (``rerun_flipped``); the notices are added there."""
    ctx = replace(with_costs(judge_context(args, env, policy.sampling), policy, flag_budget(args)),
                  ballots=ballots_for(baseline, policy),
                  spill_store=PackedSpill())  # the report holds every case: their turns and verdicts wait on disk
    report = evaluate_args(args, env, inputs, ctx)
    settle_split_votes(report, baseline, ctx, policy)
    run = agent_run(args) if rerun_notes is not None else None
    if run is not None and rerun_notes is not None:
        rerun_notes += rerun_flipped(inputs, run, report, baseline, ctx, policy,
                                     say=lambda text: print(f"evalbot: {text}", file=sys.stderr))
    return report


def _baseline_text(path: str) -> str | None:
    """The text of the baseline file at ``path`` (None when there is none); a regular file, size-capped, UTF-8."""
    if not os.path.lexists(path):  # never raises: a name too long for the system is read below, saying so
        return None
    data = read_regular_file(Path(path), root=None, where=path, what="baseline", limit=MAX_BASELINE_BYTES)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError(path, "", "not valid UTF-8") from None


def _read_previous(path: str) -> Baseline | None:
    """The baseline file at ``path`` (None when there is none)."""
    text = _baseline_text(path)
    return None if text is None else parse_baseline(text, path)


def previous_baseline(args: argparse.Namespace, output: str) -> tuple[Baseline | None, str]:
    """The baseline whose case histories the new one continues (``--previous``, else the ``--output`` file when it
    exists), and a line saying where the history comes from. A previous baseline that cannot be read stops the
    command (its history would be lost silently otherwise) unless ``--reset-history`` is given."""
    if args.reset_history:
        return None, "history: started afresh (--reset-history)"
    source = args.previous or output
    flag = "--previous" if args.previous else "--output"
    try:
        if args.previous:
            spec = parse_spec(args.previous, file_exists=os.path.isfile)
            previous = read_baseline(spec, git=run_git, read_file=_baseline_text) if spec.ref else \
                _read_previous(spec.path)
            if previous is None:
                raise InputError(args.previous, "", "no baseline there to continue the history from")
        else:
            previous = _read_previous(output)
    except EvalbotError as exc:
        raise EvalbotError(f"{flag} {source}: the previous baseline cannot be read, so its case histories (the "
                           f"flaky-case memory) cannot be carried forward: {exc}. Fix or remove it, or pass "
                           "--reset-history to start the history afresh") from None
    if previous is None:
        return None, "history: none yet (no previous baseline); each refresh adds one outcome per case"
    if not previous.compatible:
        return None, (f"warning: history started afresh: {source} uses baseline schema version "
                      f"{previous.schema_version}, which this evalbot cannot carry forward")
    return previous, f"history: carried forward from {source} (last {HISTORY_LIMIT} outcomes per case)"


def write_baseline(
    args: argparse.Namespace, env: Mapping[str, str], report: Report, output: str,
    budgets: Mapping[str, str] | None = None,
) -> int:
    """Write the baseline of ``report`` (refused when inputs are invalid, unless --allow-errors), continuing the case
    histories of the previous baseline; ``budgets``: the config's, recorded in the file."""
    previous, history_note = previous_baseline(args, output)
    if exit_code(report) == EXIT_INVALID_INPUT and not args.allow_errors:
        print(render_text(report), file=sys.stderr)
        print("error: the run has invalid inputs or cases that could not be evaluated; fix them or pass "
              "--allow-errors to record them as errors in the baseline", file=sys.stderr)
        return EXIT_INVALID_INPUT
    unmeasured = unmeasured_for_baseline(report)
    if unmeasured is not None and not args.allow_errors:
        print(render_text(report), file=sys.stderr)
        print(f"error: the baseline was not written: {unmeasured}. Fix the judge (or its credentials) and run again, "
              "or pass --allow-errors to record them as not evaluated", file=sys.stderr)
        return EXIT_UNAVAILABLE
    commit = args.commit or env.get("GITHUB_SHA") or None
    if commit is None:
        head = run_git(["rev-parse", "HEAD"])
        commit = head.stdout.strip() if head.returncode == 0 else None
    created_at = args.created_at or datetime.now(UTC).replace(microsecond=0).isoformat()
    baseline = build_baseline(report, commit=commit, created_at=created_at, previous=previous, budgets=budgets)
    accepted = getattr(args, "accept", None) or []
    written: list[str] = []
    if accepted:
        if previous is None:
            raise ConfigError("--accept needs the previous baseline (main's): pass --previous REF:PATH")
        try:
            baseline, written = with_accepted(previous, baseline, accepted)
        except KeyError as exc:
            raise ConfigError(f"--accept {exc.args[0]}") from None
    for line in recorded_regressions(previous, baseline):
        print(f"evalbot: warning: {line} recorded: this baseline accepts that regression (commit it only if it is "
              "intended)", file=sys.stderr)
    write_text(output, dump_baseline(baseline), "--output")
    cases = sum(len(es.cases) for es in baseline.eval_sets.values())
    print(render_text(report))
    if accepted:
        print(f"wrote {output}: {args.previous or output} with {len(written)} entr{'y' if len(written) == 1 else 'ies'} "
              f"refreshed from this run ({', '.join(written)}); every other entry as it was")
    else:
        print(f"wrote {output}: {len(baseline.eval_sets)} eval set(s), {cases} case(s), commit {commit or 'unknown'}")
    print(f"evalbot: {history_note}")
    return EXIT_OK


def cmd_baseline(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot baseline``: evaluate and write the baseline file (refused when inputs are invalid).

    A judged verdict that flipped against the previous baseline on a split vote is settled first, as on a pull
    request (``resample_split``): the baseline later pull requests are measured against records the larger vote,
    not the noise of one small one."""
    if args.shard is not None:
        if not args.output:
            raise ConfigError("--shard needs --output PART.json: where to write this shard's part of the report")
        return cmd_shard_part(args, env, args.output, "--output")
    inputs = load_inputs(args.paths, config=args.config)
    settings, config = inputs.settings()
    if args.estimate:  # what refreshing the baseline would ask the judge; nothing sent, nothing written
        return estimate_run(args, inputs, refresh_policy(args, settings, config), env)
    if args.output is None:
        args.output = baseline_output(settings, config)
    if args.previous is None and not args.reset_history:
        args.previous = base_branch_baseline(args.output)
    previous, _ = previous_baseline(args, args.output)  # before evaluating: an unusable previous baseline fails fast
    if args.accept and previous is None:
        raise ConfigError("--accept writes main's baseline with only the named entries refreshed: it needs that "
                          "baseline; pass --previous REF:PATH (e.g. origin/main:.evalbot/baseline.json)")
    if inputs.selected and not args.accept:
        print("evalbot: warning: this run selects cases (FILE:case1,case2): the baseline written holds only the "
              "cases run, so it drops every other case and `evalbot compare` reads that as removals; to refresh "
              "only some cases in main's baseline, use --accept SET/CASE", file=sys.stderr)
    policy = refresh_policy(args, settings, config)
    return write_baseline(args, env, evaluate_settled(args, env, inputs, previous, policy), args.output,
                          budgets=policy.budgets)


def baseline_output(settings: Mapping[str, Any], config: Path | None) -> str:
    """Where ``evalbot baseline`` writes without ``--output``: the config's ``evalbot.baseline_path`` (its PATH when it
    is ``REF:PATH``), else the default; a value that is no writable file path is exit 2 naming the config's key."""
    raw = settings.get("baseline_path", DEFAULT_BASELINE_PATH)
    where = f"{config or 'the config'}: evalbot.baseline_path"
    if not isinstance(raw, str) or not raw.strip():
        raise InputError(str(config or "test_config.json"), "/evalbot/baseline_path",
                         f"expected a file path such as {DEFAULT_BASELINE_PATH}, got {raw!r}")
    path = parse_spec(raw, file_exists=os.path.isfile).path
    try:
        return cli_args.output_file(path)
    except argparse.ArgumentTypeError as exc:
        raise EvalbotError(f"{where} ({path!r}) cannot be written: {exc}; give --output FILE") from None


def base_branch_baseline(output: str) -> str | None:
    """On a branch (not the base branch itself), the base branch's baseline as ``BRANCH:PATH``: ``origin/HEAD``'s
    branch, else ``main``, else ``master``, when it holds ``PATH`` (``output`` in the repository); None elsewhere
    (no git, detached, on the base branch, no such file there: the ``--output`` file is the previous baseline)."""
    branch = run_git(["symbolic-ref", "--short", "-q", "HEAD"])
    if branch.returncode != 0 or not branch.stdout.strip():
        return None
    try:
        root, prefix = repository()
    except ForgeUnavailable:
        return None
    path = _in_repository(output, root, prefix)
    if path is None:
        return None
    head = run_git(["rev-parse", "--abbrev-ref", "-q", "origin/HEAD"])
    candidates = [head.stdout.strip()] if head.returncode == 0 and head.stdout.strip() else []
    candidates += ["main", "master"]
    current = branch.stdout.strip()
    for base in candidates:
        if base.rpartition("/")[2] == current or base == current:
            return None  # on the base branch: the output file is main's baseline
        if run_git(["rev-parse", "--verify", "-q", f"{base}^{{commit}}"]).returncode != 0:
            continue
        if run_git(["cat-file", "-e", f"{base}:{path}"]).returncode != 0:
            return None
        print(f"evalbot: --previous: {base}:{path} (the base branch's baseline: histories continue main's; pass "
              "--previous to choose another)", file=sys.stderr)
        return f"{base}:{path}"
    return None


def merge_driver(files: Sequence[str]) -> int:
    """``evalbot baseline --merge-driver %O %A %B``: git's merge driver for the baseline file. Merges the two sides
    entry by entry (:mod:`evalbot.compare.merge_driver`: main's refresh, plus the entries the branch changed, histories
    continued) and writes the result to %A; exit 1 (a conflict git leaves to the user) when both sides changed an entry
    differently or a side is not a baseline; exit 2 on a wrong command line."""
    if len(files) != 3:
        print("usage: evalbot baseline --merge-driver %O %A %B (git's merge driver: ancestor, ours, theirs; in "
              ".git/config: [merge \"evalbot\"] driver = evalbot baseline --merge-driver %O %A %B)", file=sys.stderr)
        return EXIT_INVALID_INPUT
    try:
        texts = [_baseline_text(path) for path in files]
        sides = [None if not (text or "").strip() else parse_baseline(text or "", path)
                 for text, path in zip(texts, files, strict=True)]
    except EvalbotError as exc:
        print(f"evalbot: merge driver: {exc}; resolve the baseline by hand or rewrite it with `evalbot baseline "
              "--accept`", file=sys.stderr)
        return EXIT_FAILED
    base, ours, theirs = sides
    if ours is None or theirs is None or not ours.compatible or not theirs.compatible:
        print("evalbot: merge driver: a side is empty or of another schema version: resolve the baseline by hand",
              file=sys.stderr)
        return EXIT_FAILED
    merged = merge_baselines(base, ours, theirs)
    if merged.conflicts:
        print(f"evalbot: merge driver: both sides changed {', '.join(merged.conflicts[:10])}: resolve by hand, or take "
              "main's file and run `evalbot baseline … --accept SET/CASE`", file=sys.stderr)
        return EXIT_FAILED
    Path(files[1]).write_text(dump_baseline(merged.baseline), encoding="utf-8")
    taken = f": kept {', '.join(merged.taken[:10])} from the older side" if merged.taken else ""
    print(f"evalbot: merge driver: merged the baseline{taken}", file=sys.stderr)
    return EXIT_OK


def refresh_policy(args: argparse.Namespace, settings: dict[str, Any], config: Path | None) -> GatePolicy:
    """The policy a baseline refresh settles split votes with (config section, --sampling, --resample-split)."""
    return policy_from_settings(settings, source=str(config or "command line"),
                                overrides={"sampling": getattr(args, "sampling", None),
                                           "resample_split": args.resample_split})


def _previous_for_shard(args: argparse.Namespace) -> Baseline | None:
    """``baseline --shard``: the --previous baseline its split votes are settled against (its --output is the part,
    not a baseline); None without --previous or with --reset-history."""
    if not args.previous or args.reset_history:
        return None
    return previous_baseline(args, args.previous)[0]


def cmd_merge(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot merge``: join the parts of a sharded run into one report; then, as the unsharded command would,
    write the baseline (--write-baseline), compare (--baseline / --comment / --summary) or print the results."""
    with contextlib.ExitStack() as stack:
        return _merge_command(args, env, stack)


def _merge_command(args: argparse.Namespace, env: Mapping[str, str], stack: contextlib.ExitStack) -> int:
    settings, config = settings_for(args.paths, config=args.config) if args.paths else ({}, None)
    ruler = None
    run: StreamedRun | None = None
    streamed = None
    try:
        named = _part_bytes(args.parts)
        if not (args.write_baseline or args.html
                or any(getattr(args, name, None) is not None for name in ("baseline", "comment", "summary"))):
            # Nothing but the report, the console text and the exit code: the cases are streamed through, one at
            # a time, as `evalbot run` streams them; None when the parts are not as shard jobs write them.
            run = StreamedRun(stack.enter_context(tempfile.TemporaryFile()) if args.report else None)
            streamed = merge_streamed(named, run)
            if streamed is None:
                run = None
        with loading_parts():
            if streamed is not None:
                parts: list[tuple[str, Report]] = []
                report, keys = streamed
            else:
                store = PackedSpill()  # the merged report holds every case: their turns and verdicts wait on disk
                parts = [(name, part_from_bytes(data, name, store)) for name, data in named]
                report, keys = merge_reports(parts), None
            del named
            if args.paths:  # the merged case list against the eval sets this command loaded itself
                report.notices += check_loaded(report, load_inputs(args.paths, config=args.config).eval_sets,
                                               "given with --eval-sets", keys)
            else:
                print("evalbot: warning: no --eval-sets given, so the merged case list is checked only against the "
                      "parts' own list (a part that leaves a case out of its list goes unnoticed)", file=sys.stderr)
        # The shard jobs settled their split votes; they must have settled them as this command would have.
        if args.write_baseline:
            policy = refresh_policy(args, settings, config)
            previous, _ = previous_baseline(args, args.write_baseline)
            check_settled(parts, settle.fingerprint(previous, policy), settle.described(
                args.previous or args.write_baseline, policy))
        elif any(getattr(args, name, None) is not None for name in ("baseline", "comment", "summary")):
            ruler = yardstick(args, settings, config, discover(args.paths)[0] if args.paths else ())
            check_settled(parts, settle.fingerprint(ruler.baseline, ruler.policy),
                          settle.described(ruler.spec.label, ruler.policy))
        del parts
    except MissingShards as exc:
        print(f"error: {exc}", file=sys.stderr)
        # The comment and summary files say so in their headline: a stale file from an earlier run never stands in.
        links = Links(summary=args.summary, report=args.report)
        for path, marker, flag in ((args.summary, "", "--summary"),
                                   (args.comment, comment_marker(args.comment_id), "--comment")):
            if path:
                write_text(path, render_unmeasured(str(exc), marker=marker, links=links), flag)
        return EXIT_UNAVAILABLE
    if args.write_baseline:
        merged_policy = policy_from_settings(settings, source=str(config or "command line"))
        apply_pass_rules(report, merged_policy.pass_rule)
        if args.report:
            write_report(report, args.report)
        return write_baseline(args, env, report, args.write_baseline, budgets=merged_policy.budgets)
    if ruler is not None:
        return finish_compare(args, report, ruler)
    return show_report(args, report, run)


def _part_bytes(paths: Sequence[str]) -> list[tuple[str, bytes]]:
    """The part files' bytes (named by path). A file that cannot be read is refused after the parts before it are
    validated, so the first part at fault is named, as when each part was read and validated in turn."""
    named: list[tuple[str, bytes]] = []
    for path in part_files(paths):
        try:
            named.append((str(path), part_bytes(path)))
        except EvalbotError:
            for name, data in named:
                part_from_bytes(data, name)
            raise
    return named


def add_parsers(sub: Any) -> None:
    """Register ``baseline``, ``compare`` and ``merge`` on the ``evalbot`` subparsers (their functions are in
    COMMANDS), their options in the groups of :mod:`evalbot.cli.groups`."""
    base = cli_groups.command(sub, "baseline", help="evaluate and write the baseline file to commit on main",
                              examples=cli_groups.BASELINE_EXAMPLES)
    add_eval_args(base)
    add_agent_args(base)
    out = cli_groups.group(base, cli_groups.OUTPUTS)
    out.add_argument("--output", type=cli_args.output_file, metavar="FILE",
                     help=f"where to write it (default: the config's evalbot.baseline_path, else "
                     f"{DEFAULT_BASELINE_PATH})")
    out.add_argument("--commit", type=cli_args.commit, metavar="SHA",
                     help="commit measured (default: $GITHUB_SHA, else git HEAD)")
    out.add_argument("--created-at", type=cli_args.timestamp, metavar="ISO8601",
                     help="timestamp to record (default: now, UTC)")
    out.add_argument("--allow-errors", action="store_true", help="write it even if some inputs are invalid")
    out.add_argument("--accept", action="append", default=[], type=cli_args.accept_entry, metavar="SET/CASE",
                     help="write the previous baseline (main's) with only this entry refreshed from this run: a case, "
                     "SET/*/CRITERION for one criterion's definition (its threshold, options, judge, code), or SET/* "
                     "for a whole eval set; every other entry stays as it was (repeatable)")
    _add_history_args(base)
    _add_resample_arg(base, against="the previous baseline")

    comp = cli_groups.command(sub, "compare", help="evaluate, compare with the baseline and render the PR comment",
                              examples=cli_groups.COMPARE_EXAMPLES)
    add_eval_args(comp)
    add_agent_args(comp)
    cli_groups.group(comp, cli_groups.CI).add_argument(
        "--only-affected", action="store_true",
        help="score only the eval sets the change can affect (the gate policy's affected_by at the --baseline REF; "
        "see `evalbot plan`) and carry main's results for the others from the baseline, counted apart and never "
        "compared")
    _add_compare_outputs(comp)

    merge = cli_groups.command(sub, "merge", help="join the reports of a sharded run (--shard K/N) into one, then "
                               "compare", examples=cli_groups.MERGE_EXAMPLES)
    inputs, judge, out = (cli_groups.group(merge, t) for t in (cli_groups.INPUTS, cli_groups.JUDGE, cli_groups.OUTPUTS))
    inputs.add_argument("parts", nargs="+", type=cli_args.eval_path, metavar="PART",
                        help="the shard jobs' reports (files, or directories holding them)")
    inputs.add_argument("--eval-sets", dest="paths", action="append", default=[], type=cli_args.eval_path,
                        metavar="PATH", help="the run's eval sets, for their config's evalbot section (gate policy, "
                        "template, baseline path) and the commands shown in the comment (repeatable)")
    inputs.add_argument("--actuals", action="append", default=[], type=cli_args.input_file, metavar="FILE",
                        help="the recorded runs the shards scored, shown in the comment's commands (repeatable; "
                        "not read)")
    inputs.add_argument("--config", type=cli_args.input_file, metavar="FILE",
                        help="the test_config.json the shards used (its evalbot section sets the gate policy)")
    judge.add_argument("--judge-cache", type=cli_args.directory, metavar="DIR",
                       help="the judge cache the shards used, shown in the comment's commands (not read)")
    judge.add_argument("--judge-replay", action="store_true",
                       help="the shards replayed the judge from the cache: shown in the comment's commands")
    _add_compare_outputs(merge)
    out.add_argument("--write-baseline", type=cli_args.output_file, metavar="FILE",
                     help="write the baseline of the merged run here instead of comparing")
    out.add_argument("--commit", type=cli_args.commit, metavar="SHA",
                     help="with --write-baseline: commit measured (default: $GITHUB_SHA, else git HEAD)")
    out.add_argument("--created-at", type=cli_args.timestamp, metavar="ISO8601",
                     help="with --write-baseline: timestamp to record (default: now, UTC)")
    out.add_argument("--allow-errors", action="store_true",
                     help="with --write-baseline: write it even if some inputs are invalid")
    _add_history_args(merge, output="--write-baseline")


def _add_history_args(parser: argparse.ArgumentParser, output: str = "--output") -> None:
    inputs = cli_groups.group(parser, cli_groups.INPUTS)
    inputs.add_argument("--previous", type=cli_args.baseline_spec, metavar="FILE|REF:PATH",
                        help=f"the baseline whose case histories to continue (default: the {output} file, if it "
                        "exists" + ("; on a branch other than the base branch, the base branch's file: origin/HEAD's "
                                    "branch, else main, else master)" if output == "--output" else ")"))
    inputs.add_argument("--reset-history", action="store_true",
                        help="start every case's history afresh instead of continuing the previous baseline's")


def _add_resample_arg(parser: argparse.ArgumentParser, against: str = "the baseline") -> None:
    cli_groups.group(parser, cli_groups.GATE).add_argument(
        "--resample-split", type=cli_args.extra_samples(MAX_RESAMPLE), metavar="N",
        help=f"extra judge samples that settle a judged verdict flipped against {against} on a split vote "
        "(default: the config's evalbot.resample_split, else 10; 0 disables)")


def _add_compare_outputs(comp: argparse.ArgumentParser) -> None:
    inputs, gate, out = (cli_groups.group(comp, t) for t in (cli_groups.INPUTS, cli_groups.GATE, cli_groups.OUTPUTS))
    inputs.add_argument("--baseline", type=cli_args.baseline_spec, metavar="FILE|REF:PATH",
                        help="baseline file, or REF:PATH read with git show, as CI reads the base commit's (default: "
                        f"the config's evalbot.baseline_path, else {DEFAULT_BASELINE_PATH})")
    out.add_argument("--comment", type=cli_args.output_file, metavar="OUT.md",
                     help="write the comment here instead of printing it")
    out.add_argument("--summary", type=cli_args.output_file, metavar="OUT.md", help="write the full job summary here")
    out.add_argument("--report", type=cli_args.output_file, metavar="OUT.json", help="write the JSON report here")
    out.add_argument("--html", type=cli_args.output_file, metavar="OUT.html",
                     help="write the self-contained HTML report here")
    gate.add_argument("--fail-on", choices=["regression", "threshold", "never"],
                      help="what blocks: a regression against the baseline, any case below its threshold, or "
                      "nothing (default: the config's evalbot.fail_on, else regression)")
    gate.add_argument("--judge-failures", choices=["block", "warn"],
                      help="a judged verdict the judge could not give: block (exit 3; default: the config's "
                      "evalbot.judge_failures, else block) or warn")
    gate.add_argument("--block-flaky", action=argparse.BooleanOptionalAction, default=None,
                      help="block on a regressed case that also oscillated on main (changed outcome at least "
                      "twice) within the baseline's history (default: the config's evalbot.block_flaky, else no)")
    gate.add_argument("--tolerance", type=cli_args.number(0, 1), metavar="X",
                      help="allowed fall of a criterion mean (default: the config's evalbot.tolerance, else 0)")
    gate.add_argument("--alpha", type=cli_args.number(0, 1, low_open=True, high_open=True), metavar="P",
                      help="significance level of the noise tests (default: the config's evalbot.alpha, else "
                      "0.05)")
    _add_resample_arg(comp)
    out.add_argument("--comment-template", type=cli_args.input_file, metavar="FILE",
                     help="Jinja template replacing or extending the comment (default: the config's "
                     "evalbot.comment_template, else the built-in one)")
    cli_groups.group(comp, cli_groups.CI).add_argument(
        "--comment-id", type=cli_args.comment_id, default="default", metavar="ID",
        help="id in the hidden comment marker (one comment per id: several evalbot jobs on one pull request)")


COMMANDS: dict[str, Command] = {"baseline": cmd_baseline, "compare": cmd_compare, "merge": cmd_merge}
