"""The report model and its aggregation rules: score hygiene, verdicts, sample std, counts, JSON round-trip."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest
from pydantic import ValidationError

from evalbot.results import (
    CaseResult,
    EvalSetReport,
    MetricResult,
    Report,
    Totals,
    case_status,
    clean_score,
    maximum_status,
    mean,
    summarize_cases,
    summarize_metric,
    threshold_status,
    totals,
)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, None])
def test_clean_score_never_lets_nan_or_inf_through(value: float | None) -> None:
    """Non-finite scores become None (JSON has no NaN)."""
    assert clean_score(value) is None


def test_clean_score_keeps_finite_values_as_float() -> None:
    """Finite ints and floats come back as floats."""
    assert clean_score(1) == 1.0 and isinstance(clean_score(1), float)


@pytest.mark.parametrize("value", [-0.01, 1.0000001, 2, -5])
def test_clean_score_rejects_scores_outside_the_unit_interval(value: float) -> None:
    """The unvalidated hot-path constructors rely on clean_score: an out-of-range score raises, never slips through."""
    with pytest.raises(ValueError, match="outside"):
        clean_score(value)


def test_fast_constructors_match_validated_models() -> None:
    """invocation_score / metric_result build the same models (and JSON) as validation would."""
    from evalbot.results import InvocationScore, invocation_score, metric_result

    per = invocation_score("i1", 0.5, "failed", None, {"value": 1})
    built = metric_result(0.5, "failed", 0.8, [per])
    validated = MetricResult(score=0.5, status="failed", threshold=0.8,
                             per_invocation=[InvocationScore(invocation_id="i1", score=0.5, status="failed",
                                                             details={"value": 1})])
    assert built == validated and built.model_dump_json() == validated.model_dump_json()
    assert built.model_copy(update={"score": 1.0}).score == 1.0 and built.score == 0.5


@pytest.mark.parametrize(
    ("score", "threshold", "status"),
    [(0.8, 0.8, "passed"), (0.7999999, 0.8, "failed"), (None, 0.8, "not_evaluated"), (0.3, None, "informational")],
)
def test_threshold_rule(score: float | None, threshold: float | None, status: str) -> None:
    """``score >= threshold`` passes with no epsilon; no score is not evaluated; no threshold is informational."""
    assert threshold_status(score, threshold) == status


@pytest.mark.parametrize(
    ("value", "maximum", "status"),
    [(2.0, 2.0, "passed"), (2.0000001, 2.0, "failed"), (0.0, 0.0, "passed"), (5.0, None, "informational")],
)
def test_maximum_rule(value: float, maximum: float | None, status: str) -> None:
    """A maximum (latency, failure rate) passes ``value <= maximum`` with no epsilon; no maximum is informational."""
    assert maximum_status(value, maximum) == status


@pytest.mark.parametrize(
    ("statuses", "verdict"),
    [
        (["passed", "failed"], "failed"),
        (["not_evaluated", "passed", "informational"], "passed"),
        (["informational", "not_evaluated"], "not_evaluated"),
        ([], "not_evaluated"),
        (["passed", "error", "failed"], "error"),
    ],
)
def test_case_verdict(statuses: list[str], verdict: str) -> None:
    """Any failure fails, else any pass passes; a criterion error makes the case an error (never a silent pass)."""
    assert case_status(statuses) == verdict  # type: ignore[arg-type]


def test_mean_skips_none() -> None:
    """Missing scores do not count as zeros."""
    assert mean([1.0, None, 0.0]) == 0.5 and mean([None]) is None and mean([]) is None


def _m(score: float | None, status: str = "passed", threshold: float | None = 0.5) -> MetricResult:
    return MetricResult(score=score, status=status, threshold=threshold)  # type: ignore[arg-type]


def test_summary_uses_sample_std_and_counts_statuses() -> None:
    """Mean and *sample* std (n-1) over scored cases; every status counted; the threshold echoed."""
    results = [_m(1.0), _m(0.0, "failed"), _m(0.5), _m(None, "not_evaluated"), _m(None, "error")]
    summary = summarize_metric(results)
    assert summary.mean == 0.5
    assert summary.std == pytest.approx(statistics.stdev([1.0, 0.0, 0.5])) == pytest.approx(0.5)
    assert (summary.passed, summary.failed, summary.not_evaluated, summary.error) == (2, 1, 1, 1)
    assert summary.threshold == 0.5


def test_std_needs_two_scores() -> None:
    """One scored case has no sample std (None, not 0 and not NaN)."""
    assert summarize_metric([_m(0.7)]).std is None
    assert summarize_metric([_m(None, "not_evaluated")]).mean is None


def test_summaries_keep_first_seen_order_and_totals_count_cases() -> None:
    """Per-criterion summaries follow the criteria order; totals count case verdicts across eval sets."""
    cases = [
        CaseResult(eval_id="a", status="passed", metrics={"x": _m(1.0), "y": _m(0.9)}),
        CaseResult(eval_id="b", status="error", reason="broken"),
        CaseResult(eval_id="c", status="failed", metrics={"x": _m(0.0, "failed")}),
    ]
    assert list(summarize_cases(cases)) == ["x", "y"]
    es = EvalSetReport(eval_set_id="s", path="p", status="error", cases=cases)
    t = totals([es, es])
    assert (t.cases, t.passed, t.failed, t.error, t.not_evaluated) == (6, 2, 2, 2, 0)


def test_statuses_are_lowercase_and_closed() -> None:
    """Only the five lowercase statuses validate."""
    for status in ("passed", "failed", "not_evaluated", "error", "informational"):
        assert MetricResult(status=status).status == status  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        MetricResult(status="PASSED")  # type: ignore[arg-type]


def test_report_round_trips_through_json() -> None:
    """A report dumps to strict JSON (no NaN) and validates back to an equal model; extra keys are rejected."""
    case = CaseResult(eval_id="a", status="passed", metrics={"x": _m(clean_score(math.nan), "not_evaluated")})
    report = Report(eval_sets=[EvalSetReport(eval_set_id="s", path="p", status="passed", cases=[case],
                                             metrics=summarize_cases([case]))])
    text = report.model_dump_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert Report.model_validate_json(text) == report
    with pytest.raises(ValidationError):
        Report.model_validate({**json.loads(text), "surprise": 1})


def test_streamed_report_file_is_the_same_document() -> None:
    """write_report_json (one case at a time) writes the same data as model_dump_json, valid strict JSON."""
    import io

    from evalbot.results import AgentModelUsage, AgentUsage, Problem, write_report_json

    cases = [CaseResult(eval_id=f"c{i}", status="failed", reason='quote " and\nnewline, 東京',
                        metrics={"x": _m(0.25, "failed")}) for i in range(3)]
    sets = [EvalSetReport(eval_set_id=f"s{k}", path="p", status="failed", cases=cases if k else [],
                          metrics=summarize_cases(cases if k else [])) for k in range(2)]
    report = Report(eval_sets=sets, errors=[Problem(path="f", message="m")], notices=["n"], usage={"total": {}})
    out = io.StringIO()
    write_report_json(report, out)
    streamed = json.loads(out.getvalue(), parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert streamed == json.loads(report.model_dump_json())
    assert list(streamed) == [n for n in Report.model_fields if n != "agent_usage"]  # absent when there is none
    report.agent_usage = AgentUsage(per_model={"m": AgentModelUsage(input_tokens=1)})
    out = io.StringIO()
    write_report_json(report, out)
    assert list(json.loads(out.getvalue())) == list(Report.model_fields)
    assert json.loads(out.getvalue()) == json.loads(report.model_dump_json())


def test_report_file_takes_the_case_lines_as_bytes_with_the_same_text(tmp_path: Path) -> None:
    """Written to a UTF-8 file, the held cases' lines go to its binary buffer as the serializer made them (scrubbed as
    bytes): the file holds exactly the text written to a text stream, secrets masked and URL queries dropped in the
    case lines and around them, non-ASCII as it is."""
    import io

    from evalbot.paths import output_file
    from evalbot.redact import forget_secrets, register_secret
    from evalbot.results import write_report_json

    cases = [CaseResult(eval_id=f"c{i}", status="failed", metrics={"x": _m(0.25, "failed")},
                        reason=["token sk-live-0123456 leaked", "see https://h.example/a?sig=SECRETSIG 東京", "plain"][i])
             for i in range(3)]
    sets = [EvalSetReport(eval_set_id=f"s{k}", path="p", status="failed", cases=cases if k != 1 else [],
                          metrics=summarize_cases(cases)) for k in range(3)]
    report = Report(eval_sets=sets, notices=["before sk-live-0123456", "after http://x/y?q=1"])
    register_secret("sk-live-0123456")
    try:
        text = io.StringIO()
        write_report_json(report, text)
        with output_file(tmp_path / "r.json", name="--report") as handle:
            write_report_json(report, handle)
    finally:
        forget_secrets()
    written = (tmp_path / "r.json").read_bytes().decode("utf-8")
    assert written == text.getvalue()
    assert "sk-live-0123456" not in written and "SECRETSIG" not in written and "東京" in written
    assert "token *** leaked" in written and "https://h.example/a?… 東京" in written
    assert [c["eval_id"] for es in json.loads(written)["eval_sets"] for c in es["cases"]] == ["c0", "c1", "c2"] * 2


def test_judge_details_store_the_keys_each_criterion_wrote() -> None:
    """JudgeDetails writes each judged shape with the keys (and key order) the criteria wrote as plain dicts, and
    reads them back unchanged; unset keys stay absent, but a pointwise rating is written, null or not, with its
    samples; samples_asked appears only when set."""
    from evalbot.results import CheckedSentence, CheckedText, JudgeDetails, RubricVerdict, VoteSplit

    shapes = [
        (JudgeDetails(votes=VoteSplit(yes=3, no=0, unparsed=0), rationale="r"),
         '{"votes": {"yes": 3, "no": 0, "unparsed": 0}, "rationale": "r"}'),
        (JudgeDetails(rationale="vertex says"), '{"rationale": "vertex says"}'),
        (JudgeDetails(samples=[1.0, None], rating=None, rationale="x"),
         '{"samples": [1.0, null], "rating": null, "rationale": "x"}'),
        (JudgeDetails(steps=[CheckedText(text="t", error="e"), CheckedText(
            text="u", sentences=[CheckedSentence(sentence="s", label="supported", rationale="ok")], score=1)]),
         '{"steps": [{"text": "t", "error": "e"}, {"text": "u", "sentences": [{"sentence": "s", "label": '
         '"supported", "rationale": "ok"}], "score": 1}]}'),
        (JudgeDetails(rubrics=[RubricVerdict(rubric_id="a", score=None, rationale="", votes=VoteSplit(yes=1, no=1))],
                      unmatched=["b"], answer="raw"),
         '{"rubrics": [{"rubric_id": "a", "score": null, "rationale": "", "votes": {"yes": 1, "no": 1}}], '
         '"unmatched": ["b"], "answer": "raw"}'),
        (JudgeDetails(votes=VoteSplit(yes=2, no=0, unparsed=0), rationale="r", samples_asked=2),
         '{"votes": {"yes": 2, "no": 0, "unparsed": 0}, "rationale": "r", "samples_asked": 2}'),
    ]
    for details, text in shapes:
        stored = details.as_details()
        assert json.dumps(stored) == text
        assert JudgeDetails.read(json.loads(text)).as_details() == stored


def test_totals_count_as_assignments_would() -> None:
    """Totals.count writes its fields directly: the same counts, dump and fields-set as assigning them one by one
    (an informational case counts among the cases only, and names no field of its own)."""
    statuses = ["passed", "informational", "failed", "passed", "error", "not_evaluated"]
    counted, assigned = Totals(), Totals()
    for status in statuses:
        counted.count(status)  # type: ignore[arg-type]
        assigned.cases += 1
        if status != "informational":
            setattr(assigned, status, getattr(assigned, status) + 1)
    assert counted == assigned and counted.model_fields_set == assigned.model_fields_set
    assert counted.model_dump(exclude_unset=True) == {"cases": 6, "passed": 2, "failed": 1, "not_evaluated": 1,
                                                      "error": 1}
    only = Totals()
    only.count("informational")
    assert only.model_fields_set == {"cases"} and only.model_dump(exclude_unset=True) == {"cases": 1}
