"""entrypoint.py as a subprocess with realistic runner variables, against the fake GitHub and fake Gemini."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from tests.e2e.conftest import Action, event


def test_push_evaluates_with_the_judge_and_writes_everything(action: Action) -> None:
    """A push run scores with the (fake) Gemini judge and writes report, JUnit, outputs and summary."""
    run = action.run("push", event("push"), inputs={"actuals": "actuals/good.json"}, ref="refs/heads/main")
    assert run.code == 0, run.stdout + run.stderr
    assert run.outputs["verdict"] == "passed" and run.outputs["failing"] == "0"
    assert run.outputs["report-path"] == ".evalbot-out/report.json"
    assert (run.workspace / ".evalbot-out" / "report.json").is_file()
    junit = ET.parse(run.workspace / ".evalbot-out" / "junit.xml").getroot()
    assert junit.get("tests") == "3" and junit.get("failures") == "0"
    assert action.gemini.requests and all(r.api_key == "fake-gemini-key" for r in action.gemini.requests)
    assert "evalbot" in run.summary
    assert run.outputs["html-path"] == ".evalbot-out/report.html"
    html = (run.workspace / ".evalbot-out" / "report.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in html
    assert "the HTML report .evalbot-out/report.html" in run.summary


def test_empty_html_path_skips_the_html_report(action: Action) -> None:
    run = action.run("push", event("push"), inputs={"actuals": "actuals/good.json", "html-path": ""},
                     ref="refs/heads/main")
    assert run.code == 0, run.stdout + run.stderr
    assert run.outputs["html-path"] == "" and not (run.workspace / ".evalbot-out" / "report.html").exists()
    assert "HTML report" not in run.summary


@pytest.mark.fresh_process  # the interpreter's start is part of what is timed
def test_first_log_line_comes_quickly(action: Action) -> None:
    """The first log line is printed before the heavy imports: well under a second after process start."""
    run = action.run("push", event("push"), inputs={"actuals": "actuals/good.json"}, ref="refs/heads/main")
    assert run.stdout.startswith("evalbot: starting (push)")
    assert run.first_line_s < 1.0, run.first_line_s


def test_invalid_input_exits_2_with_an_annotation(action: Action) -> None:
    """A bad fail-on value stops the run with exit code 2 and an ::error naming the input."""
    run = action.run("push", event("push"), inputs={"fail-on": "sometimes"})
    assert run.code == 2
    assert any("input fail-on" in line for line in run.annotations()), run.stdout
