"""``evalbot plan``: the eval sets a change can affect, against a base (:mod:`evalbot.selection`; ``evalbot compare
--only-affected`` makes the same selection, ``cli/compare.selection_at``).

The mapping (``affected_by``) is the gate policy's at ``--base``, read with git as ``compare --baseline REF:PATH``
reads the rest of the policy; the changed files are ``git diff --name-only`` between ``merge-base(--base, HEAD)``
and the working tree (files git does not track are not a change: ``git add -N`` a new one to count it).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import evalbot.cli.args as cli_args
import evalbot.cli.groups as cli_groups
from evalbot.basecommit.gate import ChangeSide
from evalbot.cli.compare import gate_at_ref, repository, selection_at
from evalbot.compare.baseline import DEFAULT_BASELINE_PATH
from evalbot.compare.gate import GatePolicy, policy_from_settings
from evalbot.errors import EXIT_OK, ConfigError
from evalbot.forge.base import ForgeUnavailable
from evalbot.load import Configs, discover


def add_parser(sub: Any) -> None:
    """Register ``plan`` on the ``evalbot`` subparsers."""
    plan = cli_groups.command(sub, "plan", help="print the eval sets a change can affect against a base branch or "
                              "commit (its gate policy's affected_by), one per line",
                              examples=cli_groups.PLAN_EXAMPLES)
    inputs = cli_groups.group(plan, cli_groups.INPUTS)
    inputs.add_argument("paths", nargs="+", type=cli_args.eval_path, metavar="PATH",
                        help="eval set files, directories or glob patterns")
    inputs.add_argument("--base", required=True, type=cli_args.git_ref, metavar="REF",
                        help="what the change is measured against (e.g. origin/main): its gate policy's affected_by; "
                        "the changed files are those since merge-base(REF, HEAD), in the working tree too")
    inputs.add_argument("--config", type=cli_args.loaded_file, metavar="FILE",
                        help="the test_config.json applied to every eval set (read at REF for the policy; its change "
                        "affects every eval set)")
    cli_groups.group(plan, cli_groups.OUTPUTS).add_argument(
        "--json", action="store_true", help="print JSON: every eval set, whether it is affected and why")
    plan.set_defaults(comment_template=None)


def _gate(args: argparse.Namespace, ref: str, configs: Configs, files: Sequence[Path]
          ) -> tuple[GatePolicy | None, str | None, str]:
    """The gate policy at ``ref`` (None and why, when it cannot be read), and the baseline file's path."""
    settings, config = configs.settings(files)
    policy = policy_from_settings(settings, source=str(config or "command line"))  # the working tree's: checked
    change = ChangeSide(settings=settings, config=None, policy=policy, template=None, files=[])
    gate = gate_at_ref(args, ref, change, config, files, {})
    baseline = str(settings.get("baseline_path") or DEFAULT_BASELINE_PATH)
    return (None, gate.error, baseline) if gate.error else (gate.policy, None, baseline)


def cmd_plan(args: argparse.Namespace, env: Mapping[str, str]) -> int:
    """``evalbot plan``: the affected eval sets, one per line (``--json``: every eval set with its reasons)."""
    # Read first, and once: an unusable --config is named before the eval sets are looked for, as run and compare do.
    configs = Configs(Path(args.config) if args.config is not None else None)
    files, errors = discover(args.paths)
    if errors:
        raise errors[0]
    try:
        root, _ = repository()
    except ForgeUnavailable as exc:
        raise ConfigError(f"--base {args.base}: not in a git repository, so nothing can be compared with it ({exc})") \
            from None
    policy, error, baseline = _gate(args, args.base, configs, files)
    sel, shown = selection_at(args.base, files, args.config, policy, error, root, baseline)
    for note in sel.notes:
        print(f"evalbot: notice: {note}", file=sys.stderr)
    if sel.everything:
        print(f"evalbot: every eval set is affected: {sel.everything}", file=sys.stderr)
    if args.json:
        data = {"base": args.base, "affected": [shown[p] for p in sel.affected],
                "carried": [shown[p] for p in sel.carried], "everything": sel.everything, "notes": list(sel.notes),
                "changed_files": len(sel.changed),
                "eval_sets": [{"path": shown[c.path], "affected": c.affected, "reasons": list(c.reasons)}
                              for c in sel.eval_sets]}
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        for path in sel.affected:
            print(shown[path])
    return EXIT_OK
