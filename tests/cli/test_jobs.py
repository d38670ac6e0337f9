"""``evalbot run --jobs N``: the cases scored by N real child processes and merged, with the report file, the console
text (stdout and stderr) and the exit code of one job; the judge concurrency shared (never more calls in flight
than --judge-concurrency); a job that fails, is killed or is interrupted fails the run loudly, writes no report and
leaves no temporary part; Ctrl-C or SIGTERM stops every job."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalbot.cli.commands import build_parser, main
from evalbot.cli.jobs import FORWARDED, PARENT_ONLY, JobsProgress, ProgressPipe, job_command, share, single_job_reason
from evalbot.progress import TerminalProgress
from tests.fakes.builders import case, eval_set, inv
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.suites import write_suite

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = [str(ROOT / "examples/evals"), "--actuals", str(ROOT / "examples/runs/pr.json"), "--judge-cache",
           str(ROOT / "examples/judge-cache"), "--judge-replay"]

Outcome = tuple[int, str, str, bytes | None]


def _run(argv: list[str], report: Path, capsys: pytest.CaptureFixture[str], env: dict[str, str] | None = None,
         ) -> Outcome:
    """``evalbot run ARGV --report REPORT``: exit code, stdout, stderr and the report's bytes (None if unwritten)."""
    capsys.readouterr()
    code = main(["run", *argv, "--report", str(report)], env=env if env is not None else {})
    out = capsys.readouterr()
    return code, out.out, out.err, report.read_bytes() if report.exists() else None


def _same_as_one_job(argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: tuple[int, ...],
                     env: dict[str, str] | None = None) -> Outcome:
    one = _run(argv, tmp_path / "one.json", capsys, env)
    for n in jobs:
        many = _run([*argv, "--jobs", str(n)], tmp_path / f"jobs-{n}.json", capsys, env)
        assert many == one, f"--jobs {n} differs from one job"
    return one


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder this process creates the jobs' parts in (checked empty afterwards)."""
    folder = tmp_path / "tmpdir"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_the_bundled_example_is_byte_identical(tmp_path: Path, private_tmp: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """Judged criteria replayed from the cache (votes, rationales, usage): 2 jobs, and 7 jobs for 6 cases (a part
    without cases takes the whole merge)."""
    code, out, _, report = _same_as_one_job(EXAMPLE, tmp_path, capsys, (2, 7))
    assert code == 1 and "FAIL" in out and report is not None and b'"cache"' in report
    assert list(private_tmp.iterdir()) == []  # the parts and the jobs' logs are removed


def test_generated_suites_with_errors_bad_actuals_and_a_selection(tmp_path: Path, write: Any,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    evals, _, pr = write_suite(tmp_path / "suite", cases=60, sets=3)
    code, out, _, _ = _same_as_one_job([str(evals), "--actuals", str(pr)], tmp_path, capsys, (3,))
    assert code == 1 and "FAIL" in out
    # an eval set that does not parse, next to the others' results, and an --actuals file that does not exist
    (evals / "broken.evalset.json").write_text('{"eval_set_id": "broken", "eval_cases": [', encoding="utf-8")
    code, _, _, report = _same_as_one_job(
        [str(evals), "--actuals", str(pr), "--actuals", str(tmp_path / "missing.json")], tmp_path, capsys, (2,))
    assert code == 2 and report is not None and b"broken.evalset.json" in report and b"missing.json" in report
    # a selection of cases of one eval set file
    selected = f"{evals / 'set-1.evalset.json'}:case-0001,case-0004,case-0007"
    code, _, _, report = _same_as_one_job([selected, "--actuals", str(pr)], tmp_path, capsys, (2,))
    assert code == 0 and report is not None and b"case-0004" in report and b"case-0002" not in report


def test_judge_gaps_and_their_exit_code_are_one_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A judge cache missing an answer under --judge-replay: not evaluated verdicts, exit 3 and the stderr of one
    job; with --judge-failures warn, the warning and the failing cases' exit code."""
    cache = tmp_path / "cache"
    shutil.copytree(ROOT / "examples/judge-cache", cache)
    next(cache.rglob("*.json")).unlink()
    argv = [*EXAMPLE[:3], "--judge-cache", str(cache), "--judge-replay"]
    code, _, err, _ = _same_as_one_job(argv, tmp_path, capsys, (2,))
    assert code == 3 and "could not measure, not passing" in err
    code, _, err, _ = _same_as_one_job([*argv, "--judge-failures", "warn"], tmp_path, capsys, (2,))
    assert code == 1 and "evalbot: warning:" in err


def test_secrets_in_the_environment_are_scrubbed_by_every_job(tmp_path: Path, write: Any,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    secret = "sk-jobs-test-0123456789abcdef"
    write("evals/s.evalset.json", eval_set("s", *[case(f"c{i}", inv("q", "an answer")) for i in range(4)]))
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    write("pr.json", {f"c{i}": [inv("q", f"the key is {secret}")] for i in range(4)})
    env = {"OPENAI_API_KEY": secret}
    _, out, err, report = _same_as_one_job([str(tmp_path / "evals"), "--actuals", str(tmp_path / "pr.json")],
                                           tmp_path, capsys, (2,), env)
    assert report is not None and secret.encode() not in report and secret not in out + err


FRM = {"criteria": {"final_response_match_v2": {"threshold": 0.5, "judge_model_options": {"num_samples": 1}}}}


def test_the_judge_concurrency_is_shared_not_multiplied(tmp_path: Path, write: Any,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """A live judge (the real client against a loopback fake with latency): with --judge-concurrency 2, never more
    than 2 requests in flight over the jobs; 3 jobs asked are 2 (a notice says so); the results are one job's."""
    write("evals/s.evalset.json", eval_set("s", *[case(f"c{i}", inv(f"q{i}", "reference")) for i in range(8)]))
    write("evals/test_config.json", FRM)
    write("pr.json", {f"c{i}": [inv(f"q{i}", f"answer {i}")] for i in range(8)})
    argv = [str(tmp_path / "evals"), "--actuals", str(tmp_path / "pr.json"), "--judge-concurrency", "2"]
    with FakeGemini(latency=0.3) as server:
        env = {"GOOGLE_API_KEY": "k", "GOOGLE_GEMINI_BASE_URL": server.url}
        one = _run(argv, tmp_path / "one.json", capsys, env)
        assert len(server.requests) == 8 and server.peak_in_flight == 2
        for jobs in ("2", "3"):
            server.reset()
            many = _run([*argv, "--jobs", jobs], tmp_path / f"jobs-{jobs}.json", capsys, env)
            assert len(server.requests) == 8 and 1 <= server.peak_in_flight <= 2
            assert (many[0], many[1], many[3]) == (one[0], one[1], one[3])
            notice = "evalbot: notice: --jobs 3: using 2 jobs, so that the run has at most --judge-concurrency 2"
            assert many[2] == one[2] if jobs == "2" else many[2].startswith(notice) and many[2].endswith(one[2])


@given(st.integers(1, 256), st.integers(1, 256))
def test_shares_add_up_to_the_whole(total: int, count: int) -> None:
    shares = [share(total, k, count) for k in range(1, count + 1)]
    assert sum(shares) == total and max(shares) - min(shares) <= 1


def test_each_job_gets_every_scoring_option_and_its_share(tmp_path: Path) -> None:
    """Every option of `run` is either given to the jobs or acted on by the parent (a new flag must be placed);
    the jobs' --judge-concurrency add up to the run's; values that look like options stay values."""
    parser = build_parser()
    run = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["run"]
    dests = {a.dest for a in run._actions if a.dest != "help"} | {"verbose"}
    assert dests == set(FORWARDED) | set(PARENT_ONLY) - {"command"}
    args = parser.parse_args(["-v", "run", "--actuals=-runs.json", "--judge-concurrency", "5", "--config", "c.json",
                              "--judge-cache", str(tmp_path), "--judge-replay", "--sampling", "full",
                              "--judge-timeout", "0.1", "--judge-deadline", "7", "--judge-budget-requests", "9",
                              "--judge-budget-usd", "0.25", "--", "-odd-dir"])
    commands = [job_command(args, k, 2, tmp_path / f"p{k}.json") for k in (1, 2)]
    concurrency = [int(next(a for a in c if a.startswith("--judge-concurrency=")).split("=")[1]) for c in commands]
    assert concurrency == [3, 2]
    assert commands[0][:4] == [sys.executable, "-P", "-m", "evalbot.cli"]
    child = build_parser().parse_args(commands[0][4:])
    assert child.paths == ["-odd-dir"] and child.actuals == ["-runs.json"] and child.verbose
    assert (child.config, child.judge_cache, child.judge_replay, child.sampling) == (
        "c.json", str(tmp_path), True, "full")
    assert (child.judge_timeout, child.judge_deadline, str(child.as_job)) == (0.1, 7.0, "1/2")
    assert (child.judge_budget_requests, child.judge_budget_usd) == (9, 0.25)  # whole: each job takes its share


def test_options_that_need_one_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--html: one job, said on stderr, the same report; --shard with --jobs: refused naming both (exit 2)."""
    html = _run([*EXAMPLE, "--html", str(tmp_path / "r.html"), "--jobs", "2"], tmp_path / "h.json", capsys)
    one = _run(EXAMPLE, tmp_path / "one.json", capsys)
    assert html[2].startswith("evalbot: notice: --jobs 2: --html builds its page from every case")
    assert (html[0], html[1], html[3]) == (one[0], one[1], one[3])
    code, _, err, report = _run([*EXAMPLE, "--jobs", "2", "--shard", "1/2"], tmp_path / "s.json", capsys)
    assert code == 2 and "--jobs 2" in err and "--shard 1/2" in err and report is None
    args = build_parser().parse_args(["run", "evals", "--agent", "m:f", "--jobs", "2"])
    assert "--agent" in (single_job_reason(args) or "")
    code, _, err, _ = _run([*EXAMPLE, "--as-job", "1/2", "--jobs", "2"], tmp_path / "a.json", capsys)
    assert code == 2 and "--as-job" in err


# --- jobs that fail -------------------------------------------------------------------------------------------

FAULTS = """\
import os, signal, sys, time
fault = os.environ.get("JOBS_TEST_FAULT", "")
if fault and any(a.startswith("--as-job=2/") for a in sys.argv):
    if fault == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault == "abort":
        os.abort()
    elif fault == "bug":
        import evalbot.pipeline
        def broken(*args, **kwargs):
            raise RuntimeError("boom in a job")
        evalbot.pipeline.evaluate = broken
if fault == "slow" and any(a.startswith("--as-job=") for a in sys.argv):  # each case 5 ms longer: a long run
    import evalbot.cli.jobs
    tally = evalbot.cli.jobs.JobRun.tally
    def slow(*args, **kwargs):
        time.sleep(0.005)
        return tally(*args, **kwargs)
    evalbot.cli.jobs.JobRun.tally = slow
if fault == "hang" and any(a.startswith("--as-job=") for a in sys.argv):
    with open(os.path.join(os.environ["JOBS_TEST_PIDS"], str(os.getpid())), "w"):
        pass
    time.sleep(600)
"""


@pytest.fixture
def faulty(tmp_path: Path) -> dict[str, str]:
    """An environment whose jobs import a sitecustomize that makes job 2 fail as JOBS_TEST_FAULT says."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(FAULTS, encoding="utf-8")
    return {"PYTHONPATH": str(hooks)}


@pytest.mark.parametrize(("fault", "code", "said"), [
    ("kill", 3, "evalbot: could not measure: job 2 of 2 (--jobs 2: the 2nd of 2 runs of the cases) was killed (SIGKILL"),
    ("abort", 70, "evalbot: internal error (a bug: please report it; -v shows the traceback): job 2 of 2"),
    ("bug", 70, "RuntimeError: boom in a job"),
])
def test_a_job_that_fails_fails_the_run_and_writes_no_report(
        fault: str, code: int, said: str, faulty: dict[str, str], tmp_path: Path, private_tmp: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    result = _run([*EXAMPLE, "--jobs", "2"], tmp_path / "r.json", capsys, {**faulty, "JOBS_TEST_FAULT": fault})
    assert result[0] == code and said in result[2], result[2]
    assert result[1] == "" and result[3] is None  # no console summary, no report: nothing partial stands as whole
    assert list(private_tmp.iterdir()) == []


def test_an_input_error_is_shown_as_one_job_shows_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x", encoding="utf-8")
    code, out, err, report = _same_as_one_job(EXAMPLE[:3], tmp_path, capsys, (2,),
                                              {"EVALBOT_JUDGE_CACHE": str(tmp_path / "file")})
    assert code == 2 and err.startswith("error: EVALBOT_JUDGE_CACHE") and err.count("\n") == 1
    assert out == "" and report is None


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_or_sigterm_stops_every_job(sig: int, code: int, faulty: dict[str, str], tmp_path: Path) -> None:
    """The real command in its own process; the signal sent to it alone: it ends, and so do its jobs."""
    pids = tmp_path / "pids"
    pids.mkdir()
    env = {**os.environ, **faulty, "JOBS_TEST_FAULT": "hang", "JOBS_TEST_PIDS": str(pids),
           "TMPDIR": str(tmp_path)}
    # SIGINT as a terminal's Ctrl-C finds it: a shell starting the tests in the background (`cmd &`) has it ignored,
    # and an ignored signal stays ignored across exec (Python then installs no KeyboardInterrupt handler)
    default_sigint = ("import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
                      "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])")
    proc = subprocess.Popen([sys.executable, "-c", default_sigint, "-m", "evalbot.cli", "run", *EXAMPLE, "--jobs",
                             "2", "--report", str(tmp_path / "r.json")], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert len(list(pids.iterdir())) == 2, proc.communicate(timeout=5)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert out == "" and not (tmp_path / "r.json").exists()
    for pid in (int(p.name) for p in pids.iterdir()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # ended and reaped
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("evalbot-jobs-")]


def _children(parent: int) -> list[int]:
    """The pids of ``parent``'s child processes (Linux: /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == parent:
                found.append(int(stat.parent.name))
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its reaper has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the jobs through /proc")
def test_a_parent_killed_outright_leaves_no_job_running_and_no_part(faulty: dict[str, str], tmp_path: Path) -> None:
    """SIGKILL, which the parent cannot catch, in the middle of a run of 2,000 cases (each job's cases file has
    cases in it): both jobs end within a few seconds, removing their files and the parent's folder."""
    evals, _, pr = write_suite(tmp_path / "suite", cases=2000)
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {**os.environ, **faulty, "JOBS_TEST_FAULT": "slow", "TMPDIR": str(temp)}
    proc = subprocess.Popen([sys.executable, "-m", "evalbot.cli", "run", str(evals), "--actuals", str(pr), "--jobs",
                             "2", "--report", str(tmp_path / "r.json")], env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    jobs: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            cases = list(temp.glob("evalbot-jobs-*/part-*.cases"))
            if len(cases) == 2 and all(c.stat().st_size for c in cases):
                break
            time.sleep(0.05)
        jobs = _children(proc.pid)
        assert proc.poll() is None and len(jobs) == 2, "the jobs were not scoring"
        proc.kill()
        proc.wait()
        killed = time.monotonic()
        while any(_running(pid) for pid in jobs) and time.monotonic() < killed + 10:
            time.sleep(0.02)
        took = time.monotonic() - killed
        assert not any(_running(pid) for pid in jobs)
        assert took < 3, f"the jobs took {took:.1f} s to end"
    finally:
        for pid in jobs:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert list(temp.iterdir()) == [] and not (tmp_path / "r.json").exists()


def test_a_job_whose_parent_is_gone_before_it_starts_ends_at_once_leaving_nothing(tmp_path: Path) -> None:
    """The pipe is already at end of file (the parent ended before the job began to watch it): the job ends,
    not with exit 70, and creates nothing in its folder, which it removes (it is empty)."""
    folder = tmp_path / "evalbot-jobs-x"
    folder.mkdir()
    part = folder / "part-1.json"
    done = subprocess.run([sys.executable, "-m", "evalbot.cli", "run", "--as-job=1/1", "--watch-parent",
                           f"--report={part}", *EXAMPLE], stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 128 + signal.SIGTERM and done.stdout == "", done.stderr
    assert "job 1 of 1: its parent is gone: stopped, its files removed" in done.stderr
    assert not folder.exists()


def test_on_a_terminal_the_parent_shows_the_jobs_progress_added_up(faulty: dict[str, str], tmp_path: Path) -> None:
    """stderr a terminal (a pseudo-terminal here), 2,000 cases over 2 jobs of ~5 s: the progress line counts the
    cases of both jobs (out of 2,000, never going back) and is erased; report, stdout and the rest of stderr are one
    job's (which shows no progress with stderr a pipe)."""
    pty = pytest.importorskip("pty")
    tty = pytest.importorskip("tty")
    evals, _, pr = write_suite(tmp_path / "suite", cases=2000)
    command = [sys.executable, "-m", "evalbot.cli", "run", str(evals), "--actuals", str(pr), "--report"]
    env = {**os.environ, **faulty, "JOBS_TEST_FAULT": "slow"}
    one = subprocess.run([*command, str(tmp_path / "one.json")], env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    master, slave = pty.openpty()
    tty.setraw(slave)  # no newline translation: stderr as written
    proc = subprocess.Popen([*command, str(tmp_path / "many.json"), "--jobs", "2"], env=env, stdout=subprocess.PIPE,
                            stderr=slave)
    os.close(slave)
    chunks = []
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's last writer has gone
                break
            if not data:
                break
            chunks.append(data)
        out = proc.communicate(timeout=120)[0].decode()
    finally:
        proc.kill()
        os.close(master)
    err = b"".join(chunks).decode()
    counts = [int(n) for n in re.findall(r"\revalbot: (\d+)/2000 cases \(", err)]
    assert counts and counts == sorted(counts) and any(0 < n < 2000 for n in counts), err
    assert proc.returncode == one.returncode and out == one.stdout
    assert (tmp_path / "many.json").read_bytes() == (tmp_path / "one.json").read_bytes()
    assert re.sub(r"\r[^\r\n]*", "", err) == one.stderr  # every progress line erased, the rest as one job's


def test_the_parent_counts_only_lines_that_read_as_a_jobs_progress() -> None:
    """What reaches the pipe is added up only when it is ``K DONE TOTAL`` of a job of this run, DONE <= TOTAL; a
    line split over reads is joined; garbage, other jobs' numbers, huge numbers and endless lines are ignored;
    nothing is drawn until every job has said its total."""
    stream = io.StringIO()
    progress = JobsProgress(TerminalProgress(stream, delay=0, interval=0), 2)
    try:
        os.write(progress.write_fd, b"1 0 10\n")
        progress.poll()
        assert stream.getvalue() == ""  # job 2 has not said its total yet
        os.write(progress.write_fd, b"2 3 5\n3 1 1\n0 1 1\n1 9 8\n1 -1 10\n1 1 1e3\n2 99999999999999999 1\nx\n2 4")
        progress.poll()
        assert stream.getvalue().endswith("evalbot: 3/15 cases (20%) · 0 s · ~0 s left")
        os.write(progress.write_fd, b" 5\n" + b"7" * 100_000)
        progress.poll()
        assert stream.getvalue().endswith("evalbot: 4/15 cases (26%) · 0 s · ~0 s left")
        os.write(progress.write_fd, b"\n1 10 10\n2 5 5\n")
        progress.poll()
        assert stream.getvalue().rstrip(" ").endswith("\revalbot: 15/15 cases (100%) · 0 s")
    finally:
        progress.close()
    assert stream.getvalue().endswith("\r" + " " * len("evalbot: 15/15 cases (100%) · 0 s") + "\r")


def test_a_job_tells_its_progress_at_most_ten_times_a_second_and_never_waits() -> None:
    read, write = os.pipe()
    os.set_blocking(write, False)
    now = [0.0]
    tell = ProgressPipe(write, 2, clock=lambda: now[0])
    try:
        tell(0, 3)
        tell(1, 3)  # too soon after the last
        now[0] = 0.5
        tell(2, 3)
        tell(3, 3)  # the last case: always told
        assert os.read(read, 1000) == b"2 0 3\n2 2 3\n2 3 3\n"
        while True:  # the pipe full (the parent not reading): a line is dropped, not waited for
            try:
                os.write(write, b"x" * 4096)
            except BlockingIOError:
                break
        now[0] = 1.0
        tell(3, 3)
        os.close(read)
        tell(3, 3)  # the parent gone: EPIPE ignored
    finally:
        os.close(write)


def test_watch_parent_is_for_jobs_only(capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--watch-parent", "--progress-fd=7"):
        assert main(["run", *EXAMPLE, flag], env={}) == 2
        assert "--watch-parent and --progress-fd are given by `evalbot run --jobs N`" in capsys.readouterr().err


def test_parts_of_many_eval_sets_merge_in_file_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Uneven cases over 5 eval sets and 4 jobs: the merged order is each file's, as one job writes it."""
    evals, _, pr = write_suite(tmp_path / "suite", cases=41, sets=5)
    _, _, _, report = _same_as_one_job([str(evals), "--actuals", str(pr)], tmp_path, capsys, (4,))
    assert report is not None
    ids = [c["eval_id"] for es in json.loads(report)["eval_sets"] for c in es["cases"]]
    assert len(ids) == 41


def test_without_report_the_console_is_one_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    """No --report: the jobs still write their parts (the parent merges them), the console and exit code are one
    job's."""
    capsys.readouterr()
    one = main(["run", *EXAMPLE], env={}), capsys.readouterr()
    many = main(["run", *EXAMPLE, "--jobs", "2"], env={}), capsys.readouterr()
    assert many == one and one[0] == 1 and "FAIL" in one[1].out


# --- the partition of --jobs: contiguous runs of cases, nothing parsed to choose them ----------------------------

def _rubric(rid: str, kind: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"rubric_id": rid, "rubric_content": {"text_property": f"Property {rid}."}}
    if kind is not None:
        out["type"] = kind
    return out


def _hostile_suite(tmp_path: Path, write: Any) -> list[str]:
    """Eval sets whose case ids, notices and errors a partition that parses nothing must still report as one job:
    ids empty or given twice (``eval_id`` and ``evalId``) or duplicated, unknown keys and rubric types in some cases
    only (the same unknown key in cases that land in different jobs: the first one is named), invalid cases, an
    eval set without cases, one with one case, an unreadable one, and cases without actuals."""
    def good(eval_id: str, **extra: Any) -> dict[str, Any]:
        return case(eval_id, inv(f"q {eval_id}", "the reference answer"), **extra)

    a = [good(""), good("a1", colour="red"), {**good("a2"), "evalId": "a2-camel"}, good("a3"),
         good("a1"),  # duplicate: skipped with an error
         {"eval_id": "bad", "conversation": "not a list"},  # invalid: an error case
         good("", rubrics=[_rubric("r1", "TRAJECTORY_QUALITY")]), good("a4", colour="blue", shape="round"),
         {"evalId": "camel-only", "conversation": [inv("q camel-only", "the reference answer")]},
         good("a5", rubrics=[_rubric("r2", None), _rubric("r3", "SOMETHING_ELSE")]), good("no-actual"),
         good("a6", size=3)]
    write("evals/a.evalset.json", eval_set("a", *a))
    write("evals/b.evalset.json", eval_set("b"))
    write("evals/c.evalset.json", eval_set("c", good("c1", colour="green")))
    write("evals/d.evalset.json", eval_set("d", *[good(f"d{i}", **({"extra": i} if i % 3 == 0 else {}))
                                                  for i in range(7)]))
    write("evals/e.evalset.json", '{"eval_set_id": "e", "eval_cases": [{"eval_id": "e1"},')
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    answers = {c.get("eval_id", c.get("evalId")): [inv("q", "the reference answer")] for c in a}
    answers.update({"": [inv("q", "an answer")], "a2-camel": [inv("q", "x")], "camel-only": [inv("q", "y")]})
    answers.pop("no-actual")
    answers.update({"c1": [inv("q", "reference")], **{f"d{i}": [inv("q", f"answer {i}")] for i in range(7)}})
    write("pr.json", answers)
    return [str(tmp_path / "evals"), "--actuals", str(tmp_path / "pr.json")]


def test_hostile_ids_notices_and_errors_are_one_jobs(tmp_path: Path, write: Any, private_tmp: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """2, 3, 5 and 16 jobs (more jobs than some eval sets' cases; 16 > the 21 scored cases / 2): the report, the
    console and the exit code of one job, byte for byte."""
    argv = _hostile_suite(tmp_path, write)
    code, _, _, report = _same_as_one_job(argv, tmp_path, capsys, (2, 3, 5, 16))
    assert code == 2 and report is not None
    data = json.loads(report)
    sets = {es["eval_set_id"]: es for es in data["eval_sets"]}
    ids = [c["eval_id"] for c in sets["a"]["cases"]]
    assert ids.count("") == 2 and "a2-camel" in ids and "camel-only" in ids and ids.count("a1") == 1
    notices = " ".join(sets["a"]["notices"])
    assert "'colour'" in notices and "'shape'" in notices and "TRAJECTORY_QUALITY" in notices
    assert "without a \"type\"" in notices and "SOMETHING_ELSE" in notices
    assert "duplicate eval_id 'a1'" in json.dumps(sets["a"]["errors"])
    assert sets["b"]["cases"] == [] and len(sets["c"]["cases"]) == 1 and "'extra'" in " ".join(sets["d"]["notices"])
    unreadable = next(es for es in data["eval_sets"] if es["path"].endswith("e.evalset.json"))
    assert unreadable["status"] == "error" and "invalid JSON" in unreadable["errors"][0]["message"]
    assert list(private_tmp.iterdir()) == []


def test_unknown_keys_name_the_first_case_over_the_jobs(tmp_path: Path, write: Any,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The same unknown key in the last case of job 1 and the first of job 2 (and a rubric type only in job 2's):
    the notice names job 1's case, as one job does."""
    cases = [case(f"k{i}", inv("q", "the reference answer"), **({"note": i} if i in (1, 2, 3) else {}),
                  **({"rubrics": [_rubric("r", "TOOL_USE_QUALITY")]} if i == 3 else {})) for i in range(4)]
    write("evals/k.evalset.json", eval_set("k", *cases))
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    write("pr.json", {f"k{i}": [inv("q", "the reference answer")] for i in range(4)})
    _, _, _, report = _same_as_one_job([str(tmp_path / "evals"), "--actuals", str(tmp_path / "pr.json")],
                                       tmp_path, capsys, (2, 4))
    assert report is not None
    notices = json.loads(report)["eval_sets"][0]["notices"]
    assert any("case 'k1'" in n and "'note'" in n for n in notices)
    assert any("TOOL_USE_QUALITY" in n for n in notices)


def test_a_vertex_dataset_with_custom_and_judged_metrics_is_one_jobs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The Vertex seed's dataset (rows carrying their own runs, a custom metric run in worker processes, a judged
    metric replayed from its cache) over 2 and 3 jobs: one job's report, console and exit code."""
    monkeypatch.chdir(ROOT)
    argv = ["examples/vertex_seed/eval.jsonl", "--judge-cache", "examples/vertex_seed/judge-cache", "--judge-replay"]
    code, out, _, report = _same_as_one_job(argv, tmp_path, capsys, (2, 3))
    assert code == 1 and report is not None and b"essential_tools_present" in report and "FAIL" in out


def test_a_package_named_evalbot_in_the_working_directory_is_never_imported_by_a_job(
        tmp_path: Path, write: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The jobs run in the checkout being evaluated, a pull request's tree: ``python -m evalbot.cli`` there would put
    the working directory first on sys.path, and a committed ``evalbot/__init__.py`` would run in every job, with the
    judge keys and the judge cache's signing key in its environment. The jobs are started with ``-P`` (no unsafe
    path): the installed evalbot runs, and the planted one never does."""
    secret = "judge-key-0123456789abcdef"
    write("evals/s.evalset.json", eval_set("s", *[case(f"c{i}", inv("q", "an answer")) for i in range(4)]))
    write("evals/test_config.json", {"criteria": {"response_match_score": 0.5}})
    write("pr.json", {f"c{i}": [inv("q", "an answer")] for i in range(4)})
    marker = tmp_path / "planted-ran.txt"
    write("evalbot/__init__.py", f"import os, pathlib\npathlib.Path({str(marker)!r}).write_text("
                                 "os.environ.get('GOOGLE_API_KEY', ''))\n")
    monkeypatch.chdir(tmp_path)
    code, _, err, report = _run(["evals", "--actuals", "pr.json", "--jobs", "2"], tmp_path / "r.json", capsys,
                                {"GOOGLE_API_KEY": secret})
    assert not marker.exists(), "the pull request's evalbot package ran in a job"
    assert code == 0 and report is not None, err
