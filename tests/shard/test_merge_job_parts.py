"""``evalbot run --jobs N``'s own merge (``shard.merge_job_parts``): each job scores a contiguous run of the cases
chosen without parsing any (``shard.job_eval_sets``) and sends its part and its notes; the parent's report, console
and judge gaps are one job's. A part that does not hold what its notes say, or a line the tallies cannot read, is
never merged (a bug: ``run --jobs`` exits 70 and writes nothing)."""

from __future__ import annotations

import io
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalbot.cli.commands import main
from evalbot.cli.evaluate import StreamedRun
from evalbot.cli.jobs import notes_path
from evalbot.formats.loaded import LoadedCase, LoadedEvalSet
from evalbot.render.console import render_text
from evalbot.results import write_report_json
from evalbot.shard import MergeError, Shard, job_eval_sets, merge_job_parts
from tests.fakes.suites import write_suite

EXAMPLE = ["examples/evals", "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache",
           "--judge-replay"]
CASE_LINE = b'{"eval_id":'
Parts = list[tuple[str, bytes, bytes]]


def _never_parsed() -> None:
    raise AssertionError("a case was parsed to choose the jobs' cases")


@given(st.lists(st.integers(0, 7), max_size=6), st.integers(1, 12))
def test_the_jobs_cases_are_contiguous_runs_of_the_whole_in_order(sizes: list[int], count: int) -> None:
    """Every case in exactly one job, job 1's first, as even as can be (sizes differ by one at most), no case
    parsed; each job's eval sets are all the run's (with none of their cases, maybe), noting their cases."""
    sets = [LoadedEvalSet(f"s{i}.json", f"s{i}", tuple(LoadedCase(f"c{i}-{j}", source=_never_parsed)  # type: ignore[arg-type]
                                                       for j in range(n))) for i, n in enumerate(sizes)]
    jobs = [job_eval_sets(sets, Shard(k, count)) for k in range(1, count + 1)]
    for mine in jobs:
        assert [es.eval_set_id for es in mine] == [es.eval_set_id for es in sets]
        assert all(es.case_notices == () and es.notes is not None for es in mine)
    per_job = [[c.eval_id for es in mine for c in es.cases] for mine in jobs]
    assert [i for ids in per_job for i in ids] == [c.eval_id for es in sets for c in es.cases]
    for i in range(len(sets)):
        assert [c for mine in jobs for c in mine[i].cases] == list(sets[i].cases)
    lengths = [len(ids) for ids in per_job]
    assert max(lengths) - min(lengths) <= 1


def _job_parts(folder: Path, inputs: list[str], n: int) -> Parts:
    out = []
    for k in range(1, n + 1):
        part = folder / f"jobs-{n}" / f"part-{k}.json"
        if not part.exists():
            part.parent.mkdir(parents=True, exist_ok=True)
            assert main(["run", f"--as-job={k}/{n}", f"--report={part}", *inputs], {}) == 0
        out.append((f"job {k}", part.read_bytes(), notes_path(part).read_bytes()))
    return out


def _merged(parts: Parts) -> tuple[str, str, str]:
    with tempfile.TemporaryFile() as spill:
        run = StreamedRun(spill)
        report = merge_job_parts(parts, run.add_line)
        out = io.StringIO()
        write_report_json(report, out, run)
        return out.getvalue(), render_text(report, tally=run.console), repr(run.gaps.gaps().__dict__)


def _one_job(folder: Path, inputs: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    capsys.readouterr()
    main(["run", *inputs, "--report", str(folder / "one.json")], {})
    return (folder / "one.json").read_text(encoding="utf-8"), capsys.readouterr().out


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("suite")
    evals, _, pr = write_suite(folder / "suite", cases=60, sets=3)
    return folder, [str(evals), "--actuals", str(pr)]


def test_the_parts_merge_into_one_jobs_report_and_console(suite: tuple[Path, list[str]], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Judged parts (votes, per-invocation verdicts, judge usage) and a generated suite, over 2, 4 and 7 jobs (7:
    more jobs than the example's cases, some parts without any)."""
    folder, inputs = suite
    for where, argv in ((tmp_path / "example", EXAMPLE), (folder, inputs)):
        where.mkdir(exist_ok=True)
        report, console = _one_job(where, argv, capsys)
        for n in (2, 4, 7):
            got = _merged(_job_parts(where, argv, n))
            assert got[:2] == (report, console.rstrip("\n")), n
        assert "FAIL" in console


def _edit(parts: Parts, part: int, nth: int, old: bytes, new: bytes) -> Parts:
    name, data, notes = parts[part]
    lines = data.split(b"\n")
    index = [i for i, line in enumerate(lines) if line.startswith(CASE_LINE)][nth]
    assert old in lines[index]
    lines[index] = lines[index].replace(old, new, 1)
    return [*parts[:part], (name, b"\n".join(lines), notes), *parts[part + 1:]]


def test_a_part_that_does_not_hold_what_its_notes_say_is_never_merged(suite: tuple[Path, list[str]]) -> None:
    """A case line dropped, doubled or moved to another part, a line the tallies cannot read, notes that do not
    decode or that another config wrote: MergeError (``run --jobs``: exit 70, nothing written)."""
    folder, inputs = suite
    parts = _job_parts(folder, inputs, 3)
    lines = parts[0][1].split(b"\n")
    first = next(i for i, line in enumerate(lines) if line.startswith(CASE_LINE))
    name, _, notes = parts[0]
    doubled = [(name, b"\n".join([*lines[:first + 1], lines[first], *lines[first + 1:]]), notes), *parts[1:]]
    dropped = [(name, b"\n".join([*lines[:first], *lines[first + 1:]]), notes), *parts[1:]]
    moved = [dropped[0], (parts[1][0], parts[1][1].replace(b"\n" + CASE_LINE, b"\n" + lines[first].rstrip(b",")
                                                          + b",\n" + CASE_LINE, 1), parts[1][2]), parts[2]]
    no_status = _edit(parts, 1, 0, b'"status":"', b'"state":"')
    bad_score = _edit(parts, 2, 0, b'"score":', b'"score":"x","s":')
    bad_notes = [(name, parts[0][1], b'{"eval_sets": 3}'), *parts[1:]]
    other_config = [(name, parts[0][1], notes.replace(b'"configured":["', b'"configured":["x","')), *parts[1:]]
    for bad in (doubled, dropped, moved, no_status, bad_score, bad_notes, other_config):
        with pytest.raises(MergeError):
            _merged(bad)
    assert "FAIL" in _merged(parts)[1]
