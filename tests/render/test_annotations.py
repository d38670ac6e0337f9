"""JUnit and annotation views of a report: outcomes map right, lines are found, the 10-annotation cap holds."""

from __future__ import annotations

import json
from collections.abc import Callable

from evalbot.action.publish import annotation_lines
from evalbot.formats.lines import CaseLines
from evalbot.render.annotations import failing_summary
from evalbot.render.junit import junit_suites
from evalbot.results import CaseResult, EvalSetReport, MetricResult, Problem, Report

TRAJ = "tool_trajectory_avg_score"


def case(eval_id: str, status: str, score: float | None = 1.0, reason: str | None = None) -> CaseResult:
    metric = MetricResult(score=score, status=status if status != "error" else "error", threshold=0.8, reason=reason)
    return CaseResult(eval_id=eval_id, status=status, reason=reason, metrics={TRAJ: metric})  # type: ignore[arg-type]


def report(*cases: CaseResult, errors: list[Problem] | None = None) -> Report:
    es = EvalSetReport(eval_set_id="shop", path="evals/shop.evalset.json", status="failed", cases=list(cases))
    return Report(eval_sets=[es], errors=errors or [])


EVAL_SET_TEXT = json.dumps(
    {"eval_set_id": "shop", "eval_cases": [{"eval_id": "ok"}, {"eval_id": "bad"}, {"eval_id": "boom"}]}, indent=2
)


def test_junit_outcomes() -> None:
    """passed, failed, error and not_evaluated become plain, failure, error and skipped testcases."""
    suites = junit_suites(
        report(
            case("ok", "passed"),
            case("bad", "failed", 0.5),
            case("boom", "error", None, "judge timeout"),
            case("later", "not_evaluated", None, "no judge key"),
        )
    )
    (suite,) = suites
    assert suite.name == "evals/shop.evalset.json"
    ok, bad, boom, later = suite.cases
    assert ok.failure is ok.error is ok.skipped is None
    assert bad.failure == f"{TRAJ} 0.500 < 0.800" and TRAJ in bad.details
    assert boom.error == "judge timeout" and later.skipped == "no judge key"


def test_unusable_inputs_become_errored_cases() -> None:
    """Run-level input problems appear as their own suite so CI systems show them."""
    suites = junit_suites(report(errors=[Problem(path="runs.json", message="not JSON")]))
    assert suites[-1].name == "(inputs)" and suites[-1].cases[0].error == "not JSON"


def lines_of(text: str) -> Callable[[str, str], int | None]:
    """Where annotations look a case up: the lines the loader found in the file's text."""
    found = CaseLines(text)
    return lambda path, eval_id: found.line(eval_id)


def test_annotations_point_at_the_case_line_relative_to_the_workspace() -> None:
    """Failed and errored cases get ::error annotations with file, line and title."""
    lines = annotation_lines(
        report(case("ok", "passed"), case("bad", "failed", 0.5), case("boom", "error", None, "judge timeout")),
        line_of=lines_of(EVAL_SET_TEXT),
        display=lambda path: "evals/shop.evalset.json",
    )
    assert lines == [
        f"::error file=evals/shop.evalset.json,line=8,title=Case failed::bad: {TRAJ} 0.500 < 0.800",
        f"::error file=evals/shop.evalset.json,line=11,title=Case errored::boom: {TRAJ} error: judge timeout",
    ]


def test_regressions_come_first_and_are_not_repeated() -> None:
    """A regressed case is annotated once, as a regression, before plain failures."""
    lines = annotation_lines(
        report(case("bad", "failed", 0.5), case("boom", "error", None, "x")),
        line_of=lambda path, eval_id: None,
        regressed=[("evals/shop.evalset.json", "bad", "bad: 0.9 -> 0.5")],
    )
    assert lines[0] == "::error file=evals/shop.evalset.json,title=Regression::bad: 0.9 -> 0.5"
    assert len(lines) == 2 and "Case errored" in lines[1]


def test_annotation_cap_with_a_notice() -> None:
    """Only the first 10 errors are emitted (GitHub drops the rest), then a notice with the remainder."""
    many = report(*(case(f"c{i}", "failed", 0.1) for i in range(13)))
    lines = annotation_lines(many, line_of=lambda path, eval_id: None)
    assert len(lines) == 11
    assert lines[-1] == "::notice::3 more failing cases: see the job summary"


def test_failing_summary_falls_back_to_the_reason() -> None:
    """A case failing without a failing metric explains itself with its reason."""
    bare = CaseResult(eval_id="x", status="error", reason="no actual run recorded")
    assert failing_summary(bare) == "no actual run recorded"


def test_non_blocking_failures_can_be_warnings() -> None:
    """With fail-on regression, still-failing cases are warnings while regressions stay errors."""
    lines = annotation_lines(
        report(case("bad", "failed", 0.5), case("worse", "failed", 0.1)),
        line_of=lambda path, eval_id: None,
        regressed=[("evals/shop.evalset.json", "worse", "worse regressed")],
        failing_level="warning",
    )
    assert lines[0].startswith("::error") and "Regression" in lines[0]
    assert lines[1].startswith("::warning") and "bad" in lines[1] and len(lines) == 2
