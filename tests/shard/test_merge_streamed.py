"""``evalbot merge`` without a comparison streams the cases through (``shard.merge_streamed``): the report file,
the console text and the exit code are those of the merge that holds every case, and of one job; a forged part is
never merged by the streamed path unless the whole path merges it into the same report (otherwise the whole path
runs and refuses it, naming the problem as always)."""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalbot.cli.commands import main
from evalbot.cli.evaluate import StreamedRun
from evalbot.compare.judge_gaps import judge_gaps
from evalbot.errors import EvalbotError
from evalbot.render.console import render_text
from evalbot.results import write_report_json
from evalbot.shard.merge import merge_reports, merge_streamed
from evalbot.shard.parts import part_from_bytes
from tests.fakes.suites import write_suite
from tests.shard.forgery import forged

EXAMPLE = ["examples/evals", "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache",
           "--judge-replay"]
CASE_LINE = b'{"eval_id":'

Named = list[tuple[str, bytes]]


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A generated suite (3 eval sets, multi-turn cases, some failing) and the inputs that score it."""
    folder = tmp_path_factory.mktemp("suite")
    evals, _, pr = write_suite(folder / "suite", cases=60, sets=3)
    return folder, [str(evals), "--actuals", str(pr)]


def _parts(folder: Path, inputs: list[str], n: int) -> list[Path]:
    out = []
    for k in range(1, n + 1):
        part = folder / f"parts-{n}" / f"part-{k}.json"
        if not part.exists():
            assert main(["run", *inputs, "--shard", f"{k}/{n}", "--report", str(part)], {}) in (0, 1)
        out.append(part)
    return out


@pytest.fixture(scope="module")
def example_parts(tmp_path_factory: pytest.TempPathFactory) -> Named:
    """The bundled example's 3 parts (judged criteria replayed: votes, rationales, judge usage)."""
    return [(str(p), p.read_bytes()) for p in _parts(tmp_path_factory.mktemp("example"), EXAMPLE, 3)]


def _merge_cli(parts: list[Path], out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["merge", *map(str, parts), "--report", str(out), *extra], {})
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_streamed_merge_writes_the_one_jobs_report_and_the_whole_merges_console(
        suite: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder, inputs = suite
    one = tmp_path / "one.json"
    assert main(["run", *inputs, "--report", str(one)], {}) == 1
    parts = _parts(folder, inputs, 4)
    capsys.readouterr()
    # the parts shard jobs write take the streamed path
    assert merge_streamed([(str(p), p.read_bytes()) for p in parts], StreamedRun(None)) is not None
    streamed = _merge_cli(parts, tmp_path / "streamed.json", capsys)
    # --html keeps every case (the page shows them): the whole merge, the reference
    whole = _merge_cli(parts, tmp_path / "whole.json", capsys, "--html", str(tmp_path / "whole.html"))
    assert streamed == whole and streamed[0] == 1 and "FAIL" in streamed[1]
    assert (tmp_path / "streamed.json").read_bytes() == (tmp_path / "whole.json").read_bytes() == one.read_bytes()
    with_sets = _merge_cli(parts, tmp_path / "checked.json", capsys, "--eval-sets", inputs[0])
    assert with_sets[:2] == streamed[:2] and with_sets[2] == ""  # checked against the loaded eval sets: no warning
    assert (tmp_path / "checked.json").read_bytes() == one.read_bytes()


def _whole(named: Named) -> tuple[str, ...]:
    """The reference: every part read whole, merged holding every case."""
    try:
        report = merge_reports([(name, part_from_bytes(data, name)) for name, data in named])
    except EvalbotError as exc:
        return "refused", f"{type(exc).__name__}: {exc}", "", "", ""
    out = io.StringIO()
    write_report_json(report, out)
    keys = [(es.eval_set_id, case.eval_id) for es in report.eval_sets for case in es.cases]
    return "ok", out.getvalue(), render_text(report), repr(judge_gaps(report).__dict__), repr(keys)


def _streamed(named: Named) -> tuple[str, ...] | None:
    """The streamed merge."""
    with tempfile.TemporaryFile() as spill:
        run = StreamedRun(spill)
        got = merge_streamed(named, run)
        if got is None:
            return None
        report, keys = got
        out = io.StringIO()
        write_report_json(report, out, run)
        return ("ok", out.getvalue(), render_text(report, tally=run.console), repr(run.gaps.gaps().__dict__),
                repr(keys))


def test_the_examples_judged_parts_stream_into_the_whole_merges_report(example_parts: Named) -> None:
    streamed = _streamed(example_parts)
    assert streamed is not None and streamed == _whole(example_parts)
    assert '"usage": {' in streamed[1] and "votes" in streamed[1]


def _edit_case(named: Named, part: int, nth: int, old: bytes, new: bytes) -> Named:
    name, data = named[part]
    lines = data.split(b"\n")
    index = [i for i, line in enumerate(lines) if line.startswith(CASE_LINE)][nth]
    assert old in lines[index]
    lines[index] = lines[index].replace(old, new, 1)
    return [*named[:part], (name, b"\n".join(lines)), *named[part + 1:]]


@pytest.mark.parametrize(("part", "nth", "old", "new", "refusal"), [
    (0, 1, b'"reruns":0', b'"reruns":-1.5', "valid integer"),
    (1, 0, b'"status":"', b'"status":"x', "Input should be"),
    (1, 0, b'"reruns":0', b'"reruns":0,"eval_id":"case-0001"', "MergeError"),  # a second eval_id key: the last counts
    (2, 0, b'"reruns":0', b'"reruns":0,"eval_id":"other"', "not in the run's case list"),
    (0, 0, b'{"eval_id":"c', b'{"eval_id":"\\u0063', ""),  # the same id, escaped: merged as the whole path merges it
    (0, 0, b'"eval_id":"', b'"eval_id":"\xff', "Invalid JSON"),
    (2, 1, b'"reruns":0', b'"reruns":0,"turns":' + b"[" * 300 + b"]" * 300, "recursion limit"),
])
def test_a_forged_case_line_is_refused_or_merged_exactly_as_the_whole_path_does(
        suite: tuple[Path, list[str]], part: int, nth: int, old: bytes, new: bytes, refusal: str) -> None:
    folder, inputs = suite
    named = _edit_case([(str(p), p.read_bytes()) for p in _parts(folder, inputs, 3)], part, nth, old, new)
    whole = _whole(named)
    streamed = _streamed(named)
    if refusal:
        assert whole[0] == "refused" and refusal in whole[1], whole[1]
        assert streamed is None
    else:
        assert whole[0] == "ok" and streamed == whole


def test_duplicated_moved_or_missing_case_lines_are_refused_by_the_whole_path(suite: tuple[Path, list[str]]) -> None:
    folder, inputs = suite
    named = [(str(p), p.read_bytes()) for p in _parts(folder, inputs, 3)]
    lines = [data.split(b"\n") for _, data in named]
    first = next(i for i, line in enumerate(lines[0]) if line.startswith(CASE_LINE))
    doubled = [(named[0][0], b"\n".join([*lines[0][:first + 1], lines[0][first], *lines[0][first + 1:]])), *named[1:]]
    moved_to = next(i for i, line in enumerate(lines[1]) if line.startswith(CASE_LINE))
    moved = [named[0], (named[1][0], b"\n".join([*lines[1][:moved_to + 1], lines[0][first], *lines[1][moved_to + 1:]])),
             named[2]]
    dropped = [(named[0][0], b"\n".join([*lines[0][:first], *lines[0][first + 1:]])), *named[1:]]
    for bad, refusal in ((doubled, "appears twice"), (moved, "the parts overlap"), (dropped, "MissingShards"),
                            (named[:2], "shard 3/3 missing"), ([named[0], named[0], named[1]], "given twice")):
        whole = _whole(bad)
        assert whole[0] == "refused" and refusal in whole[1], whole[1]
        assert _streamed(bad) is None


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_mutation_of_a_part_streams_only_into_the_whole_merges_report(example_parts: Named,
                                                                          data: st.DataObject) -> None:
    """Random forgeries of one part (bytes changed, inserted or cut; lines duplicated, dropped or swapped): the
    streamed merge gives up, or gives exactly what the whole merge gives (never a report the whole path refuses)."""
    k = data.draw(st.integers(0, len(example_parts) - 1))
    name, part = example_parts[k]
    mutated = forged(part, data)
    named = [*example_parts[:k], (name, mutated), *example_parts[k + 1:]]
    streamed = _streamed(named)
    if streamed is not None:
        assert streamed == _whole(named)


def test_an_unreadable_part_after_an_invalid_one_names_the_invalid_one_first(
        suite: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The parts are read before any is validated; the first part at fault is still the one named, as when each
    was read and validated in turn."""
    folder, inputs = suite
    parts = _parts(folder, inputs, 3)
    broken = tmp_path / "broken.json"
    broken.write_bytes(parts[0].read_bytes().replace(b'"reruns":0', b'"reruns":"x"', 1))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    code = main(["merge", str(broken), str(fifo), str(parts[2])], {})
    err = capsys.readouterr().err
    assert code == 2 and "broken.json:/eval_sets/" in err and "fifo" not in err, err
    code = main(["merge", str(parts[0]), str(fifo), str(parts[2])], {})
    err = capsys.readouterr().err
    assert code == 2 and "fifo.json" in err and "not a regular file" in err, err


def test_streamed_merge_checks_the_case_list_against_the_eval_sets_given(
        suite: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A case of the eval sets given with --eval-sets that the parts never measured: exit 3 naming it, as the
    merge holding every case does (the parts' own case list is only their word)."""
    folder, inputs = suite
    parts = _parts(folder, inputs, 3)
    capsys.readouterr()
    bigger, _, _ = write_suite(tmp_path / "bigger", cases=61, sets=3)
    streamed = _merge_cli(parts, tmp_path / "s.json", capsys, "--eval-sets", str(bigger))
    whole = _merge_cli(parts, tmp_path / "w.json", capsys, "--eval-sets", str(bigger), "--html", str(tmp_path / "w.html"))
    assert streamed == whole and streamed[0] == 3 and "set-0/case-0060" in streamed[2], streamed
