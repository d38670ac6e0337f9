"""docs/github-action.md stays true to action.yml: input/output tables, workflows, permissions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

from evalbot import errors
from scripts import action_docs
from scripts import doc_workflows as dw

ROOT = Path(__file__).resolve().parents[2]
PAGE = (ROOT / "docs" / "github-action.md").read_text(encoding="utf-8")
SECTION = PAGE[PAGE.index("<!-- action-docs:begin -->") : PAGE.index("<!-- action-docs:end -->")]
ACTION: dict[str, Any] = YAML(typ="safe").load((ROOT / "action.yml").read_text(encoding="utf-8"))


def table(heading: str) -> list[list[str]]:
    """Rows (cells stripped) of the first table after ``## heading``."""
    lines = SECTION[SECTION.index(f"\n## {heading}\n") :].splitlines()[2:]
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:  # skip the header and the |---| line
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def workflows() -> list[dict[str, Any]]:
    """The page's workflows, each delta applied to the canonical one (as scripts/doc_workflows.py lints them)."""
    found = [b for b in dw.blocks() if b.doc == "docs/github-action.md"]
    assert found and all(b.error is None for b in found), [b.error for b in found]
    return [YAML(typ="safe").load(block.text) for block in found]


def test_inputs_table_matches_action_yml() -> None:
    """Every input is listed once, in order, with action.yml's default."""
    rows = table("Inputs")
    assert [r[0].strip("`") for r in rows] == list(ACTION["inputs"])
    for name, default, _ in rows:
        expected = ACTION["inputs"][name.strip("`")]["default"]
        assert default == (f"`{expected}`" if expected != "" else "(empty)"), name


def test_outputs_table_matches_action_yml() -> None:
    """Every output is listed once, in order."""
    assert [r[0].strip("`") for r in table("Outputs")] == list(ACTION["outputs"])


def test_the_tables_are_the_ones_action_yml_generates() -> None:
    """Descriptions included: `python scripts/action_docs.py` regenerates them; an input added to action.yml, or a
    description changed, without regenerating fails here."""
    assert action_docs.render(PAGE, ACTION) == PAGE, "run: python scripts/action_docs.py"
    changed = {**ACTION, "inputs": {**ACTION["inputs"], "new-input": {"description": "x", "default": ""}}}
    assert "| `new-input` | (empty) | x |" in action_docs.render(PAGE, changed)
    assert action_docs.render(PAGE, changed) != PAGE


def test_the_three_flows_are_there_with_least_privilege() -> None:
    """The canonical workflow, evalbot run, the merge queue, fork-safe (two workflows), baseline refresh, the first
    baseline through a PR, the sharded matrix, an OpenAI and a local judge: permissions {} on top, granted per job."""
    flows = workflows()
    triggers = [list(w[True] if True in w else w["on"]) for w in flows]
    assert triggers == [["pull_request"], ["pull_request"], ["pull_request", "merge_group"], ["pull_request"],
                        ["workflow_run"], ["push"], ["pull_request"], ["pull_request"], ["pull_request"],
                        ["pull_request"]]
    for flow in flows:
        assert flow["permissions"] == {}
        assert all("permissions" in job for job in flow["jobs"].values())


def test_examples_use_only_declared_inputs() -> None:
    """Every `with:` given to evalbot in the README is an input of action.yml."""
    used = [
        step.get("with", {})
        for flow in workflows()
        for job in flow["jobs"].values()
        for step in job["steps"]
        if str(step.get("uses", "")).startswith("evalbot/evalbot@")
    ]
    assert len(used) == 12
    assert all(set(w) <= set(ACTION["inputs"]) for w in used)


def test_exit_codes_named_in_the_section_are_the_real_ones() -> None:
    """The sentence listing exit codes uses errors.EXIT_* values."""
    for code in (
        errors.EXIT_OK,
        errors.EXIT_FAILED,
        errors.EXIT_INVALID_INPUT,
        errors.EXIT_UNAVAILABLE,
        errors.EXIT_INTERNAL,
    ):
        assert re.search(rf"\b{code} [A-Za-z]", SECTION), code


def test_the_fork_second_stage_posts_the_required_status() -> None:
    """The trusted second stage may post the `evalbot` commit status (the required check for fork PRs)."""
    (second,) = [w for w in workflows() if "workflow_run" in (w[True] if True in w else w["on"])]
    (job,) = second["jobs"].values()
    assert job["permissions"]["statuses"] == "write"
    assert "**Make the `evalbot` status the required check**" in " ".join(PAGE.split())
