"""Packed turns: CaseResult keeps its turns as one compact bytes object (PackedTurns) and gives them back unchanged."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from evalbot.compare import settle
from evalbot.pipeline import evaluate
from evalbot.results import (
    CaseResult,
    EvalSetReport,
    InvocationScore,
    MetricResult,
    PackedScores,
    Report,
    ToolCallView,
    TurnView,
    compacted,
    metric_of_rows,
    write_report_json,
)
from evalbot.turnpack import PackedTurns, TurnRow, pack, row_of, unpack
from tests.fakes.builders import Writer, case, eval_set, inv

ARGS: dict[str, Any] = {"id": "8858", "count": 3, "ratio": 0.5, "ok": None,
                        "filters": {"active": False, "tags": ["room", "日本語", ""]}}


def _turn(args: Any = ARGS, expected: bool = True) -> TurnView:
    calls = [ToolCallView(name="lookup", args=args), ToolCallView(name="noargs", args=None)]
    return TurnView(invocation_id="t1", user="hi", expected_response="yes" if expected else None,
                    actual_response="no", expected_tool_calls=calls if expected else None,
                    actual_tool_calls=calls[::-1])


def test_pack_round_trip_is_equal_and_compact() -> None:
    """Rows come back equal (None, floats, unicode, nested args) and take less room than the objects."""
    rows: list[TurnRow] = [("t1", "hi", None, "no", None, [("f", ARGS)]), (None, "", "a", None, [], [])]
    packed = pack(rows)
    assert isinstance(packed, bytes) and unpack(packed) == rows
    assert len(packed) < sys.getsizeof(ARGS) + sys.getsizeof(ARGS["filters"])


def test_unmarshallable_rows_are_kept_as_they_are() -> None:
    """Values marshal cannot hold are not lost: the rows themselves are kept."""
    odd = object()
    rows: list[TurnRow] = [("t1", "hi", None, "no", None, [("f", {"x": odd})])]
    packed = pack(rows)
    assert packed is rows and unpack(packed)[0][5][0][1]["x"] is odd


def test_unpacked_turns_read_serialise_and_compare_as_packed_ones() -> None:
    """Turns kept as rows until compact() (what a streamed run writes out at once) read, serialise and compare as
    the packed ones; compact() packs them and they stay equal."""
    rows = [row_of(_turn()), row_of(_turn(expected=False))]
    loose, packed = PackedTurns(list(rows), packed=False), PackedTurns(list(rows))
    assert loose == packed and packed == loose and list(loose) == [_turn(), _turn(expected=False)]
    assert loose.rows() == rows and loose.rows() is not loose.rows() and len(loose) == 2
    as_case = [CaseResult(eval_id="c", status="failed", turns=t).model_dump_json() for t in (loose, packed)]
    assert as_case[0] == as_case[1]
    assert loose.compact() is loose and loose == packed and loose.rows() == rows
    other = PackedTurns([row_of(_turn(args={"id": "other"}))], packed=False)
    assert other != packed and packed != other and PackedTurns([], packed=False) == PackedTurns()


def test_case_turns_assign_read_and_json_round_trip() -> None:
    """Assigned turns read back equal, serialise under "turns", and a report read from JSON has them again, packed."""
    case = CaseResult(eval_id="c", status="failed")
    assert case.turns == [] and "turns" in case.model_dump() and not case.turns
    case.turns = PackedTurns.of([_turn(), _turn(expected=False)])
    assert case.turns == [_turn(), _turn(expected=False)] and len(case.turns) == 2
    assert case.turns[1] == _turn(expected=False) and case.turns[:1] == [_turn()]
    dumped = json.loads(case.model_dump_json())
    assert dumped["turns"][0]["actual_tool_calls"][1] == {"name": "lookup", "args": ARGS}
    assert dumped["turns"][1]["expected_tool_calls"] is None
    again = CaseResult.model_validate_json(case.model_dump_json())
    assert again == case and again.turns == case.turns and isinstance(again.turns, PackedTurns)
    assert case.model_dump()["turns"] == [_turn().model_dump(), _turn(expected=False).model_dump()]


def test_turns_serialise_byte_for_byte_as_the_turn_views() -> None:
    """Turns are written from the packed rows without building views: the JSON text (key order, floats, unicode,
    None, empty lists) and the python dump are exactly what the TurnView models give, in the report writer too."""
    odd_args = {"z": 1e-07, "a": [1.5, -0.0, 10**20], "é\u2028": {"": None}, "q": "\"<>&\\"}
    views = [_turn(), _turn(expected=False), _turn(args=odd_args),
             TurnView(user="", actual_tool_calls=[]), TurnView(invocation_id=None, user="ü", expected_tool_calls=[])]
    case = CaseResult(eval_id="c", status="failed")
    case.turns = PackedTurns.of(views)
    as_views = "[" + ",".join(v.model_dump_json() for v in views) + "]"
    assert f'"turns":{as_views}' in case.model_dump_json()
    assert case.model_dump()["turns"] == [v.model_dump() for v in views]
    assert case.model_dump(mode="json")["turns"] == [v.model_dump(mode="json") for v in views]
    assert [list(t) for t in case.model_dump()["turns"]] == [list(TurnView.model_fields)] * len(views)
    for flag in ("exclude_none", "exclude_defaults", "round_trip"):
        assert case.model_dump(mode="json", **{flag: True})["turns"] == [  # type: ignore[arg-type]
            v.model_dump(mode="json", **{flag: True}) for v in views  # type: ignore[arg-type]
        ], flag
    out = io.StringIO()
    write_report_json(Report(eval_sets=[EvalSetReport(eval_set_id="s", path="p", status="failed", cases=[case])]), out)
    assert f'"turns":{as_views}' in out.getvalue()


def test_case_turns_given_at_construction() -> None:
    """turns= given to the constructor (as models or as dicts) is packed; a PackedTurns is kept as it is."""
    a = CaseResult(eval_id="c", status="failed", turns=[_turn()])  # type: ignore[arg-type]
    b = CaseResult.model_validate({"eval_id": "c", "status": "failed", "turns": [_turn().model_dump()]})
    assert a.turns == b.turns == [_turn()] and isinstance(a.turns, PackedTurns) and isinstance(b.turns, PackedTurns)
    packed = PackedTurns.of([_turn()])
    assert CaseResult(eval_id="c", status="failed", turns=packed).turns is packed


def test_equality_looks_at_turn_content() -> None:
    """Cases differ when their turns differ, and are equal when only the args' key order differs."""
    a, b = CaseResult(eval_id="c", status="failed"), CaseResult(eval_id="c", status="failed")
    a.turns = PackedTurns.of([_turn({"x": 1, "y": 2})])
    b.turns = PackedTurns.of([_turn({"y": 2, "x": 1})])
    assert a == b and a.turns == [_turn({"y": 2, "x": 1})]
    b.turns = PackedTurns.of([_turn({"x": 1, "y": 3})])
    assert a != b


def test_bad_turns_are_a_validation_error() -> None:
    """A report whose turns are not a list of turns is rejected, not silently emptied."""
    with pytest.raises(ValidationError):
        CaseResult.model_validate({"eval_id": "c", "status": "failed", "turns": [{"user": 3}]})
    with pytest.raises(ValidationError, match="turns must be a list"):
        CaseResult.model_validate({"eval_id": "c", "status": "failed", "turns": {"user": "x"}})


def test_bad_turns_error_points_into_the_turns() -> None:
    """A bad turn is reported at its place under "turns" (the JSON pointer the second stage shows), nested too."""
    bad = {"eval_id": "c", "status": "failed", "turns": [_turn().model_dump(), {"user": 3}]}
    with pytest.raises(ValidationError) as err:
        Report.model_validate_json(json.dumps({"eval_sets": [{"eval_set_id": "s", "path": "p", "status": "failed",
                                                              "cases": [bad]}]}))
    assert err.value.errors()[0]["loc"] == ("eval_sets", 0, "cases", 0, "turns", 1, "user")
    with pytest.raises(ValidationError) as err:
        CaseResult.model_validate({"eval_id": "c", "status": "failed", "turns": {"user": "x"}})
    assert err.value.errors()[0]["loc"] == ("turns",)


def test_model_copy_can_replace_turns() -> None:
    """model_copy(update={"turns": ...}) replaces the turns; without it the copy keeps the original's."""
    case = CaseResult(eval_id="c", status="failed")
    case.turns = PackedTurns.of([_turn()])
    assert case.model_copy().turns == [_turn()] and case.model_copy(deep=True) == case
    replaced = case.model_copy(update={"turns": PackedTurns.of([_turn(expected=False)]), "status": "passed"})
    assert replaced.turns == [_turn(expected=False)] and replaced.status == "passed"
    assert case.turns == [_turn()]


def test_the_report_models_are_plain() -> None:
    """The speed machinery lives in turnpack: CaseResult overrides no pydantic method and has no validator."""
    assert CaseResult.model_copy is BaseModel.model_copy and CaseResult.__eq__ is BaseModel.__eq__
    decorators = CaseResult.__pydantic_decorators__
    assert not (decorators.model_validators or decorators.field_validators or decorators.computed_fields)


def _scores() -> list[InvocationScore]:
    return [InvocationScore(invocation_id="t1", score=0.5, status="failed", reason="why",
                            details={"votes": {"yes": 1, "no": 2}, "rationale": "日本語", "value": 3.0, "ok": True}),
            InvocationScore(status="informational", details={"value": None, "token_usage_details": {}}),
            InvocationScore(invocation_id="t3", score=1.0, status="passed")]


def _metric(scores: list[InvocationScore]) -> MetricResult:
    return MetricResult(score=0.75, status="passed", threshold=0.5, per_invocation=scores, details={"value": 1.0})


def test_kept_case_packs_per_invocation_verdicts_with_the_same_json() -> None:
    """A case a report keeps (compacted) holds each criterion's verdicts packed, reads them back equal (models,
    indexing, slicing, len) and serialises exactly as before, as JSON text and as a python dump."""
    case = CaseResult(eval_id="c", status="passed", metrics={"m": _metric(_scores()), "empty": _metric([])})
    text, dump = case.model_dump_json(), case.model_dump()
    compacted(case)
    packed = case.metrics["m"].per_invocation
    assert isinstance(packed, PackedScores) and case.metrics["empty"].per_invocation == []
    assert packed == _scores() and _scores() == packed and list(packed) == _scores() and len(packed) == 3
    assert packed[0] == _scores()[0] and packed[-1].status == "passed" and packed[1:] == _scores()[1:]
    assert case.model_dump_json() == text and case.model_dump() == dump
    assert case == CaseResult.model_validate_json(text)
    assert sys.getsizeof(packed) + sys.getsizeof(packed._packed) < 400
    out = io.StringIO()
    write_report_json(Report(eval_sets=[EvalSetReport(eval_set_id="s", path="p", status="passed", cases=[case])]),
                      out)
    assert json.loads(out.getvalue())["eval_sets"][0]["cases"][0] == json.loads(text)
    packed[0].details["rationale"] = "changed"  # a read gives new objects: the kept verdicts do not change
    assert packed[0].details == _scores()[0].details


@pytest.mark.parametrize("options", [{}, {"exclude_none": True}, {"exclude_defaults": True}, {"mode": "json"},
                                     {"exclude_none": True, "mode": "json"}])
def test_verdicts_serialise_as_the_invocation_score_models(options: dict[str, Any]) -> None:
    """per_invocation is written from plain dicts (packed rows, or the models' own fields) with InvocationScore's
    fields, order and defaults: the same JSON text and the same dumps under exclude_none and exclude_defaults as the
    models give, packed or not."""
    models = [s.model_dump(**options) for s in _scores()]
    text = "[" + ",".join(s.model_dump_json() for s in _scores()) + "]"
    for packed in (False, True):
        case = CaseResult(eval_id="c", status="passed", metrics={"m": _metric(_scores())})
        if packed:
            compacted(case)
        assert isinstance(case.metrics["m"].per_invocation, PackedScores) is packed
        assert case.model_dump(**options)["metrics"]["m"]["per_invocation"] == models
        assert f'"per_invocation":{text},' in case.model_dump_json()
        assert [list(d) for d in case.model_dump()["metrics"]["m"]["per_invocation"]] == [
            list(InvocationScore.model_fields)] * 3


def _rows_metric(rows: list[Any]) -> MetricResult:
    return metric_of_rows(0.75, "passed", 0.5, rows, None, {"value": 1.0})


def test_verdicts_given_as_rows_equal_the_models_held_packed_or_not() -> None:
    """A deterministic criterion's verdicts given as rows (metric_of_rows): the same verdicts, dumps and JSON as
    the models, before and after the report keeps the case (compacted packs them); reads give new objects."""
    rows = [(s.invocation_id, s.score, s.status, s.reason, s.details) for s in _scores()]
    models = CaseResult(eval_id="c", status="passed", metrics={"m": _metric(_scores())})
    for kept in (False, True):
        case = CaseResult(eval_id="c", status="passed", metrics={"m": _rows_metric([*rows])})
        held = case.metrics["m"].per_invocation
        assert isinstance(held, PackedScores) and (held._rows is None) is False
        if kept:
            compacted(case)
            assert held._rows is None and isinstance(held._packed, bytes)
        assert held == _scores() and len(held) == 3 and held[0] == _scores()[0] and held[1:] == _scores()[1:]
        for options in ({}, {"exclude_none": True}, {"exclude_defaults": True}, {"mode": "json"}):
            assert case.model_dump(**options) == models.model_dump(**options)
        assert case.model_dump_json() == models.model_dump_json()
        held[0].details["rationale"] = "changed"  # a read gives new objects: the verdicts held do not change
        assert held[0].details == _scores()[0].details and rows[0][4] == _scores()[0].details
    assert _rows_metric([]).per_invocation == [] and isinstance(_rows_metric([]).per_invocation, list)


def test_rows_marshal_cannot_hold_stay_rows() -> None:
    """Rows whose details marshal cannot hold stay rows when the case is kept: read and written as before."""
    odd = object()
    case = compacted(CaseResult(eval_id="c", status="passed", metrics={"m": _rows_metric(
        [("t1", 1.0, "passed", None, {"x": odd})])}))
    held = case.metrics["m"].per_invocation
    assert isinstance(held, PackedScores) and held._rows is not None and held[0].details == {"x": odd}


def test_verdicts_marshal_cannot_hold_stay_a_list() -> None:
    """Details holding something other than plain JSON data are not packed, and not lost."""
    odd = object()
    scores = [InvocationScore(status="passed", score=1.0, details={"x": odd})]
    case = compacted(CaseResult(eval_id="c", status="passed", metrics={"m": _metric(scores)}))
    assert isinstance(case.metrics["m"].per_invocation, list)
    assert case.metrics["m"].per_invocation[0].details == {"x": odd}


def test_scored_cases_kept_by_the_report_are_packed(write: Writer) -> None:
    """The pipeline keeps its scored cases compacted (a run that does not stream them: compare, --html), and their
    verdicts read back as scored."""
    write("evals/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0}})
    folder = write("evals/a.evalset.json", eval_set("a", case("c1", inv("hi", "ok", [("t", {})]),
                                                              inv("yo", "ok", [("t", {})])))).parent
    actuals = write("actuals.json", {"c1": [inv("hi", "ok", [("t", {})]), inv("yo", "ok", [])]})
    kept = evaluate([str(folder)], actuals=[str(actuals)]).eval_sets[0].cases[0]
    scores = kept.metrics["tool_trajectory_avg_score"].per_invocation
    assert isinstance(scores, PackedScores)
    assert [(s.score, s.status) for s in scores] == [(1.0, "passed"), (0.0, "failed")]


class _Ballot:
    """A majority vote of five samples, 3 pass and 2 fail, whose extra samples all pass."""

    def __init__(self) -> None:
        self.texts = ("yes", "yes", "yes", "no", "no", "yes", "yes", "yes", "yes", "yes")

    def score(self, text: str) -> float | None:
        return 1.0 if text == "yes" else 0.0

    async def more(self, extra: int) -> str | None:
        return None


def test_settling_a_packed_verdict_replaces_the_list() -> None:
    """Settling a split vote of a kept case (its verdicts packed) writes the larger vote: the criterion's verdicts
    become a new list with the resampled invocation changed and the others as they were."""
    scores = [InvocationScore(invocation_id="t1", score=1.0, status="passed"),
              InvocationScore(invocation_id="t2", score=0.0, status="failed", details={"votes": {"yes": 2, "no": 3}})]
    case = compacted(CaseResult(eval_id="c", status="failed", metrics={"j": MetricResult(
        score=0.5, status="failed", threshold=1.0, per_invocation=scores)}))
    report = Report(eval_sets=[EvalSetReport(eval_set_id="s", path="p", status="failed", cases=[case])])
    assert isinstance(case.metrics["j"].per_invocation, PackedScores)
    assert settle.apply(report, [(settle.Target(case, "j", 1, _Ballot(), 5), None)], 0.05) == 1
    after = case.metrics["j"].per_invocation
    assert isinstance(after, list) and after[0] == scores[0]
    assert (after[1].score, after[1].status, after[1].details["votes"]["resampled"]) == (1.0, "passed", 5)
    assert (case.metrics["j"].score, case.metrics["j"].status, case.status) == (1.0, "passed", "passed")
