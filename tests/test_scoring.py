"""Scoring a run: per-case errors never stop the others, criterion errors, verdicts, aggregates and progress."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalbot import scoring
from evalbot.criteria import INFORMATIONAL
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.formats.actuals import Actuals
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import EvalConfig, parse_config
from evalbot.formats.loaded import LoadedCase, LoadedEvalSet
from evalbot.pipeline import evaluate
from evalbot.results import CaseResult, CriterionInfo, MetricResult, Report
from evalbot.scoring import canonical_json, case_fingerprint, case_fingerprints, score_run
from tests.fakes.builders import Writer, case, eval_set, inv

TRAJ_ONLY = {"criteria": {"tool_trajectory_avg_score": 1.0}}


def _case(report: Report, eval_id: str, eval_set_id: str | None = None) -> CaseResult:
    return next(
        c for es in report.eval_sets if eval_set_id in (None, es.eval_set_id) for c in es.cases if c.eval_id == eval_id
    )


def _run(write: Writer, cases: list[dict[str, Any]], actual: dict[str, Any], config: Any = TRAJ_ONLY) -> Report:
    write("set/test_config.json", config)
    return evaluate([str(write("set/s.evalset.json", eval_set("s", *cases)))], actuals=[str(write("act.json", actual))])


def test_missing_actual_is_an_error_on_that_case(write: Writer) -> None:
    """A case with no recorded run is an error naming the eval_id and the actuals file; the others are scored."""
    report = _run(write, [case("a", inv(calls=[("f", {})])), case("b")], {"a": [inv(calls=[("f", {})])]})
    a, b = _case(report, "a"), _case(report, "b")
    assert a.status == "passed" and a.metrics["tool_trajectory_avg_score"].score == 1.0
    assert b.status == "error" and b.metrics == {}
    assert b.reason is not None and b.reason.startswith("no actual invocations for eval_id 'b' of eval set 's' in ")
    assert b.reason.endswith("pass the file holding its run with --actuals FILE, or let evalbot run the agent with "
                             "--agent (or --adk-agent)")
    assert "act.json; pass" in b.reason


def test_count_mismatch_is_an_error_on_that_case_not_a_crash(write: Writer) -> None:
    """Actual/expected invocation counts that differ make that case an error (ADK aborts the whole run)."""
    two = [inv("q1"), inv("q2")]
    report = _run(write, [case("a", *two), case("b", *two)], {"a": two[:1], "b": two})
    a, b = _case(report, "a"), _case(report, "b")
    assert a.status == "error" and a.reason == (
        "the case expects 2 invocation(s) but the actual run has 1; re-record the run or fix the eval case"
    )
    assert [t.user for t in a.turns] == ["q1"]  # what was recorded is still shown
    assert b.status == "passed"
    summary = report.eval_sets[0].metrics["tool_trajectory_avg_score"]
    assert (summary.passed, summary.error, summary.mean) == (1, 0, 1.0)
    assert (report.totals.passed, report.totals.error) == (1, 1)


def test_bad_actual_entry_keeps_its_pointer(write: Writer) -> None:
    """An actual invocation that does not parse makes that case an error quoting file and pointer."""
    report = _run(write, [case("a"), case("b")], {"a": [inv(respones="x")], "b": [inv()]})
    a = _case(report, "a")
    assert a.status == "error" and a.reason is not None
    assert a.reason.endswith("act.json:/a/0/respones: unknown field (check its spelling; this object does not allow extra keys)")
    assert _case(report, "b").status == "passed"


def test_unparsable_case_is_reported_with_its_pointer(write: Writer) -> None:
    """A case that cannot be parsed is an error case in the report; the eval set's other cases are scored."""
    report = _run(write, [case("a", inv(surprise=1)), case("b")], {"a": [inv()], "b": [inv()]})
    a = _case(report, "a")
    assert a.status == "error" and a.reason is not None and a.reason.endswith("s.evalset.json:/eval_cases/0/conversation/0/surprise: unknown field (check its spelling; this object does not allow extra keys)")
    assert _case(report, "b").status == "passed"


@pytest.mark.parametrize(
    ("criteria", "reason"),
    [
        ({"no_such_metric": 0.5},
         "/set/test_config.json:/criteria/no_such_metric) (`evalbot criteria` lists the "),
        ({"tool_trajectory_avg_score": {"threshold": 1.0, "match_type": "sideways"}},
         "invalid options for tool_trajectory_avg_score: match_type: "),
        ({"response_match_score": {"threshold": 0.5, "include_intermediate_responses_in_final": "perhaps"}},
         "invalid options for response_match_score: include_intermediate_responses_in_final: "),
        ({"response_match_score": {"match_type": "EXACT"}}, "criterion object needs a 'threshold' key"),
    ],
)
def test_broken_criterion_is_an_error_on_every_case(write: Writer, criteria: dict[str, Any], reason: str) -> None:
    """An unknown criterion or invalid option errors that criterion on every case; the case is ``error``, never a pass."""
    config = {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5, **criteria}}
    report = _run(write, [case("a"), case("b")], {"a": [inv()], "b": [inv()]}, config)
    (name,) = criteria
    info = next(c for c in report.eval_sets[0].criteria if c.name == name)
    assert info.error is not None and reason in info.error
    for eval_id in ("a", "b"):
        got = _case(report, eval_id)
        assert got.status == "error"
        assert got.metrics[name].status == "error" and got.metrics[name].score is None
        valid = [got.metrics[n].status for n in config["criteria"] if n != name]
        assert valid == ["passed"] * len(valid)  # the valid criteria still score
        assert got.reason == f"{name}: not configured correctly (the eval set's error says why)"
    # the reason itself is reported once, as an error of the eval set
    (said,) = [e for e in report.eval_sets[0].errors if e.message.startswith(f"{name}: ")]
    assert reason in said.message and said.path.endswith("test_config.json")
    assert report.eval_sets[0].metrics[name].error == 2


def test_informational_metric_named_in_criteria_is_an_error(write: Writer) -> None:
    """Informational metrics are always added; naming one in criteria is an error on it (ADK: silently N/E)."""
    report = _run(write, [case("a")], {"a": [inv()]}, {"criteria": {"tool_call_count_v1": 0.5}})
    got = _case(report, "a")
    assert got.status == "error" and got.metrics["tool_call_count_v1"].status == "error"
    assert got.metrics["tool_call_count_v1"].reason is not None
    assert any("tool_call_count_v1 is informational" in e.message for e in report.eval_sets[0].errors)
    report = _run(write, [case("a")], {"a": [inv(calls=[("f", {}), ("g", {})])]},
                  {"criteria": {"response_match_score": 0.5}})
    got = _case(report, "a")
    assert next(iter(got.metrics)) == "response_match_score" and set(INFORMATIONAL) <= set(got.metrics)
    assert all(got.metrics[name].status == "informational" for name in INFORMATIONAL)
    assert got.status == "passed"


def test_report_invariants_over_mixed_cases(write: Writer) -> None:
    """Thresholded scores are in [0, 1] or null, statuses lowercase, no NaN in the JSON, std is the sample std."""
    import json
    import math
    import statistics

    calls = [("f", {"a": 1}), ("g", None)]
    cases = [case(f"c{i}", inv("q", "the cat sat on the mat", calls), inv("q2", "", [])) for i in range(4)]
    cases.append({"eval_id": "sim", "conversation_scenario": {"starting_prompt": "a", "conversation_plan": "b"}})
    actual = {
        "c0": [inv("q", "the cat sat on the mat", calls), inv("q2", "", [])],
        "c1": [inv("q", "a dog", list(reversed(calls)), events=True), inv("q2", "", [])],
        "c2": [inv("q", "", []), inv("q2", "", [("h", {})])],
        "c3": [inv("q", "the mat", calls), inv("q2", "words", [])],
        "sim": [inv("a", "x")],
    }
    report = _run(write, cases, actual, {"criteria": {"tool_trajectory_avg_score": 0.5, "response_match_score": 0.3}})
    text = report.model_dump_json()
    json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    allowed = {"passed", "failed", "not_evaluated", "error", "informational"}
    (es,) = report.eval_sets
    for got in es.cases:
        assert got.status in allowed
        for name in ("tool_trajectory_avg_score", "response_match_score"):
            metric = got.metrics[name]
            scores = [metric.score, *(p.score for p in metric.per_invocation)]
            assert all(s is None or (0.0 <= s <= 1.0 and not math.isnan(s)) for s in scores), (got.eval_id, name)
            assert metric.status in allowed and all(p.status in allowed for p in metric.per_invocation)
    for name in ("tool_trajectory_avg_score", "response_match_score"):
        values = [s for c in es.cases if (s := c.metrics[name].score) is not None]
        assert len(values) == 4 and es.metrics[name].std == pytest.approx(statistics.stdev(values))
        assert es.metrics[name].not_evaluated == 1  # the scenario case


def test_criterion_exception_is_contained() -> None:
    """A criterion raising on one case records an error on it; other criteria and cases are unaffected."""

    @dataclass(frozen=True)
    class Boom:
        name: str = "boom"
        threshold: float | None = 0.5

        def evaluate(self, case: CaseInput) -> MetricResult:
            if case.case.eval_id == "a":
                raise KeyError("oops")
            return MetricResult(score=1.0, status="passed", threshold=0.5)

    report = score_run([_loaded(("a", 1), ("b", 1))], _actuals(("a", 1), ("b", 1)), criteria=_only(Boom()))
    assert _case(report, "a").metrics["boom"].status == "error"
    assert _case(report, "a").metrics["boom"].reason == "KeyError: 'oops'"
    assert _case(report, "b").status == "passed"


def test_criterion_returning_no_result_is_an_error() -> None:
    """A criterion returning neither a result nor an awaitable makes that metric an error, never a silent pass."""

    @dataclass(frozen=True)
    class Wrong:
        name: str = "wrong"
        threshold: float | None = 0.5

        def evaluate(self, case: CaseInput) -> Any:
            return 1.0

    report = score_run([_loaded(("a", 1))], _actuals(("a", 1)), criteria=_only(Wrong()))
    metric = _case(report, "a").metrics["wrong"]
    assert (metric.status, _case(report, "a").status) == ("error", "error")
    assert metric.reason is not None and "returned float" in metric.reason


def _only(criterion: Any) -> Callable[[EvalConfig, BuildContext, str], tuple[list[Any], list[CriterionInfo]]]:
    """A criteria builder giving every eval set just ``criterion`` (a test double of a criterion, passed to scoring)."""
    info = CriterionInfo(name=criterion.name, threshold=criterion.threshold)
    return lambda config, ctx, origin: ([criterion], [info])


def _loaded(*cases: tuple[str, int], config: dict[str, Any] | None = None) -> LoadedEvalSet:
    built = [LoadedCase(eid, EvalCase.model_validate(case(eid, *[inv(f"q{i}") for i in range(n)]))) for eid, n in cases]
    return LoadedEvalSet("mem", "mem", tuple(built), parse_config(config or TRAJ_ONLY, None))


def _actuals(*cases: tuple[str, int]) -> Actuals:
    return Actuals(entries={(None, eid): [Invocation.model_validate(inv(f"q{i}")) for i in range(n)] for eid, n in cases})


def test_awaitable_criteria_are_gathered_and_progress_counts_cases() -> None:
    """Judged (awaitable) criteria settle in one loop; progress reports cases done only once all their metrics are in."""
    seen: list[tuple[int, int]] = []

    @dataclass(frozen=True)
    class Judged:
        name: str = "judged"
        threshold: float | None = 0.5

        async def _score(self) -> MetricResult:
            await asyncio.sleep(0)
            return MetricResult(score=0.0, status="failed", threshold=0.5)

        def evaluate(self, case: CaseInput) -> Any:
            if case.case.eval_id == "sync":
                return MetricResult(score=1.0, status="passed", threshold=0.5)
            return self._score()

    report = score_run(
        [_loaded(("sync", 1)), _loaded(("j1", 1), ("j2", 2))],
        _actuals(("sync", 1), ("j1", 1), ("j2", 2)),
        progress=lambda done, total: seen.append((done, total)),
        criteria=_only(Judged()),
    )
    assert _case(report, "j2").status == "failed" and _case(report, "sync").status == "passed"
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_fingerprint_ignores_timestamps_and_invocation_ids() -> None:
    """Re-recording timestamps or invocation ids keeps a case's identity; changing what it asks changes it."""
    base = EvalCase.model_validate(case("a", inv("q", invocation_id="x", creation_timestamp=1.0)))
    same = EvalCase.model_validate(case("a", inv("q", invocation_id="y", creation_timestamp=2.0), creation_timestamp=9.0))
    other = EvalCase.model_validate(case("a", inv("q2")))
    assert case_fingerprint(base) == case_fingerprint(same) != case_fingerprint(other)


def _reference_fingerprints(case: EvalCase) -> tuple[str, str]:
    """The fingerprints as first defined: two sorted ``json.dumps`` of the whole dump, with and without the id."""
    dumped = case.model_dump(mode="json", exclude_none=True, exclude={"creation_timestamp"})
    for item in dumped.get("conversation") or []:
        item.pop("creation_timestamp", None)
        item.pop("invocation_id", None)
    full = hashlib.sha256(json.dumps(dumped, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    dumped.pop("eval_id", None)
    content = hashlib.sha256(json.dumps(dumped, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    return full, content


FINGERPRINTED = [
    case("a"),
    case("ünï 🙂 \"q\"", inv("héllo\n\u2028", "ok ✓", [("t", {"z": 1, "a": [1.5, 1e-07, None, True], "ß": {}})])),
    case("b", inv("q", None, [("f", {})], events=True), inv("r", "s", invocation_id="x", creation_timestamp=3.0)),
    case("c", inv(), session_input={"app_name": "app", "user_id": "u", "state": {"k": [1, {"y": "z"}]}}),
    case("aaa", inv("x"), creation_timestamp=5.0),
    case("zzz", inv("x")),
]


@pytest.mark.parametrize("data", FINGERPRINTED, ids=range(len(FINGERPRINTED)))
def test_fingerprints_equal_the_sorted_json_dumps_definition(data: dict[str, Any]) -> None:
    """Each member encoded once and joined: the same hashes as two whole sorted ``json.dumps`` (baselines keep them)."""
    parsed = EvalCase.model_validate(data)
    assert case_fingerprints(parsed) == _reference_fingerprints(parsed)
    full, content = case_fingerprints(parsed)
    assert full != content


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    eval_id=st.text(min_size=1, max_size=8),
    args=st.dictionaries(
        st.text(max_size=4),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=6),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
            max_leaves=8,
        ),
        max_size=4,
    ),
    text=st.text(max_size=12),
)
def test_fingerprints_equal_the_definition_on_any_args(eval_id: str, args: dict[str, Any], text: str) -> None:
    """Property: any id, text and tool arguments (unicode keys, floats finite or not, nesting) hash as the definition
    does."""
    parsed = EvalCase.model_validate(case(eval_id, inv(text, text, [("tool", args)])))
    assert case_fingerprints(parsed) == _reference_fingerprints(parsed)


_ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**40), 10**40) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(value=_ANY_JSON)
def test_canonical_json_is_sorted_json_dumps(value: Any) -> None:
    """msgspec's sorted encoding laid out by msgspec.json.format is byte for byte json.dumps(sort_keys=True,
    ensure_ascii=False) on any JSON value without a non-finite float: any text and keys (escapes, non-BMP), any
    ints, floats (encoded by json), empty containers, nesting."""
    assert canonical_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


def test_canonical_json_escapes_every_character_as_json_does() -> None:
    """Every code point but the surrogates, as a string and as a key."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    for start in range(0, len(chars), 4096):
        text = "".join(chars[start : start + 4096])
        value = {text: [text, {"k": text}], "a": ", : [] {}"}
        assert canonical_json(value) == json.dumps(value, sort_keys=True, ensure_ascii=False).encode()


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet='0123456789.eE+-:,[]{}"ax ', max_size=40))
def test_float_hints_never_miss_a_float(text: str) -> None:
    """The literal prefilter in front of _FLOAT decides exactly as _FLOAT alone, on text dense in digits, dots,
    exponents and structure."""
    raw = text.encode()
    assert scoring._may_hold_float(raw) == (scoring._FLOAT.search(raw) is not None)


def _float_fields(model: Any, seen: set[Any]) -> set[str]:
    """Every field typed float reachable from a pydantic model (the oracle for scoring._timed)."""
    import typing

    from pydantic import BaseModel

    out: set[str] = set()
    if model in seen:
        return out
    seen.add(model)
    for name, field in model.model_fields.items():
        todo = [field.annotation]
        while todo:
            tp = todo.pop()
            if tp is float:
                out.add(f"{model.__name__}.{name}")
            elif isinstance(tp, type) and issubclass(tp, BaseModel):
                out |= _float_fields(tp, seen)
            todo.extend(typing.get_args(tp))
    return out


def test_only_the_known_float_fields_can_dump_non_finite() -> None:
    """canonical_json writes infinity as null; a dump keeps a non-finite float only in a field typed float (free-form
    values dump it as null), so scoring._timed must know every such field: creation timestamps are left out of the
    fingerprint, the three durations send the case to json."""
    assert _float_fields(EvalCase, set()) == {
        "EvalCase.creation_timestamp", "Invocation.creation_timestamp", "Invocation.duration",
        "Invocation.model_duration", "Invocation.tool_duration",
    }


@pytest.mark.parametrize("special", [float("inf"), float("-inf"), float("nan"), 1e16, 1e-7, 0.5])
def test_fingerprints_of_cases_with_special_floats_equal_the_definition(special: float) -> None:
    """Non-finite and exponent floats in a duration and inside tool arguments and session state."""
    data = case("f", inv("q", "a", [("t", {"x": special, "y": [special, {"z": special}]})]),
                session_input={"app_name": "app", "user_id": "u", "state": {"s": special}})
    data["conversation"][0]["duration"] = special
    for value in (data, {**data, "conversation": [{**data["conversation"][0], "duration": None}]}):
        parsed = EvalCase.model_validate(value)
        assert case_fingerprints(parsed) == _reference_fingerprints(parsed)


BROKEN_FILES: dict[str, Any] = {
    "invalid.evalset.json": "{",
    "empty.evalset.json": "",
    "latin1.evalset.json": b'{"eval_set_id": "caf\xe9"}',
    "camel.evalset.json": {"evalSetId": "x", "evalCases": []},
    "dupes.evalset.json": eval_set("dupes", case("d"), case("d")),
}


def test_broken_files_do_not_stop_the_good_one(write: Writer, tmp_path: Path) -> None:
    """A directory mixing broken files with a good eval set: the good set is scored; every problem is reported."""
    for name, content in BROKEN_FILES.items():
        write(f"evals/{name}", content)
    write("evals/good.evalset.json", eval_set("good", case("g", inv(calls=[("f", {})]))))
    write("evals/test_config.json", TRAJ_ONLY)
    actual = write("actual.json", {"g": [inv(calls=[("f", {})])], "d": [inv()]})
    broken_actual = write("broken_actual.json", "[]")
    report = evaluate([str(tmp_path / "evals"), str(tmp_path / "missing")], actuals=[str(actual), str(broken_actual)])
    by_path = {Path(es.path).name: es for es in report.eval_sets}
    assert by_path["good.evalset.json"].status == "passed"
    assert _case(report, "g").metrics["tool_trajectory_avg_score"].score == 1.0
    for name in ("invalid.evalset.json", "empty.evalset.json", "latin1.evalset.json", "camel.evalset.json"):
        es = by_path[name]
        assert es.status == "error" and es.cases == [] and es.errors[0].path == es.path, name
    assert by_path["camel.evalset.json"].errors[0].pointer == "/evalSetId"
    dupes = by_path["dupes.evalset.json"]
    assert [c.eval_id for c in dupes.cases] == ["d"] and dupes.errors[0].pointer == "/eval_cases/1/eval_id"
    assert [(Path(e.path or "").name, e.message) for e in report.errors] == [
        ("missing", "no such file or directory"),
        ("broken_actual.json", "expected actual runs: an ADK EvalSetResult (with 'eval_case_results') or an object "
                               "mapping eval_id to a list of invocations"),
    ]


def test_turns_are_packed_where_cases_are_kept_and_left_loose_for_a_stream() -> None:
    """A case kept in the report, or held back in a stream behind a judged one, keeps its turns packed; a case
    streamed out at once arrives with its rows unpacked (written and dropped, it never pays for packing)."""

    @dataclass(frozen=True)
    class Fails:
        name: str = "fails"
        threshold: float | None = 0.5
        judged: frozenset[str] = frozenset()

        async def _score(self) -> MetricResult:
            return MetricResult(score=0.0, status="failed", threshold=0.5)

        def evaluate(self, case: CaseInput) -> Any:
            if case.case.eval_id in self.judged:
                return self._score()
            return MetricResult(score=0.0, status="failed", threshold=0.5)

    kept = score_run([_loaded(("a", 2))], _actuals(("a", 2)), criteria=_only(Fails()))
    assert kept.eval_sets[0].cases[0].turns._rows is None and kept.eval_sets[0].cases[0].turns._packed
    streamed: dict[str, tuple[bool, int]] = {}

    def stream(index: int, es: Any, case: CaseResult) -> None:
        streamed[case.eval_id] = (case.turns._rows is None, len(case.turns))

    score_run([_loaded(("a", 2), ("j", 1), ("b", 1))], _actuals(("a", 2), ("j", 1), ("b", 1)),
              criteria=_only(Fails(judged=frozenset({"j"}))), stream=stream)
    assert streamed == {"a": (False, 2), "j": (True, 1), "b": (True, 1)}
