"""``evalbot run`` without --jobs: one job per CPU (``--jobs auto``) when its inputs add up to
``AUTO_JOBS_BYTES`` or more, else one; never where --jobs would be refused or give one job, and nothing said; an
explicit --jobs always wins; the report, console text and exit code are one job's; a machine that cannot start the
jobs scores in one process."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

import evalbot.cli.args as cli_args
import evalbot.cli.jobs as cli_jobs
from evalbot.cli.commands import build_parser, main
from tests.fakes.suites import write_suite


def _suite(tmp_path: Path, cases: int = 40) -> tuple[list[str], int]:
    """``evals --actuals pr.json`` of a generated suite, and the bytes of its eval set files and actuals."""
    evals, _, pr = write_suite(tmp_path / "suite", cases=cases, sets=2)
    size = sum(p.stat().st_size for p in evals.glob("*.evalset.json")) + pr.stat().st_size
    return [str(evals), "--actuals", str(pr)], size


def _jobs(argv: list[str], env: dict[str, str] | None = None) -> int:
    return cli_jobs.jobs_for(build_parser().parse_args(["run", *argv]), env or {})


@pytest.fixture
def cpus(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set how many CPUs this process may use, as ``--jobs auto`` sees them."""

    def set_cpus(count: int) -> None:
        monkeypatch.setattr(cli_args, "available_cpus", lambda: count)

    set_cpus(4)
    return set_cpus


def test_the_default_is_one_job_per_cpu_from_the_threshold_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              cpus: Any) -> None:
    argv, size = _suite(tmp_path)
    monkeypatch.setattr(cli_jobs, "AUTO_JOBS_BYTES", size)
    assert cli_jobs.input_bytes(build_parser().parse_args(["run", *argv])) == size  # test_config.json not counted
    assert _jobs(argv) == 4
    assert _jobs([*argv, "--judge-concurrency", "3"]) == 3  # one judge slot per job at least, silently
    cpus(1)
    assert _jobs(argv) == 1  # one CPU: one process
    cpus(4)
    monkeypatch.setattr(cli_jobs, "AUTO_JOBS_BYTES", size + 1)
    assert _jobs(argv) == 1
    assert _jobs([argv[0]]) == 1  # the eval sets alone are smaller still


def test_the_shipped_threshold_keeps_small_runs_in_one_process(tmp_path: Path, cpus: Any) -> None:
    argv, size = _suite(tmp_path)
    assert size < cli_jobs.AUTO_JOBS_BYTES and _jobs(argv) == 1


def test_an_explicit_jobs_always_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: Any) -> None:
    argv, size = _suite(tmp_path)
    monkeypatch.setattr(cli_jobs, "AUTO_JOBS_BYTES", size)
    assert _jobs([*argv, "--jobs", "1"]) == 1
    assert _jobs([*argv, "--jobs", "3"]) == 3
    monkeypatch.setattr(cli_jobs, "AUTO_JOBS_BYTES", size + 1)
    assert _jobs([*argv, "--jobs", "2"]) == 2
    assert _jobs([*argv, "--jobs", "auto"]) == 4


def test_what_refuses_or_narrows_jobs_stays_one_job_and_says_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: Any, capsys: pytest.CaptureFixture[str]) -> None:
    argv, _ = _suite(tmp_path)
    monkeypatch.setattr(cli_jobs, "AUTO_JOBS_BYTES", 1)
    cache = str(tmp_path / "cache")
    for extra in (["--shard", "1/2"], ["--html", str(tmp_path / "r.html")], ["--agent", "m:f"], ["--num-runs", "2"],
                  ["--judge-cache", cache]):
        assert _jobs([*argv, *extra]) == 1, extra
    assert _jobs(argv, {"EVALBOT_JUDGE_CACHE": cache}) == 1
    selected = f"{tmp_path / 'suite/evals/set-1.evalset.json'}:case-0001"
    assert _jobs([selected, *argv[1:]]) == 1  # a selection of cases
    assert capsys.readouterr().err == ""
    # the real command: --shard without --jobs still runs (no new refusal) and prints no notice
    code = main(["run", *argv, "--shard", "1/2", "--report", str(tmp_path / "part.json")], env={})
    assert code in (0, 1) and "notice" not in capsys.readouterr().err and (tmp_path / "part.json").exists()


def test_files_that_are_not_there_or_not_regular_count_nothing(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    args = build_parser().parse_args(["run", str(tmp_path / "missing.evalset.json"), "--actuals", str(fifo),
                                      "--actuals", str(tmp_path)])
    assert cli_jobs.input_bytes(args) == 0


def _outcome(argv: list[str], report: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str, bytes]:
    capsys.readouterr()
    code = main(["run", *argv, "--report", str(report)], env={})
    out = capsys.readouterr()
    return code, out.out, out.err, report.read_bytes()


def test_above_the_threshold_the_default_runs_jobs_with_one_jobs_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: Any, capsys: pytest.CaptureFixture[str]) -> None:
    argv, size = _suite(tmp_path, cases=60)
    monkeypatch.setattr(cli_jobs, "AUTO_JOBS_BYTES", size)
    cpus(2)
    started: list[int] = []
    real = cli_jobs.run_jobs

    def spy(args: Any, env: Any, count: int) -> int:
        started.append(count)
        return real(args, env, count)

    monkeypatch.setattr(cli_jobs, "run_jobs", spy)
    default = _outcome(argv, tmp_path / "default.json", capsys)
    assert started == [2]  # the default really split the run
    one = _outcome([*argv, "--jobs", "1"], tmp_path / "one.json", capsys)
    assert started == [2]  # --jobs 1: one process
    assert default == one and default[0] == 1 and "FAIL" in default[1]


def test_a_machine_that_cannot_start_the_jobs_scores_in_one_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: Any, capsys: pytest.CaptureFixture[str]) -> None:
    argv, size = _suite(tmp_path)
    one = _outcome([*argv, "--jobs", "1"], tmp_path / "one.json", capsys)
    monkeypatch.setattr(cli_jobs, "AUTO_JOBS_BYTES", size)
    calls: list[int] = []

    def refused(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")

    monkeypatch.setattr(cli_jobs.subprocess, "Popen", refused)
    assert _outcome(argv, tmp_path / "default.json", capsys) == one and calls == [1]
    # asked for explicitly, as before: the system's refusal is reported (exit 70), no report
    capsys.readouterr()
    code = main(["run", *argv, "--jobs", "2", "--report", str(tmp_path / "asked.json")], env={})
    assert code == 70 and "BlockingIOError" in capsys.readouterr().err and not (tmp_path / "asked.json").exists()


def test_available_cpus_survives_a_refused_affinity_query(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(pid: int) -> set[int]:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "sched_getaffinity", refused, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    assert cli_args.available_cpus() == 3
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert cli_args.available_cpus() == 1
