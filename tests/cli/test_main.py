"""``evalbot run``: exit codes 0/1/2, the printed table, and the JSON report file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from evalbot.cli.commands import main
from evalbot.criteria.base import BuildContext
from evalbot.pipeline import drop_unused_judge_notices
from evalbot.results import Report
from tests.fakes.builders import Writer, case, eval_set, inv

CALL = [("get_weather", {"city": "Paris"})]
CONFIG = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}}


def project(write: Writer, actual: dict[str, Any], config: Any = CONFIG) -> tuple[str, str]:
    """An eval set with two cases (weather, greet), its config, and an actuals file; returns their paths."""
    write("evals/test_config.json", config)
    es = write("evals/weather.evalset.json", eval_set(
        "weather",
        case("paris", inv("Weather in Paris?", "It is sunny in Paris", CALL)),
        case("greet", inv("hello", "Hello! How can I help?", [])),
    ))
    return str(es), str(write("actual.json", actual))


GOOD = {"paris": [inv("Weather in Paris?", "Sunny in Paris today", CALL, events=True)],
        "greet": [inv("hello", "Hello! How can I help you?", [])]}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process with an empty environment (no judge); return exit code, stdout, stderr."""
    code = main(["run", *argv], env={})
    out = capsys.readouterr()
    return code, out.out, out.err


def test_all_passed_exits_0_and_prints_the_table(write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """Every case passing exits 0; the table lists the eval set, each criterion and the totals; stderr stays empty."""
    es, actual = project(write, GOOD)
    code, out, err = run(capsys, es, "--actuals", actual)
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"PASS  weather  ({es}, 2 case(s))"
    traj = next(x for x in lines if x.strip().startswith("tool_trajectory_avg_score"))
    assert traj.split() == ["tool_trajectory_avg_score", "1.000", "1.000", "0.000", "2", "0", "0", "0"]
    assert any(x.strip().startswith("response_match_score") for x in lines)
    assert "Failing cases:" not in out
    assert lines[-1] == "2 case(s): 2 passed, 0 failed, 0 not evaluated, 0 error(s)"


def test_failed_case_exits_1_and_names_it(write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """A failing case exits 1 and is listed with the criterion, its score and the threshold."""
    es, actual = project(write, {**GOOD, "paris": [inv("Weather in Paris?", "Sunny in Paris today", [])]})
    code, out, _ = run(capsys, es, "--actuals", actual)
    assert code == 1
    assert "  FAIL  weather / paris: tool_trajectory_avg_score 0.000 < 1.000" in out.splitlines()
    assert out.splitlines()[-1] == "2 case(s): 1 passed, 1 failed, 0 not evaluated, 0 error(s)"


@pytest.mark.parametrize(
    ("actual", "config", "shown"),
    [
        ({"paris": GOOD["paris"]}, CONFIG, "ERROR weather / greet: no actual invocations for eval_id 'greet'"),
        ({**GOOD, "greet": GOOD["greet"] * 2}, CONFIG, "ERROR weather / greet: the case expects 1 invocation(s)"),
        (GOOD, {"criteria": {"tool_trajectory_avg_score": {"threshold": 1, "match_type": "sometimes"}}},
         "ERROR 2 case(s): tool_trajectory_avg_score: not configured correctly (the eval set's error says why) "
         "(weather / paris, weather / greet)"),
        (GOOD, {"criteria": {"typo_score": 1}},  # one root error: its cases are one line
         "ERROR 2 case(s): typo_score: not configured correctly (the eval set's error says why) (weather / paris, "
         "weather / greet)"),
    ],
)
def test_unusable_input_exits_2_but_reports_the_rest(
    write: Writer, capsys: pytest.CaptureFixture[str], actual: dict[str, Any], config: Any, shown: str
) -> None:
    """A missing actual, a count mismatch or a broken criterion exits 2; the problem and the other results print."""
    es, path = project(write, actual, config)
    code, out, _ = run(capsys, es, "--actuals", path)
    assert code == 2
    assert any(x.startswith("  " + shown) for x in out.splitlines()), out
    assert "0 error(s)" not in out.splitlines()[-1]
    if "not configured correctly" in shown:  # the reason itself is shown once, as the eval set's error
        (name,) = config["criteria"]
        said = [x for x in out.splitlines() if x.startswith(f"      ERROR {Path(es).parent / 'test_config.json'}: {name}: ")]
        assert len(said) == 1, out


def test_broken_file_exits_2_and_names_file_and_pointer(write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """A broken eval set next to a good one: the good one is scored, the broken one is shown with its pointer."""
    es, actual = project(write, GOOD)
    bad = write("evals/bad.evalset.json", {"evalSetId": "x", "evalCases": []})
    code, out, _ = run(capsys, str(Path(es).parent), "--actuals", actual)
    assert code == 2
    assert f"      ERROR {bad}:/evalSetId the eval set's top level is snake_case: rename it to 'eval_set_id'" in out
    assert f"PASS  weather  ({es}, 2 case(s))" in out


def test_missing_inputs_exit_2(write: Writer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A path that does not exist and an unreadable --actuals file are run errors printed first; exit 2."""
    es, _ = project(write, GOOD)
    code, out, _ = run(capsys, es, str(tmp_path / "nope"), "--actuals", str(tmp_path / "none.json"))
    assert code == 2
    assert out.splitlines()[:2] == [
        f"ERROR {tmp_path / 'nope'}: no such file or directory",
        f"ERROR {tmp_path / 'none.json'}: file not found; check the path",
    ]


def test_unreadable_explicit_config_exits_2_on_stderr(write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """An explicit --config that cannot be used stops the run with the file and pointer on stderr."""
    es, actual = project(write, GOOD)
    cfg = write("cfg.json", {"criteria": ["tool_trajectory_avg_score"]})
    code, out, err = run(capsys, es, "--actuals", actual, "--config", str(cfg))
    assert (code, out) == (2, "")
    assert err == f"error: {cfg}:/criteria: expected an object mapping criterion names to thresholds\n"


def test_explicit_config_replaces_the_one_beside(write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """--config applies to every eval set instead of the test_config.json beside it."""
    es, actual = project(write, {**GOOD, "paris": [inv("Weather in Paris?", "Sunny in Paris today", [])]})
    cfg = write("cfg.json", {"criteria": {"response_match_score": 0.1}})
    code, out, _ = run(capsys, es, "--actuals", actual, "--config", str(cfg))
    rows = [x.split()[0] for x in out.splitlines() if x.startswith("      ") and "informational" not in x]
    assert code == 0 and rows == ["config:", "criterion", "response_match_score"]
    assert f"      config: {cfg} · criteria: response_match_score" in out.splitlines()


def test_report_file_round_trips(write: Writer, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """--report writes strict JSON with the documented keys that validates back into the Report model."""
    es, actual = project(write, {**GOOD, "paris": [inv("Weather in Paris?", "Sunny", [])]})
    out_path = tmp_path / "out" / "report.json"
    code, _, _ = run(capsys, es, "--actuals", actual, "--report", str(out_path))
    assert code == 1
    text = out_path.read_text(encoding="utf-8")
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    report = Report.model_validate(data)
    assert Report.model_validate_json(report.model_dump_json()) == report
    (es_report,) = data["eval_sets"]
    assert (es_report["eval_set_id"], es_report["path"]) == ("weather", es)
    paris = next(c for c in es_report["cases"] if c["eval_id"] == "paris")
    traj = paris["metrics"]["tool_trajectory_avg_score"]
    assert (paris["status"], traj["score"], traj["status"], traj["threshold"]) == ("failed", 0.0, "failed", 1.0)
    assert [(p["score"], p["status"]) for p in traj["per_invocation"]] == [(0.0, "failed")]
    summary = es_report["metrics"]["tool_trajectory_avg_score"]
    assert {k: summary[k] for k in ("mean", "passed", "failed", "not_evaluated")} == {
        "mean": 0.5, "passed": 1, "failed": 1, "not_evaluated": 0
    }
    assert summary["std"] == pytest.approx(0.7071067811865476)
    assert data["schema_version"] == 1


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    """No command or no path is a usage error with argparse's exit code 2."""
    for argv in ([], ["run"]):
        with pytest.raises(SystemExit) as info:
            main(argv, env={})
        assert info.value.code == 2
    err = capsys.readouterr().err.splitlines()  # one line per error, pointing at --help (no usage block)
    assert err == ["evalbot: error: the following arguments are required: command (see evalbot --help)",
                   "evalbot run: error: the following arguments are required: PATH (see evalbot run --help)"]


def test_console_script_process(write: Writer) -> None:
    """The real process: exit code, stdout table and no progress noise on a non-terminal stderr."""
    es, actual = project(write, GOOD)
    proc = subprocess.run(
        [sys.executable, "-m", "evalbot.cli", "run", es, "--actuals", actual],
        capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "2 case(s): 2 passed, 0 failed, 0 not evaluated, 0 error(s)"
    assert proc.stderr == ""


def test_not_evaluated_cases_exit_0(write: Writer, capsys: pytest.CaptureFixture[str]) -> None:
    """A run whose cases could not be scored by any criterion (a scenario case, trajectory only) exits 0."""
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    scenario = {"eval_id": "sim", "conversation_scenario": {"starting_prompt": "hi", "conversation_plan": "chat"}}
    es = write("evals/s.evalset.json", eval_set("s", scenario))
    code, out, _ = run(capsys, str(es), "--actuals", str(write("a.json", {"sim": [inv("hi", "hello")]})))
    assert code == 0
    assert out.splitlines()[-1] == "1 case(s): 0 passed, 0 failed, 1 not evaluated, 0 error(s)"


def test_no_judge_notice_only_when_a_judged_criterion_is_configured(
    write: Writer, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Without credentials the "no judge credentials" notice is reported only if some criterion needs a judge."""
    es, actual = project(write, GOOD)
    out_path = tmp_path / "report.json"
    run(capsys, es, "--actuals", actual, "--report", str(out_path))
    assert Report.model_validate_json(out_path.read_text(encoding="utf-8")).notices == []
    judged = write("judged.json", {"criteria": {"response_match_score": 0.5, "final_response_match_v2": 0.5}})
    run(capsys, es, "--actuals", actual, "--config", str(judged), "--report", str(out_path))
    notices = Report.model_validate_json(out_path.read_text(encoding="utf-8")).notices
    assert len(notices) == 1 and notices[0].startswith("no judge credentials")


def test_judge_setup_notes_are_dropped_with_no_judged_criterion() -> None:
    """The judge's own setup notes (e.g. Vertex safety unavailable) go too when nothing judged is configured."""
    ctx = BuildContext(judge=SimpleNamespace(notes=["vertex note"]))
    report = drop_unused_judge_notices(Report(notices=["vertex note", "other"]), ctx)
    assert report.notices == ["other"]
