"""``evalbot baseline`` and ``evalbot compare``: files written, baselines read from files and git refs, exit codes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.fakes.builders import Writer
from tests.fakes.cli_project import CONFIG, MAIN, cli, make_baseline, proj

__all__ = ["proj"]  # the fixture

def test_baseline_writes_a_canonical_reproducible_file(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The baseline records the commit and time given, and the same run writes the same bytes."""
    make_baseline(capsys)
    first = (proj / ".evalbot/baseline.json").read_bytes()
    data = json.loads(first)
    assert data["commit"] == "abc123" and data["created_at"] == "2025-06-01T00:00:00+00:00"
    assert data["eval_sets"]["orders"]["cases"]["track"]["status"] == "failed"
    assert first.endswith(b"}\n") and list(data) == sorted(data)
    make_baseline(capsys)
    assert (proj / ".evalbot/baseline.json").read_bytes() == first


def test_baseline_commit_defaults_to_github_sha(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --commit, GITHUB_SHA from the environment is recorded."""
    code, out, _ = cli(capsys, "baseline", "evals", "--actuals", "runs/main.json", "--output", "b.json",
                       env={"GITHUB_SHA": "feedbeef"})
    assert code == 0 and "commit feedbeef" in out
    assert json.loads((proj / "b.json").read_text())["commit"] == "feedbeef"


def test_baseline_refuses_invalid_inputs(proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """A case without actuals makes the run invalid: exit 2 and no file, unless --allow-errors."""
    write("runs/partial.json", {"refund": MAIN["refund"]})
    code, _, err = cli(capsys, "baseline", "evals", "--actuals", "runs/partial.json", "--output", "b.json")
    assert code == 2 and "--allow-errors" in err and not (proj / "b.json").exists()
    code, _, _ = cli(capsys, "baseline", "evals", "--actuals", "runs/partial.json", "--output", "b.json",
                     "--allow-errors", "--commit", "x")
    assert code == 0 and json.loads((proj / "b.json").read_text())["eval_sets"]["orders"]["cases"]["track"][
        "status"] == "error"


def test_compare_prints_the_comment_and_blocks_on_regression(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A regression exits 1; the comment starts with the marker and shows the changed argument and the fix."""
    make_baseline(capsys)
    code, out, _ = cli(capsys, "compare", "--baseline", ".evalbot/baseline.json", "evals", "--actuals", "runs/pr.json")
    assert code == 1
    assert out.startswith("<!-- evalbot id=default -->\n### ❌ evalbot: blocked: 1 regressed · 1 fixed")
    assert "↳ amount: 25 → 250" in out and "**orders / track**" in out


def test_compare_writes_comment_summary_and_report(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--comment, --summary and --report write files; stdout gets a one-line verdict."""
    make_baseline(capsys)
    code, out, _ = cli(capsys, "compare", "evals", "--actuals", "runs/pr.json", "--comment", "out/c.md",
                       "--summary", "out/s.md", "--report", "out/r.json", "--comment-id", "nightly")
    assert code == 1 and out.startswith("evalbot: blocked (exit 1); comment written to out/c.md")
    comment = (proj / "out/c.md").read_text()
    assert comment.startswith("<!-- evalbot id=nightly -->") and "JSON report (out/r.json)" in comment
    assert "<!--" not in (proj / "out/s.md").read_text()
    assert json.loads((proj / "out/r.json").read_text())["totals"]["cases"] == 2


def test_compare_passes_when_nothing_changed(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run the baseline was made from compares clean (a still-failing case does not block)."""
    make_baseline(capsys)
    code, out, _ = cli(capsys, "compare", "evals", "--actuals", "runs/main.json")
    assert code == 0 and "### ✅ evalbot: no regressions · 1 still failing" in out


def test_missing_baseline_reports_absolute_scores(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No baseline file: exit 0, absolute scores, and the command that creates one."""
    code, out, _ = cli(capsys, "compare", "--baseline", "nowhere.json", "evals", "--actuals", "runs/pr.json")
    assert code == 0 and "No baseline at nowhere.json" in out and "evalbot baseline" in out


def test_fail_on_and_tolerance_from_flags_and_config(proj: Path, write: Writer,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """--fail-on never passes a regression; the config's evalbot.fail_on applies; a bad tolerance exits 2."""
    make_baseline(capsys)
    code, _, _ = cli(capsys, "compare", "evals", "--actuals", "runs/pr.json", "--fail-on", "never")
    assert code == 0
    write("evals/test_config.json", {**CONFIG, "evalbot": {"fail_on": "threshold"}})
    code, out, _ = cli(capsys, "compare", "evals", "--actuals", "runs/main.json")
    assert code == 1 and "below their thresholds" in out
    write("evals/test_config.json", {**CONFIG, "evalbot": {"tolerance": 2}})
    code, _, err = cli(capsys, "compare", "evals", "--actuals", "runs/main.json")
    assert code == 2 and "evals/test_config.json:/evalbot/tolerance" in err


def test_invalid_baseline_file_exits_2(proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """A baseline that is not valid JSON is invalid input naming the file."""
    write("bad.json", "{oops")
    code, _, err = cli(capsys, "compare", "--baseline", "bad.json", "evals", "--actuals", "runs/pr.json")
    assert code == 2 and "bad.json" in err and "invalid JSON" in err


def test_custom_template_from_config_and_flag(proj: Path, write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """evalbot.comment_template is relative to the config file; --comment-template wins; a missing one exits 2."""
    make_baseline(capsys)
    write("evals/tpl.md.j2", '{% extends "comment.md.j2" %}{% block verdict %}Custom {{ c.gate.verdict }}\n'
                             '{% endblock %}')
    write("evals/test_config.json", {**CONFIG, "evalbot": {"comment_template": "tpl.md.j2"}})
    code, out, _ = cli(capsys, "compare", "evals", "--actuals", "runs/pr.json")
    assert code == 1 and "\nCustom blocked\n" in out
    write("other.j2", "Other {{ c.gate.exit_code }}")
    _, out, _ = cli(capsys, "compare", "evals", "--actuals", "runs/pr.json", "--comment-template", "other.j2")
    assert out == "<!-- evalbot id=default -->\nOther 1"
    with pytest.raises(SystemExit) as exited:  # refused while parsing, before any work
        cli(capsys, "compare", "evals", "--actuals", "runs/pr.json", "--comment-template", "none.j2")
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "argument --comment-template: 'none.j2' does not exist" in err


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_baseline_from_a_git_ref(proj: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """REF:PATH reads the committed baseline, not the working tree's; an unknown ref fails closed as the Action does
    (verdict error, exit 3, "could not measure" in the headline) saying to fetch it."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=proj, check=True,
                       capture_output=True)

    make_baseline(capsys)
    git("init", "-q", "-b", "main")
    git("add", ".evalbot/baseline.json")
    git("commit", "-q", "-m", "baseline")
    (proj / ".evalbot/baseline.json").write_text("not json at all")
    code, out, _ = cli(capsys, "compare", "--baseline", "main:.evalbot/baseline.json", "evals",
                       "--actuals", "runs/pr.json")
    assert code == 1 and "Compared with the baseline main:.evalbot/baseline.json at abc123" in out
    code, out, _ = cli(capsys, "compare", "--baseline", "main:missing.json", "evals", "--actuals", "runs/pr.json")
    # nothing at REF:PATH blocks, as the Action blocks a pull request whose base commit has no baseline
    assert code == 1 and "### ❌ evalbot: blocked: no baseline at main:missing.json (did you mean " \
        ".evalbot/baseline.json?)" in out
    code, out, err = cli(capsys, "compare", "--baseline", "origin/nope:.evalbot/baseline.json", "evals",
                         "--actuals", "runs/pr.json")
    assert code == 3 and "could not measure, not passing: baseline unreadable" in out.splitlines()[1], out
    assert ("baseline unreadable: cannot read the baseline or the gate settings: 'origin/nope' is no branch, tag or "
            "commit in this repository; if it exists on the remote, fetch it (git fetch origin origin/nope") in err


def test_baseline_and_compare_can_run_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """--agent works for baseline and compare as for run: the agent's runs are produced, then compared."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    out = tmp_path / "baseline.json"
    evals = "examples/agent/weather.evalset.json"
    agent = "examples.agent.weather_agent:agent"
    code, _, err = cli(capsys, "baseline", evals, "--agent", agent, "--output", str(out), "--commit", "x")
    assert code == 0, err
    code, text, _ = cli(capsys, "compare", "--baseline", str(out), evals, "--agent", agent)
    assert code == 0 and "no regressions" in text
