"""Issue 24, item 7: paths the pull request controls (committed symlinks) and output paths the process cannot write,
through entrypoint.py against the fake GitHub."""

from __future__ import annotations

import json
import os
import shutil

from tests.e2e.conftest import Action, Run, event, make_baseline, pull_request_event

INPUTS = {"actuals": "actuals/good.json"}


def push(action: Action, **inputs: str) -> Run:
    return action.run("push", event("push"), inputs={**INPUTS, **inputs}, ref="refs/heads/main")


def assert_refused(run: Run, *needles: str) -> None:
    """Exit 2 with an error annotation holding every needle; no crash, no report written."""
    text = run.stdout + run.stderr
    assert run.code == 2, text
    assert "evalbot bug" not in text and "Traceback" not in text, text
    assert any(all(n in line for n in needles) for line in run.annotations()), run.annotations()


def test_junit_path_proc_self_mem_is_exit_2_naming_the_input(action: Action) -> None:
    """`junit-path: /proc/self/mem` was exit 70 (the write's EIO escaped as a bug); now exit 2 naming the input."""
    run = push(action, **{"junit-path": "/proc/self/mem"})
    assert_refused(run, "input junit-path", "/proc/self/mem", "cannot write")


def test_output_directory_linking_outside_the_workspace_is_refused(action: Action) -> None:
    """The PR commits `.evalbot-out` as a symlink to a directory outside the workspace: refused before any work,
    naming the input; nothing is written there (it was: report, JUnit and HTML landed outside)."""
    outside = action.tmp / "outside"
    outside.mkdir()
    os.symlink(outside, action.workspace / ".evalbot-out")
    run = push(action)
    assert_refused(run, "input report-path", ".evalbot-out/report.json", "outside the workspace")
    assert list(outside.iterdir()) == []


def test_an_output_never_follows_a_symlink_even_inside_the_workspace(action: Action) -> None:
    """`.evalbot-out/junit.xml` committed as a link to the eval set: writing the JUnit would overwrite the eval set.
    The write refuses the link (exit 2 naming junit-path) and the eval set is untouched."""
    target = action.workspace / "evals" / "shop.evalset.json"
    before = target.read_bytes()
    (action.workspace / ".evalbot-out").mkdir()
    os.symlink(target, action.workspace / ".evalbot-out" / "junit.xml")
    run = push(action)
    assert_refused(run, "input junit-path", "symbolic link")
    assert target.read_bytes() == before


def test_an_eval_set_linking_outside_the_workspace_is_refused(action: Action) -> None:
    """A committed `evals/leak.evalset.json` pointing at a file outside the workspace (here a valid eval set, so
    reading it would succeed): refused with its path, exit 2; the other eval set's results are kept."""
    outside = action.tmp / "outside"
    outside.mkdir()
    shutil.copy(action.workspace / "evals" / "shop.evalset.json", outside / "secret.evalset.json")
    os.symlink(outside / "secret.evalset.json", action.workspace / "evals" / "leak.evalset.json")
    run = push(action)
    assert_refused(run, "evals/leak.evalset.json", "outside the workspace")
    report = (run.workspace / ".evalbot-out" / "report.json").read_text(encoding="utf-8")
    assert "shop.evalset.json" in report and "secret" not in report


def test_a_config_linking_outside_the_workspace_is_refused(action: Action) -> None:
    """`evals/test_config.json` committed as a link outside the workspace: refused with its path, exit 2."""
    outside = action.tmp / "outside"
    outside.mkdir()
    shutil.copy(action.workspace / "evals" / "test_config.json", outside / "test_config.json")
    (action.workspace / "evals" / "test_config.json").unlink()
    os.symlink(outside / "test_config.json", action.workspace / "evals" / "test_config.json")
    run = push(action)
    assert_refused(run, "evals/test_config.json", "outside the workspace")


def test_a_config_input_linking_outside_is_refused_before_any_work(action: Action) -> None:
    """The `config` input names a committed link leading outside: exit 2 naming the input, before evaluating."""
    outside = action.tmp / "outside"
    outside.mkdir()
    shutil.copy(action.workspace / "evals" / "test_config.json", outside / "c.json")
    os.symlink(outside / "c.json", action.workspace / "linked_config.json")
    run = push(action, config="linked_config.json")
    assert_refused(run, "input config", "linked_config.json", "outside the workspace")
    assert not (run.workspace / ".evalbot-out" / "report.json").exists()


def test_look_alike_ids_never_reach_workflow_commands_raw(action: Action) -> None:
    """Issue 24: annotations carried raw U+200B / U+202E from a case id. The PR renames its failing case with a
    zero-width space and a right-to-left override (eval set and recorded run alike): every workflow command shows
    them escaped, and the log has no raw one; the summary flags the id."""
    evals = action.workspace / "evals" / "shop.evalset.json"
    actuals = action.workspace / "actuals" / "regressed.json"
    hostile = "refund\u200b\u202e"
    data = json.loads(evals.read_text(encoding="utf-8"))
    for item in data["eval_cases"]:
        if item["eval_id"] == "refund":
            item["eval_id"] = hostile
    evals.write_text(json.dumps(data), encoding="utf-8")
    runs = json.loads(actuals.read_text(encoding="utf-8"))
    runs[hostile] = runs.pop("refund")
    actuals.write_text(json.dumps(runs), encoding="utf-8")
    run = push(action, actuals="actuals/regressed.json")
    assert run.code in (0, 1), run.stdout + run.stderr
    assert any("refund\\u200b\\u202e" in line for line in run.commands if line.startswith("::")), run.commands
    assert "\u200b" not in run.stdout and "\u202e" not in run.stdout
    assert "refund\\u200b\\u202e" in run.summary or "refund\\\\u200b\\\\u202e" in run.summary
    assert "\u202e" not in run.summary


def test_a_directory_where_a_recorded_runs_copy_goes_is_refused(action: Action, baseline_text: str) -> None:
    """The PR commits `.evalbot-out/runs/0-good.json/` as a folder, where the first stage copies its recorded runs
    for the fork-safe second stage: the copy's write raised IsADirectoryError (exit 70); now exit 2 naming it."""
    make_baseline(action, baseline_text)
    blocker = action.workspace / ".evalbot-out" / "runs" / "0-good.json"
    blocker.mkdir(parents=True)
    (blocker / "keep").write_text("", encoding="utf-8")
    run = action.run("pull_request", pull_request_event(), inputs=INPUTS)
    assert_refused(run, ".evalbot-out/runs/0-good.json", "not a file")
