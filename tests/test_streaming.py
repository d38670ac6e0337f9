"""A run that streams its cases out of the report as they are scored (``score_run(stream=...)``, ``evalbot run``
without ``--html``): the same cases in report order, the same summaries, statuses and totals, and the same report
file, byte for byte, and console text as a run that keeps every case."""

from __future__ import annotations

import asyncio
import errno
import io
import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalbot.cli.commands import main
from evalbot.cli.evaluate import StreamedRun
from evalbot.criteria.base import BuildContext, CaseInput
from evalbot.errors import EvalbotError
from evalbot.formats.actuals import Actuals
from evalbot.formats.adk import EvalCase, Invocation
from evalbot.formats.config import EvalConfig, parse_config
from evalbot.formats.loaded import LoadedCase, LoadedEvalSet
from evalbot.pipeline import AgentRun, evaluate
from evalbot.redact import forget_secrets, register_secret
from evalbot.render.console import render_text
from evalbot.results import CaseResult, CriterionInfo, EvalSetReport, MetricResult, Report, write_report_json
from evalbot.runner.custom_agent import load_function_agent
from evalbot.runner.execute import RunOptions
from evalbot.scoring import score_run
from tests.fakes.builders import Writer, case, eval_set, inv

Streamed = list[tuple[int, str, dict[str, Any]]]


def _collector() -> tuple[Streamed, Callable[[int, EvalSetReport, CaseResult], None]]:
    got: Streamed = []
    return got, lambda index, es, c: got.append((index, es.eval_set_id, c.model_dump(mode="json")))


def _kept(report: Report) -> Streamed:
    return [(i, es.eval_set_id, c.model_dump(mode="json")) for i, es in enumerate(report.eval_sets) for c in es.cases]


def _without_cases(report: Report) -> dict[str, Any]:
    return report.model_dump(mode="json", exclude={"eval_sets": {"__all__": {"cases"}}})


JUDGED: list[float] = []
"""The judged scores given so far (``Mixed``)."""


@dataclass(frozen=True)
class Mixed:
    """A criterion scoring at once or through the event loop (a judged criterion), passing or failing, by case id:
    ``<sync|judged>-<pass|fail>-...``."""

    name: str = "mixed"
    threshold: float | None = 0.5

    async def _later(self, score: float) -> MetricResult:
        await asyncio.sleep(0)
        JUDGED.append(score)
        return MetricResult(score=score, status="passed" if score >= 0.5 else "failed", threshold=0.5)

    def evaluate(self, case: CaseInput) -> Any:
        kind, verdict, *_ = case.case.eval_id.split("-")
        score = 1.0 if verdict == "pass" else 0.0
        if kind == "judged":
            return self._later(score)
        return MetricResult(score=score, status="passed" if score else "failed", threshold=0.5,
                            details={"value": score * 3})


def _builder(config: EvalConfig, ctx: BuildContext, origin: str | None) -> tuple[list[Any], list[CriterionInfo]]:
    criterion = Mixed()
    return [criterion], [CriterionInfo(name=criterion.name, threshold=criterion.threshold)]


KINDS = ("sync-pass", "sync-fail", "judged-pass", "judged-fail", "missing", "mismatch")


def _inputs(sets: list[list[str]]) -> tuple[list[LoadedEvalSet], Actuals]:
    loaded, entries = [], {}
    for s, kinds in enumerate(sets):
        cases = []
        for c, kind in enumerate(kinds):
            eval_id = f"{kind}-{s}-{c}"
            cases.append(LoadedCase(eval_id, EvalCase.model_validate(case(eval_id, inv(f"q{c}")))))
            if kind != "missing":
                entries[(f"set{s}", eval_id)] = [Invocation.model_validate(inv(f"q{c}"))] * (2 if kind == "mismatch" else 1)
        loaded.append(LoadedEvalSet(f"set{s}.evalset.json", f"set{s}", tuple(cases), parse_config({}, None)))
    return loaded, Actuals(entries=entries)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.sampled_from(KINDS), max_size=6), min_size=1, max_size=4))
def test_streamed_scoring_sends_every_case_in_report_order_and_keeps_the_same_summaries(sets: list[list[str]]) -> None:
    """Cases waiting for a judged criterion hold back the later ones: the stream still gets the report's order."""
    loaded, actuals = _inputs(sets)
    kept = score_run(loaded, actuals, criteria=_builder)
    got, stream = _collector()
    loaded, actuals = _inputs(sets)
    streamed = score_run(loaded, actuals, criteria=_builder, stream=stream)
    assert got == _kept(kept)
    assert all(not es.cases for es in streamed.eval_sets)
    assert _without_cases(streamed) == _without_cases(kept)
    assert streamed.totals.cases == sum(map(len, sets))
    scored = [c for _, _, c in got if not c["eval_id"].startswith(("missing", "mismatch"))]
    assert all(c["metrics"]["mixed"]["status"] == c["eval_id"].split("-")[1] + "ed" for c in scored)
    assert streamed.totals.error == sum(k in ("missing", "mismatch") for kinds in sets for k in kinds)


def test_streamed_case_before_a_judged_one_is_sent_at_once() -> None:
    """Only what follows a case waiting for the judge is held: a run without judged criteria keeps no case."""
    loaded, actuals = _inputs([["sync-pass", "sync-fail", "judged-pass", "sync-pass"], ["sync-pass"]])
    sent: list[tuple[str, int]] = []
    JUDGED.clear()

    def stream(index: int, es: EvalSetReport, c: CaseResult) -> None:
        sent.append((c.eval_id, len(JUDGED)))

    score_run(loaded, actuals, criteria=_builder, stream=stream)
    assert sent == [("sync-pass-0-0", 0), ("sync-fail-0-1", 0), ("judged-pass-0-2", 1), ("sync-pass-0-3", 1),
                    ("sync-pass-1-0", 1)]


def test_agent_runs_are_streamed_after_pooling(tmp_path: Path) -> None:
    """Runs of the agent are pooled whole, then streamed: the same cases, none left in the report."""
    (tmp_path / "a.evalset.json").write_text(json.dumps(eval_set("a", case("c1", inv("hi")), case("c2", inv("yo")))))
    paths = [str(tmp_path / "a.evalset.json")]

    def run() -> AgentRun:
        return AgentRun(load_function_agent("tests.fakes.agents:echo"), RunOptions(num_runs=2))

    kept = evaluate(paths, agent=run())
    got, stream = _collector()
    streamed = evaluate(paths, agent=run(), stream=stream)
    def outcome(rows: Streamed) -> list[tuple[int, str, str, str, str | None]]:  # durations differ between runs
        return [(i, set_id, c["eval_id"], c["status"], c["runs"]) for i, set_id, c in rows]

    assert outcome(got) == outcome(_kept(kept)) and len(got) == 2
    assert not streamed.eval_sets[0].cases and streamed.totals == kept.totals
    assert streamed.eval_sets[0].metrics.keys() == kept.eval_sets[0].metrics.keys()


@pytest.fixture
def secret() -> Any:
    register_secret("sk-streamed-secret-123")
    yield "sk-streamed-secret-123"
    forget_secrets()


def _project(write: Writer, secret: str) -> list[str]:
    """Two eval sets: 120 cases, half failing (more than the console lists), one missing its run (its id, in the
    reason, holds a secret), one whose id holds a URL with a query."""
    calls = [("f", {"a": 1})]
    cases = [case(f"c{i}", inv("q", "the cat sat", calls)) for i in range(120)]
    cases.append(case(f"gone-{secret}", inv("q")))
    cases.append(case("https://h.example/x?sig=abc", inv("q", "the cat sat", calls)))
    actual = {f"c{i}": [inv("q", "the cat sat" if i % 3 else "a dog", calls if i % 4 else [("g", {})])]
              for i in range(120)}
    actual["https://h.example/x?sig=abc"] = [inv("q", "the cat sat", calls)]
    write("one/test_config.json", {"criteria": {"tool_trajectory_avg_score": 1.0, "response_match_score": 0.5}})
    one = write("one/one.evalset.json", eval_set("one", *cases))
    two = write("two/two.evalset.json", eval_set("two", case("t1", inv("q", "ok")), case("t2", inv("q", "no"))))
    runs = write("act.json", {**actual, "t1": [inv("q", "ok")], "t2": [inv("q", "yes")]})
    return [str(one), str(two.parent), "--actuals", str(runs)]


def test_run_report_file_and_console_are_those_of_a_run_keeping_every_case(
    write: Writer, tmp_path: Path, secret: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``evalbot run --report`` streams its cases through a temporary file: the file it writes is byte-identical to
    the whole report written at once, scrubbed (secrets masked, URL queries dropped), and so is the console text."""
    args = _project(write, secret)
    out = tmp_path / "streamed.json"
    code = main(["run", *args, "--report", str(out)])
    console = capsys.readouterr().out
    kept = evaluate(args[:2], actuals=[args[3]])
    whole = io.StringIO()
    write_report_json(kept, whole)
    assert out.read_text(encoding="utf-8") == whole.getvalue()
    assert secret not in whole.getvalue() and "sig=abc" not in whole.getvalue()
    assert console == render_text(kept) + "\n"
    assert "… and " in console and code == 2  # more failures than listed; the missing run is an error
    assert json.loads(out.read_text(encoding="utf-8"))["totals"]["cases"] == 124


def test_run_without_report_streams_and_prints_the_same(write: Writer, secret: str,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    args = _project(write, secret)
    code = main(["run", *args])
    assert capsys.readouterr().out == render_text(evaluate(args[:2], actuals=[args[3]])) + "\n" and code == 2


def test_streamed_cases_copy_only_their_eval_set_and_survive_multibyte_text_across_chunks() -> None:
    """Each eval set's lines come back whole, even when a UTF-8 character straddles a read chunk."""
    with io.BytesIO() as spill:
        run = StreamedRun(spill)
        es = [EvalSetReport(eval_set_id=f"s{i}", path="p", status="passed") for i in range(3)]
        big = "é" * ((1 << 20) // 2 + 1)  # 2 bytes each: a chunk of 1 MiB ends inside one
        cases = {0: ["a", big], 2: ["b"]}
        for index, ids in cases.items():
            for eval_id in ids:
                run(index, es[index], CaseResult(eval_id=eval_id, status="passed"))
        for index, ids in cases.items():
            out = io.StringIO()
            run.copy_cases(index, out)
            assert [json.loads(line)["eval_id"] for line in out.getvalue().lstrip("\n").split(",\n")] == ids
        out = io.StringIO()
        run.copy_cases(1, out)
        assert out.getvalue() == ""


def test_streamed_cases_go_to_a_utf8_file_as_bytes_in_order_and_to_other_encodings_as_text() -> None:
    """A UTF-8 file gets the spilled bytes as they are, after what was written to it before and before what follows;
    a file of another encoding gets the text, encoded its way."""
    with io.BytesIO() as spill:
        run = StreamedRun(spill)
        es = EvalSetReport(eval_set_id="s", path="p", status="passed")
        for eval_id in ("a", "é" * 3000, "日本"):
            run(0, es, CaseResult(eval_id=eval_id, status="passed"))
        text = io.StringIO()
        run.copy_cases(0, text)
        for encoding in ("utf-8", "UTF8", "utf-16"):
            raw = io.BytesIO()
            out = io.TextIOWrapper(raw, encoding=encoding)
            out.write("[")
            run.copy_cases(0, out)
            out.write("]")
            out.flush()
            assert raw.getvalue().decode(encoding) == "[" + text.getvalue() + "]"


def test_html_run_keeps_its_cases(write: Writer, tmp_path: Path, secret: str) -> None:
    """``--html`` shows every case: that run is not streamed, and its JSON report is the same file."""
    args = _project(write, secret)
    main(["run", *args, "--report", str(tmp_path / "a.json")])
    main(["run", *args, "--report", str(tmp_path / "b.json"), "--html", str(tmp_path / "b.html")])
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert "c119" in (tmp_path / "b.html").read_text(encoding="utf-8")


def test_an_unwritable_temporary_folder_is_a_clear_error(write: Writer, tmp_path: Path, secret: str,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    assert main(["run", *_project(write, secret), "--report", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err
    assert "temporary file in" in err and "TMPDIR" in err and "internal error" not in err


def test_a_full_disk_under_the_temporary_file_is_a_clear_error() -> None:
    class Full(io.BytesIO):
        def write(self, data: Any) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    run = StreamedRun(Full())
    with pytest.raises(EvalbotError, match=r"No space left on device.*TMPDIR"):
        run(0, EvalSetReport(eval_set_id="s", path="p", status="passed"), CaseResult(eval_id="a", status="passed"))
