"""``evalbot run --jobs N``'s own join of its jobs' parts (``cli.jobs.join_parts``, ``shard.merge_job_parts``): each
job scores a contiguous run of the cases chosen without parsing any (``shard.job_eval_sets``) and writes its report
without cases, its cases' text and its notes (tallies, what the case notices are made of); the parent's report,
console and judge gaps are one job's. Parts that do not fit together are never joined (a bug: ``run --jobs`` exits
70 and writes nothing)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalbot.cli.commands import main
from evalbot.cli.jobs import JobsMergeError, join_parts, notes_path
from evalbot.formats.loaded import LoadedCase, LoadedEvalSet
from evalbot.render.console import render_text
from evalbot.results import write_report_json
from evalbot.shard.partition import Shard, job_eval_sets
from tests.fakes.suites import write_suite

EXAMPLE = ["examples/evals", "--actuals", "examples/runs/pr.json", "--judge-cache", "examples/judge-cache",
           "--judge-replay"]


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


def _job_parts(folder: Path, inputs: list[str], n: int) -> list[Path]:
    parts = []
    for k in range(1, n + 1):
        part = folder / f"jobs-{n}" / f"part-{k}.json"
        if not part.exists():
            part.parent.mkdir(parents=True, exist_ok=True)
            assert main(["run", f"--as-job={k}/{n}", f"--report={part}", *inputs], {}) == 0
        parts.append(part)
    return parts


def _joined(parts: list[Path]) -> tuple[str, str, str]:
    report, joined = join_parts(parts)
    out = io.StringIO()
    write_report_json(report, out, joined)
    return out.getvalue(), render_text(report, tally=joined.console), repr(joined.gaps.gaps().__dict__)


def _one_job(folder: Path, inputs: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    capsys.readouterr()
    main(["run", *inputs, "--report", str(folder / "one.json")], {})
    return (folder / "one.json").read_text(encoding="utf-8"), capsys.readouterr().out


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    folder = tmp_path_factory.mktemp("suite")
    evals, _, pr = write_suite(folder / "suite", cases=60, sets=3)
    return folder, [str(evals), "--actuals", str(pr)]


def test_the_parts_join_into_one_jobs_report_and_console(suite: tuple[Path, list[str]], tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Judged parts (votes, per-invocation verdicts, judge usage) and a generated suite (failing cases, the
    efficiency metrics' values), over 2, 4 and 7 jobs (7: more jobs than the example's cases, some without any)."""
    folder, inputs = suite
    for where, argv in ((tmp_path / "example", EXAMPLE), (folder, inputs)):
        where.mkdir(exist_ok=True)
        report, console = _one_job(where, argv, capsys)
        for n in (2, 4, 7):
            got = _joined(_job_parts(where, argv, n))
            assert got[:2] == (report, console.rstrip("\n")), n
        assert "FAIL" in console


def test_parts_that_do_not_fit_together_are_never_joined(suite: tuple[Path, list[str]], tmp_path: Path) -> None:
    """Notes that do not decode, or that another config wrote, or that count other cases than the cases file
    holds; a part holding cases; a part of another run: JobsMergeError (``run --jobs``: exit 70, nothing
    written)."""
    folder, inputs = suite
    parts = _job_parts(folder, inputs, 3)
    assert "FAIL" in _joined(parts)[1]
    other, _, other_pr = write_suite(tmp_path / "other", cases=10, sets=2)
    foreign = _job_parts(tmp_path, [str(other), "--actuals", str(other_pr)], 3)[1]

    edits = iter(range(100))

    def with_file(path: Path, data: bytes) -> list[Path]:
        """The parts copied to a folder of their own, ``path`` holding ``data`` there."""
        copy = tmp_path / f"edit-{next(edits)}"
        copy.mkdir()
        out = []
        for part in parts:
            for source in (part, notes_path(part), part.with_name(part.stem + ".cases")):
                target = copy / source.name
                target.write_bytes(data if source == path else source.read_bytes())
            out.append(copy / part.name)
        return out

    notes = notes_path(parts[0]).read_bytes()
    bad = [
        with_file(notes_path(parts[0]), b"\x93not notes"),
        with_file(notes_path(parts[0]), notes.replace(b"response_match_score", b"response_match_scorX", 1)),
        with_file(notes_path(parts[1]), notes),  # job 1's notes beside job 2's part and cases
        with_file(parts[2], parts[2].read_bytes().replace(b'"cases":[]', b'"cases":[{"eval_id":"x","status":"passed"}]', 1)),
        [parts[0], foreign, parts[2]],
    ]
    assert b'"cases":[]' in parts[2].read_bytes() and b"response_match_score" in notes
    for joined in bad:
        with pytest.raises(JobsMergeError):
            _joined(joined)
