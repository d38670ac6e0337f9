"""action_app.run in-process with a scripted Forge: exit codes for GitHub outages and bugs, artifact checks."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from evalbot.action.main import run
from evalbot.action.second_stage import report_from_artifact
from evalbot.action.settings import inputs_from_env
from evalbot.errors import InputError
from evalbot.forge.base import ForgeUnavailable
from tests.fakes.file_opens import opened_files
from tests.fakes.forge import ScriptedForge, pr_env
from tests.fakes.runner_files import parse_outputs


@pytest.fixture(autouse=True)
def keep_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    """run() changes into the workspace as the runner does; restore the test's directory afterwards."""
    monkeypatch.chdir(Path.cwd())


def test_github_and_git_both_unavailable_is_exit_3(tmp_path: Path) -> None:
    """No baseline from the API (outage) nor from git (no repository): exit 3, verdict error, an annotation."""
    out = io.StringIO()
    forge = ScriptedForge(read_file=ForgeUnavailable("read", "503 after retries", status=503))
    code = run(pr_env(tmp_path), out=out, forge=forge)
    assert code == 3
    errors = [line for line in out.getvalue().splitlines() if line.startswith("::error")]
    assert any("baseline unreadable: the contents API failed" in e and "503 after retries" in e for e in errors)
    assert parse_outputs((tmp_path / "out").read_text())["verdict"] == "error"


def test_a_bug_is_exit_70_with_outputs_still_written(tmp_path: Path) -> None:
    """An unexpected exception is reported as an internal error (exit 70), never a silent pass."""
    out = io.StringIO()
    code = run(pr_env(tmp_path), out=out, forge=ScriptedForge(upsert_comment=RuntimeError("boom")))
    assert code == 70
    assert "title=evalbot bug::internal error: RuntimeError: boom" in out.getvalue()
    assert parse_outputs((tmp_path / "out").read_text())["verdict"] == "error"


def test_comment_failure_keeps_the_verdict(tmp_path: Path) -> None:
    """GitHub failing to take the comment is a warning; the gate's exit code stands (here 1: the scripted base
    commit has no baseline, which blocks a pull request), never 3."""
    out = io.StringIO()
    forge = ScriptedForge(upsert_comment=ForgeUnavailable("comment", "502", status=502))
    env = pr_env(tmp_path) | {"INPUT_JUDGE-FAILURES": "warn"}  # no judge key here: a warning, not exit 3
    assert run(env, out=out, forge=forge) == 1
    assert parse_outputs((tmp_path / "out").read_text())["verdict"] == "blocked"
    assert "::warning title=evalbot comment::The PR comment could not be posted" in out.getvalue()


def test_artifact_without_the_report_names_what_it_found() -> None:
    """The second stage says which files the artifact held when report.json is missing."""
    inputs = inputs_from_env({})
    with pytest.raises(InputError, match=r"no report\.json inside \(found: junit\.xml\)"):
        report_from_artifact({"junit.xml": b"<x/>"}, inputs)


def test_report_inside_a_folder_of_the_artifact_is_found() -> None:
    """upload-artifact keeps sub-folders: the report is matched by file name."""
    report = report_from_artifact({"out/report.json": b'{"eval_sets": []}'}, inputs_from_env({}))
    assert report.eval_sets == []


def test_tampered_report_error_names_an_rfc6901_pointer() -> None:
    """A refused artifact report names the offending key as a JSON pointer (``/`` in a key escaped as ``~1``)."""
    with pytest.raises(InputError) as err:
        report_from_artifact({"report.json": b'{"eval_sets": [], "a/b": 1}'}, inputs_from_env({}))
    assert err.value.pointer == "/a~1b" and "not an evalbot report" in err.value.message


def test_baseline_mode_refuses_a_run_with_invalid_inputs(tmp_path: Path) -> None:
    """Mode baseline writes no file when an input is unusable, and says so in the job summary."""
    env = {**pr_env(tmp_path), "INPUT_MODE": "baseline", "INPUT_ACTUALS": "actuals/missing.json",
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    assert run(env, out=io.StringIO(), forge=ScriptedForge()) == 2
    assert not (tmp_path / "ws" / ".evalbot" / "baseline.json").exists()
    assert "The baseline was not refreshed" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_unreadable_workspace_baseline_is_an_input_error(tmp_path: Path) -> None:
    """A baseline file that is not UTF-8 stops a push run (exit 2) instead of passing as if there were none."""
    env = {**pr_env(tmp_path), "GITHUB_EVENT_NAME": "push", "INPUT_MODE": "push"}
    Path(env["GITHUB_EVENT_PATH"]).write_text('{"repository": {"full_name": "o/r"}}')  # a push: no pull request
    (tmp_path / "ws" / ".evalbot").mkdir()
    (tmp_path / "ws" / ".evalbot" / "baseline.json").write_bytes(b"\xff\xfe\x00{")
    out = io.StringIO()
    assert run(env, out=out, forge=ScriptedForge()) == 2
    assert "baseline.json" in out.getvalue() and "not valid UTF-8" in out.getvalue()


def test_the_eval_set_file_is_read_once_and_annotations_still_have_lines(tmp_path: Path) -> None:
    """Loading reads the eval set file once; the annotations' line numbers come from that read, not another."""
    env = {**pr_env(tmp_path), "INPUT_ACTUALS": "actuals/regressed.json"}
    eval_set = (Path(env["GITHUB_WORKSPACE"]) / "evals" / "shop.evalset.json").resolve()
    out = io.StringIO()
    with opened_files() as opened:
        run(env, out=out, forge=ScriptedForge())
    assert [p for p in opened if p.resolve() == eval_set] == [eval_set]
    annotated = [line for line in out.getvalue().splitlines() if "file=evals/shop.evalset.json,line=" in line]
    assert annotated, out.getvalue()
    text = eval_set.read_text().splitlines()
    for line in annotated:
        number = int(line.split("line=")[1].split(",")[0])
        eval_id = line.split("::")[-1].split(":")[0].split(" ")[0]
        assert text[number - 1].strip() == f'"eval_id": "{eval_id}",', (line, text[number - 1])
