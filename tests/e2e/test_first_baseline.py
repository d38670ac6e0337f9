"""The README's first-baseline workflow, step by step through the Action: on a PR whose base commit has no baseline,
the gate blocks; the workflow's second step (mode baseline, fail-on never) writes the baseline of the same recorded
runs; committed in the PR, it is the PR's baseline update and the next run passes with "baseline created by this PR".
"""

from __future__ import annotations

from tests.e2e.conftest import BASELINE, Action, make_baseline, pull_request_event

GATE = {"actuals": "actuals/good.json"}
WRITE = {"mode": "baseline", "fail-on": "never", "actuals": "actuals/good.json",
         "report-path": ".evalbot-out/baseline-report.json", "junit-path": "", "html-path": ""}


def test_the_first_baseline_arrives_through_the_pull_request(action: Action) -> None:
    gate = action.run("pull_request", pull_request_event(), inputs=GATE)
    assert gate.code == 1 and gate.outputs["verdict"] == "blocked", gate.stdout + gate.stderr
    assert "no baseline at" in action.github.comments_on(7)[0].body
    report = (action.workspace / ".evalbot-out" / "report.json").read_bytes()
    comments = len(action.github.comments_on(7))

    written = action.run("pull_request", pull_request_event(), inputs=WRITE)
    assert written.code == 0, written.stdout + written.stderr
    assert (action.workspace / BASELINE).is_file()
    assert (action.workspace / ".evalbot-out" / "report.json").read_bytes() == report  # the gate's report is kept
    assert len(action.github.comments_on(7)) == comments  # mode baseline does not comment

    again = action.run("pull_request", pull_request_event(), inputs=GATE)  # the file committed on the PR's branch
    assert again.code == 0, again.stdout + again.stderr
    assert "baseline created by this PR" in action.github.comments_on(7)[0].body


def test_writing_the_baseline_does_not_gate_a_regressed_run(action: Action, baseline_text: str) -> None:
    """With a baseline at the base commit and a regressed run, the gate step blocks; the baseline step (fail-on
    never) still writes the refreshed file and exits 0, so the upload gets it."""
    make_baseline(action, baseline_text)
    (action.workspace / BASELINE).parent.mkdir(exist_ok=True)
    (action.workspace / BASELINE).write_text(baseline_text, encoding="utf-8")  # the branch has main's file
    gate = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert gate.code == 1, gate.stdout + gate.stderr
    written = action.run("pull_request", pull_request_event(), inputs={**WRITE, "actuals": "actuals/regressed.json"})
    assert written.code == 0, written.stdout + written.stderr
    assert (action.workspace / BASELINE).read_text(encoding="utf-8") != baseline_text
    accepted = action.run("pull_request", pull_request_event(), inputs={"actuals": "actuals/regressed.json"})
    assert accepted.code == 0, accepted.stdout + accepted.stderr
    assert "accepted by this PR's baseline update" in action.github.comments_on(7)[0].body
